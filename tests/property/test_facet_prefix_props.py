"""Facet search's native typo-tolerant prefix matcher (`_native.facets.prefix_matches`) selects exactly
the values its Python twin (`facet_distribution._prefix_within`, the fallback when the native module is
missing) selects: a value matches when one of its prefixes is within `max_typos` optimal-string-alignment
edits of the query."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine._native.facets import prefix_matches
from hanzo_engine.engine.search.facet_distribution import _prefix_within

# A small alphabet (one non-ASCII letter, one astral) makes shared prefixes and near misses frequent.
TEXT = st.text(alphabet="abcé\U0001f600", max_size=10)


@settings(max_examples=400, deadline=None)
@given(query=TEXT, values=st.lists(TEXT, max_size=30), max_typos=st.integers(0, 2))
def test_native_prefix_matches_equal_the_python_twin(query: str, values: list[str], max_typos: int) -> None:
    expected = [i for i, v in enumerate(values) if _prefix_within(query, v, max_typos)]
    assert list(prefix_matches(query, values, max_typos)) == expected
