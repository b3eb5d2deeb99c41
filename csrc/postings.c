/* Full-text indexing core; see postings.h for the data model and the forward entry format. */
#include "postings.h"
#include "grow.h"

#include <stdlib.h>
#include <string.h>

/* ---- growable buffers ------------------------------------------------------------------------- */

static int buf_reserve(hz_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->n) {
        return -1;
    }
    return grow((void **)&b->p, &b->cap, b->n + extra, 1, 256);
}

void hz_buf_free(hz_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* A fast hash of short byte strings (words are a few bytes): 8-byte chunks, multiply-xorshift mix. */
static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)len;
    while (len >= 8) {
        uint64_t k;
        memcpy(&k, s, 8);
        h = (h ^ k) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        s += 8;
        len -= 8;
    }
    if (len) {
        uint64_t k = 0;
        memcpy(&k, s, len);
        h = (h ^ k) * 0x94D049BB133111EBULL;
        h ^= h >> 29;
    }
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 32);
}

/* ---- one document ----------------------------------------------------------------------------- */

typedef struct {
    uint64_t hash;
    uint32_t off, len;   /* bytes in d->bytes */
    uint32_t n_pos;      /* occurrences */
    uint32_t start;      /* first of its positions in d->grouped */
    uint32_t last_fid;   /* field of its previous occurrence (UINT32_MAX: none) */
} doc_word;

typedef struct {
    uint32_t word, pos;
} doc_occ;

typedef struct {
    uint32_t word, fid;
} doc_pair;

typedef struct {
    uint32_t fid, count;
} doc_field;

struct hz_doc {
    doc_word *words;
    size_t n_words, cap_words;
    char *bytes;
    size_t n_bytes, cap_bytes;
    uint32_t *slots;          /* word index + 1, 0 = empty; capacity mask + 1 (a power of two) */
    size_t mask;
    doc_occ *occ;             /* occurrences in feeding order */
    size_t n_occ, cap_occ;
    doc_pair *pairs;          /* distinct (word, field) */
    size_t n_pairs, cap_pairs;
    doc_field *fields;
    size_t n_fields, cap_fields;
    uint32_t *grouped;        /* positions grouped per word (hz_doc_encode) */
    size_t cap_grouped;
    int is_grouped;
    /* the field being fed */
    uint32_t fid, count, offset;
};

hz_doc *hz_doc_new(void)
{
    hz_doc *d = calloc(1, sizeof(hz_doc));
    if (d == NULL) {
        return NULL;
    }
    d->slots = calloc(64, sizeof(uint32_t));
    if (d->slots == NULL) {
        free(d);
        return NULL;
    }
    d->mask = 63;
    return d;
}

void hz_doc_free(hz_doc *d)
{
    if (d == NULL) {
        return;
    }
    free(d->words);
    free(d->bytes);
    free(d->slots);
    free(d->occ);
    free(d->pairs);
    free(d->fields);
    free(d->grouped);
    free(d);
}

void hz_doc_reset(hz_doc *d)
{
    memset(d->slots, 0, (d->mask + 1) * sizeof(uint32_t));
    d->n_words = d->n_bytes = d->n_occ = d->n_pairs = d->n_fields = 0;
    d->is_grouped = 0;
    d->fid = d->count = d->offset = 0;
}

static int doc_rehash(hz_doc *d)
{
    size_t cap = (d->mask + 1) * 2;
    uint32_t *slots = calloc(cap, sizeof(uint32_t));
    if (slots == NULL) {
        return -1;
    }
    for (size_t i = 0; i < d->n_words; i++) {
        size_t s = (size_t)d->words[i].hash & (cap - 1);
        while (slots[s]) {
            s = (s + 1) & (cap - 1);
        }
        slots[s] = (uint32_t)i + 1;
    }
    free(d->slots);
    d->slots = slots;
    d->mask = cap - 1;
    return 0;
}

/* Index of the word, inserted when new; -1 on OOM. */
static int64_t doc_word_index(hz_doc *d, const char *w, size_t len)
{
    uint64_t h = hash_bytes(w, len);
    size_t s = (size_t)h & d->mask;
    uint32_t slot;
    while ((slot = d->slots[s]) != 0) {
        doc_word *e = &d->words[slot - 1];
        if (e->hash == h && e->len == len && memcmp(d->bytes + e->off, w, len) == 0) {
            return slot - 1;
        }
        s = (s + 1) & d->mask;
    }
    if (d->n_words >= UINT32_MAX - 1 || len > UINT32_MAX || d->n_bytes > UINT32_MAX - len) {
        return -1;
    }
    if (grow((void **)&d->words, &d->cap_words, d->n_words + 1, sizeof(doc_word), 64) < 0
        || grow((void **)&d->bytes, &d->cap_bytes, d->n_bytes + len, 1, 1024) < 0) {
        return -1;
    }
    doc_word *e = &d->words[d->n_words];
    e->hash = h;
    e->off = (uint32_t)d->n_bytes;
    e->len = (uint32_t)len;
    e->n_pos = 0;
    e->start = 0;
    e->last_fid = UINT32_MAX;
    memcpy(d->bytes + d->n_bytes, w, len);
    d->n_bytes += len;
    d->slots[s] = (uint32_t)++d->n_words;
    if (d->n_words * 2 > d->mask + 1 && doc_rehash(d) < 0) {
        return -1;
    }
    return (int64_t)d->n_words - 1;
}

