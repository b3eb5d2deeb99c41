"""The facet indexer: keeps the filter/sort/distinct structures of an index in step with its documents.

Which fields are *faceted* (milli's `match_faceted_field`): a flattened field name that a
`filterableAttributes` rule enabling filtering or facet search matches (the first matching rule of
that kind wins, and a matching rule without those features hides the field from later rules), the
`distinctAttribute` itself, or a field that a `sortableAttributes` entry or a custom `field:asc|desc`
ranking rule covers (legacy matching: `a` covers `a.b`). With `_geo` sortable or filterable (as a plain
string), `_geo.lat` and `_geo.lng` are faceted numbers taken from each document's `_geo`. With
`_geojson` filterable (as a plain string: milli's `is_geojson_filtering_enabled`), the `_geojson` field
is faceted as a *shape*: its forward entry carries the flattened geometry
(`engine/documents/geojson.py`) as a fourth element and its `exists` bitmap lists the documents that
have one; `_geo` and `_geojson` are never walked as ordinary facet values.

Structures (databases of the index env; `fid` is the position of a field name in the `facet-fields`
list of the main db, stable for the life of the index):

- `facet-strings`  fid (u16 BE) + normalized string -> bitmap of docids. Normalized =
                   NFKD, trimmed, lowercased, truncated to 468 bytes (milli's `normalize_facet`).
                   Booleans are the strings `true` / `false`.
- `facet-numbers`  fid (u16 BE) + f64 in an order-preserving 8-byte encoding -> bitmap.
- `facet-flags`    kind byte (`e` exists, `n` null, `m` empty) + fid (u16 BE) -> bitmap.
- `facet-docs`     docid (u32 BE) -> msgpack `{fid: [flags, [numbers], [[normalized, original], ...]]}`:
                   the forward entry, read to un-index a document, for distinct, sort keys of ranked
                   documents and the original spelling of facet values (`_geojson`: a fourth
                   element, the shape `[points, lines, polygons]`).

Bitmaps are stored as milli's `CboRoaringBitmapCodec` does (`engine/storage/codecs.py`).

Extraction follows milli's `extract_document_facets` walk: every faceted path is "seen" (exists);
numbers, non-empty strings and booleans give values wherever they are; `null` and empty values
(`""`, `[]`, `{}`) count only on the field itself, not inside an array.

Bitmap changes are logged per write transaction (per key, the docids added and removed, in order)
and merged once per key at `flush`, replaying the log where a docid is both added and removed, so
add-then-remove sequences within one transaction come out right. The log, the merge and the walk of
documents whose faceted fields are top-level scalars or arrays of scalars are native
(`_native/facet_log.pyx`); other documents take the `_Walk` below. The forward entries of the native
walk are held until the flush too (written in docid order), like the bitmap changes.
"""

from __future__ import annotations

import functools
import unicodedata
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import msgspec
from pyroaring import BitMap

from hanzo_engine._native.facet_log import ADDED, ADDED_FLUSH_DUE, FacetLog
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.attribute_patterns import MATCH, NO_MATCH, PARENT, is_faceted_by, match_pattern
from hanzo_engine.engine.attribute_patterns import match_field_legacy as match_legacy
from hanzo_engine.engine.documents.geojson import GEOJSON_FIELD, GeoJsonError, GeoShape, parse_geojson
from hanzo_engine.engine.storage.codecs import (
    U32,
    decode_bitmap,
    decode_facet_entry,
    encode_bitmap,
    encode_facet_entry,
)
from hanzo_engine.engine.storage.keys import (
    DB_FACET_DOCS,
    DB_FACET_FLAGS,
    DB_FACET_NUMBERS,
    DB_FACET_STRINGS,
    FACET_DBS,
    FLAG_EMPTY,
    FLAG_EXISTS,
    FLAG_NULL,
    KEY_FACET_FIELDS,
)
from hanzo_engine.rustcompat.floats import parse_f64
from hanzo_engine.rustcompat.strings import trim

if TYPE_CHECKING:
    from hanzo_engine.engine.index import IndexReader, IndexWriter

