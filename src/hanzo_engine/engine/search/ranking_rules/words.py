"""The `words` rule (milli's `words.rs`): documents bucketed by how many query terms the matching
strategy had to remove before they matched.

Step k removes the first k removal groups (`QueryGraph.groups`); a document belongs to the first
step it matches. Its rank is `max - k`, where max counts the words of phrases. Bitmaps only: no
per-document cost and no native block.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyroaring import BitMap

from ..query_graph import Path, QueryGraph
from ..score_details import RuleScore
from . import typo


@dataclass
class Step:
    """A words bucket: the documents first matched with `k` removal groups removed."""

    k: int
    docids: BitMap
    paths: list[Path]
    removed: set[int]
    max_typo: int = 0  # the typo rule's maximum over the step's paths


def max_rank(graph: QueryGraph, groups: list[set[int]]) -> int:
    """The rank of a document matching every term: 1 + the words phrases add + the removable groups."""
    return 1 + max(graph.phrase_words - 1, 0) + len(groups)


def steps(graph: QueryGraph, groups: list[set[int]], universe: BitMap) -> list[Step]:
    """The words buckets of `universe`, fewest terms removed first (empty steps left out)."""
    out: list[Step] = []
    seen = BitMap()
    removed: set[int] = set()
    for k in range(len(groups) + 1):
        if k:
            removed = removed | groups[k - 1]
        docs = BitMap()
        good: list[Path] = []
        for path in graph.paths(removed):
            part = graph.path_docids(path) & universe
            part -= seen
            if part:
                docs |= part
                good.append(path)
        if docs:
            seen |= docs
            step = Step(k, docs, good, set(removed))
            step.max_typo = max(typo.max_cost(graph, p) for p in good)
            out.append(step)
    return out


def details(matching: int, maximum: int) -> RuleScore:
    detail = {"matchingWords": matching, "maxMatchingWords": maximum, "score": matching / maximum}
    return detail, ((matching, maximum),), (-matching,)
