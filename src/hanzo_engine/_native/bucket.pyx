# cython: language_level=3
"""Native keys of the ranking rules for every document of one bucket (`engine/search/native_bucket_keys.py`).

The bucket sort scores the documents a bucket of the words and typo rules holds on the rules after
them, one document at a time (`bucket_sort.Ranker`). When the bucket has a single path whose nodes'
derivations are all one word, each of those rules is a function of where the derivation words occur
in the document, so the whole bucket can be keyed here from the raw forward entries (msgpack
`[lengths, postings]`, csrc/postings.c) without building Python objects per word:

- one pass over a document's postings drops each occurrence of a query word into the buffers of the
  nodes (and typo levels) it derives for, keeping only the fields the derivation may match in
  (`allowed`, or `allowed_tol` for typo and ngram derivations); the exact word of a node is also kept
  in the searched fields (the `EXACT` pseudo-level) and in every field (exact attribute);
- a node's level is the cheapest level with an occurrence (what `Node.level_of` reads from bitmaps);
- each rule is then computed exactly as its module in `engine/search/ranking_rules/` does for one
  interpretation: proximity (pair costs of consecutive nodes), attribute rank (best field weight),
  word position (bucketed distance cost), exactness (exact attribute, then exact words; later rules
  see the exact word only).

Keys are int32 columns, smaller is better, in rule order (attribute: fid then position; exactness:
-attribute match, -exact words; bm25: a zero column the caller fills). A document whose entry is
missing or matches no derivation of some node gets `INVALID` everywhere (never ranked first).
"""

from libc.stdint cimport int8_t, int32_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memset

import numpy as np

cimport numpy as cnp

from hanzo_engine._native.mpack cimport Reader, fill_heads, find_word_in, read_header, read_str, read_uint

cnp.import_array()

# rule codes, as `native_bucket_keys.RULE_CODES` (each rule module's NATIVE_CODE)
DEF R_PROXIMITY = 1
DEF R_ATTRIBUTE_RANK = 2
DEF R_ATTRIBUTE = 3
DEF R_WORD_POSITION = 4
DEF R_EXACTNESS = 5
DEF R_BM25 = 6

# set codes of the entries: typo levels 0, 1, 2, the exact word in the searched fields, anywhere
DEF S_EXACT = 3
DEF S_RAW = 4
# per node and level, four position lists (the same for one-word derivations; for a phrase-like
# derivation present in the document: its starts, its first word's and its last word's positions)
DEF K_OCC = 0  # match starts: attribute rank
DEF K_WPOS = 1  # word position rule
DEF K_FIRST = 2  # proximity, as the right-hand node
DEF K_LAST = 3  # proximity, as the left-hand node
DEF KINDS = 4
DEF B_EXACT = 12  # buffer of the exact word in the searched fields (every kind)
DEF B_RAW = 13
DEF NBUF = 14  # buffers per node
DEF MAX_SLOTS = 8  # words of a phrase-like derivation

DEF MAX_DISTANCE = 4
DEF MAX_COUNTED_WORDS = 30
DEF INVALID_KEY = 1 << 30
INVALID = INVALID_KEY


cdef struct PosBuf:
    uint32_t *pos
    uint8_t *phrase
    Py_ssize_t n
    Py_ssize_t cap


cdef int push(PosBuf *b, uint32_t p, uint8_t ph) noexcept nogil:
    cdef Py_ssize_t cap
    cdef void *a
    cdef void *c
    if b.n == b.cap:
        cap = b.cap * 2 if b.cap else 16
        a = realloc(b.pos, cap * sizeof(uint32_t))
        if a == NULL:
            return -1
        b.pos = <uint32_t *>a
        c = realloc(b.phrase, cap)
        if c == NULL:
            return -1
        b.phrase = <uint8_t *>c
        b.cap = cap
    b.pos[b.n] = p
    b.phrase[b.n] = ph
    b.n += 1
    return 0


cdef inline PosBuf *kind_buf(PosBuf *bufs, int node, int cur, int kind) noexcept nogil:
    """The `kind` list of `node` at interpretation `cur` (a typo level, or S_EXACT)."""
    if cur == S_EXACT:
        return &bufs[node * NBUF + B_EXACT]
    return &bufs[node * NBUF + cur * KINDS + kind]


cdef inline bint contains(PosBuf *b, uint32_t p) noexcept nogil:
    cdef Py_ssize_t a
    for a in range(b.n):
        if b.pos[a] == p:
            return True
    return False


