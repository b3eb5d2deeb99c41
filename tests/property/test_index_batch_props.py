"""Property tests of the batch indexing path (csrc/index_batch.c, `PostingAccumulator.add_batch`,
`SearchIndexer`'s queue).

The stored result must not depend on how added documents are indexed: one by one as the indexer did
before batches (`PostingAccumulator.add` for each, its forward entry stored at once) or in native
batches of any size on 1, 2 or 4 threads. After random adds,
updates, deletes, clears and reindexes over several transactions, every search database (word-docids,
word-fid-docids with the first-word / sole-word / second-word / next-word keys, the docid-words forward
entries) and the main-db keys the indexer writes (search fields, field stats, first-words level,
dictionary version and deltas) must be byte for byte the same.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanzo_engine._native.doc_fields import document_fields
from hanzo_engine._native.indexing import DocumentBatch, PostingAccumulator
from hanzo_engine.engine.documents.fields import flatten
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.storage.codecs import U32
from hanzo_engine.engine.storage.keys import (
    DB_DOCID_WORDS,
    DB_WORD_DOCIDS,
    DB_WORD_FID_DOCIDS,
    KEY_DICTIONARY_DELTA,
    KEY_DICTIONARY_VERSION,
    KEY_FIELD_STATS,
    KEY_FIRST_WORDS,
    KEY_SEARCH_FIELDS,
)
from hanzo_engine.engine.update.indexer import SearchIndexer, tokenizer_for
from hanzo_engine.engine.update.writer import document_writer
from tests.property.thread_sanitizer import run_under_thread_sanitizer

from .test_indexer_props import check_consistent, document, index_settings, new_index, text

ids = st.sampled_from([str(i) for i in range(12)])
operation = st.one_of(
    st.tuples(st.just("put"), ids, document, st.booleans()),
    st.tuples(st.just("put"), ids, document, st.booleans()),
    st.tuples(st.just("delete"), ids),
    st.tuples(st.just("commit")),
    st.just(("clear",)) | st.just(("reindex",)),
)


def one_by_one(search: SearchIndexer, docid: int, document: dict[str, Any]) -> None:
    """`SearchIndexer.add` without the batch: each document indexed at once by `add`."""
    fields = document_fields(flatten(document), search.fid_of, search.fields)
    forward = search.changes.add(search.tokenizer, docid, fields)
    search.txn.put(U32.pack(docid), forward, db=search.db_forward)
    search.pending.add(docid)
    search.dirty = True


def run(
    index: Index, settings_: dict[str, Any], ops: list[tuple[Any, ...]], batch: int | None, threads: int
) -> None:
    """Applies `ops` ("commit" ends a write transaction), the indexer batching `batch` added documents
    on `threads` threads (None: one by one, no batch)."""
    ops = [("commit",), *ops]
    first = True
    while ops:
        with index.write() as writer:
            if first:
                writer.set_settings(settings_)
                first = False
            search = document_writer(writer).search
            if batch is None:
                search.add = partial(one_by_one, search)  # type: ignore[method-assign]
            else:
                search.batch_documents = batch
                search.threads = threads
            while ops:
                op = ops.pop(0)
                if op[0] == "commit":
                    break
                if op[0] == "put":
                    _, ext, doc, merge = op
                    writer.put_document(ext, {"id": ext, **doc}, merge=merge)
                elif op[0] == "delete":
                    writer.delete_document(op[1])
                elif op[0] == "clear":
                    writer.clear_documents()
                else:
                    stored = [(docid, msgspec.json.decode(raw)) for docid, raw in writer.iter_raw_documents()]
                    search.reindex_all(stored)


def stored_state(index: Index) -> dict[str, Any]:
    """Every database and main-db key the full-text indexer writes, as raw bytes."""
    with index.read() as reader:
        txn = reader.txn
        state: dict[str, Any] = {}
        for name in (DB_WORD_DOCIDS, DB_WORD_FID_DOCIDS, DB_DOCID_WORDS):
            with txn.cursor(db=index.db(name)) as cursor:
                state[name.decode()] = [(bytes(k), bytes(v)) for k, v in cursor]
        for key in (KEY_SEARCH_FIELDS, KEY_FIELD_STATS, KEY_FIRST_WORDS, KEY_DICTIONARY_VERSION):
            raw = txn.get(key, db=index.db_main)
            state[key.decode()] = None if raw is None else bytes(raw)
        with txn.cursor(db=index.db_main) as cursor:
            cursor.set_range(KEY_DICTIONARY_DELTA)
            state["deltas"] = [
                (bytes(k), bytes(v)) for k, v in cursor if bytes(k).startswith(KEY_DICTIONARY_DELTA)
            ]
        return state


# a first transaction storing most ids, so that later ones replace and delete stored documents while
# a batch of new ones is in flight
seeded = st.tuples(
    st.lists(st.tuples(st.just("put"), ids, document, st.just(False)), max_size=12),
    st.lists(operation, max_size=40),
).map(lambda t: [*t[0], ("commit",), *t[1]])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index_settings, st.lists(operation, max_size=40) | seeded, st.integers(2, 9))
def test_batches_on_any_number_of_threads_store_what_one_by_one_stores(
    settings_: dict[str, Any], ops: list[tuple[Any, ...]], batch: int
) -> None:
    with new_index() as index:
        run(index, settings_, list(ops), batch=None, threads=1)
        expected = stored_state(index)
        check_consistent(index, settings_)
    for size, threads in ((1, 1), (batch, 1), (batch, 2), (batch, 4)):
        with new_index() as index:
            run(index, settings_, list(ops), batch=size, threads=threads)
            assert stored_state(index) == expected, (size, threads)


def test_replacing_and_deleting_stored_documents_while_a_batch_is_in_flight() -> None:
    # the removals of documents stored by an earlier transaction wait for the batch job in flight
    ops: list[tuple[Any, ...]] = [("put", str(i), {"title": f"w{i} common"}, False) for i in range(12)]
    ops += [("commit",), *(("put", str(i), {"title": f"new{i} x", "n": i}, False) for i in range(20, 26))]
    ops += [("put", str(i), {"title": f"upd{i}"}, i % 2 == 0) for i in range(6)]
    ops += [("delete", "7"), ("delete", "8"), ("put", "21", {"title": "again"}, False), ("delete", "9")]
    with new_index() as index:
        run(index, {}, list(ops), batch=None, threads=1)
        expected = stored_state(index)
        check_consistent(index, {})
    for size, threads in ((2, 2), (3, 2), (4, 4)):
        with new_index() as index:
            run(index, {}, list(ops), batch=size, threads=threads)
            assert stored_state(index) == expected, (size, threads)


# -- the accumulator ----------------------------------------------------------------------------

fields = st.lists(
    st.tuples(st.integers(0, 0x2100), st.lists(text, max_size=3)), max_size=4, unique_by=lambda f: f[0]
)
documents = st.lists(st.tuples(st.integers(0, 2**32 - 1), fields), max_size=60)


def stored_in(db: dict[bytes, bytes]) -> Callable[[list[bytes]], list[tuple[bytes, bytes]]]:
    """`getmulti` over a dict: the (key, value) of the stored keys, in the keys' order."""
    return lambda keys: [(k, db[k]) for k in keys if k in db]


