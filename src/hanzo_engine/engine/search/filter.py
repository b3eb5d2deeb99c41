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
- geo on `_geojson` shapes (when `_geojson` is filterable, see `geo.py`): `_geoPolygon` only
  ever looks at shapes (never at `_geo`), `_geoRadius` and `_geoBoundingBox` add the shapes that
  intersect their area (an inscribed `resolution`-gon for the circle, the four corners for the box) to
  the `_geo` points. With neither field filterable the radius and the box fail with "Attribute
  `_geo/_geojson` is not filterable", the polygon with "Attribute `_geojson` is not filterable".

`check_filterable` runs first, as milli does before evaluating: the first field (in filter order)
that no rule makes filterable fails the whole filter with a positioned error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np
from pyroaring import BitMap

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
from .geo import box_ring, circle_ring, geo_shapes, haversine_many, polygon_ring

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
    "check_filterable",
    "evaluate_filter",
]


class FilterOperatorError(Exception):
    """milli's `FilterOperatorNotAllowed`: an operator a granular rule does not enable (no position)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


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
