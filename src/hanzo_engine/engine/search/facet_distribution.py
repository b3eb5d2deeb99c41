"""`facetDistribution`, `facetStats` and facet search over a set of candidates (milli's
`FacetDistribution` and `SearchForFacetValues`).

Distribution, per selected field (filterable, and covered by a requested name with legacy matching:
`a` selects `a.b`), numbers first, then strings, at most `maxValuesPerFacet` values together:

- `alpha` with at most 3000 candidates: numbers ordered by their printed form (`"10"` before `"9"`),
  strings by normalized form, each string shown with the spelling of the first candidate (by docid)
  that has it (milli reads the candidates' values document by document there; the columns give
  the same counts);
- otherwise: the field's column walked in value order (`alpha`) or by decreasing count through
  milli's level heap (`count`); a string is shown with the spelling of the smallest candidate docid
  having it. As in milli, the limit is checked after each insertion, so a field whose numbers alone
  reach it gets all its strings too.

Numbers are printed as Rust prints an `f64` (`2019`, `7.5`). Stats are the smallest and largest
number among the candidates, for fields that have numbers.

Facet search looks for the field's string values whose search-normalized form (lowercased, without
diacritics) starts with the normalized query, within the query's typo budget (by byte length: under
`oneTypo` none, under `twoTypos` one, else two; none on `disableOnWords` words or
`disableOnAttributes` fields, and none at all when typo tolerance is off), counts them among the
candidates and keeps the first `maxValuesPerFacet` in value order, or the best counts.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any, Final

from pyroaring import BitMap

from hanzo_engine.engine.attribute_patterns import MATCH
from hanzo_engine.engine.attribute_patterns import match_field_legacy as match_legacy
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.tokenizer import normalize
from hanzo_engine.engine.update.facets import FacetRules
from hanzo_engine.engine.update.indexer import search_fields
from hanzo_engine.filter_parser.errors import rust_f64_display

from .facet_store import NUMBERS, STRINGS, Column, FacetStore

LINEAR_SCAN_CANDIDATES: Final = 3000

__all__ = ["facet_distribution", "facet_search", "known_field_names", "prefix_typo_matches"]


def known_field_names(reader: IndexReader, store: FacetStore) -> list[str]:
    """Every field name the index knows (top-level, flattened, faceted), first-seen order."""
    names: list[str] = []
    seen: set[str] = set()
    for name in (*reader.fields_ids_map(), *search_fields(reader), *store.fields):
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def _original(store: FacetStore, docid: int, fid: int, normalized: str) -> str:
    _, strings = store.doc_values(docid, fid)
    for norm, original in strings:
        if norm == normalized:
            return str(original)
    return normalized


def number_text(value: float) -> str:
    """An f64 as Rust's `Display` prints it (shortest round trip, never an exponent)."""
    text = repr(value)
    if "e" in text or "n" in text:  # exponents, inf, nan: the slow exact path
        return rust_f64_display(value)
    return text[:-2] if text.endswith(".0") else text


def _field_distribution(
    store: FacetStore, fid: int, candidates: BitMap, order: str, max_values: int
) -> dict[str, int]:
    out: dict[str, int] = {}
    numbers, strings = store.column(fid, NUMBERS), store.column(fid, STRINGS)
    if order == "alpha" and len(candidates) <= LINEAR_SCAN_CANDIDATES:
        # milli reads the candidates' values one document at a time here: every number touched, in
        # the order of its printed form, then the strings; the same counts come from the columns
        printed = sorted(
            (number_text(float(numbers.value(i))), len(docs)) for i, docs in numbers.walk(candidates)
        )
        for text, count in printed[: max(max_values, 0)]:
            out[text] = count
        room = max(max_values - len(out), 0)
        for i, docs in strings.walk(candidates):
            if room == 0:
                break
            out[_original(store, docs.min(), fid, strings.texts[i])] = len(docs)
            room -= 1
        return out
    for kind, column in ((NUMBERS, numbers), (STRINGS, strings)):
        if order == "count":
            entries: Iterable[tuple[int, int, int]] = column.by_count(candidates)
        else:
            entries = ((i, len(docs), docs.min()) for i, docs in column.walk(candidates))
        for i, count, first in entries:
            if kind == NUMBERS:
                out[number_text(float(column.value(i)))] = count
            else:
                out[_original(store, first, fid, column.texts[i])] = count
            if len(out) == max_values:
                break
    return out


def _field_stats(store: FacetStore, fid: int, candidates: BitMap) -> dict[str, float] | None:
    column = store.column(fid, NUMBERS)
    low = next(column.walk(candidates), None)
    if low is None:
        return None
    high = next(column.walk(candidates, reverse=True))
    return {"min": float(column.value(low[0])), "max": float(column.value(high[0]))}


