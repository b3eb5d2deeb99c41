"""What an index's settings make of each field: `POST /indexes/{uid}/fields` entries, facet sort orders."""

from __future__ import annotations

from typing import Any

from hanzo_engine.engine.attribute_patterns import MATCH, is_faceted_by, match_pattern


def _filter_features(name: str, rules: list[Any]) -> dict[str, bool]:
    """The features of the first filterableAttributes rule matching `name` (all off without one)."""
    for rule in rules:
        if isinstance(rule, str):
            if is_faceted_by(name, rule):
                return {"facetSearch": True, "equality": True, "comparison": True}
            continue
        if any(match_pattern(p, name) == MATCH for p in rule.get("attributePatterns", [])):
            features = rule.get("features") or {}
            flt = features.get("filter") or {}
            return {
                "facetSearch": bool(features.get("facetSearch", False)),
                "equality": bool(flt.get("equality", True)),
                "comparison": bool(flt.get("comparison", False)),
            }
    return {"facetSearch": False, "equality": False, "comparison": False}


def facet_sort_order(name: str, settings: dict[str, Any]) -> str:
    """The `faceting.sortFacetValuesBy` order of a facet (exact name, then a pattern, then `*`)."""
    orders: dict[str, str] = ((settings.get("faceting") or {}).get("sortFacetValuesBy")) or {}
    if name in orders:
        return orders[name]
    for pattern, order in orders.items():
        if pattern != "*" and match_pattern(pattern, name) == MATCH:
            return order
    return orders.get("*", "alpha")


def field_descriptor(name: str, settings: dict[str, Any]) -> dict[str, Any]:
    """One entry of `POST /indexes/{uid}/fields` (Meilisearch's `Field`), from the index settings."""
    displayed = settings.get("displayedAttributes") or ["*"]
    searchable = settings.get("searchableAttributes") or ["*"]
    features = _filter_features(name, settings.get("filterableAttributes") or [])
    order = None
    for rule in settings.get("rankingRules") or []:
        field, _, direction = rule.rpartition(":")
        if field == name and direction in ("asc", "desc"):
            order = direction
            break
    ranking: dict[str, Any] = {"enabled": order is not None}
    if order is not None:
        ranking["order"] = order
    locales: list[str] = []
    for rule in settings.get("localizedAttributes") or []:
        if any(match_pattern(p, name) == MATCH for p in rule.get("attributePatterns", [])):
            locales = list(rule.get("locales", []))
            break
    distinct = settings.get("distinctAttribute")
    return {
        "name": name,
        "displayed": {"enabled": displayed == ["*"] or any(is_faceted_by(name, d) for d in displayed)},
        "searchable": {"enabled": searchable == ["*"] or any(is_faceted_by(name, s) for s in searchable)},
        "sortable": {
            "enabled": any(is_faceted_by(name, s) for s in settings.get("sortableAttributes") or [])
        },
        "distinct": {"enabled": distinct is not None and is_faceted_by(name, distinct)},
        "rankingRule": ranking,
        "filterable": {
            "enabled": any(features.values()),
            "sortBy": facet_sort_order(name, settings),
            **features,
        },
        "localized": {"locales": locales},
    }
