"""The `bm25` rule (ours, not milli's): BM25F over the searched fields, in BM25_LEVELS levels; raw
BM25 also breaks every tie the rules leave, before the docid, and ranks the bm25-first mode.

BM25F (Robertson et al., "Simple BM25 extension to multiple weighted fields"; Lucene's
`CombinedFieldQuery`): a term's occurrences are summed over the fields, each field's count
length-normalized by that field's average length and weighted by the field (`field_weight`: the
first searchable attribute counts FIRST_FIELD_WEIGHT times, the others once; with
`searchableAttributes: ["*"]` every field once), then saturated once per term. A term's share is
therefore below `idf * (k1 + 1)` however many fields hold it, which bounds the bm25-first mode's
pruning. Summing a separate BM25 per field instead counted a term found in a short title on top of
its body score, and ranked long natural-language questions worse (CISI, NDCG@10 0.349 -> 0.381
without stop words), for a smaller loss where titles say it all (Cranfield 0.374 -> 0.360).

`score` is the definition; `BM25Scorer` computes the same float natively for many documents at
once (`_native/bm25.pyx`, `bm25_scores`: same operations in the same order), rescoring with `score`
the documents where a phrase-like derivation may occur. The native bucket keys leave the rule's
column empty (`_native/bucket.pyx` code R_BM25) and fill it from `BM25Scorer`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, cast

import numpy as np
from pyroaring import BitMap

from hanzo_engine._native.bm25 import QueryWords, bm25_scores
from hanzo_engine.engine.update.indexer import read_forward

from ..context import SearchContext
from ..features import occurrences
from ..forward_cache import forward_entries
from ..plan_cache import QUERY_WORDS, HashedKey
from ..query_graph import Node, alts_key
from ..score_details import RuleScore

NATIVE_CODE = 6
K1 = 1.2
B = 0.75
FIRST_FIELD_WEIGHT = 3.0  # BM25F weight of the first searchable attribute's fields (the others: 1)
LEVELS = 100
HALF = 5.0  # raw BM25 mapped to [0, 1) as raw / (raw + HALF)


def terms(nodes: list[Node]) -> list[Node]:
    """The nodes BM25 sums over: one per query term (ngrams are not terms)."""
    return [n for n in nodes if n.length == 1]


def score(
    ctx: SearchContext,
    lengths: dict[Any, int],
    postings: dict[str, list[int]],
    nodes: Iterable[Node],
    qtf: Sequence[int] | None = None,
) -> float:
    """BM25F over the searched fields: per term, w * tfc * (k1 + 1) / (tfc + k1) with tfc the sum over
    fields (ascending) of field_weight * tf / (1 - b + b * dl / avgdl); w = qtf * idf,
    idf = ln(1 + (N - df + 0.5) / (df + 0.5)), df = documents matching the term, qtf the term's
    query-term frequency (`qtf[i]` for the i-th node, 1 without)."""
    n = max(ctx.n_docs, 1)
    total = 0.0
    for i, node in enumerate(nodes):
        df = len(node.docids)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        if qtf is not None:
            idf = qtf[i] * idf
        per_field: dict[int, int] = {}
        for first, _last, _phrase in occurrences(ctx, postings, node, None):
            f = first >> 16
            per_field[f] = per_field.get(f, 0) + 1
        if not per_field:
            continue
        tfc = 0.0
        for f, tf in sorted(per_field.items()):  # fields ascending, as `_native.bm25` sums
            st = ctx.stats.get(f)
            avg = (st[1] / st[0]) if st and st[0] else 1.0
            dl = lengths.get(f, lengths.get(str(f), 1))
            tfc += field_weight(ctx, f) * tf / (1 - B + B * dl / max(avg, 1e-9))
        total += idf * tfc * (K1 + 1) / (tfc + K1)
    return total


def field_weight(ctx: SearchContext, fid: int) -> float:
    """BM25F weight of a field: FIRST_FIELD_WEIGHT for the first searchable attribute's fields when
    the attributes are ordered, else 1."""
    return FIRST_FIELD_WEIGHT if ctx.max_weight > 0 and ctx.weight.get(fid) == 0 else 1.0


def details(raw: float) -> RuleScore:
    """Raw BM25 in LEVELS levels."""
    norm = raw / (raw + HALF)
    r = 1 + round(norm * (LEVELS - 1))
    return {"value": raw, "score": norm}, ((r, LEVELS),), (-r,)


def query_words(nodes: list[Node]) -> tuple[QueryWords, list[Node]]:
    """The one-word derivations as the native lookup table (shared between searches of the same
    derivations, `plan_cache`), and the nodes having a multi-word derivation (their documents are
    rescored in Python)."""
    key = HashedKey(tuple(alts_key(node) for node in nodes))  # hashed once, not at every lookup
    found = QUERY_WORDS.get(key)
    if found is None:
        pairs: dict[bytes, set[tuple[int, bool]]] = {}
        multi: list[int] = []
        for t, node in enumerate(nodes):
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
    return table, [nodes[t] for t in multi_terms]


FieldArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def field_arrays(ctx: SearchContext) -> FieldArrays:
    """Per field id: searched, searched by typo derivations, the average length and the BM25F weight
    (the native keys' field tables), made once per search (the arrays are shared: never modified)."""
    if ctx.field_tables is not None:
        return cast(FieldArrays, ctx.field_tables)
    n_fields = max([len(ctx.fields), *(f + 1 for f in ctx.stats)])
    allowed = np.zeros(n_fields, dtype=np.uint8)
    allowed_tol = np.zeros(n_fields, dtype=np.uint8)
    avgdl = np.ones(n_fields, dtype=np.float64)
    weights = np.ones(n_fields, dtype=np.float64)
    for fid in range(n_fields):
        weights[fid] = field_weight(ctx, fid)
        allowed[fid] = fid in ctx.searched
        allowed_tol[fid] = ctx.allowed(fid, True)
        st = ctx.stats.get(fid)
        avg = (st[1] / st[0]) if st and st[0] else 1.0
        avgdl[fid] = max(avg, 1e-9)
    ctx.field_tables = (allowed, allowed_tol, avgdl, weights)
    return allowed, allowed_tol, avgdl, weights


class BM25Scorer:
    """Scores sets of documents against one query natively (the tables are built once per search).

    `qtf[i]`: the query-term frequency of the term at query index i (`Node.first`); None: 1 each.
    """

    def __init__(self, ctx: SearchContext, nodes: list[Node], qtf: Sequence[int] | None = None) -> None:
        self.ctx = ctx
        self.terms = terms(nodes)
        n = max(ctx.n_docs, 1)
        idf = np.array(
            [math.log(1.0 + (n - len(t.docids) + 0.5) / (len(t.docids) + 0.5)) for t in self.terms],
            dtype=np.float64,
        )
        # per term, what `score` multiplies tf by: qtf * idf (the same float product)
        self.qtf = [qtf[t.first] for t in self.terms] if qtf is not None else None
        if self.qtf is not None:
            idf = np.array(self.qtf, dtype=np.float64) * idf
        self.idf = idf
        self.table, multi_nodes = query_words(self.terms)
        self.allowed, self.allowed_tol, self.avgdl, self.weights = field_arrays(ctx)
        # documents where a phrase-like derivation may occur: scored by the Python definition
        self.multi = BitMap()
        for node in multi_nodes:
            for level in node.alts:
                for alt in level:
                    if len(alt.words) != 1 or alt.words[0] is None:
                        self.multi |= ctx.alt_docids(alt)

    def score(self, docs: BitMap) -> tuple[np.ndarray, np.ndarray]:
        """(docids, raw BM25) of `docs`, in docid order."""
        docids = np.fromiter(docs, dtype=np.int64, count=len(docs))
        if not self.terms or not len(docids):
            return docids, np.zeros(len(docids), dtype=np.float64)
        return docids, self.score_entries(docs, forward_entries(self.ctx.reader, docs))

    def score_ids(self, docids: np.ndarray) -> np.ndarray:
        """Raw BM25 of `docids` (ascending)."""
        if not self.terms or not len(docids):
            return np.zeros(len(docids), dtype=np.float64)
        ids = docids.tolist()
        entries = forward_entries(self.ctx.reader, ids)
        scores = bm25_scores(
            entries, self.table, self.idf, self.allowed, self.allowed_tol, self.avgdl, self.weights, K1, B
        )
        if self.multi:
            for d in self.multi & BitMap(ids):
                fwd = read_forward(self.ctx.reader, d)
                if fwd is not None:
                    scores[int(np.searchsorted(docids, d))] = score(
                        self.ctx, fwd[0], fwd[1], self.terms, self.qtf
                    )
        return scores

    def score_entries(self, docs: BitMap, entries: list[bytes | None]) -> np.ndarray:
        """Raw BM25 of `docs` (docid order) from their forward entries, as `forward_entries` reads them."""
        if not self.terms:
            return np.zeros(len(entries), dtype=np.float64)
        scores = bm25_scores(
            entries, self.table, self.idf, self.allowed, self.allowed_tol, self.avgdl, self.weights, K1, B
        )
        for d in self.multi & docs:
            fwd = read_forward(self.ctx.reader, d)
            if fwd is not None:
                scores[docs.rank(d) - 1] = score(self.ctx, fwd[0], fwd[1], self.terms, self.qtf)
        return scores
