# csrc: hnsw.c
# cython: language_level=3
"""Native HNSW graph over csrc/hnsw.c (see hnsw.h for the model: labels, versions, tombstones,
filtered search, record format).

Distances are simsimd's C kernels, looked up once at import and called from C with the GIL released:
`pointer_to_inner("f32")` for cosine (vectors normalized on insert, so cosine distance costs one dot
product) and dot, `pointer_to_sqeuclidean("f32")` for euclidean, and `simsimd_hamming_b8` (exported by
simsimd's extension module, found with ctypes) for binary-quantized vectors; a portable popcount
stands in if that symbol is ever missing.

Distances returned by `search` (smaller is closer) and `similarity(distance)`:
- cosine:     1 - cos(a, b)           similarity = cos(a, b) in [-1, 1]
- dot:        -a.b                    similarity = a.b
- euclidean:  |a - b|^2               similarity = 1 / (1 + |a - b|)
- binary quantized (sign bits, hamming): differing bits h; similarity = 1 - 2h / dim, the cosine of
  the two +-1 vectors (what the quantized vectors say of the original cosine).
"""

import array
import ctypes

import numpy as np
import simsimd

from libc.stdint cimport uint8_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize


cdef extern from "hnsw.h" nogil:
    ctypedef void (*hz_kernel_fn)(const void *a, const void *b, size_t n, double *out) noexcept nogil

    int HZ_METRIC_COSINE, HZ_METRIC_DOT, HZ_METRIC_EUCLIDEAN, HZ_METRIC_HAMMING
    uint32_t HZ_NONE
    uint64_t HZ_LIVE

    ctypedef struct hz_hnsw:
        pass

    ctypedef struct hz_hnsw_params:
        int metric
        hz_kernel_fn kernel
        size_t dim
        int m
        int ef_construction
        uint64_t seed

    ctypedef struct hz_hnsw_stats:
        size_t slots
        size_t live
        size_t tombstones
        size_t labels
        uint32_t entry
        int max_level
        size_t memory

    hz_hnsw *hz_hnsw_new(const hz_hnsw_params *params)
    void hz_hnsw_free(hz_hnsw *g)
    size_t hz_hnsw_stored_bytes(const hz_hnsw *g)
    void hz_hnsw_encode(const hz_hnsw *g, const float *inp, void *out)
    int hz_hnsw_insert(hz_hnsw *g, uint32_t label, const float *vector, uint64_t version, uint32_t *node_out)
    size_t hz_hnsw_delete_label(hz_hnsw *g, uint32_t label, uint64_t version)
    size_t hz_hnsw_cleanup(hz_hnsw *g, uint64_t max_version)
    int hz_hnsw_search(hz_hnsw *g, const float *query, size_t k, size_t ef, const uint32_t *filter,
                       size_t n_filter, uint64_t as_of, int exact, uint32_t *labels, float *distances,
                       size_t *n_out)
    void hz_hnsw_set_brute_factor(hz_hnsw *g, double factor)
    void hz_hnsw_stats_get(hz_hnsw *g, hz_hnsw_stats *out)
    size_t hz_hnsw_label_nodes(hz_hnsw *g, uint32_t label, uint32_t *out, size_t cap)
    size_t hz_hnsw_labels(hz_hnsw *g, uint64_t as_of, uint32_t *out, size_t cap)
    int hz_hnsw_node_state(hz_hnsw *g, uint32_t node)
    int hz_hnsw_neighbours(hz_hnsw *g, uint32_t node, int level, uint32_t *out, size_t cap)
    size_t hz_hnsw_node_record_size(hz_hnsw *g, uint32_t node)
    int hz_hnsw_node_record(hz_hnsw *g, uint32_t node, uint8_t *out)
    const uint32_t *hz_hnsw_dirty(hz_hnsw *g, size_t *n)
    const uint32_t *hz_hnsw_freed(hz_hnsw *g, size_t *n)
    void hz_hnsw_clear_dirty(hz_hnsw *g)
    int hz_hnsw_load_node(hz_hnsw *g, uint32_t node, const uint8_t *record, size_t length)
    int hz_hnsw_load_vector(hz_hnsw *g, uint32_t node, const void *stored)
    long hz_hnsw_finish_load(hz_hnsw *g, uint32_t entry)


cdef extern from *:
    int __builtin_popcount(unsigned int x) nogil


cdef void _hamming_portable(const void *a, const void *b, size_t n, double *out) noexcept nogil:
    cdef const uint8_t *x = <const uint8_t *>a
    cdef const uint8_t *y = <const uint8_t *>b
    cdef size_t i
    cdef unsigned long long acc = 0
    for i in range(n):
        acc += __builtin_popcount(x[i] ^ y[i])
    out[0] = <double>acc


