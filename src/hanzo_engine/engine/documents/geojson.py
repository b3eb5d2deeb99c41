"""`_geojson` values: parsed and validated as Meilisearch does, flattened into the shape the facet
indexer stores.

Meilisearch reads a document's `_geojson` with the `geojson` crate (0.24): ``GeoJson::from_str``,
then ``geo_types::Geometry::try_from``. Both are ported here with their checks *in the crate's
order* and their messages (``Display`` of ``geojson::Error``, which milli reports as the task error,
code `invalid_document_geojson_field`):

* the value must be an object ("Expected an owned Object, but got `null`" — `null` included: milli
  hands the raw field to the crate, unlike `_geo` whose `null` means "no point");
* ``type`` must be a string ("Encountered an unknown 'geometry' object type: `type`") naming a
  Feature, a FeatureCollection or one of the seven geometry types ("Expected a Feature,
  FeatureCollection, or Geometry, but got an empty type");
* geometries: ``bbox`` first (an array of numbers), then ``coordinates`` nested to the type's depth
  (positions of at least two numbers) or ``geometries`` (objects) for a GeometryCollection;
* features: ``geometry`` (object or null, the key is required), ``properties`` (object, null or
  absent), ``id`` (number or string when present), ``bbox``; a FeatureCollection needs a
  ``features`` array of Feature objects;
* conversion: a top-level Feature without geometry is an error (its message prints the feature back
  as the crate serializes it); features without geometry inside a collection are skipped.

Coordinates are not range-checked (neither the crate nor cellulite does). Polygon holes are dropped
(Meilisearch treats polygons as solid), positions keep their first two numbers (lng, lat).

`GeoShape` is the flattened result: points as ``[lng, lat, lng, lat, ...]``, lines and polygon
exterior rings as flat coordinate lists, nothing else (collections are unfolded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from hanzo_engine.filter_parser.errors import json_display

__all__ = ["GEOJSON_FIELD", "GeoJsonError", "GeoShape", "parse_geojson"]

GEOJSON_FIELD: Final = "_geojson"
_GEOMETRY_TYPES: Final = frozenset(
    {"Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon", "GeometryCollection"}
)
# nesting depth of `coordinates` (positions are depth 0)
_COORDINATE_DEPTH: Final = {
    "Point": 0,
    "MultiPoint": 1,
    "LineString": 1,
    "MultiLineString": 2,
    "Polygon": 2,
    "MultiPolygon": 3,
}


class GeoJsonError(Exception):
    """An invalid `_geojson` value; `message` is the crate's ``Display``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class GeoShape:
    """A document's geometry, flattened: what the `_geoPolygon` / radius / box filters test."""

    points: list[float] = field(default_factory=list)
    lines: list[list[float]] = field(default_factory=list)
    polygons: list[list[float]] = field(default_factory=list)

    def to_json(self) -> list[Any]:
        return [self.points, self.lines, self.polygons]

    @classmethod
    def from_json(cls, raw: list[Any]) -> GeoShape:
        return cls(list(raw[0]), [list(x) for x in raw[1]], [list(x) for x in raw[2]])


# -- the crate's parser ------------------------------------------------------------------------------


def _kind_name(value: Any) -> str:
    """serde_json's variant name, as `expect_owned_array` reports it."""
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, (int, float)):
        return "Number"
    if isinstance(value, str):
        return "String"
    return "Array" if isinstance(value, list) else "Object"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _expect_property(obj: dict[str, Any], name: str) -> Any:
    if name not in obj:
        raise GeoJsonError(f"Expected a GeoJSON property for `{name}`, but got None")
    return obj[name]


def _expect_type(obj: dict[str, Any]) -> str:
    value = _expect_property(obj, "type")
    if not isinstance(value, str):
        raise GeoJsonError(f"Expected a String value, but got a `{json_display(value)}`")
    return value


