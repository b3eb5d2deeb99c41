# cython: language_level=3
"""The best rows of a keyed bucket (`native_bucket_keys.NativeBuckets._select`): `_native/bucket.pyx`
keys every document of a bucket, one row of int columns each, smaller first; these pick the `want`
best in the bucket sort's order (the keys, then raw BM25 descending, then the docid)."""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

import numpy as np


cdef struct RowOrder:
    const int64_t *cols  # rows x n_cols, row-major: the rules' keys, smaller first
    Py_ssize_t n_cols
    const int64_t *docids
    const double *raw  # raw BM25, larger first (`by_raw`)
    bint by_raw


cdef inline int cmp_cols(const RowOrder *o, int64_t a, int64_t b) noexcept nogil:
    cdef const int64_t *pa = o.cols + a * o.n_cols
    cdef const int64_t *pb = o.cols + b * o.n_cols
    cdef Py_ssize_t c
    for c in range(o.n_cols):
        if pa[c] != pb[c]:
            return -1 if pa[c] < pb[c] else 1
    return 0


cdef inline int cmp_rows(const RowOrder *o, int64_t a, int64_t b) noexcept nogil:
    """The bucket sort's order: the keys, then (with `by_raw`) BM25 descending, then the docid."""
    cdef int c = cmp_cols(o, a, b)
    if c:
        return c
    if o.by_raw:
        if o.raw[a] > o.raw[b]:
            return -1
        if o.raw[a] < o.raw[b]:
            return 1
    if o.docids[a] != o.docids[b]:
        return -1 if o.docids[a] < o.docids[b] else 1
    return 0


cdef void sort_rows(const RowOrder *o, int64_t *rows, int64_t *tmp, Py_ssize_t n) noexcept nogil:
    """Merge sort of `rows` by `cmp_rows` (`tmp`: scratch of n)."""
    cdef Py_ssize_t i, j, k, mid
    cdef int64_t v
    if n <= 16:
        for i in range(1, n):
            v = rows[i]
            j = i - 1
            while j >= 0 and cmp_rows(o, rows[j], v) > 0:
                rows[j + 1] = rows[j]
                j -= 1
            rows[j + 1] = v
        return
    mid = n // 2
    sort_rows(o, rows, tmp, mid)
    sort_rows(o, rows + mid, tmp, n - mid)
    i, j, k = 0, mid, 0
    while i < mid and j < n:
        if cmp_rows(o, rows[j], rows[i]) < 0:
            tmp[k] = rows[j]
            j += 1
        else:
            tmp[k] = rows[i]
            i += 1
        k += 1
    while i < mid:
        tmp[k] = rows[i]
        i += 1
        k += 1
    while j < n:
        tmp[k] = rows[j]
        j += 1
        k += 1
    for i in range(n):
        rows[i] = tmp[i]


cdef void sift_down(const RowOrder *o, int64_t *heap, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """Max-heap by `cmp_rows`: the worst of the best rows kept at the top."""
    cdef Py_ssize_t child
    cdef int64_t v = heap[i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and cmp_rows(o, heap[child + 1], heap[child]) > 0:
            child += 1
        if cmp_rows(o, heap[child], v) <= 0:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = v


def rank_rows(const int64_t[:, ::1] cols, const int64_t[::1] docids, Py_ssize_t want):
    """(rows, tied): the rows of the `want` best by (`cols` lexicographic, docid), with every row
    tying the want-th on all the columns, in that order; `tied[i]` when rows[i] shares its columns
    with another of them (only those need BM25 to be put in order)."""
    cdef Py_ssize_t n = cols.shape[0], n_sel = 0, i, k
    cdef RowOrder o
    o.cols = &cols[0, 0] if n else NULL
    o.n_cols = cols.shape[1]
    o.docids = &docids[0] if n else NULL
    o.raw = NULL
    o.by_raw = False
    cdef int64_t *rows = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
    cdef int64_t *tmp = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
    cdef int64_t cut
    if rows == NULL or tmp == NULL:
        free(rows)
        free(tmp)
        raise MemoryError()
    try:
        with nogil:
            if want <= 0 or n == 0:
                n_sel = 0
            elif n <= want:
                for i in range(n):
                    rows[i] = i
                n_sel = n
            else:
                # the best `want` in a max-heap, then every row not worse than its worst on the columns
                for i in range(want):
                    tmp[i] = i
                for i in range(want // 2 - 1, -1, -1):
                    sift_down(&o, tmp, want, i)
                for i in range(want, n):
                    if cmp_rows(&o, i, tmp[0]) < 0:
                        tmp[0] = i
                        sift_down(&o, tmp, want, 0)
                cut = tmp[0]
                for i in range(n):
                    if cmp_cols(&o, i, cut) <= 0:
                        rows[n_sel] = i
                        n_sel += 1
            sort_rows(&o, rows, tmp, n_sel)
        out = np.empty(n_sel, dtype=np.int64)
        tied = np.zeros(n_sel, dtype=np.bool_)
        for i in range(n_sel):
            out[i] = rows[i]
        i = 0
        while i < n_sel:
            k = i + 1
            while k < n_sel and cmp_cols(&o, rows[i], rows[k]) == 0:
                k += 1
            if k - i > 1:
                tied[i:k] = True
            i = k
        return out, tied
    finally:
        free(rows)
        free(tmp)


def order_rows(const int64_t[:, ::1] cols, const double[::1] raw, const int64_t[::1] docids,
               const int64_t[::1] rows, Py_ssize_t want):
    """The first `want` of `rows` by (`cols`, raw BM25 descending, docid): `rank_rows`' rows once the
    tied ones have their BM25."""
    cdef Py_ssize_t n = rows.shape[0], i
    cdef RowOrder o
    if n == 0:
        return np.empty(0, dtype=np.int64)
    o.cols = &cols[0, 0]
    o.n_cols = cols.shape[1]
    o.docids = &docids[0]
    o.raw = &raw[0]
    o.by_raw = True
    out = np.array(rows, dtype=np.int64)
    cdef int64_t[::1] view = out
    cdef int64_t *tmp = <int64_t *>malloc(n * sizeof(int64_t))
    if tmp == NULL:
        raise MemoryError()
    with nogil:
        sort_rows(&o, &view[0], tmp, n)
    free(tmp)
    return out[:want]
