"""Facets of a federated search: `federation.facetsByIndex` and `federation.mergeFacets` (docs/api-contract.md
§3.10; Meilisearch's `FederatedFacets`, `FacetOrder::ByFacet` and `ComputedFacets`).

What the caller (`federation/perform.py`) computes per index, as Meilisearch does:

- an index some query names: its facets counted over the union of its queries' candidates (every
  document any of them matched, the tenant token's filter included), with the index's own
  `maxValuesPerFacet` and `sortFacetValuesBy`, as a single search counts them;
- an index `facetsByIndex` names but no query uses: only checked (it must exist, its facets must be
  filterable, their order must agree); Meilisearch counts it over no document and leaves it out of
  the response.

What this module does with them:

- without `mergeFacets`: `facetsByIndex: {uid: {"distribution", "stats"}}` in uid order, for the
  indexes whose facets were computed (a `null` facet list computes nothing); absent when empty;
- with `mergeFacets`: one `facetDistribution` + `facetStats`. Indexes are taken in uid order; a
  facet's values keep the order in which they first appear and their counts add up; stats keep the
  smallest `min` and the largest `max`. Each facet's values are then sorted by the order recorded for
  that facet name: `alpha` by the value's bytes (`"10"` before `"9"`, `"B"` before `"a"`), `count` by
  decreasing count, ties left in merged order (Rust's unstable sort is an insertion sort up to 20
  elements, so stable there). A field the request did not name itself (matched through `*` or a
  parent name) sorts `alpha`. `maxValuesPerFacet`, when given, truncates each facet after the sort
  (the per-index limits were applied already). No computed index: neither field.

Orders (merge only): the first index, in uid order, that requests a facet name records its order for
that name; a later index ordering the same name differently is refused with
`invalid_multi_search_facet_order`, before any of its queries runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from hanzo_engine.apitypes.errors import MeiliError

from ..index_fields import facet_sort_order

# (distribution, stats): facet -> value -> count, facet -> {"min", "max"}
ComputedFacets = tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]

_ORDER_TEXT: Final = {"alpha": "alphabetically", "count": "by count"}

__all__ = ["ComputedFacets", "FederatedFacets", "merge_facets"]


def merge_facets(
    by_index: Mapping[str, ComputedFacets], orders: Mapping[str, str], max_values: int | None
) -> ComputedFacets:
    """One distribution and stats from the indexes' (see the module doc for the order rules)."""
    distribution: dict[str, dict[str, int]] = {}
    stats: dict[str, dict[str, float]] = {}
    for uid in sorted(by_index):
        index_distribution, index_stats = by_index[uid]
        for facet, values in index_distribution.items():
            merged = distribution.setdefault(facet, {})
            for value, count in values.items():
                merged[value] = merged.get(value, 0) + count
        for facet, bounds in index_stats.items():
            known = stats.get(facet)
            stats[facet] = (
                dict(bounds)
                if known is None
                else {"min": min(known["min"], bounds["min"]), "max": max(known["max"], bounds["max"])}
            )
    for facet, values in distribution.items():
        if orders.get(facet, "alpha") == "count":
            items = sorted(values.items(), key=lambda kv: -kv[1])  # stable: ties keep merged order
        else:
            items = sorted(values.items())  # code points: the order of the UTF-8 bytes
        distribution[facet] = dict(items if max_values is None else items[:max_values])
    return dict(sorted(distribution.items())), dict(sorted(stats.items()))


class FederatedFacets:
    """The facets of one federated search: the order check while indexes are searched, then the
    response fields."""

    def __init__(self, merge: Mapping[str, Any] | None) -> None:
        self.merge = merge
        self.orders: dict[str, tuple[str, str]] = {}  # facet name -> (first index asking, its order)
        self.by_index: dict[str, ComputedFacets] = {}

    def check_order(self, uid: str, orders: Iterable[tuple[str, str]]) -> None:
        """Record `(facet, order)` of index `uid` (requested names, request order); merging only.
        The error has no location: the caller prefixes where the index appears."""
        if self.merge is None:
            return
        for facet, order in orders:
            first_uid, first_order = self.orders.setdefault(facet, (uid, order))
            if first_order != order:
                raise MeiliError(
                    "invalid_multi_search_facet_order",
                    f"Inconsistent order for values in facet `{facet}`: index `{first_uid}` orders "
                    f"{_ORDER_TEXT[first_order]}, but index `{uid}` orders {_ORDER_TEXT[order]}.\n - Hint: Remove "
                    "`federation.mergeFacets` or change `faceting.sortFacetValuesBy` to be consistent in settings.",
                )

    def add(self, uid: str, facets: ComputedFacets) -> None:
        self.by_index[uid] = facets

    def append(self, uid: str, remote: Iterable[ComputedFacets]) -> None:
        """Add remotes' facets of index `uid` to this instance's (Meilisearch's `FederatedFacets::append`):
        counts of a value add up (new values after the known ones), stats keep the widest bounds."""
        distribution, stats = self.by_index.get(uid, ({}, {}))
        distribution = {facet: dict(values) for facet, values in distribution.items()}
        stats = {facet: dict(bounds) for facet, bounds in stats.items()}
        for remote_distribution, remote_stats in remote:
            for facet, bounds in remote_stats.items():
                known = stats.get(facet)
                stats[facet] = (
                    dict(bounds)
                    if known is None
                    else {"min": min(known["min"], bounds["min"]), "max": max(known["max"], bounds["max"])}
                )
            for facet, values in remote_distribution.items():
                merged = distribution.setdefault(facet, {})
                for value, count in values.items():
                    merged[value] = merged.get(value, 0) + count
        self.by_index[uid] = (distribution, stats)

    def sort_and_truncate(self, settings_by_index: Mapping[str, Mapping[str, Any]]) -> None:
        """After `append`, without `mergeFacets`: each index searched here sorts its facets' values by its
        `sortFacetValuesBy` and keeps its `maxValuesPerFacet` first ones (indexes only remotes searched
        are left as merged, as Meilisearch)."""
        for uid, settings in settings_by_index.items():
            if uid not in self.by_index:
                continue
            distribution, stats = self.by_index[uid]
            max_values = (settings.get("faceting") or {}).get("maxValuesPerFacet")
            limit = 100 if max_values is None else int(max_values)
            out: dict[str, dict[str, int]] = {}
            for facet, values in distribution.items():
                if facet_sort_order(facet, dict(settings)) == "count":
                    items = sorted(values.items(), key=lambda kv: -kv[1])
                else:
                    items = sorted(values.items())
                out[facet] = dict(items[:limit])
            self.by_index[uid] = (out, stats)

    def fields(self) -> dict[str, Any]:
        """`facetDistribution` + `facetStats` (merging), else `facetsByIndex`; `{}` when nothing was computed."""
        if not self.by_index:
            return {}
        if self.merge is None:
            return {
                "facetsByIndex": {
                    uid: {"distribution": self.by_index[uid][0], "stats": self.by_index[uid][1]}
                    for uid in sorted(self.by_index)
                }
            }
        orders = {facet: order for facet, (_, order) in self.orders.items()}
        distribution, stats = merge_facets(self.by_index, orders, self.merge.get("maxValuesPerFacet"))
        return {"facetDistribution": distribution, "facetStats": stats}
