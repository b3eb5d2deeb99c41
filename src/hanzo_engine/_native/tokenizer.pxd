# cython: language_level=3
"""C-level view of the tokenizer for other native modules (indexing.pyx cimports it).

Other modules call the tokenizer through `TokenizerConfig.index_tokens` and `tokens_free`, so
csrc/tokenizer.c (and its code point tables) is linked into tokenizer.so only.
"""

from libc.stdint cimport uint8_t, uint32_t


cdef extern from "tokenizer.h" nogil:
    ctypedef struct hz_token:
        uint32_t start
        uint32_t length
        uint32_t norm_start
        uint32_t norm_length
        uint32_t position
        uint8_t kind
        uint8_t ascii

    ctypedef struct hz_tok_out:
        hz_token *tokens
        size_t n_tokens
        size_t cap_tokens
        char *norm
        size_t norm_len
        size_t norm_cap

    ctypedef struct hz_tok_config:
        pass

    int HZ_TOK_WORD, HZ_TOK_STOP_WORD, HZ_TOK_SEP_SOFT, HZ_TOK_SEP_HARD
    int HZ_PAT_SOFT, HZ_PAT_HARD, HZ_PAT_WORD
    int HZ_MODE_ALL, HZ_MODE_INDEX
    int HZ_TOK_HARD_DISTANCE, HZ_TOK_MAX_WORD_BYTES
    unsigned int HZ_TOK_MAX_POSITIONS

    int hz_tok_init()
    const char *hz_tok_unicode_version()
    hz_tok_config *hz_tok_config_new()
    void hz_tok_config_free(hz_tok_config *cfg)
    int hz_tok_config_add_pattern(hz_tok_config *cfg, const char *s, size_t len, int kind)
    int hz_tok_config_add_stop_word(hz_tok_config *cfg, const char *s, size_t len)
    size_t hz_tok_separator_range_count()
    void hz_tok_separator_range(size_t i, uint32_t *first, uint32_t *last)
    size_t hz_tok_hard_range_count()
    void hz_tok_hard_range(size_t i, uint32_t *first, uint32_t *last)
    size_t hz_tok_multi_separator_count()
    const char *hz_tok_multi_separator(size_t i, int *hard)
    int hz_tokenize(const hz_tok_config *cfg, const char *text, size_t len, int mode,
                    uint32_t max_positions, hz_tok_out *out)
    int hz_normalize(const char *text, size_t len, hz_tok_out *out, size_t *norm_start,
                     size_t *norm_length, uint32_t *char_bytes)
    void hz_tok_out_free(hz_tok_out *out)


cdef class TokenizerConfig:
    cdef hz_tok_config *cfg
    cdef readonly tuple separators
    cdef readonly tuple dictionary
    cdef readonly frozenset stop_words

    cdef int index_tokens(self, const char *text, size_t size, uint32_t max_positions,
                          hz_tok_out *out) noexcept nogil


cdef void tokens_free(hz_tok_out *out) noexcept nogil
