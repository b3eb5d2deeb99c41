"""Filter evaluation: a parsed filter (`filter_parser` AST) to the bitmap of matching documents.

Everything is answered from the facet structures (`facet_store.py`), never by reading documents:
equality is one lookup per kind, ranges and `STARTS WITH` are key ranges of a field's column,
`CONTAINS` scans the field's distinct string values. Semantics are milli's (`filter/index_filter.rs`):

- a literal is looked up both as a normalized string and, when it parses as a finite f64, as a
  number: `=` matches either; `<`, `<=`, `>`, `>=`, `TO` match numbers numerically *and* strings in
  byte order of the normalized form (`TO` numerically only when both ends are numbers);
- `!=` is every document but those `=` selects (documents without the field included); `NOT x` is
  the complement within the documents the enclosing `AND` has left (or all documents);
- `EXISTS`, `IS NULL`, `IS EMPTY` read the flag bitmaps; `IN [...]` is an OR of `=`;
- `AND` evaluates its operands left to right, each restricted to what the previous ones selected,
  and stops at the first empty result (so later operands' errors do not surface, as in milli);
- a field no document ever had selects nothing, not even with `!=` (milli returns early when the
  name is not in its fields map), before its operator is even checked; a known field without facet
  values selects nothing but with `!=` (everything);
- granular `filterableAttributes` rules gate operators: `=`, `!=`, `IN` need `equality`; `<`, `>`,
  `<=`, `>=`, `TO` need `comparison` ("Filter operator `>` is not allowed ...", unpositioned);
- geo on `_geo` points: `_geoRadius` keeps the points within `radius + f64::EPSILON` meters
  (haversine, earth radius 6 371 000 m, as milli's `distance_between_two_points`); `_geoBoundingBox`
  is a range on `_geo.lat` and `_geo.lng` (two ranges when it crosses the antimeridian). Both apply
  when `_geo` is filterable;
- `_vectors` filters select the documents that have embeddings (`filter_vector.py`);
- geo on `_geojson` shapes (when `_geojson` is filterable, see "geo shapes" below): `_geoPolygon` only
  ever looks at shapes (never at `_geo`), `_geoRadius` and `_geoBoundingBox` add the shapes that
  intersect their area (an inscribed `resolution`-gon for the circle, the four corners for the box) to
  the `_geo` points. With neither field filterable the radius and the box fail with "Attribute
  `_geo/_geojson` is not filterable", the polygon with "Attribute `_geojson` is not filterable".

`check_filterable` runs first, as milli does before evaluating: the first field (in filter order)
that no rule makes filterable fails the whole filter with a positioned error.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np
from pyroaring import BitMap

from hanzo_engine.engine.documents.geojson import GEOJSON_FIELD
from hanzo_engine.engine.index import IndexReader, IndexWriter
from hanzo_engine.engine.storage.codecs import encode_f64
from hanzo_engine.engine.update.facets import (
    GEO_LAT,
    GEO_LNG,
    FacetRules,
    normalize_facet,
)
from hanzo_engine.filter_parser import (
    And,
    Comparison,
    Contains,
    Exists,
    FilterError,
    Foreign,
    GeoBoundingBox,
    GeoPolygon,
    GeoRadius,
    In,
    IsEmpty,
    IsNotEmpty,
    IsNotNull,
    IsNull,
    Node,
    Not,
    NotContains,
    NotExists,
    NotIn,
    NotStartsWith,
    Or,
    Range,
    StartsWith,
    Token,
    VectorExists,
    fields,
    finite_float,
    geo_bounding_box_params,
    geo_polygon_coords,
    geo_radius_params,
    not_filterable_message,
)

from .facet_store import NUMBERS, STRINGS, FacetStore
from .filter_vector import evaluate_vector_filter

EARTH_RADIUS_M: Final = 6_371_000.0
F64_EPSILON: Final = 2.220446049250313e-16
F64_MAX_KEY: Final = encode_f64(1.7976931348623157e308)
F64_MIN_KEY: Final = encode_f64(-1.7976931348623157e308)
RESERVED_FIELDS: Final = ("_vectors", "_shard")
# the documents of a shard in a sharded network (None: no such shard); set by the server
SHARD_RESOLVER: Callable[[IndexReader, str, BitMap], BitMap | None] | None = None

# (low key, low included, high key, high included); None: unbounded
Bounds = tuple[bytes | None, bool, bytes | None, bool]

__all__ = [
    "FilterContext",
    "FilterOperatorError",
    "GeoShapes",
    "box_ring",
    "check_filterable",
    "circle_ring",
    "densify",
    "evaluate_filter",
    "geo_shapes",
    "haversine",
    "polygon_ring",
    "strictly_inside",
]


class FilterOperatorError(Exception):
    """milli's `FilterOperatorNotAllowed`: an operator a granular rule does not enable (no position)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def haversine(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    """Great-circle distance in meters (geoutils' `haversine_distance_to`, as milli uses it)."""
    t1, t2 = math.radians(lat1), math.radians(lat2)
    dt, dl = math.radians(lat2 - lat1), math.radians(lng2 - lng1)
    a = math.sin(dt / 2) ** 2 + math.cos(t1) * math.cos(t2) * math.sin(dl / 2) ** 2
    return EARTH_RADIUS_M * 2 * math.asin(math.sqrt(a))


def haversine_many(lat: float, lng: float, lats: np.ndarray, lngs: np.ndarray) -> np.ndarray:
    t1, t2 = math.radians(lat), np.radians(lats)
    dt, dl = np.radians(lats - lat), np.radians(lngs - lng)
    a = np.sin(dt / 2) ** 2 + math.cos(t1) * np.cos(t2) * np.sin(dl / 2) ** 2
    result: np.ndarray = EARTH_RADIUS_M * 2 * np.arcsin(np.sqrt(np.minimum(a, 1.0)))
    return result


def check_filterable(node: Node, rules: FacetRules) -> None:
    """Raise the positioned "Attribute `x` is not filterable" error of the first field no rule allows."""
    patterns: list[str] | None = None
    for name, token in fields(node):
        if name in RESERVED_FIELDS or rules.is_filterable(name):
            continue
        if patterns is None:
            patterns = rules.filterable_patterns()
        raise token.error(not_filterable_message(name, patterns))


def _operator_error(name: str, operator: str, rule_index: int, allowed: list[str]) -> FilterOperatorError:
    if operator in ("=", "!=", "IN"):
        feature = "equality"
    elif operator in ("<", ">", "<=", ">=", "TO"):
        feature = "comparison"
    else:
        feature = "the appropriate filter operators"
    return FilterOperatorError(
        f"Filter operator `{operator}` is not allowed for the attribute `{name}`.\n"
        f"  - Note: allowed operators: {', '.join(allowed)}.\n"
        f"  - Note: field `{name}` matched rule #{rule_index} in `filterableAttributes`\n"
        f"  - Hint: enable {feature} in rule #{rule_index} by modifying the features.filter object\n"
        f"  - Hint: prepend another rule matching `{name}` with appropriate filter features before rule #{rule_index}"
    )


def _next_prefix(prefix: bytes) -> bytes | None:
    """The smallest byte string above every string starting with `prefix` (None: unbounded)."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


