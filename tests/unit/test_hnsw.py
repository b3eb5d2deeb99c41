"""Native HNSW graph (`_native.hnsw`) and the LMDB-backed vector store (`engine.vector`).

References are computed with numpy over the same vectors: exact k-NN for recall, popcount for hamming.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pyroaring import BitMap

from hanzo_engine._native.hnsw import HnswGraph
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.vector import EmbedderConfig, VectorStore
from hanzo_engine.engine.vector.store import DB_VECTORS, TAG_NODE

Array = np.ndarray[Any, Any]


def random_data(n: int, dim: int, seed: int) -> Array:
    return np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)


def clustered_data(n: int, dim: int, seed: int, clusters: int = 20) -> Array:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(clusters, dim)) * 3
    return (centers[rng.integers(0, clusters, n)] + rng.normal(size=(n, dim))).astype(np.float32)


def exact_distances(metric: str, x: Array, q: Array) -> Array:
    """Distances as the graph defines them (hnsw.pyx docstring), one row per query."""
    if metric == "cosine":
        xn = x / np.linalg.norm(x, axis=1, keepdims=True)
        qn = q / np.linalg.norm(q, axis=1, keepdims=True)
        return np.asarray(1.0 - qn @ xn.T)
    if metric == "dot":
        return np.asarray(-(q @ x.T))
    return np.asarray(((q[:, None, :] - x[None, :, :]) ** 2).sum(-1))


def true_knn(metric: str, x: Array, q: Array, k: int, labels: Array | None = None) -> list[list[int]]:
    d = exact_distances(metric, x, q)
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    ids = np.arange(len(x)) if labels is None else labels
    return [[int(ids[j]) for j in row] for row in order]


def recall(graph: HnswGraph, queries: Array, truth: list[list[int]], k: int, ef: int) -> float:
    found = 0
    for q, t in zip(queries, truth, strict=True):
        found += len({label for label, _ in graph.search(q, k, ef=ef)} & set(t))
    return found / (k * len(queries))


def reachable(graph: HnswGraph) -> set[int]:
    """Nodes reachable from the entry point through level-0 links."""
    entry = graph.stats()["entry"]
    if entry is None:
        return set()
    seen = {entry}
    stack = [entry]
    while stack:
        for nb in graph.neighbours(stack.pop(), 0) or []:
            if nb not in seen:
                seen.add(nb)
                stack.append(nb)
    return seen


# -- graph: recall and exactness -------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
@pytest.mark.parametrize("data", ["random", "clustered"])
def test_recall_at_10_against_exact_search(metric: str, data: str) -> None:
    make = random_data if data == "random" else clustered_data
    x = make(3000, 24, seed=1)
    q = make(100, 24, seed=2)
    graph = HnswGraph(24, metric, m=16, ef_construction=200)
    graph.add_items(np.arange(len(x)), x)
    assert recall(graph, q, true_knn(metric, x, q, 10), 10, ef=128) >= 0.95


@pytest.mark.parametrize("metric", ["cosine", "dot", "euclidean"])
def test_exact_search_matches_numpy(metric: str) -> None:
    x = random_data(400, 8, seed=3)
    q = random_data(5, 8, seed=4)
    graph = HnswGraph(8, metric)
    graph.add_items(np.arange(400), x)
    d = exact_distances(metric, x, q)
    for i in range(len(q)):
        hits = graph.search(q[i], 7, exact=True)
        expected = np.sort(d[i])[:7]
        np.testing.assert_allclose([dist for _, dist in hits], expected, rtol=1e-4, atol=1e-4)
        for label, dist in hits:
            assert d[i, label] == pytest.approx(dist, rel=1e-4, abs=1e-4)


def test_similarity_per_metric() -> None:
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 2.0], dtype=np.float32)
    cos = HnswGraph(2, "cosine")
    cos.add(1, b)
    ((label, dist),) = cos.search(a, 1)
    assert label == 1 and cos.similarity(dist) == pytest.approx(0.0, abs=1e-6)
    dot = HnswGraph(2, "dot")
    dot.add(1, b)
    assert dot.similarity(dot.search(np.array([0.0, 3.0]), 1)[0][1]) == pytest.approx(6.0)
    euc = HnswGraph(2, "euclidean")
    euc.add(1, b)
    assert euc.similarity(euc.search(np.array([0.0, 5.0]), 1)[0][1]) == pytest.approx(1 / (1 + 3.0))


def test_binary_quantization_uses_sign_bits_and_hamming() -> None:
    x = random_data(300, 70, seed=5)
    q = random_data(3, 70, seed=6)
    graph = HnswGraph(70, "cosine", binary_quantized=True)
    graph.add_items(np.arange(300), x)
    assert graph.stored_bytes == 9
    bits = np.packbits(x > 0, axis=1, bitorder="little")
    assert graph.encode(x) == bits.tobytes()
    qbits = np.packbits(q > 0, axis=1, bitorder="little")
    for i in range(3):
        ham = np.unpackbits(bits ^ qbits[i], axis=1).sum(axis=1)
        hits = graph.search(q[i], 10, exact=True)
        assert [d for _, d in hits] == sorted(ham)[:10]
        for label, d in hits:
            assert d == ham[label]
            assert graph.similarity(d) == pytest.approx(1 - 2 * ham[label] / 70)
    decoded = graph.decode(graph.encode(x[:2]))
    np.testing.assert_array_equal(decoded, np.where(x[:2] > 0, 1.0, -1.0))


# -- graph: deletes, updates, labels ---------------------------------------------------------------


def test_deleted_labels_are_never_returned_and_cleanup_repairs_the_graph() -> None:
    x = clustered_data(2000, 16, seed=7)
    q = clustered_data(50, 16, seed=8)
    graph = HnswGraph(16, "euclidean")
    graph.add_items(np.arange(2000), x)
    deleted = set(range(0, 2000, 3))
    for label in deleted:
        assert graph.delete(label) == 1
    assert graph.delete(0) == 0  # already deleted
    stats = graph.stats()
    assert (stats["live"], stats["tombstones"], stats["labels"]) == (
        2000 - len(deleted),
        len(deleted),
        2000 - len(deleted),
    )
    live = np.array(sorted(set(range(2000)) - deleted))
    truth = true_knn("euclidean", x[live], q, 10, labels=live)
    for qq in q:
        assert not {label for label, _ in graph.search(qq, 10)} & deleted
    assert recall(graph, q, truth, 10, ef=64) >= 0.95

    assert graph.cleanup() == len(deleted)
    stats = graph.stats()
    assert (stats["tombstones"], stats["slots"]) == (0, len(live))
    for node in range(2000):
        state = graph.node_state(node)
        assert state == ("free" if node in deleted else "live")  # labels were inserted as node ids
        for nb in graph.neighbours(node, 0) or []:
            assert graph.node_state(nb) == "live"
    assert reachable(graph) == set(live.tolist())
    assert recall(graph, q, truth, 10, ef=64) >= 0.95
    # freed slots are reused before the graph grows
    node = graph.add(5000, x[0])
    assert node in deleted


def test_update_is_delete_then_insert() -> None:
    x = random_data(200, 8, seed=9)
    graph = HnswGraph(8, "euclidean")
    graph.add_items(np.arange(200), x)
    target = x[17] + 100  # far from everything
    graph.delete(5)
    graph.add(5, target)
    assert graph.search(target, 1)[0] == (5, pytest.approx(0.0, abs=1e-3))
    assert all(label != 5 for label, _ in graph.search(x[5], 5))
    assert len(graph.label_nodes(5)) == 1


def test_a_label_with_several_vectors_is_returned_once_at_its_best_distance() -> None:
    x = random_data(300, 8, seed=10)
    graph = HnswGraph(8, "euclidean")
    graph.add_items(np.arange(300) % 100, x)  # 100 labels, 3 vectors each
    assert graph.stats()["labels"] == 100
    q = random_data(10, 8, seed=11)
    d = exact_distances("euclidean", x, q)
    for i, qq in enumerate(q):
        best = {label: d[i, np.arange(300) % 100 == label].min() for label in range(100)}
        expected = sorted(best.items(), key=lambda kv: kv[1])[:10]
        for exact in (True, False):
            hits = graph.search(qq, 10, ef=200, exact=exact)
            assert len({label for label, _ in hits}) == len(hits) == 10
            if exact:
                assert [label for label, _ in hits] == [label for label, _ in expected]
            for label, dist in hits:
                assert dist == pytest.approx(best[label], rel=1e-4)
    assert graph.delete(7) == 3
    assert len(graph) == 297


def test_versions_hide_later_additions_and_keep_later_deletions() -> None:
    graph = HnswGraph(2, "euclidean")
    graph.add(1, [0.0, 0.0], version=1)
    graph.add(2, [1.0, 0.0], version=2)
    graph.delete(1, version=3)
    query = np.array([0.0, 0.0], dtype=np.float32)

    def labels(as_of: int) -> list[int]:
        return [label for label, _ in graph.search(query, 5, as_of=as_of)]

    assert labels(0) == []
    assert labels(1) == [1]
    assert labels(2) == [1, 2]
    assert labels(3) == [2]
    assert graph.search(query, 5) == [(2, 1.0)]
    assert [list(graph.labels(v)) for v in (0, 1, 2, 3)] == [[], [1], [1, 2], [2]]
    assert graph.cleanup(max_version=2) == 0  # deleted at 3: kept for readers of version 2
    assert graph.cleanup(max_version=3) == 1


# -- graph: filtered search ------------------------------------------------------------------------


@pytest.mark.parametrize("brute_factor", [0.0, 1.0, float("inf")])
@pytest.mark.parametrize("matching", [1, 5, 40, 600, 2500])
def test_filtered_search_returns_min_k_matching_hits(brute_factor: float, matching: int) -> None:
    x = clustered_data(3000, 16, seed=12)
    q = clustered_data(20, 16, seed=13)
    graph = HnswGraph(16, "cosine")
    graph.brute_factor = brute_factor  # 0: always the graph walk; inf: always the exact scan
    graph.add_items(np.arange(3000), x)
    allowed = np.sort(np.random.default_rng(matching).choice(3000, matching, replace=False)).astype(np.uint32)
    truth = true_knn("cosine", x[allowed], q, 10, labels=allowed)
    found = 0
    for i, qq in enumerate(q):
        for f in (BitMap(allowed.tolist()), allowed, allowed.tolist()[::-1]):
            hits = graph.search(qq, 10, ef=64, filter=f)
            labels = [label for label, _ in hits]
            assert len(labels) == min(10, matching) == len(set(labels))
            assert set(labels) <= set(allowed.tolist())
        found += len(set(labels) & set(truth[i]))
    assert found / (len(q) * min(10, matching)) >= 0.95


def test_filter_on_labels_without_vectors_or_empty() -> None:
    graph = HnswGraph(4, "cosine")
    graph.add_items(np.arange(10), random_data(10, 4, seed=14))
    assert graph.search(np.ones(4), 5, filter=BitMap()) == []
    assert graph.search(np.ones(4), 5, filter=[100, 200]) == []
    assert [label for label, _ in graph.search(np.ones(4), 5, filter=[3, 100])] == [3]


def test_empty_graph_zero_k_and_bad_input() -> None:
    graph = HnswGraph(4, "cosine")
    assert graph.search(np.ones(4), 10) == []
    graph.add(1, np.ones(4))
    assert graph.search(np.ones(4), 0) == []
    with pytest.raises(ValueError):
        graph.search(np.ones(5), 1)
    with pytest.raises(ValueError):
        graph.add(2, np.ones(3))
    with pytest.raises(ValueError):
        HnswGraph(4, "manhattan")
    with pytest.raises(ValueError):
        HnswGraph(0)


# -- graph: persistence ----------------------------------------------------------------------------


def copy_through_records(graph: HnswGraph, x: Array, labels: Array) -> HnswGraph:
    """A new graph loaded from `graph`'s node records and the live nodes' vectors."""
    copy = HnswGraph(graph.dim, graph.metric, m=graph.m, ef_construction=graph.ef_construction)
    for node in range(graph.stats()["slots"] + 64):
        record = graph.node_record(node)
        if record is not None:
            copy.load_node(node, record)
    for i, label in enumerate(labels):
        nodes = graph.label_nodes(int(label))
        if i in nodes:
            copy.load_vectors([i], graph.encode(x[i]))
    assert copy.finish_load(graph.stats()["entry"]) == 0
    return copy


def test_records_round_trip_to_an_identical_graph() -> None:
    x = clustered_data(1500, 12, seed=15)
    labels = np.arange(1500)
    graph = HnswGraph(12, "cosine", seed=3)
    graph.add_items(labels, x)
    for label in range(0, 1500, 7):
        graph.delete(label)  # tombstones carry their vector in the record
    copy = copy_through_records(graph, x, labels)
    s1, s2 = graph.stats(), copy.stats()
    assert {k: s1[k] for k in ("slots", "live", "tombstones", "labels", "entry", "max_level")} == {
        k: s2[k] for k in ("slots", "live", "tombstones", "labels", "entry", "max_level")
    }
    for qq in clustered_data(30, 12, seed=16):
        a = graph.search(qq, 10, ef=40)
        b = copy.search(qq, 10, ef=40)
        assert [label for label, _ in a] == [label for label, _ in b]
        np.testing.assert_allclose([d for _, d in a], [d for _, d in b], rtol=1e-5, atol=1e-6)
    assert graph.cleanup() == copy.cleanup()


def test_dirty_and_freed_nodes_are_reported() -> None:
    graph = HnswGraph(4, "euclidean")
    graph.add_items(np.arange(50), random_data(50, 4, seed=17))
    freed, dirty = graph.take_changes()
    assert freed == [] and set(dirty) == set(range(50))
    assert graph.take_changes() == ([], [])
    graph.delete(3)
    freed, dirty = graph.take_changes()
    assert freed == [] and 3 in dirty
    graph.cleanup()
    freed, dirty = graph.take_changes()
    assert freed == [3] and 3 not in [n for n in dirty if graph.node_state(n) != "free"]


def test_malformed_records_are_rejected() -> None:
    graph = HnswGraph(4, "euclidean")
    with pytest.raises(ValueError):
        graph.load_node(0, b"\x00" * 3)
    with pytest.raises(ValueError):
        graph.load_node(0, b"\x01\x00\x00\x00\x00\x00\x00\x00" + (200).to_bytes(4, "little"))
    graph.load_node(0, b"\x01\x00\x00\x00\x00\x00\x00\x00" + (0).to_bytes(4, "little"))
    with pytest.raises(ValueError):  # slot already loaded
        graph.load_node(0, b"\x01\x00\x00\x00\x00\x00\x00\x00" + (0).to_bytes(4, "little"))
    with pytest.raises(ValueError):
        graph.load_vectors([0], b"\x00" * 3)
    assert graph.finish_load(0) == 1  # the node got no vector: kept as a tombstone
    assert graph.search(np.ones(4), 3) == []


def test_searches_run_while_vectors_are_inserted() -> None:
    x = random_data(4000, 16, seed=18)
    graph = HnswGraph(16, "cosine")
    graph.add_items(np.arange(1000), x[:1000])
    errors: list[BaseException] = []
    stop = threading.Event()

    def searcher() -> None:
        try:
            while not stop.is_set():
                for label, _ in graph.search(x[0], 10):
                    assert 0 <= label < 4000
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=searcher) for _ in range(2)]
    for t in threads:
        t.start()
    graph.add_items(np.arange(1000, 4000), x[1000:])
    stop.set()
    for t in threads:
        t.join()
    assert not errors
    assert len(graph) == 4000


# -- vector store over LMDB ------------------------------------------------------------------------


@pytest.fixture
def index(tmp_path: Path) -> Any:
    idx = Index(tmp_path / "idx")
    yield idx
    idx.close()


def labels_of(hits: list[tuple[int, float]]) -> list[int]:
    return [docid for docid, _ in hits]


def test_store_commits_with_the_transaction_and_reloads(index: Index, tmp_path: Path) -> None:
    x = clustered_data(600, 16, seed=20)
    store = VectorStore.of(index)
    assert VectorStore.of(index) is store
    with index.write() as w:
        store.configure(w, "default", EmbedderConfig(dimensions=16))
        store.add_many(w, "default", [(i, x[i]) for i in range(600)])
        store.add(w, "default", 1000, [x[0] + 1, x[1] + 1])  # several vectors for one document
    with index.read() as r:
        assert store.docids(r, "default") == BitMap([*range(600), 1000])
        first = [store.search(r, "default", x[i], 5) for i in range(0, 600, 50)]
        assert all(hits[0] == (i * 50, pytest.approx(1.0, abs=1e-5)) for i, hits in enumerate(first))
        np.testing.assert_array_equal(store.get_vectors(r, "default", 1000), np.stack([x[0] + 1, x[1] + 1]))
        assert store.get_vectors(r, "default", 2000) is None
        assert store.embedders(r) == {"default": EmbedderConfig(dimensions=16)}
    index.close()
    reopened = Index(tmp_path / "idx")
    try:
        fresh = VectorStore.of(reopened)
        with reopened.read() as r:
            assert [fresh.search(r, "default", x[i], 5) for i in range(0, 600, 50)] == first
            truth = true_knn("cosine", x, x[10:11], 3)[0]
            assert labels_of(fresh.exact_search(r, "default", x[10], 3)) == truth
    finally:
        reopened.close()


def test_store_readers_see_their_committed_version(index: Index) -> None:
    x = random_data(100, 8, seed=21)
    store = VectorStore.of(index)
    with index.write() as w:
        store.add_many(w, "e", [(i, x[i]) for i in range(50)])
    with index.read() as before:
        with index.write() as w:
            store.remove(w, "e", 3)
            store.add(w, "e", 60, x[60])
            store.add(w, "e", 4, x[4] + 5)  # update
            with index.read() as during:
                assert 3 in labels_of(store.search(during, "e", x[3], 3))
                assert 60 not in labels_of(store.search(during, "e", x[60], 50))
                assert store.search(during, "e", x[4], 1)[0][0] == 4
            assert 3 not in labels_of(store.search(w, "e", x[3], 3))  # the writer sees its own changes
        assert 3 in labels_of(store.search(before, "e", x[3], 3))
        assert 60 not in labels_of(store.search(before, "e", x[60], 60))
    with index.read() as after:
        assert 3 not in labels_of(store.search(after, "e", x[3], 60))
        assert store.search(after, "e", x[60], 1)[0][0] == 60
        assert store.search(after, "e", x[4] + 5, 1)[0][0] == 4


def test_store_abort_rolls_back_the_graph(index: Index, tmp_path: Path) -> None:
    x = random_data(100, 8, seed=22)
    store = VectorStore.of(index)
    with index.write() as w:
        store.add_many(w, "e", [(i, x[i]) for i in range(40)])
    with pytest.raises(RuntimeError), index.write() as w:
        store.add(w, "e", 70, x[70])
        store.remove(w, "e", 1)
        raise RuntimeError("task failed")
    with index.read() as r:
        assert store.docids(r, "e") == BitMap(range(40))
        assert 70 not in labels_of(store.search(r, "e", x[70], 40))
        assert 1 in labels_of(store.search(r, "e", x[1], 1))
    with index.write() as w:  # the next write drops the aborted in-memory state
        store.add(w, "e", 80, x[80])
    with index.read() as r:
        hits = store.search(r, "e", x[80], 45)
        assert sorted(labels_of(hits)) == [*range(40), 80]


def test_store_update_remove_clear_and_drop(index: Index) -> None:
    x = random_data(50, 4, seed=23)
    store = VectorStore.of(index)
    with index.write() as w:
        store.add_many(w, "a", [(i, x[i]) for i in range(20)])
        store.add_many(w, "b", [(i, x[i]) for i in range(10)])
        assert store.remove(w, "a", 19) and not store.remove(w, "a", 19)
        assert not store.remove(w, "nope", 1)
        store.add(w, "a", 5, [])  # no vectors any more
        store.remove_document(w, 0)
    with index.read() as r:
        assert store.docids(r, "a") == BitMap(range(1, 19)) - BitMap([5])
        assert store.docids(r, "b") == BitMap(range(1, 10))
    with index.write() as w:
        store.clear(w, "a")
    with index.read() as r:
        assert store.docids(r, "a") == BitMap() and store.search(r, "a", x[0], 5) == []
        assert len(store.search(r, "b", x[0], 5)) == 5
    with index.write() as w:
        assert store.drop(w, "b") and not store.drop(w, "b")
        store.clear(w)
    with index.read() as r:
        assert set(store.embedders(r)) == {"a"}
        with pytest.raises(KeyError):
            store.search(r, "b", x[0], 5)
        assert store.docids(r, "b") == BitMap()
        keys = [bytes(k) for k, _ in r.txn.cursor(db=index.db(DB_VECTORS))]
        assert not [k for k in keys if k[2:3] == TAG_NODE]


def test_store_rejects_bad_vectors_without_changes(index: Index) -> None:
    store = VectorStore.of(index)
    with index.write() as w:
        store.add(w, "e", 1, [1.0, 2.0, 3.0])
        with pytest.raises(ValueError):
            store.add(w, "e", 2, [1.0, 2.0])
        with pytest.raises(ValueError):
            store.add(w, "e", 3, [1.0, float("nan"), 0.0])
    with index.read() as r:
        assert store.docids(r, "e") == BitMap([1])
        with pytest.raises(ValueError):
            store.search(r, "e", [1.0, 2.0], 1)


def test_store_reconfiguration_rebuilds(index: Index) -> None:
    x = clustered_data(300, 16, seed=24)
    store = VectorStore.of(index)
    with index.write() as w:
        store.configure(w, "e", EmbedderConfig(dimensions=16))
        store.add_many(w, "e", [(i, x[i]) for i in range(300)])
        assert not store.configure(w, "e", EmbedderConfig(dimensions=16, ef_search=50))
    with index.read() as r:
        cos = store.exact_search(r, "e", x[0], 5)
    with index.write() as w:
        assert store.configure(w, "e", EmbedderConfig(dimensions=16, distance="euclidean"))
        with pytest.raises(ValueError):
            store.configure(w, "e", EmbedderConfig(dimensions=8, distance="euclidean"))
    with index.read() as r:
        truth = true_knn("euclidean", x, x[:1], 5)[0]
        assert labels_of(store.exact_search(r, "e", x[0], 5)) == truth
        assert store.search(r, "e", x[0], 1)[0] == (0, pytest.approx(1.0))
        assert labels_of(cos)[0] == 0
    with index.write() as w:
        assert store.configure(w, "e", EmbedderConfig(dimensions=16, binary_quantized=True))
        with pytest.raises(ValueError):
            store.configure(w, "e", EmbedderConfig(dimensions=16))
    with index.read() as r:
        np.testing.assert_array_equal(store.get_vectors(r, "e", 7), np.where(x[7:8] > 0, 1.0, -1.0))
        assert store.search(r, "e", x[7], 1)[0][1] == pytest.approx(1.0)
        assert store.config(r, "e") == EmbedderConfig(dimensions=16, binary_quantized=True)


def test_store_cleans_up_tombstones_in_a_later_transaction(index: Index) -> None:
    x = clustered_data(400, 8, seed=25)
    store = VectorStore.of(index)
    with index.write() as w:
        store.add_many(w, "e", [(i, x[i]) for i in range(400)])
    with index.write() as w:
        for i in range(0, 400, 2):
            store.remove(w, "e", i)

    def node_keys() -> int:
        with index.read() as r:
            return sum(1 for k, _ in r.txn.cursor(db=index.db(DB_VECTORS)) if bytes(k)[2:3] == TAG_NODE)

    assert node_keys() == 400  # tombstones are kept until a later transaction
    with index.write() as w:
        store.add(w, "e", 1000, x[0])
    assert node_keys() == 201
    with index.read() as r:
        live = np.arange(1, 400, 2)
        truth = true_knn("cosine", x[live], x[:20], 10, labels=live)
        got = [set(labels_of(store.search(r, "e", x[i], 10))) - {1000} for i in range(20)]
        assert sum(len(g & set(t)) for g, t in zip(got, truth, strict=True)) >= 0.95 * 20 * 9


def test_store_filtered_search_returns_enough_hits(index: Index) -> None:
    x = clustered_data(2000, 16, seed=26)
    store = VectorStore.of(index)
    with index.write() as w:
        store.add_many(w, "e", [(i, x[i]) for i in range(2000)])
    with index.read() as r:
        for size in (3, 30, 300, 1500):
            allowed = BitMap(np.random.default_rng(size).choice(3000, size, replace=False).tolist())
            matching = len(allowed & store.docids(r, "e"))
            hits = store.search(r, "e", x[0], 20, allowed)
            assert len(hits) == min(20, matching)
            assert set(labels_of(hits)) <= set(allowed)
        assert store.search(r, "e", x[0], 20, BitMap()) == []