def facet_distribution(
    reader: IndexReader,
    settings: dict[str, Any],
    candidates: BitMap,
    facets: list[str],
    store: FacetStore | None = None,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """(facetDistribution, facetStats) of the requested `facets` (names or `*`) over `candidates`;
    the names were validated by the caller."""
    store = store if store is not None else FacetStore(reader)
    rules = FacetRules(settings)
    faceting = settings.get("faceting") or {}
    max_values = int(faceting.get("maxValuesPerFacet", 100))
    orders: dict[str, str] = faceting.get("sortFacetValuesBy") or {"*": "alpha"}
    default_order = orders.get("*", "alpha")
    requested: list[str] | None = None if "*" in facets else list(facets)
    distribution: dict[str, dict[str, int]] = {}
    stats: dict[str, dict[str, float]] = {}
    for name in sorted(known_field_names(reader, store)):
        if not rules.is_filterable(name):
            continue
        if requested is not None and not any(match_legacy(r, name) == MATCH for r in requested):
            continue
        # milli looks the order up by the field's own name among the requested ones, else `*`
        order = (
            orders.get(name, default_order) if requested is not None and name in requested else default_order
        )
        fid = store.fid(name)
        if fid is None:
            distribution[name] = {}
            continue
        distribution[name] = _field_distribution(store, fid, candidates, order, max_values)
        found = _field_stats(store, fid, candidates)
        if found is not None:
            stats[name] = found
    return distribution, stats


# -- facet search -----------------------------------------------------------------------------------


def prefix_typo_matches(query: str, values: list[str], max_typos: int) -> list[int]:
    """Indexes of the `values` having a prefix within `max_typos` Damerau (optimal string alignment)
    edits of `query`: a Levenshtein prefix automaton with transpositions, as milli's `build_dfa`."""
    try:
        from hanzo_engine._native.facets import prefix_matches
    except ImportError:  # the native helper is optional
        return [i for i, v in enumerate(values) if _prefix_within(query, v, max_typos)]
    return list(prefix_matches(query, values, max_typos))


def _prefix_within(query: str, value: str, k: int) -> bool:
    n = len(query)
    if k == 0:
        return value.startswith(query)
    prev2: list[int] = []
    prev = list(range(n + 1))
    best = prev[n]
    for j in range(1, len(value) + 1):
        cur = [j] + [0] * n
        c = value[j - 1]
        for i in range(1, n + 1):
            cost = 0 if query[i - 1] == c else 1
            v = min(prev[i] + 1, cur[i - 1] + 1, prev[i - 1] + cost)
            if i > 1 and j > 1 and query[i - 1] == value[j - 2] and query[i - 2] == c:
                v = min(v, prev2[i - 2] + 1)
            cur[i] = v
        best = min(best, cur[n])
        if best <= k:
            return True
        if min(cur) > k:
            return False
        prev2, prev = prev, cur
    return best <= k


class _Hits:
    """milli's `ValuesCollection`: the first `max` values, or the `max` best counts."""

    def __init__(self, by_count: bool, max_values: int) -> None:
        self.by_count = by_count
        self.max = max_values
        self.hits: list[tuple[str, int]] = []
        self.heap: list[tuple[int, bytes, str]] = []

    def full(self) -> bool:
        return not self.by_count and len(self.hits) >= self.max

    def insert(self, value: str, count: int) -> None:
        if not self.by_count:
            if len(self.hits) < self.max:
                self.hits.append((value, count))
            return
        item = (count, value.encode(), value)
        if len(self.heap) == self.max:
            # replace the worst hit when the new one counts at least as much (milli's `peek_mut`)
            if self.heap and self.heap[0][0] <= count:
                heapq.heapreplace(self.heap, item)
        else:
            heapq.heappush(self.heap, item)

    def result(self) -> list[dict[str, Any]]:
        if self.by_count:
            ordered = sorted(self.heap, key=lambda x: (x[0], x[1]), reverse=True)
            return [{"value": v, "count": c} for c, _, v in ordered]
        return [{"value": v, "count": c} for v, c in self.hits]


def _search_keys(column: Column) -> tuple[list[str], dict[str, list[int]]]:
    """The distinct search-normalized forms of a string column (sorted) and their entries."""
    cached: tuple[list[str], dict[str, list[int]]] | None = getattr(column, "_search_keys", None)
    if cached is None:
        groups: dict[str, list[int]] = {}
        for i, text in enumerate(column.texts):
            groups.setdefault(normalize(text), []).append(i)
        keys = sorted(groups, key=lambda s: s.encode())
        cached = (keys, groups)
        column._search_keys = cached  # type: ignore[attr-defined]
    return cached


def facet_search(
    reader: IndexReader,
    settings: dict[str, Any],
    facet_name: str,
    query: str | None,
    candidates: BitMap,
    store: FacetStore | None = None,
) -> list[dict[str, Any]]:
    """The `facetHits` of a facet search (the facet name was validated by the caller)."""
    store = store if store is not None else FacetStore(reader)
    faceting = settings.get("faceting") or {}
    max_values = int(faceting.get("maxValuesPerFacet", 100))
    orders: dict[str, str] = faceting.get("sortFacetValuesBy") or {"*": "alpha"}
    hits = _Hits(orders.get(facet_name, orders.get("*", "alpha")) == "count", max_values)
    fid = store.fid(facet_name)
    if fid is None:
        return []
    column = store.column(fid, STRINGS)
    if not len(column):
        return []

    def add(i: int) -> None:
        docs = column.bitmap(i)
        count = docs.intersection_cardinality(candidates)
        if count:
            hits.insert(_original(store, docs.min(), fid, column.texts[i]), count)

    if query is None:
        for i in range(len(column)):
            if hits.full():
                break
            add(i)
        return hits.result()
    normalized = normalize(query)
    keys, groups = _search_keys(column)
    typo = settings.get("typoTolerance") or {}
    exact_fields = typo.get("disableOnAttributes") or []
    tolerant = bool(typo.get("enabled", True)) and not any(
        match_legacy(a, facet_name) == MATCH for a in exact_fields
    )
    if tolerant and normalized in set(typo.get("disableOnWords") or []):
        matched = [normalized] if normalized in groups else []
    elif tolerant:
        sizes = typo.get("minWordSizeForTypos") or {}
        length = len(normalized.encode())
        budget = (
            0 if length < int(sizes.get("oneTypo", 5)) else 1 if length < int(sizes.get("twoTypos", 9)) else 2
        )
        matched = [keys[i] for i in prefix_typo_matches(normalized, keys, budget)]
    else:
        matched = [k for k in keys if k.startswith(normalized)]
    for key in matched:
        for i in groups[key]:
            if hits.full():
                break
            add(i)
    return hits.result()
