# csrc: tokenizer.c
# cython: language_level=3
"""Full-text tokenizer over csrc/tokenizer.c (Meilisearch's charabia rules; see tokenizer.h).

The text's UTF-8 buffer (CPython caches it in the str object) is handed to C without a copy and
the C loop runs with the GIL released; Python objects are made afterwards, once per token. Offsets
and lengths are in bytes of the UTF-8 text, like Meilisearch's `_matchesPosition`. A str holding
lone surrogates is tokenized through its "surrogatepass" encoding, so offsets refer to that.

A `TokenizerConfig` is the compiled form of an index's separatorTokens, nonSeparatorTokens,
dictionary and stopWords: the separators are milli's `allowed_separators` (charabia's defaults plus
the extra ones, minus the non-separators), matched together with the dictionary words, longest
first, on the original text.
"""

from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object o, Py_ssize_t *size) except NULL
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void *PyUnicode_DATA(object o)


# The C declarations (tokenizer.h) and TokenizerConfig's fields are in tokenizer.pxd.


if hz_tok_init() != 0:
    raise MemoryError("cannot build the tokenizer tables")

UNICODE_VERSION = hz_tok_unicode_version().decode("ascii")
HARD_DISTANCE = HZ_TOK_HARD_DISTANCE
MAX_WORD_BYTES = HZ_TOK_MAX_WORD_BYTES
MAX_POSITIONS = HZ_TOK_MAX_POSITIONS


cdef tuple _default_separators():
    cdef list seps = []
    cdef size_t i
    cdef uint32_t first, last, cp
    cdef int hard
    for i in range(hz_tok_separator_range_count()):
        hz_tok_separator_range(i, &first, &last)
        for cp in range(first, last + 1):
            seps.append(chr(cp))
    for i in range(hz_tok_multi_separator_count()):
        seps.append(hz_tok_multi_separator(i, &hard).decode("utf-8"))
    return tuple(seps)


cdef frozenset _hard_separators():
    cdef set hard_set = set()
    cdef size_t i
    cdef uint32_t first, last, cp
    cdef int hard
    for i in range(hz_tok_hard_range_count()):
        hz_tok_hard_range(i, &first, &last)
        for cp in range(first, last + 1):
            hard_set.add(chr(cp))
    for i in range(hz_tok_multi_separator_count()):
        s = hz_tok_multi_separator(i, &hard).decode("utf-8")
        if hard:
            hard_set.add(s)
    return frozenset(hard_set)


DEFAULT_SEPARATORS = _default_separators()
HARD_SEPARATORS = _hard_separators()


# Offsets are 32-bit and normalization can triple a text's size (invalid bytes, "½" -> "1⁄2").
cdef Py_ssize_t _MAX_TEXT_BYTES = 1 << 30


cdef const char *_utf8(str text, Py_ssize_t *size, list keep) except NULL:
    """UTF-8 view of `text`; `keep` holds the bytes object when one had to be made."""
    cdef bytes encoded
    try:
        return PyUnicode_AsUTF8AndSize(text, size)
    except UnicodeEncodeError:
        encoded = text.encode("utf-8", "surrogatepass")
        keep.append(encoded)
        size[0] = len(encoded)
        return <const char *>encoded


cdef inline str _make_str(const char *data, Py_ssize_t size, bint ascii):
    cdef object s
    if ascii:
        # ASCII needs no decoding: fill a compact ASCII str directly.
        s = PyUnicode_New(size, 127)
        memcpy(PyUnicode_DATA(s), data, size)
        return <str>s
    return PyUnicode_DecodeUTF8(data, size, "surrogatepass")


# Direct-mapped cache of short ASCII words ("the", "of", ...): most words of a text are frequent
# ones, and reusing their str objects halves the cost of building the result lists. Only touched
# with the GIL held, so it needs no lock; a collision simply replaces the slot.
cdef struct _WordSlot:
    uint64_t key
    Py_ssize_t length
    PyObject *word

cdef enum:
    _CACHE_BITS = 12
    _CACHE_SIZE = 1 << 12

cdef _WordSlot _word_cache[_CACHE_SIZE]
memset(_word_cache, 0, sizeof(_word_cache))


cdef inline str _word(const char *data, Py_ssize_t size, bint ascii):
    cdef uint64_t key = 0
    cdef _WordSlot *slot
    cdef str s
    if not ascii or size > 8 or size == 0:
        return _make_str(data, size, ascii)
    memcpy(&key, data, size)
    slot = &_word_cache[((key + <uint64_t>size) * 0x9E3779B97F4A7C15ULL) >> (64 - _CACHE_BITS)]
    if slot.word != NULL and slot.key == key and slot.length == size:
        return <str>slot.word
    s = _make_str(data, size, True)
    Py_XDECREF(slot.word)
    Py_INCREF(s)
    slot.word = <PyObject *>s
    slot.key = key
    slot.length = size
    return s