/* Records an occurrence of word `w` at packed position `packed`. */
static int doc_occurrence(hz_doc *d, const char *w, size_t len, uint32_t packed)
{
    int64_t i = doc_word_index(d, w, len);
    if (i < 0) {
        return -1;
    }
    doc_word *e = &d->words[i];
    uint32_t fid = packed >> 16;
    if (e->last_fid != fid) {
        /* Fields are fed one after the other, so a change of field is a new (word, field) pair. */
        if (grow((void **)&d->pairs, &d->cap_pairs, d->n_pairs + 1, sizeof(doc_pair), 64) < 0) {
            return -1;
        }
        d->pairs[d->n_pairs++] = (doc_pair){(uint32_t)i, fid};
        e->last_fid = fid;
    }
    if ((packed & 0xFFFF) <= 1 && fid < HZ_PSEUDO_FID_LIMIT) {
        /* The first (second) word of a field also goes under the pseudo field fid | HZ_FIRST_WORD_FID
         * (| HZ_SECOND_WORD_FID); fields from HZ_PSEUDO_FID_LIMIT on have none: their keys would be
         * the pseudo keys of others. */
        if (grow((void **)&d->pairs, &d->cap_pairs, d->n_pairs + 1, sizeof(doc_pair), 64) < 0) {
            return -1;
        }
        d->pairs[d->n_pairs++] = (doc_pair){
            (uint32_t)i, fid | HZ_FIRST_WORD_FID | ((packed & 0xFFFF) ? HZ_SECOND_WORD_FID : 0)};
    }
    if (e->n_pos == UINT32_MAX || d->n_occ >= UINT32_MAX
        || grow((void **)&d->occ, &d->cap_occ, d->n_occ + 1, sizeof(doc_occ), 256) < 0) {
        return -1;
    }
    d->occ[d->n_occ++] = (doc_occ){(uint32_t)i, packed};
    e->n_pos++;
    d->is_grouped = 0;
    return 0;
}

static int doc_push_field(hz_doc *d, uint32_t fid, uint32_t count)
{
    if (grow((void **)&d->fields, &d->cap_fields, d->n_fields + 1, sizeof(doc_field), 16) < 0) {
        return -1;
    }
    d->fields[d->n_fields++] = (doc_field){fid, count};
    return 0;
}

void hz_doc_begin_field(hz_doc *d, uint16_t fid)
{
    d->fid = fid;
    d->count = 0;
    d->offset = 0;
}

uint32_t hz_doc_field_offset(const hz_doc *d)
{
    return d->offset;
}

int hz_doc_add_tokens(hz_doc *d, const hz_tok_out *tokens)
{
    int64_t last = -1;
    uint32_t base = d->fid << 16;
    for (size_t i = 0; i < tokens->n_tokens; i++) {
        const hz_token *t = &tokens->tokens[i];
        uint64_t p = (uint64_t)d->offset + t->position;
        if (p > HZ_MAX_POSITION) {
            break;
        }
        if (doc_occurrence(d, tokens->norm + t->norm_start, t->norm_length, base | (uint32_t)p) < 0) {
            return -1;
        }
        last = (int64_t)p;
        d->count++;
    }
    if (last >= 0) {
        d->offset = (uint32_t)last + HZ_ARRAY_GAP;
    }
    return 0;
}

int hz_doc_end_field(hz_doc *d)
{
    return d->count ? doc_push_field(d, d->fid, d->count) : 0;
}

/* Groups the occurrences per word (a stable counting sort: positions stay in feeding order). */
static int doc_group(hz_doc *d)
{
    if (d->is_grouped) {
        return 0;
    }
    if (grow((void **)&d->grouped, &d->cap_grouped, d->n_occ ? d->n_occ : 1, sizeof(uint32_t), 256) < 0) {
        return -1;
    }
    uint32_t start = 0;
    for (size_t i = 0; i < d->n_words; i++) {
        d->words[i].start = start;
        start += d->words[i].n_pos;
    }
    /* `start` doubles as the fill cursor, then is rewound. */
    for (size_t i = 0; i < d->n_occ; i++) {
        d->grouped[d->words[d->occ[i].word].start++] = d->occ[i].pos;
    }
    for (size_t i = 0; i < d->n_words; i++) {
        d->words[i].start -= d->words[i].n_pos;
    }
    d->is_grouped = 1;
    return 0;
}

size_t hz_doc_n_fields(const hz_doc *d)
{
    return d->n_fields;
}

void hz_doc_field(const hz_doc *d, size_t i, uint16_t *fid, uint32_t *count)
{
    *fid = (uint16_t)d->fields[i].fid;
    *count = d->fields[i].count;
}

size_t hz_doc_n_words(const hz_doc *d)
{
    return d->n_words;
}

void hz_doc_word(const hz_doc *d, size_t i, const char **word, size_t *len, const uint32_t **positions,
                 size_t *n_positions)
{
    const doc_word *e = &d->words[i];
    *word = d->bytes + e->off;
    *len = e->len;
    *positions = d->grouped + e->start;
    *n_positions = e->n_pos;
}

/* ---- msgpack (the subset msgspec writes for the forward entry) ------------------------------- */

static void put_be(char *p, uint64_t x, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (char)(x & 0xFF);
        x >>= 8;
    }
}

/* Smallest encoding of a non-negative int, as msgspec. Needs 9 bytes reserved. */
static void put_uint(hz_buf *b, uint64_t x)
{
    char *p = b->p + b->n;
    if (x < 128) {
        p[0] = (char)x;
        b->n += 1;
    } else if (x < (1u << 8)) {
        p[0] = (char)0xCC;
        p[1] = (char)x;
        b->n += 2;
    } else if (x < (1u << 16)) {
        p[0] = (char)0xCD;
        put_be(p + 1, x, 2);
        b->n += 3;
    } else if (x <= UINT32_MAX) {
        p[0] = (char)0xCE;
        put_be(p + 1, x, 4);
        b->n += 5;
    } else {
        p[0] = (char)0xCF;
        put_be(p + 1, x, 8);
        b->n += 9;
    }
}

