"""`userProvided` embedders over HTTP: `_vectors` in documents (forms, errors, retrieveVectors),
semantic and hybrid search, and `/similar` (Meilisearch's `tests/vector/mod.rs` cases)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import wait_task

LINK = "https://docs.meilisearch.com/errors#"
DOCS = [
    {"id": 0, "name": "kefir", "_vectors": {"manual": [0, 0, 1]}},
    {"id": 1, "name": "echo", "_vectors": {"manual": [1, 1, 1]}},
    {"id": 2, "name": "billou", "_vectors": {"manual": [[2, 2, 2], [2, 2, 3]]}},
    {"id": 3, "name": "intel", "_vectors": {"manual": {"regenerate": False, "embeddings": [3, 3, -3]}}},
    {
        "id": 4,
        "name": "max",
        "_vectors": {"manual": {"regenerate": False, "embeddings": [[-4, -4, -4], [4, 4, 5]]}},
    },
]


def task_of(http: httpx.Client, res: httpx.Response) -> dict[str, Any]:
    assert res.status_code == 202, res.text
    return wait_task(http, res.json()["taskUid"])


def setup(http: httpx.Client, uid: str, docs: list[dict[str, Any]] = DOCS) -> None:
    settings = {"embedders": {"manual": {"source": "userProvided", "dimensions": 3}}}
    assert task_of(http, http.patch(f"/indexes/{uid}/settings", json=settings))["status"] == "succeeded"
    task = task_of(http, http.post(f"/indexes/{uid}/documents", json=docs))
    assert task["status"] == "succeeded", task


def failure(http: httpx.Client, uid: str, docs: Any) -> dict[str, Any]:
    task = task_of(http, http.post(f"/indexes/{uid}/documents", json=docs))
    assert task["status"] == "failed", task
    assert task["details"]["indexedDocuments"] == 0
    return dict(task["error"])


def search(http: httpx.Client, uid: str, body: dict[str, Any]) -> dict[str, Any]:
    res = http.post(f"/indexes/{uid}/search", json=body)
    assert res.status_code == 200, res.text
    return dict(res.json())


def test_documents_keep_vectors_normalized(http: httpx.Client, index_uid: str) -> None:
    setup(http, index_uid)
    res = http.get(f"/indexes/{index_uid}/documents", params={"retrieveVectors": "true"})
    results = res.json()["results"]
    assert results[0] == {
        "id": 0,
        "name": "kefir",
        "_vectors": {"manual": {"embeddings": [[0.0, 0.0, 1.0]], "regenerate": False}},
    }
    assert results[2]["_vectors"]["manual"]["embeddings"] == [[2.0, 2.0, 2.0], [2.0, 2.0, 3.0]]
    plain = http.get(f"/indexes/{index_uid}/documents").json()["results"]
    assert plain[0] == {"id": 0, "name": "kefir"}
    # null opts out: the document stays, without vectors
    task = task_of(
        http,
        http.post(
            f"/indexes/{index_uid}/documents", json=[{"id": 1, "name": "echo", "_vectors": {"manual": None}}]
        ),
    )
    assert task["status"] == "succeeded"
    doc = http.get(f"/indexes/{index_uid}/documents/1", params={"retrieveVectors": "true"}).json()
    assert doc["_vectors"] == {"manual": {"embeddings": [], "regenerate": False}}
    hits = search(http, index_uid, {"vector": [1, 1, 1], "hybrid": {"embedder": "manual"}, "limit": 4})[
        "hits"
    ]
    assert [h["id"] for h in hits][:3] == [2, 4, 0]  # echo has no vector any more


def test_vector_errors(http: httpx.Client, index_uid: str) -> None:
    setup(http, index_uid)
    err = failure(http, index_uid, {"id": 9, "_vectors": {"manual": {"embeddings": [0, 0, 0]}}})
    assert err == {
        "message": f"Index `{index_uid}`: Bad embedder configuration in the document with id: `9`. "
        "Missing field `._vectors.manual.regenerate`\n  - note: `._vectors.manual` must be an "
        "array of floats, an array of arrays of floats, or an object with field `regenerate`",
        "code": "invalid_vectors_type",
        "type": "invalid_request",
        "link": LINK + "invalid_vectors_type",
    }
    err = failure(
        http,
        index_uid,
        {"id": 9, "_vectors": {"manual": {"embeddings": [[0.1, 0.2], 0.3], "regenerate": False}}},
    )
    assert err["message"].endswith(
        "Invalid value type at `._vectors.manual.embeddings[1]`: expected an array, but found a number: `0.3`"
    )
    err = failure(http, index_uid, {"id": 9, "_vectors": [1, 2]})
    assert err["code"] == "invalid_vectors_type"
    assert "The `_vectors` field in the document with id: `9` is not an object." in err["message"]
    err = failure(
        http,
        index_uid,
        [{"id": 8, "_vectors": {"manual": [1, 1, 1]}}, {"id": 9, "_vectors": {"manual": [1, 1]}}],
    )
    assert err["code"] == "invalid_vector_dimensions"
    assert err["message"] == (
        f"Index `{index_uid}`: Invalid vector dimensions in document with id `9` in "
        "`._vectors.manual`.\n  - note: embedding #0 has dimensions 2\n  - note: embedder "
        "`manual` requires 3"
    )
    err = failure(http, index_uid, [{"id": 40}, {"id": 41}, {"id": 42}])
    assert err["code"] == "vector_embedding_error"
    assert err["message"] == (
        f"Index `{index_uid}`: While embedding documents for embedder `manual`: no vectors "
        "provided for document `40` and at least 2 other document(s)\n- Note: `manual` has "
        "`source: userProvided`, so documents must provide embeddings as an array in "
        "`_vectors.manual`.\n- Hint: opt-out for a document with `_vectors.manual: null`"
    )
    # nothing of the failed tasks was written
    assert http.get(f"/indexes/{index_uid}/documents/8").status_code == 404
    # an update naming no vectors keeps the old ones
    task = task_of(http, http.put(f"/indexes/{index_uid}/documents", json=[{"id": 0, "name": "kefir2"}]))
    assert task["status"] == "succeeded"
    doc = http.get(f"/indexes/{index_uid}/documents/0", params={"retrieveVectors": "true"}).json()
    assert doc["name"] == "kefir2" and doc["_vectors"]["manual"]["embeddings"] == [[0.0, 0.0, 1.0]]


def test_search_kinds(http: httpx.Client, index_uid: str) -> None:
    setup(http, index_uid)
    body = search(
        http,
        index_uid,
        {
            "vector": [1, 1, 1],
            "hybrid": {"embedder": "manual"},
            "showRankingScore": True,
            "showRankingScoreDetails": True,
            "retrieveVectors": True,
            "limit": 2,
        },
    )
    assert list(body) == [
        "hits",
        "query",
        "queryVector",
        "processingTimeMs",
        "limit",
        "offset",
        "estimatedTotalHits",
        "requestUid",
        "semanticHitCount",
    ]
    assert body["queryVector"] == [1.0, 1.0, 1.0]
    assert body["semanticHitCount"] == 2 and body["estimatedTotalHits"] == 5
    first = body["hits"][0]
    assert first["id"] in (1, 2) and abs(first["_rankingScore"] - 1.0) < 1e-5
    assert first["_rankingScoreDetails"]["vectorSort"]["order"] == 0
    assert "_vectors" in first
    threshold = search(
        http,
        index_uid,
        {
            "vector": [1, 1, 1],
            "hybrid": {"embedder": "manual", "semanticRatio": 1.0},
            "rankingScoreThreshold": 0.9,
        },
    )
    assert sorted(h["id"] for h in threshold["hits"]) == [1, 2, 4]  # kefir scores (1 + 3 ** -0.5) / 2
    hybrid = search(
        http,
        index_uid,
        {
            "q": "intel",
            "vector": [-1, -1, -1],
            "hybrid": {"embedder": "manual", "semanticRatio": 0.5},
            "limit": 3,
        },
    )
    ids = [h["id"] for h in hybrid["hits"]]
    assert ids[0] == 3 and 4 in ids  # keyword hit first (score 1 * 0.5), then the nearest vector
    assert hybrid["semanticHitCount"] == 2
    keyword = search(http, index_uid, {"q": "intel", "hybrid": {"embedder": "manual", "semanticRatio": 0.0}})
    assert "semanticHitCount" not in keyword and [h["id"] for h in keyword["hits"]] == [3]


def test_search_errors(http: httpx.Client, index_uid: str) -> None:
    setup(http, index_uid)
    res = http.post(f"/indexes/{index_uid}/search", json={"vector": [1, 1], "hybrid": {"embedder": "manual"}})
    assert res.status_code == 400
    assert res.json()["message"] == "Invalid vector dimensions: expected: `3`, found: `2`."
    res = http.post(
        f"/indexes/{index_uid}/search", json={"vector": [1, 1, 1], "hybrid": {"embedder": "nope"}}
    )
    assert res.json()["code"] == "invalid_search_embedder"
    res = http.post(f"/indexes/{index_uid}/search", json={"vector": [1, 1, 1]})
    assert res.json()["code"] == "missing_search_hybrid"


def test_deletes_remove_vectors(http: httpx.Client, index_uid: str) -> None:
    setup(http, index_uid)
    assert task_of(http, http.delete(f"/indexes/{index_uid}/documents/2"))["status"] == "succeeded"
    hits = search(http, index_uid, {"vector": [1, 1, 1], "hybrid": {"embedder": "manual"}})["hits"]
    assert [h["id"] for h in hits][:2] == [1, 4]
    assert task_of(http, http.delete(f"/indexes/{index_uid}/documents"))["status"] == "succeeded"
    body = search(http, index_uid, {"vector": [1, 1, 1], "hybrid": {"embedder": "manual"}})
    assert body["hits"] == [] and body["estimatedTotalHits"] == 0 and body["semanticHitCount"] == 0


def test_similar(http: httpx.Client, index_uid: str) -> None:
    setup(http, index_uid)
    res = http.post(
        f"/indexes/{index_uid}/similar", json={"id": 1, "embedder": "manual", "showRankingScore": True}
    )
    assert res.status_code == 200, res.text
    body = res.json()
    assert list(body) == ["hits", "id", "processingTimeMs", "limit", "offset", "estimatedTotalHits"]
    ids = [h["id"] for h in body["hits"]]
    assert ids == [2, 4, 0, 3]  # by cosine to [1, 1, 1]; the document itself is left out
    assert body["estimatedTotalHits"] == 4 and body["hits"][0]["_rankingScore"] > 0.99
    res = http.get(
        f"/indexes/{index_uid}/similar", params={"id": "1", "embedder": "manual", "limit": "1", "offset": "1"}
    )
    assert res.status_code == 200 and [h["id"] for h in res.json()["hits"]] == [4]
    res = http.post(f"/indexes/{index_uid}/similar", json={"id": 77, "embedder": "manual"})
    assert res.status_code == 400 and res.json()["code"] == "not_found_similar_id"
    res = http.post(f"/indexes/{index_uid}/similar", json={"id": "a b", "embedder": "manual"})
    assert res.json()["code"] == "invalid_similar_id"
    res = http.post(f"/indexes/{index_uid}/similar", json={"id": 1, "embedder": "nope"})
    assert res.json() == {
        "message": "Cannot find embedder with name `nope`.",
        "code": "invalid_similar_embedder",
        "type": "invalid_request",
        "link": LINK + "invalid_similar_embedder",
    }