class FilterContext:
    """What evaluating filters in one read transaction needs (reusable for several filters)."""

    def __init__(
        self, reader: IndexReader, settings: dict[str, Any], store: FacetStore | None = None
    ) -> None:
        self.reader = reader
        self.settings = settings
        self.rules = FacetRules(settings)
        self.store = store if store is not None else FacetStore(reader)
        self._all: BitMap | None = None
        self._known: set[str] | None = None

    @property
    def all_docids(self) -> BitMap:
        if self._all is None:
            reader = self.reader
            # a write transaction keeps its documents bitmap in memory until it commits
            self._all = reader.docids if isinstance(reader, IndexWriter) else reader.documents_ids()
        return self._all

    def evaluate(self, node: Node) -> BitMap:
        """Documents matching `node`: `FilterError` / `FilterOperatorError` on a user error."""
        check_filterable(node, self.rules)
        return self._eval(node, None) & self.all_docids

    # -- nodes --------------------------------------------------------------------------------------

    def _eval(self, node: Node, hint: BitMap | None) -> BitMap:
        if hint is not None and not hint:
            return BitMap()
        if isinstance(node, And):
            result = self._eval(node.children[0], hint)
            for child in node.children[1:]:
                if not result:
                    break
                result &= self._eval(child, result)
            return result
        if isinstance(node, Or):
            parts = [self._eval(child, hint) for child in node.children]
            return BitMap.union(*parts) if parts else BitMap()
        if isinstance(node, Not):
            return self._complement(self._eval(node.child, hint), hint)
        if isinstance(node, (NotIn, NotExists, IsNotNull, IsNotEmpty, NotContains, NotStartsWith)):
            return self._complement(self._eval(_positive(node), hint), hint)
        if isinstance(node, GeoRadius):
            return self._geo_radius(node)
        if isinstance(node, GeoBoundingBox):
            return self._geo_box(node)
        if isinstance(node, GeoPolygon):
            return self._geo_polygon(node)
        if isinstance(node, VectorExists):
            return evaluate_vector_filter(self.reader, self.settings, node)
        if isinstance(node, Foreign):
            # the search routes rewrite these clauses first (`server.foreign_keys`); no other route does
            raise node.error(node.field, "Filter condition `_foreign` is not supported for this endpoint.")
        return self._condition(node)

    def _complement(self, selected: BitMap, hint: BitMap | None) -> BitMap:
        return (hint if hint is not None else self.all_docids) - selected

    def _shard(self, node: Node) -> BitMap:
        """milli's `evaluate_shard_operator`: `=`, `!=` and `IN` name shards, other operators are refused.
        Documents belong to shards only in sharded networks: `SHARD_RESOLVER` (installed by the server)
        gives a shard's documents, or None for a shard that does not exist."""

        def docids(name: str) -> BitMap:
            found = SHARD_RESOLVER(self.reader, name, self.all_docids) if SHARD_RESOLVER is not None else None
            if found is None:
                raise FilterOperatorError(f"Shard `{name}` does not exist")
            return found

        if isinstance(node, Comparison) and node.op in ("=", "!="):
            selected = docids(node.value.value)
            return self.all_docids - selected if node.op == "!=" else selected
        if isinstance(node, In):
            parts = [docids(value.value) for value in node.values]
            return BitMap.union(*parts) if parts else BitMap()
        operator = (
            node.op
            if isinstance(node, Comparison)
            else "TO"
            if isinstance(node, Range)
            else "EXISTS"
            if isinstance(node, Exists)
            else "IS NULL"
            if isinstance(node, IsNull)
            else "IS EMPTY"
            if isinstance(node, IsEmpty)
            else "CONTAINS"
            if isinstance(node, Contains)
            else "STARTS WITH"
        )
        raise FilterOperatorError(
            f"Filter operator `{operator} is not allowed for the special attribute `_shard`.\n  - Note: allowed "
            "operators: =, !=, IN. \n  - Note: other operators are not allowed for the special attribute `_shard`."
        )

    def _condition(self, node: Node) -> BitMap:
        token: Token = node.field  # type: ignore[union-attr]
        name = token.value
        if name == "_shard":
            return self._shard(node)
        fid = self.store.fid(name)
        matched = self.rules.matching(name)
        if matched is None or (fid is None and name not in self._known_fields()):
            return BitMap()
        rule_index, rule = matched
        store = self.store

        def gate(operator: str, needs_comparison: bool) -> None:
            allowed = rule.comparison if needs_comparison else rule.equality
            if not allowed:
                raise _operator_error(name, operator, rule_index, rule.allowed_operators())

        if isinstance(node, Comparison) and node.op in ("=", "!="):
            gate(node.op, False)
            equal = self._equal(fid, node.value.value) if fid is not None else BitMap()
            return self.all_docids - equal if node.op == "!=" else equal
        if fid is None:  # a field documents had, but never with facet values: only the gate applies
            if isinstance(node, Comparison):
                gate(node.op, True)
            elif isinstance(node, Range):
                gate("TO", True)
            elif isinstance(node, In):
                for _ in node.values:
                    gate("=", False)
            return BitMap()
        if isinstance(node, Comparison):
            op, value = node.op, node.value.value
            gate(op, True)
            number = finite_float(value)
            normalized = normalize_facet(value).encode()
            num: Bounds | None
            text: Bounds
            if op in (">", ">="):
                num = None if number is None else (encode_f64(number), op == ">=", F64_MAX_KEY, True)
                text = (normalized, op == ">=", None, True)
            else:
                num = None if number is None else (F64_MIN_KEY, True, encode_f64(number), op == "<=")
                text = (None, True, normalized, op == "<=")
            return self._ranges(fid, num, text)
        if isinstance(node, Range):
            gate("TO", True)
            low, high = finite_float(node.low.value), finite_float(node.high.value)
            num = None if low is None or high is None else (encode_f64(low), True, encode_f64(high), True)
            text = (
                normalize_facet(node.low.value).encode(),
                True,
                normalize_facet(node.high.value).encode(),
                True,
            )
            return self._ranges(fid, num, text)
        if isinstance(node, In):
            result = BitMap()
            for item in node.values:
                gate("=", False)
                result |= self._equal(fid, item.value)
            return result
        if isinstance(node, Exists):
            return store.flag_docids(b"e", fid)
        if isinstance(node, IsNull):
            return store.flag_docids(b"n", fid)
        if isinstance(node, IsEmpty):
            return store.flag_docids(b"m", fid)
        if isinstance(node, Contains):
            needle = normalize_facet(node.value.value)
            column = store.column(fid, STRINGS)
            hits = [column.docids(i, i + 1) for i, text in enumerate(column.texts) if needle in text]
            return BitMap(np.concatenate(hits).tolist()) if hits else BitMap()
        if isinstance(node, StartsWith):
            prefix = normalize_facet(node.value.value).encode()
            if not prefix:
                return store.flag_docids(b"e", fid)
            column = store.column(fid, STRINGS)
            return column.union(*column.bounds(prefix, True, _next_prefix(prefix), False))
        raise AssertionError(f"unexpected filter node {node!r}")

    def _known_fields(self) -> set[str]:
        """Every field name the index has seen (milli's fields ids map)."""
        if self._known is None:
            from hanzo_engine.engine.update.indexer import search_fields

            self._known = {*self.reader.fields_ids_map(), *search_fields(self.reader), *self.store.fields}
        return self._known

    def _equal(self, fid: int, value: str) -> BitMap:
        result = self.store.string_docids(fid, normalize_facet(value))
        number = finite_float(value)
        if number is not None:
            result |= self.store.number_docids(fid, number)
        return result

    def _ranges(self, fid: int, num: Bounds | None, text: Bounds) -> BitMap:
        result = BitMap()
        for kind, bounds in ((NUMBERS, num), (STRINGS, text)):
            if bounds is None:
                continue
            lo, lo_inc, hi, hi_inc = bounds
            if lo is not None and hi is not None and (lo > hi or (lo == hi and not (lo_inc and hi_inc))):
                continue  # `lower TO upper` with lower above upper selects nothing
            column = self.store.column(fid, kind)
            result |= column.union(*column.bounds(lo, lo_inc, hi, hi_inc))
        return result

    # -- geo ----------------------------------------------------------------------------------------

    def _geo_not_filterable(self, token: Token, attribute: str) -> FilterError:
        return token.error(not_filterable_message(attribute, self.rules.filterable_patterns()))

    def _number_range(self, name: str, low: float, high: float) -> BitMap:
        fid = self.store.fid(name)
        if fid is None or low > high:
            return BitMap()
        column = self.store.column(fid, NUMBERS)
        return column.union(*column.bounds(encode_f64(low), True, encode_f64(high), True))

    def _geo_radius(self, node: GeoRadius) -> BitMap:
        lat, lng, radius, resolution = geo_radius_params(node)
        if not self.rules.geo_filterable and not self.rules.geojson:
            raise self._geo_not_filterable(node.lat, "_geo/_geojson")
        result = self._geo_radius_points(lat, lng, radius) if self.rules.geo_filterable else BitMap()
        if self.rules.geojson:
            result |= geo_shapes(self.store).intersecting(circle_ring(lat, lng, radius, resolution))
        return result

    def _geo_radius_points(self, lat: float, lng: float, radius: float) -> BitMap:
        points = self.store.geo_points()
        if not points.docids:
            return BitMap()
        # a latitude band first (one degree of latitude is at least 110 km), then exact distances
        band = max(radius, 0.0) / 110_000.0 + 1e-6
        candidates = self._number_range(GEO_LAT, lat - band, lat + band) if band < 180 else points.docids
        ids = np.frombuffer((candidates & points.docids).to_array(), dtype=np.uint32)
        if not len(ids):
            return BitMap()
        distances = haversine_many(lat, lng, points.lat[ids], points.lng[ids])
        return BitMap(ids[distances <= radius + F64_EPSILON].tolist())

    def _geo_box(self, node: GeoBoundingBox) -> BitMap:
        (top, right), (bottom, left) = geo_bounding_box_params(node)
        if not self.rules.geo_filterable and not self.rules.geojson:
            raise self._geo_not_filterable(node.top_right[0], "_geo/_geojson")
        result = self._geo_box_points(top, right, bottom, left) if self.rules.geo_filterable else BitMap()
        if self.rules.geojson:
            result |= geo_shapes(self.store).intersecting(box_ring(top, right, bottom, left))
        return result

    def _geo_box_points(self, top: float, right: float, bottom: float, left: float) -> BitMap:
        selected_lat = self._number_range(GEO_LAT, bottom, top)
        if right < left:  # crosses the antimeridian
            selected_lng = self._number_range(GEO_LNG, left, 180.0) | self._number_range(
                GEO_LNG, -180.0, right
            )
        else:
            selected_lng = self._number_range(GEO_LNG, left, right)
        return selected_lat & selected_lng

    def _geo_polygon(self, node: GeoPolygon) -> BitMap:
        # milli checks that `_geojson` is filterable before it even looks at the coordinates
        if not self.rules.geojson:
            raise self._geo_not_filterable(node.points[0][0], "_geojson")
        return geo_shapes(self.store).intersecting(polygon_ring(geo_polygon_coords(node)))


