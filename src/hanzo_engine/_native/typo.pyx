# cython: language_level=3
"""Typo matching over an index's word dictionary (Meilisearch's typo tolerance, §3.5).

The dictionary is kept as one flat UTF-32 buffer with offsets (`WordTable`), so the scan runs in C
with the GIL released. Distance = optimal-string-alignment Damerau-Levenshtein (a swap of two adjacent
characters is one typo), bounded: rows stop as soon as every cell exceeds the budget.

First-letter rule: a differing first character costs one extra typo, so with a budget of 1 the first
letter must match and with a budget of 2 a word whose first letter differs may have no other typo.
Prefix mode (the last query word): the cost is the best over every prefix of the dictionary word.
"""

from libc.stdint cimport uint32_t, int32_t
from libc.stdlib cimport malloc, free

import numpy as np

cimport numpy as cnp

cnp.import_array()

DEF MAX_LEN = 64


cdef inline int _min3(int a, int b, int c) nogil:
    if b < a:
        a = b
    if c < a:
        a = c
    return a


cdef int _distance(const uint32_t *q, int n, const uint32_t *w, int m, int budget, bint prefix) noexcept nogil:
    """Bounded OSA distance of q against w (or against the best prefix of w); budget+1 when over."""
    cdef int prev2[MAX_LEN + 1]
    cdef int prev[MAX_LEN + 1]
    cdef int cur[MAX_LEN + 1]
    cdef int i, j, cost, row_min, best
    if n > MAX_LEN or m > MAX_LEN:
        return budget + 1
    if not prefix and (m - n > budget or n - m > budget):
        return budget + 1
    for i in range(n + 1):
        prev[i] = i
        prev2[i] = i
    best = prev[n] if prefix else budget + 1
    # Row j scans w[0..j); column i scans q[0..i).
    for j in range(1, m + 1):
        cur[0] = j
        row_min = cur[0]
        for i in range(1, n + 1):
            cost = 0 if q[i - 1] == w[j - 1] else 1
            cur[i] = _min3(prev[i] + 1, cur[i - 1] + 1, prev[i - 1] + cost)
            if i > 1 and j > 1 and q[i - 1] == w[j - 2] and q[i - 2] == w[j - 1]:
                if prev2[i - 2] + 1 < cur[i]:
                    cur[i] = prev2[i - 2] + 1
            if cur[i] < row_min:
                row_min = cur[i]
        if prefix and cur[n] < best:
            best = cur[n]
        if row_min > budget:
            return best if prefix and best <= budget else budget + 1
        for i in range(n + 1):
            prev2[i] = prev[i]
            prev[i] = cur[i]
    if prefix:
        return best
    return prev[n]


cdef class WordTable:
    """A sorted word list flattened to UTF-32 for native scans."""

    cdef readonly list words
    cdef cnp.ndarray chars
    cdef cnp.ndarray offsets

    def __init__(self, list words):
        self.words = words
        joined = "".join(words)
        self.chars = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).copy() if joined else np.zeros(1, dtype=np.uint32)
        lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
        offsets = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        self.offsets = offsets

    def __len__(self):
        return len(self.words)

    def matches(self, str query, int max_typos, bint prefix, int limit=1000):
        """(word, typos) for every dictionary word within `max_typos` of `query` (typos >= 1 only;
        exact and plain-prefix matches are found by the caller), at most `limit` per typo count."""
        cdef bytes qb = query.encode("utf-32-le")
        cdef const uint32_t *q = <const uint32_t *> (<char *> qb)
        cdef int n = len(query)
        cdef const uint32_t *chars = <const uint32_t *> cnp.PyArray_DATA(self.chars)
        cdef const long long *offs = <const long long *> cnp.PyArray_DATA(self.offsets)
        cdef Py_ssize_t count = len(self.words)
        cdef Py_ssize_t k
        cdef int d, extra, m
        cdef int32_t *result = <int32_t *> malloc(max(count, 1) * sizeof(int32_t))
        if result == NULL:
            raise MemoryError()
        if n == 0 or max_typos <= 0:
            free(result)
            return []
        try:
            with nogil:
                for k in range(count):
                    m = <int> (offs[k + 1] - offs[k])
                    extra = 0 if (m > 0 and chars[offs[k]] == q[0]) else 1
                    if extra > max_typos - 1 and extra > 0:
                        result[k] = -1
                        continue
                    d = _distance(q, n, chars + offs[k], m, max_typos - extra, prefix)
                    result[k] = d + extra if d <= max_typos - extra else -1
            out = []
            per_cost = [0] * (max_typos + 1)
            for k in range(count):
                d = result[k]
                if d >= 1 and per_cost[d] < limit:
                    per_cost[d] += 1
                    out.append((self.words[k], d))
            return out
        finally:
            free(result)
