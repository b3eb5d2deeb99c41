/* Full-text indexing core: per-document analysis (forward index) and per-transaction posting lists.
 *
 * hz_doc — one document being indexed (or un-indexed):
 *   - fields are fed in order (hz_doc_begin_field / hz_doc_add_tokens / hz_doc_end_field), each text
 *     of a field as the tokens hz_tokenize produced for it in HZ_MODE_INDEX;
 *   - a word occurrence is packed as `fid << 16 | position`, where position = field offset + token
 *     position; the offset starts at 0 and, after a text that kept a word, becomes that text's last
 *     kept position + 8 (array elements are apart by a hard separator, as milli does). A token whose
 *     packed position would exceed HZ_MAX_POSITION ends that text;
 *   - words are kept in first-occurrence order with their positions in occurrence order, and the
 *     fields that kept at least one word in processing order with their word count;
 *   - hz_doc_encode writes the forward entry as msgpack `[lengths, postings]` (lengths: map fid ->
 *     word count; postings: map word -> array of packed positions), byte for byte what msgspec
 *     encodes for the same Python objects (smallest int/str/array/map headers);
 *   - hz_doc_parse reads such an entry back (any valid msgpack unsigned-int encoding accepted).
 *
 * hz_postings — the bitmap changes of one write transaction, not yet merged into the database:
 *   for every key of word-docids (`word`) and word-fid-docids (`word 0x00 fid-u16-BE`), the docids
 *   added and the docids removed, applied at flush as "(stored - removed) | added"; plus per-fid
 *   deltas of field-stats (documents with the field, total words). Words get a global id at their
 *   first mark; each (word, field, docid, added?) event is appended to a flat log (12 bytes, no
 *   per-key allocation, sequential writes), which hz_postings_prepare radix-sorts into key order
 *   once per flush. A word's docids are those of its (word, field) events: a document has a word
 *   exactly when one of its fields has it.
 *
 * Nothing here touches Python: every function is safe to call without the GIL. A structure belongs
 * to one thread at a time. Functions returning int give 0, or -1 on OOM / malformed input.
 */
#ifndef HZ_POSTINGS_H
#define HZ_POSTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HZ_MAX_POSITION 0xFFFFu   /* packed positions keep 16 bits for the position */
/* word-fid-docids keys with fid | HZ_FIRST_WORD_FID hold the documents whose field fid starts with
 * the word (position 0): the search's first word-position bucket, without reading forward entries. */
#define HZ_FIRST_WORD_FID 0x8000u
/* ... with fid | HZ_FIRST_WORD_FID | HZ_SOLE_WORD_FID the documents whose field fid holds that word
 * alone (one word): a one-word query's exact attribute matches (exactness), without forward entries;
 * with fid | HZ_FIRST_WORD_FID | HZ_SECOND_WORD_FID the documents whose field fid has the word at
 * position 1 (with the first word's keys: the fields starting with a given pair of words). Only
 * fields below HZ_PSEUDO_FID_LIMIT have these keys. */
#define HZ_SOLE_WORD_FID 0x4000u
#define HZ_SECOND_WORD_FID 0x2000u
#define HZ_PSEUDO_FID_LIMIT 0x2000u
/* word-fid-docids keys with HZ_NEXT_WORD_FID | bits hold the documents where the word is directly
 * followed, in some field, by a word whose hz_next_word_bits are `bits` (3 bits of each of its first
 * two bytes): a superset of the documents where it is followed by a given word, or by any word with
 * a given prefix (the proximity rule's best). */
#define HZ_NEXT_WORD_FID 0xE000u
#define HZ_NEXT_WORD_MASK 0x3Fu
#define HZ_NEXT_WORD_MAX_LEN 4u  /* bytes: only short (frequent) words have next-word keys */
#define HZ_ARRAY_GAP 8u           /* distance between two elements of an array field */

typedef struct {
    char *p;
    size_t n, cap;
} hz_buf;