def _hamming_pointer() -> int:
    try:
        lib = ctypes.CDLL(simsimd.__file__)
        return int(ctypes.cast(lib.simsimd_hamming_b8, ctypes.c_void_p).value or 0)
    except (OSError, AttributeError):
        return 0


_INNER = int(simsimd.pointer_to_inner("f32"))
_SQEUCLIDEAN = int(simsimd.pointer_to_sqeuclidean("f32"))
_HAMMING = _hamming_pointer()

METRICS = ("cosine", "dot", "euclidean")
#: `as_of` meaning "every live node" (no version filtering).
LATEST = 0xFFFFFFFFFFFFFFFE
#: `cleanup` bound meaning "every tombstone".
ALL_VERSIONS = 0xFFFFFFFFFFFFFFFE


cdef inline void _check(int rc) except *:
    if rc == -1:
        raise MemoryError("HNSW graph: out of memory")
    if rc == -2:
        raise ValueError("HNSW graph: malformed record or node slot in use")


def _filter_array(object f):
    """Sorted distinct uint32 labels from a BitMap, an array or any iterable of ints."""
    if hasattr(f, "to_array") and hasattr(f, "serialize"):  # pyroaring BitMap: already sorted
        return np.frombuffer(f.to_array(), dtype=np.uint32)
    return np.unique(np.asarray(f, dtype=np.uint32).ravel())


