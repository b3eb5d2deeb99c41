"""Settings routes over raw HTTP and through the official SDK, against a real server.

Covers GET defaults (exact body and key order), PATCH/DELETE `/settings`, every sub-route with its own
update verb, task details, index creation by updates (and not by deletions), 404/405/400 answers with
Meilisearch's code/type/status/link, persistence across a restart, and the SDK's settings methods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task
from tests.unit.test_settings_model import CONTRACT_DEFAULTS

SUB_ROUTES = {
    "displayedAttributes": ("displayed-attributes", "PUT"),
    "searchableAttributes": ("searchable-attributes", "PUT"),
    "filterableAttributes": ("filterable-attributes", "PUT"),
    "sortableAttributes": ("sortable-attributes", "PUT"),
    "rankingRules": ("ranking-rules", "PUT"),
    "stopWords": ("stop-words", "PUT"),
    "nonSeparatorTokens": ("non-separator-tokens", "PUT"),
    "separatorTokens": ("separator-tokens", "PUT"),
    "dictionary": ("dictionary", "PUT"),
    "synonyms": ("synonyms", "PUT"),
    "distinctAttribute": ("distinct-attribute", "PUT"),
    "proximityPrecision": ("proximity-precision", "PUT"),
    "typoTolerance": ("typo-tolerance", "PATCH"),
    "faceting": ("faceting", "PATCH"),
    "pagination": ("pagination", "PATCH"),
    "embedders": ("embedders", "PATCH"),
    "searchCutoffMs": ("search-cutoff-ms", "PUT"),
    "localizedAttributes": ("localized-attributes", "PUT"),
    "facetSearch": ("facet-search", "PUT"),
    "prefixSearch": ("prefix-search", "PUT"),
}

# setting -> (body sent to its sub-route, value GET answers afterwards, task details value)
CASES: dict[str, tuple[Any, Any, Any]] = {
    "displayedAttributes": (["title", "id"], ["title", "id"], ["title", "id"]),
    "searchableAttributes": (["title", "overview"], ["title", "overview"], ["title", "overview"]),
    "filterableAttributes": (
        ["genre", {"attributePatterns": ["price"]}],
        [
            "genre",
            {
                "attributePatterns": ["price"],
                "features": {"facetSearch": False, "filter": {"equality": True, "comparison": False}},
            },
        ],
        [
            "genre",
            {
                "attributePatterns": ["price"],
                "features": {"facetSearch": False, "filter": {"equality": True, "comparison": False}},
            },
        ],
    ),
    "sortableAttributes": (["price", "genre", "price"], ["genre", "price"], ["genre", "price"]),
    "rankingRules": (
        ["words", "attribute", "price:desc"],
        ["words", "attribute", "price:desc"],
        ["words", "attribute", "price:desc"],
    ),
    "stopWords": (["the", "a", "the"], ["a", "the"], ["a", "the"]),
    "nonSeparatorTokens": (["@", "#"], ["#", "@"], ["#", "@"]),
    "separatorTokens": (["|"], ["|"], ["|"]),
    "dictionary": (["J. R. R."], ["J. R. R."], ["J. R. R."]),
    "synonyms": ({"puppy": ["dog", "doggo"]}, {"puppy": ["dog", "doggo"]}, {"puppy": ["dog", "doggo"]}),
    "distinctAttribute": ("sku", "sku", "sku"),
    "proximityPrecision": ("byAttribute", "byAttribute", "byAttribute"),
    "typoTolerance": (
        {"enabled": False},
        {
            "enabled": False,
            "minWordSizeForTypos": {"oneTypo": 5, "twoTypos": 9},
            "disableOnWords": [],
            "disableOnAttributes": [],
            "disableOnNumbers": False,
        },
        {"enabled": False},
    ),
    "faceting": (
        {"maxValuesPerFacet": 10},
        {"maxValuesPerFacet": 10, "sortFacetValuesBy": {"*": "alpha"}},
        {"maxValuesPerFacet": 10},
    ),
    "pagination": ({"maxTotalHits": 50}, {"maxTotalHits": 50}, {"maxTotalHits": 50}),
    "embedders": (
        {"e": {"source": "userProvided", "dimensions": 2}},
        {"e": {"source": "userProvided", "dimensions": 2}},
        {"e": {"source": "userProvided", "dimensions": 2}},
    ),
    "searchCutoffMs": (150, 150, 150),
    "localizedAttributes": (
        [{"attributePatterns": ["*_ja"], "locales": ["ja"]}],
        [{"attributePatterns": ["*_ja"], "locales": ["jpn"]}],
        [{"attributePatterns": ["*_ja"], "locales": ["jpn"]}],
    ),
    "facetSearch": (False, False, False),
    "prefixSearch": ("disabled", "disabled", "disabled"),
}
LINK = "https://docs.meilisearch.com/errors#"


def error(res: httpx.Response, status: int, code: str, message: str | None = None) -> None:
    assert res.status_code == status, res.text
    body = res.json()
    assert list(body) == ["message", "code", "type", "link"]
    assert body["code"] == code and body["type"] == "invalid_request" and body["link"] == LINK + code
    if message is not None:
        assert body["message"] == message


def settings_task(
    http: httpx.Client, res: httpx.Response, uid: str, status: str = "succeeded"
) -> dict[str, Any]:
    assert res.status_code == 202, res.text
    summary = res.json()
    assert summary["type"] == "settingsUpdate" and summary["indexUid"] == uid
    task = wait_task(http, summary["taskUid"])
    assert task["status"] == status, task
    return task


def create_index(http: httpx.Client, uid: str) -> None:
    res = http.post("/indexes", json={"uid": uid})
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"


# ------------------------------------------------------------------------------------------------
# GET
# ------------------------------------------------------------------------------------------------


def test_fresh_index_has_the_contract_defaults(http: httpx.Client, index_uid: str) -> None:
    create_index(http, index_uid)
    res = http.get(f"/indexes/{index_uid}/settings")
    assert res.status_code == 200
    assert res.headers["content-type"] == "application/json"
    assert res.json() == CONTRACT_DEFAULTS
    assert list(res.json()) == list(CONTRACT_DEFAULTS)
    for name, (path, _) in SUB_ROUTES.items():
        sub = http.get(f"/indexes/{index_uid}/settings/{path}")
        assert sub.status_code == 200 and sub.json() == CONTRACT_DEFAULTS[name], name


@pytest.mark.parametrize("path", ["", *(f"/{p}" for p, _ in SUB_ROUTES.values())])
def test_get_on_missing_index_is_404(http: httpx.Client, index_uid: str, path: str) -> None:
    error(
        http.get(f"/indexes/{index_uid}/settings{path}"),
        404,
        "index_not_found",
        f"Index `{index_uid}` not found.",
    )


# ------------------------------------------------------------------------------------------------
# Sub-routes
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SUB_ROUTES))
def test_sub_route_update_get_and_reset(http: httpx.Client, index_uid: str, name: str) -> None:
    path, verb = SUB_ROUTES[name]
    url = f"/indexes/{index_uid}/settings/{path}"
    sent, stored, details = CASES[name]
    # the update creates the missing index
    task = settings_task(http, http.request(verb, url, json=sent), index_uid)
    assert task["details"] == {name: details}
    assert http.get(url).json() == stored
    whole = http.get(f"/indexes/{index_uid}/settings").json()
    assert whole == {**CONTRACT_DEFAULTS, name: stored}

    task = settings_task(http, http.delete(url), index_uid)
    reset = ["*"] if name in ("displayedAttributes", "searchableAttributes") else None
    assert task["details"] == {name: reset}
    assert http.get(url).json() == CONTRACT_DEFAULTS[name]

    # `null` as the body resets too
    settings_task(http, http.request(verb, url, json=sent), index_uid)
    settings_task(
        http,
        http.request(verb, url, content=b"null", headers={"content-type": "application/json"}),
        index_uid,
    )
    assert http.get(f"/indexes/{index_uid}/settings").json() == CONTRACT_DEFAULTS


@pytest.mark.parametrize("name", ["stopWords", "typoTolerance"])
def test_sub_route_wrong_verb_is_405(http: httpx.Client, index_uid: str, name: str) -> None:
    path, verb = SUB_ROUTES[name]
    wrong = "PATCH" if verb == "PUT" else "PUT"
    res = http.request(wrong, f"/indexes/{index_uid}/settings/{path}", json=CASES[name][0])
    assert res.status_code == 405 and res.content == b""
    assert http.post(f"/indexes/{index_uid}/settings", json={}).status_code == 405


def test_patch_sub_routes_merge(http: httpx.Client, index_uid: str) -> None:
    url = f"/indexes/{index_uid}/settings/typo-tolerance"
    settings_task(
        http,
        http.patch(url, json={"disableOnWords": ["b", "a"], "minWordSizeForTypos": {"oneTypo": 4}}),
        index_uid,
    )
    settings_task(
        http, http.patch(url, json={"enabled": False, "minWordSizeForTypos": {"twoTypos": 7}}), index_uid
    )
    assert http.get(url).json() == {
        "enabled": False,
        "minWordSizeForTypos": {"oneTypo": 4, "twoTypos": 7},
        "disableOnWords": ["a", "b"],
        "disableOnAttributes": [],
        "disableOnNumbers": False,
    }
    url = f"/indexes/{index_uid}/settings/embedders"
    settings_task(
        http,
        http.patch(
            url,
            json={
                "a": {"source": "userProvided", "dimensions": 2},
                "b": {"source": "userProvided", "dimensions": 3},
            },
        ),
        index_uid,
    )
    settings_task(http, http.patch(url, json={"a": None, "b": {"dimensions": 4}}), index_uid)
    assert http.get(url).json() == {"b": {"source": "userProvided", "dimensions": 4}}


# ------------------------------------------------------------------------------------------------
# PATCH / DELETE /settings
# ------------------------------------------------------------------------------------------------


def test_partial_updates_and_reset_all(http: httpx.Client, index_uid: str) -> None:
    url = f"/indexes/{index_uid}/settings"
    task = settings_task(
        http,
        http.patch(url, json={"searchableAttributes": ["bar"], "displayedAttributes": ["foo"]}),
        index_uid,
    )
    assert task["details"] == {"displayedAttributes": ["foo"], "searchableAttributes": ["bar"]}
    assert list(task["details"]) == ["displayedAttributes", "searchableAttributes"]
    settings_task(
        http,
        http.patch(
            url,
            json={
                "stopWords": ["the"],
                "rankingRules": ["typo", "words"],
                "displayedAttributes": ["*", "foo"],
            },
        ),
        index_uid,
    )
    current = http.get(url).json()
    assert current["displayedAttributes"] == ["*"] and current["searchableAttributes"] == ["bar"]
    assert current["stopWords"] == ["the"] and current["rankingRules"] == ["typo", "words"]

    task = settings_task(http, http.delete(url), index_uid)
    cleared = list(CONTRACT_DEFAULTS)
    cleared.insert(cleared.index("rankingRules"), "foreignKeys")
    assert list(task["details"]) == [*cleared, "chat"]  # Meilisearch's `Settings::cleared()`
    assert task["details"]["searchableAttributes"] == ["*"] and task["details"]["stopWords"] is None
    assert http.get(url).json() == CONTRACT_DEFAULTS


def test_settings_details_mask_embedder_api_keys(http: httpx.Client, index_uid: str) -> None:
    body = {
        "embedders": {
            "default": {
                "source": "rest",
                "url": "https://localhost:7777",
                "apiKey": "My super secret value you will never guess",
                "dimensions": 4,
                "request": "{{text}}",
                "response": "{{embedding}}",
            }
        }
    }
    task = settings_task(http, http.patch(f"/indexes/{index_uid}/settings", json=body), index_uid)
    assert task["details"] == {
        "embedders": {
            "default": {
                "source": "rest",
                "apiKey": "My suXXXXXX...",
                "dimensions": 4,
                "url": "https://localhost:7777",
                "request": "{{text}}",
                "response": "{{embedding}}",
            }
        }
    }
    assert (
        http.get(f"/indexes/{index_uid}/settings/embedders").json()["default"]["apiKey"] == "My suXXXXXX..."
    )


def test_update_creates_the_index_but_deletion_does_not(http: httpx.Client, index_uid: str) -> None:
    task = settings_task(http, http.delete(f"/indexes/{index_uid}/settings"), index_uid, status="failed")
    assert task["error"]["code"] == "index_not_found"
    task = settings_task(
        http, http.delete(f"/indexes/{index_uid}/settings/stop-words"), index_uid, status="failed"
    )
    assert task["error"] == {
        "message": f"Index `{index_uid}` not found.",
        "code": "index_not_found",
        "type": "invalid_request",
        "link": LINK + "index_not_found",
    }
    assert http.get(f"/indexes/{index_uid}").status_code == 404
    settings_task(http, http.patch(f"/indexes/{index_uid}/settings", json={}), index_uid)
    assert http.get(f"/indexes/{index_uid}").status_code == 200
    settings_task(http, http.delete(f"/indexes/{index_uid}/settings"), index_uid)


def test_settings_and_documents_batch_together(http: httpx.Client, index_uid: str) -> None:
    first = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 1, "title": "a"}]).json()["taskUid"]
    res = http.patch(f"/indexes/{index_uid}/settings", json={"sortableAttributes": ["title"]})
    last = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 2, "title": "b"}]).json()["taskUid"]
    assert wait_task(http, first)["status"] == "succeeded"
    settings_task(http, res, index_uid)
    assert wait_task(http, last)["status"] == "succeeded"
    assert http.get(f"/indexes/{index_uid}/settings/sortable-attributes").json() == ["title"]
    assert http.get(f"/indexes/{index_uid}/documents").json()["total"] == 2


# ------------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------------


def test_validation_errors(http: httpx.Client, index_uid: str) -> None:
    url = f"/indexes/{index_uid}/settings"
    error(
        http.patch(url, json={"displayedAttributes": "doggo"}),
        400,
        "invalid_settings_displayed_attributes",
        'Invalid value type at `.displayedAttributes`: expected an array, but found a string: `"doggo"`',
    )
    error(
        http.put(f"{url}/displayed-attributes", json="doggo"),
        400,
        "invalid_settings_displayed_attributes",
        'Invalid value type: expected an array, but found a string: `"doggo"`',
    )
    error(
        http.patch(url, json={"rankingRules": ["manyTheFish"]}),
        400,
        "invalid_settings_ranking_rules",
        "Invalid value at `.rankingRules[0]`: `manyTheFish` ranking rule is invalid. Valid ranking rules are "
        "words, typo, sort, proximity, attribute, exactness and custom ranking rules.",
    )
    error(
        http.put(f"{url}/ranking-rules", json=["attribute", "attributeRank"]),
        400,
        "invalid_settings_ranking_rules",
        "Mixed usage of the attribute, attributeRank, and wordPosition ranking rules. You must either use the "
        "attribute ranking rule alone or the attributeRank and wordPosition ranking rules.",
    )
    error(
        http.patch(f"{url}/pagination", json={"maxTotalHits": 0}),
        400,
        "invalid_settings_pagination",
        "Invalid value at `.maxTotalHits`: a non-zero integer value lower than `18446744073709551615` was "
        "expected, but found a zero",
    )
    error(http.patch(url, json={"foo": 12}), 400, "bad_request")
    error(
        http.patch(url, content=b"", headers={"content-type": "application/json"}),
        400,
        "missing_payload",
        "A json payload is missing.",
    )
    error(http.patch(url, content=b"{}"), 415, "missing_content_type")
    error(http.patch("/indexes/bad!uid/settings", json={}), 400, "invalid_index_uid")
    error(http.get("/indexes/bad!uid/settings/stop-words"), 400, "invalid_index_uid")
    # nothing was enqueued by the refused requests
    assert http.get(f"/indexes/{index_uid}").status_code == 404


def test_typo_bound_conflicting_with_stored_one_fails_the_task(http: httpx.Client, index_uid: str) -> None:
    res = http.patch(
        f"/indexes/{index_uid}/settings/typo-tolerance", json={"minWordSizeForTypos": {"oneTypo": 10}}
    )
    task = settings_task(http, res, index_uid, status="failed")
    assert task["error"]["code"] == "invalid_settings_typo_tolerance"
    assert task["error"]["message"] == (
        f"Index `{index_uid}`: `minWordSizeForTypos` setting is invalid. `oneTypo` and `twoTypos` fields should "
        "be between `0` and `255`, and `twoTypos` should be greater or equals to `oneTypo` but found "
        "`oneTypo: 10` and twoTypos: 9`."
    )
    assert task["details"] == {"typoTolerance": {"minWordSizeForTypos": {"oneTypo": 10}}}
    assert (
        http.get(f"/indexes/{index_uid}/settings/typo-tolerance").json() == CONTRACT_DEFAULTS["typoTolerance"]
    )


# ------------------------------------------------------------------------------------------------
# Persistence
# ------------------------------------------------------------------------------------------------


def test_settings_survive_a_restart(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms").start()
    body = {
        "searchableAttributes": ["title"],
        "stopWords": ["the"],
        "typoTolerance": {"enabled": False},
        "embedders": {"e": {"source": "userProvided", "dimensions": 2}},
    }
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            settings_task(http, http.patch("/indexes/kept/settings", json=body), "kept")
            before = http.get("/indexes/kept/settings").json()
        srv.stop()
        srv.start()
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            after = http.get("/indexes/kept/settings").json()
    finally:
        srv.stop()
    assert after == before
    assert after["searchableAttributes"] == ["title"] and after["typoTolerance"]["enabled"] is False


# ------------------------------------------------------------------------------------------------
# Official SDK
# ------------------------------------------------------------------------------------------------


def test_sdk_settings_methods(client: Any, index_uid: str) -> None:
    index = client.index(index_uid)
    task = index.update_settings(
        {
            "rankingRules": ["words", "typo", "sort", "exactness"],
            "filterableAttributes": ["genre"],
            "synonyms": {"car": ["auto"]},
        }
    )
    assert client.wait_for_task(task.task_uid).status == "succeeded"
    settings = index.get_settings()
    assert settings["rankingRules"] == ["words", "typo", "sort", "exactness"]
    assert settings["filterableAttributes"] == ["genre"] and settings["synonyms"] == {"car": ["auto"]}
    assert list(settings) == list(CONTRACT_DEFAULTS)

    client.wait_for_task(index.update_typo_tolerance({"disableOnAttributes": ["sku"]}).task_uid)
    typo = index.get_typo_tolerance()
    assert typo.enabled is True and typo.disable_on_attributes == ["sku"]
    assert typo.min_word_size_for_typos is not None and typo.min_word_size_for_typos.two_typos == 9

    client.wait_for_task(index.update_pagination_settings({"maxTotalHits": 42}).task_uid)
    assert index.get_pagination_settings().max_total_hits == 42
    client.wait_for_task(index.update_stop_words(["b", "a"]).task_uid)
    assert index.get_stop_words() == ["a", "b"]
    client.wait_for_task(index.update_faceting_settings({"sortFacetValuesBy": {"genre": "count"}}).task_uid)
    assert index.get_faceting_settings().sort_facet_values_by == {"*": "alpha", "genre": "count"}

    client.wait_for_task(index.reset_stop_words().task_uid)
    assert index.get_stop_words() == []
    client.wait_for_task(index.reset_settings().task_uid)
    assert index.get_settings() == CONTRACT_DEFAULTS
