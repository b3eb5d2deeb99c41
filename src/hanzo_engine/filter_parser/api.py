"""Entry points: parse the string and JSON forms, walk the result, gate experimental features.

Mirrors what Meilisearch does around its parser (``milli::Filter::from_str`` / ``from_array`` and
``meilisearch::search::parse_filter``):

* a blank string (Rust whitespace only) is "no filter" (`None`);
* the JSON form is an array whose items are strings (AND-ed) or arrays of strings (OR-ed); every
  item's *type* is checked before any string is parsed, so a type error wins over a syntax error;
  blank strings are skipped, and a group that ends up empty disappears;
* after parsing, a condition found under 2000 nested AND/OR levels is "Too many filter conditions,
  can't process more than 2000 filters." (Meilisearch's ``token_at_depth(2000)``, which only descends
  through AND/OR; with the 200-unit recursion budget of the string parser it cannot trigger from a
  single string, but the check is kept for fidelity).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .ast import (
    And,
    Comparison,
    Contains,
    Exists,
    Foreign,
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
)
from .errors import FilterError, json_display, rust_trim
from .messages import render
from .parser import ParseFailure, parse_expression

__all__ = [
    "MAX_FILTER_CONDITIONS",
    "FilterFeatures",
    "check_condition_depth",
    "check_features",
    "fields",
    "not_filterable_message",
    "parse_filter",
    "parse_filter_value",
    "token_at_depth",
    "uses_contains",
    "uses_field",
    "uses_vectors",
]

MAX_FILTER_CONDITIONS = 2000

# Leaves that carry a field name (Meilisearch's `Condition { fid, .. }` and `In { fid, .. }`, with
# the negated forms that Meilisearch writes as `Not(...)`).
_FIELD_LEAVES = (
    Comparison,
    Range,
    In,
    NotIn,
    Exists,
    NotExists,
    IsNull,
    IsNotNull,
    IsEmpty,
    IsNotEmpty,
    Contains,
    NotContains,
    StartsWith,
    NotStartsWith,
)
# The positive conditions `token_at_depth` reports (a `Not(...)` stops it in Meilisearch).
_DEPTH_LEAVES = (Comparison, Range, Exists, IsNull, IsEmpty, Contains, StartsWith)


def parse_filter(expr: str) -> Node | None:
    """Parse the string form; `None` for a blank string; raises `FilterError`.

    Meilisearch also runs the 2000-level condition check here; it cannot fire on a parsed string
    (AND/OR nesting needs parentheses, and the 200-unit recursion budget allows at most ~50 levels),
    so it is skipped on this hot path and done only where trees are combined (`parse_filter_value`).
    """
    if not rust_trim(expr):
        return None
    try:
        return parse_expression(expr)
    except ParseFailure as failure:
        e = failure.error
        raise FilterError(render(e.kind, expr, e.start, e.end, e.arg)) from None


def _syntax_error(expected: str, found: Any) -> FilterError:
    return FilterError(
        f"Invalid syntax for the filter parameter: `expected {expected}, found: {json_display(found)}`."
    )


def parse_filter_value(value: Any) -> Node | None:
    """Parse a decoded JSON filter: a string, or an array of strings / arrays of strings."""
    if isinstance(value, str):
        return parse_filter(value)
    if not isinstance(value, list):
        raise _syntax_error("String, Array", value)
    for item in value:
        if isinstance(item, list):
            for inner in item:
                if not isinstance(inner, str):
                    raise _syntax_error("String", inner)
        elif not isinstance(item, str):
            raise _syntax_error("String, [String]", item)
    ands: list[Node] = []
    for item in value:
        if isinstance(item, str):
            node = parse_filter(item)
            if node is not None:
                ands.append(node)
            continue
        ors = [n for n in (parse_filter(s) for s in item) if n is not None]
        if len(ors) == 1:
            ands.append(ors[0])
        elif ors:
            ands.append(Or(ors))
    if not ands:
        return None
    result = ands[0] if len(ands) == 1 else And(ands)
    check_condition_depth(result)
    return result


def token_at_depth(node: Node, depth: int) -> Token | None:
    """First field token found `depth` AND/OR levels down (Meilisearch's `token_at_depth`)."""
    stack: list[tuple[Node, int]] = [(node, depth)]
    while stack:
        current, d = stack.pop()
        if isinstance(current, Or | And):
            child_depth = max(d - 1, 0)
            stack.extend((c, child_depth) for c in reversed(current.children))
        elif d == 0:
            if isinstance(current, _DEPTH_LEAVES):
                return current.field
            if isinstance(current, GeoRadius):
                return current.lat
    return None


def check_condition_depth(node: Node) -> None:
    """Meilisearch's "Too many filter conditions" check (2000 AND/OR levels), on any tree."""
    token = token_at_depth(node, MAX_FILTER_CONDITIONS)
    if token is not None:
        raise token.error(
            f"Too many filter conditions, can't process more than {MAX_FILTER_CONDITIONS} filters."
        )


def _walk(node: Node) -> Iterator[Node]:
    """Pre-order, left-to-right traversal through `Or`, `And` and `Not`."""
    stack: list[Node] = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, Or | And):
            stack.extend(reversed(current.children))
        elif isinstance(current, Not):
            stack.append(current.child)