cdef inline int bucketed(int p) noexcept nogil:
    """milli's `bucketed_position` (ranking_rules.word_position.bucketed_position)."""
    cdef int r = 32
    if p < 16:
        return p
    if p < 24:
        return 24
    while r < p:
        r <<= 1
    return r


cdef inline int position_cost(int d) noexcept nogil:
    """ranking_rules.word_position.position_cost."""
    if d <= 0:
        return 0
    if d <= 1:
        return 1
    if d <= 4:
        return 2
    if d <= 7:
        return 3
    if d <= 11:
        return 4
    if d <= 16:
        return 5
    if d <= 24:
        return 6
    if d <= 64:
        return 7
    if d <= 256:
        return 8
    if d <= 1024:
        return 9
    return 10


cdef class BucketQuery:
    """One path's derivation words and the rules to key; built once per path of a search."""

    cdef list _keep
    cdef const uint8_t **words
    cdef uint8_t heads[8192]  # mpack.HEAD_BYTES
    cdef Py_ssize_t *lens
    cdef Py_ssize_t n_words
    cdef int *start  # word i's entries are [start[i], start[i + 1])
    cdef int *e_node
    cdef int *e_set
    cdef uint8_t *e_tol
    cdef uint8_t *e_phrase
    cdef int *e_alt  # phrase-like derivation of the entry (-1: a one-word derivation)
    cdef int *e_slot
    cdef int n_alts
    cdef int *alt_node
    cdef int *alt_level
    cdef int *alt_words
    cdef PosBuf *pbufs  # per phrase-like derivation and slot: positions of the slot's word
    cdef int n_nodes
    cdef int *qstart
    cdef int *length
    cdef int *first
    cdef int *qspan
    cdef uint8_t *contig
    cdef uint8_t *has_exact
    cdef int n_rules
    cdef int *rules
    cdef readonly int n_cols
    cdef int n_fields
    cdef uint8_t *allowed
    cdef uint8_t *allowed_tol
    cdef int *weight
    cdef int max_weight
    cdef bint by_attribute
    cdef PosBuf *bufs
    cdef int *field_len

    def __cinit__(self, list words, list entries, list alts, list nodes, list rules, const uint8_t[::1] allowed,
                  const uint8_t[::1] allowed_tol, const int32_t[::1] weight, int max_weight, bint by_attribute):
        """`words`: sorted distinct UTF-8 bytes; `entries[i]`: (node, set, tolerant, phrase, alt, slot)
        of words[i], `alt` indexing `alts` (node, level, words) for a word of a phrase-like derivation,
        else -1; `nodes`: (qstart, length, first term, query span, contiguous with the previous node,
        has an exact word) in path order; `rules`: rule codes; `weight[fid]`: -1 for a field without
        weight."""
        cdef Py_ssize_t i, total = 0, k = 0
        self.n_words = len(words)
        self._keep = list(words)
        for es in entries:
            total += len(es)
        self.n_nodes = len(nodes)
        self.n_rules = len(rules)
        self.n_fields = allowed.shape[0]
        self.words = <const uint8_t **>malloc(max(self.n_words, 1) * sizeof(uint8_t *))
        self.lens = <Py_ssize_t *>malloc(max(self.n_words, 1) * sizeof(Py_ssize_t))
        self.start = <int *>malloc((self.n_words + 1) * sizeof(int))
        self.e_node = <int *>malloc(max(total, 1) * sizeof(int))
        self.e_set = <int *>malloc(max(total, 1) * sizeof(int))
        self.e_tol = <uint8_t *>malloc(max(total, 1))
        self.e_phrase = <uint8_t *>malloc(max(total, 1))
        self.e_alt = <int *>malloc(max(total, 1) * sizeof(int))
        self.e_slot = <int *>malloc(max(total, 1) * sizeof(int))
        self.n_alts = len(alts)
        self.alt_node = <int *>malloc(max(self.n_alts, 1) * sizeof(int))
        self.alt_level = <int *>malloc(max(self.n_alts, 1) * sizeof(int))
        self.alt_words = <int *>malloc(max(self.n_alts, 1) * sizeof(int))
        self.pbufs = <PosBuf *>malloc(max(self.n_alts * MAX_SLOTS, 1) * sizeof(PosBuf))
        self.qstart = <int *>malloc(max(self.n_nodes, 1) * sizeof(int))
        self.length = <int *>malloc(max(self.n_nodes, 1) * sizeof(int))
        self.first = <int *>malloc(max(self.n_nodes, 1) * sizeof(int))
        self.qspan = <int *>malloc(max(self.n_nodes, 1) * sizeof(int))
        self.contig = <uint8_t *>malloc(max(self.n_nodes, 1))
        self.has_exact = <uint8_t *>malloc(max(self.n_nodes, 1))
        self.rules = <int *>malloc(max(self.n_rules, 1) * sizeof(int))
        self.allowed = <uint8_t *>malloc(max(self.n_fields, 1))
        self.allowed_tol = <uint8_t *>malloc(max(self.n_fields, 1))
        self.weight = <int *>malloc(max(self.n_fields, 1) * sizeof(int))
        self.field_len = <int *>malloc(max(self.n_fields, 1) * sizeof(int))
        self.bufs = <PosBuf *>malloc(max(self.n_nodes * NBUF, 1) * sizeof(PosBuf))
        if not (self.words and self.lens and self.start and self.e_node and self.e_set and self.e_tol
                and self.e_phrase and self.e_alt and self.e_slot and self.alt_node and self.alt_level
                and self.alt_words and self.pbufs and self.qstart and self.length and self.first and self.qspan
                and self.contig and self.has_exact and self.rules and self.allowed and self.allowed_tol
                and self.weight and self.field_len and self.bufs):
            raise MemoryError()
        memset(self.bufs, 0, max(self.n_nodes * NBUF, 1) * sizeof(PosBuf))
        memset(self.pbufs, 0, max(self.n_alts * MAX_SLOTS, 1) * sizeof(PosBuf))
        for i in range(self.n_alts):
            an, al, aw = alts[i]
            if not (0 <= an < self.n_nodes and 0 <= al < 3 and 2 <= aw <= MAX_SLOTS):
                raise ValueError("bad phrase derivation")
            self.alt_node[i] = an
            self.alt_level[i] = al
            self.alt_words[i] = aw
        for i in range(self.n_words):
            w = self._keep[i]
            self.words[i] = <const uint8_t *><char *>w
            self.lens[i] = len(w)
            self.start[i] = <int>k
            for node, kind, tol, phrase, alt, slot in entries[i]:
                if not (0 <= node < self.n_nodes and 0 <= kind <= S_RAW and -1 <= alt < self.n_alts
                        and 0 <= slot < MAX_SLOTS):
                    raise ValueError("bad entry")
                self.e_node[k] = node
                self.e_set[k] = kind
                self.e_tol[k] = 1 if tol else 0
                self.e_phrase[k] = 1 if phrase else 0
                self.e_alt[k] = alt
                self.e_slot[k] = slot
                k += 1
        self.start[self.n_words] = <int>k
        fill_heads(self.heads, self.words, self.lens, self.n_words)
        for i in range(self.n_nodes):
            qs, ln, fi, sp, cg, ex = nodes[i]
            self.qstart[i] = qs
            self.length[i] = ln
            self.first[i] = fi
            self.qspan[i] = sp
            self.contig[i] = 1 if cg else 0
            self.has_exact[i] = 1 if ex else 0
        self.n_cols = 0
        for i in range(self.n_rules):
            self.rules[i] = rules[i]
            self.n_cols += 2 if rules[i] in (R_ATTRIBUTE, R_EXACTNESS) else 1
        for i in range(self.n_fields):
            self.allowed[i] = allowed[i]
            self.allowed_tol[i] = allowed_tol[i]
            self.weight[i] = weight[i]
        self.max_weight = max_weight
        self.by_attribute = by_attribute

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.bufs != NULL:
            for i in range(self.n_nodes * NBUF):
                free(self.bufs[i].pos)
                free(self.bufs[i].phrase)
        if self.pbufs != NULL:
            for i in range(self.n_alts * MAX_SLOTS):
                free(self.pbufs[i].pos)
                free(self.pbufs[i].phrase)
        free(self.bufs)
        free(self.pbufs)
        free(self.e_alt)
        free(self.e_slot)
        free(self.alt_node)
        free(self.alt_level)
        free(self.alt_words)
        free(self.words)
        free(self.lens)
        free(self.start)
        free(self.e_node)
        free(self.e_set)
        free(self.e_tol)
        free(self.e_phrase)
        free(self.qstart)
        free(self.length)
        free(self.first)
        free(self.qspan)
        free(self.contig)
        free(self.has_exact)
        free(self.rules)
        free(self.allowed)
        free(self.allowed_tol)
        free(self.weight)
        free(self.field_len)

    cdef inline Py_ssize_t find(self, const uint8_t *s, Py_ssize_t n) noexcept nogil:
        return find_word_in(self.heads, self.words, self.lens, self.n_words, s, n)

    cdef int collect(self, const uint8_t *data, Py_ssize_t size) noexcept nogil:
        """Fills the node buffers and field lengths from one forward entry; -1 when malformed."""
        cdef Reader r
        cdef uint64_t n_map, n_pos, fid, count, pos, slen
        cdef const uint8_t *s
        cdef Py_ssize_t i, j, k
        cdef int e, kind, node, base
        for i in range(self.n_nodes * NBUF):
            self.bufs[i].n = 0
        for i in range(self.n_alts * MAX_SLOTS):
            self.pbufs[i].n = 0
        for i in range(self.n_fields):
            self.field_len[i] = -1
        r.p = data
        r.end = data + size
        if r.p >= r.end or r.p[0] != 0x92:
            return -1
        r.p += 1
        if read_header(&r, 0x80, 4, 0xDE, 0xDF, &n_map) < 0:
            return -1
        for i in range(<Py_ssize_t>n_map):
            if read_uint(&r, &fid) < 0 or read_uint(&r, &count) < 0:
                return -1
            if fid < <uint64_t>self.n_fields:
                self.field_len[fid] = <int>count
        if read_header(&r, 0x80, 4, 0xDE, 0xDF, &n_map) < 0:
            return -1
        for i in range(<Py_ssize_t>n_map):
            if read_str(&r, &s, &slen) < 0 or read_header(&r, 0x90, 4, 0xDC, 0xDD, &n_pos) < 0:
                return -1
            j = self.find(s, <Py_ssize_t>slen)
            for k in range(<Py_ssize_t>n_pos):
                if read_uint(&r, &pos) < 0:
                    return -1
                if j < 0:
                    continue
                fid = pos >> 16
                for e in range(self.start[j], self.start[j + 1]):
                    kind = self.e_set[e]
                    node = self.e_node[e]
                    if kind == S_RAW:
                        if push(&self.bufs[node * NBUF + B_RAW], <uint32_t>pos, 0) < 0:
                            return -1
                        continue
                    if fid >= <uint64_t>self.n_fields:
                        continue
                    if self.e_tol[e]:
                        if not self.allowed_tol[fid]:
                            continue
                    elif not self.allowed[fid]:
                        continue
                    if kind == S_EXACT:
                        if push(&self.bufs[node * NBUF + B_EXACT], <uint32_t>pos, self.e_phrase[e]) < 0:
                            return -1
                    elif self.e_alt[e] >= 0:
                        if push(&self.pbufs[self.e_alt[e] * MAX_SLOTS + self.e_slot[e]], <uint32_t>pos, 1) < 0:
                            return -1
                    else:
                        base = node * NBUF + kind * KINDS
                        if (push(&self.bufs[base + K_OCC], <uint32_t>pos, self.e_phrase[e]) < 0
                                or push(&self.bufs[base + K_WPOS], <uint32_t>pos, self.e_phrase[e]) < 0
                                or push(&self.bufs[base + K_FIRST], <uint32_t>pos, self.e_phrase[e]) < 0
                                or push(&self.bufs[base + K_LAST], <uint32_t>pos, self.e_phrase[e]) < 0):
                            return -1
        return self.phrases()

    cdef int phrases(self) noexcept nogil:
        """The phrase-like derivations present in the document, into their node's level lists
        (`features.occurrences`, `word_position.positions`, `proximity.ends` for a phrase)."""
        cdef int a, k, base
        cdef Py_ssize_t x
        cdef uint32_t p
        cdef bint found, ok
        cdef PosBuf *slot0
        cdef PosBuf *last
        for a in range(self.n_alts):
            slot0 = &self.pbufs[a * MAX_SLOTS]
            last = &self.pbufs[a * MAX_SLOTS + self.alt_words[a] - 1]
            base = self.alt_node[a] * NBUF + self.alt_level[a] * KINDS
            found = False
            for x in range(slot0.n):
                p = slot0.pos[x]
                ok = True
                for k in range(1, self.alt_words[a]):
                    if not contains(&self.pbufs[a * MAX_SLOTS + k], p + <uint32_t>k):
                        ok = False
                        break
                if ok:
                    found = True
                    if push(&self.bufs[base + K_OCC], p, 1) < 0:
                        return -1
            if not found:
                continue
            for x in range(slot0.n):
                if (push(&self.bufs[base + K_WPOS], slot0.pos[x], 1) < 0
                        or push(&self.bufs[base + K_FIRST], slot0.pos[x], 1) < 0):
                    return -1
            for x in range(last.n):
                if push(&self.bufs[base + K_LAST], last.pos[x], 1) < 0:
                    return -1
        return 0

    cdef int proximity(self, int *cur) noexcept nogil:
        """`ranking_rules.proximity.cost` for the current interpretation."""
        cdef int total = 0, i, extra, cap, cost, c, d
        cdef Py_ssize_t a, z
        cdef PosBuf *left
        cdef PosBuf *right
        cdef uint32_t ll, rf
        for i in range(self.n_nodes):
            extra = self.length[i] - 1
            if i == 0 or not self.contig[i]:
                total += extra
                continue
            cap = MAX_DISTANCE - 1 + extra
            cost = cap
            left = kind_buf(self.bufs, i - 1, cur[i - 1], K_LAST)
            right = kind_buf(self.bufs, i, cur[i], K_FIRST)
            for a in range(left.n):
                ll = left.pos[a]
                for z in range(right.n):
                    rf = right.pos[z]
                    if (ll >> 16) != (rf >> 16):
                        continue
                    if self.by_attribute:
                        c = extra
                    elif rf > ll:
                        d = <int>(rf - ll)
                        c = d - 1 + extra if d < MAX_DISTANCE else cap
                    elif rf < ll and not (left.phrase[a] or right.phrase[z]):
                        d = <int>(ll - rf)
                        c = d + extra if d < MAX_DISTANCE - 1 else cap
                    else:
                        continue
                    if c < cost:
                        cost = c
                if cost == extra:
                    break
            total += cost
        return total

    cdef int fid_cost(self, int *cur) noexcept nogil:
        """`ranking_rules.attribute_rank.cost`: per node the weight of its best field, times its length."""
        cdef int total = 0, i, m, w
        cdef Py_ssize_t a
        cdef uint32_t f
        cdef PosBuf *b
        for i in range(self.n_nodes):
            b = kind_buf(self.bufs, i, cur[i], K_OCC)
            m = self.max_weight
            for a in range(b.n):
                f = b.pos[a] >> 16
                w = self.weight[f] if f < <uint32_t>self.n_fields and self.weight[f] >= 0 else self.max_weight
                if w < m:
                    m = w
            total += m * self.length[i]
        return total

    cdef int position(self, int *cur) noexcept nogil:
        """`ranking_rules.word_position.cost`: per node the cheapest bucketed distance to its query position."""
        cdef int total = 0, i, best, c, d, k
        cdef Py_ssize_t a
        cdef PosBuf *b
        for i in range(self.n_nodes):
            b = kind_buf(self.bufs, i, cur[i], K_WPOS)
            best = 10 * self.length[i]
            for a in range(b.n):
                d = bucketed(<int>(b.pos[a] & 0xFFFF)) - self.qstart[i]
                if d < 0:
                    d = -d
                c = 0
                for k in range(self.length[i]):
                    c += position_cost(d + k)
                if c < best:
                    best = c
            total += best
        return total

    cdef bint raw_in_field(self, int i, uint32_t fid) noexcept nogil:
        cdef PosBuf *b = &self.bufs[i * NBUF + B_RAW]
        cdef Py_ssize_t a
        for a in range(b.n):
            if (b.pos[a] >> 16) == fid:
                return True
        return False

    cdef int exact_attribute(self, int *cur) noexcept nogil:
        """`ranking_rules.exactness.exact_attribute`: 3 a field equal to the query's exact words, 2 a field starting
        with them, 1 neither."""
        cdef int i, prev = -1, count = 0, want, n_terms = 0
        cdef Py_ssize_t a
        cdef uint32_t f, p
        cdef bint found, all_in, starts = False
        cdef PosBuf *b
        for i in range(self.n_nodes):
            if not (self.has_exact[i] and (cur[i] == 0 or cur[i] == S_EXACT)):
                continue
            if n_terms == 0 and self.first[i] != 0:
                return 1
            if n_terms and self.first[i] - prev > 1:
                return 1
            prev = self.first[i]
            n_terms += 1
            count += self.qspan[i]
        if n_terms == 0:
            return 1
        for i in range(self.n_nodes):
            if not (self.has_exact[i] and (cur[i] == 0 or cur[i] == S_EXACT)):
                continue
            want = bucketed(self.qstart[i])
            b = &self.bufs[i * NBUF + B_RAW]
            found = False
            for a in range(b.n):
                p = b.pos[a]
                f = p >> 16
                if f < <uint32_t>self.n_fields and self.weight[f] >= 0 and bucketed(<int>(p & 0xFFFF)) == want:
                    found = True
                    break
            if not found:
                return 1
        for f in range(<uint32_t>self.n_fields):
            if self.weight[f] < 0:
                continue
            all_in = True
            for i in range(self.n_nodes):
                if self.has_exact[i] and (cur[i] == 0 or cur[i] == S_EXACT) and not self.raw_in_field(i, f):
                    all_in = False
                    break
            if all_in:
                if count <= MAX_COUNTED_WORDS and self.field_len[f] == count:
                    return 3
                starts = True
        return 2 if starts else 1

    def matched(self, list entries):
        """uint8 per forward entry: 1 when every node has a derivation in it (at some level)."""
        cdef Py_ssize_t n_docs = len(entries), d
        cdef cnp.ndarray[cnp.uint8_t, ndim=1] out = np.zeros(n_docs, dtype=np.uint8)
        cdef int i, l
        cdef bint ok
        cdef bytes raw
        for d in range(n_docs):
            obj = entries[d]
            if obj is None:
                continue
            raw = <bytes>obj
            if self.collect(<const uint8_t *><char *>raw, len(raw)) < 0:
                continue
            ok = True
            for i in range(self.n_nodes):
                ok = False
                for l in range(3):
                    if self.bufs[i * NBUF + l * KINDS + K_OCC].n:
                        ok = True
                        break
                if not ok:
                    break
            out[d] = ok
        return out

    def keys(self, list entries):
        """int32 keys (documents x `n_cols`) of the forward entries (`bytes`, or None)."""
        cdef Py_ssize_t n_docs = len(entries), d
        cdef cnp.ndarray[cnp.int32_t, ndim=2] out = np.empty((n_docs, max(self.n_cols, 1)), dtype=np.int32)
        cdef int32_t *row
        cdef int cur[64]
        cdef int i, l, col, rule, er, matching
        cdef bytes raw
        cdef const uint8_t *data
        cdef Py_ssize_t size
        cdef bint bad
        if self.n_nodes > 64:
            raise ValueError("too many nodes")
        for d in range(n_docs):
            row = <int32_t *>cnp.PyArray_GETPTR2(out, d, 0)
            obj = entries[d]
            bad = obj is None
            if not bad:
                raw = <bytes>obj
                data = <const uint8_t *><char *>raw
                size = len(raw)
            with nogil:
                if not bad:
                    bad = self.collect(data, size) < 0
                if not bad:
                    for i in range(self.n_nodes):
                        cur[i] = -1
                        for l in range(3):
                            if self.bufs[i * NBUF + l * KINDS + K_OCC].n:
                                cur[i] = l
                                break
                        if cur[i] < 0:
                            bad = True
                            break
                if bad:
                    for col in range(self.n_cols):
                        row[col] = INVALID_KEY
                else:
                    col = 0
                    for i in range(self.n_rules):
                        rule = self.rules[i]
                        if rule == R_PROXIMITY:
                            row[col] = self.proximity(cur)
                            col += 1
                        elif rule == R_ATTRIBUTE_RANK:
                            row[col] = self.fid_cost(cur)
                            col += 1
                        elif rule == R_ATTRIBUTE:
                            row[col] = self.fid_cost(cur)
                            row[col + 1] = self.position(cur)
                            col += 2
                        elif rule == R_WORD_POSITION:
                            row[col] = self.position(cur)
                            col += 1
                        elif rule == R_EXACTNESS:
                            er = self.exact_attribute(cur)
                            matching = 0
                            for l in range(self.n_nodes):
                                if (self.has_exact[l] and (cur[l] == 0 or cur[l] == S_EXACT)
                                        and self.bufs[l * NBUF + B_EXACT].n):
                                    matching += self.length[l]
                                    cur[l] = S_EXACT  # the next rules see the exact word only
                            row[col] = -er
                            row[col + 1] = -matching
                            col += 2
                        else:
                            row[col] = 0
                            col += 1
        return out
