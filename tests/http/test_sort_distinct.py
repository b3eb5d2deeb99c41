"""`sort` and `distinct` against a real server: Meilisearch's `tests/search/distinct.rs` and geo sort
snapshots, and sorts of the movies dataset compared with a plain Python sort under the contract's
rules (docs/api-contract.md §3.6: numbers before strings, strings on their normalized form, missing values last, ties by
internal id; the `sort` rule applies where it sits in `rankingRules`)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import datasets
from tests.conftest import ServerProcess, wait_task

MOVIES = datasets.load_json("meilisearch/movies_1688.json")

PRODUCTS = [
    {
        "id": 1,
        "description": "Leather Jacket",
        "brand": "Lee Jeans",
        "product_id": "123456",
        "color": "Brown",
    },
    {
        "id": 2,
        "description": "Leather Jacket",
        "brand": "Lee Jeans",
        "product_id": "123456",
        "color": "Black",
    },
    {"id": 3, "description": "Leather Jacket", "brand": "Lee Jeans", "product_id": "123456", "color": "Blue"},
    {"id": 4, "description": "T-Shirt", "brand": "Nike", "product_id": "789012", "color": "Red"},
    {"id": 5, "description": "T-Shirt", "brand": "Nike", "product_id": "789012", "color": "Blue"},
    {"id": 6, "description": "Running Shoes", "brand": "Adidas", "product_id": "456789", "color": "Black"},
    {"id": 7, "description": "Running Shoes", "brand": "Adidas", "product_id": "456789", "color": "White"},
    {"id": 8, "description": "Hoodie", "brand": "Puma", "product_id": "987654", "color": "Gray"},
    {"id": 9, "description": "Sweater", "brand": "Gap", "product_id": "234567", "color": "Green"},
    {"id": 10, "description": "Sweater", "brand": "Gap", "product_id": "234567", "color": "Red"},
    {"id": 11, "description": "Sweater", "brand": "Gap", "product_id": "234567", "color": "Blue"},
    {"id": 12, "description": "Jeans", "brand": "Levi's", "product_id": "345678", "color": "Indigo"},
    {"id": 13, "description": "Jeans", "brand": "Levi's", "product_id": "345678", "color": "Black"},
    {"id": 14, "description": "Jeans", "brand": "Levi's", "product_id": "345678", "color": "Stone Wash"},
]


def norm(text: str) -> str:
    return unicodedata.normalize("NFKD", text.strip()).lower()


def ok(http: httpx.Client, res: httpx.Response) -> None:
    assert res.status_code == 202, res.text
    task = wait_task(http, res.json()["taskUid"], timeout=120)
    assert task["status"] == "succeeded", task


def load(http: httpx.Client, uid: str, documents: list[dict[str, Any]], settings: dict[str, Any]) -> None:
    ok(http, http.patch(f"/indexes/{uid}/settings", json=settings))
    ok(http, http.post(f"/indexes/{uid}/documents?primaryKey=id", json=documents))


def search(http: httpx.Client, uid: str, body: dict[str, Any]) -> dict[str, Any]:
    res = http.post(f"/indexes/{uid}/search", json=body)
    assert res.status_code == 200, res.text
    out: dict[str, Any] = res.json()
    return out


def product_ids(body: dict[str, Any]) -> list[str]:
    return [h["product_id"] for h in body["hits"]]


# -- distinct -------------------------------------------------------------------------------------


def test_distinct_with_offset(http: httpx.Client, index_uid: str) -> None:
    load(http, index_uid, PRODUCTS, {"distinctAttribute": "product_id"})
    expected = [
        (0, ["123456", "789012"], 11),
        (2, ["456789", "987654"], 10),
        (4, ["234567", "345678"], 6),
        (5, ["345678"], 6),
        (6, [], 6),
        (7, [], 6),
    ]
    for offset, hits, total in expected:
        body = search(http, index_uid, {"offset": offset, "limit": 2})
        assert (product_ids(body), body["estimatedTotalHits"]) == (hits, total), offset


def test_distinct_with_pagination(http: httpx.Client, index_uid: str) -> None:
    load(http, index_uid, PRODUCTS, {"distinctAttribute": "product_id"})
    for page, per_page, hits in [
        (0, 2, []),
        (1, 2, ["123456", "789012"]),
        (2, 2, ["456789", "987654"]),
        (3, 2, ["234567", "345678"]),
        (4, 2, []),
        (2, 3, ["987654", "234567", "345678"]),
    ]:
        body = search(http, index_uid, {"page": page, "hitsPerPage": per_page})
        assert product_ids(body) == hits
        assert (body["page"], body["totalHits"], body["totalPages"]) == (page, 6, -(-6 // per_page))


def test_distinct_at_search_time(http: httpx.Client, index_uid: str) -> None:
    nested = [
        {"id": i + 1, "product_id": "x", "color": {"main": main, "pattern": "p"}}
        for i, main in enumerate(["Brown", "Black", "Blue", "Blue"])
    ]
    load(http, index_uid, nested, {"filterableAttributes": ["color.main"]})
    body = search(http, index_uid, {"page": 1, "hitsPerPage": 3, "distinct": "color.main"})
    assert [h["id"] for h in body["hits"]] == [1, 2, 3]
    assert (body["totalPages"], body["totalHits"]) == (1, 3)
    # the request's distinct overrides the setting; facets count what distinct kept
    body = search(http, index_uid, {"distinct": "color.main", "facets": ["color.main"]})
    assert body["facetDistribution"] == {"color.main": {"Black": 1, "Blue": 1, "Brown": 1}}
    res = http.post(f"/indexes/{index_uid}/search", json={"distinct": "product_id"})
    assert res.status_code == 400 and res.json()["code"] == "invalid_search_distinct"
    assert res.json()["message"] == (
        f"Index `{index_uid}`: Attribute `product_id` is not filterable and thus, "
        "cannot be used as distinct attribute. Available filterable attributes "
        "patterns are: `color.main`."
    )


def test_distinct_with_a_query(http: httpx.Client, index_uid: str) -> None:
    load(http, index_uid, PRODUCTS, {"distinctAttribute": "product_id", "filterableAttributes": ["brand"]})
    body = search(http, index_uid, {"q": "jeans", "limit": 10})  # 6 documents, 2 products
    assert sorted(product_ids(body)) == ["123456", "345678"]  # one document per product
    assert body["estimatedTotalHits"] == 2
    body = search(
        http, index_uid, {"q": "jacket", "filter": "brand = 'lee jeans'", "page": 1, "facets": ["brand"]}
    )
    assert product_ids(body) == ["123456"] and body["totalHits"] == 1
    assert body["facetDistribution"] == {"brand": {"Lee Jeans": 1}}


# -- sort -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


@pytest.fixture(scope="module")
def movies(client: httpx.Client) -> str:
    docs = [dict(d) for d in MOVIES]
    for i, d in enumerate(docs):  # a few documents with a string or no rating, to sort them apart
        if i % 97 == 0:
            d["vote_average"] = "unrated"
        elif i % 89 == 0:
            del d["vote_average"]
    load(
        client,
        "sd_movies",
        docs,
        {
            "filterableAttributes": ["genres"],
            "sortableAttributes": ["vote_average", "title", "vote_count", "genres"],
        },
    )
    return "sd_movies"


def movie_docs() -> list[tuple[int, dict[str, Any]]]:
    docs = [dict(d) for d in MOVIES]
    for i, d in enumerate(docs):
        if i % 97 == 0:
            d["vote_average"] = "unrated"
        elif i % 89 == 0:
            del d["vote_average"]
    return list(enumerate(docs))


def key(doc: dict[str, Any], field: str, ascending: bool) -> tuple[Any, ...]:
    """The contract's sort key: numbers, then strings (normalized bytes), then documents without a value."""
    values = doc.get(field)
    items = values if isinstance(values, list) else [] if values is None else [values]
    numbers = [float(v) for v in items if isinstance(v, (int, float)) and not isinstance(v, bool)]
    strings = [norm(v).encode() for v in items if isinstance(v, str) and v]
    if numbers:
        n = min(numbers) if ascending else max(numbers)
        return (0, n if ascending else -n)
    if strings:
        s = min(strings) if ascending else max(strings)
        return (1, s if ascending else (*(-b for b in s), 1))
    return (2,)


