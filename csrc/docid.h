/* Document identifier validation, as Meilisearch's `validate_document_id_str`.
 *
 * A valid external document id is 1..511 bytes, each an ASCII letter, digit, '-' or '_'.
 */
#ifndef HZ_DOCID_H
#define HZ_DOCID_H

#include <stddef.h>

#define HZ_DOCID_MAX_LEN 511

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 1 when s[0..len) is a valid document id, 0 otherwise. Pure: no allocation, no global
 * state, safe to call without the GIL. */
int hz_is_valid_document_id(const char *s, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* HZ_DOCID_H */