/* Container header: fix form below `fix_limit`, then 16- and 32-bit lengths. Needs 5 bytes. */
static void put_header(hz_buf *b, size_t n, uint8_t fix, size_t fix_limit, uint8_t h16, uint8_t h32)
{
    char *p = b->p + b->n;
    if (n < fix_limit) {
        p[0] = (char)(fix | n);
        b->n += 1;
    } else if (n < (1u << 16)) {
        p[0] = (char)h16;
        put_be(p + 1, n, 2);
        b->n += 3;
    } else {
        p[0] = (char)h32;
        put_be(p + 1, n, 4);
        b->n += 5;
    }
}

static void put_str_header(hz_buf *b, size_t n)
{
    char *p = b->p + b->n;
    if (n < 32) {
        p[0] = (char)(0xA0 | n);
        b->n += 1;
    } else if (n < (1u << 8)) {
        p[0] = (char)0xD9;
        p[1] = (char)n;
        b->n += 2;
    } else if (n < (1u << 16)) {
        p[0] = (char)0xDA;
        put_be(p + 1, n, 2);
        b->n += 3;
    } else {
        p[0] = (char)0xDB;
        put_be(p + 1, n, 4);
        b->n += 5;
    }
}

int hz_doc_encode(hz_doc *d, hz_buf *out)
{
    if (doc_group(d) < 0) {
        return -1;
    }
    /* Upper bound: headers (5 bytes each), ints (5 bytes each), word bytes. */
    size_t need = 1 + 5 + d->n_fields * 10 + 5 + d->n_words * 10 + d->n_bytes + d->n_occ * 5 + 16;
    if (buf_reserve(out, need) < 0) {
        return -1;
    }
    out->p[out->n++] = (char)0x92;
    put_header(out, d->n_fields, 0x80, 16, 0xDE, 0xDF);
    for (size_t i = 0; i < d->n_fields; i++) {
        put_uint(out, d->fields[i].fid);
        put_uint(out, d->fields[i].count);
    }
    put_header(out, d->n_words, 0x80, 16, 0xDE, 0xDF);
    for (size_t i = 0; i < d->n_words; i++) {
        const doc_word *e = &d->words[i];
        put_str_header(out, e->len);
        memcpy(out->p + out->n, d->bytes + e->off, e->len);
        out->n += e->len;
        put_header(out, e->n_pos, 0x90, 16, 0xDC, 0xDD);
        const uint32_t *pos = d->grouped + e->start;
        for (uint32_t k = 0; k < e->n_pos; k++) {
            put_uint(out, pos[k]);
        }
    }
    return 0;
}

typedef struct {
    const uint8_t *p, *end;
} reader;

static int read_be(reader *r, int n, uint64_t *x)
{
    if (r->end - r->p < n) {
        return -1;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; i++) {
        v = (v << 8) | r->p[i];
    }
    r->p += n;
    *x = v;
    return 0;
}

static int read_uint(reader *r, uint64_t *x)
{
    if (r->p >= r->end) {
        return -1;
    }
    uint8_t c = *r->p++;
    if (c < 0x80) {
        *x = c;
        return 0;
    }
    switch (c) {
    case 0xCC: return read_be(r, 1, x);
    case 0xCD: return read_be(r, 2, x);
    case 0xCE: return read_be(r, 4, x);
    case 0xCF: return read_be(r, 8, x);
    case 0xD0: case 0xD1: case 0xD2: case 0xD3: {
        /* signed encodings are fine as long as the value is not negative */
        int n = 1 << (c - 0xD0);
        if (read_be(r, n, x) < 0 || (*x >> (n * 8 - 1)) & 1) {
            return -1;
        }
        return 0;
    }
    default: return -1;
    }
}

/* Length of a container: fix form in [fix, fix + 16), or 16/32-bit forms. */
static int read_header(reader *r, uint8_t fix, uint8_t h16, uint8_t h32, uint64_t *n)
{
    if (r->p >= r->end) {
        return -1;
    }
    uint8_t c = *r->p++;
    if ((c & 0xF0) == fix) {
        *n = c & 0x0F;
        return 0;
    }
    if (c == h16) {
        return read_be(r, 2, n);
    }
    if (c == h32) {
        return read_be(r, 4, n);
    }
    return -1;
}

static int read_str(reader *r, const char **s, size_t *len)
{
    if (r->p >= r->end) {
        return -1;
    }
    uint8_t c = *r->p++;
    uint64_t n;
    if ((c & 0xE0) == 0xA0) {
        n = c & 0x1F;
    } else if (c == 0xD9) {
        if (read_be(r, 1, &n) < 0) return -1;
    } else if (c == 0xDA) {
        if (read_be(r, 2, &n) < 0) return -1;
    } else if (c == 0xDB) {
        if (read_be(r, 4, &n) < 0) return -1;
    } else {
        return -1;
    }
    if ((uint64_t)(r->end - r->p) < n) {
        return -1;
    }
    *s = (const char *)r->p;
    *len = (size_t)n;
    r->p += n;
    return 0;
}

int hz_doc_parse(hz_doc *d, const char *data, size_t len)
{
    reader r = {(const uint8_t *)data, (const uint8_t *)data + len};
    uint64_t n, k, v;
    if (read_header(&r, 0x90, 0xDC, 0xDD, &n) < 0 || n != 2) {
        return -1;
    }
    if (read_header(&r, 0x80, 0xDE, 0xDF, &n) < 0) {
        return -1;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (read_uint(&r, &k) < 0 || read_uint(&r, &v) < 0 || k > 0xFFFF || v > UINT32_MAX
            || doc_push_field(d, (uint32_t)k, (uint32_t)v) < 0) {
            return -1;
        }
    }
    if (read_header(&r, 0x80, 0xDE, 0xDF, &n) < 0) {
        return -1;
    }
    for (uint64_t i = 0; i < n; i++) {
        const char *w;
        size_t wlen;
        uint64_t m;
        if (read_str(&r, &w, &wlen) < 0 || read_header(&r, 0x90, 0xDC, 0xDD, &m) < 0) {
            return -1;
        }
        for (uint64_t j = 0; j < m; j++) {
            if (read_uint(&r, &v) < 0 || v > UINT32_MAX || doc_occurrence(d, w, wlen, (uint32_t)v) < 0) {
                return -1;
            }
        }
    }
    return r.p == r.end ? 0 : -1;
}

