"""Facet search on a small index, as the meilisearch-js suite snapshots it (`tests/facet_search.test.ts`):
the bodies field by field, `processingTimeMs` an integer number of milliseconds rounded down (Rust's
`as_millis`), which Meilisearch's snapshot shows as 0. The first facet search of a server must not pay
for loading the search engine: the route loads it, so that a fresh server answers it in well under a
millisecond too. A semantic or hybrid facet search counts the documents as milli's `execute_for_candidates`
does: every one its filter allows."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import httpx
import pytest

from tests.conftest import wait_task

DATASET = [
    {"id": 123, "title": "Pride and Prejudice", "genres": ["romance", "action"]},
    {"id": 456, "title": "Le Petit Prince", "genres": ["adventure", "comedy"]},
    {"id": 2, "title": "Le Rouge et le Noir", "genres": "romance"},
    {"id": 1, "title": "Alice In Wonderland", "genres": ["adventure"]},
]
CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {"facetQuery": "a", "facetName": "genres"},
        {
            "facetHits": [{"value": "action", "count": 1}, {"value": "adventure", "count": 2}],
            "facetQuery": "a",
        },
    ),
    (
        {"facetName": "genres"},
        {
            "facetHits": [
                {"value": "action", "count": 1},
                {"value": "adventure", "count": 2},
                {"value": "comedy", "count": 1},
                {"value": "romance", "count": 2},
            ],
            "facetQuery": None,
        },
    ),
    (
        {"facetName": "genres", "facetQuery": "a", "filter": ["genres = action"]},
        {"facetHits": [{"value": "action", "count": 1}], "facetQuery": "a"},
    ),
    (
        {"facetName": "genres", "facetQuery": "a", "q": "Alice"},
        {"facetHits": [{"value": "adventure", "count": 1}], "facetQuery": "a"},
    ),
    (
        {"facetName": "genres", "facetQuery": "a", "q": "Alice", "exhaustiveFacetCount": True},
        {"facetHits": [{"value": "adventure", "count": 1}], "facetQuery": "a"},
    ),
]


@pytest.fixture
def movies(http: httpx.Client, index_uid: str) -> str:
    res = http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["genres", "title"]})
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
    res = http.post(f"/indexes/{index_uid}/documents", json=DATASET)
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
    return index_uid


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_sdk_snapshot_bodies(
    http: httpx.Client, movies: str, body: dict[str, Any], expected: dict[str, Any]
) -> None:
    res = http.post(f"/indexes/{movies}/facet-search", json=body)
    assert res.status_code == 200, res.text
    answer = res.json()
    assert list(answer) == ["facetHits", "facetQuery", "processingTimeMs"]
    took = answer.pop("processingTimeMs")
    assert type(took) is int and took >= 0
    assert answer == expected


def test_first_facet_search_loads_nothing() -> None:
    """Once the route is imported, a facet search imports no module of the engine (each such import costs
    milliseconds, which the first facet search of a server would report)."""
    script = textwrap.dedent("""
        import sys, tempfile
        from pathlib import Path
        import hanzo_engine.server.app  # the routes, as the server loads them
        from hanzo_engine.apitypes.search import SearchQuery
        from hanzo_engine.apitypes.settings import complete_settings
        from hanzo_engine.engine.index import Index
        from hanzo_engine.filter_parser import FilterFeatures
        from hanzo_engine.server.routes.facet_search import perform_facet_search

        index = Index.create(Path(tempfile.mkdtemp()) / "movies", primary_key="id", created_at=0)
        with index.write() as w:
            w.set_settings(complete_settings({"filterableAttributes": ["genres", "title"]}))
        with index.write() as w:
            w.put_document("1", {"id": 1, "title": "Alice In Wonderland", "genres": ["adventure"]}, merge=False)
        before = set(sys.modules)
        body = {"facetName": "genres", "facetQuery": "a", "exhaustiveFacetCount": None}
        with index.read() as reader:
            out = perform_facet_search(reader, "movies", body, SearchQuery(q="Alice"), FilterFeatures())
        assert out["facetHits"] == [{"value": "adventure", "count": 1}], out
        print(sorted(m for m in set(sys.modules) - before if m.startswith("hanzo_engine")))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- semantic and hybrid facet searches ---------------------------------------------------------------------


@pytest.fixture
def movies_with_vectors(http: httpx.Client, index_uid: str) -> str:
    settings = {
        "filterableAttributes": ["genres", "title"],
        "embedders": {"manual": {"source": "userProvided", "dimensions": 2}},
    }
    res = http.patch(f"/indexes/{index_uid}/settings", json=settings)
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
    docs = [{**doc, "_vectors": {"manual": [float(i), 1.0]}} for i, doc in enumerate(DATASET)]
    res = http.post(f"/indexes/{index_uid}/documents", json=docs)
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
    return index_uid


def _facet_hits(http: httpx.Client, uid: str, body: dict[str, Any]) -> Any:
    res = http.post(f"/indexes/{uid}/facet-search", json={"facetName": "genres", **body})
    assert res.status_code == 200, res.text
    return res.json()["facetHits"]


def test_hybrid_facet_search_counts_every_filtered_document(
    http: httpx.Client, movies_with_vectors: str
) -> None:
    """milli's `execute_for_candidates`: a hybrid or semantic search's candidates are all the documents its
    filter allows, not only those matching `q`."""
    uid = movies_with_vectors
    everything = [
        {"value": "action", "count": 1},
        {"value": "adventure", "count": 2},
        {"value": "comedy", "count": 1},
        {"value": "romance", "count": 2},
    ]
    # keyword only (no hybrid, or a ratio of 0): the documents matching `q`
    assert _facet_hits(http, uid, {"q": "Alice"}) == [{"value": "adventure", "count": 1}]
    keyword = {"q": "Alice", "vector": [1.0, 1.0], "hybrid": {"embedder": "manual", "semanticRatio": 0.0}}
    assert _facet_hits(http, uid, keyword) == [{"value": "adventure", "count": 1}]
    hybrid = {"q": "Alice", "vector": [1.0, 1.0], "hybrid": {"embedder": "manual", "semanticRatio": 0.5}}
    assert _facet_hits(http, uid, hybrid) == everything
    semantic = {"vector": [1.0, 1.0], "hybrid": {"embedder": "manual"}, "filter": "genres = romance"}
    assert _facet_hits(http, uid, semantic) == [
        {"value": "action", "count": 1},
        {"value": "romance", "count": 2},
    ]
    # the search's own errors: a vector of the wrong dimensions, a query a userProvided embedder cannot embed
    res = http.post(
        f"/indexes/{uid}/facet-search",
        json={"facetName": "genres", "vector": [1.0], "hybrid": {"embedder": "manual"}},
    )
    assert res.status_code == 400 and res.json()["code"] == "invalid_vector_dimensions"
    res = http.post(
        f"/indexes/{uid}/facet-search",
        json={"facetName": "genres", "q": "Alice", "hybrid": {"embedder": "manual", "semanticRatio": 1.0}},
    )
    assert res.status_code == 400 and res.json()["code"] == "vector_embedding_error"
    res = http.post(
        f"/indexes/{uid}/facet-search",
        json={"facetName": "genres", "media": {"a": 1}, "hybrid": {"embedder": "manual"}},
    )
    assert res.status_code == 400
    assert res.json()["message"] == (
        "passing `media` in a search query requires enabling the `multimodal` "
        "experimental feature. See https://github.com/orgs/meilisearch/discussions/846"
    )
