/* Built with -fsanitize=thread by test_index_batch_props.py: csrc/index_batch.c on 1 to 4 threads over
 * the real tokenizer, with threads started per batch and with a pool reused (and grown) across batches,
 * checking that every run gives the same forward entries and keys (exit status 3 or 4 otherwise) while
 * ThreadSanitizer watches the workers for data races. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "race_batch.h"

int main(void)
{
    static const char *words[] = {"alpha", "beta", "the", "東京", "café", "x", "hello", "world", "a", "ok"};
    enum { N = 1500 };
    hz_batch batch;
    if (race_batch(&batch, N, (race_spec){words, 10, 7, 13, 100000, 5, 30, 0}) != 0) {
        return 1;
    }
    hz_buf ref = {0};
    size_t ref_words = 0, ref_keys = 0;
    hz_pool *pool = hz_pool_new();
    if (pool == NULL) {
        return 1;
    }
    for (unsigned run = 0; run < 12; run++) {
        unsigned threads = 1 + run % 4;
        hz_pool *use = run < 4 ? NULL : pool;
        hz_tok_out outs[4];
        memset(outs, 0, sizeof outs);
        hz_postings *acc = hz_postings_new();
        hz_buf forward = {0};
        size_t *ends = calloc(N, sizeof(size_t));
        if (acc == NULL || ends == NULL || hz_index_batch(&batch, threads, use, outs, acc, &forward, ends) != 0
            || hz_postings_prepare(acc) != 0) {
            return 2;
        }
        size_t n_words = hz_postings_n_keys(acc, HZ_TABLE_WORD), n_keys = hz_postings_n_keys(acc, HZ_TABLE_WORD_FID);
        if (run == 0) {
            ref = forward;
            ref_words = n_words;
            ref_keys = n_keys;
        } else {
            if (forward.n != ref.n || memcmp(forward.p, ref.p, ref.n) != 0) {
                return 3;
            }
            if (n_words != ref_words || n_keys != ref_keys) {
                return 4;
            }
            hz_buf_free(&forward);
        }
        for (int i = 0; i < 4; i++) {
            hz_tok_out_free(&outs[i]);
        }
        hz_postings_free(acc);
        free(ends);
    }
    hz_pool_free(pool);
    printf("%zu bytes of forward entries, %zu words, %zu word-fid keys\n", ref.n, ref_words, ref_keys);
    return 0;
}
