/* A batch of flattened documents indexed on several threads (see postings.h for the data model).
 *
 * Each document is `docid` + fields in flatten order, each field a run of texts (non-empty UTF-8, the
 * texts of an array field in element order). hz_index_batch splits the documents into contiguous shares
 * (about equal text bytes) and gives each share to one thread with its own hz_doc, tokenizer output and
 * accumulator: it tokenizes, packs positions, encodes the forward entries and logs the events exactly as
 * hz_doc_* + hz_postings_mark do for one document. The first share is marked straight into the caller's
 * accumulator on the calling thread; the others are then absorbed into it in share order
 * (hz_postings_absorb), which gives the same words, word ids, event log and field order as marking the
 * documents one by one: the result does not depend on the number of threads.
 *
 * The tokenizer is a callback (it lives in another extension module): it must be safe to call from
 * several threads at once with distinct `out` buffers. Nothing here touches Python.
 */
#ifndef HZ_INDEX_BATCH_H
#define HZ_INDEX_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "postings.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Appends to `out` the index tokens of text[0..size) with positions below max_positions; 0 or -1. */
typedef int (*hz_index_tokens_fn)(void *ctx, const char *text, size_t size, uint32_t max_positions,
                                  hz_tok_out *out);

typedef struct {
    const char *data;
    size_t size;
} hz_batch_text;

typedef struct {
    uint16_t fid;
    size_t first_text, n_texts;
} hz_batch_field;

typedef struct {
    uint32_t docid;
    size_t first_field, n_fields;
} hz_batch_doc;

typedef struct {
    hz_index_tokens_fn tokenize;
    void *ctx;
    const hz_batch_doc *docs;
    size_t n_docs;
    const hz_batch_field *fields;
    const hz_batch_text *texts;
} hz_batch;

/* Threads kept for the batches of one caller (one batch at a time), created as batches need them and
 * stopped by hz_pool_free. */
typedef struct hz_pool hz_pool;
hz_pool *hz_pool_new(void);
void hz_pool_free(hz_pool *p);

/* Indexes the batch into acc on up to n_threads threads, the calling one and those of `pool` (NULL:
 * threads started for this batch); `outs`: one zeroed tokenizer output per thread, the caller frees
 * them. The forward entries are appended to `forward`, entry i ending at ends[i]. 0, or -1 on OOM / a
 * prepared accumulator (acc then holds an unspecified part of the batch). */
int hz_index_batch(const hz_batch *b, unsigned n_threads, hz_pool *pool, hz_tok_out *outs, hz_postings *acc,
                   hz_buf *forward, size_t *ends);

#ifdef __cplusplus
}
#endif

#endif /* HZ_INDEX_BATCH_H */
