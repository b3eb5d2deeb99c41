# csrc: postings.c bitmap_merge.c index_batch.c
# cython: language_level=3
"""Full-text indexing hot path over csrc/postings.c (see postings.h for the data model).

A document arrives as `[(fid, [text, ...]), ...]` (fields in flatten order, the texts of an array
field in element order). With the GIL held the UTF-8 buffers of the texts are collected (CPython
caches them in the str objects, no copy); then, with the GIL released, every text is tokenized
(`TokenizerConfig.index_tokens`, the tokenizer's own C, no Python objects), the occurrences are
packed (`fid << 16 | offset + position`, +8 between array elements, nothing past 0xFFFF), the
forward entry is encoded as msgpack and the document's words and (word, fid) pairs are appended to
the accumulator's per-key docid lists. Python objects are only made once per key at flush time.

Many documents at once: `DocumentBatch.push` collects them (their UTF-8 views in C arrays) and
`PostingAccumulator.add_batch` indexes them with the GIL released for the whole batch, split over
threads (csrc/index_batch.h: contiguous shares, one hz_doc and accumulator per thread, absorbed in
share order), giving exactly what `add` on each in turn gives.

`analyze` is the same analysis returned as Python objects (tests, debugging, tools).

Texts must encode to UTF-8 strictly: a str with lone surrogates raises UnicodeEncodeError (the
document parser rejects them before they get here, as serde_json does for Meilisearch).
"""

from cpython cimport array
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8, PyUnicode_GET_LENGTH
from libc.stdint cimport int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset

from hanzo_engine._native.tokenizer cimport TokenizerConfig, hz_tok_out, tokens_free

from hanzo_engine._native.indexing_c cimport *

import array as _array
import gc


MAX_POSITION = HZ_MAX_POSITION

# Offsets inside the tokenizer are 32-bit and normalization can triple a text (see tokenizer.pyx).
cdef Py_ssize_t _MAX_TEXT_BYTES = 1 << 30

cdef array.array _DOCIDS = _array.array("I")
if _DOCIDS.itemsize != 4:
    raise ImportError("array('I') is not 32-bit on this platform")

cdef inline uint16_t _checked_fid(object fid_obj) except? 0xFFFF:
    """A field id of `[(fid, [text, ...]), ...]`, refused outside 0..65535."""
    cdef long long fid = fid_obj
    if fid < 0 or fid > 0xFFFF:
        raise OverflowError(f"field id {fid} out of range 0..65535")
    return <uint16_t>fid


cdef inline const char *_utf8_view(object text, Py_ssize_t *size) except NULL:
    """The UTF-8 bytes CPython caches in the str `text` (no copy), refused past 1 GiB."""
    if type(text) is not str and not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    cdef const char *data = PyUnicode_AsUTF8AndSize(text, size)
    if size[0] > _MAX_TEXT_BYTES:
        raise ValueError("text longer than 1 GiB")
    return data


cdef struct _Text:
    const char *data
    size_t size


cdef struct _Field:
    uint16_t fid
    size_t first   # index of its first text
    size_t count


