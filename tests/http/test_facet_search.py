"""`POST /indexes/{uid}/facet-search` against a real server, with the expectations of Meilisearch's
`tests/search/facet_search.rs` and docs/api-contract.md §3.11."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import wait_task

DOCUMENTS = [
    {"title": "Shazam!", "genres": ["Action", "Adventure"], "id": "287947"},
    {"title": "Captain Marvel", "genres": ["Action", "Adventure"], "id": "299537"},
    {"title": "Escape Room", "genres": ["Horror", "Thriller", "Multiple Words"], "id": "522681"},
    {"title": "How to Train Your Dragon: The Hidden World", "genres": ["Action", "Comedy"], "id": "166428"},
    {"title": "Gläss", "genres": ["Thriller"], "id": "450465"},
]
NESTED_DOCUMENTS = [
    {
        "id": 852,
        "father": "jean",
        "mother": "michelle",
        "doggos": [{"name": "bobby", "age": 2}, {"name": "buddy", "age": 4}],
        "cattos": "pésti",
    },
    {
        "id": 654,
        "father": "pierre",
        "mother": "sabine",
        "doggos": [{"name": "gros bill", "age": 8}],
        "cattos": ["simba", "pestiféré"],
    },
    {"id": 750, "father": "romain", "mother": "michelle", "cattos": ["enigma"]},
    {
        "id": 951,
        "father": "jean-baptiste",
        "mother": "sophie",
        "doggos": [{"name": "turbo", "age": 5}, {"name": "fast", "age": 6}],
        "cattos": ["moumoute", "gomez"],
    },
]
COLORS = [
    "crimson",
    "emerald",
    "azure",
    "scarlet",
    "coral",
    "navy",
    "onyx",
    "cerulean",
    "slate",
    "gold",
    "obsidian",
    "jade",
    "sepia",
    "ruby",
    "charcoal",
    "amethyst",
    "ebony",
    "forest",
    "amber",
    "lime",
    "sapphire",
    "burgundy",
    "turquoise",
    "emerald",
    "sepia",
    "crimson",
    "slate",
    "azure",
    "onyx",
    "charcoal",
    "amethyst",
    "ruby",
    "sapphire",
    "gold",
    "turquoise",
    "obsidian",
    "jade",
    "burgundy",
    "forest",
    "amber",
    "azure",
    "obsidian",
    "coral",
    "scarlet",
    "emerald",
    "navy",
    "burgundy",
    "amber",
    "sepia",
    "slate",
]


def ok(http: httpx.Client, res: httpx.Response) -> dict[str, Any]:
    assert res.status_code == 202, res.text
    task = wait_task(http, res.json()["taskUid"])
    assert task["status"] == "succeeded", task
    return task


def setup(http: httpx.Client, uid: str, documents: list[dict[str, Any]], settings: dict[str, Any]) -> None:
    ok(http, http.patch(f"/indexes/{uid}/settings", json=settings))
    ok(http, http.post(f"/indexes/{uid}/documents", json=documents))


def facet_search(http: httpx.Client, uid: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    res = http.post(f"/indexes/{uid}/facet-search", json=body)
    assert res.status_code == status, res.text
    out: dict[str, Any] = res.json()
    return out


def test_simple_facet_search(http: httpx.Client, index_uid: str) -> None:
    setup(http, index_uid, DOCUMENTS, {"filterableAttributes": ["genres"]})
    body = facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "a"})
    assert list(body) == ["facetHits", "facetQuery", "processingTimeMs"]
    assert body["facetHits"] == [{"value": "Action", "count": 3}, {"value": "Adventure", "count": 2}]
    assert body["facetQuery"] == "a"
    assert facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "adventure"})["facetHits"] == [
        {"value": "Adventure", "count": 2}
    ]
    # the whole value is matched by prefix, not its words; typos are tolerated on long enough queries
    assert facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "words"})["facetHits"] == []
    assert facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "adventre"})["facetHits"] == [
        {"value": "Adventure", "count": 2}
    ]
    assert facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "àdventure"})["facetHits"] == [
        {"value": "Adventure", "count": 2}
    ]
    # no facetQuery: every value; q and filter restrict the documents counted
    everything = facet_search(http, index_uid, {"facetName": "genres", "facetQuery": None})
    assert [h["value"] for h in everything["facetHits"]] == [
        "Action",
        "Adventure",
        "Comedy",
        "Horror",
        "Multiple Words",
        "Thriller",
    ]
    assert everything["facetQuery"] is None
    assert facet_search(http, index_uid, {"facetName": "genres", "q": "captain"})["facetHits"] == [
        {"value": "Action", "count": 1},
        {"value": "Adventure", "count": 1},
    ]
    assert facet_search(
        http, index_uid, {"facetName": "genres", "facetQuery": "thr", "filter": "genres = horror"}
    )["facetHits"] == [{"value": "Thriller", "count": 1}]
    # unknown parameters are ignored (the body struct does not deny them)
    assert facet_search(
        http, index_uid, {"facetName": "genres", "facetQuery": "com", "limit": 3, "doggo": True}
    )["facetHits"] == [{"value": "Comedy", "count": 1}]


def test_facet_search_on_movies(http: httpx.Client, index_uid: str) -> None:
    documents = [
        {"id": 1, "title": "Carol", "genres": ["Romance", "Drama"], "color": ["red"]},
        {"id": 2, "title": "Wonder Woman", "genres": ["Action", "Adventure"], "color": ["green"]},
        {"id": 3, "title": "Life of Pi", "genres": ["Adventure", "Drama"], "color": ["blue"]},
        {
            "id": 4,
            "title": "Mad Max: Fury Road",
            "genres": ["Adventure", "Science Fiction"],
            "color": ["red"],
        },
        {"id": 5, "title": "Moana", "genres": ["Fantasy", "Action"], "color": ["red"]},
        {"id": 6, "title": "Philadelphia", "genres": ["Drama"], "color": ["blue"]},
    ]
    setup(http, index_uid, documents, {"filterableAttributes": ["genres", "color"]})
    assert facet_search(http, index_uid, {"facetQuery": "", "facetName": "genres", "q": ""})["facetHits"] == [
        {"value": "Action", "count": 2},
        {"value": "Adventure", "count": 3},
        {"value": "Drama", "count": 3},
        {"value": "Fantasy", "count": 1},
        {"value": "Romance", "count": 1},
        {"value": "Science Fiction", "count": 1},
    ]


def test_typo_settings(http: httpx.Client, index_uid: str) -> None:
    setup(
        http, index_uid, DOCUMENTS, {"filterableAttributes": ["genres"], "typoTolerance": {"enabled": False}}
    )
    assert facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "adventre"})["facetHits"] == []
    assert (
        len(facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "àdventure"})["facetHits"])
        == 1
    )
    ok(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings",
            json={"typoTolerance": {"enabled": True, "disableOnWords": ["adventre"]}},
        ),
    )
    assert facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "adventre"})["facetHits"] == []
    assert (
        len(facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "adventure"})["facetHits"])
        == 1
    )
    ok(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings", json={"typoTolerance": {"disableOnAttributes": ["genres"]}}
        ),
    )
    assert (
        facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "advemture"})["facetHits"] == []
    )


def test_max_values_and_sort_by_count(http: httpx.Client, index_uid: str) -> None:
    setup(
        http, index_uid, DOCUMENTS, {"filterableAttributes": ["genres"], "faceting": {"maxValuesPerFacet": 1}}
    )
    assert facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "a"})["facetHits"] == [
        {"value": "Action", "count": 3}
    ]
    ok(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings",
            json={"faceting": {"maxValuesPerFacet": 100, "sortFacetValuesBy": {"*": "count"}}},
        ),
    )
    assert facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "a"})["facetHits"] == [
        {"value": "Action", "count": 3},
        {"value": "Adventure", "count": 2},
    ]
    hits = facet_search(http, index_uid, {"facetName": "genres"})["facetHits"]
    # by decreasing count, then by decreasing value
    assert hits == [
        {"value": "Action", "count": 3},
        {"value": "Thriller", "count": 2},
        {"value": "Adventure", "count": 2},
        {"value": "Multiple Words", "count": 1},
        {"value": "Horror", "count": 1},
        {"value": "Comedy", "count": 1},
    ]
    ok(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings",
            json={"faceting": {"maxValuesPerFacet": 1, "sortFacetValuesBy": {"genres": "count"}}},
        ),
    )
    assert facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "a"})["facetHits"] == [
        {"value": "Action", "count": 3}
    ]


def test_disabled_and_unsearchable(http: httpx.Client, index_uid: str) -> None:
    ok(http, http.post(f"/indexes/{index_uid}/documents", json=DOCUMENTS))
    res = facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "a"}, 400)
    assert res == {
        "message": "Attribute `genres` is not facet-searchable. This index does not have configured "
        "facet-searchable attributes. To make it facet-searchable add it to the "
        "`filterableAttributes` index settings.",
        "code": "invalid_facet_search_facet_name",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#invalid_facet_search_facet_name",
    }
    ok(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings", json={"facetSearch": False, "filterableAttributes": ["genres"]}
        ),
    )
    assert facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "a"}, 400) == {
        "message": "The facet search is disabled for this index",
        "code": "facet_search_disabled",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#facet_search_disabled",
    }
    ok(http, http.patch(f"/indexes/{index_uid}/settings", json={"facetSearch": None}))
    assert len(facet_search(http, index_uid, {"facetName": "genres", "facetQuery": "a"})["facetHits"]) == 2


@pytest.mark.parametrize(
    ("documents", "rules", "name", "message"),
    [
        (
            DOCUMENTS,
            ["genres"],
            "invalid",
            "Attribute `invalid` is not facet-searchable. Available facet-searchable attributes patterns are: `genres`. "
            "To make it facet-searchable add it to the `filterableAttributes` index settings.",
        ),
        (
            DOCUMENTS,
            [{"attributePatterns": ["genres"]}],
            "genres",
            "Attribute `genres` is not facet-searchable. Note: this attribute matches rule #0 in filterableAttributes, "
            "but this rule does not enable facetSearch.\nHint: enable facetSearch in rule #0 by adding "
            '`"facetSearch": true` to the rule.\nHint: prepend another rule matching genres with facetSearch: true '
            "before rule #0",
        ),
        (
            NESTED_DOCUMENTS,
            [
                {
                    "attributePatterns": ["doggos.name"],
                    "features": {"facetSearch": False, "filter": {"equality": False, "comparison": False}},
                }
            ],
            "doggos.name",
            "Attribute `doggos.name` is not facet-searchable. Note: this attribute matches rule #0 in filterableAttributes, "
            "but this rule does not enable facetSearch.\nHint: enable facetSearch in rule #0 by adding "
            '`"facetSearch": true` to the rule.\nHint: prepend another rule matching doggos.name with facetSearch: true '
            "before rule #0",
        ),
        (
            NESTED_DOCUMENTS,
            [{"attributePatterns": ["doggos.name"]}],
            "invalid.name",
            "Attribute `invalid.name` is not facet-searchable. This index does not have configured facet-searchable "
            "attributes. To make it facet-searchable add it to the `filterableAttributes` index settings.",
        ),
    ],
)
def test_facet_name_errors(
    http: httpx.Client,
    index_uid: str,
    documents: list[dict[str, Any]],
    rules: list[Any],
    name: str,
    message: str,
) -> None:
    setup(http, index_uid, documents, {"filterableAttributes": rules})
    res = facet_search(http, index_uid, {"facetName": name, "facetQuery": "a"}, 400)
    assert res["code"] == "invalid_facet_search_facet_name" and res["message"] == message


@pytest.mark.parametrize(
    "rules",
    [
        ["doggos.name"],
        [
            {
                "attributePatterns": ["doggos.name"],
                "features": {"facetSearch": True, "filter": {"equality": False, "comparison": False}},
            }
        ],
    ],
)
def test_nested_facet_search(http: httpx.Client, index_uid: str, rules: list[Any]) -> None:
    setup(http, index_uid, NESTED_DOCUMENTS, {"filterableAttributes": rules})
    assert facet_search(http, index_uid, {"facetName": "doggos.name", "facetQuery": "b"})["facetHits"] == [
        {"value": "bobby", "count": 1},
        {"value": "buddy", "count": 1},
    ]


def test_distinct_counts(http: httpx.Client, index_uid: str) -> None:
    documents = [
        {"id": i + 1, "genres": ["Drama", "Blob"] if i % 3 else ["Blob"], "color": color}
        for i, color in enumerate(COLORS)
    ]
    setup(
        http,
        index_uid,
        documents,
        {"filterableAttributes": ["genres", "color"], "distinctAttribute": "color"},
    )
    # not exhaustive: only the first page's duplicates are excluded (20 colors seen: 50 - 23 = 27 left);
    # exhaustive: one document per color
    assert facet_search(http, index_uid, {"facetQuery": "blob", "facetName": "genres", "q": ""})[
        "facetHits"
    ] == [{"value": "Blob", "count": 27}]
    assert facet_search(
        http, index_uid, {"facetQuery": "blob", "facetName": "genres", "q": "", "exhaustiveFacetCount": True}
    )["facetHits"] == [{"value": "Blob", "count": 23}]


def test_body_errors(http: httpx.Client, index_uid: str) -> None:
    setup(http, index_uid, DOCUMENTS, {"filterableAttributes": ["genres"]})
    url = f"/indexes/{index_uid}/facet-search"
    res = http.post(url, json={"facetQuery": "a"})
    assert res.status_code == 400 and res.json()["code"] == "missing_facet_search_facet_name"
    assert res.json()["message"] == "Missing field `facetName`"
    res = http.post(url, json={"facetName": 1})
    assert res.json()["code"] == "invalid_facet_search_facet_name"
    assert (
        res.json()["message"]
        == "Invalid value type at `.facetName`: expected a string, but found a positive integer: `1`"
    )
    res = http.post(url, json={"facetName": "genres", "facetQuery": []})
    assert res.json()["code"] == "invalid_facet_search_query"
    res = http.post(url, json={"facetName": "genres", "exhaustiveFacetCount": "yes"})
    assert res.json()["code"] == "invalid_facet_search_exhaustive_facet_count"
    res = http.post(url, json={"facetName": "genres", "filter": "doggo = 1"})
    assert res.status_code == 400 and res.json() == {
        "message": "Attribute `doggo` is not filterable. Available filterable attribute patterns are: `genres`."
        "\n1:6 doggo = 1",
        "code": "invalid_search_filter",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#invalid_search_filter",
    }
    assert http.post("/indexes/nope/facet-search", json={"facetName": "genres"}).status_code == 404