def applied(acc: PostingAccumulator) -> tuple[Any, ...]:
    """What the accumulator writes into empty databases, and its field-stats deltas."""
    words: dict[bytes, bytes] = {}
    fids: dict[bytes, bytes] = {}
    created = acc.apply_word_docids(stored_in(words), words.update, words.__delitem__)
    acc.apply_word_fid_docids(stored_in(fids), fids.update, fids.__delitem__)
    return words, fids, created, acc.field_stats_changes()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.lists(st.integers(0, 60), max_size=3), st.integers(1, 8), st.booleans())
def test_add_batch_equals_add_one_by_one(
    docs: list[tuple[int, list[tuple[int, list[str]]]]], cuts: list[int], threads: int, remove_first: bool
) -> None:
    tokenizer = tokenizer_for({})
    one = PostingAccumulator()
    many = PostingAccumulator()
    if remove_first and docs:
        # earlier changes of the transaction stay before the batch's
        forward = one.add(tokenizer, 5, docs[0][1])
        one.remove(5, forward)
        many.add(tokenizer, 5, docs[0][1])
        many.remove(5, forward)
    forwards = [one.add(tokenizer, docid, f) for docid, f in docs]
    batched: list[bytes] = []
    bounds = [0, *sorted(min(c, len(docs)) for c in cuts), len(docs)]
    for lo, hi in pairwise(bounds):
        batched += many.add_batch(tokenizer, batch_of(docs[lo:hi]), threads)
    assert batched == forwards
    assert many.memory_usage > 0
    assert applied(many) == applied(one)


