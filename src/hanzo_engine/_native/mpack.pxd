# cython: language_level=3
"""Reading the msgpack subset of forward entries (`[lengths, postings]`, csrc/postings.c) in place,
and looking their words up in a query's sorted word list.

Every reader returns 0 on success and -1 on truncated or unexpected input; `Reader.p` advances
past what was read.
"""

from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcmp


cdef struct Reader:
    const uint8_t *p
    const uint8_t *end


cdef inline int read_be(Reader *r, int n, uint64_t *x) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    if r.end - r.p < n:
        return -1
    for i in range(n):
        v = (v << 8) | r.p[i]
    r.p += n
    x[0] = v
    return 0


cdef inline int read_uint(Reader *r, uint64_t *x) noexcept nogil:
    if r.p >= r.end:
        return -1
    cdef uint8_t c = r.p[0]
    r.p += 1
    if c < 0x80:
        x[0] = c
        return 0
    if c == 0xCC:
        return read_be(r, 1, x)
    if c == 0xCD:
        return read_be(r, 2, x)
    if c == 0xCE:
        return read_be(r, 4, x)
    if c == 0xCF:
        return read_be(r, 8, x)
    return -1


cdef inline int read_header(Reader *r, uint8_t fix, int fix_bits, uint8_t h16, uint8_t h32,
                            uint64_t *n) noexcept nogil:
    """A map (fix 0x80, 4 bits, 0xDE, 0xDF) or array (0x90, 4 bits, 0xDC, 0xDD) length."""
    if r.p >= r.end:
        return -1
    cdef uint8_t c = r.p[0]
    cdef uint8_t mask = <uint8_t>((1 << fix_bits) - 1)
    r.p += 1
    if (c & <uint8_t>(~mask)) == fix:
        n[0] = c & mask
        return 0
    if c == h16:
        return read_be(r, 2, n)
    if c == h32:
        return read_be(r, 4, n)
    return -1


cdef inline int read_str(Reader *r, const uint8_t **s, uint64_t *n) noexcept nogil:
    if r.p >= r.end:
        return -1
    cdef uint8_t c = r.p[0]
    r.p += 1
    if (c & 0xE0) == 0xA0:
        n[0] = c & 0x1F
    elif c == 0xD9:
        if read_be(r, 1, n) < 0:
            return -1
    elif c == 0xDA:
        if read_be(r, 2, n) < 0:
            return -1
    elif c == 0xDB:
        if read_be(r, 4, n) < 0:
            return -1
    else:
        return -1
    if <uint64_t>(r.end - r.p) < n[0]:
        return -1
    s[0] = r.p
    r.p += n[0]
    return 0


cdef inline Py_ssize_t find_word(const uint8_t **words, const Py_ssize_t *lens, Py_ssize_t n_words,
                                 const uint8_t *s, Py_ssize_t n) noexcept nogil:
    """Index of the word `s[0..n)` in `words` (sorted by bytes, lengths `lens`), or -1."""
    cdef Py_ssize_t lo = 0, hi = n_words, mid, m
    cdef int c
    while lo < hi:
        mid = (lo + hi) >> 1
        m = lens[mid] if lens[mid] < n else n
        c = memcmp(words[mid], s, m)
        if c == 0:
            c = (lens[mid] > n) - (lens[mid] < n)
        if c == 0:
            return mid
        if c < 0:
            lo = mid + 1
        else:
            hi = mid
    return -1


# A 65,536-bit set of the first two bytes of a word list: most words of a document share neither
# with the query's words, and one bit test is far cheaper than a binary search of memcmps.
DEF HEAD_BYTES = 8192


cdef inline unsigned int word_head(const uint8_t *s, Py_ssize_t n) noexcept nogil:
    if n <= 0:
        return 0
    return (<unsigned int>s[0] << 8) | (<unsigned int>s[1] if n > 1 else 0)


cdef inline void fill_heads(uint8_t *heads, const uint8_t **words, const Py_ssize_t *lens,
                            Py_ssize_t n_words) noexcept nogil:
    cdef Py_ssize_t i
    cdef unsigned int h
    for i in range(HEAD_BYTES):
        heads[i] = 0
    for i in range(n_words):
        h = word_head(words[i], lens[i])
        heads[h >> 3] |= <uint8_t>(1 << (h & 7))


cdef inline Py_ssize_t find_word_in(const uint8_t *heads, const uint8_t **words, const Py_ssize_t *lens,
                                    Py_ssize_t n_words, const uint8_t *s, Py_ssize_t n) noexcept nogil:
    """`find_word`, after the head test."""
    cdef unsigned int h = word_head(s, n)
    if not (heads[h >> 3] >> (h & 7)) & 1:
        return -1
    return find_word(words, lens, n_words, s, n)
