"""Property tests of the embedding statuses (engine/vector/status.py) behind the `_vectors` filters.

Random sequences of document additions (replace and update, every `_vectors` form), deletions,
clears and embedder changes run through the real indexing pipeline (`prepare_documents`,
`put_document`, `write_vectors`, `reindex_for_settings`), each in its own write transaction (a failing
task aborts its transaction). After each step:

- `skip_regenerate` equals its rebuild from the stored documents (`derive_skip_regenerate`);
- `user_provided` equals a reference model of Meilisearch's transitions (the module docstring of
  `status.py`), which the stored documents cannot tell on their own;
- the documents with vectors are those the model gives vectors, and the `_vectors` filters evaluated
  through `FilterContext` in a read transaction answer the same sets;
- rebuilding the statuses as for an index written before they existed (`derive_from_documents`, run
  by a `StatusWriter` that finds no marker) gives the same `skip_regenerate` and a superset of
  `user_provided`, equal to it when documents only ever sent embeddings with `regenerate: false`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import Index, IndexReader
from hanzo_engine.engine.search.filter import FilterContext
from hanzo_engine.engine.update.settings_hook import reindex_for_settings
from hanzo_engine.engine.vector.documents import parse_entry, prepare_documents, write_vectors
from hanzo_engine.engine.vector.status import (
    KEY_STATUS_MARKER,
    STATUS_PREFIX,
    StatusWriter,
    derive_from_documents,
    derive_skip_regenerate,
    read_status,
)
from hanzo_engine.engine.vector.store import DB_VECTORS, VectorStore
from hanzo_engine.filter_parser import parse_filter

DIMS = {"a": 2, "b": 3}
IDS = [0, 1, 2]

State = dict[str, tuple[bool, bool, bool]]  # embedder -> (user_provided, regenerate, has vectors)
ABSENT = (False, True, False)  # a document without an entry for an embedder (created after it)


def vector(name: str) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(-3, 3), min_size=DIMS[name], max_size=DIMS[name]).filter(any)


def entry(name: str, *, simple: bool) -> st.SearchStrategy[Any]:
    """A `_vectors.<name>` value; `simple`: only forms that send embeddings with `regenerate: false`."""
    embeddings = st.one_of(vector(name), st.lists(vector(name), max_size=2))
    forms = [
        st.none(),
        embeddings,
        st.fixed_dictionaries({"embeddings": embeddings, "regenerate": st.just(False)}),
    ]
    if not simple:
        forms += [
            st.fixed_dictionaries({"embeddings": embeddings, "regenerate": st.booleans()}),
            st.fixed_dictionaries({"regenerate": st.booleans()}),
        ]
    return st.one_of(*forms)


def document(simple: bool) -> st.SearchStrategy[dict[str, Any]]:
    every = st.fixed_dictionaries({n: entry(n, simple=simple) for n in DIMS})
    some = st.fixed_dictionaries({}, optional={n: entry(n, simple=simple) for n in DIMS})
    return st.one_of(
        st.fixed_dictionaries({"id": st.sampled_from(IDS), "_vectors": st.one_of(every, some)}),
        st.fixed_dictionaries({"id": st.sampled_from(IDS)}, optional={"title": st.sampled_from(["x", "y"])}),
    )


def operations(simple: bool) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    op = st.one_of(
        # one task names a document once (the pipeline prepares every document against the state
        # before the task)
        st.tuples(
            st.just("add"),
            st.lists(document(simple), min_size=1, max_size=3, unique_by=lambda d: d["id"]),
            st.booleans(),
        ),
        st.tuples(st.just("delete"), st.lists(st.sampled_from(IDS), min_size=1, max_size=2)),
        st.tuples(st.just("clear")),
        st.tuples(st.just("embedders"), st.sets(st.sampled_from(sorted(DIMS)))),
    )
    return st.lists(op, min_size=1, max_size=10)


@contextmanager
def fresh_index() -> Iterator[Index]:
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.create(Path(tmp) / "idx", primary_key="id", created_at=0)
        try:
            yield index
        finally:
            index.close()


def set_embedders(index: Index, names: set[str]) -> None:
    with index.write() as w:
        old = complete_settings(w.settings())
        new = {
            **old,
            "embedders": {n: {"source": "userProvided", "dimensions": DIMS[n]} for n in sorted(names)},
        }
        reindex_for_settings(w, old, new)
        w.set_settings(new)


def add(index: Index, docs: list[dict[str, Any]], merge: bool) -> None:
    with index.write() as w:
        ids = [str(d["id"]) for d in docs]
        prepared = prepare_documents(w, "idx", w.settings(), zip(ids, docs, strict=True), merge=merge)
        for ext_id, doc, vectors in prepared:
            w.put_document(ext_id, doc, merge=merge)
            write_vectors(w, ext_id, vectors)


# -- the reference model ----------------------------------------------------------------------------


class Model:
    """Mirrors what the engine stores: every document's `_vectors` object (`entries`, raw for the
    embedders that are not configured, normalized by the writes of configured ones) and, per configured
    embedder, the (user_provided, regenerate, has vectors) state the transitions of `status.py` give."""

    def __init__(self) -> None:
        self.configured: set[str] = set()
        self.entries: dict[int, dict[str, Any]] = {}
        self.state: dict[int, State] = {}

    @property
    def docs(self) -> dict[int, State]:
        return self.state

    @staticmethod
    def filled(value: Any) -> tuple[bool, bool, bool]:
        """The state of an entry a document carried when its embedder was created."""
        embeddings, regenerate = parse_entry("e", value)
        if embeddings is not None:
            return True, regenerate, bool(embeddings)
        return False, regenerate, False

    def add(self, docs: list[dict[str, Any]], merge: bool) -> bool:
        """Applies a documents task; False when the engine must refuse it (nothing changes then)."""
        entries_after = {k: dict(v) for k, v in self.entries.items()}
        state_after = {k: dict(v) for k, v in self.state.items()}
        for doc in docs:
            i = doc["id"]
            sent = doc.get("_vectors") or {}
            exists = i in entries_after
            old_entries = entries_after.get(i, {}) if exists else {}
            old_state = state_after.get(i, {}) if exists else {}
            if not self.configured:  # no embedder: `_vectors` is a plain field
                keep = merge and exists and "_vectors" not in doc
                entries_after[i], state_after[i] = (old_entries if keep else dict(sent)), {}
                continue
            merged = {**old_entries, **sent} if merge else dict(sent)
            new: State = {}
            for name in sorted(self.configured):
                up, regen, has = old_state.get(name, ABSENT)
                if name in sent:
                    embeddings, regenerate = parse_entry(name, sent[name])
                    if embeddings is None:  # `{regenerate}` alone: the old vectors stay
                        prev = old_entries.get(name)
                        embeddings = (parse_entry(name, prev)[0] if prev is not None else None) or []
                        new[name] = (False, True, has) if regenerate else (up, False, has)
                    else:
                        new[name] = (True, regenerate, bool(embeddings))
                    merged[name] = {"embeddings": embeddings, "regenerate": regenerate}
                elif merge and name in old_entries:
                    kept_regenerate = parse_entry(name, old_entries[name])[1]
                    new[name] = (False, True, has) if kept_regenerate else (up, regen, has)
                else:
                    return False  # a userProvided embedder without vectors: the task fails
            entries_after[i], state_after[i] = merged, new
        self.entries, self.state = entries_after, state_after
        return True

    def delete(self, ids: list[int]) -> None:
        for i in ids:
            self.entries.pop(i, None)
            self.state.pop(i, None)

    def set_embedders(self, names: set[str]) -> None:
        for name in self.configured - names:  # removed: the entries stay in the documents
            for state in self.state.values():
                state.pop(name, None)
        for name in names - self.configured:  # created: filled from the documents' entries
            for i, entries in self.entries.items():
                if name in entries:
                    self.state[i][name] = self.filled(entries[name])
        self.configured = set(names)


def check(index: Index, model: Model, *, exact_user_provided: bool) -> None:
    with index.read() as r:
        docids = {i: r.internal_id(str(i)) for i in model.docs}
        assert set(docids) == {int(d["id"]) for d in r.iter_documents()}
        stored = [(docid, msgspec.json.decode(raw)) for docid, raw in r.iter_raw_documents()]
        skip = derive_skip_regenerate(stored, model.configured, parse_entry)
        store = VectorStore.of(r.index)
        settings_view = complete_settings(r.settings())
        context = FilterContext(r, settings_view)
        for name in model.configured:
            status = read_status(r, name, "userProvided", lambda: BitMap())
            states = {docids[i]: s.get(name, ABSENT) for i, s in model.docs.items()}
            want_up = BitMap(docid for docid, (up, _, _) in states.items() if up)
            want_skip = BitMap(docid for docid, (_, regen, _) in states.items() if not regen)
            want_vectors = BitMap(docid for docid, (_, _, has) in states.items() if has)
            assert status.user_provided == want_up, name
            assert status.skip_regenerate == want_skip == skip[name], name
            assert store.docids(r, name) == want_vectors, name
            for form, want in (
                (f"_vectors.{name}.userProvided EXISTS", want_up),
                (f"_vectors.{name}.regenerate EXISTS", want_vectors - want_skip),
                (f"_vectors.{name}.documentTemplate EXISTS", want_vectors - want_up),
                (
                    f"_vectors.{name}.regenerate NOT EXISTS",
                    BitMap(docids.values()) - (want_vectors - want_skip),
                ),
            ):
                node = parse_filter(form)
                assert node is not None
                assert context.evaluate(node) == want, form
        any_vectors = BitMap(docids[i] for i, s in model.docs.items() if any(v[2] for v in s.values()))
        node = parse_filter("_vectors EXISTS")
        assert node is not None
        assert context.evaluate(node) == any_vectors
    check_legacy_rebuild(index, model, stored, exact_user_provided)


def check_legacy_rebuild(
    index: Index, model: Model, stored: list[tuple[int, dict[str, Any]]], exact_user_provided: bool
) -> None:
    """Drops the statuses and the marker, as in an index written before them: a reader derives them
    without reading documents (`legacy_status`), a `StatusWriter` rebuilds them from the documents (in
    a transaction that is then aborted)."""
    sources = dict.fromkeys(model.configured, "userProvided")
    derived = derive_from_documents(stored, sources, parse_entry)

    class Abort(Exception):
        pass

    try:
        with index.write() as w:
            db = w.index.db(DB_VECTORS)
            maintained = {name: w.embedding_status.of(name) for name in model.configured}
            w.txn.delete(KEY_STATUS_MARKER, db=db)
            for name in w.embedding_status.names:
                w.txn.delete(STATUS_PREFIX + name.encode(), db=db)
            reader = IndexReader(w.index, w.txn)
            store = VectorStore.of(w.index)
            for name in model.configured:
                legacy = read_status(reader, name, "userProvided", lambda n=name: store.docids(reader, n))
                assert legacy.user_provided == store.docids(reader, name)
                assert legacy.user_provided.issubset(derived[name].user_provided)
            rebuilt = StatusWriter(w)
            for name in model.configured:
                assert rebuilt.of(name) == derived[name], name
                assert derived[name].skip_regenerate == maintained[name].skip_regenerate
                assert maintained[name].user_provided.issubset(derived[name].user_provided)
                if exact_user_provided:
                    assert derived[name] == maintained[name]
            raise Abort
    except Abort:
        pass


def run(ops: list[tuple[Any, ...]], *, exact_user_provided: bool) -> None:
    with fresh_index() as index:
        model = Model()
        set_embedders(index, {"a"})
        model.set_embedders({"a"})
        for op in ops:
            if op[0] == "add":
                ok = model.add(op[1], op[2])
                try:
                    add(index, op[1], op[2])
                    assert ok, "the engine accepted a task the model refuses"
                except MeiliError:
                    assert not ok, "the engine refused a task the model accepts"
            elif op[0] == "delete":
                with index.write() as w:
                    w.delete_documents(str(i) for i in op[1])
                model.delete(op[1])
            elif op[0] == "clear":
                with index.write() as w:
                    w.clear_documents()
                model.delete(list(model.docs))
            else:
                set_embedders(index, op[1])
                model.set_embedders(op[1])
            check(index, model, exact_user_provided=exact_user_provided)


# every state: (false, true) with vectors (`{"regenerate": true}`, an update not naming a regenerated
# entry), frozen generated-like vectors (`{"regenerate": false}`), user-provided and regenerated
TRANSITIONS: list[tuple[Any, ...]] = [
    ("add", [{"id": 0, "_vectors": {"a": [1, 2]}}, {"id": 1, "_vectors": {"a": [1, 2]}}], False),
    ("add", [{"id": 0, "_vectors": {"a": {"regenerate": True}}}], True),
    ("add", [{"id": 1, "_vectors": {"a": {"embeddings": [1, 1], "regenerate": True}}}], False),
    ("add", [{"id": 2, "_vectors": {"a": {"regenerate": False}}}], False),
    ("add", [{"id": 1, "title": "y"}, {"id": 0, "_vectors": {"a": {"regenerate": False}}}], True),
    ("embedders", {"a", "b"}),
    ("delete", [2]),
    ("add", [{"id": 2, "_vectors": {"a": None, "b": [[1, 2, 3], [3, 2, 1]]}}], False),
    ("embedders", {"b"}),
    ("add", [{"id": 0, "_vectors": {"b": {"regenerate": False}}}], True),
    ("embedders", {"a", "b"}),
    ("clear",),
]


@settings(max_examples=100, deadline=None)
@given(operations(simple=False))
@example(TRANSITIONS)
def test_statuses_follow_every_write(ops: list[tuple[Any, ...]]) -> None:
    run(ops, exact_user_provided=False)


@settings(max_examples=40, deadline=None)
@given(operations(simple=True))
def test_legacy_rebuild_is_exact_for_plain_user_vectors(ops: list[tuple[Any, ...]]) -> None:
    run(ops, exact_user_provided=True)