cdef class Token:
    """One token: a word (normalized) or a separator, with its byte span in the original text."""

    cdef readonly str word
    cdef readonly Py_ssize_t start
    cdef readonly Py_ssize_t length
    cdef readonly Py_ssize_t position
    cdef readonly bint is_separator
    cdef readonly bint hard
    cdef readonly bint is_stop_word

    @property
    def end(self):
        return self.start + self.length

    def __repr__(self):
        if self.is_separator:
            kind = "hard separator" if self.hard else "separator"
        else:
            kind = "stop word" if self.is_stop_word else "word"
        return f"Token({self.word!r}, {kind}, start={self.start}, length={self.length}, position={self.position})"

    def __eq__(self, other):
        if not isinstance(other, Token):
            return NotImplemented
        return self._key() == (<Token>other)._key()

    def __hash__(self):
        return hash(self._key())

    cdef tuple _key(self):
        return (self.word, self.start, self.length, self.position, self.is_separator, self.hard,
                self.is_stop_word)


cdef class TokenizerConfig:
    """Compiled separators, dictionary and stop words. Immutable; share it between threads."""

    def __cinit__(self, separators=None, dictionary=(), stop_words=()):
        self.cfg = hz_tok_config_new()
        if self.cfg == NULL:
            raise MemoryError()

    def __init__(self, separators=None, dictionary=(), stop_words=()):
        """`separators` is the full list (None: charabia's defaults); stop words are normalized here."""
        cdef bytes raw
        cdef int kind
        seps = DEFAULT_SEPARATORS if separators is None else tuple(dict.fromkeys(separators))
        self.separators = tuple(s for s in seps if s)
        self.dictionary = tuple(w for w in dict.fromkeys(dictionary) if w)
        for s in self.separators:
            raw = s.encode("utf-8", "surrogatepass")
            kind = HZ_PAT_HARD if s in HARD_SEPARATORS else HZ_PAT_SOFT
            if hz_tok_config_add_pattern(self.cfg, raw, len(raw), kind) != 0:
                raise MemoryError()
        for w in self.dictionary:
            raw = w.encode("utf-8", "surrogatepass")
            if hz_tok_config_add_pattern(self.cfg, raw, len(raw), HZ_PAT_WORD) != 0:
                raise MemoryError()
        normalized = set()
        for w in stop_words:
            raw = w.encode("utf-8", "surrogatepass")
            if hz_tok_config_add_stop_word(self.cfg, raw, len(raw)) != 0:
                raise MemoryError()
            n = normalize(w)
            if n:
                normalized.add(n)
        self.stop_words = frozenset(normalized)

    def __dealloc__(self):
        hz_tok_config_free(self.cfg)

    cdef int index_tokens(self, const char *text, size_t size, uint32_t max_positions,
                          hz_tok_out *out) noexcept nogil:
        """Appends to `out` the tokens `word_positions` keeps (HZ_MODE_INDEX) for text[0..size),
        positions below `max_positions`. 0, or -1 on OOM. For other native modules."""
        return hz_tokenize(self.cfg, text, size, HZ_MODE_INDEX, max_positions, out)

    def tokenize(self, str text not None):
        """Every token of `text`, separators included, with word positions (-1 for separators)."""
        cdef list keep = []
        cdef Py_ssize_t size
        cdef const char *data = _utf8(text, &size, keep)
        cdef hz_tok_out out
        cdef int rc
        cdef size_t i
        cdef hz_token *t
        cdef Token tok
        cdef list result
        cdef Py_ssize_t n
        if size > _MAX_TEXT_BYTES:
            raise ValueError("text longer than 1 GiB")
        memset(&out, 0, sizeof(out))
        with nogil:
            rc = hz_tokenize(self.cfg, data, <size_t>size, HZ_MODE_ALL, HZ_TOK_MAX_POSITIONS, &out)
        try:
            if rc != 0:
                raise MemoryError()
            n = <Py_ssize_t>out.n_tokens
            result = PyList_New(n)
            for i in range(<size_t>n):
                t = &out.tokens[i]
                tok = Token.__new__(Token)
                tok.word = _word(out.norm + t.norm_start, t.norm_length, t.ascii)
                tok.start = t.start
                tok.length = t.length
                tok.is_separator = t.kind >= HZ_TOK_SEP_SOFT
                tok.hard = t.kind == HZ_TOK_SEP_HARD
                tok.is_stop_word = t.kind == HZ_TOK_STOP_WORD
                tok.position = -1 if tok.is_separator else <Py_ssize_t>t.position
                Py_INCREF(tok)  # PyList_SET_ITEM steals a reference
                PyList_SET_ITEM(result, <Py_ssize_t>i, tok)
            return result
        finally:
            hz_tok_out_free(&out)

    def word_positions(self, str text not None, Py_ssize_t max_positions=HZ_TOK_MAX_POSITIONS):
        """(word, position) for what milli indexes: no stop words, no word over 250 bytes, positions
        below `max_positions` (65536, milli's cap); stop words and long words still take positions."""
        cdef list keep = []
        cdef Py_ssize_t size
        cdef const char *data = _utf8(text, &size, keep)
        cdef hz_tok_out out
        cdef int rc
        cdef size_t i
        cdef hz_token *t
        cdef list result
        cdef tuple pair
        cdef Py_ssize_t n
        cdef uint32_t limit
        if size > _MAX_TEXT_BYTES:
            raise ValueError("text longer than 1 GiB")
        if max_positions < 0:
            raise ValueError("max_positions must be >= 0")
        limit = <uint32_t>min(max_positions, HZ_TOK_MAX_POSITIONS)
        memset(&out, 0, sizeof(out))
        with nogil:
            rc = hz_tokenize(self.cfg, data, <size_t>size, HZ_MODE_INDEX, limit, &out)
        try:
            if rc != 0:
                raise MemoryError()
            n = <Py_ssize_t>out.n_tokens
            result = PyList_New(n)
            for i in range(<size_t>n):
                t = &out.tokens[i]
                pair = (_word(out.norm + t.norm_start, t.norm_length, t.ascii), <Py_ssize_t>t.position)
                Py_INCREF(pair)  # PyList_SET_ITEM steals a reference
                PyList_SET_ITEM(result, <Py_ssize_t>i, pair)
            return result
        finally:
            hz_tok_out_free(&out)

    def words(self, str text not None):
        """The normalized words of `text` in order, stop words included (for queries, synonyms)."""
        return [t.word for t in self.tokenize(text) if not (<Token>t).is_separator]