cdef class _Analyzer:
    """Reusable buffers for analyzing one document at a time."""

    cdef hz_doc *doc
    cdef hz_tok_out out
    cdef _Text *texts
    cdef size_t cap_texts
    cdef _Field *fields
    cdef size_t cap_fields

    def __cinit__(self):
        memset(&self.out, 0, sizeof(self.out))
        self.doc = hz_doc_new()
        if self.doc == NULL:
            raise MemoryError()

    def __dealloc__(self):
        hz_doc_free(self.doc)
        tokens_free(&self.out)
        free(self.texts)
        free(self.fields)

    cdef int _reserve(self, size_t n_fields, size_t n_texts) except -1:
        cdef void *p
        if n_fields > self.cap_fields:
            p = realloc(self.fields, n_fields * 2 * sizeof(_Field))
            if p == NULL:
                raise MemoryError()
            self.fields = <_Field *>p
            self.cap_fields = n_fields * 2
        if n_texts > self.cap_texts:
            p = realloc(self.texts, n_texts * 2 * sizeof(_Text))
            if p == NULL:
                raise MemoryError()
            self.texts = <_Text *>p
            self.cap_texts = n_texts * 2
        return 0

    cdef int feed(self, TokenizerConfig cfg, list fields) except -1:
        """Analyzes `fields` into self.doc (reset first)."""
        cdef size_t n_fields = 0, n_texts = 0, i, k
        cdef Py_ssize_t size
        cdef const char *data
        cdef int fid
        cdef list texts
        cdef uint32_t offset
        cdef int rc = 0
        cdef _Field *f
        # With the GIL: the UTF-8 view of every non-empty text; `fields` keeps the strs alive.
        for item in fields:
            fid_obj, texts = item
            fid = _checked_fid(fid_obj)
            self._reserve(n_fields + 1, n_texts + len(texts))
            f = &self.fields[n_fields]
            f.fid = <uint16_t>fid
            f.first = n_texts
            for text in texts:
                data = _utf8_view(text, &size)
                if size == 0:
                    continue
                self.texts[n_texts].data = data
                self.texts[n_texts].size = <size_t>size
                n_texts += 1
            f.count = n_texts - f.first
            n_fields += 1
        hz_doc_reset(self.doc)
        with nogil:
            for i in range(n_fields):
                f = &self.fields[i]
                hz_doc_begin_field(self.doc, f.fid)
                for k in range(f.first, f.first + f.count):
                    offset = hz_doc_field_offset(self.doc)
                    if offset > HZ_MAX_POSITION:
                        break  # no later text of this field can keep a word
                    self.out.n_tokens = 0
                    self.out.norm_len = 0
                    # Only positions that still fit under the cap: the tokenizer stops there.
                    rc = cfg.index_tokens(self.texts[k].data, self.texts[k].size,
                                          HZ_MAX_POSITION + 1 - offset, &self.out)
                    if rc == 0:
                        rc = hz_doc_add_tokens(self.doc, &self.out)
                    if rc != 0:
                        break
                if rc == 0:
                    rc = hz_doc_end_field(self.doc)
                if rc != 0:
                    break
        if rc != 0:
            raise MemoryError()
        return 0


cdef bytes _encode(hz_doc *doc):
    cdef hz_buf buf
    cdef int rc
    memset(&buf, 0, sizeof(buf))
    try:
        with nogil:
            rc = hz_doc_encode(doc, &buf)
        if rc != 0:
            raise MemoryError()
        return PyBytes_FromStringAndSize(buf.p, <Py_ssize_t>buf.n)
    finally:
        hz_buf_free(&buf)


def analyze(TokenizerConfig cfg not None, list fields not None):
    """Analysis of one document's `[(fid, [text, ...]), ...]`: (field lengths, word -> packed
    positions, [(fid, distinct words of the field in first-occurrence order)]), as the forward
    entry stores it. Fields that keep no word are left out of all three."""
    cdef _Analyzer an = _Analyzer()
    cdef size_t i, j, n, npos, wlen
    cdef uint16_t fid
    cdef uint32_t count
    cdef const char *w
    cdef const uint32_t *pos
    an.feed(cfg, fields)
    _encode(an.doc)  # groups the positions per word
    lengths = {}
    for i in range(hz_doc_n_fields(an.doc)):
        hz_doc_field(an.doc, i, &fid, &count)
        lengths[fid] = count
    postings = {}
    first_in_field = {}
    for i in range(hz_doc_n_words(an.doc)):
        hz_doc_word(an.doc, i, &w, &wlen, &pos, &npos)
        word = PyUnicode_DecodeUTF8(w, <Py_ssize_t>wlen, NULL)
        postings[word] = [pos[j] for j in range(npos)]
        for j in range(npos):
            # positions grow within a field, so the first one seen per field is the smallest
            first_in_field.setdefault(pos[j] >> 16, {}).setdefault(word, pos[j])
    per_field = [(f, sorted(first_in_field[f], key=first_in_field[f].__getitem__)) for f in lengths]
    return lengths, postings, per_field


# Merges smaller than this (stored bytes + 4 per docid) keep the GIL: releasing it costs more.
cdef size_t _NOGIL_MERGE_BYTES = 1 << 16


cdef int _merge(hz_bitmap_work *work, object stored, const uint32_t *added, size_t n_added,
                const uint32_t *removed, size_t n_removed) except -1:
    """(stored - removed) | added into work's output; `stored` is bytes or None."""
    cdef const char *data = NULL
    cdef size_t size = 0
    cdef int rc
    if stored is not None:
        data = PyBytes_AS_STRING(stored)
        size = <size_t>PyBytes_GET_SIZE(stored)
    if size + (n_added + n_removed) * 4 > _NOGIL_MERGE_BYTES:
        with nogil:
            rc = hz_bitmap_merge(work, data, size, added, n_added, removed, n_removed)
    else:
        rc = hz_bitmap_merge(work, data, size, added, n_added, removed, n_removed)
    if rc == -2:
        raise ValueError("malformed roaring bitmap")
    if rc != 0:
        raise MemoryError()
    return 0


