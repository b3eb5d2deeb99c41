"""The native whole-filter scanner (`_native.filter_scan`, `parser.scan_expression`) against the
general parser and the regex whole-filter path.

It must never accept a filter the general parser reads differently (spans included), and it must
accept every ASCII filter the regex path accepts, bar one corner it leaves to that path on purpose:
a keyword glued to the next word (``x EXISTSAND y = 1``, ``x CONTAINSfoo``), which nom and the regexes
take but a word scanner reads as one word.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine.filter_parser._fast import fast_chain
from hanzo_engine.filter_parser.parser import _geo_rule, scan_expression
from tests.property.test_filter_parser_props import SETTINGS, _dump, _outcome, clauses, expressions, mutated

_GLUED_KEYWORD = re.compile(r"(EXISTS|NULL|EMPTY|CONTAINS|WITH)[\w.\-]")


def _check(expr: str) -> None:
    node = scan_expression(expr)
    if node is not None:
        assert _dump(node) == _outcome(expr, fast=False)
    if expr.isascii() and not _GLUED_KEYWORD.search(expr) and fast_chain(expr, _geo_rule) is not None:
        assert node is not None, "the scanner gave up on a filter the regex path reads"


@settings(SETTINGS, max_examples=1500)
@given(st.one_of(expressions(), mutated()))
def test_scanner_agrees_with_general_parser(expr: str) -> None:
    _check(expr)


@settings(SETTINGS, max_examples=600)
@given(st.lists(clauses(), min_size=1, max_size=6), st.data())
def test_scanner_on_chains_of_clauses(parts: list[str], data: st.DataObject) -> None:
    joins = [
        data.draw(st.sampled_from([" AND ", " OR ", " AND NOT ", ") OR (", "AND", " OR\t"]))
        for _ in parts[1:]
    ]
    expr = parts[0] + "".join(j + p for j, p in zip(joins, parts[1:], strict=True))
    _check(expr)
    _check("(" + expr + ")")


def test_scanner_reads_the_common_shapes() -> None:
    expr = (
        "NOT (genres = Horror OR release_date > 946684800) AND (director = 'C \\'Chris\\' N' OR price 10 TO 100)"
        ' AND (tags IN [action, "science fiction", drama,] OR poster EXISTS) AND NOT (budget IS NULL OR'
        " overview IS NOT EMPTY) AND (x NOT IN [] OR y NOT EXISTS) AND (t CONTAINS kebab OR t NOT STARTS WITH b)"
        " AND _geoRadius(45.47, 9.18, 2000)"
    )
    node = scan_expression(expr)
    assert node is not None
    assert _dump(node) == _outcome(expr, fast=False)


def test_scanner_leaves_the_rest_to_the_python_paths() -> None:
    for expr in ["x = 1 AND été = 2", "_vectors.e EXISTS", "x EXISTS ", "x = 1)", "(" * 9 + "x = 1" + ")" * 9,
                 "NOT NOT NOT NOT NOT x = 1", "x = 'a\\q'", "x IS", "x EXISTSAND y = 1", "x IN [a b]"]:  # fmt: skip
        assert scan_expression(expr) is None, expr
