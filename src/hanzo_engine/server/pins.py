"""Dynamic search rules applied to a search: which rules fire, and their pins placed in the ranking.

A rule fires when it is active, now is within its `conditions.time` bounds, and its `conditions.query`
matches the request's `q` (`isEmpty`: whether `q` has words; `words`: every word of the rule is among
the first 10 distinct words of `q`). Rules with `conditions.filter` constraints are not evaluated against
the request's filter here: they never fire.

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

MAX_RULES: Final = 1000
MAX_PINS: Final = 100
MAX_QUERY_WORDS: Final = 10
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


def firing_rules(rules: list[dict[str, Any]], q: str | None) -> list[dict[str, Any]]:
    """The rules that apply to a search with query `q`, in precedence order."""
    now = now_ns()
    q_words = _words(q)
    out = []
    for rule in rules[:MAX_RULES]:
        conditions = rule.get("conditions") or {}
        if not rule.get("active", True) or conditions.get("filter", {}).get("values"):
            continue
        if _time_ok(conditions, now) and _query_ok(conditions, q_words):
            out.append(rule)
    out.sort(key=lambda r: (r.get("precedence") is None, r.get("precedence") or 0))
    return out


def plan_pins(reader: IndexReader, uid: str, rules: list[dict[str, Any]], q: str | None,
              universe: BitMap | None) -> list[Pin]:
    """The pins of the firing rules for a search on `uid`, in position order."""
    pins: list[Pin] = []
    seen: set[int] = set()
    for rule in firing_rules(rules, q):
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
    organic = [(d, s, det) for d, s, det in zip(result.docids, result.scores, result.details, strict=True)
               if d not in pinned]
    ranked: list[tuple[int, float, dict[str, Any]]] = []
    pending = list(pins)
    while pending or organic:
        if pending and (pending[0].position <= len(ranked) or not organic):
            pin = pending.pop(0)
            ranked.append((pin.docid, 1.0, {"pin": {"order": 0, "position": pin.position}}))
        else:
            ranked.append(organic.pop(0))
    page = ranked[offset:offset + limit]
    extra = sum(1 for d in pinned if d not in matched)
    all_candidates = result.all_candidates
    if all_candidates is not None:
        all_candidates = BitMap(all_candidates) | BitMap(pinned)
    return dataclasses.replace(
        result, docids=[d for d, _, _ in page], scores=[s for _, s, _ in page],
        details=[det for _, _, det in page], candidates=result.candidates + extra, all_candidates=all_candidates,
    )