/* ---- the accumulator -------------------------------------------------------------------------- */

/* Events are logged as (key, docid) with key = word id << 17 | fid << 1 | added; hz_postings_prepare
 * replaces the word id by the word's rank in byte order and sorts the log, which groups the events
 * per word-fid key (removals first) and per word, both in database key order. */
#define KEY_FID_SHIFT 1
#define KEY_WORD_SHIFT 17

typedef struct {
    uint64_t hash;
    uint32_t off, len;   /* bytes in the arena */
} acc_word;

typedef struct {
    size_t start, mid, end;   /* log range: removed in [start, mid), added in [mid, end) */
} acc_group;

struct hz_postings {
    acc_word *words;
    size_t n_words, cap_words;
    uint64_t *slots;          /* hash >> 32 << 32 | (word index + 1); 0 = empty */
    size_t mask;              /* slots - 1 (a power of two), 0 before the first word */
    char *arena;
    size_t n_arena, cap_arena;
    uint32_t *wids;           /* the global ids of the words of the doc being marked */
    size_t cap_wids;
    uint64_t *scratch_occ;    /* the doc's occurrences by position (next-word events) */
    size_t cap_scratch_occ;
    uint64_t *scratch_next;   /* per word of the doc: the next-word bits it has logged */
    size_t cap_scratch_next;
    uint64_t *keys;           /* the event log (kept by hz_postings_clear, with its capacity) */
    uint32_t *docids;
    size_t n_log, cap_log;
    uint64_t *sort_keys;      /* the radix sort's scratch for the log (kept by hz_postings_clear) */
    uint32_t *sort_vals;
    size_t cap_sort;
    /* after hz_postings_prepare */
    int prepared;
    char *sorted_bytes;       /* the words' bytes in byte order (keys are then built reading forward) */
    uint32_t *sorted_off;     /* word of rank r: sorted_bytes[sorted_off[r], sorted_off[r + 1]) */
    acc_group *fid_groups;    /* one per word-fid key, in key order */
    size_t n_fid_groups, cap_fid_groups;
    acc_group *word_groups;   /* one per word (start, end only), in key order */
    size_t n_word_groups, cap_word_groups;
    char *key;                /* the key being returned */
    size_t cap_key;
    uint32_t *gather_add, *gather_rem;   /* docids of a word gathered across its fields */
    size_t cap_gather_add, cap_gather_rem;
    /* field-stats deltas */
    int64_t *docs, *nwords;
    uint8_t *touched;
    size_t cap_fids;
    uint16_t *fid_order;
    size_t n_fids, cap_fid_order;
};

hz_postings *hz_postings_new(void)
{
    return calloc(1, sizeof(hz_postings));
}

void hz_postings_clear(hz_postings *p)
{
    free(p->words);
    free(p->slots);
    free(p->arena);
    free(p->sorted_bytes);
    free(p->sorted_off);
    free(p->fid_groups);
    free(p->word_groups);
    free(p->docs);
    free(p->nwords);
    free(p->touched);
    free(p->fid_order);
    /* The scratch buffers and the log (with the sort's scratch, as large) are kept: a task flushes
     * many times, and memory handed back to the system comes back as fresh pages the kernel must
     * fault in and zero on the next fill (~6% of an HTTP load's CPU). */
    hz_postings kept = *p;
    memset(p, 0, sizeof(*p));
    p->wids = kept.wids;
    p->cap_wids = kept.cap_wids;
    p->gather_add = kept.gather_add;
    p->cap_gather_add = kept.cap_gather_add;
    p->gather_rem = kept.gather_rem;
    p->cap_gather_rem = kept.cap_gather_rem;
    p->key = kept.key;
    p->cap_key = kept.cap_key;
    p->scratch_occ = kept.scratch_occ;
    p->cap_scratch_occ = kept.cap_scratch_occ;
    p->scratch_next = kept.scratch_next;
    p->cap_scratch_next = kept.cap_scratch_next;
    p->keys = kept.keys;
    p->docids = kept.docids;
    p->cap_log = kept.cap_log;
    p->sort_keys = kept.sort_keys;
    p->sort_vals = kept.sort_vals;
    p->cap_sort = kept.cap_sort;
}

void hz_postings_release(hz_postings *p)
{
    hz_postings_clear(p);
    free(p->wids);
    free(p->scratch_occ);
    free(p->scratch_next);
    free(p->gather_add);
    free(p->gather_rem);
    free(p->key);
    free(p->keys);
    free(p->docids);
    free(p->sort_keys);
    free(p->sort_vals);
    memset(p, 0, sizeof(*p));
}

void hz_postings_free(hz_postings *p)
{
    if (p == NULL) {
        return;
    }
    hz_postings_release(p);
    free(p);
}

size_t hz_postings_held(const hz_postings *p)
{
    return hz_postings_memory(p) + p->cap_log * 12 + p->cap_sort * 12 + p->cap_scratch_occ * 8
           + p->cap_scratch_next * 8;
}

/* The capacity the log would have grown to for its entries (doubling from 4096): what counts
 * against the memory budget, whatever capacity an earlier fill left it. */
static size_t log_capacity(size_t n)
{
    size_t cap = 4096;
    while (n && cap < n) {
        cap *= 2;
    }
    return n ? cap : 0;
}

size_t hz_postings_memory(const hz_postings *p)
{
    return sizeof(*p) + p->cap_words * sizeof(acc_word) + (p->mask ? (p->mask + 1) * 8 : 0) + p->cap_arena
           + p->cap_wids * 4 + log_capacity(p->n_log) * 12 + (p->sorted_off ? (p->n_words + 1) * 4 + p->n_arena : 0)
           + p->cap_fid_groups * sizeof(acc_group) + p->cap_word_groups * sizeof(acc_group) + p->cap_key
           + (p->cap_gather_add + p->cap_gather_rem) * 4 + p->cap_fids * 17 + p->cap_fid_order * 2;
}

