/* HNSW graph (Malkov & Yashunin) over simsimd distance kernels, with tombstones, multi-version
 * visibility, filtered search and a persistence format for LMDB.
 *
 * Nodes and labels. A node is one vector; its label is the document id (u32) it belongs to. A label
 * may own several nodes (a document with several vectors); searches return labels, each at the
 * distance of its closest node.
 *
 * Distances. Every distance goes through one simsimd kernel pointer
 * `void k(const void *a, const void *b, size_t n, double *out)`, chosen by the caller:
 *   HZ_METRIC_COSINE     vectors are normalized on the way in and the kernel is simsimd's inner
 *                        product: distance = 1 - a.b (cosine distance, at the price of one dot product).
 *   HZ_METRIC_DOT        inner product kernel: distance = -a.b.
 *   HZ_METRIC_EUCLIDEAN  squared-euclidean kernel: distance = |a-b|^2 (same order as |a-b|).
 *   HZ_METRIC_HAMMING    binary quantization: vectors are stored as sign bits (bit i = x[i] > 0, LSB
 *                        first) and the kernel is simsimd's hamming over bytes: distance = differing bits.
 *
 * Versions. Each node carries the version that added it and the version that deleted it
 * (HZ_LIVE while live). A search "as of" version V sees a node iff ver_add <= V < ver_del, so a
 * reader of an older committed state keeps seeing the documents a later (possibly uncommitted) write
 * removed, and not the ones it added. Writes (insert, delete, cleanup) see every non-deleted node.
 *
 * Deletion. Deleting a label tombstones its nodes: they stay in the graph for navigation but are
 * never returned nor chosen as new neighbours. hz_hnsw_cleanup removes the tombstones for good:
 * every node that linked to one gets its list rebuilt from its live neighbours plus the live nodes
 * reachable through the removed ones (a walk through tombstones), pruned by the usual heuristic;
 * a node left without links is reconnected by a graph search. Freed slots are reused by inserts.
 *
 * Filtered search. A filter is a sorted array of labels. The graph walk accepts only matching
 * nodes and keeps exploring until `ef` matches are found or the reachable graph is exhausted, so it
 * expands about every node closer than the ef-th match: ef x live / |filter| nodes of 2m links. An
 * exact scan of the filter's nodes costs |filter| distances; the cheaper one is chosen
 * (|filter|^2 <= brute_factor x ef x live x 2m picks the scan; the default factor is 1). Whenever a graph search yields fewer than k labels while more
 * match, the exact search answers instead, so a search returns min(k, matching labels) hits.
 *
 * Threads. A read-write lock guards the graph: searches take it shared (many at once), mutations
 * exclusive, one operation at a time (an insert holds it for one vector). Nothing here touches
 * Python: every function may run without the GIL.
 *
 * Persistence. A node record (hz_hnsw_node_record) is
 *   u32 label | u8 level | u8 flags | u16 0 | for l in 0..level: u32 count, count x u32 neighbour
 *   [ | vector bytes, for a tombstone only: its document's vectors are gone from the store ]
 * in little-endian. Live vectors are stored by the caller with their document and handed back with
 * hz_hnsw_load_vector. Mutations mark the nodes whose record changed (dirty) and the slots they
 * freed, so the caller rewrites just those.
 */
#ifndef HZ_HNSW_H
#define HZ_HNSW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*hz_kernel_fn)(const void *a, const void *b, size_t n, double *out);

enum { HZ_METRIC_COSINE = 0, HZ_METRIC_DOT = 1, HZ_METRIC_EUCLIDEAN = 2, HZ_METRIC_HAMMING = 3 };

#define HZ_NONE UINT32_MAX
#define HZ_LIVE UINT64_MAX
#define HZ_MAX_LEVEL 30

typedef struct hz_hnsw hz_hnsw;

typedef struct {
    int metric;           /* HZ_METRIC_* */
    hz_kernel_fn kernel;  /* simsimd kernel matching the metric (see above) */
    size_t dim;           /* dimensions of the float vectors given to insert/search */
    int m;                /* links per node on upper levels; 2m on level 0 */
    int ef_construction;  /* candidate list size while inserting */
    uint64_t seed;        /* level generator seed (deterministic graphs for a given insert order) */
} hz_hnsw_params;

typedef struct {
    size_t slots;       /* node slots in use (live + tombstones) */
    size_t live;        /* live nodes */
    size_t tombstones;  /* tombstoned nodes not yet cleaned up */
    size_t labels;      /* labels with at least one live node */
    uint32_t entry;     /* entry point (HZ_NONE when empty) */
    int max_level;      /* level of the entry point (-1 when empty) */
    size_t memory;      /* bytes allocated */
} hz_hnsw_stats;

