"""What a document gets from each ranking rule once the rule's value is known: its score detail, its
rank (milli's `score_details.rs`) and its sort-key part.

Shared by the per-document ranker (`ranking.Ranker`, which computes the values in Python) and the
native bucket keys (`fast_bucket.FastBuckets.scored`, which reads them from `_native.bucket`), so
both give a hit exactly the same `_rankingScore` and `_rankingScoreDetails`.
"""

from __future__ import annotations

from typing import Any

from .engine import fold

BM25_LEVELS = 100
BM25_HALF = 5.0  # raw BM25 mapped to [0, 1) as raw / (raw + BM25_HALF)
MATCH_TYPES = {3: "exactMatch", 2: "matchesStart", 1: "noExactMatch"}


class RuleScores:
    """One document's details, ranks and sort key, filled rule after rule in pipeline order."""

    __slots__ = ("details", "key", "order", "ranks")

    def __init__(self) -> None:
        self.details: dict[str, Any] = {}
        self.ranks: list[tuple[int, int]] = []
        self.key: list[Any] = []
        self.order = 0

    def _add(self, rule: str, detail: dict[str, Any], ranks: tuple[tuple[int, int], ...],
             part: tuple[Any, ...]) -> None:
        self.details[rule] = {"order": self.order, **detail}
        self.ranks.extend(ranks)
        self.key.extend(part)
        self.order += 1

    def words(self, matching: int, maximum: int) -> None:
        self._add("words", {"matchingWords": matching, "maxMatchingWords": maximum, "score": matching / maximum},
                  ((matching, maximum),), (-matching,))

    def typo(self, typos: int, max_typos: int) -> None:
        m = max_typos + 1
        r = max(m - typos, 0)
        self._add("typo", {"typoCount": typos, "maxTypoCount": max_typos, "score": r / m}, ((r, m),), (typos,))

    def cost(self, rule: str, cost: int, top: int) -> None:
        """A rule scored by a cost in [0, top) (proximity, attributeRank, wordPosition)."""
        r = max(top - cost, 1)
        self._add(rule, {"score": r / top}, ((r, top),), (cost,))

    def attribute(self, rule: str, fid_cost: int, fid_top: int, pos_cost: int, pos_top: int) -> None:
        """The pre-1.36 `attribute` rule: attribute rank then word position."""
        fr, pr = max(fid_top - fid_cost, 1), max(pos_top - pos_cost, 1)
        ranks = ((fr, fid_top), (pr, pos_top))
        self._add(rule, {"attributeRankingOrderScore": fr / fid_top, "queryWordDistanceScore": pr / pos_top,
                         "score": fold(list(ranks))}, ranks, (fid_cost, pos_cost))

    def exactness(self, attribute_rank: int, matching: int, maximum: int) -> None:
        """`attribute_rank`: 3 exact match of a field, 2 a field starting with the query, 1 neither;
        `matching` of `maximum` query words matched by their exact word."""
        detail: dict[str, Any] = {"matchType": MATCH_TYPES[attribute_rank]}
        if attribute_rank == 1:
            detail.update(matchingWords=matching, maxMatchingWords=maximum,
                          score=fold([(1, 3), (matching + 1, maximum + 1)]))
        else:
            detail["score"] = attribute_rank / 3
        self._add("exactness", detail, ((attribute_rank, 3), (matching + 1, maximum + 1)),
                  (-attribute_rank, -matching))

    def bm25(self, raw: float) -> None:
        """The `bm25` ranking rule: raw BM25 in BM25_LEVELS buckets."""
        norm = raw / (raw + BM25_HALF)
        r = 1 + round(norm * (BM25_LEVELS - 1))
        self._add("bm25", {"value": raw, "score": norm}, ((r, BM25_LEVELS),), (-r,))

    def sort(self, key: Any, detail: dict[str, Any]) -> None:
        """A sort rule: `detail` is already keyed by its name (or its hidden name); no rank."""
        self.details.update(detail)
        self.key.append(key)
        self.order += 1

    def finish(self, raw: float, docid: int) -> tuple[tuple[Any, ...], float, dict[str, Any]]:
        """(sort key, ranking score, details) with the BM25 tie-break after every rule; the details list
        only the configured rules, as Meilisearch's do (a `bm25` entry only when `bm25` is a rule)."""
        return (*self.key, -raw, docid), fold(self.ranks), self.details
