"""The per-group and per-clause fast paths against the general parser, now that geo clauses go through
the whole-filter fast path (`_fast.fast_chain` hands them to the general parser's geo rule).

`test_filter_parser_props.test_clause_fast_path_agrees_with_general_parser` wraps clauses with a
`_geoRadius` to keep the whole-filter path out; geo clauses and escaped quotes go through it now, so
nine levels of parentheses (one more than `fast_chain` takes) keep it out here: the general parser
runs at the top level and tries `fast_group` / `fast_clause` on the rest. The geo and escaped-quote
wrappers are kept: there the whole-filter path, geo rule and unescaping included, must agree with the
general parser too.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.property.test_filter_parser_props import SETTINGS, _outcome, clauses

ESCAPED = 'title = "a \\" b"'
GEO = "_geoRadius(1, 2, 3)"
DEEP = "(" * 9 + "{}" + ")" * 9
WRAPPERS = [
    DEEP,
    DEEP + " AND " + ESCAPED,
    "NOT " + DEEP + " OR (x = 1)",
    "{} AND " + ESCAPED,
    ESCAPED + " OR ({} )",
    "(" + ESCAPED + " AND {})",
    "NOT ({}) AND " + ESCAPED,
    "({} OR x = 1) AND " + ESCAPED,
    "{} AND " + GEO,
    GEO + " OR ({} )",
    "NOT (" + GEO + " AND {})",
    "{} AND NOT _geoBoundingBox([1, 2], [0, 1]) OR _geoPolygon([0, 0], [0, 1], [1, 1],)",
]


@settings(SETTINGS, max_examples=600)
@given(clauses(), st.sampled_from(WRAPPERS))
def test_group_and_clause_fast_paths_agree_with_general_parser(clause: str, wrapper: str) -> None:
    expr = wrapper.format(clause)
    assert _outcome(expr, fast=True) == _outcome(expr, fast=False)


@settings(SETTINGS, max_examples=200)
@given(
    st.lists(st.sampled_from(["1", "-2.5", "+.5", "3.", "1e3", "1e", "x", " 4 ", "", ".5e-2 "]), max_size=5),
    st.sampled_from(["", " ", "NOT ", "a = 1 AND ", "(b = 2 OR "]),
    st.sampled_from(["", " ", " AND c = 3", ")", ") OR d EXISTS", ")AND e = 1"]),
)
def test_geo_radius_in_the_whole_filter_path(args: list[str], before: str, after: str) -> None:
    expr = f"{before}_geoRadius({','.join(args)}){after}"
    if not expr.strip():
        return
    assert _outcome(expr, fast=True) == _outcome(expr, fast=False)
