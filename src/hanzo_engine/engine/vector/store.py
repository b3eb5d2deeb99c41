"""The vector store of an index: per embedder, the documents' vectors and their HNSW graph, kept in
the index's LMDB environment (database `vectors`) so they commit, or roll back, with the documents.

Keys of the `vectors` database (`E` = embedder id, u16 big-endian, from the registry; the constants
are in `engine/storage/keys.py`):

- `ff ff "embedders"`   registry JSON `{"next": n, "ids": {name: id}}`; an id is never reused, so a
                        dropped and re-created embedder never meets the old one's cache.
- `E 00`                meta JSON: the embedder's configuration (dimensions, distance, binaryQuantized,
                        m, efConstruction, efSearch), the level seed, the graph's entry point and the
                        version (bumped once by every write transaction that touches the embedder).
- `E 01 node`           HNSW node record (u32 BE node id; layout in csrc/hnsw.h): label = docid, level,
                        links; a tombstone also carries its vector, since its document's record is gone.
- `E 03 docid`          document record (u32 BE docid): u32 LE n, n u32 LE node ids, then the n vectors in
                        stored form: f32 little-endian, or sign bits when binaryQuantized (Meilisearch's
                        binary quantization keeps only the bits; reading them back gives +-1.0).

The graph lives in memory (`HnswGraph`, native) and is loaded from those records on first use. Every
mutation writes the node records it changed in the same write transaction, so the LMDB state is always
a complete graph. Versions keep the cache right without copying it:

- A write transaction that touches an embedder works at version P = committed + 1: nodes it adds are
  stamped "added at P", nodes it deletes "deleted at P". A reader whose transaction shows version V
  searches the same in-memory graph "as of V", so it sees neither the uncommitted additions nor the
  uncommitted deletions (MVCC, as LMDB's own readers).
- The store cannot hook commit or abort, so it learns the outcome later: the next transaction (read or
  write) that shows version P proves the commit; a new write transaction that still shows P - 1 proves
  the abort, and the cache is dropped and reloaded from LMDB.
- The write transaction itself, searching through its IndexWriter, sees its own changes.
- Operations that replace the graph (clear, reconfiguration) keep the previous graph for readers of
  older versions until the commit is seen.
- Which documents have vectors is read from the graph as of the reader's version (`docids`), so no
  bitmap is rewritten on every change; the bitmap of a committed version is cached per embedder.
- Keys starting with `ff ff` other than the registry belong to the embedding statuses (`status.py`).
- Deleted vectors are tombstones (still walked, never returned). When tombstones exceed
  `CLEANUP_RATIO` of the nodes, the next write transaction removes those deleted by committed versions
  and repairs their neighbours' links.

Search returns `(docid, similarity)` pairs, best first; similarity per distance: cosine -> cosine
similarity, dot -> dot product, euclidean -> 1 / (1 + distance), binary quantized -> the cosine of the
two sign vectors (1 - 2 * hamming / dimensions). A filter (a BitMap of docids) is applied during the
graph walk, and the search still returns min(k, matching documents with vectors) hits.
"""

from __future__ import annotations

import struct
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

import msgspec
import numpy as np
from pyroaring import BitMap

from hanzo_engine._native.hnsw import HnswGraph
from hanzo_engine.engine.storage.codecs import FID, U32
from hanzo_engine.engine.storage.keys import (
    DB_VECTORS,
    KEY_REGISTRY,
    MAX_EMBEDDER_ID,
    TAG_DOC,
    TAG_META,
    TAG_NODE,
)

if TYPE_CHECKING:
    from hanzo_engine.engine.index import Index, IndexReader, IndexWriter

DISTANCES: Final = ("cosine", "dot", "euclidean")

Vectors: TypeAlias = "Sequence[float] | Sequence[Sequence[float]] | np.ndarray[Any, Any]"

_EMB = FID  # embedder ids are u16 big-endian, as field ids
_U32LE = struct.Struct("<I")
_OF_LOCK = threading.Lock()


