"""The bm25-first ranking mode: a disjunctive (OR) query ranked by BM25 over every query word.

When `bm25` is the first ranking rule, the words rule (documents containing particular query words)
would discard most of what BM25 is good at on long, natural-language queries. In this mode:

- the candidates are the documents matching ANY single-term node of the query (each node's
  derivations: exact word, prefix expansions, synonyms, typo words; `bm25_candidates`);
- every candidate is scored with BM25F over all the query's terms (`bm25_rank`), exactly as
  `ranking_rules.bm25.score` scores a document (k1 1.2, b 0.75, per-field lengths and weights, idf
  from the node's docids), each term weighted by its query-term frequency: the query is parsed into distinct
  terms (`query.parse_query(distinct=True)`, up to `query.MAX_TERMS_BM25` = 1,024) and a term the
  query repeats counts `qtf * idf`, as bm25s and SQLite FTS5 compute by summing a repeated word once
  per occurrence;
- the query graph has no ngram nodes and no split-word derivations in this mode
  (`derivations.build_nodes(ngrams=False, splits=False)`): BM25 sums over the query's words, so a
  long question neither resolves ngrams it would never use nor scans documents for the adjacent
  halves of each long word (a split is a phrase: its documents would be rescored in Python);
- the hits are ordered by raw BM25 (so also by its level, `ranking_rules.bm25.LEVELS`), then docid.

The candidates' forward entries are scored natively (`ranking_rules.bm25.BM25Scorer`); the top
`want` come from `numpy.partition`. Pruning (`pruned`) skips the documents whose bound, from the terms
they contain (`doc_bounds`), is below the want-th best score found: those scoring high are scored
first, and most of a long query's candidates are never read.
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

BATCH = 64  # `pruned`: documents scored at once past the first `want`
GROWTH = 1.0  # `pruned`: a later batch holds up to GROWTH times the documents scored before it
BOUND_SLACK = 1.0 + 1e-9  # `doc_bounds`: a margin for the float sums (bounds only)


def bm25_candidates(ctx: SearchContext, nodes: list[Node], universe: BitMap) -> BitMap:
    """Documents of `universe` matching at least one of the term nodes (any derivation, any typo level)."""
    del ctx  # the nodes already hold their docids (restricted to the searched fields)
    single = terms(nodes)
    if not single:
        return BitMap()
    return BitMap.union(*(n.docids for n in single)) & universe


def doc_bounds(scorer: BM25Scorer, cand: np.ndarray) -> np.ndarray:
    """Per document of `cand` (docids), a bound its raw BM25 is strictly below: the sum of
    `unit` = qtf * idf * (k1 + 1) over the terms it contains. BM25F saturates a term once over all
    its fields (tfc / (tfc + k1) < 1), phrase-like derivations included (`ranking_rules.bm25`)."""
    unit = scorer.idf * (K1 + 1) * BOUND_SLACK
    arrays = [np.frombuffer(node.docids.to_array(), dtype=np.uint32) for node in scorer.terms]
    ids = np.concatenate(arrays) if arrays else np.empty(0, dtype=np.uint32)
    if not len(ids):
        return np.zeros(len(cand), dtype=np.float64)
    each = np.repeat(unit, [len(a) for a in arrays])
    dense = np.bincount(ids, weights=each, minlength=int(cand.max()) + 1 if len(cand) else 0)
    out: np.ndarray = dense[cand]
    return out


def pruned(scorer: BM25Scorer, candidates: BitMap, want: int) -> tuple[np.ndarray, np.ndarray]:
    """(docids, raw BM25) of a subset of `candidates` holding their top `want`.

    Every candidate gets a bound its score is strictly below (`doc_bounds`). The `want` of highest
    bound are scored first; `theta`, the want-th best score so far, only grows. Then, batch after batch
    (`BATCH`, `GROWTH`), the highest bounds among the candidates whose bound is still above `theta`.
    A candidate left has a bound at most `theta`: it scores below `theta`, so it can neither enter the
    top `want` nor tie with its last (`top` breaks ties by docid).
    """
    if want <= 0 or not scorer.terms or not candidates:
        return scorer.score(BitMap())
    cand = np.frombuffer(candidates.to_array(), dtype=np.uint32).astype(np.int64)
    if want >= len(cand) or not (scorer.idf > 0).all():  # (idf <= 0: more documents than N, no bound)
        return scorer.score(candidates)
    bound = doc_bounds(scorer, cand)
    first = np.argpartition(-bound, want - 1)[:want]  # no full sort: most bounds end below theta
    ids = [np.sort(cand[first])]
    scores = [scorer.score_ids(ids[0])]
    best = scores[0]  # the `want` best scores so far
    theta = float(best.min())
    bound[first] = -math.inf
    left = np.nonzero(bound > theta)[0]  # the candidates that may still reach theta
    done = want
    while len(left):
        size = max(BATCH, int(done * GROWTH))
        if size < len(left):  # the `size` highest bounds, in no particular order
            take = left[np.argpartition(-bound[left], size - 1)[:size]]
        else:
            take = left
        batch = np.sort(cand[take])
        bound[take] = -math.inf
        got = scorer.score_ids(batch)
        ids.append(batch)
        scores.append(got)
        done += len(batch)
        best = np.concatenate((best, got))
        best = np.partition(best, len(best) - want)[len(best) - want :]
        theta = float(best[0])
        left = left[bound[left] > theta]
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
    want = offset + limit

    def ranking_score(raw: np.ndarray) -> np.ndarray:
        return (1 + np.rint(raw / (raw + half) * (levels - 1))) / levels

    if threshold is None:
        docids, raw = pruned(scorer, candidates, want)
    else:
        # with a score threshold every candidate is scored: those below it are not candidates
        docids, raw = scorer.score(candidates)
        keep = ranking_score(raw) >= threshold
        if not keep.all():
            candidates = BitMap(docids[keep].tolist())
            docids, raw = docids[keep], raw[keep]
    hits = top(docids, raw, want)[offset:]  # ties: smaller docid first
    ids = np.array([d for d, _ in hits], dtype=np.int64)
    raw = np.array([r for _, r in hits], dtype=np.float64)
    norm = raw / (raw + half)
    score = ranking_score(raw)
    details = [
        {"bm25": {"order": 0, "value": v, "score": n}}
        for v, n in zip(raw.tolist(), norm.tolist(), strict=True)
    ]
    return ids.tolist(), score.tolist(), details, candidates
