# csrc: docid.c
# cython: language_level=3
"""Document identifier validation over csrc/docid.c.

A valid id is 1..511 bytes of ASCII letters, digits, `-` and `_` (Meilisearch's
`validate_document_id_str`). Only ASCII strings can be valid, so a non-ASCII `str` is rejected
before touching its bytes; an ASCII `str` is stored compactly by CPython as one byte per
character, so its buffer is handed to C without any encoding or copy.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    void *PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)


cdef extern from "docid.h":
    int hz_is_valid_document_id(const char *s, size_t length) nogil


cdef inline Py_ssize_t _first_invalid(const char **ptrs, const size_t *lens, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        if not hz_is_valid_document_id(ptrs[i], lens[i]):
            return i
    return n


def is_valid_document_id(str s not None) -> bool:
    """True when `s` is a valid Meilisearch document identifier."""
    if not PyUnicode_IS_ASCII(s):
        return False
    return hz_is_valid_document_id(<const char *>PyUnicode_DATA(s), <size_t>PyUnicode_GET_LENGTH(s)) != 0


def validate_document_ids(list ids not None) -> int:
    """Index of the first element of `ids` that is not a valid id string, or -1 if all are valid.

    Elements that are not `str` count as invalid: callers canonicalise integers to strings first.
    """
    # A tuple owns a reference to every element, so the buffers stay alive while the GIL is
    # released even if another thread mutates `ids`.
    cdef tuple items = tuple(ids)
    cdef Py_ssize_t n = len(items)
    cdef Py_ssize_t limit = n
    cdef Py_ssize_t first
    cdef Py_ssize_t i
    cdef object item
    cdef const char **ptrs
    cdef size_t *lens
    if n == 0:
        return -1
    ptrs = <const char **>PyMem_Malloc(n * sizeof(const char *))
    lens = <size_t *>PyMem_Malloc(n * sizeof(size_t))
    if ptrs == NULL or lens == NULL:
        PyMem_Free(ptrs)
        PyMem_Free(lens)
        raise MemoryError()
    try:
        for i in range(n):
            item = items[i]
            if not isinstance(item, str) or not PyUnicode_IS_ASCII(item):
                # Everything before `limit` is still checked, so an earlier bad id wins.
                limit = i
                break
            ptrs[i] = <const char *>PyUnicode_DATA(item)
            lens[i] = <size_t>PyUnicode_GET_LENGTH(item)
        with nogil:
            first = _first_invalid(ptrs, lens, limit)
    finally:
        PyMem_Free(ptrs)
        PyMem_Free(lens)
    if first < limit or limit < n:
        return first
    return -1