def merge_bitmap(stored, added, removed):
    """Serialized `(stored - removed) | added` (b"" when empty), `stored` being a serialized roaring
    bitmap (portable format) or None, `added`/`removed` iterables of u32 (any order, repeats allowed)."""
    cdef array.array a = _array.array("I", added)
    cdef array.array r = _array.array("I", removed)
    cdef hz_bitmap_work *work = hz_bitmap_work_new()
    cdef const char *out
    cdef size_t size
    cdef uint64_t card
    if work == NULL:
        raise MemoryError()
    try:
        _merge(work, None if stored is None else bytes(stored), a.data.as_uints, len(a),
               r.data.as_uints, len(r))
        out = hz_bitmap_output(work, &size, &card)
        return PyBytes_FromStringAndSize(out, <Py_ssize_t>size)
    finally:
        hz_bitmap_work_free(work)


cdef int _index_tokens(void *ctx, const char *text, size_t size, uint32_t max_positions,
                       hz_tok_out *out) noexcept nogil:
    """hz_index_tokens_fn over a TokenizerConfig (borrowed: the caller keeps it alive)."""
    return (<TokenizerConfig>ctx).index_tokens(text, size, max_positions, out)


# Threads of one batch at most (more would not pay for their buffers).
cdef unsigned _MAX_BATCH_THREADS = 64


cdef class DocumentBatch:
    """Documents waiting to be indexed together (`PostingAccumulator.add_batch`): their docids and
    the UTF-8 views of their texts in C arrays, the strs kept alive in one list. Holding a batch
    thus keeps no Python container per document (which the cyclic GC would scan again and again)."""

    cdef hz_batch_doc *docs
    cdef size_t n_docs, cap_docs
    cdef hz_batch_field *fields
    cdef size_t n_fields, cap_fields
    cdef hz_batch_text *texts
    cdef size_t n_texts, cap_texts
    cdef list keep

    def __cinit__(self):
        self.keep = []

    def __dealloc__(self):
        free(self.docs)
        free(self.fields)
        free(self.texts)

    def __len__(self):
        return self.n_docs

    cdef int _reserve(self, size_t n_fields, size_t n_texts) except -1:
        cdef void *p
        if self.n_docs + 1 > self.cap_docs:
            p = realloc(self.docs, 2 * (self.n_docs + 1) * sizeof(hz_batch_doc))
            if p == NULL:
                raise MemoryError()
            self.docs = <hz_batch_doc *>p
            self.cap_docs = 2 * (self.n_docs + 1)
        if self.n_fields + n_fields > self.cap_fields:
            p = realloc(self.fields, 2 * (self.n_fields + n_fields) * sizeof(hz_batch_field))
            if p == NULL:
                raise MemoryError()
            self.fields = <hz_batch_field *>p
            self.cap_fields = 2 * (self.n_fields + n_fields)
        if self.n_texts + n_texts > self.cap_texts:
            p = realloc(self.texts, 2 * (self.n_texts + n_texts) * sizeof(hz_batch_text))
            if p == NULL:
                raise MemoryError()
            self.texts = <hz_batch_text *>p
            self.cap_texts = 2 * (self.n_texts + n_texts)
        return 0

    def push(self, uint32_t docid, list fields not None):
        """Appends document `docid` from its `[(fid, [text, ...]), ...]` (checked here, as `add`
        checks it: a refused document leaves the batch as it was); returns the characters of its
        texts."""
        cdef size_t n_fields = self.n_fields, n_texts = self.n_texts, n_keep = len(self.keep)
        cdef Py_ssize_t chars = 0
        cdef Py_ssize_t size
        cdef const char *data
        cdef int fid
        cdef list texts
        cdef hz_batch_field *f
        try:
            for item in fields:
                fid_obj, texts = item
                fid = _checked_fid(fid_obj)
                self._reserve(n_fields + 1 - self.n_fields, n_texts + len(texts) - self.n_texts)
                f = &self.fields[n_fields]
                f.fid = <uint16_t>fid
                f.first_text = n_texts
                for text in texts:
                    data = _utf8_view(text, &size)
                    if size == 0:
                        continue
                    chars += PyUnicode_GET_LENGTH(text)
                    self.keep.append(text)
                    self.texts[n_texts].data = data
                    self.texts[n_texts].size = <size_t>size
                    n_texts += 1
                f.n_texts = n_texts - f.first_text
                n_fields += 1
            self._reserve(0, 0)
        except BaseException:
            del self.keep[n_keep:]
            raise
        self.docs[self.n_docs].docid = docid
        self.docs[self.n_docs].first_field = self.n_fields
        self.docs[self.n_docs].n_fields = n_fields - self.n_fields
        self.n_docs += 1
        self.n_fields = n_fields
        self.n_texts = n_texts
        return chars

    def docids(self):
        """The docids of the documents, in order."""
        cdef size_t i
        return [self.docs[i].docid for i in range(self.n_docs)]

    def clear(self):
        """Forgets every document."""
        self.n_docs = self.n_fields = self.n_texts = 0
        self.keep = []


