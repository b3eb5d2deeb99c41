"""`personalize` as Meilisearch answers it without a reranker (its personalization service is disabled
when no Cohere key is configured, and this build has none): the search runs, then reranking its hits
fails with `feature_not_enabled` (`crates/meilisearch/src/personalization/mod.rs`). Errors of the search
itself come first; in a multi-search the failure names its query."""

from __future__ import annotations

import httpx

from tests.conftest import wait_task

GATE = {
    "message": "reranking search results requires enabling the `personalization` experimental feature. "
    "See https://github.com/orgs/meilisearch/discussions/866",
    "code": "feature_not_enabled",
    "type": "invalid_request",
    "link": "https://docs.meilisearch.com/errors#feature_not_enabled",
}
PERSONALIZE = {"userContext": "a cook who likes spicy food"}


def _index(http: httpx.Client, uid: str) -> None:
    res = http.post(
        f"/indexes/{uid}/documents", json=[{"id": 1, "title": "chili"}, {"id": 2, "title": "pie"}]
    )
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"


def test_search_with_personalize(http: httpx.Client, index_uid: str) -> None:
    _index(http, index_uid)
    res = http.post(f"/indexes/{index_uid}/search", json={"q": "chili", "personalize": PERSONALIZE})
    assert res.status_code == 400
    assert res.json() == GATE
    res = http.get(f"/indexes/{index_uid}/search", params={"q": "chili", "personalizeUserContext": "cook"})
    assert res.status_code == 400
    assert res.json() == GATE
    # without it, or with `null`, the same search answers
    res = http.post(f"/indexes/{index_uid}/search", json={"q": "chili", "personalize": None})
    assert res.status_code == 200 and [h["id"] for h in res.json()["hits"]] == [1]


def test_search_errors_come_first(http: httpx.Client, index_uid: str) -> None:
    res = http.post("/indexes/no-such-index-personalize/search", json={"personalize": PERSONALIZE})
    assert res.status_code == 404 and res.json()["code"] == "index_not_found"
    _index(http, index_uid)
    res = http.post(
        f"/indexes/{index_uid}/search", json={"filter": "title = chili", "personalize": PERSONALIZE}
    )
    assert res.status_code == 400 and res.json()["code"] == "invalid_search_filter"
    # the parameter's own shape is checked when the body is read
    res = http.post(f"/indexes/{index_uid}/search", json={"personalize": {}})
    assert res.status_code == 400 and res.json()["code"] == "invalid_search_personalize"


def test_multi_search_with_personalize(http: httpx.Client, index_uid: str) -> None:
    _index(http, index_uid)
    res = http.post(
        "/multi-search",
        json={
            "queries": [
                {"indexUid": index_uid, "q": "pie"},
                {"indexUid": index_uid, "personalize": PERSONALIZE},
            ]
        },
    )
    assert res.status_code == 400
    assert res.json() == {**GATE, "message": f"Inside `.queries[1]`: {GATE['message']}"}
