"""Semantic and hybrid search over the vector store, as Meilisearch's `SearchKind` and hybrid merge.

Kind selection (after the HTTP layer's checks): semanticRatio 0 -> keyword; no q and no vector ->
placeholder keyword search (even with `hybrid`); semanticRatio 1 or no q -> semantic only; q ->
hybrid. `userProvided` embedders cannot embed `q`, so a semantic or hybrid search needs `vector`.

Scores: the HNSW similarity is mapped to Meilisearch's ranking score. For cosine (arroy's distance is
`(1 - cos) / 2`, score `1 - distance`) that is `(1 + cos) / 2`; for the other distances the store's
similarity clamped to [0, 1]. An embedder's `distribution: {mean, sigma}` shifts scores toward a mean
of 0.5 (sigma 0.4), clamped to [0, 1].

Hybrid merge (Meilisearch's `ScoreWithRatioResult`): the keyword list's scores are weighted by
`1 - semanticRatio`, the semantic list's by `semanticRatio`; both lists (each `offset + limit` long)
are merged by weighted score, a document keeps its first (best) appearance, and the page is cut from
the merged list. `semanticHitCount` counts the page's hits that came from the semantic list. Hits keep
their own unweighted `_rankingScore` and details.

Besides that merge, `fuse_rrf` and `fuse_convex` offer reciprocal-rank and convex (min-max normalized)
fusion of any two ranked lists (the relevance benchmark compares them with BM25 as the keyword side).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyroaring import BitMap

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.search.types import MatchingWords, SearchRequest, SearchResult
from hanzo_engine.engine.vector.store import VectorStore


@dataclass
class AiOutcome:
    result: SearchResult
    semantic_hit_count: int
    query_vector: list[float]


def search_kind(q: str | None, vector: Sequence[float] | None, ratio: float | None) -> str:
    """`keyword`, `semantic` or `hybrid` for a query with a `hybrid` parameter (ratio None: no hybrid)."""
    if ratio is None or ratio == 0.0:
        return "keyword"
    placeholder = q is None or not q.strip()
    if placeholder and vector is None:
        return "keyword"
    if ratio == 1.0 or placeholder:
        return "semantic"
    return "hybrid"


def to_score(similarity: float, distance: str, distribution: dict[str, Any] | None) -> float:
    score = (1.0 + similarity) / 2.0 if distance == "cosine" else similarity
    if distribution:
        mean, sigma = float(distribution.get("mean", 0.5)), float(distribution.get("sigma", 0.4)) or 1e-9
        score = 0.5 + (score - mean) * (0.4 / sigma)
    return min(max(score, 0.0), 1.0)


def semantic(reader: IndexReader, settings: dict[str, Any], embedder: str, vector: Sequence[float], offset: int,
             limit: int, universe: BitMap | None, threshold: float | None, *, with_rest: bool = True) -> SearchResult:
    """The semantic-only page: nearest documents first (filtered during the graph walk), then, as
    Meilisearch's vector sort, the matching documents without vectors (no similarity; not with
    `with_rest=False`, as `/similar`)."""
    store = VectorStore.of(reader.index)
    config = store.config(reader, embedder)
    all_docs = reader.documents_ids() if universe is None else universe
    candidates = len(all_docs)
    conf = (settings.get("embedders") or {}).get(embedder) or {}
    docids: list[int] = []
    scores: list[float] = []
    details: list[dict[str, Any]] = []
    want = offset + limit
    if config is not None and want > 0:
        for docid, similarity in store.search(reader, embedder, list(vector), want, universe):
            score = to_score(similarity, config.distance, conf.get("distribution"))
            if threshold is not None and score < threshold:
                break  # best first: every later hit scores lower
            docids.append(docid)
            scores.append(score)
            details.append({"vectorSort": {"order": 0, "similarity": score}})
    if not with_rest:
        candidates = len(docids) if len(docids) < want else len(store.docids(reader, embedder) & all_docs)
    elif len(docids) < want and threshold is None:
        with_vectors = store.docids(reader, embedder)
        for docid in all_docs - with_vectors:
            if len(docids) >= want:
                break
            docids.append(docid)
            scores.append(0.0)
            details.append({"vectorSort": {"order": 0, "similarity": None}})
    elif threshold is not None:
        candidates = len(docids)
    return SearchResult(docids[offset:], scores[offset:], details[offset:], candidates, MatchingWords(),
                        all_candidates=all_docs)


def check_vector(reader: IndexReader, settings: dict[str, Any], embedder: str, q: str | None,
                 vector: Sequence[float] | None) -> list[float]:
    """The query vector, checked against the embedder (Meilisearch's 400 errors)."""
    conf = (settings.get("embedders") or {}).get(embedder)
    if conf is None:
        raise MeiliError("invalid_search_embedder", f"Cannot find embedder with name `{embedder}`.")
    if vector is None:
        if conf.get("source") == "userProvided":
            raise MeiliError("vector_embedding_error", "Error while generating embeddings: user error: attempt to "
                             "embed the following text in a configuration where embeddings must be user provided: "
                             f"{q!r}".replace("'", '"'))
        raise MeiliError("vector_embedding_error", f"Error while generating embeddings: embedder `{embedder}` of "
                         f"source `{conf.get('source')}` is not available in this build.")
    config = VectorStore.of(reader.index).config(reader, embedder)
    expected = config.dimensions if config is not None else conf.get("dimensions")
    if expected is not None and len(vector) != expected:
        raise MeiliError("invalid_vector_dimensions",
                         f"Invalid vector dimensions: expected: `{expected}`, found: `{len(vector)}`.")
    return [float(x) for x in vector]


def ai_search(reader: IndexReader, request: SearchRequest, settings: dict[str, Any], embedder: str | None,
              ratio: float | None, vector: Sequence[float] | None) -> AiOutcome | None:
    """A semantic or hybrid search; None when the query is a keyword search."""
    if embedder is None:
        return None
    kind = search_kind(request.q, vector, ratio)
    if kind == "keyword":
        return None
    assert ratio is not None
    query_vector = check_vector(reader, settings, embedder, request.q, vector)
    threshold = request.ranking_score_threshold
    want = request.offset + request.limit
    sem = semantic(reader, settings, embedder, query_vector, 0, want, request.filter_universe, threshold)
    if kind == "semantic":
        page = SearchResult(sem.docids[request.offset:], sem.scores[request.offset:], sem.details[request.offset:],
                            sem.candidates, sem.matching, all_candidates=sem.all_candidates)
        return AiOutcome(page, len(page.docids), query_vector)
    from hanzo_engine.engine.search.engine import search

    kw = search(reader, replace(request, offset=0, limit=want), settings)
    merged, from_semantic = merge(kw, sem, ratio, request.offset, request.limit)
    merged.candidates = max(kw.candidates, sem.candidates)
    return AiOutcome(merged, from_semantic, query_vector)


def merge(keyword: SearchResult, sem: SearchResult, ratio: float, offset: int, limit: int) -> tuple[SearchResult, int]:
    """Meilisearch's weighted merge of a keyword and a semantic list (see the module docstring)."""
    entries = [(s * (1.0 - ratio), 0, i, False) for i, s in enumerate(keyword.scores)]
    entries += [(s * ratio, 1, i, True) for i, s in enumerate(sem.scores)]
    entries.sort(key=lambda e: (-e[0], e[1], e[2]))
    seen: set[int] = set()
    docids: list[int] = []
    scores: list[float] = []
    details: list[dict[str, Any]] = []
    semantic_flags: list[bool] = []
    for _, _, i, is_sem in entries:
        src = sem if is_sem else keyword
        docid = src.docids[i]
        if docid in seen:
            continue
        seen.add(docid)
        docids.append(docid)
        scores.append(src.scores[i])
        details.append(src.details[i])
        semantic_flags.append(is_sem)
    end = offset + limit
    page = SearchResult(docids[offset:end], scores[offset:end], details[offset:end], 0, keyword.matching,
                        all_candidates=_union(keyword.all_candidates, sem.all_candidates))
    return page, sum(semantic_flags[offset:end])


def _union(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a | b


# -- rank fusion over plain ranked lists (benchmarks and callers choosing a fusion) --------------------


def fuse_rrf(lists: Sequence[Sequence[Any]], k: int = 60, weights: Sequence[float] | None = None) -> list[Any]:
    """Reciprocal-rank fusion: each list adds `w / (k + rank)` (rank from 1) to its items."""
    acc: dict[Any, float] = {}
    for n, ranked in enumerate(lists):
        w = 1.0 if weights is None else weights[n]
        for rank, item in enumerate(ranked, 1):
            acc[item] = acc.get(item, 0.0) + w / (k + rank)
    return sorted(acc, key=lambda item: -acc[item])


def fuse_convex(lists: Sequence[Sequence[tuple[Any, float]]], weights: Sequence[float]) -> list[Any]:
    """Convex fusion: each list's scores min-max normalized to [0, 1], then summed with `weights`
    (an item missing from a list gets 0 there)."""
    acc: dict[Any, float] = {}
    for ranked, w in zip(lists, weights, strict=True):
        if not ranked:
            continue
        values = [s for _, s in ranked]
        lo, hi = min(values), max(values)
        span = hi - lo if hi > lo else 1.0
        for item, s in ranked:
            norm = (s - lo) / span if not math.isnan(s) else 0.0
            acc[item] = acc.get(item, 0.0) + w * norm
    return sorted(acc, key=lambda item: -acc[item])