typedef struct hz_doc hz_doc;
typedef struct hz_postings hz_postings;

hz_doc *hz_doc_new(void);
void hz_doc_free(hz_doc *d);
void hz_doc_reset(hz_doc *d);

void hz_doc_begin_field(hz_doc *d, uint16_t fid);
/* Offset of the next text of the current field: it cannot keep a word when above HZ_MAX_POSITION,
 * and otherwise keeps only tokens with position < HZ_MAX_POSITION + 1 - offset. */
uint32_t hz_doc_field_offset(const hz_doc *d);
int hz_doc_add_tokens(hz_doc *d, const hz_tok_out *tokens);
int hz_doc_end_field(hz_doc *d);

/* Parses a forward entry into a reset doc (as if its fields had been fed). -1 when malformed. */
int hz_doc_parse(hz_doc *d, const char *data, size_t len);

/* Appends the forward entry of d to out. */
int hz_doc_encode(hz_doc *d, hz_buf *out);

/* Accessors, valid after hz_doc_encode (postings grouped per word). */
size_t hz_doc_n_fields(const hz_doc *d);
void hz_doc_field(const hz_doc *d, size_t i, uint16_t *fid, uint32_t *count);
size_t hz_doc_n_words(const hz_doc *d);
/* Word i: its bytes, and its packed positions. */
void hz_doc_word(const hz_doc *d, size_t i, const char **word, size_t *len, const uint32_t **positions,
                 size_t *n_positions);

hz_postings *hz_postings_new(void);
void hz_postings_free(hz_postings *p);
/* Forgets every change. */
void hz_postings_clear(hz_postings *p);
/* Clears and hands back every buffer a clear keeps (the accumulator stays usable). */
void hz_postings_release(hz_postings *p);
/* Records that docid has (add=1) or no longer has (add=0) the words and fields of d. -1 on OOM or
 * after hz_postings_prepare (until the next clear). */
int hz_postings_mark(hz_postings *p, const hz_doc *d, uint32_t docid, int add);
/* Appends the changes of src after those of dst, as if src's marks had been made on dst after dst's own:
 * the same word ids, event log and field order (src is left unchanged). -1 on OOM or when either is
 * prepared. */
int hz_postings_absorb(hz_postings *dst, const hz_postings *src);
/* The hash bits a word has in HZ_NEXT_WORD_FID keys. */
uint32_t hz_next_word_bits(const char *w, size_t len);
/* Bytes currently allocated by the accumulator. */
size_t hz_postings_memory(const hz_postings *p);
/* Bytes held, the buffers kept across clears included (hz_postings_memory counts what is in use). */
size_t hz_postings_held(const hz_postings *p);

/* Which table: word-docids keys or word-fid-docids keys. */
#define HZ_TABLE_WORD 0
#define HZ_TABLE_WORD_FID 1

/* Sorts the changes into database key order; no mark is accepted afterwards until a clear. */
int hz_postings_prepare(hz_postings *p);
/* Number of changed keys of a table (0 before hz_postings_prepare). */
size_t hz_postings_n_keys(const hz_postings *p, int table);
/* Key i of a table, in ascending key order, with the docids added and removed (not necessarily
 * sorted nor distinct). The pointers are valid until the next call. With added NULL, only the key is
 * returned (the docid pointers are left alone). */
int hz_postings_key(hz_postings *p, int table, size_t i, const char **key, size_t *len,
                    const uint32_t **added, size_t *n_added, const uint32_t **removed, size_t *n_removed);

/* Field-stats deltas in order of first touch: fid, documents delta, words delta. */
size_t hz_postings_n_fields(const hz_postings *p);
void hz_postings_field(const hz_postings *p, size_t i, uint16_t *fid, int64_t *docs, int64_t *words);

void hz_buf_free(hz_buf *b);

#ifdef __cplusplus
}
#endif

#endif /* HZ_POSTINGS_H */