def _positive(node: Node) -> Node:
    """The positive form of a negated leaf (`x NOT IN [...]` -> `x IN [...]`, ...)."""
    if isinstance(node, NotIn):
        return In(node.field, node.values)
    if isinstance(node, NotExists):
        return Exists(node.field)
    if isinstance(node, IsNotNull):
        return IsNull(node.field)
    if isinstance(node, IsNotEmpty):
        return IsEmpty(node.field)
    if isinstance(node, NotContains):
        return Contains(node.field, node.value, node.keyword)
    if isinstance(node, NotStartsWith):
        return StartsWith(node.field, node.value, node.keyword)
    raise AssertionError(f"not a negated leaf: {node!r}")


def evaluate_filter(node: Node, reader: IndexReader, settings: dict[str, Any]) -> BitMap:
    """Documents of `reader`'s index matching `node` (see `FilterContext.evaluate`)."""
    return FilterContext(reader, settings).evaluate(node)


# -- geo shapes (`_geojson`) ------------------------------------------------------------------------
#
# Meilisearch answers geo filters on `_geojson` with cellulite (H3 cells over the shapes, then exact
# checks). What it computes, which this section reproduces without the cells:
#
# * the filter area is a polygon whose edges are great-circle arcs: geo's `Haversine.densify(…, 1 km)`
#   replaces every edge by points at most 1 km apart on its great circle (the ring is closed first,
#   like `geo_types::Polygon::new`), and the tests are then planar in (lng, lat) on those points;
# * a point matches when it is *strictly* inside the area (geo's `Contains`: the boundary is out), a
#   multi-point when one of its points does; a line or a polygon (holes ignored) when it intersects
#   the area (touching counts), which includes a polygon containing the whole area.
#
# Longitudes of the area are unwrapped (consecutive points less than 180° apart) and shapes are also
# tested against the area shifted by ±360°, so an area crossing the antimeridian is taken the short
# way; Meilisearch documents such areas as unsupported (its answers there depend on its cells).

