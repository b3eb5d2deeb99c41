# cython: language_level=3
"""Native BM25F accumulation over raw forward entries (the bm25-first ranking mode, the BM25 tie-break).

Each forward entry is the msgpack `[lengths, postings]` that csrc/postings.c writes: `lengths` a map
fid -> word count, `postings` a map word -> array of packed positions (`fid << 16 | position`).
The entries are parsed in place (no Python objects per word): every posting's word is looked up in
the query's derivation words (a bit test of its first two bytes, last byte and length, then a hash
table), the positions of
any other word are skipped without being decoded; a hit adds its positions to the
per (term, field) term frequencies of the terms the word derives from, counted only in the fields the
term may match in (`allowed` for exact words, `allowed_tol` for typo derivations). The score is
BM25F: sum over terms of idf[t] * tfc * (k1 + 1) / (tfc + k1), tfc the sum over the term's fields of
weight[f] * tf / (1 - b + b * dl / avgdl[f]), as `ranking_rules.bm25.score` computes it for one-word
derivations, with the same operations in the same order (terms in query order, fields ascending),
so both give the same float and the native bucket keys can use it.
"""

from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp, memcpy

import numpy as np

cimport numpy as cnp

from hanzo_engine._native.mpack cimport Reader, read_header, read_str, read_uint

cnp.import_array()


cdef inline unsigned int word_key(const uint8_t *s, Py_ssize_t n) noexcept nogil:
    """16 bits of the word's first two bytes, last byte and length: a cheap filter before `hash_word`."""
    cdef uint32_t x
    if n <= 0:
        return 0
    x = <uint32_t>s[0] | (<uint32_t>s[1 if n > 1 else 0] << 8) | (<uint32_t>s[n - 1] << 16) | (<uint32_t>(n & 0xFF) << 24)
    return (x * 0x9E3779B1u) >> 16


cdef inline uint64_t hash_word(const uint8_t *s, Py_ssize_t n) noexcept nogil:
    """A multiplicative hash of the word's bytes, 8 at a time."""
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ <uint64_t>n
    cdef uint64_t x
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&x, s + i, 8)
        h = (h ^ x) * 0xFF51AFD7ED558CCDULL
        h ^= h >> 29
        i += 8
    if i < n:
        x = 0
        memcpy(&x, s + i, <size_t>(n - i))
        h = (h ^ x) * 0xFF51AFD7ED558CCDULL
        h ^= h >> 29
    return h * 0xC4CEB9FE1A85EC53ULL