static int words_rehash(hz_postings *p, size_t cap)
{
    uint64_t *slots = calloc(cap, sizeof(uint64_t));
    if (slots == NULL) {
        return -1;
    }
    for (size_t i = 0; i < p->n_words; i++) {
        size_t s = (size_t)p->words[i].hash & (cap - 1);
        while (slots[s]) {
            s = (s + 1) & (cap - 1);
        }
        slots[s] = (p->words[i].hash >> 32 << 32) | ((uint64_t)i + 1);
    }
    free(p->slots);
    p->slots = slots;
    p->mask = cap - 1;
    return 0;
}

/* Global id of a word (inserted when new); -1 on OOM. `h` is hash_bytes(w, len). */
static int64_t global_word(hz_postings *p, const char *w, size_t len, uint64_t h)
{
    if (p->mask == 0 && words_rehash(p, 4096) < 0) {
        return -1;
    }
    uint64_t tag = h >> 32 << 32;
    size_t s = (size_t)h & p->mask;
    uint64_t slot;
    while ((slot = p->slots[s]) != 0) {
        if ((slot >> 32 << 32) == tag) {
            const acc_word *e = &p->words[(uint32_t)slot - 1];
            if (e->len == len && memcmp(p->arena + e->off, w, len) == 0) {
                return (uint32_t)slot - 1;
            }
        }
        s = (s + 1) & p->mask;
    }
    if (p->n_words >= UINT32_MAX - 1 || len > UINT32_MAX || p->n_arena > UINT32_MAX - len) {
        return -1;
    }
    if (grow((void **)&p->words, &p->cap_words, p->n_words + 1, sizeof(acc_word), 1024) < 0
        || grow((void **)&p->arena, &p->cap_arena, p->n_arena + len, 1, 16384) < 0) {
        return -1;
    }
    acc_word *e = &p->words[p->n_words];
    e->hash = h;
    e->off = (uint32_t)p->n_arena;
    e->len = (uint32_t)len;
    memcpy(p->arena + p->n_arena, w, len);
    p->n_arena += len;
    p->slots[s] = tag | (uint64_t)++p->n_words;
    if (p->n_words * 2 > p->mask + 1 && words_rehash(p, (p->mask + 1) * 2) < 0) {
        return -1;
    }
    return (int64_t)p->n_words - 1;
}

static int touch_fid(hz_postings *p, uint32_t fid, int64_t docs, int64_t words)
{
    if (fid >= p->cap_fids) {
        size_t cap = p->cap_fids ? p->cap_fids : 16;
        while (cap <= fid) {
            cap *= 2;
        }
        int64_t *a = realloc(p->docs, cap * sizeof(int64_t));
        if (a == NULL) return -1;
        p->docs = a;
        int64_t *b = realloc(p->nwords, cap * sizeof(int64_t));
        if (b == NULL) return -1;
        p->nwords = b;
        uint8_t *c = realloc(p->touched, cap);
        if (c == NULL) return -1;
        p->touched = c;
        memset(p->docs + p->cap_fids, 0, (cap - p->cap_fids) * sizeof(int64_t));
        memset(p->nwords + p->cap_fids, 0, (cap - p->cap_fids) * sizeof(int64_t));
        memset(p->touched + p->cap_fids, 0, cap - p->cap_fids);
        p->cap_fids = cap;
    }
    if (!p->touched[fid]) {
        if (grow((void **)&p->fid_order, &p->cap_fid_order, p->n_fids + 1, sizeof(uint16_t), 16) < 0) {
            return -1;
        }
        p->fid_order[p->n_fids++] = (uint16_t)fid;
        p->touched[fid] = 1;
    }
    p->docs[fid] += docs;
    p->nwords[fid] += words;
    return 0;
}

/* Reallocates a pair of parallel arrays (keys, values) to `cap` items; -1 on OOM (each array is
 * then valid, one of them perhaps already at the new size). */
static int resize_pairs(uint64_t **keys, uint32_t **vals, size_t cap)
{
    uint64_t *k = realloc(*keys, cap * sizeof(uint64_t));
    if (k == NULL) {
        return -1;
    }
    *keys = k;
    uint32_t *v = realloc(*vals, cap * sizeof(uint32_t));
    if (v == NULL) {
        return -1;
    }
    *vals = v;
    return 0;
}

static int log_reserve(hz_postings *p, size_t extra)
{
    if (p->n_log + extra <= p->cap_log) {
        return 0;
    }
    size_t cap = p->cap_log ? p->cap_log : 4096;
    while (cap < p->n_log + extra) {
        cap *= 2;
    }
    if (resize_pairs(&p->keys, &p->docids, cap) < 0) {
        return -1;
    }
    p->cap_log = cap;
    return 0;
}

/* 3 bits of a byte (Fibonacci hashing: consecutive letters spread over the 8 values). */
static uint32_t byte_bits(uint32_t b)
{
    return ((b + 1u) * 0x9E3779B1u) >> 29;
}

/* The next-word key bits of a word: 3 bits of its first byte, then 3 of its second (of 0 for a
 * one-byte word). Every word starting with the same two bytes has the same bits, so the documents
 * where a word is followed by any word with a given prefix are one key for a prefix of two bytes or
 * more (the last query word is a prefix: its expansions share the key) and 8 keys for one byte. */