MEAN_EARTH_RADIUS_M: Final = 6_371_008.8  # geo's `Haversine` (densify, circle destinations)
DENSIFY_MAX_M: Final = 1_000.0
_MAX_PAIRS: Final = 2_000_000  # (segment, edge) pairs tested at once
_SHAPES_LOCK = threading.Lock()

Ring = tuple[np.ndarray, np.ndarray]  # closed ring: x (lng) and y (lat), last point == first


def densify(lats: Sequence[float], lngs: Sequence[float]) -> Ring:
    """The closed ring of the polygon with these vertices, every edge replaced by points at most
    1 km apart along its great circle (spherical interpolation; the vertices themselves are kept
    exactly), longitudes unwrapped."""
    lat = np.asarray(lats, dtype=np.float64)
    lng = np.asarray(lngs, dtype=np.float64)
    if len(lat) and (lat[0] != lat[-1] or lng[0] != lng[-1]):
        lat, lng = np.append(lat, lat[0]), np.append(lng, lng[0])
    if len(lat) < 2:
        return lng.copy(), lat.copy()
    phi, lam = np.radians(lat), np.radians(lng)
    p1, p2, l1, l2 = phi[:-1], phi[1:], lam[:-1], lam[1:]
    a = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin((l2 - l1) / 2) ** 2
    angle = 2 * np.arcsin(np.sqrt(np.minimum(a, 1.0)))
    steps = np.maximum(np.ceil(angle * MEAN_EARTH_RADIUS_M / DENSIFY_MAX_M), 1).astype(np.int64)
    edge = np.repeat(np.arange(len(steps)), steps)
    first = np.cumsum(steps) - steps
    k = np.arange(len(edge)) - first[edge]
    f = k / steps[edge]
    d = angle[edge]
    with np.errstate(divide="ignore", invalid="ignore"):
        wa = np.sin((1 - f) * d) / np.sin(d)
        wb = np.sin(f * d) / np.sin(d)
    c1, c2 = np.cos(p1)[edge], np.cos(p2)[edge]
    x = wa * c1 * np.cos(l1)[edge] + wb * c2 * np.cos(l2)[edge]
    y = wa * c1 * np.sin(l1)[edge] + wb * c2 * np.sin(l2)[edge]
    z = wa * np.sin(p1)[edge] + wb * np.sin(p2)[edge]
    out_lat = np.degrees(np.arctan2(z, np.hypot(x, y)))
    out_lng = np.degrees(np.arctan2(y, x))
    start = k == 0
    out_lat[start] = lat[:-1][edge[start]]
    out_lng[start] = lng[:-1][edge[start]]
    keep = np.isfinite(out_lat) & np.isfinite(out_lng)  # antipodal edges have no single great circle
    out_lat = np.append(out_lat[keep], lat[-1])
    out_lng = np.append(out_lng[keep], lng[-1])
    # unwrap by whole turns only, so that coordinates that need no shift stay bit for bit the same
    turns = np.round((np.mod(np.diff(out_lng) + 180.0, 360.0) - 180.0 - np.diff(out_lng)) / 360.0)
    if turns.any():
        out_lng = out_lng + 360.0 * np.concatenate(([0.0], np.cumsum(turns)))
    return out_lng, out_lat


