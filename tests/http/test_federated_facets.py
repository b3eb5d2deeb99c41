"""Federated facets (`federation.facetsByIndex`, `federation.mergeFacets`) against a real server.

The first three tests replay Meilisearch's `tests/search/multi/mod.rs` snapshots
(`federation_facets_different_indexes_same_facet`, `federation_facets_same_indexes`,
`federation_inconsistent_merge_order`) field by field. The others pin what Meilisearch's
`perform_federated_search` / `FederatedFacets::merge` do where no snapshot shows it: facets counted over
the union of an index's queries (filters applied), per-index `faceting` settings applied before the
merge, the merged order (`count` ties, `*` requests sort alpha, numbers as strings), `maxValuesPerFacet`,
stats merged by min/max, indexes no query uses (checked, never in the response), page 0, and the order
of the errors.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import meilisearch
import pytest

from tests.conftest import ServerProcess
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
SORT_FIRST = ["sort", "words", "typo", "proximity", "attribute", "exactness"]
# Meilisearch's index names are `movies-[uuid]`, `movies_2-[uuid]`...: these keep their uid order
MOVIES, MOVIES_2, BATMAN, BATMAN_2 = (
    "ffacets_movies",
    "ffacets_movies_2",
    "ffacets_batman",
    "ffacets_batman_2",
)
DOGGOS, DOGGOS_2 = "ffacets_doggos", "ffacets_doggos_2"
SHOP_A, SHOP_B = "ffacets_shop_a", "ffacets_shop_b"
SHOP_A_DOCS = [
    {"id": 1, "brand": "x", "price": 5, "kind": "shoe"},
    {"id": 2, "brand": "x", "price": 50, "kind": "shoe"},
    {"id": 3, "brand": "x", "price": 9, "kind": "hat"},
    {"id": 4, "brand": "y", "price": 10, "kind": "hat"},
]
SHOP_B_DOCS = [
    {"id": 1, "brand": "y", "price": 1, "kind": "shoe"},
    {"id": 2, "brand": "y", "price": 20, "kind": "shoe"},
    {"id": 3, "brand": "y", "price": 20, "kind": "sock"},
    {"id": 4, "brand": "z", "price": 3, "kind": "sock"},
    {"id": 5, "brand": "z", "price": 200, "kind": "sock"},
]
BATMAN_TITLES = [
    "Badman",
    "Batman",
    "Batman Returns",
    "Batman the dark knight returns: Part 1",
    "Batman the dark knight returns: Part 2",
]
MOVIE_TITLES = [
    "Captain Marvel",
    "Escape Room",
    "Gläss",
    "How to Train Your Dragon: The Hidden World",
    "Shazam!",
]


@pytest.fixture(scope="module", autouse=True)
def indexes(server: ServerProcess) -> None:
    movies = {
        "sortableAttributes": ["title"],
        "filterableAttributes": ["title", "color"],
        "rankingRules": SORT_FIRST,
    }
    batman = {"sortableAttributes": ["title"], "filterableAttributes": ["title"], "rankingRules": SORT_FIRST}
    doggos = {"filterableAttributes": ["father", "mother", "doggos.age"], "rankingRules": SORT_FIRST}
    shop = {
        "filterableAttributes": ["brand", "price", "kind"],
        "faceting": {"sortFacetValuesBy": {"brand": "count"}},
    }
    with httpx.Client(base_url=server.url, timeout=30) as http:
        make_index(http, MOVIES, DOCUMENTS, settings=movies)
        make_index(
            http,
            MOVIES_2,
            DOCUMENTS,
            settings={**movies, "faceting": {"sortFacetValuesBy": {"color": "count"}}},
        )
        make_index(http, BATMAN, SCORE_DOCUMENTS, settings=batman)
        make_index(http, BATMAN_2, SCORE_DOCUMENTS, settings=batman)
        make_index(http, DOGGOS, NESTED_DOCUMENTS, settings=doggos)
        make_index(http, DOGGOS_2, NESTED_DOCUMENTS, settings=doggos)
        make_index(http, SHOP_A, SHOP_A_DOCS, settings=shop)
        make_index(http, SHOP_B, SHOP_B_DOCS, settings=shop)


def error(code: str, message: str) -> dict[str, str]:
    return {"message": message, "code": code, "type": "invalid_request", "link": LINK + code}


def post(http: httpx.Client, queries: list[dict[str, Any]], **federation: Any) -> httpx.Response:
    return http.post("/multi-search", json={"federation": federation, "queries": queries})


def federated(http: httpx.Client, queries: list[dict[str, Any]], **federation: Any) -> dict[str, Any]:
    res = post(http, queries, **federation)
    assert res.status_code == 200, res.text
    body: dict[str, Any] = res.json()
    assert isinstance(body.pop("processingTimeMs"), int)
    assert UUID7.fullmatch(body.pop("requestUid"))
    return body


def fails(res: httpx.Response, code: str, message: str) -> None:
    assert (res.status_code, res.json()) == (400, error(code, message)), res.text


def fed(uid: str, position: int, score: float = 1.0) -> dict[str, Any]:
    return {
        "indexUid": uid,
        "queriesPosition": position,
        "weightedRankingScore": pytest.approx(score, abs=1e-12),
    }


def ones(values: list[str], count: int = 1) -> dict[str, int]:
    return {value: count for value in values}


def sorted_titles(uids: dict[str, int]) -> list[dict[str, Any]]:
    """The placeholder `title:asc` hits of `uids` (index -> query position): by title, ties by position."""
    rows = [
        (title, position, uid)
        for uid, position in uids.items()
        for title in (MOVIE_TITLES if "movies" in uid else BATMAN_TITLES)
    ]
    rows.sort(key=lambda r: (r[0].lower(), r[1]))
    return [{"title": title, "_federation": fed(uid, position)} for title, position, uid in rows]


def title_queries(*uids: str) -> list[dict[str, Any]]:
    return [
        {"indexUid": uid, "q": "", "sort": ["title:asc"], "attributesToRetrieve": ["title"]} for uid in uids
    ]


# -- Meilisearch's snapshots -----------------------------------------------------------------------


def test_different_indexes_same_facet(http: httpx.Client) -> None:
    queries = title_queries(MOVIES, BATMAN, BATMAN_2)
    body = federated(
        http, queries, facetsByIndex={MOVIES: ["title", "color"], BATMAN: ["title"], BATMAN_2: ["title"]}
    )
    assert list(body) == ["hits", "limit", "offset", "estimatedTotalHits", "facetsByIndex"]
    assert body["hits"] == sorted_titles({MOVIES: 0, BATMAN: 1, BATMAN_2: 2})
    assert (body["limit"], body["offset"], body["estimatedTotalHits"]) == (20, 0, 15)
    assert body["facetsByIndex"] == {
        BATMAN: {"distribution": {"title": ones(BATMAN_TITLES)}, "stats": {}},
        BATMAN_2: {"distribution": {"title": ones(BATMAN_TITLES)}, "stats": {}},
        MOVIES: {
            "distribution": {
                "color": {"blue": 3, "green": 2, "red": 3, "yellow": 2},
                "title": ones(MOVIE_TITLES),
            },
            "stats": {},
        },
    }
    assert list(body["facetsByIndex"]) == [BATMAN, BATMAN_2, MOVIES]
    assert list(body["facetsByIndex"][MOVIES]["distribution"]["title"]) == MOVIE_TITLES

    body = federated(
        http,
        queries,
        facetsByIndex={MOVIES: ["title"], BATMAN: ["title"], BATMAN_2: ["title"]},
        mergeFacets={},
    )
    assert list(body) == ["hits", "limit", "offset", "estimatedTotalHits", "facetDistribution", "facetStats"]
    assert body["estimatedTotalHits"] == 15
    assert body["facetDistribution"] == {"title": {**ones(BATMAN_TITLES, 2), **ones(MOVIE_TITLES)}}
    assert list(body["facetDistribution"]["title"]) == BATMAN_TITLES + MOVIE_TITLES
    assert body["facetStats"] == {}

    # keyword queries sorted across indexes: the facets count what each index's queries matched
    queries = [
        {
            "indexUid": BATMAN,
            "q": "badman returns",
            "sort": ["title:desc"],
            "attributesToRetrieve": ["title"],
        },
        {
            "indexUid": BATMAN_2,
            "q": "badman returns",
            "sort": ["title:desc"],
            "attributesToRetrieve": ["title"],
        },
        {"indexUid": MOVIES, "q": "captain", "sort": ["title:desc"], "attributesToRetrieve": ["title"]},
        {"indexUid": BATMAN, "q": "the bat", "sort": ["title:desc"], "attributesToRetrieve": ["title"]},
    ]
    body = federated(http, queries, facetsByIndex={MOVIES: [], BATMAN: ["title"], BATMAN_2: ["title"]})
    assert [(h["title"], h["_federation"]["indexUid"]) for h in body["hits"]] == [
        ("Captain Marvel", MOVIES),
        ("Batman the dark knight returns: Part 2", BATMAN),
        ("Batman the dark knight returns: Part 2", BATMAN_2),
        ("Batman the dark knight returns: Part 1", BATMAN),
        ("Batman the dark knight returns: Part 1", BATMAN_2),
        ("Batman Returns", BATMAN),
        ("Batman Returns", BATMAN_2),
        ("Batman", BATMAN),
        ("Batman", BATMAN_2),
        ("Badman", BATMAN),
        ("Badman", BATMAN_2),
    ]
    assert body["estimatedTotalHits"] == 11
    assert body["facetsByIndex"] == {
        BATMAN: {"distribution": {"title": ones(BATMAN_TITLES)}, "stats": {}},
        BATMAN_2: {"distribution": {"title": ones(BATMAN_TITLES)}, "stats": {}},
        MOVIES: {"distribution": {}, "stats": {}},
    }


def test_same_indexes(http: httpx.Client) -> None:
    facets = ["father", "mother", "doggos.age"]
    score = 0.9621212121212122
    queries = [
        {"indexUid": DOGGOS, "q": "je", "attributesToRetrieve": ["id"]},
        {"indexUid": DOGGOS, "q": "michel", "attributesToRetrieve": ["id"]},
    ]
    body = federated(http, queries, facetsByIndex={DOGGOS: facets})
    assert body == {
        "hits": [
            {"id": 852, "_federation": fed(DOGGOS, 0, score)},
            {"id": 951, "_federation": fed(DOGGOS, 0, score)},
            {"id": 750, "_federation": fed(DOGGOS, 1, score)},
        ],
        "limit": 20,
        "offset": 0,
        "estimatedTotalHits": 3,  # 852 matches both queries: counted once
        "facetsByIndex": {
            DOGGOS: {
                "distribution": {
                    "doggos.age": ones(["2", "4", "5", "6"]),
                    "father": ones(["jean", "jean-baptiste", "romain"]),
                    "mother": {"michelle": 2, "sophie": 1},
                },
                "stats": {"doggos.age": {"min": 2.0, "max": 6.0}},
            }
        },
    }

    queries[1]["indexUid"] = DOGGOS_2
    body = federated(http, queries, facetsByIndex={DOGGOS: facets, DOGGOS_2: facets})
    assert body == {
        "hits": [
            {"id": 852, "_federation": fed(DOGGOS, 0, score)},
            {"id": 951, "_federation": fed(DOGGOS, 0, score)},
            {"id": 852, "_federation": fed(DOGGOS_2, 1, score)},
            {"id": 750, "_federation": fed(DOGGOS_2, 1, score)},
        ],
        "limit": 20,
        "offset": 0,
        "estimatedTotalHits": 4,
        "facetsByIndex": {
            DOGGOS: {
                "distribution": {
                    "doggos.age": ones(["2", "4", "5", "6"]),
                    "father": ones(["jean", "jean-baptiste"]),
                    "mother": ones(["michelle", "sophie"]),
                },
                "stats": {"doggos.age": {"min": 2.0, "max": 6.0}},
            },
            DOGGOS_2: {
                "distribution": {
                    "doggos.age": ones(["2", "4"]),
                    "father": ones(["jean", "romain"]),
                    "mother": {"michelle": 2},
                },
                "stats": {"doggos.age": {"min": 2.0, "max": 4.0}},
            },
        },
    }

    merged = federated(http, queries, facetsByIndex={DOGGOS: facets, DOGGOS_2: facets}, mergeFacets={})
    assert merged == {
        "hits": body["hits"],
        "limit": 20,
        "offset": 0,
        "estimatedTotalHits": 4,
        "facetDistribution": {
            "doggos.age": {"2": 2, "4": 2, "5": 1, "6": 1},
            "father": {"jean": 2, "jean-baptiste": 1, "romain": 1},
            "mother": {"michelle": 3, "sophie": 1},
        },
        "facetStats": {"doggos.age": {"min": 2.0, "max": 6.0}},
    }


def test_inconsistent_merge_order(http: httpx.Client) -> None:
    queries = title_queries(MOVIES, BATMAN, MOVIES_2)
    by_index = {MOVIES: ["title", "color"], BATMAN: ["title"], MOVIES_2: ["title", "color"]}
    body = federated(http, queries, facetsByIndex=by_index)  # without merging, it works
    assert body["hits"] == sorted_titles({MOVIES: 0, BATMAN: 1, MOVIES_2: 2})
    assert body["estimatedTotalHits"] == 15
    assert body["facetsByIndex"] == {
        BATMAN: {"distribution": {"title": ones(BATMAN_TITLES)}, "stats": {}},
        MOVIES: {
            "distribution": {
                "color": {"blue": 3, "green": 2, "red": 3, "yellow": 2},
                "title": ones(MOVIE_TITLES),
            },
            "stats": {},
        },
        MOVIES_2: {
            "distribution": {
                "color": {"red": 3, "blue": 3, "yellow": 2, "green": 2},
                "title": ones(MOVIE_TITLES),
            },
            "stats": {},
        },
    }
    assert list(body["facetsByIndex"][MOVIES_2]["distribution"]["color"]) == [
        "red",
        "blue",
        "yellow",
        "green",
    ]

    fails(
        post(http, queries, facetsByIndex=by_index, mergeFacets={}),
        "invalid_multi_search_facet_order",
        f"Inside `.federation.facetsByIndex.{MOVIES_2}`: Inconsistent order for values in facet `color`: index "
        f"`{MOVIES}` orders alphabetically, but index `{MOVIES_2}` orders by count.\n - Hint: Remove "
        "`federation.mergeFacets` or change `faceting.sortFacetValuesBy` to be consistent in settings.\n - Note: "
        f"index `{MOVIES_2}` used in `.queries[2]`",
    )

    # can limit the number of values
    body = federated(
        http, queries, facetsByIndex={**by_index, MOVIES_2: ["title"]}, mergeFacets={"maxValuesPerFacet": 3}
    )
    assert body["hits"] == sorted_titles({MOVIES: 0, BATMAN: 1, MOVIES_2: 2})
    assert body["facetDistribution"] == {
        "color": {"blue": 3, "green": 2, "red": 3},
        "title": {"Badman": 1, "Batman": 1, "Batman Returns": 1},
    }
    assert body["facetStats"] == {}


# -- what the source does where no snapshot shows it -----------------------------------------------


def test_merge_by_count_with_numbers_and_stats(client: meilisearch.Client) -> None:
    queries = [{"indexUid": SHOP_A, "q": ""}, {"indexUid": SHOP_B, "q": ""}]
    facets = {SHOP_A: ["brand", "price"], SHOP_B: ["brand", "price"]}
    body = client.multi_search(queries, federation={"facetsByIndex": facets})
    # each index orders its own values: `brand` by count, `price` by the printed numbers
    assert body["facetsByIndex"] == {
        SHOP_A: {
            "distribution": {"brand": {"x": 3, "y": 1}, "price": {"10": 1, "5": 1, "50": 1, "9": 1}},
            "stats": {"price": {"min": 5.0, "max": 50.0}},
        },
        SHOP_B: {
            "distribution": {"brand": {"y": 3, "z": 2}, "price": {"1": 1, "20": 2, "200": 1, "3": 1}},
            "stats": {"price": {"min": 1.0, "max": 200.0}},
        },
    }
    body = client.multi_search(queries, federation={"facetsByIndex": facets, "mergeFacets": {}})
    assert body["facetDistribution"] == {
        "brand": {"y": 4, "x": 3, "z": 2},
        "price": {"1": 1, "10": 1, "20": 2, "200": 1, "3": 1, "5": 1, "50": 1, "9": 1},
    }
    assert list(body["facetDistribution"]["brand"]) == ["y", "x", "z"]
    assert list(body["facetDistribution"]["price"]) == ["1", "10", "20", "200", "3", "5", "50", "9"]
    assert body["facetStats"] == {"price": {"min": 1.0, "max": 200.0}}
    body = client.multi_search(
        queries, federation={"facetsByIndex": facets, "mergeFacets": {"maxValuesPerFacet": 2}}
    )
    assert body["facetDistribution"] == {"brand": {"y": 4, "x": 3}, "price": {"1": 1, "10": 1}}
    assert body["facetStats"] == {"price": {"min": 1.0, "max": 200.0}}  # stats are never truncated
    body = client.multi_search(
        queries, federation={"facetsByIndex": facets, "mergeFacets": {"maxValuesPerFacet": 0}}
    )
    assert body["facetDistribution"] == {"brand": {}, "price": {}}


def test_merge_ties_and_wildcard_requests(http: httpx.Client, index_uid: str) -> None:
    # equal counts keep the merged order: indexes in uid order (not query order), each in its own order
    queries = [
        {"indexUid": SHOP_B, "q": "", "filter": "brand = z"},
        {"indexUid": SHOP_A, "q": "", "filter": "brand = x AND kind = shoe"},
    ]
    body = federated(http, queries, facetsByIndex={SHOP_A: ["brand"], SHOP_B: ["brand"]}, mergeFacets={})
    assert body["facetDistribution"] == {"brand": {"x": 2, "z": 2}}
    assert list(body["facetDistribution"]["brand"]) == ["x", "z"]
    # `alpha` facets merge by value, whatever the indexes' own orders
    body = federated(
        http,
        [{"indexUid": SHOP_A, "q": "", "filter": "brand = x"}, {"indexUid": SHOP_B, "q": ""}],
        facetsByIndex={SHOP_A: ["kind"], SHOP_B: ["kind"]},
        mergeFacets={},
    )
    assert list(body["facetDistribution"]["kind"].items()) == [("hat", 1), ("shoe", 4), ("sock", 3)]
    # the merged order is looked up by the requested name: a field matched by `*` sorts alphabetically
    # even where every index counts (`*` orders by count in both, so the order check passes)
    counted = make_index(
        http,
        index_uid,
        SHOP_B_DOCS,
        settings={
            "filterableAttributes": ["brand", "kind"],
            "faceting": {"sortFacetValuesBy": {"*": "count"}},
        },
    )
    queries = [
        {"indexUid": counted, "q": "", "filter": "kind = sock"},
        {"indexUid": SHOP_A, "q": "", "filter": "brand = y"},
    ]
    own = federated(http, queries[:1], facetsByIndex={counted: ["*"]})
    assert list(own["facetsByIndex"][counted]["distribution"]["brand"].items()) == [("z", 2), ("y", 1)]
    merged = federated(http, queries[:1], facetsByIndex={counted: ["*"]}, mergeFacets={})
    assert merged["facetDistribution"] == {"brand": {"y": 1, "z": 2}, "kind": {"sock": 3}}
    assert list(merged["facetDistribution"]["brand"]) == ["y", "z"]
    fails(
        post(http, queries, facetsByIndex={counted: ["*"], SHOP_A: ["*"]}, mergeFacets={}),
        "invalid_multi_search_facet_order",
        f"Inside `.federation.facetsByIndex.{index_uid}`: Inconsistent order "
        f"for values in facet `*`: index `{SHOP_A}` orders alphabetically, but index `{index_uid}` orders by "
        "count.\n - Hint: Remove `federation.mergeFacets` or change `faceting.sortFacetValuesBy` to be consistent "
        f"in settings.\n - Note: index `{index_uid}` used in `.queries[0]`",
    )
    body = federated(http, [{"indexUid": SHOP_A, "q": ""}], facetsByIndex={SHOP_A: ["*"]}, mergeFacets={})
    assert list(body["facetDistribution"]) == ["brand", "kind", "price"]


def test_index_settings_apply_before_the_merge(http: httpx.Client, index_uid: str) -> None:
    small = make_index(
        http,
        f"{index_uid}_a",
        SHOP_A_DOCS,
        settings={
            "filterableAttributes": ["brand", "price"],
            "faceting": {"maxValuesPerFacet": 1, "sortFacetValuesBy": {"brand": "count"}},
        },
    )
    queries = [{"indexUid": small, "q": ""}, {"indexUid": SHOP_B, "q": ""}]
    facets = {small: ["brand", "price"], SHOP_B: ["brand"]}
    body = federated(http, queries, facetsByIndex=facets)
    assert body["facetsByIndex"][small] == {
        "distribution": {"brand": {"x": 3}, "price": {"10": 1}},
        "stats": {"price": {"min": 5.0, "max": 50.0}},
    }
    body = federated(http, queries, facetsByIndex=facets, mergeFacets={})
    assert body["facetDistribution"] == {"brand": {"y": 3, "x": 3, "z": 2}, "price": {"10": 1}}
    # tie: the first index in uid order (SHOP_B) gave its value first
    assert list(body["facetDistribution"]["brand"]) == ["y", "x", "z"]
    assert body["facetStats"] == {"price": {"min": 5.0, "max": 50.0}}


def test_facets_count_the_union_of_the_queries(http: httpx.Client) -> None:
    by_index = {SHOP_B: ["brand", "kind", "price"]}
    one = federated(http, [{"indexUid": SHOP_B, "q": "", "filter": "brand = y"}], facetsByIndex=by_index)
    assert one["estimatedTotalHits"] == 3
    assert one["facetsByIndex"][SHOP_B] == {
        "distribution": {"brand": {"y": 3}, "kind": {"shoe": 2, "sock": 1}, "price": {"1": 1, "20": 2}},
        "stats": {"price": {"min": 1.0, "max": 20.0}},
    }
    queries = [
        {"indexUid": SHOP_B, "q": "", "filter": "brand = y"},
        {"indexUid": SHOP_B, "q": "", "filter": "kind = sock"},
    ]
    both = federated(http, queries, facetsByIndex=by_index)
    assert both["estimatedTotalHits"] == 5  # 3 + 3 matches, document 3 in both
    assert both["facetsByIndex"][SHOP_B] == {
        "distribution": {
            "brand": {"y": 3, "z": 2},
            "kind": {"shoe": 2, "sock": 3},
            "price": {"1": 1, "20": 2, "200": 1, "3": 1},
        },
        "stats": {"price": {"min": 1.0, "max": 200.0}},
    }
    # the facets do not depend on the page: `page: 0` has no hits, the same counts
    paged = federated(http, queries, facetsByIndex=by_index, page=0)
    assert paged == {
        "hits": [],
        "hitsPerPage": 20,
        "page": 0,
        "totalPages": 1,
        "totalHits": 5,
        "facetsByIndex": both["facetsByIndex"],
    }
    limited = federated(http, queries, facetsByIndex=by_index, limit=1, offset=1)
    assert (len(limited["hits"]), limited["facetsByIndex"]) == (1, both["facetsByIndex"])
    nothing = federated(http, [{"indexUid": SHOP_B, "q": "zzzzzz"}], facetsByIndex=by_index)
    assert nothing["facetsByIndex"] == {
        SHOP_B: {"distribution": {"brand": {}, "kind": {}, "price": {}}, "stats": {}}
    }


def test_indexes_no_query_uses(http: httpx.Client) -> None:
    queries = [{"indexUid": SHOP_A, "q": ""}]
    facets = {SHOP_A: ["brand"], SHOP_B: ["brand", "price"]}
    body = federated(http, queries, facetsByIndex=facets)
    assert body["facetsByIndex"] == {SHOP_A: {"distribution": {"brand": {"x": 3, "y": 1}}, "stats": {}}}
    body = federated(http, queries, facetsByIndex=facets, mergeFacets={})
    assert (body["facetDistribution"], body["facetStats"]) == ({"brand": {"x": 3, "y": 1}}, {})
    # only unused indexes (or `null` lists): nothing computed, neither field
    for federation in (
        {"facetsByIndex": {SHOP_B: ["brand"]}},
        {"facetsByIndex": {SHOP_B: ["brand"]}, "mergeFacets": {}},
        {"facetsByIndex": {SHOP_A: None}, "mergeFacets": {}},
    ):
        body = federated(http, queries, **federation)
        assert list(body) == ["hits", "limit", "offset", "estimatedTotalHits"], federation
    # ... but checked: the order of an unused index too
    fails(
        post(
            http,
            title_queries(MOVIES),
            facetsByIndex={MOVIES: ["color"], MOVIES_2: ["color"]},
            mergeFacets={},
        ),
        "invalid_multi_search_facet_order",
        f"Inside `.federation.facetsByIndex.{MOVIES_2}`: Inconsistent order "
        f"for values in facet `color`: index `{MOVIES}` orders alphabetically, but index `{MOVIES_2}` orders by "
        "count.\n - Hint: Remove `federation.mergeFacets` or change `faceting.sortFacetValuesBy` to be consistent "
        f"in settings.\n - Note: index `{MOVIES_2}` is not used in queries",
    )
    fails(
        post(http, queries, facetsByIndex={SHOP_B: ["title"]}),
        "invalid_multi_search_facets",
        f"Inside `.federation.facetsByIndex.{SHOP_B}`: Invalid facet distribution: Attribute `title` is not "
        "filterable. Available filterable attributes patterns are: `brand, kind, price`.\n - Note: index "
        f"`{SHOP_B}` is not used in queries",
    )


def test_errors(http: httpx.Client, index_uid: str) -> None:
    rule = make_index(
        http,
        index_uid,
        SHOP_A_DOCS,
        settings={
            "filterableAttributes": [
                {
                    "attributePatterns": ["brand"],
                    "features": {"facetSearch": True, "filter": {"equality": False}},
                }
            ]
        },
    )
    fails(
        post(http, [{"indexUid": rule, "q": ""}], facetsByIndex={rule: ["brand"]}),
        "invalid_multi_search_facets",
        f"Inside `.federation.facetsByIndex.{rule}`: Invalid facet distribution: Attribute `brand` matched rule #0 "
        "in filterableAttributes, but this rule does not enable filtering.\nHint: enable filtering in rule #0 by "
        "modifying the features.filter object\nHint: prepend another rule matching `brand` with appropriate filter "
        f"features before rule #0\n - Note: index `{rule}` used in `.queries[0]`",
    )
    fails(
        post(
            http,
            [{"indexUid": SHOP_A, "q": ""}, {"indexUid": SHOP_A, "q": ""}],
            facetsByIndex={SHOP_A: ["id", "nope"]},
        ),
        "invalid_multi_search_facets",
        f"Inside `.federation.facetsByIndex.{SHOP_A}`: Invalid facet distribution: Attributes `id, nope` are not "
        f"filterable. Available filterable attributes patterns are: `brand, kind, price`.\n - Note: index "
        f"`{SHOP_A}` used in `.queries[0]`",
    )
    # an index's queries run before its facets are counted: the query's error answers
    res = post(http, [{"indexUid": SHOP_A, "q": "", "filter": "title = x"}], facetsByIndex={SHOP_A: ["nope"]})
    assert (res.status_code, res.json()["code"]) == (400, "invalid_search_filter"), res.text
    assert res.json()["message"].startswith(
        "Inside `.queries[0]`: Index `ffacets_shop_a`: Attribute `title` is not"
    )
    # indexes go in uid order: the facets of the first fail before the queries of the second run
    res = post(
        http,
        [{"indexUid": SHOP_B, "q": "", "filter": "title = x"}, {"indexUid": SHOP_A, "q": ""}],
        facetsByIndex={SHOP_A: ["nope"]},
    )
    assert (res.status_code, res.json()["code"]) == (400, "invalid_multi_search_facets"), res.text
