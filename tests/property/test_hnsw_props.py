"""Hypothesis state machines: the native HNSW graph and the LMDB vector store against dict models.

Graph: random inserts (several vectors per label allowed), deletes, cleanups and record round trips;
every search returns only live labels, no label twice, min(k, matching labels) hits with or without a
filter, and the exact search agrees with a numpy scan of the model.

Store: transactions that commit or abort, each made of adds, updates and removes; after each, a reader
sees exactly the committed model (docids, vectors, exact and filtered search counts), whether the cache
was kept, settled or dropped.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from pyroaring import BitMap

from hanzo_engine._native.hnsw import HnswGraph
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.vector import VectorStore

DIM = 4
LABELS = st.integers(min_value=0, max_value=40)
VECTOR = st.lists(st.integers(min_value=-4, max_value=4), min_size=DIM, max_size=DIM).map(
    lambda v: np.asarray(v, dtype=np.float32)
)
SETTINGS = settings(
    max_examples=60, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def sq_dist(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    return float(((a - b) ** 2).sum())


class GraphMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.graph = HnswGraph(DIM, "euclidean", m=4, ef_construction=16, ef_search=8)
        self.model: dict[int, dict[int, np.ndarray[Any, Any]]] = {}  # label -> node -> vector

    @rule(label=LABELS, vector=VECTOR)
    def add(self, label: int, vector: np.ndarray[Any, Any]) -> None:
        node = self.graph.add(label, vector)
        assert self.graph.node_state(node) == "live"
        self.model.setdefault(label, {})[node] = vector

    @rule(label=LABELS)
    def delete(self, label: int) -> None:
        assert self.graph.delete(label) == len(self.model.pop(label, {}))

    @rule()
    def cleanup(self) -> None:
        before = self.graph.stats()
        assert self.graph.cleanup() == before["tombstones"]
        for node in range(before["slots"] + 8):
            for nb in self.graph.neighbours(node, 0) or []:
                assert self.graph.node_state(nb) == "live"

    @rule()
    def round_trip_records(self) -> None:
        """Reload the graph from its records and the live vectors (as the store does from LMDB)."""
        copy = HnswGraph(DIM, "euclidean", m=4, ef_construction=16, ef_search=8)
        stats = self.graph.stats()
        for node in range(stats["slots"] + 64):
            record = self.graph.node_record(node)
            if record is not None:
                copy.load_node(node, record)
        for nodes in self.model.values():
            for node, vector in nodes.items():
                copy.load_vectors([node], copy.encode(vector))
        assert copy.finish_load(stats["entry"]) == 0
        assert {k: copy.stats()[k] for k in ("live", "tombstones", "labels", "entry")} == {
            k: stats[k] for k in ("live", "tombstones", "labels", "entry")
        }
        self.graph = copy

    def _best(self, query: np.ndarray[Any, Any], label: int) -> float:
        return min(sq_dist(query, v) for v in self.model[label].values())

    @rule(
        query=VECTOR,
        k=st.integers(min_value=1, max_value=12),
        allowed=st.none() | st.sets(LABELS, max_size=15),
        exact=st.booleans(),
    )
    def search(self, query: np.ndarray[Any, Any], k: int, allowed: set[int] | None, exact: bool) -> None:
        hits = self.graph.search(query, k, filter=None if allowed is None else BitMap(allowed), exact=exact)
        labels = [label for label, _ in hits]
        matching = set(self.model) if allowed is None else set(self.model) & allowed
        assert len(labels) == len(set(labels)) == min(k, len(matching))
        assert set(labels) <= matching
        if exact:
            assert [d for _, d in hits] == sorted(self._best(query, label) for label in matching)[:k]
        for label, d in hits:  # a distance of one of the label's own vectors (its best, when exact)
            assert d in {sq_dist(query, v) for v in self.model[label].values()}

    @invariant()
    def counts(self) -> None:
        stats = self.graph.stats()
        assert stats["live"] == sum(len(nodes) for nodes in self.model.values())
        assert stats["labels"] == len(self.model)


class _Abort(Exception):
    pass


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="hz-vectors-"))
        self.index = Index(self.dir / "idx")
        self.store = VectorStore.of(self.index)
        self.store.CLEANUP_MIN = 2  # clean up often, so repaired graphs are exercised
        self.committed: dict[int, np.ndarray[Any, Any]] = {}

    def teardown(self) -> None:
        self.index.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(
        ops=st.lists(st.tuples(st.booleans(), LABELS, VECTOR), min_size=1, max_size=8), commit=st.booleans()
    )
    def transaction(self, ops: list[tuple[bool, int, np.ndarray[Any, Any]]], commit: bool) -> None:
        model = dict(self.committed)
        try:
            with self.index.write() as w:
                for is_add, docid, vector in ops:
                    if is_add:
                        self.store.add(w, "e", docid, vector)
                        model[docid] = vector
                    else:
                        assert self.store.remove(w, "e", docid) == (docid in model)
                        model.pop(docid, None)
                if not commit:
                    raise _Abort
        except _Abort:
            return
        self.committed = model

    @rule()
    def reopen(self) -> None:
        """A fresh Index object (as after a restart): everything is reloaded from LMDB."""
        self.index.close()
        self.index = Index(self.dir / "idx")
        self.store = VectorStore.of(self.index)
        self.store.CLEANUP_MIN = 2

    @precondition(lambda self: bool(self.committed))
    @rule(query=VECTOR, k=st.integers(min_value=1, max_value=10), allowed=st.sets(LABELS, max_size=12))
    def search(self, query: np.ndarray[Any, Any], k: int, allowed: set[int]) -> None:
        with self.index.read() as r:
            assert self.store.docids(r, "e") == BitMap(self.committed)
            for docid, v in self.committed.items():
                np.testing.assert_array_equal(self.store.get_vectors(r, "e", docid), v.reshape(1, -1))
            hits = self.store.search(r, "e", query, k)
            assert len(hits) == min(k, len(self.committed))
            assert {d for d, _ in hits} <= set(self.committed)
            exact = self.store.exact_search(r, "e", query, k)
            assert len(exact) == min(k, len(self.committed))
            if allowed:
                matching = set(self.committed) & allowed
                filtered = self.store.search(r, "e", query, k, BitMap(allowed))
                assert len(filtered) == min(k, len(matching))
                assert {d for d, _ in filtered} <= matching


TestGraph = GraphMachine.TestCase
TestGraph.settings = SETTINGS
TestStore = StoreMachine.TestCase
TestStore.settings = settings(
    max_examples=25, stateful_step_count=12, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
