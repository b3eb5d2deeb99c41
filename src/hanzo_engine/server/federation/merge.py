"""Ordering results across the queries of a federated search.

- `RankingRules` is Meilisearch's `search/ranking_rules.rs`: the rules a query really applies once
  canonicalized (a placeholder search drops the relevancy rules, `sort` without `query.sort` is dropped,
  `words` is prepended before the first relevancy rule unless `matchingStrategy` is `all`, duplicates
  go), with the notes Meilisearch prints about it, and `incompatibility` the error of two queries whose
  coalesced rules differ in kind at the same position (relevancy against sort, opposite directions...).
- `Ranked`/`compare`/`merge_ranked` are Meilisearch's `WeightedScoreValue` comparison: consecutive
  relevancy rules fold into one score × weight, custom `field:asc|desc` rules (and `query.sort`) compare
  the documents' values; when two values cannot be compared, the side with more remaining values wins,
  else the weighted global score decides; ties go to the lower query position. A relevancy group is the
  engine's `_rankingScore` when the rules hold a single group (always so without custom rules between
  relevancy rules); otherwise it is folded from the per-rule scores of the ranking details.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.search import SortCriterion

# -------------------------------------------------------------------------------------------------
# Ranking-rule canonicalization and compatibility (Meilisearch's `search/ranking_rules.rs`)
# -------------------------------------------------------------------------------------------------

RELEVANCY_RULES: Final = frozenset(
    {"words", "typo", "proximity", "attribute", "attributeRank", "wordPosition", "exactness", "bm25"}
)
_KIND_TEXT: Final = {
    "relevancy": "relevancy",
    "asc": "ascending sort",
    "desc": "descending sort",
    "geoAsc": "ascending geo sort",
    "geoDesc": "descending geo sort",
}
Source = tuple[Any, ...]  # ("criterion", i) | ("coalesced", begin, end) | ("sort", criterion, sort_index)


def _sort_name(criterion: SortCriterion) -> str:
    direction = "asc" if criterion.ascending else "desc"
    return f"{criterion.field}:{direction}" if criterion.field is not None else f"_geo(..):{direction}"


class RankingRules:
    """The ranking rules a query really applies, and the notes on what canonicalization removed."""

    def __init__(
        self, criteria: list[str], sort: list[SortCriterion] | None, strategy: str, keyword: bool
    ) -> None:
        self.source_criteria, self.source_sort = criteria, sort
        self.criteria: list[str] = []
        self.sort: list[SortCriterion] | None = None
        self.actions: list[tuple[Any, ...]] = []
        seen: dict[str, Source] = {}  # rule or sorted field -> where it was kept
        words: Source | bool | None = False  # False: not seen; None: prepended; else where it was kept
        for i, rule in enumerate(criteria):
            src: Source = ("criterion", i)
            if rule in RELEVANCY_RULES:
                if not keyword:
                    self.actions.append(("placeholder", src))
                    continue
                if rule == "words":
                    if strategy == "all":
                        self.actions.append(("words", "`query.matchingWords` is set to `all`", src))
                    elif words is False:
                        words = src
                        self.criteria.append(rule)
                    elif words is None:
                        self.actions.append(("words", "it was previously prepended", src))
                    else:
                        self.actions.append(("duplicate", words, src))
                    continue
                if strategy != "all" and words is False:
                    self.actions.append(("prepended", src))
                    self.criteria.append("words")
                    words = None
                if rule in seen:
                    self.actions.append(("duplicate", seen[rule], src))
                else:
                    seen[rule] = src
                    self.criteria.append(rule)
            elif rule == "sort":
                if "sort" in seen:
                    self.actions.append(("duplicate", seen["sort"], src))
                elif sort:
                    seen["sort"] = src
                    self.criteria.append(rule)
                    self.sort = self._canonical_sort(sort, i, seen)
                else:
                    self.actions.append(("removed_sort", src))
            else:
                field = rule.rpartition(":")[0]
                if field in seen:
                    self.actions.append(("duplicate", seen[field], src))
                else:
                    seen[field] = src
                    self.criteria.append(rule)

    def _canonical_sort(
        self,
        sort: list[SortCriterion],
        criterion: int,
        seen: dict[str, Source],
    ) -> list[SortCriterion]:
        out = []
        for j, item in enumerate(sort):
            key = item.field if item.field is not None else "\0geo"
            src: Source = ("sort", criterion, j)
            if key in seen:
                self.actions.append(("duplicate", seen[key], src))
            else:
                seen[key] = src
                out.append(item)
        return out

    def rules(self) -> list[tuple[str, Source]]:
        """(kind, source) of each canonical rule, consecutive relevancy rules coalesced."""
        out: list[tuple[str, Source]] = []
        for i, rule in enumerate(self.criteria):
            if rule == "sort":
                for j, item in enumerate(self.sort or []):
                    geo = "geo" if item.field is None else ""
                    direction = "Asc" if item.ascending else "Desc"
                    out.append((f"{geo}{direction}" if geo else direction.lower(), ("sort", i, j)))
                continue
            if rule in RELEVANCY_RULES:
                if out and out[-1][0] == "relevancy":
                    out[-1] = ("relevancy", ("coalesced", out[-1][1][1], i))
                else:
                    out.append(("relevancy", ("criterion", i)))
                continue
            field, _, direction = rule.rpartition(":")
            geo = "geo" + direction.capitalize() if field == "_geo" else direction
            out.append((geo, ("criterion", i)))
        return out

    def describe(self, kind: str, src: Source, query_index: int, uid: str) -> str:
        if src[0] == "sort":
            item = (self.sort or [])[src[2]]
            names = f"on field `{item.field}`" if item.field is not None else "default"
            where = f"`queries[{query_index}].sort[{src[2]}]`, `{uid}.rankingRules[{src[1]}]`"
        elif src[0] == "coalesced":
            names = ", ".join(self.criteria[src[1] : src[2] + 1]) or "default"
            where = f"`queries[{query_index}]`, `{uid}.rankingRules[{src[1]}..={src[2]}]`"
        else:
            names = self.criteria[src[1]]
            where = f"`queries[{query_index}]`, `{uid}.rankingRules[{src[1]}]`"
        return f"{where}: {_KIND_TEXT[kind]} rule(s) {names}"

    def _name(self, src: Source) -> str:
        if src[0] == "sort":
            return _sort_name((self.source_sort or [])[src[2]])
        return self.source_criteria[src[1]]

    @staticmethod
    def _position(src: Source) -> str:
        if src[0] == "sort":
            return f"#{src[2]} in `query.sort` (as `sort` is #{src[1]} in ranking rules)"
        return f"#{src[1]} in ranking rules"

    def notes(self) -> str:
        lines = []
        for n, action in enumerate(self.actions, start=1):
            kind, pos = action[0], self._position(action[-1])
            if kind == "prepended":
                lines.append(
                    f"    {n}. Prepended rule `words` before first relevancy rule `{self._name(action[1])}` "
                    f"at position {pos}\n"
                )
            elif kind == "duplicate":
                lines.append(
                    f"    {n}. Removed duplicate rule `{self._name(action[1])}` at position {pos} as it "
                    f"already appears at position {self._position(action[1])}\n"
                )
            elif kind == "words":
                lines.append(f"    {n}. Removed rule `words` at position {pos} because {action[1]}\n")
            elif kind == "placeholder":
                lines.append(
                    f"    {n}. Removed relevancy rule `{self._name(action[1])}` at position {pos} because "
                    'the query is a placeholder search (`q`: "")\n'
                )
            else:  # Meilisearch indents this note with three spaces
                lines.append(f"   {n}. Removed rule `sort` at position {pos} because `query.sort` is empty\n")
        return "".join(lines)


def _reason(previous: str, current: str) -> str:
    kinds = {previous, current}
    if "relevancy" in kinds:
        other = (kinds - {"relevancy"}).pop()
        return "cannot compare a relevancy rule with a " + (
            "geosort rule" if other.startswith("geo") else "sort rule"
        )
    if kinds in ({"asc", "desc"}, {"geoAsc", "geoDesc"}):
        return f"cannot compare two {'geosort' if 'geoAsc' in kinds else 'sort'} rules in opposite directions"
    return "cannot compare a sort rule with a geosort rule"


def incompatibility(
    current: RankingRules,
    query_index: int,
    uid: str,
    previous: RankingRules,
    previous_index: int,
    previous_uid: str,
) -> MeiliError | None:
    for (kind, src), (prev_kind, prev_src) in zip(current.rules(), previous.rules(), strict=False):
        if kind == prev_kind:
            continue
        message = (
            f"The results of queries #{previous_index} and #{query_index} are incompatible: \n"
            f"  1. {previous.describe(prev_kind, prev_src, previous_index, previous_uid)}\n"
            f"  2. {current.describe(kind, src, query_index, uid)}\n  - {_reason(prev_kind, kind)}\n"
        )
        if previous.actions:
            message += (
                f"  - note: The ranking rules of query #{previous_index} were modified during "
                f"canonicalization:\n{previous.notes()}"
            )
        if current.actions:
            message += (
                f"  - note: The ranking rules of query #{query_index} were modified during "
                f"canonicalization:\n{current.notes()}"
            )
        return MeiliError("invalid_multi_search_query_ranking_rules", message)
    return None


# -------------------------------------------------------------------------------------------------
# Weighted score comparison
# -------------------------------------------------------------------------------------------------


@dataclass
class Ranked:
    """A hit's ranking: ("score", weighted) or ("sort", ascending, value) values, global score, position."""

    values: list[tuple[Any, ...]]
    weighted: float
    query_index: int


