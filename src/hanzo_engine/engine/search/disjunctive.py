"""The bm25-first ranking mode: a disjunctive (OR) query ranked by BM25 over every query word.

When `bm25` is the first ranking rule, the words rule (documents containing particular query words)
would discard most of what BM25 is good at on long, natural-language queries. In this mode:

- the candidates are the documents matching ANY single-term node of the query (each node's
  derivations: exact word, prefix expansions, synonyms, typo words; `bm25_candidates`);
- every candidate is scored with BM25 over all the query's terms (`bm25_rank`), exactly as
  `Searcher.bm25` scores a document (k1 1.2, b 0.75, per-field lengths, idf from the node's docids),
  each term weighted by its query-term frequency: the query is parsed into distinct terms
  (`query.parse_query(distinct=True)`, up to `query.MAX_TERMS_BM25` = 1,024) and a term the query
  repeats counts `qtf * idf`, which is what bm25s and SQLite FTS5 compute by summing a repeated word once
  per occurrence (tantivy's query parser keeps a repeated word once; on the labelled collections the
  qtf weighting ranks better, `benchmarks/test_relevance.py`);
- the query graph has no ngram nodes and no split-word derivations in this mode
  (`Searcher.build_nodes(ngrams=False, splits=False)`): BM25 sums over the query's words, so a 75-word
  question neither resolves ~150 ngrams it would never use nor scans documents for the adjacent halves
  of each long word (a split is a phrase: its documents would be rescored in Python). On the labelled
  collections the splits moved NDCG@10 by at most 0.002 and cost 4-5x the search time of CISI's questions;
- the hits are ordered by raw BM25 (so also by its 100-level bucket, `ranking.BM25_LEVELS`), then docid.

Speed: the forward entries of the candidates to score are read (one LMDB get each) and handed as raw
msgpack bytes to the native accumulator (`_native.bm25`), which parses them in place and only
materializes the scores; the top `want` come from `numpy.partition`. MaxScore pruning
(`_Scorer.pruned`) skips the documents that match only terms too common to reach the top `want`.
Derivations that are phrases (quoted terms, multi-word synonyms) are not one-word lookups: the few
documents matching one are rescored with `Searcher.bm25` itself, so the result equals the Python definition everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pyroaring import BitMap

from hanzo_engine._native.bm25 import QueryWords, bm25_scores
from hanzo_engine.engine.update.indexer import forward_entries, read_forward

from .engine import K1, B, Node, Searcher, alts_key
from .plan_cache import QUERY_WORDS

MIN_BATCH = 256  # MaxScore: fewest documents scored at once past the first `want` (`_Scorer.pruned`)


def _terms(nodes: list[Node]) -> list[Node]:
    """The nodes BM25 sums over: one per query term (ngrams are not terms)."""
    return [n for n in nodes if n.length == 1]


def bm25_candidates(searcher: Searcher, terms: list[Node], universe: BitMap) -> BitMap:
    """Documents of `universe` matching at least one of `terms` (any derivation, any typo level)."""
    del searcher  # the nodes already hold their docids (restricted to the searched fields)
    single = _terms(terms)
    if not single:
        return BitMap()
    return BitMap.union(*(n.docids for n in single)) & universe


def _query_words(terms: list[Node]) -> tuple[QueryWords, list[Node]]:
    """The one-word derivations as the native lookup table (shared between searches of the same
    derivations, `plan_cache`), and the nodes having a multi-word derivation (their documents are
    rescored in Python)."""
    key = tuple(alts_key(node) for node in terms)
    found = QUERY_WORDS.get(key)
    if found is None:
        pairs: dict[bytes, set[tuple[int, bool]]] = {}
        multi: list[int] = []
        for t, node in enumerate(terms):
            has_multi = False
            for level in node.alts:
                for alt in level:
                    if len(alt.words) == 1 and alt.words[0] is not None:
                        pairs.setdefault(alt.words[0].encode(), set()).add((t, alt.tolerant))
                    else:
                        has_multi = True
            if has_multi:
                multi.append(t)
        words = sorted(pairs)
        found = (QueryWords(words, [sorted(pairs[w]) for w in words]), tuple(multi))
        QUERY_WORDS.put(key, found)
    table, multi_terms = found
    return table, [terms[t] for t in multi_terms]


def _field_arrays(s: Searcher) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_fields = max([len(s.fields), *(f + 1 for f in s.stats)])
    allowed = np.zeros(n_fields, dtype=np.uint8)
    allowed_tol = np.zeros(n_fields, dtype=np.uint8)
    avgdl = np.ones(n_fields, dtype=np.float64)
    for fid in range(n_fields):
        allowed[fid] = fid in s.searched
        allowed_tol[fid] = s.allowed(fid, True)
        st = s.stats.get(fid)
        avg = (st[1] / st[0]) if st and st[0] else 1.0
        avgdl[fid] = max(avg, 1e-9)
    return allowed, allowed_tol, avgdl


class _Scorer:
    """Scores sets of candidates against one query (the tables are built once per search).

    `qtf[i]`: the query-term frequency of the term at query index i (`Node.first`); None: 1 each.
    """

    def __init__(self, s: Searcher, terms: list[Node], qtf: Sequence[int] | None = None) -> None:
        self.s = s
        self.terms = _terms(terms)
        n = max(s.n_docs, 1)
        idf = np.array([math.log(1.0 + (n - len(t.docids) + 0.5) / (len(t.docids) + 0.5))
                        for t in self.terms], dtype=np.float64)
        # per term, what `Searcher.bm25` multiplies tf by: qtf * idf (the same float product)
        self.qtf = [qtf[t.first] for t in self.terms] if qtf is not None else None
        if self.qtf is not None:
            idf = np.array(self.qtf, dtype=np.float64) * idf
        self.idf = idf
        self.table, multi_nodes = _query_words(self.terms)
        self.allowed, self.allowed_tol, self.avgdl = _field_arrays(s)
        # documents where a phrase-like derivation may occur: scored by the Python definition
        self.multi = BitMap()
        for node in multi_nodes:
            for level in node.alts:
                for alt in level:
                    if len(alt.words) != 1 or alt.words[0] is None:
                        self.multi |= s.alt_docids(alt)

    def score(self, docs: BitMap) -> tuple[np.ndarray, np.ndarray]:
        """(docids, raw BM25) of `docs`, in docid order."""
        docids = np.fromiter(docs, dtype=np.int64, count=len(docs))
        if not self.terms or not len(docids):
            return docids, np.zeros(len(docids), dtype=np.float64)
        return docids, self.score_entries(docs, forward_entries(self.s.reader, docs))

    def score_entries(self, docs: BitMap, entries: list[bytes | None]) -> np.ndarray:
        """Raw BM25 of `docs` (docid order) from their forward entries, as `forward_entries` reads them."""
        if not self.terms:
            return np.zeros(len(entries), dtype=np.float64)
        scores = bm25_scores(entries, self.table, self.idf, self.allowed, self.allowed_tol, self.avgdl, K1, B)
        for d in self.multi & docs:
            fwd = read_forward(self.s.reader, d)
            if fwd is not None:
                scores[docs.rank(d) - 1] = self.s.bm25(fwd[0], fwd[1], self.terms, self.qtf)
        return scores

    def pruned(self, candidates: BitMap, want: int) -> tuple[np.ndarray, np.ndarray]:
        """(docids, raw BM25) of a subset of `candidates` holding their top `want` (MaxScore).

        A term adds less than qtf * idf (`self.idf`) * (k1 + 1) per field it occurs in, so at most `ub`
        = that times the number of searched fields holding any word (`_worded_fields`) to any score.
        The terms are taken by decreasing `ub` (the rarest first) and the not yet scored documents of
        each are scored (in batches of at least `want`, then of `MIN_BATCH`); `theta`, the want-th best
        score so far, only grows. Once the bounds of the terms left sum to at most `theta`, a document
        matching only those scores below `theta` and cannot make the top `want`: the rest is skipped.
        Common words (`the`, `of`) are what is skipped: on NPL without stop words, for the top 100, this
        scores about a fifth of the index.
        """
        terms = self.terms
        if want <= 0 or not terms:
            return self.score(BitMap())
        ub = self.idf * (K1 + 1) * _worded_fields(self.s)
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
            got_ids, got = self.score(pending)
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
            pending |= (terms[t].docids & candidates) - scored
            if len(pending) >= (want - len(scored) if len(scored) < want else MIN_BATCH):
                flush()
        if pending:
            flush()
        if not ids:
            return self.score(BitMap())
        return np.concatenate(ids), np.concatenate(scores)


def _worded_fields(s: Searcher) -> int:
    """How many searched fields hold at least one word in some document (the field statistics count
    every field's words; without statistics, every searched field): the most fields a term occurs in."""
    if not s.stats:
        return max(len(s.searched), 1)
    return max(sum(1 for f in s.searched if s.stats.get(f, (0, 0))[1] > 0), 1)


def bm25_scores_of(s: Searcher, terms: list[Node], candidates: BitMap,
                   qtf: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(docids, raw BM25) of every candidate, in docid order."""
    return _Scorer(s, terms, qtf).score(candidates)


def bm25_rank(searcher: Searcher, terms: list[Node], candidates: BitMap, want: int,
              qtf: Sequence[int] | None = None) -> list[tuple[int, float]]:
    """The top `want` candidates as (docid, raw BM25), best first (ties: smaller docid first)."""
    docids, scores = _Scorer(searcher, terms, qtf).pruned(candidates, want)
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


def bm25_first_page(s: Searcher, nodes: list[Node], universe: BitMap, offset: int, limit: int,
                    threshold: float | None, levels: int, half: float, qtf: Sequence[int] | None = None,
                    ) -> tuple[list[int], list[float], list[dict[str, Any]], BitMap]:
    """The page of the bm25-first mode: (docids, ranking scores, score details, candidates).
    `qtf[i]`: the query-term frequency of query term i (`ParsedQuery.terms[i].count`).

    The ranking score is the BM25 level `1 + round(norm * (levels - 1))` over `levels`, with
    norm = raw / (raw + half), as the `bm25` rule scores; candidates below `threshold` are dropped.
    """
    terms = _terms(nodes)
    candidates = bm25_candidates(s, terms, universe)
    scorer = _Scorer(s, terms, qtf)
    # with a score threshold every candidate is scored: those below it are not candidates
    if threshold is None:
        docids, raw = scorer.pruned(candidates, offset + limit)
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
