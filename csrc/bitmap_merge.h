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

#include "postings.h"

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

/* The flush of a table of a prepared accumulator into a table that stores nothing yet: every key with
 * docids added gets its bitmap (hz_bitmap_merge of nothing stored), chunk after chunk of `chunk` keys,
 * on a thread of its own while the caller writes the chunk before (two chunks at most are held). Only
 * that thread touches the accumulator until hz_flush_free. */
typedef struct hz_flush hz_flush;

/* One chunk's output: for its key i (of hi - lo), the key is buf[offs[2i], offs[2i + 1]) and its bitmap
 * buf[offs[2i + 1], offs[2i + 2]); a key with nothing to write has both empty. */
typedef struct {
    size_t lo, hi;
    const char *buf;
    const size_t *offs;
} hz_flush_chunk;

/* Starts the flush (`threaded` 0: each chunk is computed in hz_flush_next). NULL on OOM. */
hz_flush *hz_flush_start(hz_postings *acc, int table, size_t chunk, int threaded);
/* The next chunk: 1 with *out set (valid until the next call), 0 after the last, -1 on OOM. */
int hz_flush_next(hz_flush *f, hz_flush_chunk *out);
/* Stops the thread (waits for its chunk) and frees everything. */
void hz_flush_free(hz_flush *f);

#ifdef __cplusplus
}
#endif

#endif /* HZ_BITMAP_MERGE_H */