def polygon_ring(coords: Sequence[tuple[float, float]]) -> Ring:
    """The area of `_geoPolygon` from its (lat, lng) vertices."""
    return densify([lat for lat, _ in coords], [lng for _, lng in coords])


def box_ring(top: float, right: float, bottom: float, left: float) -> Ring:
    """The area milli's `_geoBoundingBox` asks cellulite for: the four corners, densified."""
    return densify([top, top, bottom, bottom], [right, left, left, right])


def circle_ring(lat: float, lng: float, radius: float, resolution: int) -> Ring:
    """The area of `_geoRadius` on shapes: `resolution` points at `radius` meters from the center at
    bearings 360°·i/n (geo's haversine `destination`), densified."""
    phi, lam = math.radians(lat), math.radians(lng)
    theta = np.radians(360.0 * np.arange(resolution) / resolution)
    delta = radius / MEAN_EARTH_RADIUS_M
    phi2 = np.arcsin(math.sin(phi) * math.cos(delta) + math.cos(phi) * math.sin(delta) * np.cos(theta))
    lam2 = lam + np.arctan2(
        np.sin(theta) * math.sin(delta) * math.cos(phi), math.cos(delta) - math.sin(phi) * np.sin(phi2)
    )
    return densify(np.degrees(phi2).tolist(), np.degrees(lam2).tolist())