/* NULL on bad parameters or OOM. */
hz_hnsw *hz_hnsw_new(const hz_hnsw_params *params);
void hz_hnsw_free(hz_hnsw *g);

/* Bytes of one vector in its stored form: dim x 4 (f32) or ceil(dim / 8) (sign bits). */
size_t hz_hnsw_stored_bytes(const hz_hnsw *g);
/* The stored form of a float vector (a copy, or its sign bits for HZ_METRIC_HAMMING). */
void hz_hnsw_encode(const hz_hnsw *g, const float *in, void *out);

/* Inserts one vector (float, `dim` values) for `label`, added at `version`. 0, or -1 on OOM. */
int hz_hnsw_insert(hz_hnsw *g, uint32_t label, const float *vector, uint64_t version, uint32_t *node_out);
/* Tombstones the live nodes of `label` at `version`; returns how many. */
size_t hz_hnsw_delete_label(hz_hnsw *g, uint32_t label, uint64_t version);
/* Removes the tombstones deleted at or before `max_version` (see above); returns how many, or
 * (size_t)-1 on OOM (the graph is then unchanged but for repaired links, still consistent). */
size_t hz_hnsw_cleanup(hz_hnsw *g, uint64_t max_version);

/* The k nearest labels to `query` (float, `dim` values) visible at `as_of`: labels and distances
 * ascending into out arrays of k entries; *n_out = number written. `filter` (sorted ascending,
 * may be NULL for no filter) restricts the labels; `exact` forces exhaustive search. `ef` < k is
 * raised to k. 0, or -1 on OOM. */
int hz_hnsw_search(hz_hnsw *g, const float *query, size_t k, size_t ef, const uint32_t *filter,
                   size_t n_filter, uint64_t as_of, int exact, uint32_t *labels, float *distances,
                   size_t *n_out);

void hz_hnsw_set_brute_factor(hz_hnsw *g, double factor);
void hz_hnsw_stats_get(hz_hnsw *g, hz_hnsw_stats *out);
/* Live node ids of `label` into out (at most cap); returns the total count. */
size_t hz_hnsw_label_nodes(hz_hnsw *g, uint32_t label, uint32_t *out, size_t cap);
/* The labels with a node visible at `as_of`, ascending, into out (at most cap); returns the count. */
size_t hz_hnsw_labels(hz_hnsw *g, uint64_t as_of, uint32_t *out, size_t cap);
/* 1 when the node is a live node, 2 a tombstone, 0 a free slot. */
int hz_hnsw_node_state(hz_hnsw *g, uint32_t node);
/* Neighbours of a node at a level into out (at most cap); returns the count, -1 if none. */
int hz_hnsw_neighbours(hz_hnsw *g, uint32_t node, int level, uint32_t *out, size_t cap);

/* -- persistence --------------------------------------------------------------------------------- */

size_t hz_hnsw_node_record_size(hz_hnsw *g, uint32_t node);
/* Writes the record of a node into out (hz_hnsw_node_record_size bytes); 0, or -1 for a free slot. */
int hz_hnsw_node_record(hz_hnsw *g, uint32_t node, uint8_t *out);
/* Nodes whose record changed and slots freed since the last hz_hnsw_clear_dirty; pointers stay
 * valid until the next mutation. */
const uint32_t *hz_hnsw_dirty(hz_hnsw *g, size_t *n);
const uint32_t *hz_hnsw_freed(hz_hnsw *g, size_t *n);
void hz_hnsw_clear_dirty(hz_hnsw *g);

/* Loading, on an empty graph: every node record, the stored vector of every live node, then
 * hz_hnsw_finish_load. Loaded nodes are visible at every version (tombstones at none).
 * 0, -1 on OOM, -2 on a malformed record. */
int hz_hnsw_load_node(hz_hnsw *g, uint32_t node, const uint8_t *record, size_t len);
int hz_hnsw_load_vector(hz_hnsw *g, uint32_t node, const void *stored);
/* Rebuilds label chains and the free list, drops links to missing nodes, checks the entry point
 * (a missing one is replaced by the highest node). Returns the number of live nodes that got no
 * vector (they are tombstoned so the graph stays sound), or -1 on OOM. */
long hz_hnsw_finish_load(hz_hnsw *g, uint32_t entry);

#ifdef __cplusplus
}
#endif

#endif