def batch_of(docs: list[tuple[int, list[tuple[int, list[str]]]]]) -> DocumentBatch:
    batch = DocumentBatch()
    for docid, f in docs:
        batch.push(docid, f)
    assert len(batch) == len(docs)
    assert batch.docids() == [docid for docid, _ in docs]
    return batch


def test_a_refused_document_leaves_the_batch_as_it_was() -> None:
    tokenizer = tokenizer_for({})
    good = (1, [(0, ["alpha beta"]), (3, ["gamma", "", "delta"])])
    batch = batch_of([good])
    with pytest.raises(OverflowError):
        batch.push(2, [(0, ["x"]), (0x10000, ["x"])])
    with pytest.raises(TypeError):
        batch.push(2, [(0, ["x"]), (1, ["y", 3])])  # type: ignore[list-item]
    with pytest.raises(OverflowError):
        batch.push(-1, [(0, ["x"])])
    assert len(batch) == 1
    acc = PostingAccumulator()
    assert acc.add_batch(tokenizer, batch, 64) == [PostingAccumulator().add(tokenizer, *good)]
    assert acc.add_batch(tokenizer, batch, 2) == acc.add_batch(tokenizer, batch_of([good]), 1)
    batch.clear()
    assert len(batch) == 0 and batch.docids() == []
    assert acc.add_batch(tokenizer, batch, 4) == []


# -- applying to stored bitmaps ------------------------------------------------------------------


def stored_after(docs: dict[int, list[tuple[int, list[str]]]]) -> tuple[dict[bytes, bytes], ...]:
    """word-docids and word-fid-docids of `docs` applied at once to empty databases."""
    acc = PostingAccumulator()
    tokenizer = tokenizer_for({})
    for docid, f in docs.items():
        acc.add(tokenizer, docid, f)
    words: dict[bytes, bytes] = {}
    fids: dict[bytes, bytes] = {}
    acc.apply_word_docids(stored_in(words), words.update, words.__delitem__)
    acc.apply_word_fid_docids(stored_in(fids), fids.update, fids.__delitem__)
    return words, fids


def apply_change(
    before: dict[int, list[tuple[int, list[str]]]],
    removed: list[int],
    added: dict[int, list[tuple[int, list[str]]]],
    views: bool,
) -> tuple[dict[bytes, bytes], dict[bytes, bytes], list[bytes], list[bytes]]:
    """The stored databases of `before`, then one accumulator removing `removed` and adding `added`
    applied to them (`views`: getmulti hands out memoryviews, as a `buffers=True` transaction does)."""
    tokenizer = tokenizer_for({})
    words, fids = stored_after(before)
    acc = PostingAccumulator()
    for docid in removed:
        acc.remove(docid, PostingAccumulator().add(tokenizer, docid, before[docid]))
    for docid, f in added.items():
        acc.add(tokenizer, docid, f)
    puts: dict[int, list[bytes]] = {id(words): [], id(fids): []}

    def getmulti(db: dict[bytes, bytes]) -> Callable[[list[bytes]], list[tuple[bytes, Any]]]:
        def get(keys: list[bytes]) -> list[tuple[bytes, Any]]:
            assert keys == sorted(keys) and len(set(keys)) == len(keys)
            return [(k, memoryview(db[k]) if views else db[k]) for k in keys if k in db]

        return get

    def putmulti(db: dict[bytes, bytes]) -> Callable[[list[tuple[bytes, bytes]]], None]:
        def put(items: list[tuple[bytes, bytes]]) -> None:
            puts[id(db)].extend(k for k, _ in items)
            db.update(items)

        return put

    created, deleted = acc.apply_word_docids(getmulti(words), putmulti(words), words.__delitem__)
    acc.apply_word_fid_docids(getmulti(fids), putmulti(fids), fids.__delitem__)
    assert all(keys == sorted(keys) for keys in puts.values())  # each table written in key order
    return words, fids, created, deleted


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.integers(0, 2**32 - 1), fields, max_size=30),
    st.data(),
    st.dictionaries(st.integers(0, 2**32 - 1), fields, max_size=30),
    st.booleans(),
)
def test_applying_to_stored_bitmaps_equals_a_rebuild(
    before: dict[int, list[tuple[int, list[str]]]],
    data: st.DataObject,
    new: dict[int, list[tuple[int, list[str]]]],
    views: bool,
) -> None:
    # removals (the bitmaps that empty are deleted, the unchanged are not rewritten) and additions,
    # some of them replacing a removed document by itself, merged into non-empty databases
    removed = data.draw(st.lists(st.sampled_from(sorted(before)), unique=True) if before else st.just([]))
    again = data.draw(st.lists(st.sampled_from(removed), unique=True) if removed else st.just([]))
    added = {docid: f for docid, f in new.items() if docid not in before} | {d: before[d] for d in again}
    after = {d: f for d, f in before.items() if d not in removed} | added
    words_before, _ = stored_after(before)
    words, fids, created, deleted = apply_change(before, removed, added, views)
    assert (words, fids) == stored_after(after)
    assert created == sorted(words.keys() - words_before.keys())
    assert deleted == sorted(words_before.keys() - words.keys())