cdef class HnswGraph:
    """An HNSW graph of float vectors (or their sign bits) keyed by uint32 labels.

    Thread-safe: searches run in parallel with each other (GIL released) and wait only for the single
    mutation in progress (one insert, delete or cleanup), never for a whole batch.
    """

    cdef hz_hnsw *g
    cdef readonly int dim
    cdef readonly str metric
    cdef readonly int m
    cdef readonly int ef_construction
    cdef readonly bint binary_quantized
    cdef public int ef_search
    cdef double _brute_factor
    cdef int _cmetric

    def __cinit__(self, int dim, str metric="cosine", *, int m=16, int ef_construction=200,
                  int ef_search=64, bint binary_quantized=False, unsigned long long seed=0):
        cdef hz_hnsw_params p
        cdef uintptr_t kernel
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; expected one of {METRICS}")
        if dim < 1:
            raise ValueError("dimensions must be positive")
        if m < 2 or m > 256:
            raise ValueError("m must be in 2..256")
        if ef_construction < 1 or ef_search < 1:
            raise ValueError("ef must be positive")
        if binary_quantized:
            self._cmetric = HZ_METRIC_HAMMING
            kernel = <uintptr_t>_HAMMING if _HAMMING else <uintptr_t>&_hamming_portable
        elif metric == "euclidean":
            self._cmetric = HZ_METRIC_EUCLIDEAN
            kernel = <uintptr_t>_SQEUCLIDEAN
        else:
            self._cmetric = HZ_METRIC_COSINE if metric == "cosine" else HZ_METRIC_DOT
            kernel = <uintptr_t>_INNER
        p.metric = self._cmetric
        p.kernel = <hz_kernel_fn>kernel
        p.dim = <size_t>dim
        p.m = m
        p.ef_construction = ef_construction
        p.seed = seed
        self.g = hz_hnsw_new(&p)
        if self.g == NULL:
            raise MemoryError("HNSW graph: cannot allocate")
        self.dim = dim
        self.metric = metric
        self.m = m
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.binary_quantized = binary_quantized
        self._brute_factor = 1.0

    def __dealloc__(self):
        if self.g != NULL:
            hz_hnsw_free(self.g)
            self.g = NULL

    @property
    def brute_factor(self) -> float:
        """Weight of the filtered-search cost model (hnsw.h): a filter of F labels is scanned
        exhaustively when F^2 <= brute_factor x ef x live nodes x 2m. 0 = always walk the graph,
        inf = always scan."""
        return self._brute_factor

    @brute_factor.setter
    def brute_factor(self, double value):
        self._brute_factor = value
        hz_hnsw_set_brute_factor(self.g, value)

    @property
    def stored_bytes(self) -> int:
        """Bytes of one vector in stored form (`encode`)."""
        return hz_hnsw_stored_bytes(self.g)

    def stats(self) -> dict:
        cdef hz_hnsw_stats s
        hz_hnsw_stats_get(self.g, &s)
        return {
            "slots": s.slots, "live": s.live, "tombstones": s.tombstones, "labels": s.labels,
            "entry": None if s.entry == HZ_NONE else s.entry, "max_level": s.max_level,
            "memory": s.memory,
        }

    def __len__(self) -> int:
        cdef hz_hnsw_stats s
        hz_hnsw_stats_get(self.g, &s)
        return s.live

    cdef object _vectors(self, object vectors):
        arr = np.ascontiguousarray(vectors, dtype=np.float32)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise ValueError(f"expected vectors of {self.dim} dimensions, got shape {arr.shape}")
        return arr

    # -- mutations -------------------------------------------------------------------------------

    def add(self, unsigned int label, object vector, unsigned long long version=0) -> int:
        """Inserts one vector for `label`; returns its node id."""
        cdef const float[:, ::1] v = self._vectors(vector)
        cdef uint32_t node = 0
        cdef int rc
        if v.shape[0] != 1:
            raise ValueError("add takes one vector; use add_items for several")
        with nogil:
            rc = hz_hnsw_insert(self.g, label, &v[0, 0], version, &node)
        _check(rc)
        return node

    def add_items(self, object labels, object vectors, unsigned long long version=0):
        """Inserts `vectors[i]` for `labels[i]`; returns the node ids (uint32 array)."""
        cdef const float[:, ::1] v = self._vectors(vectors)
        cdef const uint32_t[::1] lab = np.ascontiguousarray(labels, dtype=np.uint32)
        if lab.shape[0] != v.shape[0]:
            raise ValueError("labels and vectors differ in length")
        out = np.empty(v.shape[0], dtype=np.uint32)
        cdef uint32_t[::1] nodes = out
        cdef Py_ssize_t i, n = v.shape[0]
        cdef int rc = 0
        with nogil:
            for i in range(n):
                rc = hz_hnsw_insert(self.g, lab[i], &v[i, 0], version, &nodes[i])
                if rc:
                    break
        _check(rc)
        return out

    def delete(self, unsigned int label, unsigned long long version=0) -> int:
        """Tombstones the live vectors of `label`; returns how many."""
        cdef size_t n
        with nogil:
            n = hz_hnsw_delete_label(self.g, label, version)
        return n

    def cleanup(self, unsigned long long max_version=ALL_VERSIONS) -> int:
        """Removes the tombstones deleted at or before `max_version`, repairing their neighbours."""
        cdef size_t n
        with nogil:
            n = hz_hnsw_cleanup(self.g, max_version)
        if n == <size_t>-1:
            raise MemoryError("HNSW graph: out of memory")
        return n

    # -- search ----------------------------------------------------------------------------------

    def search(self, object query, int k, *, object ef=None, object filter=None,
               unsigned long long as_of=LATEST, bint exact=False) -> list:
        """The `k` nearest labels as `[(label, distance), ...]`, closest first.

        `filter` (BitMap, array or iterable of labels) restricts the result to those labels and still
        returns min(k, matching labels) hits; `as_of` hides nodes added after / deleted at or before
        that version; `exact` forces an exhaustive scan."""
        cdef const float[:, ::1] q = self._vectors(query)
        cdef const uint32_t[::1] f
        cdef const uint32_t *fp = NULL
        cdef size_t nf = 0, n_out = 0, i
        cdef size_t c_ef = self.ef_search if ef is None else <size_t>max(int(ef), 1)
        cdef int rc
        if q.shape[0] != 1:
            raise ValueError("search takes one query vector")
        if k <= 0:
            return []
        if filter is not None:
            farr = _filter_array(filter)
            nf = farr.shape[0]
            if nf == 0:
                return []
            f = farr
            fp = &f[0]
        labels = np.empty(k, dtype=np.uint32)
        dists = np.empty(k, dtype=np.float32)
        cdef uint32_t[::1] lv = labels
        cdef float[::1] dv = dists
        with nogil:
            rc = hz_hnsw_search(self.g, &q[0, 0], <size_t>k, c_ef, fp, nf, as_of, exact,
                                &lv[0], &dv[0], &n_out)
        _check(rc)
        return [(lv[i], dv[i]) for i in range(n_out)]

    def similarity(self, double distance) -> float:
        """The similarity a search distance stands for (see the module docstring)."""
        if self._cmetric == HZ_METRIC_COSINE:
            return 1.0 - distance
        if self._cmetric == HZ_METRIC_DOT:
            return -distance
        if self._cmetric == HZ_METRIC_EUCLIDEAN:
            return 1.0 / (1.0 + max(distance, 0.0) ** 0.5)
        return 1.0 - 2.0 * distance / self.dim

    # -- introspection ---------------------------------------------------------------------------

    def label_nodes(self, unsigned int label) -> list:
        """Live node ids of a label."""
        cdef uint32_t buf[64]
        cdef size_t n = hz_hnsw_label_nodes(self.g, label, buf, 64)
        if n <= 64:
            return [buf[i] for i in range(n)]
        big = np.empty(n, dtype=np.uint32)
        cdef uint32_t[::1] bv = big
        hz_hnsw_label_nodes(self.g, label, &bv[0], n)
        return big.tolist()

    def labels(self, unsigned long long as_of=LATEST):
        """The labels with a vector visible at `as_of`, ascending, as an `array('I')`."""
        cdef size_t n
        cdef size_t total = len(self) + 64  # tombstones visible at as_of, or a concurrent insert, add more
        cdef uint32_t[::1] view
        while True:
            out = array.array("I", bytes(4 * total))
            view = out
            with nogil:
                n = hz_hnsw_labels(self.g, as_of, &view[0], total)
            if n <= total:
                return out[:n]  # a copy: `out` cannot shrink while `view` holds its buffer
            total = n + 64

    def node_state(self, unsigned int node) -> str:
        """'live', 'tombstone' or 'free'."""
        return ("free", "live", "tombstone")[hz_hnsw_node_state(self.g, node)]

    def neighbours(self, unsigned int node, int level) -> object:
        """The neighbour ids of a node on a level, or None when the node has no such level."""
        cdef uint32_t buf[513]
        cdef int n = hz_hnsw_neighbours(self.g, node, level, buf, 513)
        if n < 0:
            return None
        return [buf[i] for i in range(n)]

    # -- persistence -----------------------------------------------------------------------------

    def encode(self, object vectors) -> bytes:
        """The stored form of one or several vectors, concatenated (f32 bytes, or sign bits)."""
        cdef const float[:, ::1] v = self._vectors(vectors)
        cdef size_t sb = hz_hnsw_stored_bytes(self.g)
        cdef Py_ssize_t i, n = v.shape[0]
        out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>(sb * n))
        cdef char *p = PyBytes_AS_STRING(out)
        for i in range(n):
            hz_hnsw_encode(self.g, &v[i, 0], p + i * sb)
        return out

    def decode(self, const uint8_t[::1] stored):
        """Vectors (float32 array, one row each) from their stored form; sign bits become +-1."""
        cdef size_t sb = hz_hnsw_stored_bytes(self.g)
        if stored.shape[0] % sb:
            raise ValueError("stored vectors have a partial vector")
        n = stored.shape[0] // sb
        if not self.binary_quantized:
            return np.frombuffer(bytes(stored), dtype=np.float32).reshape(n, self.dim).copy()
        bits = np.unpackbits(np.frombuffer(bytes(stored), dtype=np.uint8).reshape(n, sb), axis=1,
                             bitorder="little")[:, : self.dim]
        return np.where(bits == 1, np.float32(1.0), np.float32(-1.0)).astype(np.float32)

    def take_changes(self) -> tuple:
        """(freed node ids, dirty node ids) since the last call; apply freed first, then dirty."""
        cdef size_t nd = 0, nfr = 0, i
        cdef const uint32_t *d = hz_hnsw_dirty(self.g, &nd)
        cdef const uint32_t *fr = hz_hnsw_freed(self.g, &nfr)
        freed = [fr[i] for i in range(nfr)]
        dirty = [d[i] for i in range(nd)]
        hz_hnsw_clear_dirty(self.g)
        return freed, dirty

    def node_record(self, unsigned int node) -> object:
        """The persisted record of a node, or None for a free slot."""
        cdef size_t size = hz_hnsw_node_record_size(self.g, node)
        if size == 0:
            return None
        out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>size)
        if hz_hnsw_node_record(self.g, node, <uint8_t *>PyBytes_AS_STRING(out)) != 0:
            return None  # freed between the two calls (a concurrent mutation)
        return out

    def load_node(self, unsigned int node, const uint8_t[::1] record) -> None:
        cdef int rc
        cdef size_t n = record.shape[0]
        if n == 0:
            raise ValueError("HNSW graph: empty record")
        with nogil:
            rc = hz_hnsw_load_node(self.g, node, &record[0], n)
        _check(rc)

    def load_vectors(self, object nodes, const uint8_t[::1] stored) -> None:
        """Stored vectors (concatenated, stored form) of live loaded nodes."""
        cdef const uint32_t[::1] nv = np.ascontiguousarray(nodes, dtype=np.uint32)
        cdef size_t sb = hz_hnsw_stored_bytes(self.g)
        cdef Py_ssize_t i, n = nv.shape[0]
        cdef int rc = 0
        if <size_t>stored.shape[0] != sb * <size_t>n:
            raise ValueError("HNSW graph: stored vectors do not match their nodes")
        if n == 0:
            return
        with nogil:
            for i in range(n):
                rc = hz_hnsw_load_vector(self.g, nv[i], &stored[0] + i * sb)
                if rc:
                    break
        _check(rc)

    def finish_load(self, object entry) -> int:
        """Ends loading; returns the number of live nodes that had no vector (made tombstones)."""
        cdef uint32_t e = HZ_NONE if entry is None else <uint32_t>entry
        cdef long missing
        with nogil:
            missing = hz_hnsw_finish_load(self.g, e)
        if missing < 0:
            raise MemoryError("HNSW graph: out of memory")
        return missing
