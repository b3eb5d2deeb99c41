"""The engine's search vocabulary: what a search asks for and what it returns (no HTTP here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

MatchingStrategy = Literal["last", "all", "frequency"]


@dataclass(frozen=True)
class SearchRequest:
    """A keyword search as the engine runs it. `offset`/`limit` are already capped by maxTotalHits."""

    q: str | None = None
    offset: int = 0
    limit: int = 20
    matching_strategy: MatchingStrategy = "last"
    attributes_to_search_on: list[str] | None = None
    ranking_score_threshold: float | None = None
    exhaustive_count: bool = False  # page mode: `totalHits` must be exact
    locales: list[str] | None = None
    # documents the `filter` selects (a pyroaring BitMap; None: every document)
    filter_universe: Any = None
    # `sorting.Ordering`: the request's `sort`, custom sort rules and `distinct` (None: none of them)
    ordering: Any = None
    # whether the caller reads the hits' ranking scores and details (`_rankingScore`, hybrid or
    # federated merging, pins); when not, the bucket sort only orders the hits and leaves them out
    scores_needed: bool = True
    # whether the caller highlights, crops or shows `_matchesPosition` (`SearchResult.matching`);
    # when not, the query's matching words are left empty
    matching_needed: bool = True


@dataclass
class MatchingWords:
    """What the query matched, for highlighting, cropping and `_matchesPosition`.

    `words` maps a normalized document word to True when the whole word matched (exact or typo);
    `prefixes` holds normalized query prefixes (the last query word when it is a prefix), of which a
    document word matches its first `len(prefix)` characters. `phrases` are sequences of normalized
    words that must appear consecutively to count.
    """

    words: set[str] = field(default_factory=set)
    prefixes: list[str] = field(default_factory=list)
    phrases: list[list[str]] = field(default_factory=list)
    # normalized word | prefix | " ".join(phrase) -> (first, last) query word position it stands for
    ids: dict[str, tuple[int, int]] = field(default_factory=dict)

    def match_length(self, word: str) -> int | None:
        """Characters of the normalized `word` that match the query (None: no match)."""
        if word in self.words:
            return len(word)
        best = None
        for prefix in self.prefixes:
            if word.startswith(prefix) and (best is None or len(prefix) > best):
                best = len(prefix)
        return best


@dataclass
class SearchResult:
    """The ranked page. `docids[i]` has `scores[i]` and `details[i]` (rule name -> detail object,
    in ranking-rule order, shaped as Meilisearch's `_rankingScoreDetails`)."""

    docids: list[int]
    scores: list[float]
    details: list[dict[str, Any]]
    candidates: int  # number of matching documents (estimatedTotalHits / totalHits before capping)
    matching: MatchingWords
    degraded: bool = False
    # every matching document (a BitMap, distinct exclusions removed): what facets are counted on
    all_candidates: Any = None