cdef class QueryWords:
    """The query's derivation words, sorted, each with the (term, tolerant) pairs it counts for."""

    cdef list _keep  # the bytes objects `words` points into
    cdef const uint8_t **words
    cdef uint8_t keys[8192]  # a bit per `word_key` of the words: most document words have none set
    cdef Py_ssize_t *lens
    cdef Py_ssize_t n
    cdef int32_t *slots  # open addressing (linear probing): word index, -1 for an empty slot
    cdef uint64_t mask
    cdef int *start  # word i's pairs are pairs[start[i] : start[i + 1]]
    cdef int *pair_term
    cdef uint8_t *pair_tol

    def __cinit__(self, words: list, pairs: list) -> None:
        """`words`: sorted distinct UTF-8 bytes; `pairs[i]`: list of (term index, tolerant) of words[i]."""
        cdef Py_ssize_t i, total = 0, k = 0
        self.n = len(words)
        self._keep = list(words)
        for ps in pairs:
            total += len(ps)
        self.words = <const uint8_t **>malloc(max(self.n, 1) * sizeof(uint8_t *))
        self.lens = <Py_ssize_t *>malloc(max(self.n, 1) * sizeof(Py_ssize_t))
        self.start = <int *>malloc((self.n + 1) * sizeof(int))
        self.pair_term = <int *>malloc(max(total, 1) * sizeof(int))
        self.pair_tol = <uint8_t *>malloc(max(total, 1))
        cdef Py_ssize_t size = 16
        while size < 4 * self.n:  # at most a quarter full: a miss mostly ends at its first slot
            size *= 2
        self.mask = <uint64_t>(size - 1)
        self.slots = <int32_t *>malloc(size * sizeof(int32_t))
        if not (self.words and self.lens and self.start and self.pair_term and self.pair_tol and self.slots):
            raise MemoryError()
        for i in range(self.n):
            w = self._keep[i]
            self.words[i] = <const uint8_t *><char *>w
            self.lens[i] = len(w)
            self.start[i] = <int>k
            for term, tol in pairs[i]:
                self.pair_term[k] = term
                self.pair_tol[k] = 1 if tol else 0
                k += 1
        self.start[self.n] = <int>k
        for i in range(8192):
            self.keys[i] = 0
        cdef unsigned int key
        for i in range(self.n):
            key = word_key(self.words[i], self.lens[i])
            self.keys[key >> 3] |= <uint8_t>(1 << (key & 7))
        cdef uint64_t h
        for i in range(size):
            self.slots[i] = -1
        for i in range(self.n):
            h = hash_word(self.words[i], self.lens[i]) >> 32
            while self.slots[h & self.mask] >= 0:
                h += 1
            self.slots[h & self.mask] = <int32_t>i

    def __dealloc__(self) -> None:
        free(self.words)
        free(self.lens)
        free(self.start)
        free(self.pair_term)
        free(self.pair_tol)
        free(self.slots)

    cdef inline Py_ssize_t find(self, const uint8_t *s, Py_ssize_t n) noexcept nogil:
        """Index of the word `s[0..n)`, or -1: the head bit test, then the hash table."""
        cdef unsigned int key = word_key(s, n)
        cdef uint64_t h
        cdef int32_t i
        if not (self.keys[key >> 3] >> (key & 7)) & 1:
            return -1
        h = hash_word(s, n) >> 32
        while True:
            i = self.slots[h & self.mask]
            if i < 0:
                return -1
            if self.lens[i] == n and memcmp(self.words[i], s, <size_t>n) == 0:
                return i
            h += 1


cdef inline int skip_uints(Reader *r, uint64_t n) noexcept nogil:
    """Moves past `n` msgpack unsigned integers (`read_uint`'s encodings); -1 on bad input."""
    cdef uint64_t k
    cdef uint8_t c
    for k in range(n):
        if r.p >= r.end:
            return -1
        c = r.p[0]
        if c < 0x80:
            r.p += 1
        elif c == 0xCE:
            r.p += 5
        elif c == 0xCD:
            r.p += 3
        elif c == 0xCC:
            r.p += 2
        elif c == 0xCF:
            r.p += 9
        else:
            return -1
    return 0 if r.p <= r.end else -1


cdef inline void sort_cells(int *cells, Py_ssize_t n) noexcept nogil:
    """Insertion sort: a document touches a few (term, field) cells."""
    cdef Py_ssize_t i, j
    cdef int v
    for i in range(1, n):
        v = cells[i]
        j = i - 1
        while j >= 0 and cells[j] > v:
            cells[j + 1] = cells[j]
            j -= 1
        cells[j + 1] = v


