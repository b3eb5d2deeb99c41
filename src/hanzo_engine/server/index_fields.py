"""What an index's settings make of each field: `POST /indexes/{uid}/fields` entries, facet sort orders."""

from __future__ import annotations

from typing import Any


def match_pattern(pattern: str, name: str) -> str:
    """milli's `match_pattern`: "match", "parent" (the field is a parent of the pattern) or "none"."""
    if pattern == "*":
        return "match"
    if len(pattern) > 1 and pattern.startswith("*") and pattern.endswith("*"):
        if pattern[1:-1] in name:
            return "match"
    elif pattern.startswith("*"):
        if name.endswith(pattern[1:]):
            return "match"
    elif pattern.endswith("*"):
        if name.startswith(pattern[:-1]):
            return "match"
    elif pattern == name:
        return "match"
    return "parent" if pattern.startswith(name + ".") else "none"


def _legacy_match(attribute: str, name: str) -> bool:
    """milli's `match_field_legacy` == Match: the field is the attribute or nested under it."""
    return name == attribute or name.startswith(attribute + ".")


def _filter_features(name: str, rules: list[Any]) -> dict[str, bool]:
    """The features of the first filterableAttributes rule matching `name` (all off without one)."""
    for rule in rules:
        if isinstance(rule, str):
            if _legacy_match(rule, name):
                return {"facetSearch": True, "equality": True, "comparison": True}
            continue
        if any(match_pattern(p, name) == "match" for p in rule.get("attributePatterns", [])):
            features = rule.get("features") or {}
            flt = features.get("filter") or {}
            return {"facetSearch": bool(features.get("facetSearch", False)),
                    "equality": bool(flt.get("equality", True)), "comparison": bool(flt.get("comparison", False))}
    return {"facetSearch": False, "equality": False, "comparison": False}


def facet_sort_order(name: str, settings: dict[str, Any]) -> str:
    """The `faceting.sortFacetValuesBy` order of a facet (exact name, then a pattern, then `*`)."""
    orders: dict[str, str] = ((settings.get("faceting") or {}).get("sortFacetValuesBy")) or {}
    if name in orders:
        return orders[name]
    for pattern, order in orders.items():
        if pattern != "*" and match_pattern(pattern, name) == "match":
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
        if any(match_pattern(p, name) == "match" for p in rule.get("attributePatterns", [])):
            locales = list(rule.get("locales", []))
            break
    distinct = settings.get("distinctAttribute")
    return {
        "name": name,
        "displayed": {"enabled": displayed == ["*"] or any(_legacy_match(d, name) for d in displayed)},
        "searchable": {"enabled": searchable == ["*"] or any(_legacy_match(s, name) for s in searchable)},
        "sortable": {"enabled": any(_legacy_match(s, name) for s in settings.get("sortableAttributes") or [])},
        "distinct": {"enabled": distinct is not None and _legacy_match(distinct, name)},
        "rankingRule": ranking,
        "filterable": {"enabled": any(features.values()), "sortBy": facet_sort_order(name, settings), **features},
        "localized": {"locales": locales},
    }