@pytest.mark.parametrize(
    "sort",
    [
        ["vote_average:desc"],
        ["vote_average:asc"],
        ["title:asc"],
        ["title:desc"],
        ["vote_count:desc", "title:asc"],
        ["genres:asc", "vote_average:desc"],
    ],
)
def test_placeholder_sort(client: httpx.Client, movies: str, sort: list[str]) -> None:
    criteria = [(s.rpartition(":")[0], s.endswith(":asc")) for s in sort]
    ranked = sorted(movie_docs(), key=lambda t: (*(key(t[1], f, asc) for f, asc in criteria), t[0]))
    body = search(client, movies, {"sort": sort, "limit": 200, "attributesToRetrieve": ["id"]})
    assert [h["id"] for h in body["hits"]] == [d["id"] for _, d in ranked[:200]]
    assert body["estimatedTotalHits"] == 1000  # capped by maxTotalHits


def test_sort_with_filter_and_details(client: httpx.Client, movies: str) -> None:
    body = search(
        client,
        movies,
        {
            "filter": "genres = animation",
            "sort": ["vote_average:desc"],
            "limit": 5,
            "showRankingScoreDetails": True,
            "showRankingScore": True,
            "attributesToRetrieve": ["id", "vote_average"],
        },
    )
    animated = [(i, d) for i, d in movie_docs() if "Animation" in d["genres"]]
    expected = sorted(animated, key=lambda t: (key(t[1], "vote_average", False), t[0]))[:5]
    assert [h["id"] for h in body["hits"]] == [d["id"] for _, d in expected]
    first = body["hits"][0]
    assert first["_rankingScore"] == 1.0
    assert first["_rankingScoreDetails"] == {
        "vote_average:desc": {"order": 0, "value": first["vote_average"]}
    }


