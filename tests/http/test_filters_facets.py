"""Filters, facet distribution/stats and geo filters against a real server.

Two kinds of expectations: Meilisearch's own (its `tests/search/{filters,geo}.rs` snapshots), and,
on the datasets of `tests/assets/datasets/meilisearch/` (movies, meteorites for geo, products for nested
fields), values computed here from the raw files with the rules of docs/api-contract.md (§3.8, §5.3, §7.4):
facet values grouped on their normalized form (NFKD, trimmed, lowercased) and shown with the first
document's spelling, numbers printed as Rust prints an `f64`, at most 3000 candidates ordered
alphabetically by printed value (numbers first), more candidates in numeric order; geo distances by
haversine on a 6 371 000 m sphere.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import datasets
from tests.conftest import ServerProcess, wait_task

LINK = "https://docs.meilisearch.com/errors#"

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
DOCUMENTS = [
    {"title": "Shazam!", "id": "287947", "color": ["green", "blue"]},
    {"title": "Captain Marvel", "id": "299537", "color": ["yellow", "blue"]},
    {"title": "Escape Room", "id": "522681", "color": ["yellow", "red"]},
    {"title": "How to Train Your Dragon: The Hidden World", "id": "166428", "color": ["green", "red"]},
    {"title": "Gläss", "id": "450465", "color": ["blue", "red"]},
]
GEO_DOCUMENTS = [
    {
        "id": 1,
        "name": "Taco Truck",
        "address": "444 Salsa Street, Burritoville",
        "type": "Mexican",
        "rating": 9,
        "_geo": {"lat": 34.0522, "lng": -118.2437},
    },
    {
        "id": 2,
        "name": "La Bella Italia",
        "address": "456 Elm Street, Townsville",
        "type": "Italian",
        "rating": 9,
        "_geo": {"lat": "45.4777599", "lng": "9.1967508"},
    },
    {
        "id": 3,
        "name": "Crêpe Truck",
        "address": "2 Billig Avenue, Rouenville",
        "type": "French",
        "rating": 10,
    },
]


# -- reference ------------------------------------------------------------------------------------


def norm(text: str) -> str:
    return unicodedata.normalize("NFKD", text.strip()).lower()


def f64_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def haversine(a: tuple[float, float], b: tuple[float, float]) -> float:
    t1, t2 = math.radians(a[0]), math.radians(b[0])
    dt, dl = math.radians(b[0] - a[0]), math.radians(b[1] - a[1])
    h = math.sin(dt / 2) ** 2 + math.cos(t1) * math.cos(t2) * math.sin(dl / 2) ** 2
    return 6_371_000 * 2 * math.asin(math.sqrt(h))


def scalars(value: Any) -> list[Any]:
    return [v for v in (value if isinstance(value, list) else [value]) if not isinstance(v, (dict, list))]


def distribution(docs: list[dict[str, Any]], field: str, max_values: int = 100) -> dict[str, int]:
    """facetDistribution of one top-level field over `docs` (at most 3000: the alphabetical path)."""
    numbers: dict[str, int] = {}
    strings: dict[str, list[Any]] = {}
    for doc in docs:
        seen_n: set[float] = set()
        seen_s: set[str] = set()
        for v in scalars(doc.get(field)):
            if isinstance(v, bool):
                v = "true" if v else "false"
            if isinstance(v, (int, float)) and float(v) not in seen_n:
                seen_n.add(float(v))
                numbers[f64_text(v)] = numbers.get(f64_text(v), 0) + 1
            elif isinstance(v, str) and v and norm(v) not in seen_s:
                seen_s.add(norm(v))
                strings.setdefault(norm(v), [v, 0])[1] += 1
    out = {k: numbers[k] for k in sorted(numbers)[:max_values]}
    for key in sorted(strings, key=lambda s: s.encode())[: max(max_values - len(out), 0)]:
        out[strings[key][0]] = strings[key][1]
    return out


# -- fixtures -------------------------------------------------------------------------------------


def ok(http: httpx.Client, res: httpx.Response) -> dict[str, Any]:
    assert res.status_code == 202, res.text
    task = wait_task(http, res.json()["taskUid"], timeout=120)
    assert task["status"] == "succeeded", task
    return task


def load(http: httpx.Client, uid: str, documents: list[dict[str, Any]], settings: dict[str, Any]) -> None:
    ok(http, http.patch(f"/indexes/{uid}/settings", json=settings))
    ok(http, http.post(f"/indexes/{uid}/documents", json=documents))


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


MOVIES = datasets.load_json("meilisearch/movies_1688.json")
METEORITES = datasets.load_json("meilisearch/meteorites.json")
PRODUCTS = datasets.load_ndjson("meilisearch/products_300.jsonl")


@pytest.fixture(scope="module")
def movies(client: httpx.Client) -> str:
    load(
        client,
        "ff_movies",
        MOVIES,
        {
            "filterableAttributes": ["genres", "vote_average", "vote_count", "director", "id"],
            "sortableAttributes": ["vote_average", "title"],
        },
    )
    return "ff_movies"


@pytest.fixture(scope="module")
def meteorites(client: httpx.Client) -> str:
    load(
        client,
        "ff_meteorites",
        METEORITES,
        {
            "filterableAttributes": ["_geo", "recclass", "mass", "fall"],
            "sortableAttributes": ["_geo", "mass"],
        },
    )
    return "ff_meteorites"


@pytest.fixture(scope="module")
def products(client: httpx.Client) -> str:
    load(
        client,
        "ff_products",
        PRODUCTS,
        {"filterableAttributes": ["articleAttributes", "brandName", "price", "year", "baseColour", "gender"]},
    )
    return "ff_products"


def search(client: httpx.Client, uid: str, body: dict[str, Any]) -> dict[str, Any]:
    res = client.post(f"/indexes/{uid}/search", json=body)
    assert res.status_code == 200, res.text
    out: dict[str, Any] = res.json()
    return out


def all_ids(client: httpx.Client, uid: str, body: dict[str, Any]) -> list[Any]:
    result = search(client, uid, {**body, "limit": 1000, "attributesToRetrieve": ["id"]})
    return [h["id"] for h in result["hits"]]


# -- movies ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "predicate"),
    [
        ("genres = Drama AND vote_average > 7", lambda d: "Drama" in d["genres"] and d["vote_average"] > 7),
        (
            "genres IN [horror, ANIMATION] AND NOT vote_count < 1000",
            lambda d: {"Horror", "Animation"} & set(d["genres"]) and not d["vote_count"] < 1000,
        ),
        (
            "vote_average 6.5 TO 7 OR director = 'Christopher Nolan'",
            lambda d: 6.5 <= d["vote_average"] <= 7 or d["director"] == "Christopher Nolan",
        ),
        (
            "genres NOT IN [Drama, Comedy, Action, Thriller] AND genres EXISTS",
            lambda d: not {"Drama", "Comedy", "Action", "Thriller"} & set(d["genres"]) and "genres" in d,
        ),
        ("genres IS EMPTY", lambda d: d["genres"] == []),
        (
            "director != 'Steven Spielberg' AND vote_count >= 10000",
            lambda d: d["director"] != "Steven Spielberg" and d["vote_count"] >= 10000,
        ),
        ("id > 400000 AND id <= 450000", lambda d: 400000 < d["id"] <= 450000),
    ],
)
def test_movie_filters(client: httpx.Client, movies: str, expr: str, predicate: Any) -> None:
    expected = [d["id"] for d in MOVIES if predicate(d)]
    result = search(client, movies, {"filter": expr, "limit": 1000, "attributesToRetrieve": ["id"]})
    assert [h["id"] for h in result["hits"]] == expected  # placeholder: internal id (insertion) order
    assert result["estimatedTotalHits"] == len(expected)


def test_movie_facets(client: httpx.Client, movies: str) -> None:
    result = search(client, movies, {"facets": ["genres", "vote_average", "director"], "limit": 0})
    assert list(result["facetDistribution"]) == ["director", "genres", "vote_average"]
    for field in ("genres", "vote_average", "director"):
        assert list(result["facetDistribution"][field].items()) == list(distribution(MOVIES, field).items())
    assert result["facetStats"] == {
        "vote_average": {
            "min": min(d["vote_average"] for d in MOVIES),
            "max": max(d["vote_average"] for d in MOVIES),
        }
    }
    # over the documents a query and a filter select, not just the page
    result = search(
        client,
        movies,
        {"q": "love", "filter": "vote_average >= 7", "facets": ["genres", "vote_count"], "limit": 1},
    )
    matched = set(all_ids(client, movies, {"q": "love", "filter": "vote_average >= 7"}))
    docs = [d for d in MOVIES if d["id"] in matched]
    assert result["estimatedTotalHits"] == len(docs) > 1
    assert result["facetDistribution"]["genres"] == distribution(docs, "genres")
    assert result["facetStats"]["vote_count"] == {
        "min": min(d["vote_count"] for d in docs),
        "max": max(d["vote_count"] for d in docs),
    }
    # `*` is every filterable attribute
    assert list(search(client, movies, {"facets": ["*"], "limit": 0})["facetDistribution"]) == [
        "director",
        "genres",
        "id",
        "vote_average",
        "vote_count",
    ]


def test_faceting_settings(client: httpx.Client, index_uid: str) -> None:
    docs = MOVIES[:400]
    load(client, index_uid, docs, {"filterableAttributes": ["genres"], "faceting": {"maxValuesPerFacet": 5}})
    genres = search(client, index_uid, {"facets": ["genres"]})["facetDistribution"]["genres"]
    assert genres == distribution(docs, "genres", 5)
    ok(
        client,
        client.patch(
            f"/indexes/{index_uid}/settings",
            json={"faceting": {"maxValuesPerFacet": 100, "sortFacetValuesBy": {"genres": "count"}}},
        ),
    )
    genres = search(client, index_uid, {"facets": ["genres"]})["facetDistribution"]["genres"]
    assert genres == distribution(docs, "genres")
    assert list(genres.values()) == sorted(genres.values(), reverse=True)


def test_numbers_order_depends_on_the_number_of_candidates(client: httpx.Client, index_uid: str) -> None:
    # milli's quirk: up to 3000 candidates, numbers are listed by their printed form, beyond in value order
    docs = [{"id": i, "n": i % 12} for i in range(3100)]
    load(client, index_uid, docs, {"filterableAttributes": ["n", "id"]})
    assert list(search(client, index_uid, {"facets": ["n"], "limit": 0})["facetDistribution"]["n"]) == [
        str(i) for i in range(12)
    ]
    small = search(client, index_uid, {"facets": ["n"], "limit": 0, "filter": "id < 3000"})
    assert list(small["facetDistribution"]["n"]) == sorted(str(i) for i in range(12))
    assert small["facetDistribution"]["n"]["11"] == 250


# -- meteorites (geo) ---------------------------------------------------------------------------------


def point(doc: dict[str, Any]) -> tuple[float, float] | None:
    geo = doc.get("_geo")
    return None if geo is None else (float(geo["lat"]), float(geo["lng"]))


@pytest.mark.parametrize(
    ("center", "radius"),
    [
        ((48.8566, 2.3522), 1_000_000),
        ((0.0, 0.0), 3_000_000),
        ((-33.9, 151.2), 2_500_000),
        ((35.0, 139.0), 500_000),
    ],
)
def test_geo_radius(client: httpx.Client, meteorites: str, center: tuple[float, float], radius: int) -> None:
    expected = {d["id"] for d in METEORITES if (p := point(d)) is not None and haversine(center, p) <= radius}
    got = all_ids(client, meteorites, {"filter": f"_geoRadius({center[0]}, {center[1]}, {radius})"})
    assert set(got) == expected and len(got) == len(expected)


def test_geo_bounding_box_and_combined(client: httpx.Client, meteorites: str) -> None:
    expected = [
        d["id"] for d in METEORITES if (p := point(d)) is not None and 40 <= p[0] <= 60 and -10 <= p[1] <= 30
    ]
    assert all_ids(client, meteorites, {"filter": "_geoBoundingBox([60, 30], [40, -10])"}) == expected
    expected = [
        d["id"]
        for d in METEORITES
        if (p := point(d)) is not None
        and 40 <= p[0] <= 60
        and -10 <= p[1] <= 30
        and isinstance(d.get("mass"), (int, float))
        and d["mass"] > 10_000
    ]
    assert (
        all_ids(client, meteorites, {"filter": "_geoBoundingBox([60, 30], [40, -10]) AND mass > 10000"})
        == expected
    )


@pytest.mark.parametrize("direction", ["asc", "desc"])
def test_geo_sort(client: httpx.Client, meteorites: str, direction: str) -> None:
    center = (48.8566, 2.3522)
    located = [
        (int(haversine(center, p)), i, d) for i, d in enumerate(METEORITES) if (p := point(d)) is not None
    ]
    located.sort(key=lambda t: (t[0], t[1]))
    if direction == "desc":
        located.reverse()
    expected = [d["id"] for _, _, d in located] + [d["id"] for d in METEORITES if point(d) is None]
    result = search(
        client,
        meteorites,
        {
            "sort": [f"_geoPoint({center[0]}, {center[1]}):{direction}"],
            "limit": 1000,
            "attributesToRetrieve": ["id", "_geo"],
        },
    )
    assert [h["id"] for h in result["hits"]] == expected
    for hit in result["hits"][:50]:
        assert hit["_geoDistance"] == math.floor(haversine(center, point(hit) or (0, 0)) + 0.5)
    assert "_geoDistance" not in result["hits"][-1]  # no point, no distance


def test_meteorite_facets(client: httpx.Client, meteorites: str) -> None:
    result = search(
        client,
        meteorites,
        {
            "facets": ["fall", "recclass", "mass"],
            "limit": 0,
            "filter": "_geoRadius(48.8566, 2.3522, 2000000)",
        },
    )
    matched = set(all_ids(client, meteorites, {"filter": "_geoRadius(48.8566, 2.3522, 2000000)"}))
    docs = [d for d in METEORITES if d["id"] in matched]
    for field in ("fall", "recclass", "mass"):
        assert result["facetDistribution"][field] == distribution(docs, field)
    masses = [d["mass"] for d in docs if isinstance(d.get("mass"), (int, float))]
    assert result["facetStats"] == {"mass": {"min": min(masses), "max": max(masses)}}


def test_geo_snapshots(http: httpx.Client, index_uid: str) -> None:
    load(http, index_uid, GEO_DOCUMENTS, {"filterableAttributes": ["_geo"], "sortableAttributes": ["_geo"]})
    body = search(http, index_uid, {"filter": "_geoBoundingBox([89, 179], [-89, -179])"})
    assert body["hits"] == GEO_DOCUMENTS[:2] and body["estimatedTotalHits"] == 2
    body = search(http, index_uid, {"sort": ["_geoPoint(45.4777599, 9.1967508):asc"]})
    assert body["hits"] == [
        {**GEO_DOCUMENTS[1], "_geoDistance": 0},
        {**GEO_DOCUMENTS[0], "_geoDistance": 9714063},
        GEO_DOCUMENTS[2],
    ]
    body = search(
        http,
        index_uid,
        {"filter": "_geoRadius(45.472735, 9.184019, 10000)", "sort": ["_geoPoint(0.0, 0.0):asc"]},
    )
    assert [h["id"] for h in body["hits"]] == [2]
    # `_geoDistance` needs the hit's `_geo`
    body = search(
        http, index_uid, {"sort": ["_geoPoint(45.4777599, 9.1967508):asc"], "attributesToRetrieve": ["id"]}
    )
    assert body["hits"] == [{"id": 2}, {"id": 1}, {"id": 3}]


# -- products (nested) ----------------------------------------------------------------------------------


def test_nested_filters(client: httpx.Client, products: str) -> None:
    expected = [d["id"] for d in PRODUCTS if norm(str(d["articleAttributes"].get("Type", ""))) == "hybrid"]
    assert expected and all_ids(client, products, {"filter": "articleAttributes.Type = HYBRID"}) == expected
    expected = [
        d["id"] for d in PRODUCTS if d["articleAttributes"].get("Water Resistance") == "Water Resistant"
    ]
    assert (
        all_ids(client, products, {"filter": "'articleAttributes.Water Resistance' = 'water resistant'"})
        == expected
    )
    expected = [d["id"] for d in PRODUCTS if "Fabric" not in d["articleAttributes"]]
    assert all_ids(client, products, {"filter": "articleAttributes.Fabric NOT EXISTS"}) == expected
    # `year` holds strings: `=` matches them, comparisons are on the strings
    assert all_ids(client, products, {"filter": "year = 2016"}) == [
        d["id"] for d in PRODUCTS if d["year"] == "2016"
    ]
    assert all_ids(client, products, {"filter": "year > 2015"}) == [
        d["id"] for d in PRODUCTS if d["year"] > "2015"
    ]
    expected = [d["id"] for d in PRODUCTS if 500 <= d["price"] <= 1000 and d["gender"] == "Girls"]
    assert all_ids(client, products, {"filter": ["price 500 TO 1000", "gender = girls"]}) == expected


def test_nested_facets(client: httpx.Client, products: str) -> None:
    result = search(client, products, {"facets": ["articleAttributes", "brandName"], "limit": 0})
    dist = result["facetDistribution"]
    keys = sorted({f"articleAttributes.{k}" for d in PRODUCTS for k in d["articleAttributes"]})
    assert list(dist) == ["articleAttributes", *keys, "brandName"]
    assert dist["articleAttributes"] == {}
    for key in keys[:8]:
        inner = key.removeprefix("articleAttributes.")
        assert dist[key] == distribution([{"v": d["articleAttributes"].get(inner)} for d in PRODUCTS], "v")
    assert dist["brandName"] == distribution(PRODUCTS, "brandName")
    assert result["facetStats"] == {}


# -- Meilisearch's snapshots ----------------------------------------------------------------------------


def test_meilisearch_filter_snapshots(http: httpx.Client, index_uid: str) -> None:
    load(http, index_uid, NESTED_DOCUMENTS, {"filterableAttributes": ["cattos", "doggos.age"]})
    assert [h["id"] for h in search(http, index_uid, {"filter": "cattos = pésti"})["hits"]] == [852]
    assert [h["id"] for h in search(http, index_uid, {"filter": "doggos.age > 5"})["hits"]] == [654, 951]
    docs = f"{index_uid}_docs"
    load(http, docs, DOCUMENTS, {"filterableAttributes": ["title"]})
    assert len(search(http, docs, {"filter": "title = Gläss"})["hits"]) == 1
    assert (
        len(
            search(http, docs, {"filter": [["title = Gläss", 'title = "Shazam!"', 'title = "Escape Room"']]})[
                "hits"
            ]
        )
        == 3
    )


@pytest.mark.parametrize(
    ("features", "query", "result"),
    [
        ({"facetSearch": False, "filter": {"equality": True, "comparison": False}}, "cattos = pésti", [852]),
        (
            {"facetSearch": False, "filter": {"equality": False, "comparison": True}},
            "doggos.age > 2",
            [852, 654, 951],
        ),
        (
            {"facetSearch": False, "filter": {"equality": True, "comparison": False}},
            "doggos.age > 2",
            "Filter operator `>` is not allowed for the attribute `doggos.age`.\n  - Note: allowed operators: OR, AND, NOT, "
            "=, !=, IN, IS EMPTY, IS NULL, EXISTS.\n  - Note: field `doggos.age` matched rule #0 in `filterableAttributes`\n"
            "  - Hint: enable comparison in rule #0 by modifying the features.filter object\n  - Hint: prepend another rule "
            "matching `doggos.age` with appropriate filter features before rule #0",
        ),
        (
            {"facetSearch": False, "filter": {"equality": False, "comparison": True}},
            "cattos = pésti",
            "Filter operator `=` is not allowed for the attribute `cattos`.\n  - Note: allowed operators: OR, AND, NOT, <, "
            ">, <=, >=, TO, IS EMPTY, IS NULL, EXISTS.\n  - Note: field `cattos` matched rule #0 in `filterableAttributes`\n"
            "  - Hint: enable equality in rule #0 by modifying the features.filter object\n  - Hint: prepend another rule "
            "matching `cattos` with appropriate filter features before rule #0",
        ),
    ],
)
def test_pattern_filter_features(
    http: httpx.Client, index_uid: str, features: dict[str, Any], query: str, result: Any
) -> None:
    load(
        http,
        index_uid,
        NESTED_DOCUMENTS,
        {"filterableAttributes": [{"attributePatterns": ["cattos", "doggos.age"], "features": features}]},
    )
    res = http.post(f"/indexes/{index_uid}/search", json={"filter": query})
    if isinstance(result, list):
        assert [h["id"] for h in res.json()["hits"]] == result
    else:
        assert res.status_code == 400 and res.json() == {
            "message": f"Index `{index_uid}`: {result}",
            "code": "invalid_search_filter",
            "type": "invalid_request",
            "link": LINK + "invalid_search_filter",
        }


def test_filterable_attributes_priority(http: httpx.Client, index_uid: str) -> None:
    off = {"facetSearch": False, "filter": {"equality": False, "comparison": False}}
    load(
        http,
        index_uid,
        NESTED_DOCUMENTS,
        {
            "filterableAttributes": [
                {"attributePatterns": ["doggos.a*"], "features": off},
                {"attributePatterns": ["doggos.*"]},
            ]
        },
    )
    assert [h["id"] for h in search(http, index_uid, {"filter": "doggos.name = bobby"})["hits"]] == [852]
    res = http.post(f"/indexes/{index_uid}/search", json={"filter": "doggos.age > 2"})
    assert res.json()["message"] == (
        f"Index `{index_uid}`: Attribute `doggos.age` is not filterable. Available "
        "filterable attribute patterns are: `doggos.*`.\n1:11 doggos.age > 2"
    )
    ok(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings",
            json={
                "filterableAttributes": [
                    {"attributePatterns": ["doggos"], "features": off},
                    {"attributePatterns": ["doggos.*"]},
                ]
            },
        ),
    )
    assert [h["id"] for h in search(http, index_uid, {"filter": "doggos.name = bobby"})["hits"]] == [852]
    res = http.post(f"/indexes/{index_uid}/search", json={"filter": "doggos EXISTS"})
    assert res.json()["message"] == (
        f"Index `{index_uid}`: Attribute `doggos` is not filterable. Available "
        "filterable attribute patterns are: `doggos.*`.\n1:7 doggos EXISTS"
    )


def test_contains_needs_the_feature(http: httpx.Client, index_uid: str) -> None:
    load(http, index_uid, DOCUMENTS, {"filterableAttributes": ["title"]})
    res = http.post(f"/indexes/{index_uid}/search", json={"filter": "title CONTAINS cap"})
    assert res.status_code == 400 and res.json()["code"] == "feature_not_enabled"
    assert res.json()["message"] == (
        "Using `CONTAINS` in a filter requires enabling the `contains filter` experimental feature. See "
        "https://github.com/orgs/meilisearch/discussions/763\n7:15 title CONTAINS cap"
    )
    assert http.patch("/experimental-features", json={"containsFilter": True}).status_code == 200
    try:
        # "Captain Marvel" and "Escape Room" (as Meilisearch's `search_with_contains_filter`)
        assert len(search(http, index_uid, {"filter": "title CONTAINS cap"})["hits"]) == 2
    finally:
        http.patch("/experimental-features", json={"containsFilter": False})
