/* Built with -fsanitize=thread by test_flush_thread.py: csrc/bitmap_merge.c's hz_flush (the keys and
 * bitmaps of a new table built chunk after chunk on a thread of its own) against the same flush
 * computed in the caller, for both tables and several chunk sizes, checking that every run gives the
 * same items (exit status 3 otherwise) while ThreadSanitizer watches the hand-over of the chunks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap_merge.h"
#include "race_batch.h"

/* Every item of the flush of `table`, as key length, key, bitmap length, bitmap, into out. */
static int run_flush(hz_postings *acc, int table, size_t chunk, int threaded, hz_buf *out)
{
    hz_flush *f = hz_flush_start(acc, table, chunk, threaded);
    if (f == NULL) {
        return -1;
    }
    hz_flush_chunk c;
    int rc;
    while ((rc = hz_flush_next(f, &c)) == 1) {
        for (size_t i = 0; i < c.hi - c.lo; i++) {
            size_t k = c.offs[2 * i], v = c.offs[2 * i + 1], e = c.offs[2 * i + 2];
            size_t need = out->n + 16 + (e - k);
            if (need > out->cap) {
                char *p = realloc(out->p, 2 * need);
                if (p == NULL) {
                    hz_flush_free(f);
                    return -1;
                }
                out->p = p;
                out->cap = 2 * need;
            }
            size_t kl = v - k, vl = e - v;
            memcpy(out->p + out->n, &kl, 8);
            memcpy(out->p + out->n + 8, c.buf + k, kl);
            memcpy(out->p + out->n + 8 + kl, &vl, 8);
            memcpy(out->p + out->n + 16 + kl, c.buf + v, vl);
            out->n += 16 + kl + vl;
        }
    }
    hz_flush_free(f);
    return rc;
}

int main(void)
{
    static const char *words[] = {"alpha", "beta", "the", "東京", "café", "x", "hello", "world", "a", "ok",
                                  "of", "to", "in", "on", "zeta", "éta"};
    enum { N = 3000 };
    hz_batch batch;
    /* docids over two roaring containers */
    if (race_batch(&batch, N, (race_spec){words, 16, 11, 37, 0, 3, 40, 4}) != 0) {
        return 1;
    }
    hz_tok_out outs[1];
    memset(outs, 0, sizeof outs);
    hz_postings *acc = hz_postings_new();
    hz_buf forward = {0};
    size_t *ends = calloc(N, sizeof(size_t));
    if (acc == NULL || ends == NULL || hz_index_batch(&batch, 1, NULL, outs, acc, &forward, ends) != 0
        || hz_postings_prepare(acc) != 0) {
        return 2;
    }
    static const size_t chunks[] = {1, 7, 256, 4096, 1000000};
    for (int table = 0; table < 2; table++) {
        hz_buf ref = {0};
        if (run_flush(acc, table, 1000000, 0, &ref) != 0) {
            return 2;
        }
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            for (int threaded = 0; threaded < 2; threaded++) {
                hz_buf got = {0};
                if (run_flush(acc, table, chunks[c], threaded, &got) != 0) {
                    return 2;
                }
                if (got.n != ref.n || memcmp(got.p, ref.p, ref.n) != 0) {
                    fprintf(stderr, "table %d chunk %zu threaded %d differs\n", table, chunks[c], threaded);
                    return 3;
                }
                hz_buf_free(&got);
            }
        }
        printf("table %d: %zu keys, %zu bytes of items\n", table, hz_postings_n_keys(acc, table), ref.n);
        hz_buf_free(&ref);
    }
    /* a flush stopped before its last chunk (the caller failed) joins its thread */
    hz_flush *f = hz_flush_start(acc, HZ_TABLE_WORD_FID, 64, 1);
    hz_flush_chunk c;
    if (f == NULL || hz_flush_next(f, &c) != 1) {
        return 2;
    }
    hz_flush_free(f);
    hz_tok_out_free(&outs[0]);
    hz_buf_free(&forward);
    hz_postings_free(acc);
    free(ends);
    return 0;
}
