"""Sort rules and distinct on the facet structures (milli's `Sort`, `GeoSort` and `distinct` rules).

A search's *sort rules* are its ranking rules' custom `field:asc|desc` rules and, where `sort` sits,
the request's `sort` criteria — each named as its score detail is (`price:asc`,
`_geoPoint(48.8, 2.3):desc`); a field already sorted by an earlier rule is not sorted again.

- A field rule orders numbers before strings in both directions, strings in byte order of their
  normalized form; a document with several values sorts by its smallest (ascending) or largest
  (descending); documents without a value come last, left to the next rules.
- A geo rule orders by haversine distance truncated to whole meters, ties by docid (reversed when
  descending, as milli's iterative geo sort pops from the back); documents without `_geo` come last.
- Distinct keeps, in rank order, the first document of each value of the distinct field and
  excludes every other document sharing one of its values (milli's `distinct_single_docid`); a
  document without the field is always kept. The candidates count excludes what was excluded so
  far (the whole set in exhaustive mode).

`Ordering` bundles them for one search: `placeholder` ranks a placeholder search by walking the
fields' columns (bucket by bucket, never sorting the universe), and `rule_key` gives the ranker
of a keyword search each document's key and score detail for one sort rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from pyroaring import BitMap

from hanzo_engine.engine.index import IndexReader
from hanzo_engine.filter_parser.errors import rust_f64_display

from .facet_store import NUMBERS, STRINGS, FacetStore
from .geo import haversine, haversine_many
from .types import MatchingWords, SearchRequest, SearchResult

GEO_POINT: Final = "_geoPoint("

__all__ = ["Distinct", "Ordering", "SortRule", "geo_rule_name", "sort_rule_names"]


def geo_rule_name(lat: float, lng: float, ascending: bool) -> str:
    return f"_geoPoint({rust_f64_display(lat)}, {rust_f64_display(lng)}):{'asc' if ascending else 'desc'}"


@dataclass(frozen=True)
class SortRule:
    name: str
    field: str | None  # None for a geo rule
    ascending: bool
    point: tuple[float, float] | None = None

    @classmethod
    def parse(cls, name: str, points: dict[str, tuple[float, float]]) -> SortRule:
        target, _, direction = name.rpartition(":")
        ascending = direction == "asc"
        if name in points:
            return cls(name, None, ascending, points[name])
        return cls(name, target, ascending)


def sort_rule_names(criteria: list[Any]) -> tuple[list[str], dict[str, tuple[float, float]]]:
    """Rule names of the request's `sort` criteria (`apitypes.search.SortCriterion`), and the
    points of the geo ones by name."""
    names: list[str] = []
    points: dict[str, tuple[float, float]] = {}
    for criterion in criteria:
        if criterion.field is not None:
            names.append(f"{criterion.field}:{'asc' if criterion.ascending else 'desc'}")
        else:
            lat, lng = criterion.geo_point
            name = geo_rule_name(lat, lng, criterion.ascending)
            names.append(name)
            points[name] = (lat, lng)
    return names, points


class Distinct:
    """The distinct rule's state over one search: which documents were excluded so far."""

    def __init__(self, store: FacetStore, field: str) -> None:
        self.store = store
        self.field = field
        self.fid = store.fid(field)
        self.excluded = BitMap()

    def admit(self, docid: int) -> bool:
        """False when an earlier document excluded `docid`; else keep it and exclude its duplicates."""
        if docid in self.excluded:
            return False
        if self.fid is None:
            return True
        numbers, strings = self.store.doc_values(docid, self.fid)
        for number in numbers:
            self.excluded |= self.store.number_docids(self.fid, number)
        for normalized, _ in strings:
            self.excluded |= self.store.string_docids(self.fid, normalized)
        self.excluded.discard(docid)
        return True

    def remaining(self, candidates: BitMap) -> BitMap:
        """milli's `apply_distinct_rule` over `candidates` in docid order, from a fresh state
        (exhaustive counts)."""
        fresh = Distinct(self.store, self.field)
        kept = BitMap()
        for docid in candidates:
            if fresh.admit(docid):
                kept.add(docid)
        return kept


_MISSING: Final = 2 << 40  # the key of a document without a value: after numbers and strings


def _field_key(cls: Any, rank: Any, ascending: bool) -> Any:
    """The sort key of a value of class `cls` (0 numbers, 1 strings) at `rank` in its column (an int,
    or a numpy array of them): ranks are below 2**40; descending keys count down from the class's top."""
    return (cls << 40) + (rank if ascending else (1 << 40) - 1 - rank)


