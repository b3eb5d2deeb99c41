"""`_geojson`: parsing with Meilisearch's (the `geojson` crate's) messages, the geometry of the geo
filters on shapes (densified great-circle areas, strict point-in-polygon, intersection), and the
index following document writes and settings changes, in process on a real LMDB index."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.documents.geojson import GeoJsonError, GeoShape, parse_geojson
from hanzo_engine.engine.search.geo import (
    box_ring,
    circle_ring,
    densify,
    polygon_ring,
    segments_intersect,
    strictly_inside,
)
from hanzo_engine.engine.update.facets import check_geo, needs_geo_check
from tests.unit.test_filter_eval import Fixture

POINT = {"type": "Point", "coordinates": [1, 1]}
SQUARE = {"type": "Polygon", "coordinates": [[[0, 0], [2, 0], [2, 2], [0, 2], [0, 0]]]}


# -- parsing ----------------------------------------------------------------------------------------

ERRORS: list[tuple[Any, str]] = [
    (None, "Expected an owned Object, but got `null`"),
    ([1, 2], "Expected an owned Object, but got `[1,2]`"),
    ("Point", 'Expected an owned Object, but got `"Point"`'),
    ({"coordinates": [1, 2]}, "Encountered an unknown 'geometry' object type: `type`"),
    ({"type": 3, "coordinates": [1, 2]}, "Encountered an unknown 'geometry' object type: `type`"),
    (
        {"type": "Circle", "coordinates": [1, 2]},
        "Expected a Feature, FeatureCollection, or Geometry, but got an empty type",
    ),
    (
        {"type": "point", "coordinates": [1, 2]},
        "Expected a Feature, FeatureCollection, or Geometry, but got an empty type",
    ),
    ({"type": "Point"}, "Expected a GeoJSON property for `coordinates`, but got None"),
    ({"type": "Point", "coordinates": "1,2"}, "Expected an Array value, but got `None`"),
    ({"type": "Point", "coordinates": [1]}, "A position must contain two or more elements, but got `1`"),
    ({"type": "Point", "coordinates": []}, "A position must contain two or more elements, but got `0`"),
    ({"type": "Point", "coordinates": [1, "2"]}, "Expected a floating-point value, but got None"),
    ({"type": "Point", "coordinates": [1, True]}, "Expected a floating-point value, but got None"),
    ({"type": "LineString", "coordinates": [1, 2]}, "Expected an Array value, but got `None`"),
    ({"type": "Polygon", "coordinates": [[1, 2]]}, "Expected an Array value, but got `None`"),
    (
        {"type": "MultiPolygon", "coordinates": [[[[0, 0], [1]]]]},
        "A position must contain two or more elements, but got `1`",
    ),
    # the bounding box is read before the coordinates
    (
        {"type": "Point", "coordinates": [1], "bbox": {"a": 1}},
        "Encountered non-array value for a 'bbox' object: `{\"a\":1}`",
    ),
    (
        {"type": "Point", "coordinates": [1], "bbox": [0, "1"]},
        "Encountered non-numeric value within 'bbox' array",
    ),
    ({"type": "GeometryCollection"}, "Expected a GeoJSON property for `geometries`, but got None"),
    ({"type": "GeometryCollection", "geometries": {}}, "Expected an Array value, but got `Object`"),
    ({"type": "GeometryCollection", "geometries": None}, "Expected an Array value, but got `Null`"),
    ({"type": "GeometryCollection", "geometries": [1]}, "Expected an owned Object, but got `1`"),
    (
        {"type": "GeometryCollection", "geometries": [{"coordinates": [1, 2]}]},
        "Expected a GeoJSON property for `type`, but got None",
    ),
    (
        {"type": "GeometryCollection", "geometries": [{"type": False}]},
        "Expected a String value, but got a `false`",
    ),
    (
        {"type": "GeometryCollection", "geometries": [{"type": "Feature", "geometry": POINT}]},
        "Encountered an unknown 'geometry' object type: `Feature`",
    ),
    ({"type": "Feature"}, "Expected a GeoJSON property for `geometry`, but got None"),
    (
        {"type": "Feature", "geometry": 3.5},
        "Encountered neither object type nor null type for 'geometry' field on 'feature' object: `3.5`",
    ),
    (
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [0]}},
        "A position must contain two or more elements, but got `1`",
    ),
    (
        {"type": "Feature", "geometry": POINT, "properties": []},
        "Encountered neither object type nor null type for 'properties' object: `[]`",
    ),
    (
        {"type": "Feature", "geometry": POINT, "id": None},
        "Encountered neither number type nor string type for 'id' field on 'feature' object: `null`",
    ),
    (
        {"type": "Feature", "geometry": POINT, "bbox": "x"},
        "Encountered non-array value for a 'bbox' object: `\"x\"`",
    ),
    # a feature without geometry parses, but cannot be converted; it is printed back as the crate
    # serializes it (type, geometry, properties — `{}` when absent —, bbox as floats, id, the rest)
    (
        {"type": "Feature", "geometry": None},
        "Attempted to a convert a feature without a geometry into a geo_types::Geometry: "
        '`{"type":"Feature","geometry":null,"properties":{}}`',
    ),
    (
        {
            "name": "x",
            "id": 7,
            "bbox": [1, 2, 3, 4],
            "type": "Feature",
            "geometry": None,
            "properties": {"a": 1},
        },
        "Attempted to a convert a feature without a geometry into a geo_types::Geometry: "
        '`{"type":"Feature","geometry":null,"properties":{"a":1},"bbox":[1.0,2.0,3.0,4.0],"id":7,"name":"x"}`',
    ),
    ({"type": "FeatureCollection"}, "Expected a GeoJSON property for `features`, but got None"),
    ({"type": "FeatureCollection", "features": "x"}, "Expected an Array value, but got `String`"),
    ({"type": "FeatureCollection", "features": [POINT]}, "Expected a Feature mapping, but got a `Point`"),
    ({"type": "FeatureCollection", "features": [[]]}, "Expected an owned Object, but got `[]`"),
    (
        {"type": "FeatureCollection", "features": [{"geometry": None}]},
        "Expected a GeoJSON property for `type`, but got None",
    ),
]


@pytest.mark.parametrize(("value", "message"), ERRORS)
def test_parse_errors(value: Any, message: str) -> None:
    with pytest.raises(GeoJsonError) as info:
        parse_geojson(value)
    assert info.value.message == message


def test_parse_shapes() -> None:
    assert parse_geojson(POINT) == GeoShape([1.0, 1.0])
    assert parse_geojson({"type": "Point", "coordinates": [1, 2, 300]}) == GeoShape([1.0, 2.0])
    assert parse_geojson({"type": "MultiPoint", "coordinates": [[1, 2], [3, 4]]}) == GeoShape(
        [1.0, 2.0, 3.0, 4.0]
    )
    line = {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}
    assert parse_geojson(line) == GeoShape(lines=[[0.0, 0.0, 1.0, 1.0]])
    # holes are dropped: polygons are solid
    holed = {
        "type": "Polygon",
        "coordinates": [[[0, 0], [4, 0], [4, 4], [0, 0]], [[1, 1], [2, 1], [2, 2], [1, 1]]],
    }
    assert parse_geojson(holed) == GeoShape(polygons=[[0.0, 0.0, 4.0, 0.0, 4.0, 4.0, 0.0, 0.0]])
    feature = {"type": "Feature", "geometry": SQUARE, "properties": None, "id": "a", "extra": [1]}
    assert parse_geojson(feature).polygons == [[0.0, 0.0, 2.0, 0.0, 2.0, 2.0, 0.0, 2.0, 0.0, 0.0]]
    # a collection skips its features without geometry (Meilisearch issue 5904: collections index)
    collection = {
        "type": "FeatureCollection",
        "features": [
            {"type": "Feature", "geometry": None},
            {"type": "Feature", "geometry": POINT, "properties": {}},
            {"type": "Feature", "geometry": {"type": "GeometryCollection", "geometries": [line, POINT]}},
        ],
    }
    assert parse_geojson(collection) == GeoShape([1.0, 1.0, 1.0, 1.0], [[0.0, 0.0, 1.0, 1.0]])
    # coordinates are not range-checked (neither the crate nor cellulite does)
    assert parse_geojson({"type": "Point", "coordinates": [200, -100]}) == GeoShape([200.0, -100.0])
    shape = parse_geojson(collection)
    assert GeoShape.from_json(shape.to_json()) == shape


def test_check_geo_names_the_index_and_follows_the_settings() -> None:
    bad = [("7", {"id": 7, "_geojson": {"type": "Point", "coordinates": [1]}})]
    check_geo(complete_settings({"filterableAttributes": ["_geo"]}), bad, "movies")  # not read
    check_geo(
        complete_settings({"filterableAttributes": [{"attributePatterns": ["_geojson"]}]}), bad, "movies"
    )
    with pytest.raises(MeiliError) as info:
        check_geo(complete_settings({"filterableAttributes": ["_geojson"]}), bad, "movies")
    assert info.value.code == "invalid_document_geojson_field"
    assert info.value.message == "Index `movies`: A position must contain two or more elements, but got `1`"
    both = [("1", {"id": 1, "_geo": {"lat": 1}, "_geojson": None})]
    with pytest.raises(MeiliError) as info:
        check_geo(complete_settings({"filterableAttributes": ["_geo", "_geojson"]}), both, "x")
    assert info.value.code == "invalid_document_geo_field"  # `_geo` is checked first
    assert needs_geo_check({"filterableAttributes": []}, {"filterableAttributes": ["_geojson"]})
    assert needs_geo_check({}, {"sortableAttributes": ["_geo"]})
    assert not needs_geo_check(
        {"filterableAttributes": ["_geojson"]}, {"filterableAttributes": ["_geojson", "a"]}
    )
    assert not needs_geo_check({"filterableAttributes": ["_geojson"]}, {"filterableAttributes": []})


# -- geometry ---------------------------------------------------------------------------------------


def _haversine(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = (
        math.sin((p2 - p1) / 2) ** 2
        + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lng2 - lng1) / 2) ** 2
    )
    return 2 * 6_371_008.8 * math.asin(math.sqrt(a))


def _unit(lat: float, lng: float) -> np.ndarray:
    p, q = math.radians(lat), math.radians(lng)
    return np.array([math.cos(p) * math.cos(q), math.cos(p) * math.sin(q), math.sin(p)])


def test_densify_follows_great_circles_one_km_apart() -> None:
    vertices = [(60.0, 0.0), (60.0, 20.0), (50.0, 20.0), (50.0, 0.0)]
    xs, ys = polygon_ring(vertices)
    assert (xs[0], ys[0]) == (0.0, 60.0) and (xs[-1], ys[-1]) == (0.0, 60.0)  # closed, vertices exact
    for lat, lng in vertices:
        assert any(x == lng and y == lat for x, y in zip(xs, ys, strict=True))
    steps = [_haversine(ys[i], xs[i], ys[i + 1], xs[i + 1]) for i in range(len(xs) - 1)]
    assert max(steps) <= 1000.0 + 1e-6
    assert len(xs) > 3000  # ~1 100 km + 1 100 km + 2 × 1 300 km of edges
    # the northern edge lies on the great circle through its ends, north of the parallel
    normal = np.cross(_unit(60.0, 0.0), _unit(60.0, 20.0))
    top = [(x, y) for x, y in zip(xs, ys, strict=True) if y >= 60.0 and 0.0 <= x <= 20.0]
    assert max(abs(float(np.dot(normal, _unit(y, x)))) for x, y in top) < 1e-12
    assert max(y for _, y in top) > 60.35  # 60.378° at 10°E


def test_densify_unwraps_the_antimeridian() -> None:
    xs, ys = densify([0.0, 0.0, 5.0, 5.0], [170.0, -170.0, -170.0, 170.0])
    assert np.all(np.abs(np.diff(xs)) < 1.0)
    assert xs.max() == pytest.approx(190.0) and xs.min() == pytest.approx(170.0)
    # a ring that needs no unwrapping keeps its coordinates bit for bit
    xs, ys = densify([0.0, 0.001, 0.001], [0.0, 0.0, 0.001])
    assert xs.tolist() == [0.0, 0.0, 0.001, 0.0] and ys.tolist() == [0.0, 0.001, 0.001, 0.0]


def test_circle_and_box_areas() -> None:
    xs, ys = circle_ring(45.0, 9.0, 10_000.0, 8)
    corners = [
        (x, y) for x, y in zip(xs, ys, strict=True) if abs(_haversine(45.0, 9.0, y, x) - 10_000.0) < 1e-3
    ]
    assert len(corners) >= 8  # the 8 destinations (and the closing copy of the first)
    assert (ys[0], xs[0]) == (
        pytest.approx(45.0 + 10_000.0 / 6_371_008.8 * 180 / math.pi),
        pytest.approx(9.0),
    )
    xs, ys = box_ring(2.0, 3.0, 1.0, 0.0)
    assert (xs[0], ys[0]) == (3.0, 2.0)
    assert {(3.0, 2.0), (0.0, 2.0), (0.0, 1.0), (3.0, 1.0)} <= set(zip(xs.tolist(), ys.tolist(), strict=True))


def test_strictly_inside_excludes_the_boundary() -> None:
    ring = (np.array([0.0, 2.0, 2.0, 0.0, 0.0]), np.array([0.0, 0.0, 2.0, 2.0, 0.0]))
    px = np.array([1.0, 0.0, 2.0, 1.0, 1.0, 3.0, -1.0, 1.999])
    py = np.array([1.0, 0.0, 1.0, 2.0, 0.0, 1.0, 1.0, 1.999])
    assert strictly_inside(ring, px, py).tolist() == [True, False, False, False, False, False, False, True]
    concave = (np.array([0.0, 4.0, 4.0, 2.0, 0.0, 0.0]), np.array([0.0, 0.0, 4.0, 1.0, 4.0, 0.0]))
    assert strictly_inside(concave, np.array([2.0, 2.0, 1.0]), np.array([0.5, 2.0, 2.0])).tolist() == [
        True,
        False,
        True,
    ]


def test_segments_intersect_touching_and_collinear() -> None:
    def meet(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
        args = [np.array([v]) for v in (*a, *b)]
        return bool(segments_intersect(*args)[0])

    assert meet((0, 0, 2, 2), (0, 2, 2, 0))  # crossing
    assert meet((0, 0, 2, 0), (1, 0, 1, 5))  # T
    assert meet((0, 0, 2, 0), (2, 0, 3, 3))  # end to end
    assert meet((0, 0, 2, 0), (1, 0, 3, 0))  # collinear overlap
    assert not meet((0, 0, 1, 0), (2, 0, 3, 0))  # collinear apart
    assert not meet((0, 0, 1, 1), (0, 1, 0.4, 0.6))
    assert meet((1, 1, 1, 1), (0, 0, 2, 2))  # a point on a segment


# -- the index --------------------------------------------------------------------------------------

LILLE = {
    "type": "Polygon",
    "coordinates": [[[3.0, 50.6], [3.1, 50.6], [3.1, 50.7], [3.0, 50.7], [3.0, 50.6]]],
}
SHAPES: list[dict[str, Any]] = [
    {"id": 1, "name": "missing"},
    {"id": 2, "_geojson": {"type": "Point", "coordinates": [1, 1]}},
    {"id": 3, "_geojson": {"type": "Feature", "geometry": LILLE, "properties": {"name": "Lille"}}},
    {"id": 4, "_geojson": {"type": "LineString", "coordinates": [[-1, 0.5], [0.5, 0.5]]}},
    {"id": 5, "_geojson": {"type": "Polygon", "coordinates": [[[-10, -10], [10, -10], [10, 10], [-10, 10]]]}},
    {"id": 6, "_geo": {"lat": 1, "lng": 1}},
    {"id": 7, "_geojson": {"type": "MultiPoint", "coordinates": [[40, 40], [1.5, 1.5]]}},
    {"id": 8, "_geojson": {"type": "Point", "coordinates": [10, 60.2]}},
    {"id": 9, "_geojson": {"type": "LineString", "coordinates": [[-5, 3], [5, 3]]}},
    {"id": 10, "_geojson": {"type": "Point", "coordinates": [0, 0]}},
]


@pytest.fixture
def shapes(tmp_path: Path) -> Fixture:
    return Fixture(tmp_path / "i", {"filterableAttributes": ["_geojson", "_geo"]}, SHAPES)


def test_polygon_selects_shapes_only(shapes: Fixture) -> None:
    # Meilisearch's `basic_add_settings_and_geojson_documents`: the point, not Lille, not `_geo`
    square = "_geoPolygon([0,0],[0,2],[2,2],[2,0])"
    assert shapes.ids(square) == [2, 4, 5, 7]  # the line crosses in, the big polygon contains it all
    assert 6 not in shapes.ids(square)  # `_geo` is ignored by `_geoPolygon`
    assert 10 not in shapes.ids(square)  # a point on the boundary is out
    assert shapes.ids("_geoPolygon([0,0],[0,0.9],[0.9,0.9],[0.9,0])") == [4, 5]
    assert shapes.ids("_geoPolygon([2.5,-6],[2.5,6],[3.5,6],[3.5,-6])") == [5, 9]  # the line passes through
    assert shapes.ids("_geoPolygon([50.65,3.05],[50.66,3.05],[50.66,3.06],)") == [3]  # inside Lille
    assert shapes.ids("NOT _geoPolygon([0,0],[0,2],[2,2],[2,0])") == [1, 3, 6, 8, 9, 10]
    # the northern edge from (60, 0) to (60, 20) is a great circle: it passes north of 60.2° at 10°E
    assert shapes.ids("_geoPolygon([60, 0], [60, 20], [55, 20], [55, 0])") == [8]
    assert shapes.ids("_geoPolygon([60.3, 9], [60.3, 11], [60.1, 11], [60.1, 9])") == [8]


def test_radius_and_box_add_shapes_to_points(shapes: Fixture) -> None:
    assert shapes.ids("_geoRadius(1, 1, 1000)") == [2, 5, 6]
    assert shapes.ids("_geoBoundingBox([2, 2], [0.1, 0.1])") == [2, 4, 5, 6, 7]
    shapes.set({"filterableAttributes": ["_geojson"]})
    assert shapes.ids("_geoRadius(1, 1, 1000)") == [2, 5]
    assert shapes.ids("_geoBoundingBox([2, 2], [0.1, 0.1])") == [2, 4, 5, 7]
    shapes.set({"filterableAttributes": ["_geo"]})
    assert shapes.ids("_geoRadius(1, 1, 1000)") == [6]
    assert shapes.error("_geoPolygon([0,0],[0,2],[2,2],[2,0])") == (
        "Attribute `_geojson` is not filterable. Available filterable attribute patterns are: `_geo`."
        "\n14:15 _geoPolygon([0,0],[0,2],[2,2],[2,0])"
    )


def test_the_inscribed_circle_polygon(tmp_path: Path) -> None:
    # 10 km circle as a 4-gon (resolution 4): the corners' directions are in, the diagonals' are not
    near = [
        {"id": i, "_geojson": {"type": "Point", "coordinates": [lng, lat]}}
        for i, (lat, lng) in enumerate([(0.08, 0.0), (0.0, 0.08), (0.05, 0.05), (0.03, 0.03)], 1)
    ]
    f = Fixture(tmp_path / "c", {"filterableAttributes": ["_geojson"]}, near)
    assert f.ids("_geoRadius(0, 0, 10000, 4)") == [1, 2, 4]
    assert f.ids("_geoRadius(0, 0, 10000, 125)") == [1, 2, 3, 4]
    assert f.ids("_geoRadius(0, 0, 0)") == []


def test_the_index_follows_writes_and_settings(tmp_path: Path) -> None:
    f = Fixture(tmp_path / "i", {"filterableAttributes": ["_geojson"]}, [{"id": 0, "_geojson": POINT}])
    square, small = "_geoPolygon([0,0],[0,2],[2,2],[2,0])", "_geoPolygon([0,0],[0,0.9],[0.9,0.9],[0.9,0])"
    assert (f.ids(square), f.ids(small)) == ([0], [])
    f.add([{"id": 0, "_geojson": {"type": "Point", "coordinates": [0.5, 0.5]}}], merge=True)
    assert (f.ids(square), f.ids(small)) == ([0], [0])
    f.delete(0)
    assert (f.ids(square), f.ids(small)) == ([], [])
    f.add([{"id": 0, "_geojson": POINT}, {"id": 1, "_geojson": SQUARE}])
    assert f.ids(small) == [1]
    # switching geojson filtering off and on drops and rebuilds the shapes
    f.set({"filterableAttributes": ["other"]})
    f.set({"filterableAttributes": [{"attributePatterns": ["_geojson"]}, "x"]})
    assert f.error(square).startswith(
        "Attribute `_geojson` is not filterable. Available filterable attribute"
    )
    f.set({"filterableAttributes": ["_geojson"]})
    assert f.ids(square) == [0, 1]
    # `_geojson` values are shapes, not facet values
    assert f.ids("_geojson.type = Point") == []


def test_enabling_geojson_with_an_invalid_value_fails_before_any_change(tmp_path: Path) -> None:
    docs = [{"id": 0, "_geojson": POINT}, {"id": 1, "_geojson": {"type": "Point", "coordinates": "x"}}]
    f = Fixture(tmp_path / "i", {"filterableAttributes": ["a"]}, docs)
    with pytest.raises(MeiliError) as info:
        f.set({"filterableAttributes": ["_geojson", "a"]})
    assert info.value.code == "invalid_document_geojson_field"
    assert info.value.message.endswith("Expected an Array value, but got `None`")
    assert f.ids("a EXISTS") == []
    assert f.settings["filterableAttributes"] == ["a"]