MAX_FACET_VALUE_LENGTH: Final = 468
GEO_FIELD: Final = "_geo"
GEO_LAT: Final = "_geo.lat"
GEO_LNG: Final = "_geo.lng"
VECTORS_FIELD: Final = "_vectors"
# Accumulated (key, docid) changes are merged into the databases past this many.
MAX_PENDING_CHANGES: Final = 4_000_000

ON_BASE, IN_ARRAY = 0, 1

_json = msgspec.json.Encoder()

# -- values -----------------------------------------------------------------------------------------


def normalize_facet(value: str) -> str:
    """milli's `normalize_facet`: NFKD of the trimmed string, lowercased."""
    return unicodedata.normalize("NFKD", trim(value)).lower()


def truncate_facet(value: str) -> str:
    """The longest prefix of `value` that fits `MAX_FACET_VALUE_LENGTH` bytes on a char boundary."""
    raw = value.encode()
    if len(raw) <= MAX_FACET_VALUE_LENGTH:
        return value
    return raw[:MAX_FACET_VALUE_LENGTH].decode(errors="ignore")


def _normalized(value: str) -> str:
    """The facet string of a non-empty string value, as stored in keys and forward entries."""
    if len(value) > 64:  # long values seldom repeat
        return truncate_facet(normalize_facet(value))
    return _normalized_short(value)


@functools.lru_cache(maxsize=4096)  # facet values repeat a lot
def _normalized_short(value: str) -> str:
    return truncate_facet(normalize_facet(value))


# -- which fields are faceted -------------------------------------------------------------------------


@dataclass(frozen=True)
class FilterRule:
    """One `filterableAttributes` entry: a plain name (legacy) or a granular pattern rule."""

    patterns: tuple[str, ...]
    legacy: bool
    facet_search: bool
    equality: bool
    comparison: bool

    @property
    def filterable(self) -> bool:
        return self.equality or self.comparison

    def match(self, name: str) -> int:
        if self.legacy:
            return match_legacy(self.patterns[0], name)
        best = NO_MATCH
        for pattern in self.patterns:
            found = match_pattern(pattern, name)
            if found == MATCH:
                return MATCH
            best = max(best, found)
        return best

    def allowed_operators(self) -> list[str]:
        """milli's `FilterFeatures::allowed_operators`."""
        if not self.filterable:
            return []
        ops = ["OR", "AND", "NOT"]
        if self.equality:
            ops += ["=", "!=", "IN"]
        if self.comparison:
            ops += ["<", ">", "<=", ">=", "TO"]
        return [*ops, "IS EMPTY", "IS NULL", "EXISTS"]


def filter_rules(settings: dict[str, Any]) -> list[FilterRule]:
    rules: list[FilterRule] = []
    for rule in settings.get("filterableAttributes") or []:
        if isinstance(rule, str):
            rules.append(FilterRule((rule,), True, True, True, True))
            continue
        features = rule.get("features") or {}
        flt = features.get("filter") or {}
        rules.append(
            FilterRule(
                tuple(rule.get("attributePatterns") or ()),
                False,
                bool(features.get("facetSearch", False)),
                bool(flt.get("equality", True)),
                bool(flt.get("comparison", False)),
            )
        )
    return rules


def custom_rule_fields(settings: dict[str, Any]) -> set[str]:
    """Fields of the custom `field:asc` / `field:desc` ranking rules."""
    return {
        rule.rpartition(":")[0]
        for rule in settings.get("rankingRules") or []
        if isinstance(rule, str) and rule.endswith((":asc", ":desc"))
    }