# Keys merged per round of `PostingAccumulator._apply` (their stored values are held meanwhile): few
# enough that the leaf pages a round read are still in cache when it writes them.
cdef size_t _APPLY_CHUNK = 256
# ... and into a table that stores nothing yet (no stored value is held, nothing is read back)
cdef size_t _APPLY_NEW_CHUNK = 4096

cdef enum:
    _KEEP = 0
    _PUT = 1
    _CREATE = 2
    _DELETE = 3


cdef struct _Chunk:
    const char *stored  # NULL: not stored
    size_t stored_len
    size_t out_off, out_len
    int action


cdef class _View:
    """A read-only buffer over bytes owned elsewhere, re-pointed by `_ChunkItems` for each item."""
    cdef const char *ptr
    cdef Py_ssize_t size

    def __getbuffer__(self, Py_buffer *view, int flags):
        if self.ptr == NULL:
            raise ValueError("a flush item is only readable while putmulti writes it")
        PyBuffer_FillInfo(view, self, <void *>self.ptr, self.size, 1, flags)


cdef class _ChunkItems:
    """The (key, bitmap) items of one hz_flush chunk for `putmulti`, without a Python object per
    item: every item is the same tuple of two `_View`s, pointed at the next key and bitmap of the
    chunk when it is taken (what the last one showed is gone then)."""
    cdef const char *buf
    cdef const size_t *offs
    cdef size_t i, m
    cdef readonly Py_ssize_t n_items
    cdef _View key, value
    cdef tuple item

    def __cinit__(self):
        self.key = _View()
        self.value = _View()
        self.item = (self.key, self.value)

    cdef void start(self, const char *buf, const size_t *offs, size_t m) noexcept:
        self.buf = buf
        self.offs = offs
        self.i = 0
        self.m = m
        self.n_items = 0

    cdef void stop(self) noexcept:
        self.m = 0
        self.key.ptr = self.value.ptr = NULL

    def __iter__(self):
        return self

    def __next__(self):
        cdef size_t k, v
        while self.i < self.m:
            k = self.offs[2 * self.i]
            v = self.offs[2 * self.i + 1]
            self.i += 1
            if v == k:
                continue  # nothing to write for this key
            self.key.ptr = self.buf + k
            self.key.size = <Py_ssize_t>(v - k)
            self.value.ptr = self.buf + v
            self.value.size = <Py_ssize_t>(self.offs[2 * self.i] - v)
            self.n_items += 1
            return self.item
        self.key.ptr = self.value.ptr = NULL
        raise StopIteration


cdef inline bint _same_bytes(bytes a, object b) except -1:
    """a == b for a bytes `a` and a bytes or buffer `b` (what getmulti returns as a key)."""
    if type(b) is bytes:
        return (PyBytes_GET_SIZE(a) == PyBytes_GET_SIZE(b)
                and memcmp(PyBytes_AS_STRING(a), PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(a)) == 0)
    return a == bytes(b)