def test_sort_rule_position(client: httpx.Client, index_uid: str) -> None:
    docs = [
        {"id": d["id"], "title": d["title"], "vote_average": d["vote_average"], "genres": d["genres"]}
        for d in MOVIES[:600]
    ]
    load(
        client,
        index_uid,
        docs,
        {
            "sortableAttributes": ["vote_average", "genres"],
            "rankingRules": ["sort", "words", "typo", "proximity", "attribute", "exactness"],
        },
    )
    matched = search(client, index_uid, {"q": "the", "limit": 1000, "attributesToRetrieve": ["id"]})
    ratings = {d["id"]: d["vote_average"] for d in docs}
    body = search(
        client,
        index_uid,
        {"q": "the", "sort": ["vote_average:desc"], "limit": 1000, "attributesToRetrieve": ["id"]},
    )
    got = [h["id"] for h in body["hits"]]
    assert sorted(got) == sorted(h["id"] for h in matched["hits"])
    assert [ratings[i] for i in got] == sorted((ratings[i] for i in got), reverse=True)
    # strings, several per document: the largest one sorts descending, documents without last
    by_id = {d["id"]: d for d in docs}
    body = search(
        client,
        index_uid,
        {"q": "the", "sort": ["genres:desc"], "limit": 1000, "attributesToRetrieve": ["id"]},
    )
    keys = [key(by_id[h["id"]], "genres", False) for h in body["hits"]]
    assert keys == sorted(keys) and len(keys) == len(got)
    # `sort` after the relevancy rules only breaks their ties: the words rule still comes first
    ok(
        client,
        client.patch(
            f"/indexes/{index_uid}/settings",
            json={"rankingRules": ["words", "sort", "typo", "proximity", "attribute", "exactness"]},
        ),
    )
    body = search(
        client,
        index_uid,
        {"q": "the dark", "sort": ["vote_average:asc"], "limit": 1000, "showRankingScoreDetails": True},
    )
    words = [h["_rankingScoreDetails"]["words"]["matchingWords"] for h in body["hits"]]
    assert words == sorted(words, reverse=True)
    for w in set(words):
        group = [
            ratings[h["id"]] for h in body["hits"] if h["_rankingScoreDetails"]["words"]["matchingWords"] == w
        ]
        assert group == sorted(group)
    assert list(body["hits"][0]["_rankingScoreDetails"])[:6] == [
        "words",
        "vote_average:asc",
        "typo",
        "proximity",
        "attribute",
        "exactness",
    ]