def fields(node: Node) -> list[tuple[str, Token]]:
    """Every (field name, token) the filter reads, in order; geo and ``_vectors`` filters excluded.

    The engine checks each against the filterable attributes and reports the first failure with
    ``token.error(not_filterable_message(...))`` so the position line points at the field.
    """
    return [(n.field.value, n.field) for n in _walk(node) if isinstance(n, _FIELD_LEAVES)]


def uses_contains(node: Node) -> Token | None:
    """The first ``CONTAINS`` keyword token (``NOT CONTAINS`` included), if any."""
    for n in _walk(node):
        if isinstance(n, Contains | NotContains):
            return n.keyword
    return None


def uses_vectors(node: Node) -> Token | None:
    """The ``_vectors`` token of the first vector filter, if any."""
    for n in _walk(node):
        if isinstance(n, VectorExists):
            return n.fid
    return None


def uses_foreign(node: Node) -> Foreign | None:
    """The first ``_foreign(..)`` clause, if any (they are not looked into: they cannot nest)."""
    for n in _walk(node):
        if isinstance(n, Foreign):
            return n
    return None


def reject_foreign(node: Node | None) -> None:
    """The routes that filter one index only (document fetch, deletion, edition, export) refuse
    ``_foreign(..)`` clauses, as Meilisearch's ``parse_local_index_filter`` does."""
    foreign = None if node is None else uses_foreign(node)
    if foreign is not None:
        raise foreign.error(foreign.field, "Filter condition `_foreign` is not supported for this endpoint.")


def uses_field(node: Node, name: str) -> Token | None:
    """The first field token equal to `name` (e.g. ``_shard``), if any."""
    for n in _walk(node):
        if isinstance(n, _FIELD_LEAVES) and n.field.value == name:
            return n.field
    return None


@dataclass(frozen=True, slots=True)
class FilterFeatures:
    """The experimental features a filter may need (``/experimental-features`` runtime values)."""

    contains_filter: bool = False
    multimodal: bool = False
    network: bool = False
    foreign_keys: bool = False


def _feature_message(action: str, feature: str, link: str) -> str:
    return f"{action} requires enabling the `{feature}` experimental feature. See {link}"


def _inside_clauses(node: Node, find: Callable[[Node], Token | None]) -> Callable[..., FilterError] | None:
    """`find` over the filter, then inside its `_foreign(..)` clauses (Meilisearch's feature checks look
    into them): how to build the error at the token found, or None."""
    token = find(node)
    if token is not None:
        return token.error
    for clause in _walk(node):
        if isinstance(clause, Foreign):
            inner = find(clause.filter)
            if inner is not None:
                return lambda message, *, feature=None, c=clause, t=inner: c.error(
                    t, message, feature=feature
                )
    return None


def check_features(node: Node | None, features: FilterFeatures) -> None:
    """Reject constructs whose experimental feature is off, in Meilisearch's order.

    Raises `FilterError` with `feature` set (``containsFilter``, ``foreignKeys``, ``network``, ``multimodal``); the
    caller answers ``feature_not_enabled``.
    """
    if node is None:
        return
    if not features.contains_filter:
        found = _inside_clauses(node, uses_contains)
        if found is not None:
            raise found(
                _feature_message(
                    "Using `CONTAINS` in a filter",
                    "contains filter",
                    "https://github.com/orgs/meilisearch/discussions/763",
                ),
                feature="containsFilter",
            )
    foreign = uses_foreign(node)
    if foreign is not None and not features.foreign_keys:
        raise foreign.error(
            foreign.field,
            _feature_message(
                "using a foreign filter",
                "foreign_keys",
                "https://github.com/orgs/meilisearch/discussions/873",
            ),
            feature="foreignKeys",
        )
    token = uses_field(node, "_shard")
    if token is not None and not features.network:
        raise token.error(
            _feature_message(
                "using a shard filter", "network", "https://github.com/orgs/meilisearch/discussions/805"
            ),
            feature="network",
        )
    if not features.multimodal:
        found = _inside_clauses(node, uses_vectors)
        if found is not None:
            raise found(
                _feature_message(
                    "using a vector filter",
                    "multimodal",
                    "https://github.com/orgs/meilisearch/discussions/846",
                ),
                feature="multimodal",
            )


def not_filterable_message(attribute: str, patterns: Any) -> str:
    """Milli's "Attribute `x` is not filterable." text (patterns deduplicated and sorted)."""
    message = f"Attribute `{attribute}` is not filterable."
    unique = sorted(set(patterns))
    if not unique:
        return message + " This index does not have configured filterable attributes."
    return (
        message + " Available filterable attribute patterns are: " + ", ".join(f"`{p}`" for p in unique) + "."
    )
