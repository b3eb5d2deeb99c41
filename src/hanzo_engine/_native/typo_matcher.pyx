# cython: language_level=3
"""The typo matcher: typo matching over the sorted word dictionary, walked as a trie.

`SortedWords.matches` returns exactly what a full scan with one dynamic-programming table per dictionary
word returns (same bounded optimal-string-alignment distance, first-letter rule, prefix mode, per-cost
limit, dictionary order; the scan is `full_scan_matches` in tests/property/test_typo_matcher_props.py,
which holds the two equal), but does not run one table per word:

- Consecutive sorted words share prefixes, and DP row j (the first j characters of the word against
  the whole query) depends only on those j characters. Rows of the shared prefix (`lcp[k]`, the common
  prefix of words k-1 and k) are reused, so only the rows past it are computed.
- When a row's minimum exceeds the budget, every later row does too: the word's outcome is then known
  (rejected, or in prefix mode the best over the rows so far), and it is the same for every following
  word that shares those j characters. That run of words is skipped with a binary search instead of
  being scanned (in prefix mode its accepted words are listed without computing anything).

So a query visits only the trie nodes within its budget, not the whole dictionary. Invariant: words must
be sorted by code point (LMDB key order of UTF-8 is code-point order).
"""

from libc.stdint cimport uint8_t, uint32_t

import numpy as np

cimport numpy as cnp

cnp.import_array()

DEF MAX_LEN = 64


cdef inline int _min3(int a, int b, int c) noexcept nogil:
    if b < a:
        a = b
    if c < a:
        a = c
    return a


cdef inline bint _starts_with(const uint32_t *chars, const long long *offs, Py_ssize_t k,
                              const uint32_t *prefix, int j) noexcept nogil:
    """Whether word k starts with `prefix[0..j)`."""
    cdef int i
    if offs[k + 1] - offs[k] < j:
        return False
    # from the last character: a word past a run of the prefix nearly always differs there first
    for i in range(j - 1, -1, -1):
        if chars[offs[k] + i] != prefix[i]:
            return False
    return True


cdef Py_ssize_t _run_end(const uint32_t *chars, const long long *offs, Py_ssize_t lo, Py_ssize_t hi,
                         const uint32_t *prefix, int j) noexcept nogil:
    """First index in [lo, hi) whose word does not start with `prefix[0..j)`; words lo.. do, in order.

    Galloping first: most runs past the first letters are a few words long, so the bound is found in
    O(log run) probes instead of O(log dictionary)."""
    cdef Py_ssize_t mid, step = 1, probe
    while lo < hi:
        probe = lo + step - 1
        if probe >= hi:
            break
        if not _starts_with(chars, offs, probe, prefix, j):
            hi = probe
            break
        lo = probe + 1
        step *= 2
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if _starts_with(chars, offs, mid, prefix, j):
            lo = mid + 1
        else:
            hi = mid
    return lo


DEF LCP_SCAN = 64


cdef inline Py_ssize_t _lcp_run_end(const uint8_t *lcp, const uint32_t *chars, const long long *offs,
                                    Py_ssize_t lo, Py_ssize_t hi, const uint32_t *prefix,
                                    int j) noexcept nogil:
    """`_run_end` for a run that starts at `lo` - 1 (a word that starts with `prefix[0..j)`): the run
    ends at the first word whose common prefix with the one before is shorter than j. The common
    prefixes are one byte per word, read in order: the short runs found deep in the trie end within
    LCP_SCAN of them; longer runs are left to the search over the characters."""
    cdef Py_ssize_t p = lo
    cdef Py_ssize_t stop = lo + LCP_SCAN if lo + LCP_SCAN < hi else hi
    while p < stop:
        if lcp[p] < j:
            return p
        p += 1
    if p == hi:
        return hi
    return _run_end(chars, offs, p, hi, prefix, j)