class FacetRules:
    """The settings that decide which fields are faceted, and the filter features of a field."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.filters = filter_rules(settings)
        self.sortable: set[str] = set(settings.get("sortableAttributes") or [])
        self.asc_desc = custom_rule_fields(settings)
        self.distinct: str | None = settings.get("distinctAttribute")
        plain = {r.patterns[0] for r in self.filters if r.legacy}
        self.geo_filterable = GEO_FIELD in plain
        self.geo = GEO_FIELD in self.sortable or self.geo_filterable
        self.geojson = GEOJSON_FIELD in plain  # `_geoPolygon` and geo filters on shapes
        # nothing at all is faceted: documents need no walk
        self.active = bool(self.filters or self.sortable or self.asc_desc or self.distinct is not None)
        self._selection: dict[str, int] = {}

    def signature(self) -> tuple[Any, ...]:
        """Equal for two settings exactly when they facet the same fields."""
        return (
            tuple(self.filters),
            tuple(sorted(self.sortable)),
            tuple(sorted(self.asc_desc)),
            self.distinct,
            self.geo,
            self.geojson,
        )

    def matching(self, name: str) -> tuple[int, FilterRule] | None:
        """The first filterable rule matching `name` (milli's `matching_features`)."""
        for i, rule in enumerate(self.filters):
            if rule.match(name) == MATCH:
                return i, rule
        return None

    def is_filterable(self, name: str) -> bool:
        found = self.matching(name)
        return found is not None and found[1].filterable

    def filterable_patterns(self) -> list[str]:
        """Patterns of the rules that enable filtering, sorted and deduplicated."""
        return sorted({p for r in self.filters if r.filterable for p in r.patterns})

    def selection(self, name: str) -> int:
        """milli's `match_faceted_field`: MATCH (faceted), PARENT (a parent of one) or NO_MATCH."""
        found = self._selection.get(name)
        if found is None:
            found = self._selection[name] = self._select(name)
            if self.geo and name in (GEO_LAT, GEO_LNG):
                found = self._selection[name] = MATCH
        return found

    def _select(self, name: str) -> int:
        selection = NO_MATCH
        can_match = True
        for rule in self.filters:
            m = rule.match(name)
            if m == MATCH:
                if (rule.filterable or rule.facet_search) and can_match:
                    return MATCH
                can_match = False
            elif m == PARENT and (rule.filterable or rule.facet_search):
                selection = PARENT
        if self.distinct is not None:
            if name == self.distinct:
                return MATCH
            if is_faceted_by(self.distinct, name):
                selection = PARENT
        for attribute in (*self.sortable, *self.asc_desc):
            m = match_legacy(attribute, name)
            if m == MATCH:
                return MATCH
            if m == PARENT:
                selection = PARENT
        return selection

    def is_faceted(self, name: str) -> bool:
        return self.selection(name) == MATCH

    def keeps(self, name: str) -> bool:
        """Whether values indexed under `name` stay valid under these rules (`_geojson` holds shapes,
        kept only while geojson filtering is on, whatever other rule matches the name)."""
        if name == GEOJSON_FIELD:
            return self.geojson
        return self.is_faceted(name)


# -- extraction -----------------------------------------------------------------------------------


@dataclass
class FieldValues:
    flags: int = 0
    numbers: set[float] = field(default_factory=set)
    strings: dict[str, str] = field(default_factory=dict)  # normalized -> first original
    shape: GeoShape | None = None  # `_geojson` only

    def to_entry(self) -> list[Any]:
        numbers = self.numbers
        entry = [
            self.flags,
            sorted(numbers) if len(numbers) > 1 else list(numbers),
            [[k, v] for k, v in self.strings.items()],
        ]
        if self.shape is not None:
            entry.append(self.shape.to_json())
        return entry


class _Walk:
    """One document's walk (milli's `extract_document_facets` with `perm_json_p`)."""

    __slots__ = ("fields", "rules")

    def __init__(self, rules: FacetRules) -> None:
        self.rules = rules
        self.fields: dict[str, FieldValues] = {}

    def emit(self, name: str, depth: int, value: Any) -> None:
        if self.rules.is_faceted(name):
            self.add(name, depth, value)

    def add(self, name: str, depth: int, value: Any) -> None:
        """Record one value of a faceted field (`depth`: on the field itself or inside an array)."""
        fv = self.fields.get(name)
        if fv is None:
            fv = self.fields[name] = FieldValues()
        fv.flags |= FLAG_EXISTS
        t = type(value)
        if t is str:
            if value:
                fv.strings.setdefault(_normalized(value), value)
            elif depth == ON_BASE:
                fv.flags |= FLAG_EMPTY
        elif t is int or t is float:
            fv.numbers.add(float(value) + 0.0)
        elif t is bool:
            text = "true" if value else "false"
            fv.strings.setdefault(text, text)
        elif depth == ON_BASE and (value is None):
            fv.flags |= FLAG_NULL
        elif depth == ON_BASE and (t is list or t is dict) and not value:
            fv.flags |= FLAG_EMPTY

    def seek(self, name: str, depth: int, value: Any) -> int:
        selection = self.rules.selection(name)
        if selection == MATCH:
            self.add(name, depth, value)
        return selection

    def obj(self, value: dict[str, Any], base: str, depth: int) -> None:
        if not value:
            self.seek(base, depth, value)
        for key, item in value.items():
            path = f"{base}.{key}"
            if self.seek(path, ON_BASE, item) != NO_MATCH:
                t = type(item)
                if t is dict:
                    self.obj(item, path, ON_BASE)
                elif t is list:
                    self.arr(item, path, ON_BASE)

    def arr(self, value: list[Any], base: str, depth: int) -> None:
        if not value:
            self.seek(base, depth, value)
        matched = self.rules.selection(base) == MATCH  # scalars land on `base` itself
        for item in value:
            t = type(item)
            if t is dict:
                self.obj(item, base, IN_ARRAY)
            elif t is list:
                self.arr(item, base, IN_ARRAY)
            elif matched:
                self.add(base, IN_ARRAY, item)

    def document(self, document: dict[str, Any]) -> None:
        select = self.rules.selection
        for key, value in document.items():
            if key == GEO_FIELD or key == VECTORS_FIELD or key == GEOJSON_FIELD:
                continue
            selection = select(key)
            if selection == NO_MATCH:
                continue
            t = type(value)
            if t is dict:
                self.obj(value, key, ON_BASE)
                if selection == MATCH:
                    self.add(key, ON_BASE, value)
            elif t is list:
                self.arr(value, key, ON_BASE)
                if selection == MATCH:
                    self.add(key, ON_BASE, value)
            elif selection == MATCH:  # a scalar on a parent of a faceted field is nothing
                self.add(key, ON_BASE, value)


def extract_facets(
    document: dict[str, Any], rules: FacetRules, external_id: str = ""
) -> dict[str, FieldValues]:
    """The faceted values of `document` by flattened field name (`_geo` coordinates and the
    `_geojson` shape included)."""
    walk = _Walk(rules)
    walk.document(document)
    if rules.geo and GEO_FIELD in document:
        point = geo_coordinates(external_id, document[GEO_FIELD])
        if point is not None:
            for name, number in ((GEO_LAT, point[0]), (GEO_LNG, point[1])):
                fv = walk.fields.setdefault(name, FieldValues())
                fv.flags |= FLAG_EXISTS
                fv.numbers.add(number + 0.0)
    if rules.geojson and GEOJSON_FIELD in document:
        walk.fields[GEOJSON_FIELD] = FieldValues(FLAG_EXISTS, shape=geojson_shape(document[GEOJSON_FIELD]))
    return walk.fields


# -- _geo -----------------------------------------------------------------------------------------


def _json_text(value: Any) -> str:
    return _json.encode(value).decode()


def _finite(value: Any) -> float | None:
    """milli's `extract_finite_float_from_value`: a JSON number or a string Rust parses as f64."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        parsed = parse_f64(value)
        if parsed is None:
            return None
        number = parsed
    else:
        return None
    return number if number == number and abs(number) != float("inf") else None


def geo_error(message: str) -> MeiliError:
    return MeiliError("invalid_document_geo_field", message)


def geojson_shape(value: Any) -> GeoShape:
    """The shape of a document's `_geojson` value; Meilisearch's `invalid_document_geojson_field`."""
    try:
        return parse_geojson(value)
    except GeoJsonError as err:
        raise MeiliError("invalid_document_geojson_field", err.message) from None


def geo_coordinates(external_id: str, value: Any) -> tuple[float, float] | None:
    """(lat, lng) of a document's `_geo` value, None for `null`; Meilisearch's errors otherwise."""
    doc = _json_text(external_id)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise geo_error(
            f"The `_geo` field in the document with the id: `{doc}` is not an object. Was expecting "
            f"an object with the `_geo.lat` and `_geo.lng` fields but instead got `{_json_text(value)}`."
        )
    rest = dict(value)
    has_lat, has_lng = "lat" in rest, "lng" in rest
    lat, lng = rest.pop("lat", None), rest.pop("lng", None)
    if has_lat and has_lng:
        if rest:
            raise geo_error(
                f"The `_geo` field in the document with the id: `{doc}` contains the following "
                f"unexpected fields: `{_json_text(rest)}`."
            )
    elif has_lat:
        raise geo_error(
            f"Could not find longitude in the document with the id: `{doc}`. "
            "Was expecting a `_geo.lng` field."
        )
    elif has_lng:
        raise geo_error(
            f"Could not find latitude in the document with the id: `{doc}`. Was expecting a `_geo.lat` field."
        )
    else:
        raise geo_error(
            f"Could not find latitude nor longitude in the document with the id: `{doc}`. "
            "Was expecting `_geo.lat` and `_geo.lng` fields."
        )
    flat, flng = _finite(lat), _finite(lng)
    if flat is None and flng is None:
        raise geo_error(
            f"Could not parse latitude nor longitude in the document with the id: `{doc}`. Was "
            f"expecting finite numbers but instead got `{_json_text(lat)}` and `{_json_text(lng)}`."
        )
    if flat is None:
        raise geo_error(
            f"Could not parse latitude in the document with the id: `{doc}`. Was expecting a finite "
            f"number but instead got `{_json_text(lat)}`."
        )
    if flng is None:
        raise geo_error(
            f"Could not parse longitude in the document with the id: `{doc}`. Was expecting a finite "
            f"number but instead got `{_json_text(lng)}`."
        )
    return flat, flng


def check_geo(settings: dict[str, Any], documents: Iterable[tuple[str, dict[str, Any]]], uid: str) -> None:
    """Validate the `_geo` (when `_geo` is sortable or filterable) and the `_geojson` (when geojson
    filtering is on) of every (external id, document) before anything is written, as the whole task
    fails on the first bad one; errors carry the "Index `uid`: " prefix like milli's."""
    rules = FacetRules(settings)
    if not (rules.geo or rules.geojson):
        return
    for external_id, document in documents:
        try:
            if rules.geo and GEO_FIELD in document:
                geo_coordinates(external_id, document[GEO_FIELD])
            if rules.geojson and GEOJSON_FIELD in document:
                geojson_shape(document[GEOJSON_FIELD])
        except MeiliError as err:
            raise MeiliError(err.code, f"Index `{uid}`: {err.message}") from None


def needs_geo_check(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a settings change from `old` to `new` starts reading `_geo` or `_geojson` values that
    were not validated yet (then `check_geo(new, stored documents, uid)` must run before the rebuild)."""
    before, after = FacetRules(old), FacetRules(new)
    return (after.geo and not before.geo) or (after.geojson and not before.geojson)


# -- the indexer ----------------------------------------------------------------------------------


def facet_fields(reader: IndexReader) -> list[str]:
    raw = reader._main(KEY_FACET_FIELDS)
    return list(msgspec.json.decode(raw)) if raw else []


def read_doc_entry(reader: IndexReader, docid: int) -> dict[int, list[Any]] | None:
    raw = reader.txn.get(U32.pack(docid), db=reader.index.db(DB_FACET_DOCS))
    if raw is None:
        return None
    entry: dict[int, list[Any]] = decode_facet_entry(raw)
    return entry


class FacetIndexer:
    """Accumulates the facet-structure changes of one write transaction (see the module docstring)."""

    def __init__(self, writer: IndexWriter, settings: dict[str, Any]) -> None:
        self.writer = writer
        self.txn = writer.txn
        self.rules = FacetRules(settings)
        self.dbs = {name: writer.index.db(name) for name in FACET_DBS}
        self.fields = facet_fields(writer)
        self.fid_of = {name: i for i, name in enumerate(self.fields)}
        self.fields_dirty = False
        rules = self.rules
        self.docs_db = self.dbs[DB_FACET_DOCS]
        self.log = FacetLog(
            _normalized,
            rules.selection,
            self.fid_of,
            self._fid,
            MATCH,
            NO_MATCH,
            self.txn,
            self.docs_db,
            MAX_PENDING_CHANGES,
        )
        # documents of the common shape take the native walk (`FacetLog.add_document`)
        self.fast_walk = rules.active and not (rules.geo or rules.geojson)

    def _fid(self, name: str) -> int:
        fid = self.fid_of.get(name)
        if fid is None:
            if len(self.fields) >= 0xFFFF:
                raise MeiliError(
                    "max_fields_limit_exceeded", "A document cannot contain more than 65,535 fields."
                )
            fid = self.fid_of[name] = len(self.fields)
            self.fields.append(name)
            self.fields_dirty = True
        return fid

    def add(self, docid: int, document: dict[str, Any], external_id: str = "") -> None:
        if self.fast_walk:
            done = self.log.add_document(docid, document)
            if done == ADDED:
                return
            if done == ADDED_FLUSH_DUE:
                self.flush()
                return
        elif not self.rules.active:
            return
        values = extract_facets(document, self.rules, external_id)
        if not values:
            return
        forward = {self._fid(name): fv.to_entry() for name, fv in values.items()}
        self.log.log(docid, forward, True)
        self.txn.put(U32.pack(docid), encode_facet_entry(forward), db=self.docs_db)
        if len(self.log) > MAX_PENDING_CHANGES:
            self.flush()

    def remove(self, docid: int) -> None:
        raw: bytes | memoryview | None = self.log.take_doc(docid)
        if raw is None:
            raw = self.txn.pop(U32.pack(docid), db=self.docs_db)
            if raw is None:
                return
        self.log.log(docid, decode_facet_entry(raw), False)

    def clear(self) -> None:
        for db in self.dbs.values():
            self.txn.drop(db, delete=False)
        self.log.clear()

    def flush(self) -> None:
        txn = self.txn
        dbs = self.dbs
        self.log.flush(
            txn,
            (dbs[DB_FACET_STRINGS], dbs[DB_FACET_NUMBERS], dbs[DB_FACET_FLAGS]),
            decode_bitmap,
            encode_bitmap,
            BitMap,
            array,
        )
        if self.fields_dirty:
            txn.put(KEY_FACET_FIELDS, msgspec.json.encode(self.fields), db=self.writer.index.db_main)
            self.fields_dirty = False

    # -- settings changes -------------------------------------------------------------------------

    def rebuild(self, documents: Iterable[tuple[int, str, dict[str, Any]]]) -> None:
        """Re-index only the fields whose faceted status changed under this indexer's rules: values of
        fields no longer faceted are dropped, values of newly faceted fields are added, the others are
        left as they are.

        With geojson filtering on, every stored `_geojson` is validated first, so that an invalid one
        fails the task before anything changed (`check_geo`, when the caller ran it, has already
        done so with the index uid in the message)."""
        if self.rules.geojson:
            marker = b'"' + GEOJSON_FIELD.encode() + b'"'
            for _, raw_document in self.writer.iter_raw_documents():
                if marker in raw_document:  # most documents need no decoding
                    document = msgspec.json.decode(raw_document)
                    if GEOJSON_FIELD in document:
                        geojson_shape(document[GEOJSON_FIELD])
        for docid, external_id, document in documents:
            raw = self.txn.get(U32.pack(docid), db=self.dbs[DB_FACET_DOCS])
            forward: dict[int, list[Any]] = decode_facet_entry(raw) if raw is not None else {}
            kept = {fid: e for fid, e in forward.items() if self.rules.keeps(self.fields[fid])}
            self.log.log(docid, {fid: e for fid, e in forward.items() if fid not in kept}, False)
            added: dict[int, list[Any]] = {}
            for name, fv in extract_facets(document, self.rules, external_id).items():
                fid = self._fid(name)
                if fid not in kept:
                    added[fid] = fv.to_entry()
            self.log.log(docid, added, True)
            merged = {**kept, **added}
            if merged != forward:
                if merged:
                    self.txn.put(U32.pack(docid), encode_facet_entry(merged), db=self.dbs[DB_FACET_DOCS])
                else:
                    self.txn.delete(U32.pack(docid), db=self.dbs[DB_FACET_DOCS])
            if len(self.log) > MAX_PENDING_CHANGES:
                self.flush()


def facets_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return FacetRules(old).signature() != FacetRules(new).signature()