uint32_t hz_next_word_bits(const char *w, size_t len)
{
    uint32_t b0 = len > 0 ? (uint8_t)w[0] : 0u, b1 = len > 1 ? (uint8_t)w[1] : 0u;
    return (byte_bits(b0) << 3 | byte_bits(b1)) & HZ_NEXT_WORD_MASK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Logs (word, HZ_NEXT_WORD_FID | hash bits of the next word) for every word directly followed by
 * another in the same field (every word at position p pairs with every word at p + 1), once per
 * distinct key. The occurrences are sorted by position here: a forward entry read back for a removal
 * lists them per word. */
static int log_next_words(hz_postings *p, const hz_doc *d, uint32_t docid, uint64_t flag)
{
    size_t n = d->n_occ;
    if (n < 2) {
        return 0;
    }
    if (grow((void **)&p->scratch_occ, &p->cap_scratch_occ, n, sizeof(uint64_t), 256) < 0) {
        return -1;
    }
    uint64_t *occ = p->scratch_occ;
    int sorted = 1;
    for (size_t i = 0; i < n; i++) {
        occ[i] = (uint64_t)d->occ[i].pos << 32 | d->occ[i].word;
        sorted &= i == 0 || occ[i - 1] <= occ[i];
    }
    if (!sorted) {   /* fields fed in fid order leave them sorted */
        qsort(occ, n, sizeof(uint64_t), cmp_u64);
    }
    /* seen[w]: the next-word bits already logged for the doc's word w (HZ_NEXT_WORD_MASK + 1 = 64
     * values), so each key is logged once, in order of first pair (prepare sorts the log) */
    if (grow((void **)&p->scratch_next, &p->cap_scratch_next, d->n_words, sizeof(uint64_t), 256) < 0) {
        return -1;
    }
    uint64_t *seen = p->scratch_next;
    memset(seen, 0, d->n_words * sizeof(uint64_t));
    size_t g = 0;
    while (g < n) {   /* the words at position `pos` are [g, h), those at pos + 1 [h, k) */
        uint32_t pos = (uint32_t)(occ[g] >> 32);
        size_t h = g;
        while (h < n && (uint32_t)(occ[h] >> 32) == pos) {
            h++;
        }
        size_t k = h;
        while (k < n && (uint32_t)(occ[k] >> 32) == pos + 1) {
            k++;
        }
        if (k > h && ((pos + 1) >> 16) == (pos >> 16)) {
            if (log_reserve(p, (h - g) * (k - h)) < 0) {
                return -1;
            }
            for (size_t a = g; a < h; a++) {
                uint32_t w = (uint32_t)occ[a];
                if (d->words[w].len > HZ_NEXT_WORD_MAX_LEN) {
                    continue;
                }
                uint64_t wid = (uint64_t)p->wids[w] << KEY_WORD_SHIFT;
                for (size_t b = h; b < k; b++) {
                    const doc_word *next = &d->words[(uint32_t)occ[b]];
                    uint32_t bits = hz_next_word_bits(d->bytes + next->off, next->len);
                    if ((seen[w] >> bits) & 1) {
                        continue;
                    }
                    seen[w] |= (uint64_t)1 << bits;
                    p->keys[p->n_log] = wid | (uint64_t)(HZ_NEXT_WORD_FID | bits) << KEY_FID_SHIFT | flag;
                    p->docids[p->n_log] = docid;
                    p->n_log++;
                }
            }
        }
        g = h;
    }
    return 0;
}

/* The number of words of field `fid` in the document (0 when it has none). */
static uint32_t field_count(const hz_doc *d, uint32_t fid)
{
    for (size_t i = 0; i < d->n_fields; i++) {
        if (d->fields[i].fid == fid) {
            return d->fields[i].count;
        }
    }
    return 0;
}

int hz_postings_mark(hz_postings *p, const hz_doc *d, uint32_t docid, int add)
{
    if (p->prepared) {
        return -1;
    }
    int64_t sign = add ? 1 : -1;
    for (size_t i = 0; i < d->n_fields; i++) {
        if (touch_fid(p, d->fields[i].fid, sign, sign * (int64_t)d->fields[i].count) < 0) {
            return -1;
        }
    }
    if (grow((void **)&p->wids, &p->cap_wids, d->n_words ? d->n_words : 1, sizeof(uint32_t), 256) < 0) {
        return -1;
    }
    for (size_t i = 0; i < d->n_words; i++) {
        const doc_word *w = &d->words[i];
        int64_t id = global_word(p, d->bytes + w->off, w->len, w->hash);
        if (id < 0) {
            return -1;
        }
        p->wids[i] = (uint32_t)id;
    }
    /* a first-word pair may add its sole-word pair (at most one more event per pair) */
    if (log_reserve(p, 2 * d->n_pairs) < 0) {
        return -1;
    }
    uint64_t flag = add ? 1 : 0;
    for (size_t i = 0; i < d->n_pairs; i++) {
        uint64_t wid = (uint64_t)p->wids[d->pairs[i].word] << KEY_WORD_SHIFT;
        uint32_t fid = d->pairs[i].fid;
        p->keys[p->n_log] = wid | (uint64_t)fid << KEY_FID_SHIFT | flag;
        p->docids[p->n_log] = docid;
        p->n_log++;
        if ((fid & (HZ_FIRST_WORD_FID | HZ_SECOND_WORD_FID)) == HZ_FIRST_WORD_FID
            && field_count(d, fid & ~HZ_FIRST_WORD_FID) == 1) {
            p->keys[p->n_log] = wid | (uint64_t)(fid | HZ_SOLE_WORD_FID) << KEY_FID_SHIFT | flag;
            p->docids[p->n_log] = docid;
            p->n_log++;
        }
    }
    return log_next_words(p, d, docid, flag);
}

int hz_postings_absorb(hz_postings *dst, const hz_postings *src)
{
    if (dst->prepared || src->prepared) {
        return -1;
    }
    for (size_t i = 0; i < src->n_fids; i++) {
        uint16_t fid = src->fid_order[i];
        if (touch_fid(dst, fid, src->docs[fid], src->nwords[fid]) < 0) {
            return -1;
        }
    }
    /* src's words in its id order (first-mark order) get dst's ids: new ones in that order */
    uint32_t *map = malloc((src->n_words ? src->n_words : 1) * sizeof(uint32_t));
    if (map == NULL) {
        return -1;
    }
    for (size_t i = 0; i < src->n_words; i++) {
        const acc_word *w = &src->words[i];
        int64_t id = global_word(dst, src->arena + w->off, w->len, w->hash);
        if (id < 0) {
            free(map);
            return -1;
        }
        map[i] = (uint32_t)id;
    }
    if (log_reserve(dst, src->n_log) < 0) {
        free(map);
        return -1;
    }
    const uint64_t low = ((uint64_t)1 << KEY_WORD_SHIFT) - 1;
    for (size_t i = 0; i < src->n_log; i++) {
        uint64_t k = src->keys[i];
        dst->keys[dst->n_log] = (uint64_t)map[k >> KEY_WORD_SHIFT] << KEY_WORD_SHIFT | (k & low);
        dst->docids[dst->n_log] = src->docids[i];
        dst->n_log++;
    }
    free(map);
    return 0;
}

typedef struct {
    uint64_t prefix;   /* the first 8 bytes, big-endian, zero-padded: most comparisons end there */
    const unsigned char *key;
    uint32_t len, index;
} sort_item;

static uint64_t key_prefix(const unsigned char *key, uint32_t len)
{
    uint64_t v = 0;
    for (uint32_t i = 0; i < 8; i++) {
        v = v << 8 | (i < len ? key[i] : 0);
    }
    return v;
}

/* Byte order: padded prefixes that differ order as the words do (a word padded with zeros sorts
 * before any longer word it starts); equal ones need the whole comparison. */
static int cmp_items(const void *a, const void *b)
{
    const sort_item *x = a, *y = b;
    if (x->prefix != y->prefix) {
        return x->prefix < y->prefix ? -1 : 1;
    }
    uint32_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    if (c) {
        return c;
    }
    return x->len < y->len ? -1 : x->len > y->len;
}

/* Sorts the words into byte order: an LSD radix sort on the 8-byte prefixes (most words are no
 * longer), then each run of equal prefixes by the whole comparison. -1 on OOM. */
static int sort_words(sort_item *items, size_t n)
{
    enum { DIGIT = 11, BUCKETS = 1 << 11 };
    if (n < 64) {
        qsort(items, n, sizeof(sort_item), cmp_items);
        return 0;
    }
    sort_item *tmp = malloc(n * sizeof(sort_item));
    size_t *count = malloc(BUCKETS * sizeof(size_t));
    if (tmp == NULL || count == NULL) {
        free(tmp);
        free(count);
        return -1;
    }
    sort_item *src = items, *dst = tmp;
    for (unsigned shift = 0; shift < 64; shift += DIGIT) {
        memset(count, 0, BUCKETS * sizeof(size_t));
        for (size_t i = 0; i < n; i++) {
            count[(src[i].prefix >> shift) & (BUCKETS - 1)]++;
        }
        if (count[(src[0].prefix >> shift) & (BUCKETS - 1)] == n) {
            continue;
        }
        size_t sum = 0;
        for (size_t b = 0; b < BUCKETS; b++) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            dst[count[(src[i].prefix >> shift) & (BUCKETS - 1)]++] = src[i];
        }
        sort_item *x = src;
        src = dst;
        dst = x;
    }
    if (src != items) {
        memcpy(items, src, n * sizeof(sort_item));
    }
    free(tmp);
    free(count);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && items[j].prefix == items[i].prefix) {
            j++;
        }
        if (j - i > 1) {
            qsort(items + i, j - i, sizeof(sort_item), cmp_items);
        }
        i = j;
    }
    return 0;
}

