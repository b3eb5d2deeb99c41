# The C declarations of the indexing hot path (csrc/postings.h, index_batch.h, bitmap_merge.h), for
# `indexing.pyx`; the module links those C files itself (its `# csrc:` line).

from libc.stdint cimport int64_t, uint16_t, uint32_t, uint64_t

from hanzo_engine._native.tokenizer cimport hz_tok_out


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object o, Py_ssize_t *size) except NULL
    int PyBuffer_FillInfo(Py_buffer *view, object exporter, void *buf, Py_ssize_t len, int readonly,
                          int flags) except -1


cdef extern from "postings.h" nogil:
    ctypedef struct hz_buf:
        char *p
        size_t n
        size_t cap

    ctypedef struct hz_doc:
        pass

    ctypedef struct hz_postings:
        pass

    unsigned int HZ_MAX_POSITION
    int HZ_TABLE_WORD, HZ_TABLE_WORD_FID

    hz_doc *hz_doc_new()
    void hz_doc_free(hz_doc *d)
    void hz_doc_reset(hz_doc *d)
    void hz_doc_begin_field(hz_doc *d, uint16_t fid)
    uint32_t hz_doc_field_offset(const hz_doc *d)
    int hz_doc_add_tokens(hz_doc *d, const hz_tok_out *tokens)
    int hz_doc_end_field(hz_doc *d)
    int hz_doc_parse(hz_doc *d, const char *data, size_t len)
    int hz_doc_encode(hz_doc *d, hz_buf *out)
    size_t hz_doc_n_fields(const hz_doc *d)
    void hz_doc_field(const hz_doc *d, size_t i, uint16_t *fid, uint32_t *count)
    size_t hz_doc_n_words(const hz_doc *d)
    void hz_doc_word(const hz_doc *d, size_t i, const char **word, size_t *len,
                     const uint32_t **positions, size_t *n_positions)

    hz_postings *hz_postings_new()
    void hz_postings_free(hz_postings *p)
    void hz_postings_clear(hz_postings *p)
    void hz_postings_release(hz_postings *p)
    int hz_postings_mark(hz_postings *p, const hz_doc *d, uint32_t docid, int add)
    int hz_postings_absorb(hz_postings *dst, const hz_postings *src)
    uint32_t hz_next_word_bits(const char *w, size_t len)
    size_t hz_postings_memory(const hz_postings *p)
    size_t hz_postings_held(const hz_postings *p)
    int hz_postings_prepare(hz_postings *p)
    size_t hz_postings_n_keys(const hz_postings *p, int table)
    int hz_postings_key(hz_postings *p, int table, size_t i, const char **key, size_t *len,
                        const uint32_t **added, size_t *n_added, const uint32_t **removed,
                        size_t *n_removed)
    size_t hz_postings_n_fields(const hz_postings *p)
    void hz_postings_field(const hz_postings *p, size_t i, uint16_t *fid, int64_t *docs, int64_t *words)

    void hz_buf_free(hz_buf *b)


cdef extern from "index_batch.h" nogil:
    ctypedef int (*hz_index_tokens_fn)(void *ctx, const char *text, size_t size, uint32_t max_positions,
                                       hz_tok_out *out) noexcept nogil

    ctypedef struct hz_batch_text:
        const char *data
        size_t size

    ctypedef struct hz_batch_field:
        uint16_t fid
        size_t first_text
        size_t n_texts

    ctypedef struct hz_batch_doc:
        uint32_t docid
        size_t first_field
        size_t n_fields

    ctypedef struct hz_batch:
        hz_index_tokens_fn tokenize
        void *ctx
        const hz_batch_doc *docs
        size_t n_docs
        const hz_batch_field *fields
        const hz_batch_text *texts

    ctypedef struct hz_pool:
        pass

    hz_pool *hz_pool_new()
    void hz_pool_free(hz_pool *p)
    int hz_index_batch(const hz_batch *b, unsigned n_threads, hz_pool *pool, hz_tok_out *outs,
                       hz_postings *acc, hz_buf *forward, size_t *ends)


cdef extern from "bitmap_merge.h" nogil:
    ctypedef struct hz_bitmap_work:
        pass

    hz_bitmap_work *hz_bitmap_work_new()
    void hz_bitmap_work_free(hz_bitmap_work *w)
    int hz_bitmap_merge(hz_bitmap_work *w, const char *stored, size_t stored_len, const uint32_t *added,
                        size_t n_added, const uint32_t *removed, size_t n_removed)
    const char *hz_bitmap_output(const hz_bitmap_work *w, size_t *len, uint64_t *cardinality)
    size_t hz_bitmap_work_memory(const hz_bitmap_work *w)

    ctypedef struct hz_flush:
        pass

    ctypedef struct hz_flush_chunk:
        size_t lo
        size_t hi
        const char *buf
        const size_t *offs

    hz_flush *hz_flush_start(hz_postings *acc, int table, size_t chunk, int threaded)
    int hz_flush_next(hz_flush *f, hz_flush_chunk *out)
    void hz_flush_free(hz_flush *f)