cdef class PostingAccumulator:
    """The word-docids and word-fid-docids changes of one write transaction (an event log in C
    memory), plus the field-stats deltas. `apply_*` merge them into the database; `clear` then
    starts over (no `add`/`remove` is accepted between an `apply_*` and the `clear`).

    One thread at a time: the GIL is released inside the methods, so concurrent calls on the same
    accumulator would race. The `fields` passed to `add` must not be changed while it runs.
    """

    cdef hz_postings *acc
    cdef hz_bitmap_work *work
    cdef _Analyzer an
    cdef hz_pool *pool  # the threads of add_batch, started at its first call with threads > 1

    def __cinit__(self):
        self.acc = hz_postings_new()
        self.work = hz_bitmap_work_new()
        if self.acc == NULL or self.work == NULL:
            raise MemoryError()
        self.an = _Analyzer()

    def __dealloc__(self):
        hz_pool_free(self.pool)
        hz_postings_free(self.acc)
        hz_bitmap_work_free(self.work)

    def add(self, TokenizerConfig cfg not None, uint32_t docid, list fields not None):
        """Indexes document `docid` from its `[(fid, [text, ...]), ...]`; returns its forward entry."""
        cdef int rc
        self.an.feed(cfg, fields)
        forward = _encode(self.an.doc)
        with nogil:
            rc = hz_postings_mark(self.acc, self.an.doc, docid, 1)
        if rc != 0:
            raise MemoryError()
        return forward

    def add_batch(self, TokenizerConfig cfg not None, DocumentBatch batch not None, int threads=1):
        """Indexes the documents of `batch` on up to `threads` threads with the GIL released
        (csrc/index_batch.h): the same changes as `add` on each in turn, whatever `threads` is.
        Returns their forward entries, in order (`batch` is left as it was)."""
        cdef size_t n_docs = batch.n_docs, i, start = 0
        cdef hz_batch b
        cdef hz_tok_out *outs = NULL
        cdef size_t *ends = NULL
        cdef hz_buf buf
        cdef unsigned n_threads = <unsigned>min(max(threads, 1), _MAX_BATCH_THREADS)
        cdef int rc
        cdef list result
        memset(&buf, 0, sizeof(buf))
        try:
            ends = <size_t *>malloc((n_docs or 1) * sizeof(size_t))
            outs = <hz_tok_out *>calloc(n_threads, sizeof(hz_tok_out))
            if ends == NULL or outs == NULL:
                raise MemoryError()
            b.tokenize = _index_tokens
            b.ctx = <void *>cfg
            b.docs = batch.docs
            b.n_docs = n_docs
            b.fields = batch.fields
            b.texts = batch.texts
            if n_threads > 1 and self.pool == NULL:
                self.pool = hz_pool_new()
                if self.pool == NULL:
                    raise MemoryError()
            with nogil:
                rc = hz_index_batch(&b, n_threads, self.pool, outs, self.acc, &buf, ends)
            if rc != 0:
                raise MemoryError()
            result = [None] * <Py_ssize_t>n_docs
            for i in range(n_docs):
                result[i] = PyBytes_FromStringAndSize(buf.p + start, <Py_ssize_t>(ends[i] - start))
                start = ends[i]
            return result
        finally:
            if outs != NULL:
                for i in range(n_threads):
                    tokens_free(&outs[i])
            free(outs)
            free(ends)
            hz_buf_free(&buf)

    def remove(self, uint32_t docid, bytes forward not None):
        """Un-indexes document `docid` given the forward entry `add` returned for it."""
        cdef int rc
        cdef const char *data = PyBytes_AS_STRING(forward)
        cdef size_t size = <size_t>PyBytes_GET_SIZE(forward)
        hz_doc_reset(self.an.doc)
        with nogil:
            rc = hz_doc_parse(self.an.doc, data, size)
        if rc != 0:
            raise ValueError(f"malformed forward index entry for docid {docid}")
        with nogil:
            rc = hz_postings_mark(self.acc, self.an.doc, docid, 0)
        if rc != 0:
            raise MemoryError()

    def clear(self):
        """Forgets every change (keeping the large buffers for the next changes)."""
        hz_postings_clear(self.acc)

    def release(self):
        """Forgets every change and hands back the buffers `clear` keeps, the merge buffer's too."""
        cdef hz_bitmap_work *fresh = hz_bitmap_work_new()
        if fresh == NULL:
            raise MemoryError()
        hz_postings_release(self.acc)
        hz_bitmap_work_free(self.work)
        self.work = fresh

    def absorb(self, PostingAccumulator other not None):
        """Appends the changes of `other` after this one's, as if its `add`s and `remove`s had been
        made here after these (`other` is left as it was)."""
        cdef int rc
        with nogil:
            rc = hz_postings_absorb(self.acc, other.acc)
        if rc != 0:
            raise MemoryError()

    cdef Py_ssize_t _apply(self, int table, object getmulti, object putmulti, object delete,
                           list created=None, list deleted=None) except -1:
        """Merges the changes of `table` into the stored bitmaps, _APPLY_CHUNK keys at a time: their
        stored values in one `getmulti` call, every merge of the chunk in C with the GIL released
        into one buffer, the changed bitmaps in one `putmulti` call."""
        cdef int rc
        with nogil:
            rc = hz_postings_prepare(self.acc)
        if rc != 0:
            raise MemoryError()
        # a flush makes a few Python objects per key, none in a cycle: the cyclic collector's passes
        # over the process's objects they would trigger (one per few hundred keys) find nothing
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            if getmulti is None:
                return self._apply_new(table, putmulti)
            return self._apply_stored(table, getmulti, putmulti, delete, created, deleted)
        finally:
            if gc_was_enabled:
                gc.enable()

    cdef int _apply_stored(self, int table, object getmulti, object putmulti, object delete, list created,
                           list deleted) except -1:
        cdef size_t n, lo, hi, m, i, j, klen, n_added, n_removed, size, n_found
        cdef const char *key
        cdef const uint32_t *added
        cdef const uint32_t *removed
        cdef const char *out
        cdef uint64_t card
        cdef int rc = 0
        cdef _Chunk *c = NULL
        cdef _Chunk *e
        cdef char *outbuf = NULL
        cdef size_t n_out = 0, cap_out = 0
        cdef void *p
        cdef list keys, found, items
        n = hz_postings_n_keys(self.acc, table)
        try:
            c = <_Chunk *>malloc(_APPLY_CHUNK * sizeof(_Chunk))
            if c == NULL:
                raise MemoryError()
            lo = 0
            while lo < n:
                hi = min(n, lo + _APPLY_CHUNK)
                m = hi - lo
                keys = [None] * <Py_ssize_t>m
                for i in range(m):
                    if hz_postings_key(self.acc, table, lo + i, &key, &klen, NULL, NULL, NULL,
                                       NULL) != 0:
                        raise MemoryError()
                    keys[i] = PyBytes_FromStringAndSize(key, <Py_ssize_t>klen)
                    c[i].stored = NULL
                    c[i].stored_len = 0
                # found: (key, value) of the stored keys, in key order
                found = list(getmulti(keys))
                n_found = <size_t>len(found)
                j = 0
                for i in range(n_found):
                    k, v = found[i]
                    while j < m and not _same_bytes(<bytes>keys[j], k):
                        j += 1
                    if j == m:
                        raise ValueError(f"getmulti returned {k!r}, not one of the keys asked, in order")
                    if type(v) is not bytes:
                        v = bytes(v)
                        found[i] = (k, v)  # kept alive until the chunk is written
                    c[j].stored = PyBytes_AS_STRING(v)
                    c[j].stored_len = <size_t>PyBytes_GET_SIZE(v)
                    j += 1
                n_out = 0
                with nogil:
                    for i in range(m):
                        e = &c[i]
                        e.action = _KEEP
                        rc = hz_postings_key(self.acc, table, lo + i, &key, &klen, &added, &n_added,
                                             &removed, &n_removed)
                        if rc != 0:
                            break
                        if e.stored == NULL and n_added == 0:
                            continue
                        rc = hz_bitmap_merge(self.work, e.stored, e.stored_len, added, n_added, removed,
                                             n_removed)
                        if rc != 0:
                            break
                        out = hz_bitmap_output(self.work, &size, &card)
                        if size == 0:
                            if e.stored != NULL:
                                e.action = _DELETE
                        elif (e.stored == NULL or e.stored_len != size
                                or memcmp(e.stored, out, size) != 0):
                            # (a document replaced by itself leaves its bitmaps unchanged: no write)
                            if n_out + size > cap_out:
                                p = realloc(outbuf, 2 * (n_out + size))
                                if p == NULL:
                                    rc = -1
                                    break
                                outbuf = <char *>p
                                cap_out = 2 * (n_out + size)
                            memcpy(outbuf + n_out, out, size)
                            e.out_off = n_out
                            e.out_len = size
                            n_out += size
                            e.action = _CREATE if e.stored == NULL else _PUT
                if rc == -2:
                    raise ValueError(f"malformed bitmap stored under {keys[i]!r}")
                if rc != 0:
                    raise MemoryError()
                items = []
                for i in range(m):
                    if c[i].action == _PUT or c[i].action == _CREATE:
                        items.append((keys[i], PyBytes_FromStringAndSize(outbuf + c[i].out_off,
                                                                         <Py_ssize_t>c[i].out_len)))
                        if c[i].action == _CREATE and created is not None:
                            created.append(keys[i])
                    elif c[i].action == _DELETE:
                        delete(keys[i])
                        if deleted is not None:
                            deleted.append(keys[i])
                if items:
                    putmulti(items)
                found = items = None
                lo = hi
        finally:
            free(c)
            free(outbuf)
        return 0

    cdef Py_ssize_t _apply_new(self, int table, object putmulti) except -1:
        """`_apply` into a table that stores nothing (every key is created, none is read): the keys and
        bitmaps of each chunk are built in C, on a thread of their own while this one writes the chunk
        before (csrc/bitmap_merge.h hz_flush), and handed to `putmulti` as views into that chunk
        (`_ChunkItems`). The number of keys written."""
        cdef hz_flush *f
        cdef hz_flush_chunk c
        cdef int rc = 0
        cdef Py_ssize_t written = 0
        cdef _ChunkItems items = _ChunkItems()
        f = hz_flush_start(self.acc, table, _APPLY_NEW_CHUNK, 1)
        if f == NULL:
            raise MemoryError()
        try:
            while True:
                with nogil:
                    rc = hz_flush_next(f, &c)
                if rc < 0:
                    raise MemoryError()
                if rc == 0:
                    break
                items.start(c.buf, c.offs, c.hi - c.lo)
                result = putmulti(items)
                items.stop()
                # an appending put refuses a key out of order without raising: it must not go unseen
                if type(result) is tuple and result[1] != items.n_items:
                    raise ValueError(f"{items.n_items - result[1]} of {items.n_items} keys were not written")
                written += items.n_items
        finally:
            items.stop()
            with nogil:
                hz_flush_free(f)
        return written

    def apply_word_docids(self, getmulti, putmulti, delete):
        """Merges the word-docids changes, in key order: `getmulti(keys)` gives the (key, value) of
        those of the changed keys (ascending) that are stored, in their order; `putmulti(items)`
        writes [(key, bitmap), ...] of the keys whose bitmap changed, in key order, and `delete(key)`
        removes one whose bitmap became empty. Returns the (created, deleted) keys: the words that
        entered or left the dictionary. (`lmdb.Cursor.getmulti` and `putmulti` fit.)

        `getmulti` None: the table stores nothing. Nothing is read, `putmulti` may append (as
        `putmulti(append=True)` does: the keys come in order; a (consumed, added) it returns must
        count every item), and gets an iterable of (key, bitmap) buffers that are only valid until
        it takes the next item (`lmdb.Cursor.putmulti` writes each before the next). The created
        words are then not listed: (None, []) when some were written, ([], []) when none."""
        created: list = []
        deleted: list = []
        if getmulti is None:
            return (None if self._apply(HZ_TABLE_WORD, None, putmulti, delete) else []), deleted
        self._apply(HZ_TABLE_WORD, getmulti, putmulti, delete, created, deleted)
        return created, deleted

    def apply_word_fid_docids(self, getmulti, putmulti, delete):
        """The same for word-fid-docids keys (`word 0x00 fid-u16-BE`)."""
        self._apply(HZ_TABLE_WORD_FID, getmulti, putmulti, delete)

    def field_stats_changes(self):
        """`[(fid, documents delta, words delta), ...]` in order of first change."""
        cdef size_t i
        cdef uint16_t fid
        cdef int64_t docs, words
        out = []
        for i in range(hz_postings_n_fields(self.acc)):
            hz_postings_field(self.acc, i, &fid, &docs, &words)
            out.append((fid, docs, words))
        return out

    @property
    def memory_usage(self):
        """Bytes allocated for the accumulated changes and the merge buffers."""
        return hz_postings_memory(self.acc) + hz_bitmap_work_memory(self.work)

    @property
    def held_bytes(self):
        """`memory_usage` and the buffers kept across `clear` for the next changes."""
        return hz_postings_held(self.acc) + hz_bitmap_work_memory(self.work)


def next_word_bits(word: bytes) -> int:
    """The hash bits `word` has in the next-word keys (csrc/postings.h HZ_NEXT_WORD_FID)."""
    return hz_next_word_bits(word, len(word))