def _expect_owned_array(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise GeoJsonError(f"Expected an Array value, but got `{_kind_name(value)}`")
    return value


def _expect_owned_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise GeoJsonError(f"Expected an owned Object, but got `{json_display(value)}`")
    return value


def _bbox(obj: dict[str, Any]) -> list[float] | None:
    if "bbox" not in obj:
        return None
    value = obj["bbox"]
    if not isinstance(value, list):
        raise GeoJsonError(f"Encountered non-array value for a 'bbox' object: `{json_display(value)}`")
    if not all(_is_number(item) for item in value):
        raise GeoJsonError("Encountered non-numeric value within 'bbox' array")
    return [float(item) for item in value]


def _coordinates(value: Any, depth: int) -> Any:
    """`json_to_position` and its 1d/2d/3d wrappers: nested lists, positions of >= 2 numbers."""
    if not isinstance(value, list):
        raise GeoJsonError("Expected an Array value, but got `None`")
    if depth:
        return [_coordinates(item, depth - 1) for item in value]
    if len(value) < 2:
        raise GeoJsonError(f"A position must contain two or more elements, but got `{len(value)}`")
    for item in value:
        if not _is_number(item):
            raise GeoJsonError("Expected a floating-point value, but got None")
    return (float(value[0]), float(value[1]))


class _Geometry:
    __slots__ = ("children", "coordinates", "kind")

    def __init__(self, kind: str, coordinates: Any, children: list[_Geometry]) -> None:
        self.kind = kind
        self.coordinates = coordinates
        self.children = children


def _geometry(obj: dict[str, Any]) -> _Geometry:
    """``Geometry::try_from(JsonObject)``: ``bbox``, then the typed value."""
    _bbox(obj)
    kind = _expect_type(obj)
    if kind == "GeometryCollection":
        items = _expect_owned_array(_expect_property(obj, "geometries"))
        return _Geometry(kind, None, [_geometry(_expect_owned_object(item)) for item in items])
    depth = _COORDINATE_DEPTH.get(kind)
    if depth is None:
        raise GeoJsonError(f"Encountered an unknown 'geometry' object type: `{kind}`")
    return _Geometry(kind, _coordinates(_expect_property(obj, "coordinates"), depth), [])


def _feature(obj: dict[str, Any]) -> tuple[_Geometry | None, dict[str, Any]]:
    """``Feature::try_from(JsonObject)``: (geometry, the feature as the crate serializes it back)."""
    kind = _expect_type(obj)
    if kind != "Feature":
        raise GeoJsonError(f"Expected a Feature mapping, but got a `{kind}`")
    raw_geometry = _expect_property(obj, "geometry")
    if isinstance(raw_geometry, dict):
        geometry: _Geometry | None = _geometry(raw_geometry)
    elif raw_geometry is None:
        geometry = None
    else:
        raise GeoJsonError(
            "Encountered neither object type nor null type for 'geometry' field on 'feature' object: "
            f"`{json_display(raw_geometry)}`"
        )
    properties = obj.get("properties")
    if properties is not None and not isinstance(properties, dict):
        raise GeoJsonError(
            f"Encountered neither object type nor null type for 'properties' object: `{json_display(properties)}`"
        )
    if "id" in obj and not (_is_number(obj["id"]) or isinstance(obj["id"], str)):
        raise GeoJsonError(
            "Encountered neither number type nor string type for 'id' field on 'feature' object: "
            f"`{json_display(obj['id'])}`"
        )
    bbox = _bbox(obj)
    # `From<&Feature> for JsonObject`: type, geometry, properties ({} when absent), bbox, id, the rest
    echo: dict[str, Any] = {"type": "Feature", "geometry": raw_geometry, "properties": properties or {}}
    if bbox is not None:
        echo["bbox"] = bbox
    if "id" in obj:
        echo["id"] = obj["id"]
    for key, value in obj.items():
        if key not in ("type", "geometry", "properties", "id", "bbox"):
            echo[key] = value
    return geometry, echo


def _flatten(geometry: _Geometry, shape: GeoShape) -> None:
    kind, coords = geometry.kind, geometry.coordinates
    if kind == "Point":
        shape.points.extend(coords)
    elif kind == "MultiPoint":
        for point in coords:
            shape.points.extend(point)
    elif kind == "LineString":
        if coords:
            shape.lines.append([c for point in coords for c in point])
    elif kind == "MultiLineString":
        for line in coords:
            if line:
                shape.lines.append([c for point in line for c in point])
    elif kind == "Polygon":
        if coords and coords[0]:
            shape.polygons.append([c for point in coords[0] for c in point])
    elif kind == "MultiPolygon":
        for polygon in coords:
            if polygon and polygon[0]:
                shape.polygons.append([c for point in polygon[0] for c in point])
    else:
        for child in geometry.children:
            _flatten(child, shape)


def parse_geojson(value: Any) -> GeoShape:
    """The shape of a document's `_geojson` value; `GeoJsonError` with Meilisearch's message."""
    obj = _expect_owned_object(value)
    kind = obj.get("type")
    if not isinstance(kind, str):
        raise GeoJsonError("Encountered an unknown 'geometry' object type: `type`")
    shape = GeoShape()
    if kind == "Feature":
        geometry, echo = _feature(obj)
        if geometry is None:
            raise GeoJsonError(
                "Attempted to a convert a feature without a geometry into a geo_types::Geometry: "
                f"`{json_display(echo)}`"
            )
        _flatten(geometry, shape)
    elif kind == "FeatureCollection":
        _bbox(obj)
        features = _expect_owned_array(_expect_property(obj, "features"))
        parsed = [_feature(_expect_owned_object(item))[0] for item in features]
        for geometry in parsed:
            if geometry is not None:  # the conversion skips features without geometry
                _flatten(geometry, shape)
    elif kind in _GEOMETRY_TYPES:
        _flatten(_geometry(obj), shape)
    else:
        raise GeoJsonError("Expected a Feature, FeatureCollection, or Geometry, but got an empty type")
    return shape