def sort_value_order(ascending: bool, left: Any, right: Any) -> int:
    """milli's `compare_sort_values`: > 0 when `left` ranks first (numbers before strings, null last)."""
    if left is None or right is None:
        return (left is not None) - (right is not None)
    left_num = isinstance(left, (int, float)) and not isinstance(left, bool)
    right_num = isinstance(right, (int, float)) and not isinstance(right, bool)
    if left_num and isinstance(right, str):
        return 1
    if right_num and isinstance(left, str):
        return -1
    if isinstance(left, str) and isinstance(right, str):
        left, right = left.lower(), right.lower()  # the engine sorts strings case-insensitively
    elif not (left_num and right_num):
        return 0  # booleans, arrays, objects: equal, as in milli
    order = int((left > right) - (left < right))
    return -order if ascending else order


def _value_order(left: tuple[Any, ...], right: tuple[Any, ...]) -> int | None:
    if left[0] == "score" and right[0] == "score":
        return int((left[1] > right[1]) - (left[1] < right[1]))
    if left[0] == "sort" and right[0] == "sort" and left[1] == right[1]:
        return sort_value_order(left[1], left[2], right[2])
    return None


def compare(left: Ranked, right: Ranked) -> int:
    """> 0 when `left` ranks before `right` (Meilisearch's `weighted_scores::compare`)."""
    lv, rv = left.values, right.values
    for i in range(max(len(lv), len(rv))):
        if i >= len(lv) or i >= len(rv):
            return 1 if i < len(lv) else -1
        order = _value_order(lv[i], rv[i])
        if order is None:
            remaining = (len(lv) - i) - (len(rv) - i)
            if remaining:
                return 1 if remaining > 0 else -1
            return (left.weighted > right.weighted) - (left.weighted < right.weighted)
        if order:
            return order
    return 0


