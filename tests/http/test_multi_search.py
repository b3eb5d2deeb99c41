"""`POST /multi-search` against a real server, compared field by field with Meilisearch's
`tests/search/multi/mod.rs` snapshots: non-federated results, federated merges with weights across
indexes, pagination, `queryPosition`, facets by index, the metadata header, per-query authorization and
every error of docs/api-contract.md §3.10.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

import httpx
import meilisearch
import pytest

from tests.conftest import MASTER_KEY, ServerProcess
from tests.http.test_search_route import DOCUMENTS, NESTED_DOCUMENTS, make_index

UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
LINK = "https://docs.meilisearch.com/errors#"
SCORE_DOCUMENTS = [
    {"title": "Batman the dark knight returns: Part 1", "id": "A"},
    {"title": "Batman the dark knight returns: Part 2", "id": "B"},
    {"title": "Batman Returns", "id": "C"},
    {"title": "Batman", "id": "D"},
    {"title": "Badman", "id": "E"},
]
QUERY_FIELDS = (
    "indexUid",
    "q",
    "offset",
    "limit",
    "page",
    "hitsPerPage",
    "attributesToRetrieve",
    "attributesToCrop",
    "cropLength",
    "cropMarker",
    "attributesToHighlight",
    "highlightPreTag",
    "highlightPostTag",
    "showMatchesPosition",
    "filter",
    "sort",
    "distinct",
    "facets",
    "matchingStrategy",
    "attributesToSearchOn",
    "rankingScoreThreshold",
    "locales",
    "hybrid",
    "vector",
    "retrieveVectors",
    "media",
    "personalize",
    "useNetwork",
    "showRankingScore",
    "showRankingScoreDetails",
    "showPerformanceDetails",
    "federationOptions",
)
MOVIES, NESTED, SCORES = "multi_movies", "multi_nested", "multi_scores"


def error(code: str, message: str, kind: str = "invalid_request") -> dict[str, str]:
    return {"message": message, "code": code, "type": kind, "link": LINK + code}


def fails(res: httpx.Response, status: int, code: str, message: str, kind: str = "invalid_request") -> None:
    assert (res.status_code, res.json()) == (status, error(code, message, kind)), res.text


def ok(res: httpx.Response) -> dict[str, Any]:
    assert res.status_code == 200, res.text
    body: dict[str, Any] = res.json()
    return body


def federated(http: httpx.Client, queries: list[dict[str, Any]], **federation: Any) -> dict[str, Any]:
    body = ok(http.post("/multi-search", json={"federation": federation, "queries": queries}))
    assert isinstance(body.pop("processingTimeMs"), int)
    assert UUID7.fullmatch(body.pop("requestUid"))
    return body


def fed(uid: str, position: int, score: float) -> dict[str, Any]:
    return {
        "indexUid": uid,
        "queriesPosition": position,
        "weightedRankingScore": pytest.approx(score, abs=1e-12),
    }


@pytest.fixture(scope="module", autouse=True)
def indexes(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        make_index(http, MOVIES, DOCUMENTS)
        make_index(http, NESTED, NESTED_DOCUMENTS)
        make_index(http, SCORES, SCORE_DOCUMENTS)


# -- body errors -----------------------------------------------------------------------------------


def test_empty_lists(http: httpx.Client) -> None:
    assert ok(http.post("/multi-search", json={"queries": []})) == {"results": []}
    body = ok(http.post("/multi-search", json={"federation": {}, "queries": []}))
    assert list(body) == ["hits", "processingTimeMs", "limit", "offset", "estimatedTotalHits", "requestUid"]
    assert {k: v for k, v in body.items() if k not in ("processingTimeMs", "requestUid")} == {
        "hits": [],
        "limit": 20,
        "offset": 0,
        "estimatedTotalHits": 0,
    }


def test_body_shape_errors(http: httpx.Client) -> None:
    fails(http.post("/multi-search", json={}), 400, "bad_request", "Missing field `queries`")
    fails(http.post("/multi-search", json={"federation": {}}), 400, "bad_request", "Missing field `queries`")
    fails(
        http.post("/multi-search", json=[]),
        400,
        "bad_request",
        "Invalid value type: expected an object, but found an array: `[]`",
    )
    fails(
        http.post("/multi-search", json={"queries": [{"q": "glass"}]}),
        400,
        "missing_index_uid",
        "Missing field `indexUid` inside `.queries[0]`",
    )
    fails(
        http.post("/multi-search", json={"federation": {}, "queries": [{"indexUid": "hé", "q": "glass"}]}),
        400,
        "invalid_index_uid",
        "Invalid value at `.queries[0].indexUid`: `hé` is not a valid index uid. Index uid "
        "can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), "
        "and can not be more than 512 bytes.",
    )
    accepted = ", ".join(f"`{name}`" for name in QUERY_FIELDS)
    fails(
        http.post("/multi-search", json={"queries": [{"indexUid": MOVIES, "lmit": 1}]}),
        400,
        "bad_request",
        f"Unknown field `lmit` inside `.queries[0]`: did you mean `limit`? expected one of {accepted}",
    )
    fails(
        http.post("/multi-search", json={"queries": [{"indexUid": MOVIES, "locales": ["xx"]}]}),
        400,
        "invalid_search_locales",
        "Unknown value `xx` at `.queries[0].locales[0]`: "
        + http.post("/indexes/x/search", json={"locales": ["xx"]}).json()["message"].split(": ", 1)[1],
    )


def test_federation_option_errors(http: httpx.Client) -> None:
    fails(
        http.post(
            "/multi-search",
            json={
                "federation": {},
                "queries": [
                    {"indexUid": MOVIES, "q": "apple"},
                    {"indexUid": MOVIES, "federationOptions": {"weight": -12}},
                ],
            },
        ),
        400,
        "invalid_multi_search_weight",
        "Invalid value at `.queries[1].federationOptions.weight`: the value of "
        "`weight` is invalid, expected a positive float (>= 0.0).",
    )
    fails(
        http.post(
            "/multi-search",
            json={
                "federation": {},
                "queries": [{"indexUid": MOVIES, "federationOptions": {"weight": 1, "boost": 2}}],
            },
        ),
        400,
        "bad_request",
        "Unknown field `boost` inside `.queries[0].federationOptions`: expected one of `weight`, `remote`, "
        "`queryPosition`",
    )
    fails(
        http.post(
            "/multi-search",
            json={
                "federation": {},
                "queries": [{"indexUid": MOVIES, "federationOptions": {"queryPosition": -1}}],
            },
        ),
        400,
        "invalid_multi_search_query_position",
        "Invalid value type at `.queries[0].federationOptions.queryPosition`"
        ": expected a positive integer, but found a negative integer: `-1`",
    )
    fails(
        http.post("/multi-search", json={"federation": {"limit": "x"}, "queries": []}),
        400,
        "invalid_search_limit",
        'Invalid value type at `.federation.limit`: expected a positive integer, but found a string: `"x"`',
    )
    fails(
        http.post(
            "/multi-search", json={"federation": {"mergeFacets": {"maxValuesPerFacet": -1}}, "queries": []}
        ),
        400,
        "invalid_multi_search_max_values_per_facet",
        "Invalid value type at `.federation.mergeFacets."
        "maxValuesPerFacet`: expected a positive integer, but found a negative integer: `-1`",
    )
    fails(
        http.post("/multi-search", json={"federation": {"facetsByIndex": {"hé": []}}, "queries": []}),
        400,
        "invalid_multi_search_facets_by_index",
        "Invalid value at `.federation.facetsByIndex.hé`: `hé` is not a "
        "valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, "
        "hyphens (-) and underscores (_), and can not be more than 512 bytes.",
    )


def test_federation_options_without_federation(http: httpx.Client) -> None:
    fails(
        http.post(
            "/multi-search",
            json={
                "queries": [
                    {"indexUid": MOVIES, "q": "apple red"},
                    {"indexUid": MOVIES, "q": "apple red", "federationOptions": {}},
                ]
            },
        ),
        400,
        "invalid_multi_search_federation_options",
        "Inside `.queries[1]`: Using `federationOptions` is not allowed in a non-federated search.\n - Hint: remove "
        "`federationOptions` from query #1 or add `federation` to the request.",
    )


@pytest.mark.parametrize("parameter", ["limit", "offset", "page", "hitsPerPage"])
def test_pagination_inside_a_federated_query(http: httpx.Client, parameter: str) -> None:
    fails(
        http.post(
            "/multi-search",
            json={
                "federation": {},
                "queries": [
                    {"indexUid": MOVIES, "q": "apple red"},
                    {"indexUid": MOVIES, "q": "apple red", parameter: 5},
                ],
            },
        ),
        400,
        "invalid_multi_search_query_pagination",
        "Inside `.queries[1]`: Using pagination options is not allowed in federated queries.\n - Hint: remove "
        f"`{parameter}` from query #1 or remove `federation` from the request\n - Hint: pass `federation.limit` and "
        "`federation.offset` for pagination in federated search",
    )


def test_facets_inside_a_federated_query(http: httpx.Client) -> None:
    queries = [{"indexUid": SCORES, "q": "badman"}, {"indexUid": SCORES, "q": "badman", "facets": []}]
    assert federated(http, queries)["hits"][0] == {**SCORE_DOCUMENTS[4], "_federation": fed(SCORES, 0, 1.0)}
    queries[1]["facets"] = ["BOOSTED"]
    fails(
        http.post("/multi-search", json={"federation": {}, "queries": queries}),
        400,
        "invalid_multi_search_query_facets",
        "Inside `.queries[1]`: Using facet options is not allowed in federated queries.\n - Hint: remove `facets` "
        "from query #1 or remove `federation` from the request\n - Hint: pass `federation.facetsByIndex."
        f'{SCORES}: ["BOOSTED"]` for facets in federated search',
    )


# -- non-federated ---------------------------------------------------------------------------------


def test_simple_search_two_indexes(http: httpx.Client) -> None:
    body = ok(
        http.post(
            "/multi-search",
            json={"queries": [{"indexUid": MOVIES, "q": "glass"}, {"indexUid": NESTED, "q": "pésti"}]},
        )
    )
    results = body["results"]
    request_uids = {r.pop("requestUid") for r in results}
    assert len(request_uids) == 1 and UUID7.fullmatch(request_uids.pop())
    for r in results:
        assert isinstance(r.pop("processingTimeMs"), int)
    assert results == [
        {
            "indexUid": MOVIES,
            "hits": [DOCUMENTS[4]],
            "query": "glass",
            "limit": 20,
            "offset": 0,
            "estimatedTotalHits": 1,
        },
        {
            "indexUid": NESTED,
            "hits": [NESTED_DOCUMENTS[0], NESTED_DOCUMENTS[1]],
            "query": "pésti",
            "limit": 20,
            "offset": 0,
            "estimatedTotalHits": 2,
        },
    ]
    assert list(body["results"][0]) == ["indexUid", "hits", "query", "limit", "offset", "estimatedTotalHits"]


def test_non_federated_results_keep_each_query_parameters(http: httpx.Client) -> None:
    results = ok(
        http.post(
            "/multi-search",
            json={
                "queries": [
                    {"indexUid": SCORES, "q": "batman", "limit": 1, "attributesToRetrieve": ["id"]},
                    {
                        "indexUid": SCORES,
                        "q": "batman",
                        "page": 2,
                        "hitsPerPage": 2,
                        "attributesToRetrieve": ["id"],
                    },
                ]
            },
        )
    )["results"]
    assert [r["hits"] for r in results] == [[{"id": "D"}], [{"id": "A"}, {"id": "B"}]]
    assert (results[0]["limit"], results[0]["estimatedTotalHits"]) == (1, 5)  # "Badman" with a typo
    assert (results[1]["page"], results[1]["totalPages"], results[1]["totalHits"]) == (2, 3, 5)


def test_missing_indexes_answer_400(http: httpx.Client) -> None:
    fails(
        http.post(
            "/multi-search",
            json={"queries": [{"indexUid": MOVIES, "q": "glass"}, {"indexUid": "multi_absent", "q": "x"}]},
        ),
        400,
        "index_not_found",
        "Inside `.queries[1]`: Index `multi_absent` not found.",
    )
    fails(
        http.post(
            "/multi-search",
            json={
                "queries": [{"indexUid": "multi_test", "q": "glass"}, {"indexUid": "multi_nest", "q": "x"}]
            },
        ),
        400,
        "index_not_found",
        "Inside `.queries[0]`: Index `multi_test` not found.",
    )
    # federated: indexes are searched in uid order, the error names the first query on that index
    fails(
        http.post(
            "/multi-search",
            json={
                "federation": {},
                "queries": [{"indexUid": "multi_test", "q": "glass"}, {"indexUid": "multi_nest", "q": "x"}],
            },
        ),
        400,
        "index_not_found",
        "Inside `.queries[1]`: Index `multi_nest` not found.",
    )


def test_query_errors_name_the_query(http: httpx.Client) -> None:
    fails(
        http.post(
            "/multi-search",
            json={
                "queries": [
                    {"indexUid": MOVIES, "q": "glass", "facets": ["color"]},
                    {"indexUid": NESTED, "q": "pésti"},
                ]
            },
        ),
        400,
        "invalid_search_facets",
        "Inside `.queries[0]`: Invalid facet distribution: Attribute `color` is not "
        "filterable. This index does not have configured filterable attributes.",
    )
    fails(
        http.post(
            "/multi-search",
            json={
                "federation": {},
                "queries": [
                    {"indexUid": MOVIES, "q": "glass"},
                    {"indexUid": NESTED, "q": "pésti", "sort": ["mother:desc"]},
                ],
            },
        ),
        400,
        "invalid_search_sort",
        f"Inside `.queries[1]`: Index `{NESTED}`: Attribute `mother` is not sortable. "
        "This index does not have configured sortable attributes.",
    )


# -- federated -------------------------------------------------------------------------------------


def test_federated_single_index_several_queries(http: httpx.Client) -> None:
    body = federated(
        http,
        [{"indexUid": SCORES, "q": q} for q in ("the bat", "badman returns", "batman", "batman returns")],
    )
    assert body == {
        "hits": [
            {"title": "Batman", "id": "D", "_federation": fed(SCORES, 2, 1.0)},
            {"title": "Batman Returns", "id": "C", "_federation": fed(SCORES, 3, 1.0)},
            {
                "title": "Batman the dark knight returns: Part 1",
                "id": "A",
                "_federation": fed(SCORES, 2, 0.9848484848484848),
            },
            {
                "title": "Batman the dark knight returns: Part 2",
                "id": "B",
                "_federation": fed(SCORES, 2, 0.9848484848484848),
            },
            {"title": "Badman", "id": "E", "_federation": fed(SCORES, 1, 0.5)},
        ],
        "limit": 20,
        "offset": 0,
        "estimatedTotalHits": 5,
    }


MANY = [
    (MOVIES, "glass"),
    (MOVIES, "captain"),
    (NESTED, "pésti"),
    (MOVIES, "Escape"),
    (NESTED, "jean"),
    (SCORES, "jean"),
    (MOVIES, "the bat"),
    (SCORES, "the bat"),
    (SCORES, "badman returns"),
    (SCORES, "batman"),
    (SCORES, "batman returns"),
]
MANY_RANKING = [
    (MOVIES, "450465", 0, 1.0),
    (NESTED, 852, 2, 1.0),
    (SCORES, "D", 9, 1.0),
    (SCORES, "C", 10, 1.0),
    (MOVIES, "299537", 1, 0.9848484848484848),
    (MOVIES, "522681", 3, 0.9848484848484848),
    (NESTED, 951, 4, 0.9848484848484848),
    (SCORES, "A", 9, 0.9848484848484848),
    (SCORES, "B", 9, 0.9848484848484848),
    (NESTED, 654, 2, 0.7803030303030303),
    (SCORES, "E", 8, 0.5),
    (MOVIES, "166428", 6, 0.4166666666666667),
]


def _many_hits() -> list[dict[str, Any]]:
    return [{"id": uid, "_federation": fed(index, pos, score)} for index, uid, pos, score in MANY_RANKING]


def test_federated_many_queries_many_indexes(http: httpx.Client) -> None:
    queries = [{"indexUid": uid, "q": q, "attributesToRetrieve": ["id"]} for uid, q in MANY]
    assert federated(http, queries) == {
        "hits": _many_hits(),
        "limit": 20,
        "offset": 0,
        "estimatedTotalHits": 12,
    }
    assert federated(http, queries, limit=1) == {
        "hits": _many_hits()[:1],
        "limit": 1,
        "offset": 0,
        "estimatedTotalHits": 12,
    }
    assert federated(http, queries, offset=2) == {
        "hits": _many_hits()[2:],
        "limit": 20,
        "offset": 2,
        "estimatedTotalHits": 12,
    }
    assert federated(http, queries, offset=12) == {
        "hits": [],
        "limit": 20,
        "offset": 12,
        "estimatedTotalHits": 12,
    }


def test_federated_page_mode(http: httpx.Client) -> None:
    queries = [{"indexUid": uid, "q": q, "attributesToRetrieve": ["id"]} for uid, q in MANY]
    body = federated(http, queries, page=2, hitsPerPage=5)
    assert list(body) == ["hits", "hitsPerPage", "page", "totalPages", "totalHits"]
    assert body == {"hits": _many_hits()[5:10], "hitsPerPage": 5, "page": 2, "totalPages": 3, "totalHits": 12}
    assert federated(http, queries, page=3, hitsPerPage=5)["hits"] == _many_hits()[10:]
    assert federated(http, queries, page=0) == {
        "hits": [],
        "hitsPerPage": 20,
        "page": 0,
        "totalPages": 1,
        "totalHits": 12,
    }
    assert federated(http, queries, hitsPerPage=0) == {
        "hits": [],
        "hitsPerPage": 0,
        "page": 1,
        "totalPages": 0,
        "totalHits": 12,
    }


def test_weights_across_two_indexes(http: httpx.Client) -> None:
    queries = [
        {"indexUid": MOVIES, "q": "glass", "showRankingScore": True, "federationOptions": {"weight": 0.5}},
        {
            "indexUid": NESTED,
            "q": "pésti",
            "showRankingScore": True,
            "attributesToRetrieve": ["id"],
            "federationOptions": {"weight": 2.0},
        },
    ]
    body = federated(http, queries)
    assert body == {
        "hits": [
            {"id": 852, "_federation": fed(NESTED, 1, 2.0), "_rankingScore": 1.0},
            {
                "id": 654,
                "_federation": fed(NESTED, 1, 2 * 0.7803030303030303),
                "_rankingScore": 0.7803030303030303,
            },
            {**DOCUMENTS[4], "_federation": fed(MOVIES, 0, 0.5), "_rankingScore": 1.0},
        ],
        "limit": 20,
        "offset": 0,
        "estimatedTotalHits": 3,
    }
    for hit in body["hits"]:  # the weighted score is exactly `_rankingScore × weight`
        weight = 0.5 if hit["_federation"]["indexUid"] == MOVIES else 2.0
        assert hit["_federation"]["weightedRankingScore"] == hit["_rankingScore"] * weight
    queries[0]["federationOptions"] = {"weight": 0.0}
    assert [h.get("id") for h in federated(http, queries)["hits"]] == [852, 654, "450465"]
    assert federated(http, queries)["hits"][-1]["_federation"]["weightedRankingScore"] == 0.0


def test_same_document_from_two_queries_appears_once(http: httpx.Client) -> None:
    body = federated(
        http,
        [
            {"indexUid": SCORES, "q": "batman returns", "attributesToRetrieve": ["id"]},
            {"indexUid": SCORES, "q": "batman", "attributesToRetrieve": ["id"]},
        ],
    )
    ids = [h["id"] for h in body["hits"]]
    assert sorted(ids) == ["A", "B", "C", "D", "E"] and len(set(ids)) == len(ids)
    assert body["estimatedTotalHits"] == 5
    assert body["hits"][0] == {"id": "C", "_federation": fed(SCORES, 0, 1.0)}


def test_federation_field_order_with_formatting(http: httpx.Client) -> None:
    hits = federated(
        http,
        [
            {
                "indexUid": SCORES,
                "q": "batman",
                "attributesToRetrieve": ["title"],
                "attributesToHighlight": ["title"],
                "showRankingScore": True,
            }
        ],
        limit=1,
    )["hits"]
    assert [list(h) for h in hits] == [["title", "_federation", "_formatted", "_rankingScore"]]
    assert hits[0]["_formatted"] == {"title": "<em>Batman</em>"}


def test_query_position_needs_the_network_feature(http: httpx.Client) -> None:
    queries = [
        {"indexUid": SCORES, "q": "badman", "federationOptions": {"queryPosition": 7}},
        {"indexUid": SCORES, "q": "batman", "attributesToRetrieve": ["id"]},
    ]
    fails(
        http.post("/multi-search", json={"federation": {}, "queries": queries}),
        400,
        "feature_not_enabled",
        "Inside `.queries[0]`: Using `federationOptions.queryPosition` requires enabling the `network` experimental feature. See "
        "https://github.com/orgs/meilisearch/discussions/805",
    )
    assert http.patch("/experimental-features", json={"network": True}).json()["network"] is True
    try:
        hits = federated(http, queries, limit=2)["hits"]
        assert hits == [
            {"id": "D", "_federation": fed(SCORES, 1, 1.0)},
            {"title": "Badman", "id": "E", "_federation": fed(SCORES, 7, 1.0)},
        ]
        fails(
            http.post(
                "/multi-search",
                json={
                    "federation": {},
                    "queries": [{"indexUid": SCORES, "federationOptions": {"remote": "ms0"}}],
                },
            ),
            400,
            "invalid_multi_search_remote",
            "Inside `.queries[0]`: Invalid `.federation_options.remote`: remote `ms0` is not registered",
        )
    finally:
        http.patch("/experimental-features", json={"network": False})
    fails(
        http.post(
            "/multi-search",
            json={
                "federation": {},
                "queries": [{"indexUid": SCORES, "federationOptions": {"remote": "ms0"}}],
            },
        ),
        400,
        "feature_not_enabled",
        "Inside `.queries[0]`: Performing a remote federated search requires enabling the `network` experimental feature. See "
        "https://github.com/orgs/meilisearch/discussions/805",
    )


def test_other_federated_query_refusals(http: httpx.Client) -> None:
    fails(
        http.post(
            "/multi-search",
            json={"federation": {}, "queries": [{"indexUid": SCORES, "personalize": {"userContext": "x"}}]},
        ),
        400,
        "invalid_multi_search_query_personalization",
        "Inside `.queries[0]`: Using `.personalize` is not allowed in federated queries.\n - Hint: remove "
        "`personalize` from query #0 or remove `federation` from the request",
    )
    res = http.post(
        "/multi-search",
        json={"federation": {}, "queries": [{"indexUid": SCORES, "showPerformanceDetails": False}]},
    )
    assert (res.status_code, res.json()["code"]) == (
        400,
        "invalid_multi_search_query_show_performance_details",
    )
    res = http.post(
        "/multi-search",
        json={"federation": {"distinct": "id"}, "queries": [{"indexUid": SCORES, "distinct": "id"}]},
    )
    assert (res.status_code, res.json()["code"]) == (400, "invalid_multi_search_distinct")
    assert res.json()["message"].startswith("Inside `.queries[0]`: ")


def test_federation_distinct_applies_to_every_query(http: httpx.Client) -> None:
    uid = make_index(http, "multi_distinct", NESTED_DOCUMENTS, {"filterableAttributes": ["mother"]})
    body = federated(http, [{"indexUid": uid, "attributesToRetrieve": ["mother"]}], distinct="mother")
    assert sorted(hit["mother"] for hit in body["hits"]) == ["michelle", "sabine", "sophie"]
    assert body["estimatedTotalHits"] == 3


# -- facets by index -------------------------------------------------------------------------------


def test_facets_by_index(http: httpx.Client) -> None:
    queries = [
        {"indexUid": SCORES, "q": "badman", "attributesToRetrieve": ["id"]},
        {"indexUid": MOVIES, "q": "glass", "attributesToRetrieve": ["id"]},
    ]
    body = federated(http, queries, facetsByIndex={SCORES: [], MOVIES: None})
    assert list(body)[-1] == "facetsByIndex"
    assert body["facetsByIndex"] == {SCORES: {"distribution": {}, "stats": {}}}
    body = federated(http, queries, facetsByIndex={SCORES: [], MOVIES: []}, mergeFacets={})
    assert (body["facetDistribution"], body["facetStats"]) == ({}, {})
    assert "facetsByIndex" not in body
    fails(
        http.post(
            "/multi-search", json={"federation": {"facetsByIndex": {MOVIES: ["color"]}}, "queries": queries}
        ),
        400,
        "invalid_multi_search_facets",
        f"Inside `.federation.facetsByIndex.{MOVIES}`: Invalid facet "
        "distribution: Attribute `color` is not filterable. This index does not have configured filterable "
        f"attributes.\n - Note: index `{MOVIES}` used in `.queries[1]`",
    )
    fails(
        http.post(
            "/multi-search", json={"federation": {"facetsByIndex": {NESTED: ["a", "b"]}}, "queries": queries}
        ),
        400,
        "invalid_multi_search_facets",
        f"Inside `.federation.facetsByIndex.{NESTED}`: Invalid facet "
        "distribution: Attributes `a, b` are not filterable. This index does not have configured filterable "
        f"attributes.\n - Note: index `{NESTED}` is not used in queries",
    )
    fails(
        http.post(
            "/multi-search", json={"federation": {"facetsByIndex": {"zorglub": ["a"]}}, "queries": queries}
        ),
        400,
        "index_not_found",
        "Inside `.federation.facetsByIndex.zorglub`: Index `zorglub` not found.\n - Note: "
        "index `zorglub` is not used in queries",
    )


def test_merge_facets_needs_a_consistent_order(http: httpx.Client, index_uid: str) -> None:
    # `*` facets are computable without filterable attributes (nothing to count), so the order check is
    # reached; a named facet would stop at "not filterable" on the first index
    counted = make_index(
        http, f"{index_uid}_count", DOCUMENTS, settings={"faceting": {"sortFacetValuesBy": {"*": "count"}}}
    )
    queries = [{"indexUid": MOVIES, "q": ""}, {"indexUid": counted, "q": ""}]
    federation = {"facetsByIndex": {MOVIES: ["*"], counted: ["*"]}, "mergeFacets": {}}
    body = federated(http, queries, facetsByIndex={MOVIES: ["*"], counted: ["*"]})
    assert body["facetsByIndex"] == {
        MOVIES: {"distribution": {}, "stats": {}},
        counted: {"distribution": {}, "stats": {}},
    }
    assert MOVIES < counted  # indexes are searched in uid order: the second one reports the conflict
    fails(
        http.post("/multi-search", json={"federation": federation, "queries": queries}),
        400,
        "invalid_multi_search_facet_order",
        f"Inside `.federation.facetsByIndex.{counted}`: Inconsistent order for "
        f"values in facet `*`: index `{MOVIES}` orders alphabetically, but index `{counted}` orders by count."
        "\n - Hint: Remove `federation.mergeFacets` or change `faceting.sortFacetValuesBy` to be consistent in "
        f"settings.\n - Note: index `{counted}` used in `.queries[1]`",
    )


# -- ranking rules ---------------------------------------------------------------------------------


def test_custom_ranking_rules_merge_by_value_across_indexes(http: httpx.Client, index_uid: str) -> None:
    rules = {"rankingRules": ["title:asc", "words", "typo", "proximity", "attribute", "exactness"]}
    first = make_index(http, f"{index_uid}_a", SCORE_DOCUMENTS, settings=rules)
    second = make_index(http, f"{index_uid}_b", DOCUMENTS, settings=rules)
    body = federated(
        http,
        [
            {"indexUid": second, "q": "", "attributesToRetrieve": ["title"]},
            {"indexUid": first, "q": "", "attributesToRetrieve": ["title"]},
        ],
    )
    titles = [h["title"] for h in body["hits"]]
    assert titles == sorted(titles, key=str.lower) and len(titles) == 10
    assert {h["_federation"]["indexUid"] for h in body["hits"]} == {first, second}


def test_incompatible_ranking_rules(http: httpx.Client, index_uid: str) -> None:
    sorted_index = make_index(
        http,
        f"{index_uid}_a",
        SCORE_DOCUMENTS,
        settings={"rankingRules": ["title:asc", "words", "typo", "proximity", "attribute", "exactness"]},
    )
    plain = make_index(http, f"{index_uid}_b", SCORE_DOCUMENTS)
    removed = "".join(
        f"    {n}. Removed relevancy rule `{rule}` at position #{n} in ranking rules because the query is a "
        'placeholder search (`q`: "")\n'
        for n, rule in enumerate(["words", "typo", "proximity", "attribute", "exactness"], start=1)
    )
    fails(
        http.post(
            "/multi-search",
            json={
                "federation": {},
                "queries": [{"indexUid": sorted_index, "q": ""}, {"indexUid": plain, "q": "batman"}],
            },
        ),
        400,
        "invalid_multi_search_query_ranking_rules",
        "Inside `.queries[1]`: The results of queries #0 and #1 are incompatible: \n"
        f"  1. `queries[0]`, `{sorted_index}.rankingRules[0]`: ascending sort rule(s) title:asc\n"
        f"  2. `queries[1]`, `{plain}.rankingRules[0..=5]`: relevancy rule(s) words, typo, proximity, attributeRank, "
        "wordPosition, exactness\n  - cannot compare a relevancy rule with a sort rule\n"
        f"  - note: The ranking rules of query #0 were modified during canonicalization:\n{removed}"
        "  - note: The ranking rules of query #1 were modified during canonicalization:\n"
        "   1. Removed rule `sort` at position #4 in ranking rules because `query.sort` is empty\n",
    )
    # a placeholder search on the plain index has no rule left: comparable with anything
    assert (
        len(federated(http, [{"indexUid": sorted_index, "q": ""}, {"indexUid": plain, "q": ""}])["hits"])
        == 10
    )


# -- metadata header -------------------------------------------------------------------------------


def test_metadata_header(http: httpx.Client) -> None:
    queries = [{"indexUid": SCORES, "q": "the bat"}, {"indexUid": MOVIES, "q": "glass"}]
    body = ok(
        http.post(
            "/multi-search",
            json={"federation": {}, "queries": queries},
            headers={"Meili-Include-Metadata": "true"},
        )
    )
    assert list(body)[-2:] == ["requestUid", "metadata"]
    for item in body["metadata"]:
        assert UUID7.fullmatch(item.pop("queryUid"))
    assert body["metadata"] == [
        {"indexUid": SCORES, "primaryKey": "id"},
        {"indexUid": MOVIES, "primaryKey": "id"},
    ]
    results = ok(
        http.post("/multi-search", json={"queries": queries}, headers={"Meili-Include-Metadata": "1"})
    )["results"]
    assert [r["metadata"]["indexUid"] for r in results] == [SCORES, MOVIES]
    assert "metadata" not in ok(http.post("/multi-search", json={"queries": queries}))["results"][0]


# -- authorization ---------------------------------------------------------------------------------

_names = itertools.count()


@pytest.fixture
def admin(secured_server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=secured_server.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}
    ) as client:
        yield client


def test_per_query_authorization(admin: httpx.Client, secured_server: ServerProcess) -> None:
    base = f"msauth{next(_names)}"
    allowed, other = (
        make_index(admin, f"{base}_a", SCORE_DOCUMENTS),
        make_index(admin, f"{base}_b", SCORE_DOCUMENTS),
    )
    created = admin.post(
        "/keys", json={"indexes": [f"{base}_a"], "actions": ["search"], "expiresAt": None}
    ).json()
    bearer = {"Authorization": f"Bearer {created['key']}"}
    url = f"{secured_server.url}/multi-search"
    queries = [{"indexUid": allowed, "q": "badman"}, {"indexUid": other, "q": "badman"}]
    for federation in (None, {}):
        res = httpx.post(url, json={"queries": queries, "federation": federation}, headers=bearer)
        fails(
            res, 403, "invalid_api_key", "Inside `.queries[1]`: The provided API key is invalid.", kind="auth"
        )
    res = httpx.post(url, json={"queries": queries[:1]}, headers=bearer)
    assert res.status_code == 200 and res.json()["results"][0]["hits"][0] == SCORE_DOCUMENTS[4]

    client = meilisearch.Client(secured_server.url, created["key"])
    token = client.generate_tenant_token(created["uid"], {allowed: {"filter": "color = red"}})
    bearer = {"Authorization": f"Bearer {token}"}
    res = httpx.post(url, json={"federation": {}, "queries": [{"indexUid": other, "q": "x"}]}, headers=bearer)
    fails(res, 403, "invalid_api_key", "Inside `.queries[0]`: The provided API key is invalid.", kind="auth")
    # the token's filter is AND-ed to the query's: its attribute is not filterable on this index
    res = httpx.post(url, json={"queries": [{"indexUid": allowed, "q": "x"}]}, headers=bearer)
    fails(
        res,
        400,
        "invalid_search_filter",
        f"Inside `.queries[0]`: Index `{allowed}`: Attribute `color` is not "
        "filterable. This index does not have configured filterable attributes.\n1:6 color = red",
    )