cdef class SortedWords:
    """A sorted word list flattened to UTF-32, with the common-prefix length of each word and the one
    before it (capped at MAX_LEN + 1)."""

    cdef readonly tuple words  # a tuple of str: untracked by the cyclic GC (a list is traversed by every full collection)
    cdef cnp.ndarray chars
    cdef cnp.ndarray offsets
    cdef cnp.ndarray lcp
    cdef object digits  # uint8 per word: str.isdigit(), made on first use (`skip_digits`)

    def __init__(self, words):
        self.words = tuple(words)
        joined = "".join(words)
        self.chars = (np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).copy() if joined
                      else np.zeros(1, dtype=np.uint32))
        lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
        offsets = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        self.offsets = offsets
        self.lcp = np.zeros(max(len(words), 1), dtype=np.uint8)
        cdef const uint32_t *c = <const uint32_t *> cnp.PyArray_DATA(self.chars)
        cdef const long long *o = <const long long *> cnp.PyArray_DATA(self.offsets)
        cdef uint8_t *l = <uint8_t *> cnp.PyArray_DATA(self.lcp)
        cdef Py_ssize_t k, count = len(words)
        cdef long long a, b, n, i
        with nogil:
            for k in range(1, count):
                a = o[k - 1]
                b = o[k]
                n = o[k] - o[k - 1]
                if o[k + 1] - o[k] < n:
                    n = o[k + 1] - o[k]
                if n > MAX_LEN + 1:
                    n = MAX_LEN + 1
                i = 0
                while i < n and c[a + i] == c[b + i]:
                    i += 1
                l[k] = <uint8_t> i

    def __len__(self):
        return len(self.words)

    def _digit_flags(self):
        if self.digits is None:
            self.digits = np.fromiter((w.isdigit() for w in self.words), dtype=np.uint8, count=len(self.words))
        return self.digits

    def matches(self, str query, int max_typos, bint prefix, int limit=1000, tuple keep=None,
                bint skip_digits=False):
        """(word, typos) for every dictionary word within `max_typos` of `query` (typos >= 1 only;
        exact and plain-prefix matches are found by the caller), at most `limit` per typo count.

        `keep[d]` (optional) keeps only the first `keep[d]` words of `d` typos among those `limit`, and
        `skip_digits` drops words made of digits (without counting them towards `keep`): the same words
        a caller filtering the full answer in order would keep, without building the rest."""
        cdef int n = len(query)
        if n == 0 or max_typos <= 0 or n > MAX_LEN or not self.words or limit <= 0:
            return []
        if max_typos > MAX_LEN:
            max_typos = MAX_LEN
        cdef int kept_limit[MAX_LEN + 1]
        cdef int kept[MAX_LEN + 1]
        cdef Py_ssize_t capacity = 0
        cdef int t
        for t in range(max_typos + 1):
            kept_limit[t] = limit
            if keep is not None and t < len(keep) and <int> keep[t] < limit:
                kept_limit[t] = <int> keep[t]
            if kept_limit[t] < 0:
                kept_limit[t] = 0
            kept[t] = 0
            if t:
                capacity += kept_limit[t]
        cdef const uint8_t *digit = NULL
        cdef cnp.ndarray digit_arr
        if skip_digits:
            digit_arr = self._digit_flags()
            digit = <const uint8_t *> cnp.PyArray_DATA(digit_arr)
        cdef bytes qb = query.encode("utf-32-le")
        cdef const uint32_t *q = <const uint32_t *> (<char *> qb)
        cdef const uint32_t *chars = <const uint32_t *> cnp.PyArray_DATA(self.chars)
        cdef const long long *offs = <const long long *> cnp.PyArray_DATA(self.offsets)
        cdef const uint8_t *lcp = <const uint8_t *> cnp.PyArray_DATA(self.lcp)
        cdef Py_ssize_t count = len(self.words)
        cdef cnp.ndarray hits_arr = np.empty(max(capacity, 1), dtype=np.int64)
        cdef cnp.ndarray costs_arr = np.empty(max(capacity, 1), dtype=np.int32)
        cdef long long *hits = <long long *> cnp.PyArray_DATA(hits_arr)
        cdef int *costs = <int *> cnp.PyArray_DATA(costs_arr)
        cdef Py_ssize_t n_hits = 0
        cdef int per_cost[MAX_LEN + 1]
        # rows[j][i]: distance of word[0..j) to query[0..i); best[j]: min of rows[0..j][n] (prefix mode)
        cdef int rows[MAX_LEN + 1][MAX_LEN + 1]
        cdef int best[MAX_LEN + 1]
        # at_n[j]: rows[j][n] when that cell is in row j's band, else `big` (its true value is larger)
        cdef int at_n[MAX_LEN + 1]
        cdef int valid = 0  # rows 0..valid are those of the current word's first `valid` characters
        cdef Py_ssize_t k = 0, end
        cdef int i, j, m, extra, budget, row_min, cost, d, stop, lo, hi, big
        cdef const uint32_t *w
        with nogil:
            for i in range(max_typos + 1):
                per_cost[i] = 0
            for i in range(n + 1):
                rows[0][i] = i
            best[0] = n
            at_n[0] = n
            while k < count:
                if k and lcp[k] < valid:
                    valid = lcp[k]
                m = <int> (offs[k + 1] - offs[k])
                w = chars + offs[k]
                extra = 0 if (m > 0 and w[0] == q[0]) else 1
                budget = max_typos - extra
                if m > MAX_LEN:
                    k += 1
                    continue
                if extra and max_typos <= 1:
                    # the first-letter rule leaves no budget: skip every word of this first letter
                    k = _lcp_run_end(lcp, chars, offs, k + 1, count, w, 1) if m > 0 else k + 1
                    continue
                stop = 0  # the row where every cell went over the budget (0: none)
                # Only the band |i - j| <= budget is computed: a cell outside it is at least
                # |i - j| > budget. The cells bordering the band hold `big` (budget + 1), a lower
                # bound of their value: every cell computed from one is then over the budget too,
                # and a cell within the budget is exact. The budget is the same for every word of a
                # first letter, so rows reused through `lcp` were banded alike.
                big = budget + 1
                for j in range(valid + 1, m + 1):
                    lo = j - budget if j > budget else 1
                    hi = j + budget if j + budget < n else n
                    rows[j][0] = j
                    if 1 < lo <= n + 1:
                        rows[j][lo - 1] = big
                    row_min = j
                    for i in range(lo, hi + 1):
                        cost = 0 if q[i - 1] == w[j - 1] else 1
                        rows[j][i] = _min3(rows[j - 1][i] + 1, rows[j][i - 1] + 1, rows[j - 1][i - 1] + cost)
                        if i > 1 and j > 1 and q[i - 1] == w[j - 2] and q[i - 2] == w[j - 1]:
                            if rows[j - 2][i - 2] + 1 < rows[j][i]:
                                rows[j][i] = rows[j - 2][i - 2] + 1
                        if rows[j][i] < row_min:
                            row_min = rows[j][i]
                    if hi < n:
                        rows[j][hi + 1] = big
                    at_n[j] = rows[j][n] if lo <= n and hi == n else big
                    best[j] = at_n[j] if at_n[j] < best[j - 1] else best[j - 1]
                    valid = j
                    if row_min > budget:
                        stop = j
                        break
                if stop:
                    # every following word sharing word[0..stop) has this word's outcome
                    d = best[stop] if prefix else budget + 1
                    end = _lcp_run_end(lcp, chars, offs, k + 1, count, w, stop)
                else:
                    d = best[m] if prefix else at_n[m]
                    end = k + 1
                if d <= budget and d + extra >= 1:
                    d += extra
                    while k < end and per_cost[d] < limit and kept[d] < kept_limit[d]:
                        if digit == NULL or not digit[k]:
                            hits[n_hits] = k
                            costs[n_hits] = d
                            n_hits += 1
                            kept[d] += 1
                        per_cost[d] += 1
                        k += 1
                k = end
        words = self.words
        return [(words[hits[i]], costs[i]) for i in range(n_hits)]
