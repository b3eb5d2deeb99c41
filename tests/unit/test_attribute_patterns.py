"""`engine.attribute_patterns`: milli's pattern and nested-field matching."""

from __future__ import annotations

from hanzo_engine.engine.attribute_patterns import (
    MATCH,
    NO_MATCH,
    PARENT,
    contained_in,
    is_faceted_by,
    match_field_legacy,
    match_pattern,
)


def test_attribute_patterns() -> None:
    assert match_pattern("*", "a.b") == MATCH
    assert match_pattern("a.*", "a.b") == MATCH
    assert match_pattern("*.b", "a.b") == MATCH
    assert match_pattern("*x*", "axb") == MATCH
    assert match_pattern("a.b", "a") == PARENT
    assert match_pattern("a.b", "ab") == NO_MATCH
    assert match_field_legacy("a", "a.b") == MATCH
    assert match_field_legacy("a.b", "a") == PARENT
    assert match_field_legacy("a", "ab") == NO_MATCH
    assert is_faceted_by("a.b", "a") and not is_faceted_by("ab", "a")
    assert contained_in("a.b", "a") and contained_in("a", "a") and not contained_in("a.", "a")