def bm25_scores(list entries, QueryWords qw, double[::1] idf, uint8_t[::1] allowed, uint8_t[::1] allowed_tol,
                double[::1] avgdl, double[::1] weight, double k1, double b):
    """BM25F of each forward entry (`bytes`, or None for a missing entry: score 0). `allowed`,
    `allowed_tol`, `avgdl` and `weight` are indexed by fid; fids past their length are not searched."""
    cdef Py_ssize_t n_docs = len(entries)
    cdef Py_ssize_t n_terms = idf.shape[0]
    cdef Py_ssize_t n_fields = allowed.shape[0]
    cdef cnp.ndarray[cnp.float64_t, ndim=1] out = np.zeros(n_docs, dtype=np.float64)
    cdef double *scores = <double *>cnp.PyArray_DATA(out)
    cdef uint32_t *tf = <uint32_t *>calloc(max(n_terms * n_fields, 1), sizeof(uint32_t))
    cdef double *dl = <double *>malloc(max(n_fields, 1) * sizeof(double))
    cdef int *touched = <int *>malloc(max(n_terms * n_fields, 1) * sizeof(int))
    cdef Py_ssize_t d, i, j, k, n_touched, cell
    cdef uint64_t n_map, n_pos, fid, count, pos, slen, run_fid
    cdef uint32_t run
    cdef const uint8_t *s
    cdef Reader r
    cdef int t, f, term
    cdef double score, tfv, tfc, ok
    cdef bytes raw
    if weight.shape[0] < n_fields or avgdl.shape[0] < n_fields:
        raise ValueError("a weight and an average length per field are needed")
    if tf == NULL or dl == NULL or touched == NULL:
        free(tf)
        free(dl)
        free(touched)
        raise MemoryError()
    try:
        for d in range(n_docs):
            obj = entries[d]
            if obj is None:
                continue
            raw = <bytes>obj
            r.p = <const uint8_t *><char *>raw
            r.end = r.p + len(raw)
            n_touched = 0
            for i in range(n_fields):
                dl[i] = 1.0  # a field with no length recorded counts as one word (`ranking_rules.bm25.score`)
            ok = 1.0
            with nogil:
                if r.p >= r.end or r.p[0] != 0x92:
                    ok = 0.0
                else:
                    r.p += 1
                    if read_header(&r, 0x80, 4, 0xDE, 0xDF, &n_map) < 0:
                        ok = 0.0
                    else:
                        for i in range(<Py_ssize_t>n_map):
                            if read_uint(&r, &fid) < 0 or read_uint(&r, &count) < 0:
                                ok = 0.0
                                break
                            if fid < <uint64_t>n_fields:
                                dl[fid] = <double>count
                    if ok and read_header(&r, 0x80, 4, 0xDE, 0xDF, &n_map) < 0:
                        ok = 0.0
                    if ok:
                        for i in range(<Py_ssize_t>n_map):
                            if read_str(&r, &s, &slen) < 0 or read_header(&r, 0x90, 4, 0xDC, 0xDD, &n_pos) < 0:
                                ok = 0.0
                                break
                            j = qw.find(s, <Py_ssize_t>slen)
                            if j < 0:  # not a query word: its positions are only skipped
                                if skip_uints(&r, n_pos) < 0:
                                    ok = 0.0
                                    break
                                continue
                            run_fid = n_fields  # positions come in runs of one field: counted per run
                            run = 0
                            for k in range(<Py_ssize_t>n_pos + 1):
                                if k < <Py_ssize_t>n_pos:
                                    if read_uint(&r, &pos) < 0:
                                        ok = 0.0
                                        break
                                    fid = pos >> 16
                                    if fid == run_fid:
                                        run += 1
                                        continue
                                else:
                                    fid = n_fields
                                if run_fid < <uint64_t>n_fields:
                                    for t in range(qw.start[j], qw.start[j + 1]):
                                        if qw.pair_tol[t]:
                                            if not allowed_tol[run_fid]:
                                                continue
                                        elif not allowed[run_fid]:
                                            continue
                                        cell = qw.pair_term[t] * n_fields + <Py_ssize_t>run_fid
                                        if tf[cell] == 0:
                                            touched[n_touched] = <int>cell
                                            n_touched += 1
                                        tf[cell] += run
                                run_fid = fid
                                run = 1
                            if not ok:
                                break
                # summed in (term, field) order, as `ranking_rules.bm25.score` sums: the same float, bit for bit
                sort_cells(touched, n_touched)
                score = 0.0
                tfc = 0.0
                term = -1
                for i in range(n_touched):
                    cell = touched[i]
                    t = <int>(cell // n_fields)
                    f = <int>(cell % n_fields)
                    if t != term:
                        if term >= 0:
                            score += idf[term] * tfc * (k1 + 1.0) / (tfc + k1)
                        term = t
                        tfc = 0.0
                    tfv = <double>tf[cell]
                    tf[cell] = 0
                    tfc += weight[f] * tfv / (1.0 - b + b * dl[f] / avgdl[f])
                if term >= 0:
                    score += idf[term] * tfc * (k1 + 1.0) / (tfc + k1)
                scores[d] = score * ok
            if not ok:
                raise ValueError("malformed forward entry")
    finally:
        free(tf)
        free(dl)
        free(touched)
    return out
