"""`_geojson` documents and geo filters on shapes against a real server: Meilisearch's own scenarios
(`tests/documents/geojson/mod.rs`) and the errors of invalid `_geojson` values and of filters on a
non-filterable `_geojson`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import wait_task

LINK = "https://docs.meilisearch.com/errors#"
POINT = {"type": "Point", "coordinates": [1, 1]}
LILLE = {
    "type": "Feature",
    "properties": {"name": "Lille"},
    "geometry": {
        "type": "Polygon",
        "coordinates": [[[3.0, 50.6], [3.1, 50.6], [3.1, 50.7], [3.0, 50.7], [3.0, 50.6]]],
    },
}
SQUARE = "_geoPolygon([0,0],[0,2],[2,2],[2,0])"
SMALL = "_geoPolygon([0,0],[0,0.9],[0.9,0.9],[0.9,0])"


def run(http: httpx.Client, res: httpx.Response) -> dict[str, Any]:
    assert res.status_code == 202, res.text
    return wait_task(http, res.json()["taskUid"])


def hits(http: httpx.Client, index_uid: str, flt: str) -> list[Any]:
    res = http.post(f"/indexes/{index_uid}/search", json={"filter": flt})
    assert res.status_code == 200, res.text
    return [h["id"] for h in res.json()["hits"]]


def test_settings_then_documents(http: httpx.Client, index_uid: str) -> None:
    assert (
        run(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["_geojson"]}))[
            "status"
        ]
        == "succeeded"
    )
    assert hits(http, index_uid, SQUARE) == []
    docs = [{"id": "missing"}, {"id": "point", "_geojson": POINT}, {"id": "lille", "_geojson": LILLE}]
    task = run(http, http.post(f"/indexes/{index_uid}/documents", json=docs))
    assert task["status"] == "succeeded"
    assert task["details"] == {"receivedDocuments": 3, "indexedDocuments": 3}
    body = http.get(f"/indexes/{index_uid}/documents", params={"ids": "missing,point"}).json()
    assert body["results"] == [{"id": "missing"}, {"id": "point", "_geojson": POINT}]
    res = http.get(f"/indexes/{index_uid}/search", params={"filter": SQUARE})
    assert res.json()["hits"] == [{"id": "point", "_geojson": POINT}]
    assert res.json()["estimatedTotalHits"] == 1
    assert hits(http, index_uid, "_geoPolygon([50.65,3.05],[50.66,3.05],[50.66,3.06])") == ["lille"]
    # radius and box see the shapes too; documents routes filter the same way
    assert hits(http, index_uid, "_geoRadius(1, 1, 1000)") == ["point"]
    assert hits(http, index_uid, "_geoBoundingBox([51, 4], [50, 3])") == ["lille"]
    body = http.post(f"/indexes/{index_uid}/documents/fetch", json={"filter": f"NOT {SQUARE}"}).json()
    assert sorted(d["id"] for d in body["results"]) == ["lille", "missing"]


def test_documents_then_settings(http: httpx.Client, index_uid: str) -> None:
    docs = [{"id": "missing"}, {"id": "point", "_geojson": POINT}, {"id": "lille", "_geojson": LILLE}]
    assert run(http, http.post(f"/indexes/{index_uid}/documents", json=docs))["status"] == "succeeded"
    res = http.get(f"/indexes/{index_uid}/search", params={"filter": SQUARE})
    assert res.status_code == 400
    assert res.json() == {
        "message": f"Index `{index_uid}`: Attribute `_geojson` is not filterable. This index does not have "
        "configured filterable attributes.\n14:15 _geoPolygon([0,0],[0,2],[2,2],[2,0])",
        "code": "invalid_search_filter",
        "type": "invalid_request",
        "link": LINK + "invalid_search_filter",
    }
    res = http.post(f"/indexes/{index_uid}/search", json={"filter": "_geoRadius(1, 1, 10)"})
    assert res.json()["message"] == (
        f"Index `{index_uid}`: Attribute `_geo/_geojson` is not filterable. This index does not have configured "
        "filterable attributes.\n12:13 _geoRadius(1, 1, 10)"
    )
    assert (
        run(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["_geojson"]}))[
            "status"
        ]
        == "succeeded"
    )
    assert hits(http, index_uid, SQUARE) == ["point"]


def test_add_update_and_remove(http: httpx.Client, index_uid: str) -> None:
    run(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["_geojson"]}))
    run(
        http,
        http.post(f"/indexes/{index_uid}/documents", json=[{"id": "missing"}, {"id": 0, "_geojson": POINT}]),
    )
    assert (hits(http, index_uid, SMALL), hits(http, index_uid, SQUARE)) == ([], [0])
    moved = [{"id": 0, "_geojson": {"type": "Point", "coordinates": [0.5, 0.5]}}]
    run(http, http.put(f"/indexes/{index_uid}/documents", json=moved))
    assert (hits(http, index_uid, SMALL), hits(http, index_uid, SQUARE)) == ([0], [0])
    assert hits(http, index_uid, "_geoPolygon([0.9,0.9],[0.9,2],[2,2],[2,0.9])") == []
    run(http, http.delete(f"/indexes/{index_uid}/documents/0"))
    assert (hits(http, index_uid, SMALL), hits(http, index_uid, SQUARE)) == ([], [])


def test_feature_collections_index(http: httpx.Client, index_uid: str) -> None:
    # Meilisearch issue 5904
    run(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["_geojson"]}))
    collection = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {},
                "geometry": {"type": "Point", "coordinates": [4.23914, 48.382893]},
            }
        ],
    }
    assert (
        run(http, http.post(f"/indexes/{index_uid}/documents", json={"id": 1, "_geojson": collection}))[
            "status"
        ]
        == "succeeded"
    )
    assert hits(http, index_uid, "_geoPolygon([48, 4], [49, 4], [49, 5], [48, 5])") == [1]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"type": "Point", "coordinates": [1]}, "A position must contain two or more elements, but got `1`"),
        (
            {"type": "Circle", "coordinates": [1, 2]},
            "Expected a Feature, FeatureCollection, or Geometry, but got an empty type",
        ),
        (
            {"type": "Feature", "geometry": None},
            "Attempted to a convert a feature without a geometry into a geo_types::Geometry: "
            '`{"type":"Feature","geometry":null,"properties":{}}`',
        ),
        ("here", 'Expected an owned Object, but got `"here"`'),
    ],
)
def test_invalid_geojson_fails_the_whole_task(
    http: httpx.Client, index_uid: str, value: Any, message: str
) -> None:
    run(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["_geojson"]}))
    docs = [{"id": 1, "_geojson": POINT}, {"id": 2, "_geojson": value}]
    task = run(http, http.post(f"/indexes/{index_uid}/documents", json=docs))
    assert task["status"] == "failed"
    assert task["error"] == {
        "message": f"Index `{index_uid}`: {message}",
        "code": "invalid_document_geojson_field",
        "type": "invalid_request",
        "link": LINK + "invalid_document_geojson_field",
    }
    assert task["details"]["indexedDocuments"] == 0
    assert http.get(f"/indexes/{index_uid}/documents").json()["total"] == 0


def test_invalid_geojson_is_only_read_when_filterable(http: httpx.Client, index_uid: str) -> None:
    bad = [{"id": 1, "_geojson": {"type": "Point"}}]
    assert run(http, http.post(f"/indexes/{index_uid}/documents", json=bad))["status"] == "succeeded"
    task = run(
        http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["_geojson"]})
    )
    assert task["status"] == "failed"
    assert task["error"]["code"] == "invalid_document_geojson_field"
    assert task["error"]["message"].endswith("Expected a GeoJSON property for `coordinates`, but got None")
    assert http.get(f"/indexes/{index_uid}/settings/filterable-attributes").json() == []