/* Stable LSD radix sort of (keys, vals) on the low `bits` bits of the keys, 11 bits a pass;
 * passes whose digit is the same for every key are skipped. Sorts the log of `p` (keys, docids). */
static int radix_sort(hz_postings *p, unsigned bits)
{
    enum { DIGIT = 11, BUCKETS = 1 << 11 };
    uint64_t *keys = p->keys;
    uint32_t *vals = p->docids;
    size_t n = p->n_log;
    if (n < 2) {
        return 0;
    }
    /* the scratch grows with the log and stays (hz_postings_clear) */
    if (n > p->cap_sort) {
        size_t cap = log_capacity(n);
        if (resize_pairs(&p->sort_keys, &p->sort_vals, cap) < 0) {
            return -1;
        }
        p->cap_sort = cap;
    }
    uint64_t *tk = p->sort_keys;
    uint32_t *tv = p->sort_vals;
    size_t *count = malloc(BUCKETS * sizeof(size_t));
    if (count == NULL) {
        return -1;
    }
    uint64_t *sk = keys, *dk = tk;
    uint32_t *sv = vals, *dv = tv;
    for (unsigned shift = 0; shift < bits; shift += DIGIT) {
        memset(count, 0, BUCKETS * sizeof(size_t));
        for (size_t i = 0; i < n; i++) {
            count[(sk[i] >> shift) & (BUCKETS - 1)]++;
        }
        if (count[(sk[0] >> shift) & (BUCKETS - 1)] == n) {
            continue;
        }
        size_t sum = 0;
        for (size_t b = 0; b < BUCKETS; b++) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            size_t at = count[(sk[i] >> shift) & (BUCKETS - 1)]++;
            dk[at] = sk[i];
            dv[at] = sv[i];
        }
        uint64_t *xk = sk;
        sk = dk;
        dk = xk;
        uint32_t *xv = sv;
        sv = dv;
        dv = xv;
    }
    if (sk != keys) {
        memcpy(keys, sk, n * sizeof(uint64_t));
        memcpy(vals, sv, n * sizeof(uint32_t));
    }
    free(count);
    return 0;
}