def strictly_inside(ring: Ring, px: np.ndarray, py: np.ndarray) -> np.ndarray:
    """For each point, whether it is strictly inside the closed ring (even-odd rule; a point on an
    edge is outside).

    A point crosses the edge (x1, y1)-(x2, y2) when ``(y1 > py) != (y2 > py)`` and
    ``px < x1 + (py - y1) * (x2 - x1) / (y2 - y1)``; it is on the edge when
    ``(x2 - x1) * (py - y1) - (y2 - y1) * (px - x1) == 0`` within the edge's bounding box. Only the
    points whose latitude lies in an edge's latitude range are paired with it (points sorted by
    latitude, a binary search per edge), so a densified ring of many short edges costs about two
    pairs per point."""
    m = len(px)
    if m == 0 or len(ring[0]) < 4:
        return np.zeros(m, dtype=bool)
    rx, ry = ring
    x1, y1, x2, y2 = rx[:-1], ry[:-1], rx[1:], ry[1:]
    order = np.argsort(py, kind="stable")
    ys, xs = py[order], px[order]
    lo = np.searchsorted(ys, np.minimum(y1, y2), "left")
    hi = np.searchsorted(ys, np.maximum(y1, y2), "right")
    counts = hi - lo
    parity = np.zeros(m, dtype=np.int64)
    on_edge = np.zeros(m, dtype=bool)
    for first, last in _chunks(counts):
        c = counts[first:last]
        e = np.repeat(np.arange(first, last), c)
        p = np.repeat(lo[first:last] - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))
        ex1, ey1, ex2, ey2, qx, qy = x1[e], y1[e], x2[e], y2[e], xs[p], ys[p]
        with np.errstate(divide="ignore", invalid="ignore"):
            crossing = ((ey1 > qy) != (ey2 > qy)) & (qx < ex1 + (qy - ey1) * (ex2 - ex1) / (ey2 - ey1))
        parity += np.bincount(p[crossing], minlength=m)
        touching = (
            ((ex2 - ex1) * (qy - ey1) - (ey2 - ey1) * (qx - ex1) == 0)
            & (qx >= np.minimum(ex1, ex2))
            & (qx <= np.maximum(ex1, ex2))
        )
        on_edge[p[touching]] = True
    inside = np.empty(m, dtype=bool)
    inside[order] = ((parity & 1) == 1) & ~on_edge
    return inside


