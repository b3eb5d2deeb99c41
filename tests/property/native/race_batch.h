/* The random batch both ThreadSanitizer programs index (index_batch_race.c, flush_race.c): documents
 * of FIELDS fields of TEXTS texts, each text 1 to `max_words` words drawn from `words`, and, when
 * `rare_every` is set, one word in `rare_every` a rare `w<k>` word (many keys with one or two docids). */
#ifndef RACE_BATCH_H
#define RACE_BATCH_H

#include <stdio.h>
#include <stdlib.h>

#include "index_batch.h"
#include "tokenizer.h"

enum { RACE_FIELDS = 3, RACE_TEXTS = 2, RACE_TEXT_BYTES = 1024 };

typedef struct {
    const char *const *words;
    unsigned n_words;
    unsigned seed;
    uint32_t docid_step;
    uint32_t docid_mod; /* 0: docids are d * docid_step */
    uint16_t fid_step;
    unsigned max_words;
    unsigned rare_every; /* 0: none */
} race_spec;

static int race_tokenize(void *ctx, const char *text, size_t size, uint32_t max_positions, hz_tok_out *out)
{
    return hz_tokenize(ctx, text, size, HZ_MODE_INDEX, max_positions, out);
}

/* Fills *batch with n documents (0 on success; the texts are never freed: the programs exit). */
static int race_batch(hz_batch *batch, size_t n, race_spec spec)
{
    if (hz_tok_init() != 0) {
        return 1;
    }
    hz_tok_config *cfg = hz_tok_config_new();
    hz_batch_doc *docs = calloc(n, sizeof *docs);
    hz_batch_field *fields = calloc(n * RACE_FIELDS, sizeof *fields);
    hz_batch_text *texts = calloc(n * RACE_FIELDS * RACE_TEXTS, sizeof *texts);
    if (cfg == NULL || docs == NULL || fields == NULL || texts == NULL
        || hz_tok_config_add_pattern(cfg, " ", 1, HZ_PAT_SOFT) != 0) {
        return 1;
    }
    size_t nf = 0, nt = 0;
    for (size_t d = 0; d < n; d++) {
        uint32_t docid = (uint32_t)d * spec.docid_step;
        docs[d] = (hz_batch_doc){spec.docid_mod ? docid % spec.docid_mod : docid, nf, RACE_FIELDS};
        for (int f = 0; f < RACE_FIELDS; f++) {
            fields[nf++] = (hz_batch_field){(uint16_t)(f * spec.fid_step), nt, RACE_TEXTS};
            for (int t = 0; t < RACE_TEXTS; t++) {
                char *text = malloc(RACE_TEXT_BYTES);
                if (text == NULL) {
                    return 1;
                }
                size_t len = 0;
                unsigned k = rand_r(&spec.seed) % spec.max_words + 1;
                for (unsigned w = 0; w < k; w++) {
                    unsigned r = rand_r(&spec.seed);
                    if (spec.rare_every && r % spec.rare_every == 0) {
                        len += (size_t)sprintf(text + len, "w%u ", r % 5000);
                    } else {
                        len += (size_t)sprintf(text + len, "%s ", spec.words[r % spec.n_words]);
                    }
                }
                texts[nt++] = (hz_batch_text){text, len};
            }
        }
    }
    *batch = (hz_batch){race_tokenize, cfg, docs, n, fields, texts};
    return 0;
}

#endif