int hz_postings_prepare(hz_postings *p)
{
    if (p->prepared) {
        return 0;
    }
    /* word ranks in byte order */
    size_t n = p->n_words;
    sort_item *items = malloc((n ? n : 1) * sizeof(sort_item));
    uint32_t *rank = malloc((n ? n : 1) * sizeof(uint32_t));
    p->sorted_off = malloc((n + 1) * sizeof(uint32_t));
    p->sorted_bytes = malloc(p->n_arena ? p->n_arena : 1);
    if (items == NULL || rank == NULL || p->sorted_off == NULL || p->sorted_bytes == NULL) {
        free(items);
        free(rank);
        free(p->sorted_off);
        free(p->sorted_bytes);
        p->sorted_off = NULL;
        p->sorted_bytes = NULL;
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const unsigned char *key = (const unsigned char *)p->arena + p->words[i].off;
        items[i] = (sort_item){key_prefix(key, p->words[i].len), key, p->words[i].len, (uint32_t)i};
    }
    if (sort_words(items, n) < 0) {
        free(items);
        free(rank);
        return -1;
    }
    uint32_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const acc_word *w = &p->words[items[i].index];
        p->sorted_off[i] = at;
        memcpy(p->sorted_bytes + at, p->arena + w->off, w->len);
        at += w->len;
        rank[items[i].index] = (uint32_t)i;
    }
    p->sorted_off[n] = at;
    free(items);
    const uint64_t low = ((uint64_t)1 << KEY_WORD_SHIFT) - 1;
    for (size_t i = 0; i < p->n_log; i++) {
        p->keys[i] = (uint64_t)rank[p->keys[i] >> KEY_WORD_SHIFT] << KEY_WORD_SHIFT | (p->keys[i] & low);
    }
    free(rank);
    unsigned bits = KEY_WORD_SHIFT;
    while (bits < 64 && ((uint64_t)1 << (bits - KEY_WORD_SHIFT)) < n) {
        bits++;
    }
    if (radix_sort(p, bits) < 0) {
        return -1;
    }
    /* groups */
    for (size_t i = 0; i < p->n_log;) {
        uint64_t word = p->keys[i] >> KEY_WORD_SHIFT;
        acc_group wg = {i, i, i};
        while (i < p->n_log && p->keys[i] >> KEY_WORD_SHIFT == word) {
            uint64_t fkey = p->keys[i] >> KEY_FID_SHIFT;
            acc_group g = {i, i, i};
            while (i < p->n_log && p->keys[i] >> KEY_FID_SHIFT == fkey) {
                if (!(p->keys[i] & 1)) {
                    g.mid = i + 1;
                }
                i++;
            }
            g.end = i;
            if (grow((void **)&p->fid_groups, &p->cap_fid_groups, p->n_fid_groups + 1, sizeof(acc_group), 1024) < 0) {
                return -1;
            }
            p->fid_groups[p->n_fid_groups++] = g;
        }
        wg.end = i;
        if (grow((void **)&p->word_groups, &p->cap_word_groups, p->n_word_groups + 1, sizeof(acc_group), 1024) < 0) {
            return -1;
        }
        p->word_groups[p->n_word_groups++] = wg;
    }
    p->prepared = 1;
    return 0;
}

size_t hz_postings_n_keys(const hz_postings *p, int table)
{
    if (!p->prepared) {
        return 0;
    }
    return table == HZ_TABLE_WORD ? p->n_word_groups : p->n_fid_groups;
}

int hz_postings_key(hz_postings *p, int table, size_t i, const char **key, size_t *len,
                    const uint32_t **added, size_t *n_added, const uint32_t **removed, size_t *n_removed)
{
    const acc_group *g = table == HZ_TABLE_WORD ? &p->word_groups[i] : &p->fid_groups[i];
    uint64_t k = p->keys[g->start];
    uint64_t r = k >> KEY_WORD_SHIFT;
    size_t wlen = p->sorted_off[r + 1] - p->sorted_off[r];
    size_t klen = wlen + (table == HZ_TABLE_WORD ? 0 : 3);
    if (grow((void **)&p->key, &p->cap_key, klen, 1, 256) < 0) {
        return -1;
    }
    memcpy(p->key, p->sorted_bytes + p->sorted_off[r], wlen);
    *key = p->key;
    *len = klen;
    if (table != HZ_TABLE_WORD) {
        uint32_t fid = (uint32_t)(k >> KEY_FID_SHIFT) & 0xFFFF;
        p->key[wlen] = 0;
        p->key[wlen + 1] = (char)(fid >> 8);
        p->key[wlen + 2] = (char)(fid & 0xFF);
    }
    if (added == NULL) {
        return 0;
    }
    if (table == HZ_TABLE_WORD) {
        /* a word's docids are spread over its fields' groups: gather them */
        size_t n = g->end - g->start, na = 0, nr = 0;
        if (grow((void **)&p->gather_add, &p->cap_gather_add, n, sizeof(uint32_t), 256) < 0
            || grow((void **)&p->gather_rem, &p->cap_gather_rem, n, sizeof(uint32_t), 256) < 0) {
            return -1;
        }
        for (size_t j = g->start; j < g->end; j++) {
            if (p->keys[j] & 1) {
                p->gather_add[na++] = p->docids[j];
            } else {
                p->gather_rem[nr++] = p->docids[j];
            }
        }
        *added = p->gather_add;
        *n_added = na;
        *removed = p->gather_rem;
        *n_removed = nr;
    } else {
        *removed = p->docids + g->start;
        *n_removed = g->mid - g->start;
        *added = p->docids + g->mid;
        *n_added = g->end - g->mid;
    }
    return 0;
}

size_t hz_postings_n_fields(const hz_postings *p)
{
    return p->n_fids;
}

void hz_postings_field(const hz_postings *p, size_t i, uint16_t *fid, int64_t *docs, int64_t *words)
{
    uint16_t f = p->fid_order[i];
    *fid = f;
    *docs = p->docs[f];
    *words = p->nwords[f];
}
