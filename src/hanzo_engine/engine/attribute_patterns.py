"""Which field names an attribute or a pattern covers, as milli's `attribute_patterns.rs` (the one
implementation: facets, field selection, formatting and the fields route use it).

Field names are dotted paths (`a.b.c`). A *pattern* (granular `filterableAttributes`, the fields
route's filter) may start and/or end with `*`; a *legacy attribute* (`sortableAttributes`, plain
`filterableAttributes` entries) covers itself and everything nested under it.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "MATCH",
    "NO_MATCH",
    "PARENT",
    "contained_in",
    "is_faceted_by",
    "match_field_legacy",
    "match_pattern",
]

# milli's `PatternMatch`: the name matches, is a parent of what matches (keep walking into it), or neither.
MATCH: Final = 2
PARENT: Final = 1
NO_MATCH: Final = 0


def is_faceted_by(name: str, attribute: str) -> bool:
    """`name` is `attribute` or nested under it (milli's `is_faceted_by`)."""
    return name == attribute or (name.startswith(attribute) and name[len(attribute)] == ".")


def contained_in(selector: str, key: str) -> bool:
    """permissive-json-pointer's `contained_in`: `selector` is `key` or a path below it (`key.`
    and at least one more character)."""
    return selector == key or (
        selector.startswith(key) and len(selector) > len(key) + 1 and selector[len(key)] == "."
    )


def match_pattern(pattern: str, name: str) -> int:
    """milli's `match_pattern`: `*` globs at either end (or both: a substring); MATCH, PARENT (`name`
    is a parent of the pattern's field) or NO_MATCH."""
    if pattern == "*":
        return MATCH
    if len(pattern) > 1 and pattern.startswith("*") and pattern.endswith("*"):
        if pattern[1:-1] in name:
            return MATCH
    elif pattern.startswith("*"):
        if name.endswith(pattern[1:]):
            return MATCH
    elif pattern.endswith("*"):
        if name.startswith(pattern[:-1]):
            return MATCH
    elif pattern == name:
        return MATCH
    return PARENT if is_faceted_by(pattern, name) else NO_MATCH


def match_field_legacy(attribute: str, name: str) -> int:
    """milli's `match_field_legacy`: MATCH for the attribute and its children, PARENT for its parents."""
    if is_faceted_by(name, attribute):
        return MATCH
    return PARENT if is_faceted_by(attribute, name) else NO_MATCH
