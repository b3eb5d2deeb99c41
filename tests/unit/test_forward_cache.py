"""The forward-entry cache (`engine/search/forward_cache.py`) answers what LMDB holds for the reader's
committed state, across writes, and keeps within its budget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hanzo_engine.engine.index import Index, IndexReader
from hanzo_engine.engine.search import forward_cache
from hanzo_engine.engine.search.forward_cache import ForwardCache, forward_entries
from hanzo_engine.engine.update import indexer


def add(index: Index, docs: dict[int, str]) -> None:
    with index.write() as w:
        for i, title in docs.items():
            w.put_document(str(i), {"id": i, "title": title}, merge=False)
        w.touch()


def docid(reader: IndexReader, external: int) -> int:
    found = reader.internal_id(str(external))
    assert found is not None
    return found


def cache_of(index: Index) -> ForwardCache:
    cache = index.__dict__["_forward_cache"]
    assert isinstance(cache, ForwardCache)
    return cache


@pytest.fixture
def index(tmp_path: Path) -> Index:
    index = Index.create(tmp_path / "i", primary_key="id", created_at=0)
    add(index, {i: f"title number {i} word{i}" for i in range(50)})
    return index


def test_entries_equal_lmdb_and_follow_writes(index: Index) -> None:
    with index.read() as r:
        ids = [docid(r, i) for i in range(50)]
        first = forward_entries(r, ids)
        assert first == indexer.forward_entries(r, ids)
        assert all(entry is not None for entry in first)
        assert forward_entries(r, ids) == first  # now from the cache
    cache = cache_of(index)
    kept = cache.entries[ids[0]]
    assert int(cache.present.sum()) == 50
    add(index, {3: "another text entirely", 7: "changed as well"})
    with index.read() as r:
        now = forward_entries(r, ids)
        assert now == indexer.forward_entries(r, ids)
        assert now[3] != first[3] and now[7] != first[7]
    # documents the write did not touch kept their cached entry (the same object)
    assert cache.entries[ids[0]] is kept
    index.close()


def test_a_reader_of_an_older_state_reads_its_own_snapshot(index: Index) -> None:
    with index.read() as old:
        ids = [docid(old, i) for i in range(50)]
        before = indexer.forward_entries(old, ids)
        add(index, {5: "rewritten while a search reads"})
        with index.read() as new:
            assert forward_entries(new, ids) == indexer.forward_entries(new, ids)
        # the cache is at the newer state now: the old reader bypasses it
        assert forward_entries(old, ids) == before
    index.close()


def test_clearing_the_documents_empties_the_cache(index: Index) -> None:
    with index.read() as r:
        ids = [docid(r, i) for i in range(50)]
        forward_entries(r, ids)
    with index.write() as w:
        w.clear_documents()
        w.touch()
    add(index, {100: "a new document"})
    with index.read() as r:
        new = docid(r, 100)
        assert forward_entries(r, [*ids, new]) == indexer.forward_entries(r, [*ids, new])
    assert set(np.flatnonzero(cache_of(index).present).tolist()) <= {new}
    index.close()


def test_a_writer_does_not_fill_the_cache(index: Index) -> None:
    with index.write() as w:
        ids = [docid(w, i) for i in range(50)]
        assert forward_entries(w, ids) == indexer.forward_entries(w, ids)
    assert "_forward_cache" not in index.__dict__
    index.close()


def test_the_cache_keeps_within_its_budget(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    with index.read() as r:
        ids = [docid(r, i) for i in range(50)]
        one = len(indexer.forward_entries(r, ids[:1])[0] or b"") + forward_cache.ENTRY_OVERHEAD
        slots = forward_cache.SLOT_BYTES * 1024  # the smallest slot arrays
        monkeypatch.setattr(forward_cache, "MAX_BYTES", slots + 10 * one)
        for start in range(0, 50, 5):
            part = ids[start : start + 5]
            assert forward_entries(r, part) == indexer.forward_entries(r, part)
            cache = cache_of(index)
            assert 0 < cache.size <= forward_cache.MAX_BYTES
            held = cache.entries[cache.present]
            assert cache.size == forward_cache.SLOT_BYTES * len(cache.present) + sum(
                len(e) + forward_cache.ENTRY_OVERHEAD for e in held
            )
            assert all(e is None for e in cache.entries[~cache.present])
        assert forward_entries(r, ids) == indexer.forward_entries(r, ids)
    index.close()


def test_unsorted_lists_and_docids_past_the_slots(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forward_cache, "MAX_SLOTS", 8)
    with index.read() as r:
        ids = [docid(r, i) for i in range(50)]
        low = sorted(ids)[:5]
        # below the slots: cached, whatever the order asked
        assert forward_entries(r, low[::-1]) == indexer.forward_entries(r, low[::-1])
        cache = cache_of(index)
        assert set(np.flatnonzero(cache.present).tolist()) == set(low)
        # a chunk reaching past them is read from LMDB, and caches nothing
        assert forward_entries(r, ids[::-1]) == indexer.forward_entries(r, ids[::-1])
        assert set(np.flatnonzero(cache.present).tolist()) == set(low)
    index.close()
