"""`POST`/`GET /indexes/{uid}/search` against a real server: response shape, pagination maths,
attribute retrieval, `_formatted`/`_matchesPosition` (Meilisearch's `tests/search/formatted.rs`
snapshots), metadata and the error answers of `tests/search/errors.rs`.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.conftest import wait_task

UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
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


def error(code: str, message: str) -> dict[str, str]:
    return {"message": message, "code": code, "type": "invalid_request", "link": LINK + code}


def succeeded(http: httpx.Client, res: httpx.Response) -> None:
    assert res.status_code == 202, res.text
    task = wait_task(http, res.json()["taskUid"])
    assert task["status"] == "succeeded", task


def make_index(
    http: httpx.Client,
    uid: str,
    documents: list[dict[str, Any]] | None = None,
    settings: dict[str, Any] | None = None,
) -> str:
    if settings is not None:
        succeeded(http, http.patch(f"/indexes/{uid}/settings", json=settings))
    if documents is not None:
        succeeded(http, http.post(f"/indexes/{uid}/documents", json=documents))
    elif settings is None:
        succeeded(http, http.post("/indexes", json={"uid": uid}))
    return uid


def search(
    http: httpx.Client, uid: str, body: dict[str, Any] | None = None, **headers: str
) -> dict[str, Any]:
    res = http.post(f"/indexes/{uid}/search", json=body or {}, headers=headers)
    assert res.status_code == 200, res.text
    out: dict[str, Any] = res.json()
    return out


def search_get(http: httpx.Client, uid: str, params: dict[str, str] | None = None) -> dict[str, Any]:
    res = http.get(f"/indexes/{uid}/search", params=params or {})
    assert res.status_code == 200, res.text
    out: dict[str, Any] = res.json()
    return out


def fails(res: httpx.Response, status: int, code: str, message: str) -> None:
    assert res.status_code == status, res.text
    assert res.json() == error(code, message)


@pytest.fixture(scope="module")
def nested(server: Any) -> str:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        return make_index(http, "search_route_nested", NESTED_DOCUMENTS)


@pytest.fixture(scope="module")
def movies(server: Any) -> str:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        return make_index(http, "search_route_movies", DOCUMENTS)


def without_volatile(body: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(body.pop("processingTimeMs"), int)
    assert UUID7.fullmatch(body.pop("requestUid"))
    return body


# -- response shape ------------------------------------------------------------------------------


def test_placeholder_search_returns_every_document_in_insertion_order(
    http: httpx.Client, movies: str
) -> None:
    body = search(http, movies)
    assert list(body) == [
        "hits",
        "query",
        "processingTimeMs",
        "limit",
        "offset",
        "estimatedTotalHits",
        "requestUid",
    ]
    assert without_volatile(body) == {
        "hits": DOCUMENTS,
        "query": "",
        "limit": 20,
        "offset": 0,
        "estimatedTotalHits": 5,
    }


def test_get_search_has_the_same_shape(http: httpx.Client, movies: str) -> None:
    body = search_get(http, movies, {"limit": "2", "attributesToRetrieve": "id,title"})
    assert list(body) == [
        "hits",
        "query",
        "processingTimeMs",
        "limit",
        "offset",
        "estimatedTotalHits",
        "requestUid",
    ]
    assert without_volatile(body) == {
        "hits": [{"title": "Shazam!", "id": "287947"}, {"title": "Captain Marvel", "id": "299537"}],
        "query": "",
        "limit": 2,
        "offset": 0,
        "estimatedTotalHits": 5,
    }


def test_request_uids_differ(http: httpx.Client, movies: str) -> None:
    assert search(http, movies)["requestUid"] != search(http, movies)["requestUid"]


def test_keyword_search_echoes_the_query(http: httpx.Client, movies: str) -> None:
    body = search(http, movies, {"q": "glass", "attributesToRetrieve": ["title"]})
    assert body["query"] == "glass"
    assert body["hits"] == [{"title": "Gläss"}]
    assert body["estimatedTotalHits"] == 1


def test_ranking_score_and_details(http: httpx.Client, movies: str) -> None:
    hit = search(
        http,
        movies,
        {
            "q": "glass",
            "attributesToRetrieve": ["id"],
            "showRankingScore": True,
            "showRankingScoreDetails": True,
        },
    )["hits"][0]
    assert list(hit) == ["id", "_rankingScore", "_rankingScoreDetails"]
    assert 0.0 <= hit["_rankingScore"] <= 1.0
    assert isinstance(hit["_rankingScoreDetails"], dict)
    assert "_rankingScore" not in search(http, movies, {"q": "glass"})["hits"][0]


def test_metadata_header(http: httpx.Client, movies: str) -> None:
    for value in ("true", "TRUE", "1"):
        body = search(http, movies, {"limit": 0}, **{"Meili-Include-Metadata": value})
        assert list(body)[-2:] == ["requestUid", "metadata"]
        metadata = body["metadata"]
        assert list(metadata) == ["queryUid", "indexUid", "primaryKey"]
        assert UUID7.fullmatch(metadata["queryUid"])
        assert metadata["indexUid"] == movies and metadata["primaryKey"] == "id"
    assert "metadata" not in search(http, movies, {"limit": 0}, **{"Meili-Include-Metadata": "yes"})


def test_performance_details(http: httpx.Client, movies: str) -> None:
    body = search(http, movies, {"limit": 0, "showPerformanceDetails": True})
    assert list(body)[-2:] == ["requestUid", "performanceDetails"]
    assert isinstance(body["performanceDetails"], dict)


# -- pagination ----------------------------------------------------------------------------------


def test_offset_and_limit(http: httpx.Client, movies: str) -> None:
    body = search(http, movies, {"offset": 1, "limit": 2, "attributesToRetrieve": ["id"]})
    assert body["hits"] == [{"id": "299537"}, {"id": "522681"}]
    assert (body["offset"], body["limit"], body["estimatedTotalHits"]) == (1, 2, 5)
    assert search(http, movies, {"offset": 10})["hits"] == []
    assert search(http, movies, {"limit": 0})["hits"] == []


def test_page_mode(http: httpx.Client, movies: str) -> None:
    body = search(http, movies, {"page": 2, "hitsPerPage": 2, "attributesToRetrieve": ["id"]})
    assert list(body) == [
        "hits",
        "query",
        "processingTimeMs",
        "hitsPerPage",
        "page",
        "totalPages",
        "totalHits",
        "requestUid",
    ]
    assert body["hits"] == [{"id": "522681"}, {"id": "166428"}]
    assert (body["hitsPerPage"], body["page"], body["totalPages"], body["totalHits"]) == (2, 2, 3, 5)
    body = search(http, movies, {"page": 1})
    assert (len(body["hits"]), body["hitsPerPage"], body["page"], body["totalPages"], body["totalHits"]) == (
        5,
        20,
        1,
        1,
        5,
    )
    body = search(http, movies, {"page": 0})
    assert (body["hits"], body["page"], body["totalPages"], body["totalHits"]) == ([], 0, 1, 5)
    body = search(http, movies, {"hitsPerPage": 0})
    assert (body["hits"], body["page"], body["totalPages"], body["totalHits"]) == ([], 1, 0, 5)
    body = search(http, movies, {"hitsPerPage": 1})
    assert (len(body["hits"]), body["totalPages"]) == (1, 5)
    body = search_get(http, movies, {"page": "3", "hitsPerPage": "2"})
    assert (len(body["hits"]), body["page"], body["totalPages"]) == (1, 3, 3)


def test_max_total_hits_bounds_the_window(http: httpx.Client, index_uid: str) -> None:
    docs = [{"id": i, "title": f"Document {i}"} for i in range(1, 6)]
    make_index(http, index_uid, docs, {"pagination": {"maxTotalHits": 3}})
    body = search(http, index_uid, {"limit": 1})
    assert (len(body["hits"]), body["estimatedTotalHits"]) == (1, 3)
    body = search(http, index_uid, {"limit": 100, "attributesToRetrieve": ["id"]})
    assert body["hits"] == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert body["limit"] == 100  # the requested limit is echoed
    body = search(http, index_uid, {"offset": 2, "limit": 5, "attributesToRetrieve": ["id"]})
    assert body["hits"] == [{"id": 3}]
    body = search(http, index_uid, {"offset": 10})
    assert (body["hits"], body["offset"]) == ([], 3)  # Meilisearch echoes the capped offset
    body = search(http, index_uid, {"page": 2, "hitsPerPage": 2, "attributesToRetrieve": ["id"]})
    assert body["hits"] == [{"id": 3}]
    assert (body["totalHits"], body["totalPages"]) == (3, 2)


# -- retrieval -----------------------------------------------------------------------------------


def test_attributes_to_retrieve(http: httpx.Client, nested: str) -> None:
    assert search(http, nested, {"attributesToRetrieve": ["doggos"], "limit": 1})["hits"] == [
        {"doggos": [{"name": "bobby", "age": 2}, {"name": "buddy", "age": 4}]}
    ]
    assert search(http, nested, {"attributesToRetrieve": ["doggos.name"], "limit": 1})["hits"] == [
        {"doggos": [{"name": "bobby"}, {"name": "buddy"}]}
    ]
    assert search(http, nested, {"attributesToRetrieve": [], "limit": 1})["hits"] == [{}]
    assert search(http, nested, {"attributesToRetrieve": ["unknown", "id"], "limit": 1})["hits"] == [
        {"id": 852}
    ]
    assert search(http, nested, {"attributesToRetrieve": ["*", "id"], "limit": 1})["hits"] == [
        NESTED_DOCUMENTS[0]
    ]


def test_displayed_attributes_bound_retrieval(http: httpx.Client, index_uid: str) -> None:
    make_index(http, index_uid, NESTED_DOCUMENTS, {"displayedAttributes": ["id"]})
    assert search(
        http,
        index_uid,
        {
            "attributesToRetrieve": ["father", "id"],
            "attributesToHighlight": ["mother"],
            "attributesToCrop": ["cattos"],
        },
    )["hits"][0] == {"id": 852}
    assert search(http, index_uid, {"attributesToRetrieve": ["id"]})["hits"][0] == {"id": 852}
    assert search(http, index_uid, {"attributesToHighlight": ["id"]})["hits"][0] == {
        "id": 852,
        "_formatted": {"id": "852"},
    }
    assert search(http, index_uid, {"attributesToCrop": ["id"]})["hits"][0] == {
        "id": 852,
        "_formatted": {"id": "852"},
    }
    assert search(http, index_uid, {"attributesToHighlight": ["id"], "attributesToCrop": ["id"]})["hits"][
        0
    ] == {"id": 852, "_formatted": {"id": "852"}}
    assert search(http, index_uid, {"attributesToHighlight": ["cattos"]})["hits"][0] == {"id": 852}
    assert search(http, index_uid, {"attributesToCrop": ["cattos"]})["hits"][0] == {"id": 852}
    assert search(http, index_uid, {"attributesToRetrieve": ["cattos"]})["hits"][0] == {}
    assert (
        search(
            http,
            index_uid,
            {
                "attributesToRetrieve": ["cattos"],
                "attributesToHighlight": ["cattos"],
                "attributesToCrop": ["cattos"],
            },
        )["hits"][0]
        == {}
    )
    assert search(http, index_uid, {"attributesToRetrieve": ["cattos"], "attributesToHighlight": ["id"]})[
        "hits"
    ][0] == {"_formatted": {"id": "852"}}
    assert search(http, index_uid, {"attributesToRetrieve": ["cattos"], "attributesToCrop": ["id"]})["hits"][
        0
    ] == {"_formatted": {"id": "852"}}


def test_vectors_only_with_retrieve_vectors(http: httpx.Client, index_uid: str) -> None:
    docs = [{"id": 1, "_vectors": {"manual": [1, 2, 3]}, "title": "one"}, {"id": 2, "title": "two"}]
    make_index(http, index_uid, docs)
    assert search(http, index_uid)["hits"] == [{"id": 1, "title": "one"}, {"id": 2, "title": "two"}]
    hits = search(http, index_uid, {"retrieveVectors": True})["hits"]
    # `_vectors` goes last: taken out with a swap-remove (the last field fills its slot), appended back
    assert [list(hit) for hit in hits] == [["id", "title", "_vectors"], ["id", "title", "_vectors"]]
    assert hits == [
        {"id": 1, "title": "one", "_vectors": {"manual": [1, 2, 3]}},
        {"id": 2, "title": "two", "_vectors": {}},
    ]
    hits = search(http, index_uid, {"retrieveVectors": True, "attributesToRetrieve": ["id"]})["hits"]
    assert hits[0] == {"id": 1, "_vectors": {"manual": [1, 2, 3]}}


# -- _formatted and _matchesPosition (formatted.rs) -----------------------------------------------


def test_formatted_contain_wildcard(http: httpx.Client, index_uid: str) -> None:
    make_index(http, index_uid, NESTED_DOCUMENTS, {"displayedAttributes": ["id", "cattos"]})
    hit = search(
        http,
        index_uid,
        {
            "q": "pésti",
            "attributesToRetrieve": ["father", "mother"],
            "attributesToHighlight": ["father", "mother", "*"],
            "attributesToCrop": ["doggos"],
            "showMatchesPosition": True,
        },
    )["hits"][0]
    assert hit == {
        "_formatted": {"id": "852", "cattos": "<em>pésti</em>"},
        "_matchesPosition": {"cattos": [{"start": 0, "length": 5}]},
    }
    assert search(http, index_uid, {"q": "pésti", "attributesToRetrieve": ["*"]})["hits"][0] == {
        "id": 852,
        "cattos": "pésti",
    }
    hit = search(
        http,
        index_uid,
        {
            "q": "pésti",
            "attributesToRetrieve": ["*"],
            "attributesToHighlight": ["id"],
            "showMatchesPosition": True,
        },
    )["hits"][0]
    assert hit == {
        "id": 852,
        "cattos": "pésti",
        "_formatted": {"id": "852", "cattos": "pésti"},
        "_matchesPosition": {"cattos": [{"start": 0, "length": 5}]},
    }
    assert list(hit) == ["id", "cattos", "_formatted", "_matchesPosition"]
    for body in (
        {"q": "pésti", "attributesToRetrieve": ["*"], "attributesToCrop": ["*"]},
        {"q": "pésti", "attributesToCrop": ["*"]},
    ):
        assert search(http, index_uid, body)["hits"][0] == {
            "id": 852,
            "cattos": "pésti",
            "_formatted": {"id": "852", "cattos": "pésti"},
        }


def test_format_nested(http: httpx.Client, nested: str) -> None:
    assert search(http, nested, {"q": "pésti", "attributesToRetrieve": ["doggos"]})["hits"][0] == {
        "doggos": [{"name": "bobby", "age": 2}, {"name": "buddy", "age": 4}]
    }
    assert search(http, nested, {"q": "pésti", "attributesToRetrieve": ["doggos.name"]})["hits"][0] == {
        "doggos": [{"name": "bobby"}, {"name": "buddy"}]
    }
    assert search(
        http, nested, {"q": "bobby", "attributesToRetrieve": ["doggos.name"], "showMatchesPosition": True}
    )["hits"][0] == {
        "doggos": [{"name": "bobby"}, {"name": "buddy"}],
        "_matchesPosition": {"doggos.name": [{"start": 0, "length": 5, "indices": [0]}]},
    }
    for rule in ("attributesToHighlight", "attributesToCrop"):
        assert search(http, nested, {"q": "pésti", "attributesToRetrieve": [], rule: ["doggos.name"]})[
            "hits"
        ][0] == {"_formatted": {"doggos": [{"name": "bobby"}, {"name": "buddy"}]}}
    assert search(
        http,
        nested,
        {"q": "pésti", "attributesToRetrieve": ["doggos.name"], "attributesToHighlight": ["doggos.age"]},
    )["hits"][0] == {
        "doggos": [{"name": "bobby"}, {"name": "buddy"}],
        "_formatted": {"doggos": [{"name": "bobby", "age": "2"}, {"name": "buddy", "age": "4"}]},
    }
    assert search(
        http,
        nested,
        {
            "q": "pésti",
            "attributesToRetrieve": [],
            "attributesToHighlight": ["doggos.age"],
            "attributesToCrop": ["doggos.name"],
        },
    )["hits"][0] == {"_formatted": {"doggos": [{"name": "bobby", "age": "2"}, {"name": "buddy", "age": "4"}]}}


def test_highlight_and_crop_of_keyword_hits(http: httpx.Client, index_uid: str) -> None:
    docs = [{"id": 456, "title": "Le Petit Prince"}, {"id": 2, "title": "Le Rouge et le Noir"}]
    make_index(http, index_uid, docs)
    body = {
        "q": "prince",
        "attributesToCrop": ["title"],
        "cropLength": 2,
        "attributesToHighlight": ["title"],
        "attributesToRetrieve": ["title"],
    }
    assert search(http, index_uid, body)["hits"] == [
        {"title": "Le Petit Prince", "_formatted": {"title": "…Petit <em>Prince</em>"}}
    ]
    body.update(cropMarker="(…)", highlightPreTag="[", highlightPostTag="]")
    assert search(http, index_uid, body)["hits"][0]["_formatted"] == {"title": "(…)Petit [Prince]"}
    hit = search_get(
        http, index_uid, {"q": "prince", "attributesToCrop": "title:1", "showMatchesPosition": "true"}
    )
    assert hit["hits"][0]["_formatted"] == {"id": "456", "title": "…Prince"}
    assert hit["hits"][0]["_matchesPosition"] == {"title": [{"start": 9, "length": 6}]}


def test_placeholder_search_has_empty_match_positions(http: httpx.Client, movies: str) -> None:
    hit = search(http, movies, {"showMatchesPosition": True, "limit": 1, "attributesToCrop": ["title:1"]})[
        "hits"
    ][0]
    assert hit["_matchesPosition"] == {}
    # the crop never ends on a separator, so the trailing "!" goes and a marker replaces it
    assert hit["_formatted"] == {"title": "Shazam…", "id": "287947", "color": ["green", "blue"]}


# -- errors --------------------------------------------------------------------------------------


def test_missing_index(http: httpx.Client) -> None:
    message = "Index `DOES_NOT_EXISTS` not found."
    fails(http.post("/indexes/DOES_NOT_EXISTS/search", json={"q": "hello"}), 404, "index_not_found", message)
    fails(http.get("/indexes/DOES_NOT_EXISTS/search", params={"q": "hello"}), 404, "index_not_found", message)
    # the parameters are checked first
    fails(
        http.post("/indexes/DOES_NOT_EXISTS/search", json={"q": ["doggo"]}),
        400,
        "invalid_search_q",
        'Invalid value type at `.q`: expected a string, but found an array: `["doggo"]`',
    )


def test_parameter_errors_over_http(http: httpx.Client, movies: str) -> None:
    fails(
        http.post(f"/indexes/{movies}/search", json={"offset": "doggo"}),
        400,
        "invalid_search_offset",
        'Invalid value type at `.offset`: expected a positive integer, but found a string: `"doggo"`',
    )
    fails(
        http.get(f"/indexes/{movies}/search?offset=doggo"),
        400,
        "invalid_search_offset",
        "Invalid value in parameter `offset`: could not parse `doggo` as a positive integer",
    )
    fails(
        http.get(f"/indexes/{movies}/search?matchingStrategy=doggo"),
        400,
        "invalid_search_matching_strategy",
        "Unknown value `doggo` for parameter `matchingStrategy`: expected one of `last`, `all`, `frequency`",
    )
    res = http.post(f"/indexes/{movies}/search", json={"marin": "hello"})
    assert res.status_code == 400 and res.json()["code"] == "bad_request"
    fails(
        http.get(f"/indexes/{movies}/search?hybridSemanticRatio=0.4"),
        400,
        "invalid_search_hybrid_query",
        "`hybridEmbedder` is mandatory when `hybridSemanticRatio` is present",
    )


def test_body_and_path_errors(http: httpx.Client, movies: str) -> None:
    fails(
        http.post(f"/indexes/{movies}/search", content=b'{"q": "x"}'),
        415,
        "missing_content_type",
        "A Content-Type header is missing. Accepted values for the Content-Type header are: `application/json`",
    )
    fails(
        http.post(f"/indexes/{movies}/search", content=b"", headers={"Content-Type": "application/json"}),
        400,
        "missing_payload",
        "A json payload is missing.",
    )
    res = http.post(f"/indexes/{movies}/search", content=b"{", headers={"Content-Type": "application/json"})
    assert res.status_code == 400 and res.json()["code"] == "malformed_payload"
    res = http.post("/indexes/bad uid!/search", json={})
    assert res.status_code == 400 and res.json()["code"] == "invalid_index_uid"


def test_search_kind_errors(http: httpx.Client, movies: str) -> None:
    url = f"/indexes/{movies}/search"
    fails(
        http.post(url, json={"vector": [1.0]}),
        400,
        "missing_search_hybrid",
        "Invalid request: missing `hybrid` parameter when `vector` or `media` are present.",
    )
    fails(
        http.post(url, json={"q": "x", "hybrid": {"embedder": "nope"}}),
        400,
        "invalid_search_embedder",
        "Cannot find embedder with name `nope`.",
    )
    # no query and no vector: a keyword placeholder search; a zero ratio is keyword-only
    assert len(search(http, movies, {"hybrid": {"embedder": "nope"}})["hits"]) == 5
    assert search(http, movies, {"q": "glass", "hybrid": {"embedder": "nope", "semanticRatio": 0.0}})["hits"]
    fails(
        http.post(url, json={"useNetwork": False}),
        400,
        "feature_not_enabled",
        "passing `useNetwork` in a search query requires enabling the `network` experimental feature. "
        "See https://github.com/orgs/meilisearch/discussions/805",
    )


def test_filter_errors(http: httpx.Client, index_uid: str) -> None:
    make_index(http, index_uid, DOCUMENTS)
    url = f"/indexes/{index_uid}/search"
    fails(
        http.post(url, json={"filter": True}),
        400,
        "invalid_search_filter",
        "Invalid syntax for the filter parameter: `expected String, Array, found: true`.",
    )
    fails(
        http.post(url, json={"filter": ["a = 1", 3]}),
        400,
        "invalid_search_filter",
        "Invalid syntax for the filter parameter: `expected String, [String], found: 3`.",
    )
    fails(
        http.post(url, json={"filter": "doggo = bernese"}),
        400,
        "invalid_search_filter",
        f"Index `{index_uid}`: Attribute `doggo` is not filterable. This index does not have configured "
        "filterable attributes.\n1:6 doggo = bernese",
    )
    fails(
        http.get(url, params={"filter": "doggo=bernese"}),
        400,
        "invalid_search_filter",
        f"Index `{index_uid}`: Attribute `doggo` is not filterable. This index does not have configured "
        "filterable attributes.\n1:6 doggo=bernese",
    )
    fails(
        http.post(url, json={"filter": ["_geo = Glass"]}),
        400,
        "invalid_search_filter",
        "`_geo` is a reserved keyword and thus can't be used as a filter expression. Use the "
        "`_geoRadius(latitude, longitude, distance)` or `_geoBoundingBox([latitude, longitude], "
        "[latitude, longitude])` built-in rules to filter on `_geo` coordinates.\n1:13 _geo = Glass",
    )
    # an empty filter filters nothing
    assert len(search(http, index_uid, {"filter": "  "})["hits"]) == 5
    assert len(search(http, index_uid, {"filter": []})["hits"]) == 5
    succeeded(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["title"]}))
    fails(
        http.post(url, json={"filter": ["many = Glass"]}),
        400,
        "invalid_search_filter",
        f"Index `{index_uid}`: Attribute `many` is not filterable. Available filterable attribute patterns "
        "are: `title`.\n1:5 many = Glass",
    )
    # once filterable, the filter selects (normalized: case- and accent-sensitive as NFKD lowercase)
    assert [h["title"] for h in search(http, index_uid, {"filter": "title = 'gläss'"})["hits"]] == ["Gläss"]


def test_sort_errors(http: httpx.Client, index_uid: str) -> None:
    make_index(http, index_uid, DOCUMENTS, {"sortableAttributes": ["id"]})
    url = f"/indexes/{index_uid}/search"
    fails(
        http.post(url, json={"sort": ["_geo:asc"]}),
        400,
        "invalid_search_sort",
        "`_geo` is a reserved keyword and thus can't be used as a sort expression. Use the "
        "_geoPoint(latitude, longitude) built-in rule to sort on _geo field coordinates.",
    )
    fails(
        http.post(url, json={"sort": ["_geoDistance:asc"]}),
        400,
        "invalid_search_sort",
        "`_geoDistance` is a reserved keyword and thus can't be used as a sort expression.",
    )
    fails(
        http.post(url, json={"sort": ["title:asc"]}),
        400,
        "invalid_search_sort",
        f"Index `{index_uid}`: Attribute `title` is not sortable. Available sortable attributes are: `id`.",
    )
    fails(
        http.post(url, json={"sort": ["title"]}),
        400,
        "invalid_search_sort",
        "Invalid syntax for the sort parameter: expected expression ending by `:asc` or `:desc`, found `title`.",
    )
    assert len(search(http, index_uid, {"sort": []})["hits"]) == 5
    succeeded(
        http, http.patch(f"/indexes/{index_uid}/settings", json={"rankingRules": ["proximity", "exactness"]})
    )
    fails(
        http.post(url, json={"sort": ["id:asc"]}),
        400,
        "invalid_search_sort",
        f"Index `{index_uid}`: You must specify where `sort` is listed in the rankingRules setting to use the "
        "sort parameter at search time.",
    )


def test_facets_errors(http: httpx.Client, index_uid: str) -> None:
    make_index(http, index_uid, DOCUMENTS)
    url = f"/indexes/{index_uid}/search"
    fails(
        http.post(url, json={"facets": ["doggo"]}),
        400,
        "invalid_search_facets",
        "Invalid facet distribution: Attribute `doggo` is not filterable. This index does not have configured "
        "filterable attributes.",
    )
    body = search(http, index_uid, {"facets": [], "limit": 0})
    assert list(body) == [
        "hits",
        "query",
        "processingTimeMs",
        "limit",
        "offset",
        "estimatedTotalHits",
        "facetDistribution",
        "facetStats",
        "requestUid",
    ]
    assert (body["facetDistribution"], body["facetStats"]) == ({}, {})
    succeeded(
        http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["title", "genres"]})
    )
    fails(
        http.post(url, json={"facets": ["doggo"]}),
        400,
        "invalid_search_facets",
        "Invalid facet distribution: Attribute `doggo` is not filterable. Available filterable attributes "
        "patterns are: `genres, title`.",
    )
    fails(
        http.get(url, params={"facets": "doggo,neko"}),
        400,
        "invalid_search_facets",
        "Invalid facet distribution: Attributes `doggo, neko` are not filterable. Available filterable "
        "attributes patterns are: `genres, title`.",
    )


def test_search_on_unknown_field(http: httpx.Client, index_uid: str) -> None:
    make_index(http, index_uid, DOCUMENTS, {"searchableAttributes": ["id", "title"]})
    message = (
        f"Index `{index_uid}`: Attribute `unknown` is not searchable. Available searchable attributes are: "
        "`id, title`."
    )
    for attributes in (["unknown"], ["*", "unknown"], ["unknown", "*"]):
        fails(
            http.post(
                f"/indexes/{index_uid}/search",
                json={"q": "Captain Marvel", "attributesToSearchOn": attributes},
            ),
            400,
            "invalid_search_attributes_to_search_on",
            message,
        )
    assert search(
        http, index_uid, {"q": "marvel", "attributesToSearchOn": ["title"], "attributesToRetrieve": ["id"]}
    )["hits"] == [{"id": "299537"}]


def test_distinct_errors(http: httpx.Client, index_uid: str) -> None:
    make_index(http, index_uid, [{"id": 1, "color": "Doggo", "machin": "Action"}])
    url = f"/indexes/{index_uid}/search"
    body = {"page": 0, "hitsPerPage": 2, "distinct": "doggo.truc"}
    fails(
        http.post(url, json=body),
        400,
        "invalid_search_distinct",
        f"Index `{index_uid}`: Attribute `doggo.truc` is not filterable and thus, cannot be used as distinct "
        "attribute. This index does not have configured filterable attributes.",
    )
    succeeded(
        http, http.put(f"/indexes/{index_uid}/settings/filterable-attributes", json=["color", "machin"])
    )
    fails(
        http.post(url, json=body),
        400,
        "invalid_search_distinct",
        f"Index `{index_uid}`: Attribute `doggo.truc` is not filterable and thus, cannot be used as distinct "
        "attribute. Available filterable attributes patterns are: `color, machin`.",
    )
    succeeded(http, http.put(f"/indexes/{index_uid}/settings/displayed-attributes", json=["color"]))
    fails(
        http.post(url, json=body),
        400,
        "invalid_search_distinct",
        f"Index `{index_uid}`: Attribute `doggo.truc` is not filterable and thus, cannot be used as distinct "
        "attribute. Available filterable attributes patterns are: `color, <..hidden-attributes>`.",
    )
    fails(
        http.post(url, json={"distinct": True}),
        400,
        "invalid_search_distinct",
        "Invalid value type at `.distinct`: expected a string, but found a boolean: `true`",
    )
