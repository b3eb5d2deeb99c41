/* Roaring bitmap merge on the portable serialization format (the one CRoaring / pyroaring's
 * `BitMap.serialize` write and `BitMap.deserialize` read; spec: RoaringFormatSpec).
 *
 * hz_bitmap_merge computes (stored - removed) | added without building a bitmap object: the stored
 * bytes are walked container by container (one container per 65536-value chunk); a container no
 * docid touches is copied as is, a touched one is rebuilt (array merge, or a 1024-word bitmap) and
 * written in its smallest form: array (cardinality <= 4096), bitmap (> 4096) or run container
 * when runs take fewer bytes, as CRoaring's run_optimize chooses.
 *
 * Safe without the GIL; a hz_bitmap_work belongs to one thread at a time.
 */
#ifndef HZ_BITMAP_MERGE_H
#define HZ_BITMAP_MERGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hz_bitmap_work hz_bitmap_work;

hz_bitmap_work *hz_bitmap_work_new(void);
void hz_bitmap_work_free(hz_bitmap_work *w);

/* Merges into the work's output buffer. `stored` may be NULL (len 0: an empty bitmap). `added` and
 * `removed` need not be sorted nor distinct. 0, -1 on OOM, -2 when `stored` is malformed. */
int hz_bitmap_merge(hz_bitmap_work *w, const char *stored, size_t stored_len, const uint32_t *added,
                    size_t n_added, const uint32_t *removed, size_t n_removed);

/* The last merge's result: serialized bytes (length 0 when the bitmap is empty) and cardinality. */
const char *hz_bitmap_output(const hz_bitmap_work *w, size_t *len, uint64_t *cardinality);

/* Bytes allocated by the work buffers. */
size_t hz_bitmap_work_memory(const hz_bitmap_work *w);

#ifdef __cplusplus
}
#endif

#endif /* HZ_BITMAP_MERGE_H */
