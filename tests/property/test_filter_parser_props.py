"""Property tests of the filter parser.

* random expressions from the grammar (with random spacing, quoting, escapes and mutations) and
  random garbage never raise anything but `FilterError`;
* printing an AST and parsing it back gives the same AST (from parsed expressions and from randomly
  built trees with arbitrary field names and values);
* the regex fast paths agree with the general nom-style parser, spans and error messages included;
* the recursion budget holds exactly (49 parentheses / 197 NOTs accepted, one more refused) and deep
  inputs never exhaust Python's recursion limit.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanzo_engine.filter_parser import (
    And,
    Comparison,
    Contains,
    Exists,
    FilterError,
    GeoBoundingBox,
    GeoPolygon,
    GeoRadius,
    In,
    IsEmpty,
    IsNotEmpty,
    IsNotNull,
    IsNull,
    Node,
    Not,
    NotContains,
    NotExists,
    NotIn,
    NotStartsWith,
    Or,
    Range,
    StartsWith,
    Token,
    VectorExists,
    parse_filter,
    parse_filter_value,
    to_string,
)
from hanzo_engine.filter_parser.messages import render
from hanzo_engine.filter_parser.parser import ParseFailure, parse_expression

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- expression strings from the grammar ----------------------------------------------------------

PLAIN_WORDS = ["title", "genre", "a", "x1", "author.name", ".private", "I-love-kebab", "_id", "12", "-3.5", "1e3",
               "été", "東京", "हिंदी", "ß", "ANDroid", "ORacle", "NOTE", "INdex", "TOp", "ISland", "EXISTSx",
               "_geography", "_vectorsX"]  # fmt: skip
ODD_WORDS = ["AND", "OR", "NOT", "IN", "TO", "IS", "NULL", "EMPTY", "EXISTS", "CONTAINS", "STARTS", "WITH", "_geo",
             "_geoRadius", "_geoPoint", "_geoDistance", "_geoBoundingBox", "_geoPolygon", "_vectors", "_vectors.e",
             "हिन्दी", "a\u0301", "🐻", ""]  # fmt: skip
SPACES = ["", " ", " ", " ", "  ", "\t", "\n", "\u00a0", "\r\n"]
QUOTE_TEXT = st.text(alphabet=st.sampled_from("ab é\\'\"nxu{}0189_ \t"), max_size=8)


def _quoted(body: str, quote: str, escape: bool) -> str:
    if escape:
        body = body.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return quote + body + quote


# mostly well-formed operands, sometimes keywords, reserved names, bad quoting
values = st.one_of(
    st.sampled_from(PLAIN_WORDS),
    st.sampled_from(PLAIN_WORDS),
    st.sampled_from(PLAIN_WORDS),
    st.builds(_quoted, QUOTE_TEXT, st.sampled_from(["'", '"']), st.just(True)),
    st.builds(_quoted, QUOTE_TEXT, st.sampled_from(["'", '"']), st.booleans()),
    st.sampled_from(ODD_WORDS),
    # letters Python's `\w` and Rust's `is_alphanumeric` disagree on, and marks after a letter
    st.sampled_from(["हिंदी", "कि", "हिन्दी", "Ⓐb", "bⒶ", "a\u0301", "été", "東京"]),
)
ws = st.one_of(st.just(" "), st.just(" "), st.just(" "), st.sampled_from(SPACES))


@st.composite
def clauses(draw: st.DrawFn) -> str:
    f, v, w, w2 = draw(values), draw(values), draw(ws), draw(ws)
    kind = draw(st.integers(0, 12))
    if kind <= 3:
        op = draw(st.sampled_from(["=", "!=", ">", ">=", "<", "<=", "=", "=", "==", "!"]))
        return f"{f}{w}{op}{w2}{v}"
    if kind == 4:
        items = draw(st.lists(values, max_size=3))
        sep = draw(st.sampled_from([",", ", ", " ,", ",,"]))
        trail = draw(st.sampled_from(["", ",", " , "]))
        neg = draw(st.sampled_from(["", "NOT ", "NOT  "]))
        return f"{f}{w}{neg}IN{w2}[{sep.join(items)}{trail}]"
    if kind == 5:
        return f"{f}{w}{v} TO{w2}{draw(values)}"
    if kind == 6:
        return f"{f}{w}{draw(st.sampled_from(['IS NULL', 'IS NOT NULL', 'IS EMPTY', 'IS  NOT EMPTY', 'IS', 'NULL']))}"
    if kind == 7:
        return f"{f}{w}{draw(st.sampled_from(['EXISTS', 'NOT EXISTS', 'NOT  EXISTS', 'EXIST']))}"
    if kind == 8:
        return f"{f}{w}{draw(st.sampled_from(['CONTAINS', 'NOT CONTAINS', 'STARTS WITH', 'NOT STARTS WITH']))}{w2}{v}"
    if kind == 9:
        nums = draw(
            st.lists(st.sampled_from(["1", "-2.5", "+.5", "3.", "1e3", "1e", "x", " 4 "]), max_size=5)
        )
        return f"_geoRadius({','.join(nums)})"
    if kind == 10:
        pts = draw(
            st.lists(
                st.lists(st.sampled_from(["1", "-2.5", "90", "4e1", ""]), max_size=3).map(",".join),
                max_size=4,
            )
        )
        name = draw(st.sampled_from(["_geoBoundingBox", "_geoPolygon"]))
        return f"{name}({', '.join('[' + p + ']' for p in pts)}{draw(st.sampled_from(['', ',']))})"
    if kind == 11:
        parts = draw(
            st.lists(
                st.sampled_from(["e", '"q e"', "fragments", "fragments.f", "userProvided", "x", ""]),
                max_size=3,
            )
        )
        tail = draw(st.sampled_from([" EXISTS", " NOT EXISTS", "  EXISTS", " = 1", ""]))
        return "_vectors" + "".join("." + p for p in parts) + tail
    return f"{f}{w}{v}"


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> str:
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        expr = draw(clauses())
    else:
        parts = draw(st.lists(expressions(depth + 1), min_size=1, max_size=3))
        joins = [
            draw(
                st.sampled_from([" AND ", " OR ", " AND ", " OR ", "AND", " AND\n", "  OR  ", " XOR ", "OR("])
            )
            for _ in parts[1:]
        ]
        expr = parts[0] + "".join(j + p for j, p in zip(joins, parts[1:], strict=True))
    if draw(st.integers(0, 3)) == 0:
        expr = f"({draw(ws)}{expr}{draw(ws)})"
    if draw(st.integers(0, 4)) == 0:
        expr = draw(st.sampled_from(["NOT ", "NOT NOT ", "NOT ", "NOT("])) + expr
    return draw(ws) + expr


@st.composite
def mutated(draw: st.DrawFn) -> str:
    expr = draw(expressions())
    for _ in range(draw(st.integers(0, 2))):
        if not expr:
            break
        i = draw(st.integers(0, len(expr) - 1))
        op = draw(st.integers(0, 2))
        ch = draw(st.sampled_from([*"()[]'\",=<>!\\ _.", "AND", "NOT", "é", "\u0301"]))
        expr = (
            expr[:i] + ch + expr[i + 1 :]
            if op == 0
            else expr[:i] + ch + expr[i:]
            if op == 1
            else expr[:i] + expr[i + 1 :]
        )
    return expr


def _dump(obj: Any) -> Any:
    """Everything about a tree, spans included (node equality ignores them)."""
    if isinstance(obj, Token):
        return (obj.value, obj.start, obj.end)
    if isinstance(obj, list | tuple):
        return tuple(_dump(x) for x in obj)
    if dataclasses.is_dataclass(obj):
        return (type(obj).__name__, *(_dump(getattr(obj, f.name)) for f in dataclasses.fields(obj)))
    return obj


def _outcome(expr: str, fast: bool) -> Any:
    try:
        return _dump(parse_expression(expr, fast=fast))
    except ParseFailure as failure:
        e = failure.error
        return render(e.kind, expr, e.start, e.end, e.arg)


@SETTINGS
@given(st.one_of(expressions(), mutated()))
def test_only_filter_errors_and_round_trip(expr: str) -> None:
    try:
        node = parse_filter(expr)
    except FilterError as exc:
        assert "\n" in exc.message  # every syntax error carries its position line
        return
    if node is None:
        return
    assert parse_filter(to_string(node)) == node


@SETTINGS
@given(st.one_of(expressions(), mutated()))
def test_fast_paths_agree_with_general_parser(expr: str) -> None:
    if not expr.strip(" \t\n\r\u00a0"):
        return
    assert _outcome(expr, fast=True) == _outcome(expr, fast=False)


# A geo filter is outside the whole-filter fast path, so these wrappers make the general parser run
# and call the per-clause fast path on the clause.
GEO = "_geoRadius(1, 2, 3)"
WRAPPERS = [
    "{}",
    "({})",
    "NOT ({})",
    "{} AND " + GEO,
    GEO + " OR ({} )",
    "(" + GEO + " AND {})",
    "{} OR x = 1",
]


@settings(SETTINGS, max_examples=600)
@given(clauses(), st.sampled_from(WRAPPERS))
def test_clause_fast_path_agrees_with_general_parser(clause: str, wrapper: str) -> None:
    expr = wrapper.format(clause)
    assert _outcome(expr, fast=True) == _outcome(expr, fast=False)


@SETTINGS
@given(
    st.one_of(
        st.text(max_size=60),
        st.text(alphabet=st.sampled_from(list("()[]'\"\\,=<>! \t\n_.aAND1eOT")), max_size=60),
    )
)
def test_garbage_only_raises_filter_error(text: str) -> None:
    try:
        parse_filter(text)
    except FilterError:
        pass


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
    | expressions(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=2)
    ),
    max_leaves=8,
)


@SETTINGS
@given(json_values)
def test_json_forms_only_raise_filter_error(value: Any) -> None:
    try:
        parse_filter_value(value)
    except FilterError as exc:
        assert exc.message


# -- trees built directly: arbitrary names and values survive printing ------------------------------

any_token = st.text(max_size=6).map(Token.synthetic)
number_token = st.from_regex(
    r"[+-]?([0-9]{1,3}(\.[0-9]{0,2})?|\.[0-9]{1,2})([eE][+-]?[0-9]{1,2})?", fullmatch=True
).map(Token.synthetic)
pair = st.tuples(number_token, number_token)
leaves = st.one_of(
    st.builds(Comparison, any_token, st.sampled_from(["=", "!=", ">", ">=", "<", "<="]), any_token),
    st.builds(Range, any_token, any_token, any_token),
    st.builds(In, any_token, st.lists(any_token, max_size=3)),
    st.builds(NotIn, any_token, st.lists(any_token, max_size=3)),
    *(st.builds(cls, any_token) for cls in (Exists, NotExists, IsNull, IsNotNull, IsEmpty, IsNotEmpty)),
    *(st.builds(cls, any_token, any_token, st.just(Token.synthetic("k"))) for cls in
      (Contains, NotContains, StartsWith, NotStartsWith)),
    st.builds(GeoRadius, number_token, number_token, number_token, st.none() | number_token),
    st.builds(GeoBoundingBox, pair, pair),
    st.builds(GeoPolygon, st.lists(pair, min_size=3, max_size=4)),
    st.builds(
        lambda e, kind, frag: VectorExists(Token.synthetic("_vectors"), e, kind if e is not None else "none",
                                           frag if e is not None and kind == "fragment" else None),
        st.none() | any_token,
        st.sampled_from(["none", "fragment", "userProvided", "documentTemplate", "regenerate"]),
        any_token,
    ),
)  # fmt: skip
_NEGATABLE = (Comparison, Range, GeoRadius, GeoBoundingBox, GeoPolygon, VectorExists, Or, And)
trees = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.builds(Or, st.lists(children, min_size=2, max_size=3)),
        st.builds(And, st.lists(children, min_size=2, max_size=3)),
        children.filter(lambda n: isinstance(n, _NEGATABLE)).map(Not),
    ),
    max_leaves=12,
)


@SETTINGS
@given(trees)
def test_printed_trees_parse_back(tree: Node) -> None:
    assert parse_filter(to_string(tree)) == tree


# -- the depth limit --------------------------------------------------------------------------------


@contextmanager
def _tight_recursion_limit(extra: int) -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + extra)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def test_depth_limit_is_exact() -> None:
    def accepted(expr: str) -> bool:
        try:
            parse_filter(expr)
        except FilterError as exc:
            assert exc.message.startswith("The filter exceeded the maximum depth limit.")
            return False
        return True

    assert accepted("(" * 49 + "a = 1" + ")" * 49)
    assert not accepted("(" * 50 + "a = 1" + ")" * 50)
    assert accepted("NOT " * 197 + "a = 1")
    assert not accepted("NOT " * 198 + "a = 1")
    # mixed: 48 parentheses (192 units) leave room for 5 NOTs inside the innermost one
    assert accepted("(" * 48 + "NOT " * 5 + "a = 1" + ")" * 48)
    assert not accepted("(" * 48 + "NOT " * 6 + "a = 1" + ")" * 48)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["(", "NOT ", "( ", "NOT(", "a = 1 AND (", "b EXISTS OR ("]), min_size=1, max_size=400
    )
)
def test_deep_inputs_never_exhaust_python_recursion(prefix: list[str]) -> None:
    opening = "".join(prefix)
    expr = opening + "x = 1" + ")" * opening.count("(")
    with _tight_recursion_limit(250):
        try:
            parse_filter(expr)
        except FilterError:
            pass
