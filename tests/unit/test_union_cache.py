"""The prefix union cache (`engine/search/union_cache.py`) serves searches of one committed state only."""

from __future__ import annotations

from pathlib import Path

import pytest

from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search import union_cache
from hanzo_engine.engine.search.engine import search
from hanzo_engine.engine.search.types import SearchRequest


def add(index: Index, docs: dict[int, str]) -> None:
    with index.write() as w:
        for i, title in docs.items():
            w.put_document(str(i), {"id": i, "title": title}, merge=False)
        w.touch()


def hits(index: Index, q: str) -> tuple[list[int], int]:
    """(the ids of the documents found, the candidate count)."""
    with index.read() as r:
        res = search(r, SearchRequest(q=q, limit=1000), complete_settings(r.settings()))
        ids = [(r.document_by_internal_id(d) or {})["id"] for d in res.docids]
    return sorted(ids), res.candidates


def test_a_write_invalidates_the_cached_prefix_unions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = Index.create(tmp_path / "i", primary_key="id", created_at=0)
    # 60 words starting with `ka`: the prefix `ka` expands to all of them
    add(index, {i: f"ka{chr(97 + i // 26)}{chr(97 + i % 26)} title" for i in range(60)})
    first = hits(index, "ka")
    assert first[1] == 60
    cache = index.__dict__["_union_cache"]
    assert cache.entries  # the union of the 60 expansions was kept
    assert hits(index, "ka") == first  # served from the cache
    # the same expansions (the key) with other documents: a word gains one, another loses its only one
    add(index, {100: "kaab more", 3: "kaab too"})
    second = hits(index, "ka")
    assert 100 in second[0] and 3 in second[0] and second[1] == 61
    add(index, {100: "kazz more", 4: "nothing"})  # a new expansion, and a word gone
    third = hits(index, "ka")
    assert 100 in third[0] and 4 not in third[0] and third[1] == 60
    with monkeypatch.context() as m:
        m.setattr(union_cache, "MIN_PARTS", 10**9)  # no cache: the same answer
        assert hits(index, "ka") == third
    index.close()


def test_the_cache_keeps_within_its_byte_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = Index.create(tmp_path / "i", primary_key="id", created_at=0)
    add(
        index,
        {
            i: " ".join(f"{p}{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for p in ("ka", "mo", "ri"))
            for i in range(2000)
        },
    )
    unlimited = {q: hits(index, q) for q in ("ka", "mo", "ri")}
    cache = index.__dict__["_union_cache"]
    one_entry = max(size for _, size in cache.entries.values())
    monkeypatch.setattr(union_cache, "MAX_BYTES", one_entry)
    cache.entries.clear()
    cache.size = 0
    for q in ("ka", "mo", "ri", "ka"):
        assert hits(index, q) == unlimited[q]
        assert cache.size <= one_entry and len(cache.entries) <= 1
    index.close()


def test_the_search_snapshot_follows_every_commit(tmp_path: Path) -> None:
    # fields, field statistics and docids are decoded once per committed state (`context._snapshot`)
    index = Index.create(tmp_path / "s", primary_key="id", created_at=0)
    add(index, {1: "alpha", 2: "beta"})
    assert hits(index, "alpha") == ([1], 1)
    with index.read() as old:  # a long read keeps its own state while others commit
        with index.write() as w:
            w.put_document("3", {"id": 3, "title": "alpha", "overview": "gamma"}, merge=False)
            w.delete_document("1")
            w.touch()
        assert hits(index, "alpha") == ([3], 1)
        assert hits(index, "gamma") == ([3], 1)  # a new field, searched at once
        res = search(old, SearchRequest(q="alpha", limit=10), complete_settings(old.settings()))
        assert [(old.document_by_internal_id(d) or {})["id"] for d in res.docids] == [1]
        assert hits(index, "alpha") == ([3], 1)  # the older state did not replace the newer one
