"""Dynamic search rules applied to a search: which rules fire, and their pins placed in the ranking.

A rule fires when it is active, now is within its `conditions.time` bounds, and its `conditions.query`
matches the request's `q` (`isEmpty`: whether `q` has words; `words`: every word of the rule is among
the first 10 distinct words of `q`), and its `conditions.filter.values` hold for the request's filter: each
scalar is a constraint `attribute = value`, and one AND-branch of the filter (its ORs expanded) must hold,
for every constraint, a condition on that attribute that the value satisfies (`=`, `!=`, `IN`, `NOT IN`,
comparisons and ranges; strings compared case-insensitively; other operators never satisfy). A rule with
filter constraints never fires on a search without a filter.

Each firing rule's `pin` actions select a document by external id (a selector naming another index is
skipped). Rules are taken by ascending `precedence` (rules without one last); a document pinned twice keeps
its first pin. A pinned document must pass the request's filter, not its query. It leaves the organic
ranking and takes its 0-based absolute `position`; pins beyond the organic results follow the last organic
hit in position order. Pins count in the totals and in the facet distribution.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Final

from pyroaring import BitMap

from hanzo_engine.engine.index import IndexReader, now_ns
from hanzo_engine.engine.search.types import SearchResult
from hanzo_engine.filter_parser import parse_filter_value
from hanzo_engine.filter_parser.ast import And, Comparison, In, Node, Not, NotIn, Or, Range, negate

MAX_RULES: Final = 1000
MAX_PINS: Final = 100
MAX_QUERY_WORDS: Final = 10
MAX_BRANCHES: Final = 256  # AND-branches of a request filter considered (its ORs expanded)
_WORD_RE: Final = re.compile(r"\w+")


@dataclass(frozen=True)
class Pin:
    docid: int
    position: int


def _words(text: str | None) -> list[str]:
    return [w.casefold() for w in _WORD_RE.findall(text or "")]


def _time_ok(conditions: dict[str, Any], now: int) -> bool:
    time = conditions.get("time") or {}
    start, end = time.get("start"), time.get("end")
    return (start is None or start["ns"] <= now) and (end is None or now <= end["ns"])


def _query_ok(conditions: dict[str, Any], q_words: list[str]) -> bool:
    query = conditions.get("query") or {}
    is_empty = query.get("isEmpty")
    if is_empty is not None and is_empty != (not q_words):
        return False
    words = query.get("words")
    if words is not None:
        wanted = set(_words(words))
        distinct = list(dict.fromkeys(q_words))[:MAX_QUERY_WORDS]
        if not wanted or not wanted.issubset(distinct):
            return False
    return True


# -- filter conditions ---------------------------------------------------------------------------------


def _branches(node: Node) -> list[list[Node]]:
    """The AND-branches of `node` (disjunctive normal form, at most MAX_BRANCHES)."""
    if isinstance(node, Or):
        out: list[list[Node]] = []
        for child in node.children:
            out.extend(_branches(child))
        return out[:MAX_BRANCHES]
    if isinstance(node, And):
        acc: list[list[Node]] = [[]]
        for child in node.children:
            acc = [[*a, *b] for a in acc for b in _branches(child)][:MAX_BRANCHES]
        return acc
    if isinstance(node, Not) and not isinstance(node.child, (And, Or, Not)):
        negated = negate(node.child)
        return [[negated]] if not isinstance(negated, Not) else [[]]
    return [[node]]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _equal(value: Any, text: str) -> bool:
    if isinstance(value, bool):
        return str(value).lower() == text.casefold()
    if isinstance(value, (int, float)):
        number = _number(text)
        return number is not None and number == value
    return isinstance(value, str) and value.casefold() == text.casefold()


def _satisfies(value: Any, node: Node) -> bool:
    if isinstance(node, Comparison):
        if node.op == "=":
            return _equal(value, node.value.value)
        if node.op == "!=":
            return not _equal(value, node.value.value)
        bound = _number(node.value.value)
        if bound is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return {">": value > bound, ">=": value >= bound, "<": value < bound, "<=": value <= bound}.get(
            node.op, False
        )
    if isinstance(node, Range):
        low, high = _number(node.low.value), _number(node.high.value)
        return (
            low is not None
            and high is not None
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
            and low <= value <= high
        )
    if isinstance(node, In):
        return any(_equal(value, token.value) for token in node.values)
    if isinstance(node, NotIn):
        return not any(_equal(value, token.value) for token in node.values)
    return False


def _constraints(values: dict[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for attribute, value in values.items():
        for scalar in value if isinstance(value, list) else [value]:
            if scalar is not None:
                out.append((attribute, scalar))
    return out


def _filter_ok(conditions: dict[str, Any], branches: list[list[Node]] | None) -> bool:
    constraints = _constraints((conditions.get("filter") or {}).get("values") or {})
    if not constraints:
        return True
    if not branches:
        return False
    for branch in branches:
        if all(
            any(
                getattr(getattr(node, "field", None), "value", None) == attribute and _satisfies(value, node)
                for node in branch
            )
            for attribute, value in constraints
        ):
            return True
    return False


def _request_branches(filter_value: Any) -> list[list[Node]] | None:
    if filter_value is None:
        return None
    node = parse_filter_value(filter_value)  # already validated by the search
    return None if node is None else _branches(node)


def firing_rules(
    rules: list[dict[str, Any]], q: str | None, filter_value: Any = None
) -> list[dict[str, Any]]:
    """The rules that apply to a search with query `q` and filter `filter_value`, in precedence order."""
    now = now_ns()
    q_words = _words(q)
    branches: list[list[Node]] | None = None
    parsed = False
    out = []
    for rule in rules[:MAX_RULES]:
        conditions = rule.get("conditions") or {}
        if (
            not rule.get("active", True)
            or not _time_ok(conditions, now)
            or not _query_ok(conditions, q_words)
        ):
            continue
        if (conditions.get("filter") or {}).get("values"):
            if not parsed:
                branches, parsed = _request_branches(filter_value), True
            if not _filter_ok(conditions, branches):
                continue
        out.append(rule)
    out.sort(key=lambda r: (r.get("precedence") is None, r.get("precedence") or 0))
    return out


def plan_pins(
    reader: IndexReader,
    uid: str,
    rules: list[dict[str, Any]],
    q: str | None,
    universe: BitMap | None,
    filter_value: Any = None,
) -> list[Pin]:
    """The pins of the firing rules for a search on `uid`, in position order."""
    pins: list[Pin] = []
    seen: set[int] = set()
    for rule in firing_rules(rules, q, filter_value):
        for action in rule.get("actions") or []:
            selector = action.get("selector") or {}
            if selector.get("indexUid") not in (None, uid):
                continue
            docid = reader.internal_id(str(selector.get("id")))
            if docid is None or docid in seen or (universe is not None and docid not in universe):
                continue
            seen.add(docid)
            pins.append(Pin(docid, int((action.get("action") or {}).get("position", 0))))
            if len(pins) >= MAX_PINS:
                break
    pins.sort(key=lambda p: p.position)  # stable: equal positions keep the precedence order
    return pins


def apply_pins(result: SearchResult, pins: list[Pin], offset: int, limit: int) -> SearchResult:
    """The page `[offset, offset + limit)` of `result` (ranked from 0) with `pins` placed; totals grown by
    the pinned documents the query did not match."""
    pinned = {p.docid for p in pins}
    matched = result.all_candidates if result.all_candidates is not None else BitMap(result.docids)
    organic = [
        (d, s, det)
        for d, s, det in zip(result.docids, result.scores, result.details, strict=True)
        if d not in pinned
    ]
    ranked: list[tuple[int, float, dict[str, Any]]] = []
    pending = list(pins)
    while pending or organic:
        if pending and (pending[0].position <= len(ranked) or not organic):
            pin = pending.pop(0)
            ranked.append((pin.docid, 1.0, {"pin": {"order": 0, "position": pin.position}}))
        else:
            ranked.append(organic.pop(0))
    page = ranked[offset : offset + limit]
    extra = sum(1 for d in pinned if d not in matched)
    all_candidates = result.all_candidates
    if all_candidates is not None:
        all_candidates = BitMap(all_candidates) | BitMap(pinned)
    return dataclasses.replace(
        result,
        docids=[d for d, _, _ in page],
        scores=[s for _, s, _ in page],
        details=[det for _, _, det in page],
        candidates=result.candidates + extra,
        all_candidates=all_candidates,
    )
