# cython: language_level=3
"""Facet search's typo-tolerant prefix matching (native): milli's Levenshtein prefix automaton with
transpositions (`build_dfa(query, typos, is_prefix=true)`), as a banded dynamic programme."""

from libc.stdlib cimport free, malloc


cdef int _min3(int a, int b, int c) noexcept nogil:
    if b < a:
        a = b
    return c if c < a else a


cdef bint _within(const Py_UCS4 *q, Py_ssize_t n, str value, int k, int *rows) except -1:
    """Some prefix of `value` is within `k` optimal-string-alignment edits of `q`."""
    cdef Py_ssize_t m = len(value)
    cdef Py_ssize_t i, j
    cdef int *prev2 = rows
    cdef int *prev = rows + (n + 1)
    cdef int *cur = rows + 2 * (n + 1)
    cdef int *tmp
    cdef int v, row_min
    cdef Py_UCS4 c, before = 0
    for i in range(n + 1):
        prev[i] = <int> i
    if prev[n] <= k:
        return True
    for j in range(1, m + 1):
        c = value[j - 1]
        cur[0] = <int> j
        row_min = cur[0]
        for i in range(1, n + 1):
            v = _min3(prev[i] + 1, cur[i - 1] + 1, prev[i - 1] + (0 if q[i - 1] == c else 1))
            if i > 1 and j > 1 and q[i - 1] == before and q[i - 2] == c and prev2[i - 2] + 1 < v:
                v = prev2[i - 2] + 1
            cur[i] = v
            if v < row_min:
                row_min = v
        if cur[n] <= k:
            return True
        if row_min > k:
            return False
        tmp = prev2
        prev2 = prev
        prev = cur
        cur = tmp
        before = c
    return False


def prefix_matches(str query not None, list values not None, int max_typos):
    """Indexes of the `values` (str) having a prefix within `max_typos` edits of `query`."""
    cdef Py_ssize_t n = len(query)
    cdef Py_ssize_t i
    cdef list out = []
    cdef Py_UCS4 *q = <Py_UCS4 *> malloc((n + 1) * sizeof(Py_UCS4))
    cdef int *rows = <int *> malloc(3 * (n + 1) * sizeof(int))
    if q == NULL or rows == NULL:
        free(q)
        free(rows)
        raise MemoryError()
    try:
        for i in range(n):
            q[i] = query[i]
        for i in range(len(values)):
            if max_typos <= 0:
                if (<str> values[i]).startswith(query):
                    out.append(i)
            elif _within(q, n, <str> values[i], max_typos, rows):
                out.append(i)
        return out
    finally:
        free(q)
        free(rows)