def test_custom_ranking_rule_and_sort(client: httpx.Client, index_uid: str) -> None:
    docs: list[dict[str, Any]] = [
        {"id": i, "price": p, "name": n} for i, (p, n) in enumerate([(3, "b"), (1, "c"), (2, "a"), (1, "a")])
    ]
    load(client, index_uid, docs, {"sortableAttributes": ["name"], "rankingRules": ["price:asc", "sort"]})
    assert [h["id"] for h in search(client, index_uid, {})["hits"]] == [1, 3, 2, 0]
    assert [h["id"] for h in search(client, index_uid, {"sort": ["name:desc"]})["hits"]] == [1, 3, 2, 0]
    body = search(client, index_uid, {"sort": ["name:asc"], "showRankingScoreDetails": True})
    assert [h["id"] for h in body["hits"]] == [3, 1, 2, 0]
    assert body["hits"][0]["_rankingScoreDetails"] == {
        "price:asc": {"order": 0, "value": 1.0},
        "name:asc": {"order": 1, "value": "a"},
    }


def test_geo_sort_ties_and_missing(http: httpx.Client, index_uid: str) -> None:
    docs: list[dict[str, Any]] = [
        {"id": "1"},
        {"id": "2", "_geo": None},
        {"id": "3", "_geo": {"lat": 1, "lng": 1}},
        {"id": "4", "_geo": {"lat": "1", "lng": "1"}},
    ]
    load(http, index_uid, docs, {"sortableAttributes": ["_geo"]})
    body = search(http, index_uid, {"sort": ["_geoPoint(50.629973371633746,3.0569447399419567):desc"]})
    assert body["hits"] == [
        {"id": "4", "_geo": {"lat": "1", "lng": "1"}, "_geoDistance": 5522018},
        {"id": "3", "_geo": {"lat": 1, "lng": 1}, "_geoDistance": 5522018},
        {"id": "1"},
        {"id": "2", "_geo": None},
    ]
    ok(http, http.put(f"/indexes/{index_uid}/documents", json=[{"id": "3", "doggo": "kefir"}]))
    body = search(
        http,
        index_uid,
        {"sort": ["_geoPoint(50.629973371633746,3.0569447399419567):desc"], "showRankingScoreDetails": True},
    )
    assert [h["id"] for h in body["hits"]] == ["4", "3", "1", "2"]
    assert body["hits"][1]["doggo"] == "kefir"
    detail = body["hits"][0]["_rankingScoreDetails"]["_geoPoint(50.629973371633746, 3.0569447399419567):desc"]
    assert detail["order"] == 0 and detail["value"] == {"lat": 1.0, "lng": 1.0}
    assert round(detail["distance"]) == 5522018
    assert body["hits"][2]["_rankingScoreDetails"][
        "_geoPoint(50.629973371633746, 3.0569447399419567):desc"
    ] == {"order": 0, "value": None, "distance": None}