def normalize(str word not None):
    """Normalized form of `word` taken as a single token (no segmentation), trimmed."""
    cdef list keep = []
    cdef Py_ssize_t size
    cdef const char *data = _utf8(word, &size, keep)
    cdef hz_tok_out out
    cdef size_t start, length
    cdef int rc
    memset(&out, 0, sizeof(out))
    with nogil:
        rc = hz_normalize(data, <size_t>size, &out, &start, &length, NULL)
    try:
        if rc != 0:
            raise MemoryError()
        return PyUnicode_DecodeUTF8(out.norm + start, length, "surrogatepass")
    finally:
        hz_tok_out_free(&out)


def char_map(str word not None):
    """Per code point of `word`: (its UTF-8 byte length, bytes it contributes to the untrimmed
    normalization). Lets a highlighter turn a matched normalized prefix into original bytes."""
    cdef list keep = []
    cdef Py_ssize_t size
    cdef const char *data = _utf8(word, &size, keep)
    cdef hz_tok_out out
    cdef size_t start, length
    cdef Py_ssize_t n_chars = len(word)
    cdef uint32_t *counts = <uint32_t *>malloc((n_chars + 1) * sizeof(uint32_t))
    cdef int rc
    cdef Py_ssize_t k
    if counts == NULL:
        raise MemoryError()
    memset(&out, 0, sizeof(out))
    try:
        with nogil:
            rc = hz_normalize(data, <size_t>size, &out, &start, &length, counts)
        if rc != 0:
            raise MemoryError()
        return [(len(word[k].encode("utf-8", "surrogatepass")), <Py_ssize_t>counts[k])
                for k in range(n_chars)]
    finally:
        free(counts)
        hz_tok_out_free(&out)


cdef void tokens_free(hz_tok_out *out) noexcept nogil:
    """Frees the buffers of `out` (filled by `index_tokens`); for other native modules."""
    hz_tok_out_free(out)


cdef dict _CONFIGS = {}


def config(separators=(), non_separators=(), dictionary=(), stop_words=()):
    """The (cached) config for index settings: separators = (defaults | separatorTokens) -
    nonSeparatorTokens, as milli's `allowed_separators`."""
    key = (tuple(separators), tuple(non_separators), tuple(dictionary), tuple(stop_words))
    cfg = _CONFIGS.get(key)
    if cfg is None:
        if key[0] or key[1]:
            removed = set(key[1])
            seps = [s for s in DEFAULT_SEPARATORS + key[0] if s not in removed]
        else:
            seps = None
        cfg = TokenizerConfig(seps, key[2], key[3])
        if len(_CONFIGS) >= 64:
            _CONFIGS.clear()
        _CONFIGS[key] = cfg
    return cfg


def tokenize(str text not None, *, separators=(), non_separators=(), dictionary=(), stop_words=()):
    """Tokens of `text` (see TokenizerConfig.tokenize) under the given settings."""
    return config(separators, non_separators, dictionary, stop_words).tokenize(text)


def word_positions(str text not None, *, separators=(), non_separators=(), dictionary=(),
                   stop_words=(), Py_ssize_t max_positions=HZ_TOK_MAX_POSITIONS):
    """(normalized word, position) pairs milli would index (see TokenizerConfig.word_positions)."""
    return config(separators, non_separators, dictionary, stop_words).word_positions(text, max_positions)
