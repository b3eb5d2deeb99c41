"""The facet indexer stores exactly what the plain Python log it replaced stores.

Two indexes get the same random transactions (adds, replacements, merges, deletions, clears, settings
changes that rebuild the facets; several changes of one document within a transaction, docids freed
and reused across transactions); one of them runs the facet indexer with `ReferenceLog`, the previous
implementation kept here: one Python list of events per (database, key), the documents walked by
`extract_facets`, each key merged at flush by a `txn.get`/`txn.put`. Every facet database and the
facet field list must hold the same bytes. A tiny flush threshold in some examples makes flushes
happen mid-transaction, over stored bitmaps.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.storage.codecs import FID, decode_bitmap, encode_bitmap, encode_f64
from hanzo_engine.engine.storage.keys import (
    DB_FACET_FLAGS,
    DB_FACET_NUMBERS,
    DB_FACET_STRINGS,
    FACET_DBS,
    FLAG_KINDS,
    KEY_FACET_FIELDS,
)
from hanzo_engine.engine.update import facets, writer
from hanzo_engine.engine.update.facets import FacetIndexer
from hanzo_engine.engine.update.settings_hook import reindex_for_settings


class ReferenceLog:
    """The previous change log: (database, key) -> events in order, docid (added) or ~docid (removed)."""

    def __init__(self) -> None:
        self.pending: dict[tuple[bytes, bytes], list[int]] = {}
        self.changes = 0

    def __len__(self) -> int:
        return self.changes

    def log(self, docid: int, forward: dict[int, list[Any]], add: bool) -> None:
        event = docid if add else ~docid
        for fid, entry in forward.items():
            flags, numbers, strings = entry[0], entry[1], entry[2]
            prefix = FID.pack(fid)
            keys = [(DB_FACET_FLAGS, kind + prefix) for bit, kind in FLAG_KINDS if flags & bit]
            keys.extend((DB_FACET_NUMBERS, prefix + encode_f64(n)) for n in numbers)
            keys.extend((DB_FACET_STRINGS, prefix + norm.encode()) for norm, _ in strings)
            for key in keys:
                self.pending.setdefault(key, []).append(event)
            self.changes += len(keys)

    def take_doc(self, docid: int) -> bytes | None:
        return None  # forward entries are put as they are made

    def clear(self) -> None:
        self.pending.clear()
        self.changes = 0

    def flush(self, txn: Any, dbs: tuple[Any, Any, Any], *_: Any) -> None:
        by_name = dict(zip((DB_FACET_STRINGS, DB_FACET_NUMBERS, DB_FACET_FLAGS), dbs, strict=True))
        for (name, key), events in sorted(self.pending.items()):
            db = by_name[name]
            stored = txn.get(key, db=db)
            bitmap = decode_bitmap(stored) if stored is not None else BitMap()
            if min(events) >= 0:
                bitmap |= BitMap(events)
            else:
                for event in events:
                    if event >= 0:
                        bitmap.add(event)
                    else:
                        bitmap.discard(~event)
            if bitmap:
                txn.put(key, encode_bitmap(bitmap), db=db)
            elif stored is not None:
                txn.delete(key, db=db)
        self.clear()


class ReferenceIndexer(FacetIndexer):
    def __init__(self, w: Any, settings: dict[str, Any]) -> None:
        super().__init__(w, settings)
        self.log = ReferenceLog()  # type: ignore[assignment]
        self.fast_walk = False


@contextmanager
def reference() -> Iterator[None]:
    with mock.patch.object(writer, "FacetIndexer", ReferenceIndexer):
        yield


def dump(index: Index) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with index.read() as r:
        for name in FACET_DBS:
            out[name.decode()] = list(r.txn.cursor(db=index.db(name)).iternext())
        out["fields"] = r.txn.get(KEY_FACET_FIELDS, db=index.db_main)
    return out


WORDS = ("apple", "Apple", " apple ", "Éclair", "eclair", "ß", "x" * 470, "é" * 240, "", "12")
NUMBERS = (-3, 0, -0.0, 1, 1.0, 2.5, 1e300, -1e-300, 2**53 + 1)
scalar = st.one_of(st.sampled_from(WORDS), st.sampled_from(NUMBERS), st.booleans(), st.none())
value: st.SearchStrategy[Any] = st.one_of(
    scalar,
    st.just([]),
    st.just({}),
    st.lists(scalar, max_size=4),
    st.fixed_dictionaries({"x": scalar}),  # nested: the full walk
    st.lists(st.fixed_dictionaries({"x": scalar}), max_size=2),
)
SETTINGS = (
    {"filterableAttributes": ["a", "b", "o.x"], "sortableAttributes": ["c"]},
    {"filterableAttributes": ["a", "o"], "distinctAttribute": "b"},
    {"filterableAttributes": ["b", "c", "_geo"]},
    {"sortableAttributes": ["a"], "rankingRules": ["words", "c:desc"]},
)


@st.composite
def document(draw: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for name in draw(st.permutations(("a", "b", "c", "o", "_geo", "d"))):
        if draw(st.booleans()):
            if name == "_geo":
                doc[name] = {"lat": draw(st.sampled_from((1.5, -2))), "lng": 3}
            else:
                doc[name] = draw(value)
    return doc


op = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 7), document(), st.booleans()),
    st.tuples(st.just("delete"), st.integers(0, 7)),
    st.tuples(st.just("clear")),
)
transaction = st.tuples(st.one_of(st.none(), st.sampled_from(SETTINGS)), st.lists(op, max_size=12))


def apply(index: Index, settings: dict[str, Any] | None, ops: list[Any]) -> None:
    with index.write() as w:
        if settings is not None:
            old = w.settings()
            new = complete_settings({**old, **settings})
            reindex_for_settings(w, old, new, "test")
            w.set_settings(new)
        for o in ops:
            if o[0] == "put":
                w.put_document(str(o[1]), {"id": o[1], **o[2]}, merge=o[3])
            elif o[0] == "delete":
                w.delete_document(str(o[1]))
            else:
                w.clear_documents()


def build(path: Path, first: dict[str, Any], transactions: list[Any]) -> dict[str, Any]:
    index = Index.create(path, primary_key="id", created_at=0)
    try:
        apply(index, first, [])
        for settings_change, ops in transactions:
            apply(index, settings_change, ops)
        return dump(index)
    finally:
        index.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SETTINGS),
    st.lists(transaction, min_size=1, max_size=4),
    st.sampled_from((3, 4_000_000)),
)
def test_stores_what_the_reference_stores(
    first: dict[str, Any], transactions: list[Any], threshold: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(facets, "MAX_PENDING_CHANGES", threshold):
        got = build(Path(tmp) / "new", first, transactions)
        with reference():
            expected = build(Path(tmp) / "ref", first, transactions)
    assert got == expected


def test_many_documents_per_key() -> None:
    """Keys with hundreds of events (the roaring form, runs of docids), some removed in between."""
    docs = [
        {
            "a": ["shared", f"v{i % 9}"],
            "b": i % 70,
            "c": [i + k / 8 for k in range(8)],  # 4,800 distinct keys: several `putmulti` batches
            "o": {"x": i % 3} if i % 50 == 0 else 1,
        }
        for i in range(600)
    ]
    ops: list[Any] = [("put", i, d, False) for i, d in enumerate(docs)]
    ops += [("delete", i) for i in range(0, 600, 7)]
    ops += [("put", i, {"a": "late"}, True) for i in range(0, 600, 11)]
    again: list[Any] = [("put", i, {"b": 1}, True) for i in range(100, 400, 3)]
    first = SETTINGS[0]
    with tempfile.TemporaryDirectory() as tmp:
        index_ops = [(None, ops), (None, again)]
        got = build(Path(tmp) / "new", first, index_ops)
        with reference():
            expected = build(Path(tmp) / "ref", first, index_ops)
    assert got == expected
    assert got["facet-strings"]


def test_msgpack_forms_of_forward_entries() -> None:
    """Forward entries with the longer msgpack forms: 16+ fields (map16), field ids past 127 (uint8),
    16+ numbers or strings of a field (array16), strings of 32-255 and 256+ bytes (str8, str16)."""
    names = [f"f{i}" for i in range(150)]
    doc: dict[str, Any] = {name: i for i, name in enumerate(names)}
    doc["f3"] = [float(i) / 3 for i in range(20)]
    doc["f4"] = [f"value number {i} " * (i % 4 + 1) for i in range(20)]
    doc["f5"] = "é" * 20
    doc["f6"] = "w" * 300
    doc["f149"] = ["a" * 40, "b" * 200, True, None, "", 3]
    first = {"filterableAttributes": names}
    ops: list[Any] = [("put", 1, doc, False), ("put", 2, {"f149": "x", "f0": []}, False)]
    with tempfile.TemporaryDirectory() as tmp:
        got = build(Path(tmp) / "new", first, [(None, ops)])
        with reference():
            expected = build(Path(tmp) / "ref", first, [(None, ops)])
    assert got == expected
    assert len(got["facet-docs"]) == 2


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.integers(0, 70_000),
            st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=3),
            st.integers(-(2**62), 2**62),
        ),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from((5, 4_000_000)),
)
def test_numbers_of_every_bit_pattern(rows: list[Any], threshold: int) -> None:
    """Numbers differing in any of their 64 bits, over two fields, replaced
    within the transaction (the number log's sort by field and number keeps each key's events in order)."""
    ops: list[Any] = [
        ("put", key, {"b": numbers, "c": [big, numbers[0]]}, False) for key, numbers, big in rows
    ]
    ops += [("put", key, {"b": numbers[-1]}, False) for key, numbers, _ in rows[::3]]
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(facets, "MAX_PENDING_CHANGES", threshold):
        got = build(Path(tmp) / "new", SETTINGS[0], [(None, ops)])
        with reference():
            expected = build(Path(tmp) / "ref", SETTINGS[0], [(None, ops)])
    assert got == expected