class _First:
    """Heap key: `a < b` when `a` ranks first; ties go to the lower query position."""

    __slots__ = ("ranked",)

    def __init__(self, item: tuple[Ranked, Any]) -> None:
        self.ranked = item[0]

    def __lt__(self, other: _First) -> bool:
        order = compare(self.ranked, other.ranked)
        return order > 0 or (order == 0 and self.ranked.query_index < other.ranked.query_index)


def merge_ranked(lists: Iterable[list[tuple[Ranked, Any]]]) -> Iterator[tuple[Ranked, Any]]:
    """k-way merge of lists already in rank order (each list's own order is kept)."""
    return heapq.merge(*lists, key=_First)


def _lookup(document: dict[str, Any], path: str) -> Any:
    value: Any = document
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _fold(details: dict[str, Any], rules: list[str]) -> float:
    """Mixed-radix fold of the rules' (rank, max rank), recovered from their detail scores."""
    rank, maximum = 1, 1
    for rule in rules:
        score = Fraction((details.get(rule) or {}).get("score", 1.0)).limit_denominator(10_000)
        r, m = score.numerator, score.denominator
        if r == 0:
            r, m = 0, max(m, 1)
        rank, maximum = (rank - 1) * m + r, maximum * m
    return rank / maximum if maximum else 1.0


def ranked(
    rules: RankingRules,
    document: dict[str, Any],
    score: float,
    details: dict[str, Any],
    weight: float,
    query_index: int,
) -> Ranked:
    groups = rules.rules()
    relevancy_groups = sum(1 for kind, _ in groups if kind == "relevancy")
    values: list[tuple[Any, ...]] = []
    first_score: float | None = None
    for kind, src in groups:
        if kind == "relevancy":
            if relevancy_groups == 1:
                value = score
            else:
                value = _fold(
                    details, rules.criteria[src[1] : (src[2] if src[0] == "coalesced" else src[1]) + 1]
                )
            first_score = value if first_score is None else first_score
            values.append(("score", value * weight))
        elif src[0] == "sort":
            item = (rules.sort or [])[src[2]]
            values.append(("sort", item.ascending, _lookup(document, item.field or "_geo")))
        else:
            field, _, direction = rules.criteria[src[1]].rpartition(":")
            values.append(("sort", direction == "asc", _lookup(document, field)))
    return Ranked(values, (score if first_score is None else first_score) * weight, query_index)
