/* Roaring portable-format merge; see bitmap_merge.h. */
#include "bitmap_merge.h"
#include "grow.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "bitmap_merge.c reads and writes the little-endian roaring format with plain loads"
#endif

#define COOKIE_NO_RUN 12346u
#define COOKIE_RUN 12347u
#define NO_OFFSET_THRESHOLD 4u      /* run-cookie bitmaps with fewer containers have no offsets */
#define ARRAY_MAX 4096u             /* above this cardinality a (non-run) container is a bitmap */
#define BITMAP_WORDS 1024u
#define BITMAP_BYTES 8192u

enum { C_ARRAY, C_BITMAP, C_RUN };

typedef struct {
    uint16_t key;
    uint8_t type;
    uint32_t card;
    const uint8_t *data;   /* payload: array values, bitmap words or (n_runs, runs) */
    size_t size;           /* payload bytes */
} in_cont;

typedef struct {
    uint16_t key;
    uint8_t run;
    uint32_t card;
    size_t off, size;      /* payload in w->payload */
} out_cont;

struct hz_bitmap_work {
    uint32_t *add, *rem;          /* sorted distinct copies when the inputs were not */
    size_t cap_add, cap_rem;
    in_cont *in;
    size_t cap_in;
    out_cont *outc;
    size_t n_outc, cap_outc;
    char *payload;
    size_t n_payload, cap_payload;
    char *out;
    size_t n_out, cap_out;
    uint64_t card;
    uint64_t bits[BITMAP_WORDS];
    uint16_t vals[ARRAY_MAX];     /* an old array container */
    uint16_t merged[ARRAY_MAX];   /* a small result */
};

hz_bitmap_work *hz_bitmap_work_new(void)
{
    return calloc(1, sizeof(hz_bitmap_work));
}

void hz_bitmap_work_free(hz_bitmap_work *w)
{
    if (w == NULL) {
        return;
    }
    free(w->add);
    free(w->rem);
    free(w->in);
    free(w->outc);
    free(w->payload);
    free(w->out);
    free(w);
}

size_t hz_bitmap_work_memory(const hz_bitmap_work *w)
{
    return sizeof(*w) + (w->cap_add + w->cap_rem) * 4 + w->cap_in * sizeof(in_cont)
           + w->cap_outc * sizeof(out_cont) + w->cap_payload + w->cap_out;
}