def _chunks(counts: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive ranges of `counts` whose sums stay near `_MAX_PAIRS` (memory bound)."""
    ranges: list[tuple[int, int]] = []
    total = np.cumsum(counts)
    first = 0
    while first < len(counts):
        base = total[first - 1] if first else 0
        last = int(np.searchsorted(total, base + _MAX_PAIRS, "right"))
        last = max(last, first + 1)
        ranges.append((first, last))
        first = last
    return ranges


def _orientation(
    ax: np.ndarray, ay: np.ndarray, bx: np.ndarray, by: np.ndarray, cx: np.ndarray, cy: np.ndarray
) -> np.ndarray:
    result: np.ndarray = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    return result


def _within(
    ax: np.ndarray, ay: np.ndarray, bx: np.ndarray, by: np.ndarray, cx: np.ndarray, cy: np.ndarray
) -> np.ndarray:
    """c lies in the bounding box of segment ab (with c collinear: on the segment)."""
    result: np.ndarray = (
        (cx >= np.minimum(ax, bx))
        & (cx <= np.maximum(ax, bx))
        & (cy >= np.minimum(ay, by))
        & (cy <= np.maximum(ay, by))
    )
    return result


def segments_intersect(
    ax: np.ndarray,
    ay: np.ndarray,
    bx: np.ndarray,
    by: np.ndarray,
    cx: np.ndarray,
    cy: np.ndarray,
    dx: np.ndarray,
    dy: np.ndarray,
) -> np.ndarray:
    """Whether segments ab and cd share a point (touching and collinear overlap included)."""
    o1 = _orientation(cx, cy, dx, dy, ax, ay)
    o2 = _orientation(cx, cy, dx, dy, bx, by)
    o3 = _orientation(ax, ay, bx, by, cx, cy)
    o4 = _orientation(ax, ay, bx, by, dx, dy)
    proper = (((o1 > 0) & (o2 < 0)) | ((o1 < 0) & (o2 > 0))) & (((o3 > 0) & (o4 < 0)) | ((o3 < 0) & (o4 > 0)))
    touching = (
        ((o1 == 0) & _within(cx, cy, dx, dy, ax, ay))
        | ((o2 == 0) & _within(cx, cy, dx, dy, bx, by))
        | ((o3 == 0) & _within(ax, ay, bx, by, cx, cy))
        | ((o4 == 0) & _within(ax, ay, bx, by, dx, dy))
    )
    result: np.ndarray = proper | touching
    return result


def _degenerate(ring: Ring) -> bool:
    """An area without interior (fewer than three distinct points, or all on one line) selects
    nothing: no point is strictly inside it, and Meilisearch's cells cover no zero-area polygon."""
    rx, ry = ring
    distinct = np.flatnonzero((rx != rx[0]) | (ry != ry[0])) if len(rx) else np.zeros(0, dtype=np.int64)
    if not len(distinct):
        return True
    k = distinct[0]
    cross = (rx[k] - rx[0]) * (ry - ry[0]) - (ry[k] - ry[0]) * (rx - rx[0])
    return not cross.any()


class GeoShapes:
    """Every document's `_geojson` shape as flat arrays.

    Points: `point_doc`, `point_x`, `point_y`. Lines and polygon rings ("parts"): their vertices in
    `vx`, `vy` (part `i` spans `part_start[i]:part_end[i]`), owner `part_doc`, `part_polygon`, and
    bounding boxes; their segments (a polygon's closing one included) in `seg_*`, with `seg_part`."""

    def __init__(self, store: FacetStore) -> None:
        fid = store.fid(GEOJSON_FIELD)
        docids = store.flag_docids(b"e", fid) if fid is not None else BitMap()
        point_doc: list[int] = []
        point_xy: list[float] = []
        vertices: list[float] = []
        part_doc: list[int] = []
        part_polygon: list[bool] = []
        part_start: list[int] = []
        part_end: list[int] = []
        for docid in docids:
            entry = store.doc_entry(docid)
            item = entry.get(fid) if entry is not None and fid is not None else None
            if item is None or len(item) < 4:
                continue
            points, lines, polygons = item[3]
            point_doc.extend([docid] * (len(points) // 2))
            point_xy.extend(points)
            for flat, polygon in [(line, False) for line in lines] + [(ring, True) for ring in polygons]:
                part_doc.append(docid)
                part_polygon.append(polygon)
                part_start.append(len(vertices) // 2)
                vertices.extend(flat)
                part_end.append(len(vertices) // 2)
        xy = np.asarray(point_xy, dtype=np.float64).reshape(-1, 2)
        self.point_doc = np.asarray(point_doc, dtype=np.uint32)
        self.point_x, self.point_y = xy[:, 0].copy(), xy[:, 1].copy()
        v = np.asarray(vertices, dtype=np.float64).reshape(-1, 2)
        self.vx, self.vy = v[:, 0].copy(), v[:, 1].copy()
        self.part_doc = np.asarray(part_doc, dtype=np.uint32)
        self.part_polygon = np.asarray(part_polygon, dtype=bool)
        self.part_start = np.asarray(part_start, dtype=np.int64)
        self.part_end = np.asarray(part_end, dtype=np.int64)
        nonempty = self.part_end > self.part_start
        self.part_minx = np.full(len(part_doc), np.inf)
        self.part_maxx = np.full(len(part_doc), -np.inf)
        self.part_miny = np.full(len(part_doc), np.inf)
        self.part_maxy = np.full(len(part_doc), -np.inf)
        if nonempty.any():
            starts = self.part_start[nonempty]
            self.part_minx[nonempty] = np.minimum.reduceat(self.vx, starts)
            self.part_maxx[nonempty] = np.maximum.reduceat(self.vx, starts)
            self.part_miny[nonempty] = np.minimum.reduceat(self.vy, starts)
            self.part_maxy[nonempty] = np.maximum.reduceat(self.vy, starts)
        # segments: consecutive vertices of a part, plus a polygon's closing edge
        seg_part: list[np.ndarray] = []
        seg_a: list[np.ndarray] = []
        seg_b: list[np.ndarray] = []
        for i in range(len(part_doc)):
            start, end = int(self.part_start[i]), int(self.part_end[i])
            a = np.arange(start, end - 1)
            b = a + 1
            if self.part_polygon[i] and end - start > 1:
                a, b = np.append(a, end - 1), np.append(b, start)
            if end - start == 1:  # a one-point line: a degenerate segment
                a, b = np.array([start]), np.array([start])
            seg_part.append(np.full(len(a), i, dtype=np.int64))
            seg_a.append(a)
            seg_b.append(b)
        self.seg_part = np.concatenate(seg_part) if seg_part else np.zeros(0, dtype=np.int64)
        a_idx = np.concatenate(seg_a) if seg_a else np.zeros(0, dtype=np.int64)
        b_idx = np.concatenate(seg_b) if seg_b else np.zeros(0, dtype=np.int64)
        self.seg_x1, self.seg_y1 = self.vx[a_idx], self.vy[a_idx]
        self.seg_x2, self.seg_y2 = self.vx[b_idx], self.vy[b_idx]

    def intersecting(self, ring: Ring) -> BitMap:
        """Documents whose shape is strictly inside or intersects the area (see the section notes)."""
        rx, ry = ring
        if _degenerate(ring):
            return BitMap()
        found: list[np.ndarray] = []
        for turn in (-360.0, 0.0, 360.0):
            shifted = (rx + turn, ry) if turn else ring
            found.extend(self._intersecting(shifted))
        docids = np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.uint32)
        return BitMap(docids.tolist())

    def _intersecting(self, ring: Ring) -> list[np.ndarray]:
        rx, ry = ring
        minx, maxx, miny, maxy = rx.min(), rx.max(), ry.min(), ry.max()
        found: list[np.ndarray] = []
        near = (
            (self.point_x >= minx) & (self.point_x <= maxx) & (self.point_y >= miny) & (self.point_y <= maxy)
        )
        if near.any():
            inside = strictly_inside(ring, self.point_x[near], self.point_y[near])
            found.append(self.point_doc[near][inside])
        parts = np.flatnonzero(
            (self.part_maxx >= minx)
            & (self.part_minx <= maxx)
            & (self.part_maxy >= miny)
            & (self.part_miny <= maxy)
        )
        if not len(parts):
            return found
        hit = np.zeros(len(self.part_doc), dtype=bool)
        # a part with a vertex strictly inside the area (a part wholly inside has them all)
        firsts = self.part_start[parts]
        hit[parts[strictly_inside(ring, self.vx[firsts], self.vy[firsts])]] = True
        # a part crossing or touching the area's boundary
        candidate = np.zeros(len(self.part_doc), dtype=bool)
        candidate[parts] = True
        segs = np.flatnonzero(candidate[self.seg_part] & ~hit[self.seg_part])
        hit[self._crossing(ring, segs)] = True
        # a polygon that contains the whole area (no crossing: one point of the area decides)
        for i in parts[self.part_polygon[parts] & ~hit[parts]]:
            start, end = int(self.part_start[i]), int(self.part_end[i])
            part_ring = (
                np.append(self.vx[start:end], self.vx[start]),
                np.append(self.vy[start:end], self.vy[start]),
            )
            if strictly_inside(part_ring, rx[:1], ry[:1])[0]:
                hit[i] = True
        found.append(self.part_doc[hit])
        return found

    def _crossing(self, ring: Ring, segs: np.ndarray) -> np.ndarray:
        """Parts of the segments `segs` that share a point with an edge of the area."""
        if not len(segs):
            return np.zeros(0, dtype=np.int64)
        rx, ry = ring
        ex1, ey1, ex2, ey2 = rx[:-1], ry[:-1], rx[1:], ry[1:]
        emin = np.minimum(ey1, ey2)
        order = np.argsort(emin, kind="stable")
        emin_sorted = emin[order]
        tallest = float((np.maximum(ey1, ey2) - emin).max())
        sx1, sy1, sx2, sy2 = self.seg_x1[segs], self.seg_y1[segs], self.seg_x2[segs], self.seg_y2[segs]
        # edges whose latitude range can meet the segment's: their lowest point is within reach
        lo = np.searchsorted(emin_sorted, np.minimum(sy1, sy2) - tallest, "left")
        hi = np.searchsorted(emin_sorted, np.maximum(sy1, sy2), "right")
        counts = hi - lo
        parts: list[np.ndarray] = []
        for first, last in _chunks(counts):
            c = counts[first:last]
            s = np.repeat(np.arange(first, last), c)
            e = order[np.repeat(lo[first:last] - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))]
            meets = segments_intersect(sx1[s], sy1[s], sx2[s], sy2[s], ex1[e], ey1[e], ex2[e], ey2[e])
            parts.append(self.seg_part[segs[s[meets]]])
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def geo_shapes(store: FacetStore) -> GeoShapes:
    """The `_geojson` shapes of the store's index, cached per committed version like the `_geo`
    points (a write transaction builds its own)."""
    if not store.cached:
        return GeoShapes(store)
    index = store.reader.index
    version = store._version
    with _SHAPES_LOCK:
        found = index.__dict__.get("_facet_geojson")
    if found is not None and found[0] == version:
        shapes: GeoShapes = found[1]
        return shapes
    shapes = GeoShapes(store)
    with _SHAPES_LOCK:
        index.__dict__["_facet_geojson"] = (version, shapes)
    return shapes