class EmbedderConfig(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """How an embedder's vectors are stored and searched."""

    dimensions: int
    distance: str = "cosine"
    binary_quantized: bool = False
    m: int = 16
    ef_construction: int = 200
    ef_search: int = 100

    def __post_init__(self) -> None:
        if self.dimensions < 1:
            raise ValueError("dimensions must be positive")
        if self.distance not in DISTANCES:
            raise ValueError(f"unknown distance {self.distance!r}; expected one of {DISTANCES}")
        if not 2 <= self.m <= 256 or self.ef_construction < 1 or self.ef_search < 1:
            raise ValueError("m must be in 2..256 and ef values positive")

    def graph_shape(self) -> tuple[int, str, bool, int, int]:
        """What the graph is built from; a change needs a rebuild (ef_search does not)."""
        return self.dimensions, self.distance, self.binary_quantized, self.m, self.ef_construction


class _Meta(msgspec.Struct, rename="camel"):
    config: EmbedderConfig
    seed: int = 0
    entry: int | None = None
    version: int = 0


_encode = msgspec.json.Encoder().encode
_decode_meta = msgspec.json.Decoder(_Meta).decode


@dataclass(eq=False)
class _Session:
    """The vector state of one write transaction, per embedder id."""

    writes: dict[int, _Write] = field(default_factory=dict)


@dataclass(eq=False)
class _Cache:
    emb_id: int
    graph: HnswGraph
    base: int  # committed version the graph was loaded at or settled to
    pending: int | None = None  # version a write transaction is producing in `graph`
    session: _Session | None = None
    previous: HnswGraph | None = None  # the graph the pending write replaced; serves versions <= base


@dataclass(eq=False)
class _Write:
    emb_id: int
    meta: _Meta
    cache: _Cache
    version: int
    meta_written: bytes = b""


def _prefix(emb_id: int, tag: bytes) -> bytes:
    return _EMB.pack(emb_id) + tag


def _new_graph(config: EmbedderConfig, seed: int) -> HnswGraph:
    return HnswGraph(
        config.dimensions,
        config.distance,
        m=config.m,
        ef_construction=config.ef_construction,
        ef_search=config.ef_search,
        binary_quantized=config.binary_quantized,
        seed=seed,
    )


def _same_shape(graph: HnswGraph, config: EmbedderConfig) -> bool:
    return (
        graph.dim,
        graph.metric,
        graph.binary_quantized,
        graph.m,
        graph.ef_construction,
    ) == config.graph_shape()


def as_matrix(vectors: Vectors) -> np.ndarray[Any, Any]:
    """One vector or a list of vectors as a C-contiguous float32 matrix (one row per vector)."""
    arr = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
    if arr.ndim == 1:
        arr = arr.reshape(1, -1) if arr.size else arr.reshape(0, 0)
    if arr.ndim != 2:
        raise ValueError("vectors must be one vector or a list of vectors")
    return arr


def _doc_record(nodes: np.ndarray[Any, Any], stored: bytes) -> bytes:
    return _U32LE.pack(len(nodes)) + np.asarray(nodes, dtype="<u4").tobytes() + stored


def _parse_doc(raw: bytes) -> tuple[np.ndarray[Any, Any], bytes]:
    n = _U32LE.unpack_from(raw)[0]
    nodes = np.frombuffer(raw, dtype="<u4", count=n, offset=4)
    return nodes, raw[4 + 4 * n :]


def decode_stored(config: EmbedderConfig, stored: bytes) -> np.ndarray[Any, Any]:
    """Vectors from their stored form: f32 rows, or sign bits as +-1.0 rows."""
    dim = config.dimensions
    if not config.binary_quantized:
        return np.frombuffer(stored, dtype="<f4").reshape(-1, dim).astype(np.float32)
    width = (dim + 7) // 8
    bits = np.unpackbits(np.frombuffer(stored, dtype=np.uint8).reshape(-1, width), axis=1, bitorder="little")
    return np.where(bits[:, :dim] == 1, np.float32(1.0), np.float32(-1.0))


class VectorStore:
    """The vectors of one index (one per `Index`, from `VectorStore.of`). Thread-safe."""

    CLEANUP_RATIO = 0.1
    CLEANUP_MIN = 16

    def __init__(self, index: Index) -> None:
        self.index = index
        self.db = index.db(DB_VECTORS)
        self._lock = threading.RLock()
        self._caches: dict[int, _Cache] = {}
        self._sessions: weakref.WeakKeyDictionary[IndexWriter, _Session] = weakref.WeakKeyDictionary()
        self._docids: dict[int, tuple[HnswGraph, int, BitMap]] = {}  # emb id -> (graph, version, docids)

    @classmethod
    def of(cls, index: Index) -> VectorStore:
        """The store of `index`, created on first use and kept on the Index object."""
        store: VectorStore | None = getattr(index, "_vector_store", None)
        if store is None:
            with _OF_LOCK:
                store = getattr(index, "_vector_store", None)
                if store is None:
                    store = cls(index)
                    index._vector_store = store  # type: ignore[attr-defined]
        return store

    # -- registry and meta ------------------------------------------------------------------------

    def _registry(self, txn: Any) -> dict[str, Any]:
        raw = txn.get(KEY_REGISTRY, db=self.db)
        if raw is None:
            return {"next": 0, "ids": {}}
        registry: dict[str, Any] = msgspec.json.decode(raw)
        return registry

    def _emb_id(self, txn: Any, name: str) -> int | None:
        emb_id = self._registry(txn)["ids"].get(name)
        return None if emb_id is None else int(emb_id)

    def _meta(self, txn: Any, emb_id: int) -> _Meta:
        raw = txn.get(_prefix(emb_id, TAG_META), db=self.db)
        if raw is None:
            raise KeyError(emb_id)
        return _decode_meta(raw)

    def embedders(self, reader: IndexReader) -> dict[str, EmbedderConfig]:
        """Every configured embedder and its configuration."""
        txn = reader.txn
        return {name: self._meta(txn, int(i)).config for name, i in self._registry(txn)["ids"].items()}

    def config(self, reader: IndexReader, embedder: str) -> EmbedderConfig | None:
        emb_id = self._emb_id(reader.txn, embedder)
        return None if emb_id is None else self._meta(reader.txn, emb_id).config

    # -- cache ------------------------------------------------------------------------------------

    def _load(self, txn: Any, emb_id: int, meta: _Meta) -> _Cache:
        """The embedder's graph as `txn` shows it: node records, then the live vectors."""
        graph = _new_graph(meta.config, meta.seed)
        node_prefix = _prefix(emb_id, TAG_NODE)
        doc_prefix = _prefix(emb_id, TAG_DOC)
        with txn.cursor(db=self.db) as cursor:
            if cursor.set_range(node_prefix):
                for key, value in cursor:
                    if not key.startswith(node_prefix):
                        break
                    graph.load_node(U32.unpack_from(key, 3)[0], value)
            if cursor.set_range(doc_prefix):
                for key, value in cursor:
                    if not key.startswith(doc_prefix):
                        break
                    nodes, stored = _parse_doc(value)
                    graph.load_vectors(nodes, stored)
        graph.finish_load(meta.entry)
        return _Cache(emb_id, graph, base=meta.version)

    @staticmethod
    def _settle(cache: _Cache) -> None:
        """The pending write committed: its version is now the base."""
        assert cache.pending is not None
        cache.base = cache.pending
        cache.pending = None
        cache.session = None
        cache.previous = None

    def _write_state(self, writer: IndexWriter, emb_id: int) -> _Write:
        """The embedder's state in this write transaction; on first use, settles or drops what the
        previous write left, bumps the version and cleans up old tombstones."""
        session = self._sessions.get(writer)
        if session is None:
            session = self._sessions[writer] = _Session()
        st = session.writes.get(emb_id)
        if st is not None:
            return st
        txn = writer.txn
        meta = self._meta(txn, emb_id)
        committed = meta.version
        with self._lock:
            cache = self._caches.get(emb_id)
            if cache is not None and cache.pending is not None:
                if cache.pending == committed:
                    self._settle(cache)
                else:
                    cache = None  # that write was aborted: its changes are only in memory
            if cache is None or cache.base != committed or not _same_shape(cache.graph, meta.config):
                cache = self._caches[emb_id] = self._load(txn, emb_id, meta)
            cache.pending = committed + 1
            cache.session = session
        meta.version = committed + 1
        st = _Write(emb_id, meta, cache, committed + 1)
        session.writes[emb_id] = st
        stats = cache.graph.stats()
        if stats["tombstones"] >= max(self.CLEANUP_MIN, self.CLEANUP_RATIO * stats["slots"]):
            cache.graph.cleanup(committed)
        self._persist(txn, st)
        return st

    def _persist(self, txn: Any, st: _Write) -> None:
        """Writes the node records the graph changed, and the meta when it changed."""
        graph = st.cache.graph
        freed, dirty = graph.take_changes()
        emb = _EMB.pack(st.emb_id)
        for node in freed:
            txn.delete(emb + TAG_NODE + U32.pack(node), db=self.db)
        for node in dirty:
            record = graph.node_record(node)
            if record is not None:
                txn.put(emb + TAG_NODE + U32.pack(node), record, db=self.db)
        st.meta.entry = graph.stats()["entry"]
        meta = _encode(st.meta)
        if meta != st.meta_written:
            txn.put(emb + TAG_META, meta, db=self.db)
            st.meta_written = meta

    def _replace_graph(self, st: _Write, graph: HnswGraph) -> None:
        """Swaps in a new graph; readers of committed versions keep the one they were using."""
        with self._lock:
            if st.cache.previous is None:
                st.cache.previous = st.cache.graph
            st.cache.graph = graph

    def _view(self, reader: IndexReader, embedder: str) -> tuple[HnswGraph, int, EmbedderConfig]:
        """The graph to search for this reader, the version to search it as of, and the config."""
        txn = reader.txn
        emb_id = self._emb_id(txn, embedder)
        if emb_id is None:
            raise KeyError(embedder)
        meta = self._meta(txn, emb_id)
        version = meta.version
        session = self._sessions.get(cast("IndexWriter", reader))
        with self._lock:
            cache = self._caches.get(emb_id)
            if cache is not None and session is not None and cache.session is session:
                graph = cache.graph  # the writing transaction itself: sees its own changes
            else:
                if cache is not None and cache.pending is not None and version == cache.pending:
                    self._settle(cache)
                if cache is None or version > cache.base:
                    cache = self._caches[emb_id] = self._load(txn, emb_id, meta)
                graph = cache.previous if cache.previous is not None else cache.graph
        if not _same_shape(graph, meta.config):
            graph = self._load(txn, emb_id, meta).graph  # an old reader across a rebuild: private copy
        return graph, version, meta.config

    # -- writes -----------------------------------------------------------------------------------

    def configure(self, writer: IndexWriter, embedder: str, config: EmbedderConfig) -> bool:
        """Creates or reconfigures an embedder; returns True when its graph had to be rebuilt.

        Changing distance, m, efConstruction or turning binary quantization on rebuilds the graph from
        the stored vectors (quantizing them for good). Changing dimensions while vectors exist, or
        turning binary quantization off, raises ValueError (the vectors cannot follow)."""
        txn = writer.txn
        registry = self._registry(txn)
        emb_id = registry["ids"].get(embedder)
        if emb_id is None:
            emb_id = int(registry["next"])
            if emb_id > MAX_EMBEDDER_ID:
                raise ValueError("too many embedders were created in this index")
            registry["ids"][embedder] = emb_id
            registry["next"] = emb_id + 1
            txn.put(KEY_REGISTRY, _encode(registry), db=self.db)
            txn.put(_prefix(emb_id, TAG_META), _encode(_Meta(config=config, seed=emb_id)), db=self.db)
            return False
        st = self._write_state(writer, int(emb_id))
        old = st.meta.config
        if old == config:
            return False
        if old.graph_shape() == config.graph_shape():
            st.meta.config = config
            st.cache.graph.ef_search = config.ef_search
            self._persist(txn, st)
            return False
        if len(st.cache.graph):
            if old.dimensions != config.dimensions:
                raise ValueError(
                    f"cannot change dimensions from {old.dimensions} to {config.dimensions} "
                    "while documents have vectors"
                )
            if old.binary_quantized and not config.binary_quantized:
                raise ValueError("binary quantization cannot be disabled once vectors are quantized")
        self._rebuild(txn, st, config)
        return True

    def _rebuild(self, txn: Any, st: _Write, config: EmbedderConfig) -> None:
        old_config = st.meta.config
        graph = _new_graph(config, st.meta.seed)
        self._delete_prefix(txn, _prefix(st.emb_id, TAG_NODE))
        emb = _EMB.pack(st.emb_id)
        for docid in st.cache.graph.labels():
            key = emb + TAG_DOC + U32.pack(docid)
            raw = txn.get(key, db=self.db)
            if raw is None:
                continue
            vectors = decode_stored(old_config, _parse_doc(raw)[1])
            nodes = graph.add_items(np.full(len(vectors), docid, dtype=np.uint32), vectors, st.version)
            txn.put(key, _doc_record(nodes, graph.encode(vectors)), db=self.db)
        graph.take_changes()  # every node is new: write them all below
        for node in range(graph.stats()["slots"]):
            record = graph.node_record(node)
            if record is not None:
                txn.put(emb + TAG_NODE + U32.pack(node), record, db=self.db)
        st.meta.config = config
        self._replace_graph(st, graph)
        self._persist(txn, st)

    def _delete_prefix(self, txn: Any, prefix: bytes) -> None:
        with txn.cursor(db=self.db) as cursor:
            if not cursor.set_range(prefix):
                return
            while cursor.key().startswith(prefix):
                if not cursor.delete():
                    break

    def _add(self, txn: Any, st: _Write, docid: int, arr: np.ndarray[Any, Any]) -> None:
        config = st.meta.config
        if arr.shape[1] != config.dimensions:
            raise ValueError(f"expected vectors of {config.dimensions} dimensions, got {arr.shape[1]}")
        if not np.isfinite(arr).all():
            raise ValueError("vectors must contain finite numbers only")
        graph = st.cache.graph
        graph.delete(docid, st.version)  # an update is a delete plus an insert
        nodes = graph.add_items(np.full(arr.shape[0], docid, dtype=np.uint32), arr, st.version)
        txn.put(
            _EMB.pack(st.emb_id) + TAG_DOC + U32.pack(docid),
            _doc_record(nodes, graph.encode(arr)),
            db=self.db,
        )

    def _remove(self, txn: Any, st: _Write, docid: int) -> bool:
        if not st.cache.graph.delete(docid, st.version):
            return False
        txn.delete(_EMB.pack(st.emb_id) + TAG_DOC + U32.pack(docid), db=self.db)
        return True

    def _state_for(self, writer: IndexWriter, embedder: str, dimensions: int) -> _Write:
        emb_id = self._emb_id(writer.txn, embedder)
        if emb_id is None:
            # an embedder nobody configured: userProvided-like, cosine, sized by its first vector
            self.configure(writer, embedder, EmbedderConfig(dimensions=max(dimensions, 1)))
            emb_id = self._emb_id(writer.txn, embedder)
            assert emb_id is not None
        return self._write_state(writer, emb_id)

    def add(self, writer: IndexWriter, embedder: str, docid: int, vectors: Vectors) -> None:
        """Sets the vectors of a document (one or several; none removes them), replacing old ones.

        An embedder not configured yet is created with cosine distance and the vectors' dimensions.
        ValueError on a dimension mismatch or a non-finite value (nothing is changed then)."""
        self.add_many(writer, embedder, [(docid, vectors)])

    def add_many(self, writer: IndexWriter, embedder: str, items: Iterable[tuple[int, Vectors]]) -> None:
        """`add` for many documents, writing the graph's changed records once at the end."""
        st: _Write | None = None
        try:
            for docid, vectors in items:
                arr = as_matrix(vectors)
                if arr.shape[0] == 0:  # no vectors: the document has none for this embedder
                    if st is None:
                        emb_id = self._emb_id(writer.txn, embedder)
                        if emb_id is None:
                            continue
                        st = self._write_state(writer, emb_id)
                    self._remove(writer.txn, st, docid)
                    continue
                if st is None:
                    st = self._state_for(writer, embedder, arr.shape[1])
                self._add(writer.txn, st, docid, arr)
        finally:
            if st is not None:
                self._persist(writer.txn, st)

    def remove(self, writer: IndexWriter, embedder: str, docid: int) -> bool:
        """Removes a document's vectors; False when it had none."""
        emb_id = self._emb_id(writer.txn, embedder)
        if emb_id is None:
            return False
        st = self._write_state(writer, emb_id)
        removed = self._remove(writer.txn, st, docid)
        if removed:
            self._persist(writer.txn, st)
        return removed

    def remove_document(self, writer: IndexWriter, docid: int) -> None:
        """Removes a document's vectors from every embedder (the document is deleted)."""
        for name in self._registry(writer.txn)["ids"]:
            self.remove(writer, name, docid)

    def clear(self, writer: IndexWriter, embedder: str | None = None) -> None:
        """Removes every vector of one embedder, or of all (clear documents); configurations stay."""
        ids = self._registry(writer.txn)["ids"]
        names = list(ids) if embedder is None else [embedder] if embedder in ids else []
        for name in names:
            st = self._write_state(writer, int(ids[name]))
            for tag in (TAG_NODE, TAG_DOC):
                self._delete_prefix(writer.txn, _prefix(st.emb_id, tag))
            self._replace_graph(st, _new_graph(st.meta.config, st.meta.seed))
            self._persist(writer.txn, st)

    def drop(self, writer: IndexWriter, embedder: str) -> bool:
        """Deletes an embedder: its configuration, vectors and graph. False when unknown."""
        txn = writer.txn
        registry = self._registry(txn)
        emb_id = registry["ids"].pop(embedder, None)
        if emb_id is None:
            return False
        st = self._write_state(writer, int(emb_id))
        self._replace_graph(st, _new_graph(st.meta.config, st.meta.seed))
        self._delete_prefix(txn, _EMB.pack(st.emb_id))
        txn.put(KEY_REGISTRY, _encode(registry), db=self.db)
        return True

    # -- reads ------------------------------------------------------------------------------------

    def docids(self, reader: IndexReader, embedder: str) -> BitMap:
        """The documents that have vectors for `embedder` (empty for an unknown embedder); read from
        the graph as of the reader's version."""
        emb_id = self._emb_id(reader.txn, embedder)
        if emb_id is None:
            return BitMap()
        graph, version, _ = self._view(reader, embedder)
        if self._sessions.get(cast("IndexWriter", reader)) is not None:
            return BitMap(graph.labels(version))  # a write transaction: its graph changes under it
        with self._lock:
            cached = self._docids.get(emb_id)
        if cached is None or cached[0] is not graph or cached[1] != version:
            cached = (graph, version, BitMap(graph.labels(version)))
            with self._lock:
                self._docids[emb_id] = cached
        return BitMap(cached[2])

    def embedding_stats(self, reader: IndexReader) -> tuple[int, int]:
        """(vectors stored over every embedder, documents having at least one), as Meilisearch's
        `numberOfEmbeddings` / `numberOfEmbeddedDocuments`; one scan of the document records."""
        txn = reader.txn
        vectors = 0
        documents = BitMap()
        for emb_id in self._registry(txn)["ids"].values():
            prefix = _prefix(int(emb_id), TAG_DOC)
            with txn.cursor(db=self.db) as cursor:
                if not cursor.set_range(prefix):
                    continue
                for raw_key, value in cursor:
                    key = bytes(raw_key)
                    if not key.startswith(prefix):
                        break
                    vectors += _U32LE.unpack_from(value)[0]
                    documents.add(U32.unpack_from(key, len(prefix))[0])
        return vectors, len(documents)

    def get_vectors(self, reader: IndexReader, embedder: str, docid: int) -> np.ndarray[Any, Any] | None:
        """A document's vectors (float32, one row each), or None when it has none."""
        emb_id = self._emb_id(reader.txn, embedder)
        if emb_id is None:
            return None
        raw = reader.txn.get(_prefix(emb_id, TAG_DOC) + U32.pack(docid), db=self.db)
        if raw is None:
            return None
        return decode_stored(self._meta(reader.txn, emb_id).config, _parse_doc(bytes(raw))[1])

    def search(
        self,
        reader: IndexReader,
        embedder: str,
        query_vector: Vectors,
        k: int,
        filter_docids: BitMap | None = None,
        *,
        ef: int | None = None,
    ) -> list[tuple[int, float]]:
        """The k documents nearest to the query as `(docid, similarity)`, best first.

        KeyError for an unknown embedder, ValueError for a query of the wrong dimensions."""
        return self._search(reader, embedder, query_vector, k, filter_docids, ef, exact=False)

    def exact_search(
        self,
        reader: IndexReader,
        embedder: str,
        query_vector: Vectors,
        k: int,
        filter_docids: BitMap | None = None,
    ) -> list[tuple[int, float]]:
        """`search` by exhaustive scan (the reference for recall measurements and tests)."""
        return self._search(reader, embedder, query_vector, k, filter_docids, None, exact=True)

    def _search(
        self,
        reader: IndexReader,
        embedder: str,
        query_vector: Vectors,
        k: int,
        filter_docids: BitMap | None,
        ef: int | None,
        *,
        exact: bool,
    ) -> list[tuple[int, float]]:
        graph, version, config = self._view(reader, embedder)
        query = as_matrix(query_vector)
        if query.shape != (1, config.dimensions):
            raise ValueError(f"expected a query vector of {config.dimensions} dimensions")
        if k <= 0 or (filter_docids is not None and not filter_docids):
            return []
        hits = graph.search(
            query,
            k,
            ef=ef if ef is not None else config.ef_search,
            filter=filter_docids,
            as_of=version,
            exact=exact,
        )
        return [(label, graph.similarity(distance)) for label, distance in hits]