const char *hz_bitmap_output(const hz_bitmap_work *w, size_t *len, uint64_t *cardinality)
{
    *len = w->n_out;
    *cardinality = w->card;
    return w->out;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* LSD radix sort, 11 bits a pass (a word's docids gathered from several fields). -1 on OOM. */
static int radix_u32(uint32_t *v, size_t n)
{
    uint32_t *tmp = malloc(n * sizeof(uint32_t));
    size_t *count = malloc(2048 * sizeof(size_t));
    if (tmp == NULL || count == NULL) {
        free(tmp);
        free(count);
        return -1;
    }
    uint32_t *src = v, *dst = tmp;
    for (unsigned shift = 0; shift < 32; shift += 11) {
        memset(count, 0, 2048 * sizeof(size_t));
        for (size_t i = 0; i < n; i++) {
            count[(src[i] >> shift) & 2047]++;
        }
        if (count[(src[0] >> shift) & 2047] == n) {
            continue;
        }
        size_t sum = 0;
        for (size_t b = 0; b < 2048; b++) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            dst[count[(src[i] >> shift) & 2047]++] = src[i];
        }
        uint32_t *x = src;
        src = dst;
        dst = x;
    }
    if (src != v) {
        memcpy(v, src, n * sizeof(uint32_t));
    }
    free(tmp);
    free(count);
    return 0;
}

/* `v` itself when strictly ascending (the usual case: docids come in order), else a sorted
 * distinct copy in *buf. */
static const uint32_t *sorted_distinct(const uint32_t *v, size_t *n, uint32_t **buf, size_t *cap)
{
    size_t i;
    for (i = 1; i < *n && v[i - 1] < v[i]; i++) {
    }
    if (i >= *n) {
        return v;
    }
    if (grow((void **)buf, cap, *n, sizeof(uint32_t), 64) < 0) {
        return NULL;
    }
    memcpy(*buf, v, *n * sizeof(uint32_t));
    if (*n <= 32) {
        /* insertion sort: short lists are the common case (a word's docids gathered over a few
         * fields) */
        uint32_t *b = *buf;
        for (size_t x = 1; x < *n; x++) {
            uint32_t val = b[x];
            size_t y = x;
            while (y > 0 && b[y - 1] > val) {
                b[y] = b[y - 1];
                y--;
            }
            b[y] = val;
        }
    } else if (*n < 256 || radix_u32(*buf, *n) < 0) {
        qsort(*buf, *n, sizeof(uint32_t), cmp_u32);
    }
    size_t k = 0;
    for (i = 0; i < *n; i++) {
        if (k == 0 || (*buf)[k - 1] != (*buf)[i]) {
            (*buf)[k++] = (*buf)[i];
        }
    }
    *n = k;
    return *buf;
}

/* ---- reading ---------------------------------------------------------------------------------- */

static uint32_t rd32(const uint8_t *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

static uint16_t rd16(const uint8_t *p)
{
    uint16_t x;
    memcpy(&x, p, 2);
    return x;
}

/* Parses the containers of a serialized bitmap into w->in. -2 when malformed. */
static int parse(hz_bitmap_work *w, const uint8_t *p, size_t len, size_t *n_out)
{
    const uint8_t *end = p + len;
    const uint8_t *runs = NULL;
    size_t n, pos = 0;
    int offsets;
    if (len < 4) {
        return -2;
    }
    uint32_t cookie = rd32(p);
    if ((cookie & 0xFFFF) == COOKIE_RUN) {
        n = (cookie >> 16) + 1;
        runs = p + 4;
        pos = 4 + (n + 7) / 8;
        offsets = n >= NO_OFFSET_THRESHOLD;
    } else if (cookie == COOKIE_NO_RUN) {
        if (len < 8) {
            return -2;
        }
        n = rd32(p + 4);
        if (n > 65536) {
            return -2;
        }
        pos = 8;
        offsets = 1;
    } else {
        return -2;
    }
    size_t header = pos + n * 4 + (offsets ? n * 4 : 0);
    if (header > len) {
        return -2;
    }
    if (grow((void **)&w->in, &w->cap_in, n ? n : 1, sizeof(in_cont), 16) < 0) {
        return -1;
    }
    const uint8_t *desc = p + pos;
    const uint8_t *data = p + header;
    for (size_t i = 0; i < n; i++) {
        in_cont *c = &w->in[i];
        c->key = rd16(desc + 4 * i);
        c->card = (uint32_t)rd16(desc + 4 * i + 2) + 1;
        if (i && c->key <= w->in[i - 1].key) {
            return -2;
        }
        if (runs && (runs[i / 8] >> (i % 8)) & 1) {
            if (end - data < 2) {
                return -2;
            }
            size_t n_runs = rd16(data);
            c->type = C_RUN;
            c->size = 2 + 4 * n_runs;
            if ((size_t)(end - data) < c->size) {
                return -2;
            }
            for (size_t r = 0; r < n_runs; r++) {
                if ((uint32_t)rd16(data + 2 + 4 * r) + rd16(data + 4 + 4 * r) > 0xFFFF) {
                    return -2;
                }
            }
        } else if (c->card > ARRAY_MAX) {
            c->type = C_BITMAP;
            c->size = BITMAP_BYTES;
        } else {
            c->type = C_ARRAY;
            c->size = 2 * (size_t)c->card;
        }
        if ((size_t)(end - data) < c->size) {
            return -2;
        }
        c->data = data;
        data += c->size;
    }
    *n_out = n;
    return 0;
}

/* ---- writing ---------------------------------------------------------------------------------- */

static int emit(hz_bitmap_work *w, uint16_t key, int run, uint32_t card, const void *data, size_t size)
{
    if (grow((void **)&w->outc, &w->cap_outc, w->n_outc + 1, sizeof(out_cont), 16) < 0
        || grow((void **)&w->payload, &w->cap_payload, w->n_payload + size, 1, 4096) < 0) {
        return -1;
    }
    w->outc[w->n_outc++] = (out_cont){key, (uint8_t)run, card, w->n_payload, size};
    if (data != NULL) {
        memcpy(w->payload + w->n_payload, data, size);
    }
    w->n_payload += size;
    w->card += card;
    return 0;
}

static uint16_t *emit_space(hz_bitmap_work *w, size_t size)
{
    return (uint16_t *)(w->payload + w->n_payload - size);
}

static int emit_array(hz_bitmap_work *w, uint16_t key, const uint16_t *v, uint32_t n)
{
    if (n == 0) {
        return 0;
    }
    uint32_t n_runs = 1;
    for (uint32_t i = 1; i < n; i++) {
        n_runs += v[i] != (uint16_t)(v[i - 1] + 1);
    }
    if (2 + 4 * (size_t)n_runs < 2 * (size_t)n) {
        if (emit(w, key, 1, n, NULL, 2 + 4 * (size_t)n_runs) < 0) {
            return -1;
        }
        uint16_t *o = emit_space(w, 2 + 4 * (size_t)n_runs);
        uint16_t hdr = (uint16_t)n_runs;
        memcpy(o, &hdr, 2);
        uint32_t r = 0, start = v[0];
        for (uint32_t i = 1; i <= n; i++) {
            if (i == n || v[i] != (uint16_t)(v[i - 1] + 1)) {
                uint16_t pair[2] = {(uint16_t)start, (uint16_t)(v[i - 1] - start)};
                memcpy((char *)o + 2 + 4 * r, pair, 4);
                r++;
                if (i < n) {
                    start = v[i];
                }
            }
        }
        return 0;
    }
    return emit(w, key, 0, n, v, 2 * (size_t)n);
}

static int emit_bits(hz_bitmap_work *w, uint16_t key)
{
    const uint64_t *b = w->bits;
    uint32_t card = 0, n_runs = 0;
    uint64_t carry = 0;   /* top bit of the previous word */
    for (uint32_t i = 0; i < BITMAP_WORDS; i++) {
        card += (uint32_t)__builtin_popcountll(b[i]);
        n_runs += (uint32_t)__builtin_popcountll(b[i] & ~((b[i] << 1) | carry));
        carry = b[i] >> 63;
    }
    if (card == 0) {
        return 0;
    }
    size_t plain = card <= ARRAY_MAX ? 2 * (size_t)card : BITMAP_BYTES;
    size_t run_size = 2 + 4 * (size_t)n_runs;
    if (run_size < plain) {
        if (emit(w, key, 1, card, NULL, run_size) < 0) {
            return -1;
        }
        char *o = (char *)emit_space(w, run_size);
        uint16_t hdr = (uint16_t)n_runs;
        memcpy(o, &hdr, 2);
        uint32_t r = 0;
        int32_t start = -1;
        for (uint32_t v = 0; v <= 65536; v++) {
            int set = v < 65536 && ((b[v >> 6] >> (v & 63)) & 1);
            if (set && start < 0) {
                start = (int32_t)v;
            } else if (!set && start >= 0) {
                uint16_t pair[2] = {(uint16_t)start, (uint16_t)(v - 1 - (uint32_t)start)};
                memcpy(o + 2 + 4 * r++, pair, 4);
                start = -1;
            }
            if (!set && v < 65536 && (v & 63) == 0 && b[v >> 6] == 0) {
                v += 63;  /* skip an empty word */
            }
        }
        return 0;
    }
    if (card > ARRAY_MAX) {
        return emit(w, key, 0, card, b, BITMAP_BYTES);
    }
    if (emit(w, key, 0, card, NULL, 2 * (size_t)card) < 0) {
        return -1;
    }
    uint16_t *o = emit_space(w, 2 * (size_t)card);
    uint32_t k = 0;
    for (uint32_t i = 0; i < BITMAP_WORDS; i++) {
        uint64_t x = b[i];
        while (x) {
            uint16_t v = (uint16_t)(i * 64 + (uint32_t)__builtin_ctzll(x));
            memcpy(o + k++, &v, 2);
            x &= x - 1;
        }
    }
    return 0;
}

static int finish(hz_bitmap_work *w)
{
    size_t n = w->n_outc;
    w->n_out = 0;
    if (n == 0) {
        return 0;
    }
    int any_run = 0;
    for (size_t i = 0; i < n; i++) {
        any_run |= w->outc[i].run;
    }
    size_t header;
    int offsets;
    if (any_run) {
        offsets = n >= NO_OFFSET_THRESHOLD;
        header = 4 + (n + 7) / 8 + 4 * n + (offsets ? 4 * n : 0);
    } else {
        offsets = 1;
        header = 8 + 8 * n;
    }
    if (grow((void **)&w->out, &w->cap_out, header + w->n_payload, 1, 256) < 0) {
        return -1;
    }
    uint8_t *o = (uint8_t *)w->out;
    size_t pos;
    if (any_run) {
        uint32_t cookie = COOKIE_RUN | (uint32_t)((n - 1) << 16);
        memcpy(o, &cookie, 4);
        memset(o + 4, 0, (n + 7) / 8);
        for (size_t i = 0; i < n; i++) {
            if (w->outc[i].run) {
                o[4 + i / 8] |= (uint8_t)(1u << (i % 8));
            }
        }
        pos = 4 + (n + 7) / 8;
    } else {
        uint32_t cookie = COOKIE_NO_RUN, size = (uint32_t)n;
        memcpy(o, &cookie, 4);
        memcpy(o + 4, &size, 4);
        pos = 8;
    }
    for (size_t i = 0; i < n; i++) {
        uint16_t d[2] = {w->outc[i].key, (uint16_t)(w->outc[i].card - 1)};
        memcpy(o + pos + 4 * i, d, 4);
    }
    pos += 4 * n;
    if (offsets) {
        for (size_t i = 0; i < n; i++) {
            uint32_t off = (uint32_t)(header + w->outc[i].off);
            memcpy(o + pos + 4 * i, &off, 4);
        }
    }
    memcpy(o + header, w->payload, w->n_payload);
    w->n_out = header + w->n_payload;
    return 0;
}

/* ---- merging ---------------------------------------------------------------------------------- */

static void fill_bits(hz_bitmap_work *w, const in_cont *c)
{
    uint64_t *b = w->bits;
    if (c == NULL) {
        memset(b, 0, BITMAP_BYTES);
    } else if (c->type == C_BITMAP) {
        memcpy(b, c->data, BITMAP_BYTES);
    } else if (c->type == C_ARRAY) {
        memset(b, 0, BITMAP_BYTES);
        for (uint32_t i = 0; i < c->card; i++) {
            uint16_t v = rd16(c->data + 2 * i);
            b[v >> 6] |= 1ull << (v & 63);
        }
    } else {
        memset(b, 0, BITMAP_BYTES);
        size_t n_runs = rd16(c->data);
        for (size_t r = 0; r < n_runs; r++) {
            uint32_t lo = rd16(c->data + 2 + 4 * r);
            uint32_t hi = lo + rd16(c->data + 4 + 4 * r);  /* inclusive; <= 0xFFFF (checked) */
            for (uint32_t v = lo; v <= hi;) {
                if ((v & 63) == 0 && v + 63 <= hi) {
                    b[v >> 6] = ~0ull;
                    v += 64;
                } else {
                    b[v >> 6] |= 1ull << (v & 63);
                    v++;
                }
            }
        }
    }
}

/* One chunk with changes: old container c (or NULL), added a[0..na), removed r[0..nr) (full
 * values, all in chunk `key`, sorted). */
static int merge_chunk(hz_bitmap_work *w, uint16_t key, const in_cont *c, const uint32_t *a, size_t na,
                       const uint32_t *r, size_t nr)
{
    if ((c == NULL || c->type == C_ARRAY) && (c ? c->card : 0) + na <= ARRAY_MAX) {
        /* Small: sorted-array difference then union. */
        uint32_t n = 0;
        if (c != NULL) {
            size_t j = 0;
            for (uint32_t i = 0; i < c->card; i++) {
                uint16_t v = rd16(c->data + 2 * i);
                while (j < nr && (uint16_t)r[j] < v) {
                    j++;
                }
                if (j < nr && (uint16_t)r[j] == v) {
                    continue;
                }
                w->vals[n++] = v;
            }
        }
        uint32_t k = 0, i = 0;
        size_t j = 0;
        while (i < n || j < na) {
            uint16_t v;
            if (j >= na || (i < n && w->vals[i] < (uint16_t)a[j])) {
                v = w->vals[i++];
            } else {
                v = (uint16_t)a[j++];
                if (i < n && w->vals[i] == v) {
                    i++;
                }
            }
            w->merged[k++] = v;
        }
        return emit_array(w, key, w->merged, k);
    }
    fill_bits(w, c);
    uint64_t *b = w->bits;
    for (size_t i = 0; i < nr; i++) {
        uint16_t v = (uint16_t)r[i];
        b[v >> 6] &= ~(1ull << (v & 63));
    }
    for (size_t i = 0; i < na; i++) {
        uint16_t v = (uint16_t)a[i];
        b[v >> 6] |= 1ull << (v & 63);
    }
    return emit_bits(w, key);
}

int hz_bitmap_merge(hz_bitmap_work *w, const char *stored, size_t stored_len, const uint32_t *added,
                    size_t n_added, const uint32_t *removed, size_t n_removed)
{
    size_t n_in = 0;
    int rc;
    w->n_outc = 0;
    w->n_payload = 0;
    w->n_out = 0;
    w->card = 0;
    if (stored != NULL && stored_len) {
        rc = parse(w, (const uint8_t *)stored, stored_len, &n_in);
        if (rc < 0) {
            return rc;
        }
    }
    const uint32_t *a = added, *r = removed;
    if (n_added && (a = sorted_distinct(added, &n_added, &w->add, &w->cap_add)) == NULL) {
        return -1;
    }
    if (n_removed && (r = sorted_distinct(removed, &n_removed, &w->rem, &w->cap_rem)) == NULL) {
        return -1;
    }
    size_t ci = 0, ai = 0, ri = 0;
    while (ci < n_in || ai < n_added) {
        /* next chunk holding a stored container or an added value (removals alone create nothing) */
        uint32_t key = 0x10000;
        if (ci < n_in) {
            key = w->in[ci].key;
        }
        if (ai < n_added && (a[ai] >> 16) < key) {
            key = a[ai] >> 16;
        }
        const in_cont *c = ci < n_in && w->in[ci].key == key ? &w->in[ci] : NULL;
        size_t a0 = ai, r0;
        while (ai < n_added && (a[ai] >> 16) == key) {
            ai++;
        }
        while (ri < n_removed && (r[ri] >> 16) < key) {
            ri++;
        }
        r0 = ri;
        while (ri < n_removed && (r[ri] >> 16) == key) {
            ri++;
        }
        if (c != NULL) {
            ci++;
        }
        if (ai == a0 && ri == r0) {
            rc = emit(w, (uint16_t)key, c->type == C_RUN, c->card, c->data, c->size);
        } else {
            rc = merge_chunk(w, (uint16_t)key, c, a + a0, ai - a0, r + r0, ri - r0);
        }
        if (rc < 0) {
            return rc;
        }
    }
    return finish(w);
}

/* ---- the flush of a new table ----------------------------------------------------------------- */

typedef struct {
    size_t lo, hi;
    char *buf;
    size_t n_buf, cap_buf;
    size_t *offs;
    size_t cap_offs;
    int full;           /* computed, not yet handed out (or handed out and not yet released) */
} flush_slot;

struct hz_flush {
    hz_postings *acc;
    int table;
    size_t n, chunk;
    hz_bitmap_work *work;
    flush_slot slots[2];
    size_t next_lo;      /* the next chunk to compute */
    size_t taken;        /* chunks handed out */
    int rc;              /* the computing side's: -1 once it failed */
    int threaded, stop;
    pthread_t tid;
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

/* Computes the keys [s->lo, s->hi) into s; 0 or -1 on OOM. */
static int flush_compute(hz_flush *f, flush_slot *s)
{
    size_t m = s->hi - s->lo;
    if (grow((void **)&s->offs, &s->cap_offs, 2 * m + 1, sizeof(size_t), 64) < 0) {
        return -1;
    }
    s->n_buf = 0;
    for (size_t i = 0; i < m; i++) {
        const char *key, *out;
        size_t klen, n_added, n_removed, size;
        const uint32_t *added, *removed;
        uint64_t card;
        if (hz_postings_key(f->acc, f->table, s->lo + i, &key, &klen, &added, &n_added, &removed, &n_removed)
            != 0) {
            return -1;
        }
        s->offs[2 * i] = s->offs[2 * i + 1] = s->n_buf;
        if (n_added == 0) {
            continue;   /* removals only, from nothing stored: nothing to write */
        }
        if (hz_bitmap_merge(f->work, NULL, 0, added, n_added, removed, n_removed) != 0) {
            return -1;
        }
        out = hz_bitmap_output(f->work, &size, &card);
        if (size == 0) {
            continue;
        }
        if (grow((void **)&s->buf, &s->cap_buf, s->n_buf + klen + size, 1, 1 << 16) < 0) {
            return -1;
        }
        memcpy(s->buf + s->n_buf, key, klen);
        memcpy(s->buf + s->n_buf + klen, out, size);
        s->offs[2 * i + 1] = s->n_buf + klen;
        s->n_buf += klen + size;
    }
    s->offs[2 * m] = s->n_buf;
    return 0;
}

static void *flush_thread(void *arg)
{
    hz_flush *f = arg;
    pthread_mutex_lock(&f->lock);
    for (size_t k = 0;; k++) {
        flush_slot *s = &f->slots[k % 2];
        while (!f->stop && s->full) {
            pthread_cond_wait(&f->cond, &f->lock);
        }
        if (f->stop || f->next_lo >= f->n) {
            break;
        }
        s->lo = f->next_lo;
        s->hi = f->n - s->lo < f->chunk ? f->n : s->lo + f->chunk;
        f->next_lo = s->hi;
        pthread_mutex_unlock(&f->lock);
        int rc = flush_compute(f, s);
        pthread_mutex_lock(&f->lock);
        s->full = 1;
        if (rc != 0) {
            f->rc = -1;
        }
        pthread_cond_broadcast(&f->cond);
        if (rc != 0) {
            break;
        }
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

hz_flush *hz_flush_start(hz_postings *acc, int table, size_t chunk, int threaded)
{
    hz_flush *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return NULL;
    }
    f->acc = acc;
    f->table = table;
    f->n = hz_postings_n_keys(acc, table);
    f->chunk = chunk ? chunk : 1;
    f->work = hz_bitmap_work_new();
    if (f->work == NULL || pthread_mutex_init(&f->lock, NULL) != 0) {
        hz_bitmap_work_free(f->work);
        free(f);
        return NULL;
    }
    if (pthread_cond_init(&f->cond, NULL) != 0) {
        pthread_mutex_destroy(&f->lock);
        hz_bitmap_work_free(f->work);
        free(f);
        return NULL;
    }
    /* no thread to spare: each chunk is computed when asked for */
    f->threaded = threaded && f->n > f->chunk && pthread_create(&f->tid, NULL, flush_thread, f) == 0;
    return f;
}

int hz_flush_next(hz_flush *f, hz_flush_chunk *out)
{
    if (f->taken > 0) {
        /* the chunk handed out last time is written: its slot may be filled again */
        pthread_mutex_lock(&f->lock);
        f->slots[(f->taken - 1) % 2].full = 0;
        pthread_cond_broadcast(&f->cond);
        pthread_mutex_unlock(&f->lock);
    }
    size_t lo = f->taken * f->chunk;
    if (lo >= f->n) {
        return 0;
    }
    flush_slot *s = &f->slots[f->taken % 2];
    if (f->threaded) {
        pthread_mutex_lock(&f->lock);
        while (!s->full && f->rc == 0) {
            pthread_cond_wait(&f->cond, &f->lock);
        }
        int rc = f->rc;
        pthread_mutex_unlock(&f->lock);
        if (rc != 0) {
            return -1;
        }
    } else {
        s->lo = lo;
        s->hi = f->n - lo < f->chunk ? f->n : lo + f->chunk;
        if (flush_compute(f, s) != 0) {
            return -1;
        }
        s->full = 1;
    }
    f->taken++;
    out->lo = s->lo;
    out->hi = s->hi;
    out->buf = s->buf;
    out->offs = s->offs;
    return 1;
}

void hz_flush_free(hz_flush *f)
{
    if (f == NULL) {
        return;
    }
    if (f->threaded) {
        pthread_mutex_lock(&f->lock);
        f->stop = 1;
        pthread_cond_broadcast(&f->cond);
        pthread_mutex_unlock(&f->lock);
        pthread_join(f->tid, NULL);
    }
    for (int i = 0; i < 2; i++) {
        free(f->slots[i].buf);
        free(f->slots[i].offs);
    }
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->lock);
    hz_bitmap_work_free(f->work);
    free(f);
}
