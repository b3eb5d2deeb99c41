/* Full-text tokenizer: UTF-8 in, normalized words and separators out (Meilisearch/charabia rules).
 *
 * A text is cut by a longest-leftmost match of the configured patterns (separators and dictionary
 * words, matched on the original bytes, case-sensitively, as charabia's Aho-Corasick pass does).
 * The stretches between matches are split where the script changes; CJK, Hangul, Thai, Lao, Khmer
 * and Myanmar stretches are further cut into one token per character cluster, with runs of digits
 * and symbols kept whole; Arabic words starting with the article "ال" are cut after it. Every word is normalized (NFKD, lowercase, diacritics stripped for the
 * scripts charabia strips, width and kana folding; see csrc/tokenizer.c) and trimmed; a word that
 * normalizes to nothing is dropped without taking a position.
 *
 * Word positions follow milli: the first word is at 0, each next word adds 1, or 8 when a hard
 * separator stands between them.
 *
 * All functions are safe to call without the GIL. A config is immutable once built and may be
 * shared by threads; an hz_tok_out belongs to one call.
 */
#ifndef HZ_TOKENIZER_H
#define HZ_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Token kinds. */
#define HZ_TOK_WORD 0
#define HZ_TOK_STOP_WORD 1
#define HZ_TOK_SEP_SOFT 2
#define HZ_TOK_SEP_HARD 3

/* Pattern kinds for hz_tok_config_add_pattern. A string added both as a separator and as a
 * dictionary word is a separator (charabia classifies it so); hard wins over soft. */
#define HZ_PAT_SOFT 1
#define HZ_PAT_HARD 2
#define HZ_PAT_WORD 3

/* hz_tokenize modes: every token (queries, highlighting), or only what milli indexes (words that
 * are not stop words, at most HZ_TOK_MAX_WORD_BYTES long, positions below max_positions). */
#define HZ_MODE_ALL 0
#define HZ_MODE_INDEX 1

#define HZ_TOK_NO_POSITION UINT32_MAX
#define HZ_TOK_HARD_DISTANCE 8
#define HZ_TOK_MAX_WORD_BYTES 250     /* milli's MAX_WORD_LENGTH: half an LMDB key */
#define HZ_TOK_MAX_POSITIONS 65536u   /* milli's MAX_POSITION_PER_ATTRIBUTE */

typedef struct {
    uint32_t start;       /* byte offset of the token in the original text */
    uint32_t length;      /* byte length in the original text */
    uint32_t norm_start;  /* normalized bytes: out->norm[norm_start .. norm_start + norm_length) */
    uint32_t norm_length;
    uint32_t position;    /* word position, HZ_TOK_NO_POSITION for separators */
    uint8_t kind;         /* HZ_TOK_* */
    uint8_t ascii;        /* the normalized bytes are all ASCII */
} hz_token;

typedef struct {
    hz_token *tokens;
    size_t n_tokens, cap_tokens;
    char *norm;
    size_t norm_len, norm_cap;
} hz_tok_out;

typedef struct hz_tok_config hz_tok_config;

/* Builds the code point tables; call once before anything else (not thread-safe). 0, or -1 on OOM. */
int hz_tok_init(void);
const char *hz_tok_unicode_version(void);

hz_tok_config *hz_tok_config_new(void);
void hz_tok_config_free(hz_tok_config *cfg);
/* s[0..len) must be valid UTF-8 and non-empty. 0, or -1 on OOM / bad arguments. */
int hz_tok_config_add_pattern(hz_tok_config *cfg, const char *s, size_t len, int kind);
/* Adds the normalization of s[0..len) to the stop words (nothing when it normalizes to ""). */
int hz_tok_config_add_stop_word(hz_tok_config *cfg, const char *s, size_t len);

/* Default separators, as generated from charabia's list: single code point ranges and strings. */
size_t hz_tok_separator_range_count(void);
void hz_tok_separator_range(size_t i, uint32_t *first, uint32_t *last);
size_t hz_tok_hard_range_count(void);
void hz_tok_hard_range(size_t i, uint32_t *first, uint32_t *last);
size_t hz_tok_multi_separator_count(void);
const char *hz_tok_multi_separator(size_t i, int *hard);

/* Tokenizes text[0..len), appending to out. 0, or -1 on OOM (out is then partially filled). */
int hz_tokenize(const hz_tok_config *cfg, const char *text, size_t len, int mode,
                uint32_t max_positions, hz_tok_out *out);

/* Normalizes text[0..len) as one word (no segmentation), appending the trimmed result to out->norm
 * and returning its start in *norm_start and its length in *norm_length. When char_bytes is not
 * NULL it must hold one slot per code point of text: slot k receives the number of normalized
 * (untrimmed) bytes that code point produced. 0, or -1 on OOM. */
int hz_normalize(const char *text, size_t len, hz_tok_out *out, size_t *norm_start,
                 size_t *norm_length, uint32_t *char_bytes);

void hz_tok_out_free(hz_tok_out *out);

#ifdef __cplusplus
}
#endif

#endif /* HZ_TOKENIZER_H */