class Ordering:
    """Sort rules and distinct of one search (see the module docstring)."""

    def __init__(
        self,
        reader: IndexReader,
        settings: dict[str, Any],
        sort: list[Any] | None = None,
        distinct: str | None = None,
        store: FacetStore | None = None,
    ) -> None:
        self.reader = reader
        self.store = store if store is not None else FacetStore(reader)
        self.sort_names, self.points = sort_rule_names(sort or [])
        self.distinct = Distinct(self.store, distinct) if distinct is not None else None
        shown = settings.get("displayedAttributes") or ["*"]
        self.displayed = None if shown == ["*"] else set(shown)
        self._rules: dict[str, SortRule] = {}

    def rule(self, name: str) -> SortRule:
        found = self._rules.get(name)
        if found is None:
            found = self._rules[name] = SortRule.parse(name, self.points)
        return found

    def expand(self, rules: list[str]) -> list[str]:
        """The sort rules of a placeholder search: custom rules and, in place of `sort`, the request's
        criteria; a field sorted by an earlier rule is not sorted again."""
        out: list[str] = []
        seen: set[str] = set()
        for rule in rules:
            names = self.sort_names if rule == "sort" else [rule] if rule.endswith((":asc", ":desc")) else []
            for name in names:
                key = name.rpartition(":")[0] if name not in self.points else "\0geo"
                if key not in seen:
                    seen.add(key)
                    out.append(name)
        return out

    # -- per-document keys (keyword search) ---------------------------------------------------------

    def rule_key(self, docid: int, name: str, order: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """(sort key, score detail) of a document for one sort rule."""
        rule = self.rule(name)
        if rule.point is not None:
            point = self.store.geo_points().point(docid)
            if point is None:
                return (1,), self._geo_detail(rule, order, None)
            meters = int(haversine(rule.point[0], rule.point[1], point[0], point[1]))
            geo_key = (0, meters, docid) if rule.ascending else (0, -meters, -docid)
            return geo_key, self._geo_detail(rule, order, point)
        assert rule.field is not None
        fid = self.store.fid(rule.field)
        values = self.store.sort_values(fid) if fid is not None else None
        if values is None or docid >= values.size:
            return (_MISSING,), self._field_detail(rule, order, None)
        # ranks in key order stand for the values: the columns are sorted as the sort compares
        rank = int((values.number_min if rule.ascending else values.number_max)[docid])
        if rank >= 0:
            return (_field_key(0, rank, rule.ascending),), self._field_detail(
                rule, order, values.numbers.value(rank)
            )
        rank = int((values.string_min if rule.ascending else values.string_max)[docid])
        if rank >= 0:
            return (_field_key(1, rank, rule.ascending),), self._field_detail(
                rule, order, values.strings.value(rank)
            )
        return (_MISSING,), self._field_detail(rule, order, None)

    def rank_column(self, name: str, docids: np.ndarray) -> np.ndarray | None:
        """`rule_key`'s keys of `docids` for a field sort rule as an int64 column; None for a geo rule."""
        rule = self.rule(name)
        if rule.point is not None:
            return None
        assert rule.field is not None
        missing = np.full(len(docids), _MISSING, dtype=np.int64)
        fid = self.store.fid(rule.field)
        if fid is None:
            return missing
        values = self.store.sort_values(fid)
        if values.size == 0:  # no document has a value
            return missing
        inside = docids < values.size
        ids = np.where(inside, docids, 0)
        out = missing
        for cls, ranks in (
            (1, values.string_min if rule.ascending else values.string_max),
            (0, values.number_min if rule.ascending else values.number_max),
        ):
            rank = np.asarray(ranks)[ids].astype(np.int64)
            out = np.where(inside & (rank >= 0), _field_key(cls, rank, rule.ascending), out)
        return out

    def parts_in_order(self, docs: BitMap, name: str, coarse: int = 0) -> Iterator[BitMap]:
        """`docs` cut by a field sort rule, lazily in `rank_column`'s key order: one part per value
        (numbers, then strings), then the documents without a value. With `coarse`, runs of
        consecutive values holding at most that many documents of `docs` come as one part (a value's
        documents are never split)."""
        for part, _ in self._split(docs, self.rule(name), coarse):
            yield part

    def _field_detail(self, rule: SortRule, order: int, value: Any) -> dict[str, Any]:
        assert rule.field is not None
        if self.displayed is not None and rule.field not in self.displayed:
            return {f"<hidden-rule-{order}>": {"order": order, "value": "<hidden>"}}
        return {rule.name: {"order": order, "value": value}}

    @staticmethod
    def _geo_detail(rule: SortRule, order: int, point: tuple[float, float] | None) -> dict[str, Any]:
        assert rule.point is not None
        if point is None:
            return {rule.name: {"order": order, "value": None, "distance": None}}
        return {
            rule.name: {
                "order": order,
                "value": {"lat": point[0], "lng": point[1]},
                "distance": haversine(rule.point[0], rule.point[1], point[0], point[1]),
            }
        }

    # -- placeholder search -------------------------------------------------------------------------

    def placeholder(self, universe: BitMap, request: SearchRequest, rules: list[str]) -> SearchResult:
        """A placeholder search: the documents of `universe` by the sort rules, then by docid."""
        names = self.expand(rules)
        want = request.offset + request.limit
        distinct = self.distinct
        picked: list[tuple[int, list[Any]]] = []
        for docid, values in self._ordered(universe, [self.rule(n) for n in names]):
            if len(picked) >= want:  # checked first: a page of 0 hits looks at no document
                break
            if distinct is not None and not distinct.admit(docid):
                continue
            picked.append((docid, values))
        candidates = universe
        if distinct is not None:
            candidates = (
                distinct.remaining(universe) if request.exhaustive_count else universe - distinct.excluded
            )
        page = picked[request.offset : want]
        details = [self._details(names, values) for _, values in page]
        return SearchResult(
            docids=[d for d, _ in page],
            scores=[1.0] * len(page),
            details=details,
            candidates=len(candidates),
            matching=MatchingWords(),
            all_candidates=candidates,
        )

    def _details(self, names: list[str], values: list[Any]) -> dict[str, Any]:
        detail: dict[str, Any] = {}
        for order, (name, value) in enumerate(zip(names, values, strict=True)):
            rule = self.rule(name)
            if rule.point is None:
                detail.update(self._field_detail(rule, order, value))
            else:
                detail.update(self._geo_detail(rule, order, value))
        return detail

    def _ordered(
        self, universe: BitMap, rules: list[SortRule], depth: int = 0, values: list[Any] | None = None
    ) -> Iterator[tuple[int, list[Any]]]:
        """(docid, value of each rule) in rank order, depth first. Buckets are split lazily, rule by
        rule and value by value: a page of 20 stops the walk of a field after its first values, never
        intersecting every value of the field with the bucket."""
        values = values if values is not None else []
        if depth == len(rules):
            for docid in universe:
                yield docid, values
            return
        if len(universe) == 1:  # nothing left to order: the remaining rules only give details
            docid = universe.min()
            yield docid, values + self._leaf_values(docid, rules[depth:])
            return
        for part, value in self._split(universe, rules[depth]):
            yield from self._ordered(part, rules, depth + 1, [*values, value])

    def _leaf_values(self, docid: int, rules: list[SortRule]) -> list[Any]:
        """The details values of the rules a single-document bucket skipped."""
        out: list[Any] = []
        for rule in rules:
            if rule.point is not None:
                out.append(self.store.geo_points().point(docid))
                continue
            _, detail = self.rule_key(docid, rule.name, 0)
            out.append(next(iter(detail.values())).get("value"))
        return out

    def _split(self, bucket: BitMap, rule: SortRule, coarse: int = 0) -> Iterator[tuple[BitMap, Any]]:
        """`bucket` cut by one rule, in rank order: (documents, their value for the details; None for
        a run of values, with `coarse`)."""
        if rule.point is not None:
            yield from self._split_geo(bucket, rule)
            return
        assert rule.field is not None
        fid = self.store.fid(rule.field)
        seen = BitMap()
        if fid is not None:
            for kind in (NUMBERS, STRINGS):
                column = self.store.column(fid, kind)
                for i, docs in column.walk(bucket, reverse=not rule.ascending, coarse=coarse):
                    docs -= seen
                    if docs:
                        seen |= docs
                        yield docs, (column.value(i) if i >= 0 else None)
        rest = bucket - seen
        if rest:
            yield rest, None

    def _split_geo(self, bucket: BitMap, rule: SortRule) -> Iterator[tuple[BitMap, Any]]:
        assert rule.point is not None
        points = self.store.geo_points()
        located = bucket & points.docids
        if located:
            ids = np.frombuffer(located.to_array(), dtype=np.uint32)
            meters = haversine_many(rule.point[0], rule.point[1], points.lat[ids], points.lng[ids]).astype(
                np.int64
            )
            order = np.lexsort((ids, meters))  # by whole meters, then docid
            if not rule.ascending:
                order = order[::-1]
            for j in order:
                docid = int(ids[j])
                yield BitMap([docid]), (float(points.lat[docid]), float(points.lng[docid]))
        rest = bucket - located
        if rest:
            yield rest, None
