"""The bm25-first ranking mode: a disjunctive (OR) query ranked by BM25 over every query word.

When `bm25` is the first ranking rule, the words rule (documents containing particular query words)
would discard most of what BM25 is good at on long, natural-language queries. In this mode:

- the candidates are the documents matching ANY single-term node of the query (each node's
  derivations: exact word, prefix expansions, synonyms, typo words; `bm25_candidates`);
- every candidate is scored with BM25 over all the query's terms (`bm25_rank`), exactly as
  `ranking_rules.bm25.score` scores a document (k1 1.2, b 0.75, per-field lengths, idf from the
  node's docids), each term weighted by its query-term frequency: the query is parsed into distinct
  terms (`query.parse_query(distinct=True)`, up to `query.MAX_TERMS_BM25` = 1,024) and a term the
  query repeats counts `qtf * idf`, as bm25s and SQLite FTS5 compute by summing a repeated word once
  per occurrence;
- the query graph has no ngram nodes and no split-word derivations in this mode
  (`derivations.build_nodes(ngrams=False, splits=False)`): BM25 sums over the query's words, so a
  long question neither resolves ngrams it would never use nor scans documents for the adjacent
  halves of each long word (a split is a phrase: its documents would be rescored in Python);
- the hits are ordered by raw BM25 (so also by its level, `ranking_rules.bm25.LEVELS`), then docid.

The candidates' forward entries are scored natively (`ranking_rules.bm25.BM25Scorer`); the top
`want` come from `numpy.partition`, and MaxScore pruning (`pruned`) skips the documents that match
only terms too common to reach the top `want`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pyroaring import BitMap

from .context import SearchContext
from .query_graph import Node
from .ranking_rules.bm25 import K1, BM25Scorer, terms

MIN_BATCH = 256  # MaxScore: fewest documents scored at once past the first `want` (`pruned`)


def bm25_candidates(ctx: SearchContext, nodes: list[Node], universe: BitMap) -> BitMap:
    """Documents of `universe` matching at least one of the term nodes (any derivation, any typo level)."""
    del ctx  # the nodes already hold their docids (restricted to the searched fields)
    single = terms(nodes)
    if not single:
        return BitMap()
    return BitMap.union(*(n.docids for n in single)) & universe


def _worded_fields(ctx: SearchContext) -> int:
    """How many searched fields hold at least one word in some document (the field statistics count
    every field's words; without statistics, every searched field): the most fields a term occurs in."""
    if not ctx.stats:
        return max(len(ctx.searched), 1)
    return max(sum(1 for f in ctx.searched if ctx.stats.get(f, (0, 0))[1] > 0), 1)


def pruned(scorer: BM25Scorer, candidates: BitMap, want: int) -> tuple[np.ndarray, np.ndarray]:
    """(docids, raw BM25) of a subset of `candidates` holding their top `want` (MaxScore).

    A term adds less than qtf * idf (`scorer.idf`) * (k1 + 1) per field it occurs in, so at most `ub`
    = that times the number of searched fields holding any word (`_worded_fields`) to any score.
    The terms are taken by decreasing `ub` (the rarest first) and the not yet scored documents of
    each are scored (in batches of at least `want`, then of `MIN_BATCH`); `theta`, the want-th best
    score so far, only grows. Once the bounds of the terms left sum to at most `theta`, a document
    matching only those scores below `theta` and cannot make the top `want`: the rest is skipped.
    """
    nodes = scorer.terms
    if want <= 0 or not nodes:
        return scorer.score(BitMap())
    ub = scorer.idf * (K1 + 1) * _worded_fields(scorer.ctx)
    order = np.argsort(-ub, kind="stable")
    left = [0.0] * (len(order) + 1)  # left[i]: the bounds of order[i:], summed from the smallest
    for i in range(len(order) - 1, -1, -1):
        left[i] = left[i + 1] + float(ub[order[i]])
    ids: list[np.ndarray] = []
    scores: list[np.ndarray] = []
    scored = BitMap()
    pending = BitMap()
    theta = -math.inf

    def flush() -> None:
        nonlocal pending, theta
        got_ids, got = scorer.score(pending)
        ids.append(got_ids)
        scores.append(got)
        scored.update(pending)
        pending = BitMap()
        if len(scored) >= want:
            every = np.concatenate(scores) if len(scores) > 1 else scores[0]
            theta = float(np.partition(every, len(every) - want)[len(every) - want])

    for i, t in enumerate(order):
        if left[i] <= theta:
            break
        pending |= (nodes[t].docids & candidates) - scored
        if len(pending) >= (want - len(scored) if len(scored) < want else MIN_BATCH):
            flush()
    if pending:
        flush()
    if not ids:
        return scorer.score(BitMap())
    return np.concatenate(ids), np.concatenate(scores)


def bm25_scores_of(
    ctx: SearchContext, nodes: list[Node], candidates: BitMap, qtf: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(docids, raw BM25) of every candidate, in docid order."""
    return BM25Scorer(ctx, nodes, qtf).score(candidates)


def bm25_rank(
    ctx: SearchContext, nodes: list[Node], candidates: BitMap, want: int, qtf: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    """The top `want` candidates as (docid, raw BM25), best first (ties: smaller docid first)."""
    docids, scores = pruned(BM25Scorer(ctx, nodes, qtf), candidates, want)
    return top(docids, scores, want)


def top(docids: np.ndarray, scores: np.ndarray, want: int) -> list[tuple[int, float]]:
    """The `want` best (docid, score): score descending, then docid ascending."""
    if want <= 0 or not len(docids):
        return []
    if want < len(docids):
        # everything scoring at least the want-th best score, so ties at the cut are kept whole
        kth = np.partition(scores, len(scores) - want)[len(scores) - want]
        keep = np.nonzero(scores >= kth)[0]
        docids, scores = docids[keep], scores[keep]
    order = np.lexsort((docids, -scores))[:want]
    return [(int(docids[i]), float(scores[i])) for i in order]


def bm25_first_page(
    ctx: SearchContext,
    nodes: list[Node],
    universe: BitMap,
    offset: int,
    limit: int,
    threshold: float | None,
    levels: int,
    half: float,
    qtf: Sequence[int] | None = None,
) -> tuple[list[int], list[float], list[dict[str, Any]], BitMap]:
    """The page of the bm25-first mode: (docids, ranking scores, score details, candidates).
    `qtf[i]`: the query-term frequency of query term i (`ParsedQuery.terms[i].count`).

    The ranking score is the BM25 level `1 + round(norm * (levels - 1))` over `levels`, with
    norm = raw / (raw + half), as the `bm25` rule scores; candidates below `threshold` are dropped.
    """
    single = terms(nodes)
    candidates = bm25_candidates(ctx, single, universe)
    scorer = BM25Scorer(ctx, single, qtf)
    # with a score threshold every candidate is scored: those below it are not candidates
    if threshold is None:
        docids, raw = pruned(scorer, candidates, offset + limit)
    else:
        docids, raw = scorer.score(candidates)
    by_id = np.argsort(docids, kind="stable")  # `top` breaks ties by position: docid order
    docids, raw = docids[by_id], raw[by_id]
    norm = raw / (raw + half)
    rank = 1 + np.rint(norm * (levels - 1))
    score = rank / levels
    if threshold is not None:
        keep = score >= threshold
        if not keep.all():
            candidates = BitMap(docids[keep].tolist())
            docids, raw, norm, score = docids[keep], raw[keep], norm[keep], score[keep]
    hits = top(np.arange(len(docids), dtype=np.int64), raw, offset + limit) if len(docids) else []
    page = hits[offset:]
    out_ids = [int(docids[i]) for i, _ in page]
    out_scores = [float(score[i]) for i, _ in page]
    details = [{"bm25": {"order": 0, "value": float(raw[i]), "score": float(norm[i])}} for i, _ in page]
    return out_ids, out_scores, details, candidates
