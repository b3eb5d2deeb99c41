"""A document's score details, ranks and sort key, filled rule after rule (milli's
`score_details.rs`): each rule module of `ranking_rules/` turns its value into a `RuleScore`.

Shared by the per-document ranker (`bucket_sort.Ranker`, which computes the values in Python) and the
native bucket keys (`native_bucket_keys.NativeBuckets.scored`, which reads them from
`_native.bucket`), so both give a hit exactly the same `_rankingScore` and `_rankingScoreDetails`.
"""

from __future__ import annotations

from typing import Any


def fold(ranks: list[tuple[int, int]]) -> float:
    """milli's `Rank::global_score`: ranks merged like digits of a mixed-radix number."""
    rank, maximum = 1, 1
    for r, m in ranks:
        rank = max(rank - 1, 0) * m + r
        maximum *= m
    return rank / maximum if maximum else 1.0


# What one rule gives a document: (its detail without `order`, its (rank, max rank) pairs, its part
# of the sort key, smaller first). A plain tuple: six are made per scored document.
RuleScore = tuple[dict[str, Any], tuple[tuple[int, int], ...], tuple[Any, ...]]


def cost_score(cost: int, top: int) -> RuleScore:
    """A rule scored by a cost in [0, top) (proximity, attributeRank, wordPosition)."""
    r = max(top - cost, 1)
    return {"score": r / top}, ((r, top),), (cost,)


class ScoreDetails:
    """One document's details, ranks and sort key, filled rule after rule in pipeline order."""

    __slots__ = ("details", "key", "order", "ranks")

    def __init__(self) -> None:
        self.details: dict[str, Any] = {}
        self.ranks: list[tuple[int, int]] = []
        self.key: list[Any] = []
        self.order = 0

    def add(self, rule: str, score: RuleScore) -> None:
        detail, ranks, key = score
        self.details[rule] = {"order": self.order, **detail}
        self.ranks.extend(ranks)
        self.key.extend(key)
        self.order += 1

    def sort(self, key: Any, detail: dict[str, Any]) -> None:
        """A sort rule: `detail` is already keyed by its name (or its hidden name); no rank."""
        self.details.update(detail)
        self.key.append(key)
        self.order += 1

    def finish(self, raw: float, docid: int) -> tuple[tuple[Any, ...], float, dict[str, Any]]:
        """(sort key, ranking score, details) with the BM25 tie-break after every rule; the details list
        only the configured rules, as Meilisearch's do (a `bm25` entry only when `bm25` is a rule)."""
        return (*self.key, -raw, docid), fold(self.ranks), self.details