def test_applying_many_keys_in_rounds() -> None:
    # more keys than one round of getmulti/putmulti takes: stored, new, emptied and unchanged keys
    # on both sides of the round boundaries
    before = {
        d: [(0, [" ".join(f"w{d}x{i}" for i in range(40))]), (1, [f"common w{d}x0"])] for d in range(60)
    }
    removed = list(range(0, 60, 3))
    added = {100 + d: [(0, [" ".join(f"w{d}x{i}" for i in range(0, 40, 2))])] for d in range(0, 60, 2)}
    added[3] = before[3]
    after = {d: f for d, f in before.items() if d not in removed} | added
    words_before, _ = stored_after(before)
    words, fids, created, deleted = apply_change(before, removed, added, False)
    assert len(words_before) > 2000
    assert (words, fids) == stored_after(after)
    assert created == sorted(words.keys() - words_before.keys())
    assert deleted == sorted(words_before.keys() - words.keys()) and deleted


def test_keys_come_in_byte_order() -> None:
    # words sharing their first 8 bytes or more, prefixes of one another, a NUL inside one
    words = ["ab\x00cd", "abcdefghij", "abcdefghi", "abcdefgh", "abcdefghia", "ab", "a", "b", "\x00"]
    words += ["abcdefgh\u00e9", "abcdefgh\x7f", "\u00e9t\u00e9", "z" * 40, "z" * 39 + "y"]
    # (apply_change checks that getmulti is asked for the keys in order)
    words_after, _, created, _ = apply_change({}, [], {1: [(0, [" ".join(words)])]}, False)
    assert created == sorted(words_after) and len(created) > 10


def test_a_malformed_stored_bitmap_names_its_key() -> None:
    acc = PostingAccumulator()
    acc.add(tokenizer_for({}), 1, [(0, ["alpha beta"])])
    words = {b"beta": b"\x01\x02\x03\x04"}
    with pytest.raises(ValueError, match="malformed bitmap stored under b'beta'"):
        acc.apply_word_docids(stored_in(words), words.update, words.__delitem__)
    other = PostingAccumulator()
    other.add(tokenizer_for({}), 1, [(0, ["alpha"])])
    with pytest.raises(ValueError, match="not one of the keys"):
        other.apply_word_docids(lambda keys: [(b"zzz", b"")], words.update, words.__delitem__)


# -- data races ----------------------------------------------------------------------------------


def test_the_batch_threads_share_nothing_mutable(tmp_path: Path) -> None:
    # csrc/index_batch.c with the real tokenizer under ThreadSanitizer (a C program: Python itself is
    # not instrumented), 1 to 4 threads giving the same entries
    run_under_thread_sanitizer(tmp_path, "index_batch_race", ("index_batch.c", "postings.c", "tokenizer.c"))
