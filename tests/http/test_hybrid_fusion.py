"""Hybrid search over HTTP: the opt-in `hybrid.fusion` (convex and reciprocal-rank fusion with the
bm25-first keyword side), its validation, and the absence of `_semanticScore` (removed by Meilisearch
v1.8: the similarity is the hit's `_rankingScore`).

Expected fused orders are computed here from what the server returns for the two sides alone
(semanticRatio 0.0: the BM25 keyword list with its raw values in the details; 1.0: the semantic list),
so the test checks the fusion arithmetic against the API, not against the engine's own helpers."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hanzo_engine.apitypes.search import HYBRID_FUSIONS
from hanzo_engine.engine.vector.hybrid import FUSIONS, RRF_K
from tests.conftest import wait_task

BM25_FIRST = ["bm25", "words", "typo", "proximity", "attributeRank", "wordPosition", "exactness"]
DOCS = [
    {"id": 0, "text": "apple banana", "tag": "a", "_vectors": {"manual": [1.0, 0.0, 0.0]}},
    {"id": 1, "text": "apple", "tag": "a", "_vectors": {"manual": [0.9, 0.1, 0.0]}},
    {"id": 2, "text": "banana cherry", "tag": "b", "_vectors": {"manual": [0.0, 1.0, 0.0]}},
    {"id": 3, "text": "cherry", "tag": "b", "_vectors": {"manual": [0.0, 0.0, 1.0]}},
    {"id": 4, "text": "date", "tag": "a", "_vectors": {"manual": [0.5, 0.5, 0.0]}},
    {
        "id": 5,
        "text": "apple apple cherry pie with a long description",
        "tag": "b",
        "_vectors": {"manual": [0.0, 0.2, 1.0]},
    },
    {"id": 6, "text": "elderberry", "tag": "a", "_vectors": {"manual": [-1.0, 0.0, 0.1]}},
]
Q = "apple cherry"
VECTOR = [1.0, 0.0, 0.4]


def _setup(http: httpx.Client, uid: str) -> None:
    settings = {
        "rankingRules": BM25_FIRST,
        "filterableAttributes": ["tag"],
        "embedders": {"manual": {"source": "userProvided", "dimensions": 3}},
    }
    res = http.patch(f"/indexes/{uid}/settings", json=settings)
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
    res = http.post(f"/indexes/{uid}/documents", json=DOCS)
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"


def _search(http: httpx.Client, uid: str, **body: Any) -> dict[str, Any]:
    res = http.post(f"/indexes/{uid}/search", json={"q": Q, "vector": VECTOR, **body})
    assert res.status_code == 200, res.text
    return dict(res.json())


def _sides(
    http: httpx.Client, uid: str, **extra: Any
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """(keyword list as (id, raw BM25), semantic list as (id, ranking score)), best first."""
    kw = _search(
        http,
        uid,
        hybrid={"embedder": "manual", "semanticRatio": 0.0},
        showRankingScoreDetails=True,
        limit=100,
        **extra,
    )["hits"]
    sem = _search(
        http,
        uid,
        hybrid={"embedder": "manual", "semanticRatio": 1.0},
        showRankingScore=True,
        limit=100,
        **extra,
    )["hits"]
    return (
        [(h["id"], h["_rankingScoreDetails"]["bm25"]["value"]) for h in kw],
        [(h["id"], h["_rankingScore"]) for h in sem],
    )


def _norm(values: list[float]) -> list[float]:
    lo, hi = min(values), max(values)
    return [1.0] * len(values) if hi == lo else [(v - lo) / (hi - lo) for v in values]


def _expected(
    fusion: str, ratio: float, kw: list[tuple[int, float]], sem: list[tuple[int, float]]
) -> list[tuple[int, float, bool]]:
    """(id, fused score, won by the semantic side), in fused order."""
    if fusion == "convex":
        kv, sv = _norm([s for _, s in kw]), _norm([s for _, s in sem])
    else:
        kv = [(RRF_K + 1) / (RRF_K + r) for r in range(1, len(kw) + 1)]
        sv = [(RRF_K + 1) / (RRF_K + r) for r in range(1, len(sem) + 1)]
    terms: dict[int, list[float]] = {}
    for rank, ((doc, _), v) in enumerate(zip(kw, kv, strict=True)):
        terms[doc] = [(1 - ratio) * v, 0.0, rank, 0]
    for rank, ((doc, _), v) in enumerate(zip(sem, sv, strict=True)):
        t = terms.setdefault(doc, [0.0, 0.0, rank, 1])
        t[1], t[2] = ratio * v, min(t[2], rank)
    order = sorted(terms, key=lambda d: (-(terms[d][0] + terms[d][1]), terms[d][2], terms[d][3]))
    return [(d, terms[d][0] + terms[d][1], terms[d][1] > terms[d][0]) for d in order]


def test_fusion_names_agree() -> None:
    assert HYBRID_FUSIONS == FUSIONS


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
@pytest.mark.parametrize("ratio", [0.3, 0.5, 0.8])
def test_fusion_orders_by_fused_score(http: httpx.Client, index_uid: str, fusion: str, ratio: float) -> None:
    _setup(http, index_uid)
    kw, sem = _sides(http, index_uid)
    assert {d for d, _ in kw} == {0, 1, 2, 3, 5}  # bm25 first: any query word matches
    assert len(sem) == len(DOCS)
    expected = _expected(fusion, ratio, kw, sem)
    body = _search(
        http,
        index_uid,
        hybrid={"embedder": "manual", "semanticRatio": ratio, "fusion": fusion},
        showRankingScore=True,
        showRankingScoreDetails=True,
        limit=5,
    )
    hits = body["hits"]
    assert [h["id"] for h in hits] == [d for d, _, _ in expected[:5]]
    for hit, (_, score, semantic_won) in zip(hits, expected, strict=False):
        assert hit["_rankingScore"] == pytest.approx(score, abs=1e-6)
        assert ("vectorSort" in hit["_rankingScoreDetails"]) == semantic_won
        assert "_semanticScore" not in hit
    assert body["semanticHitCount"] == sum(won for _, _, won in expected[:5])
    assert body["estimatedTotalHits"] == len(DOCS)
    # pages of the fused list
    page = _search(
        http,
        index_uid,
        hybrid={"embedder": "manual", "semanticRatio": ratio, "fusion": fusion},
        offset=2,
        limit=3,
    )["hits"]
    assert [h["id"] for h in page] == [d for d, _, _ in expected[2:5]]


def test_fusion_differs_from_the_score_merge(http: httpx.Client, index_uid: str) -> None:
    _setup(http, index_uid)
    merged = _search(http, index_uid, hybrid={"embedder": "manual"}, limit=7)["hits"]
    convex = _search(http, index_uid, hybrid={"embedder": "manual", "fusion": "convex"}, limit=7)["hits"]
    null = _search(http, index_uid, hybrid={"embedder": "manual", "fusion": None}, limit=7)["hits"]
    assert null == merged  # `fusion: null` is Meilisearch's merge
    kw, sem = _sides(http, index_uid)
    assert [h["id"] for h in convex] == [d for d, _, _ in _expected("convex", 0.5, kw, sem)][:7]
    assert [h["id"] for h in convex] != [h["id"] for h in merged]


def test_fusion_with_threshold_and_filter(http: httpx.Client, index_uid: str) -> None:
    _setup(http, index_uid)
    kw, sem = _sides(http, index_uid, filter="tag = b")
    expected = _expected("convex", 0.5, kw, sem)
    body = _search(
        http,
        index_uid,
        hybrid={"embedder": "manual", "fusion": "convex"},
        filter="tag = b",
        rankingScoreThreshold=0.5,
        showRankingScore=True,
    )
    kept = [(d, s) for d, s, _ in expected if s >= 0.5]
    assert 0 < len(kept) < len(expected)
    assert [(h["id"], pytest.approx(h["_rankingScore"], abs=1e-6)) for h in body["hits"]] == kept
    assert body["estimatedTotalHits"] == len(kept)
    assert {h["id"] for h in body["hits"]} <= {2, 3, 5}


def test_fusion_keeps_the_search_kinds(http: httpx.Client, index_uid: str) -> None:
    _setup(http, index_uid)
    keyword = _search(http, index_uid, hybrid={"embedder": "manual", "semanticRatio": 0.0, "fusion": "rrf"})
    assert "semanticHitCount" not in keyword
    semantic = _search(
        http,
        index_uid,
        hybrid={"embedder": "manual", "semanticRatio": 1.0, "fusion": "rrf"},
        showRankingScore=True,
    )
    plain = _search(
        http, index_uid, hybrid={"embedder": "manual", "semanticRatio": 1.0}, showRankingScore=True
    )
    assert semantic["hits"] == plain["hits"]
    assert semantic["semanticHitCount"] == len(semantic["hits"])


def test_no_semantic_score(http: httpx.Client, index_uid: str) -> None:
    """Meilisearch >= 1.8 returns the similarity as `_rankingScore` and no `_semanticScore`."""
    _setup(http, index_uid)
    for ratio in (0.5, 1.0):
        body = _search(
            http,
            index_uid,
            hybrid={"embedder": "manual", "semanticRatio": ratio},
            showRankingScore=True,
            showRankingScoreDetails=True,
        )
        assert body["hits"]
        for hit in body["hits"]:
            assert "_semanticScore" not in hit
            detail = hit["_rankingScoreDetails"].get("vectorSort")
            if detail is not None:
                assert set(detail) == {"order", "similarity"}
                assert hit["_rankingScore"] == pytest.approx(detail["similarity"])
    top = _search(
        http, index_uid, hybrid={"embedder": "manual", "semanticRatio": 1.0}, showRankingScore=True, limit=1
    )["hits"][0]
    assert top["id"] == 0  # cos([1, 0, 0], [1, 0, 0.4]) = 1 / sqrt(1.16)
    assert top["_rankingScore"] == pytest.approx((1 + 1 / 1.16**0.5) / 2, abs=1e-6)


@pytest.mark.parametrize(
    ("hybrid", "message"),
    [
        (
            {"embedder": "manual", "fusion": "nope"},
            "Unknown value `nope` at `.hybrid.fusion`: expected one of `convex`, `rrf`",
        ),
        (
            {"embedder": "manual", "fusion": 1},
            "Invalid value type at `.hybrid.fusion`: expected a string, but found a positive integer: `1`",
        ),
        (
            {"embedder": "manual", "foo": 1},  # Meilisearch's list of hybrid fields, without `fusion`
            "Unknown field `foo` inside `.hybrid`: expected one of `semanticRatio`, `embedder`",
        ),
        ({"fusion": "rrf"}, "Missing field `embedder` inside `.hybrid`"),
    ],
)
def test_fusion_errors(http: httpx.Client, index_uid: str, hybrid: dict[str, Any], message: str) -> None:
    _setup(http, index_uid)
    res = http.post(f"/indexes/{index_uid}/search", json={"q": Q, "vector": VECTOR, "hybrid": hybrid})
    assert res.status_code == 400
    assert res.json() == {
        "message": message,
        "code": "invalid_search_hybrid_query",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#invalid_search_hybrid_query",
    }


def test_meilisearch_errors_come_first(http: httpx.Client, index_uid: str) -> None:
    _setup(http, index_uid)
    res = http.post(
        f"/indexes/{index_uid}/search", json={"hybrid": {"embedder": "manual", "fusion": "nope"}, "limit": -1}
    )
    assert res.status_code == 400
    assert res.json()["code"] == "invalid_search_limit"


def test_fusion_in_multi_search(http: httpx.Client, index_uid: str) -> None:
    _setup(http, index_uid)
    hybrid = {"embedder": "manual", "fusion": "rrf", "semanticRatio": 0.7}
    single = _search(http, index_uid, hybrid=hybrid, limit=5)
    res = http.post(
        "/multi-search",
        json={"queries": [{"indexUid": index_uid, "q": Q, "vector": VECTOR, "hybrid": hybrid, "limit": 5}]},
    )
    assert res.status_code == 200, res.text
    assert res.json()["results"][0]["hits"] == single["hits"]
    bad = http.post(
        "/multi-search",
        json={
            "queries": [
                {
                    "indexUid": index_uid,
                    "q": Q,
                    "vector": VECTOR,
                    "hybrid": {"embedder": "manual", "fusion": "x"},
                }
            ]
        },
    )
    assert bad.status_code == 400
    assert bad.json()["message"] == (
        "Unknown value `x` at `.queries[0].hybrid.fusion`: expected one of `convex`, `rrf`"
    )
    assert bad.json()["code"] == "invalid_search_hybrid_query"


def test_federated_queries_search_semantically(http: httpx.Client, index_uid: str) -> None:
    # a federated query with a vector is a semantic search, as it is alone (not keyword-only)
    _setup(http, index_uid)
    semantic = {"vector": VECTOR, "hybrid": {"embedder": "manual", "semanticRatio": 1.0}}
    alone = http.post(f"/indexes/{index_uid}/search", json={**semantic, "limit": 4, "showRankingScore": True})
    assert alone.status_code == 200, alone.text
    res = http.post(
        "/multi-search",
        json={
            "federation": {"limit": 4},
            "queries": [{"indexUid": index_uid, **semantic, "showRankingScore": True}],
        },
    )
    assert res.status_code == 200, res.text
    hits = res.json()["hits"]
    assert [h["id"] for h in hits] == [h["id"] for h in alone.json()["hits"]]
    assert [h["_rankingScore"] for h in hits] == [h["_rankingScore"] for h in alone.json()["hits"]]
    assert all(h["_federation"]["indexUid"] == index_uid for h in hits)
