"""Semantic and hybrid search over the vector store, as Meilisearch's `SearchKind` and hybrid merge.

Kind selection (after the HTTP layer's checks): semanticRatio 0 -> keyword; no q and no vector ->
placeholder keyword search (even with `hybrid`); semanticRatio 1 or no q -> semantic only; q ->
hybrid. Without `vector`, `q` is embedded by the embedder (`rest`, `openAi`, `ollama`: one request
through the REST path, `embedders.Runtime.embed_query`). A semantic-only search fails when that
fails (`vector_embedding_error`, and `userProvided` embedders cannot embed at all); a hybrid search
then returns the keyword results alone (`semanticHitCount` 0), as Meilisearch. The embedding gets
`searchCutoffMs` (default 1.5 s) in a semantic search and 3 s in a hybrid one.

Scores: the HNSW similarity is mapped to Meilisearch's ranking score. For cosine (arroy's distance is
`(1 - cos) / 2`, score `1 - distance`) that is `(1 + cos) / 2`; for the other distances the store's
similarity clamped to [0, 1]. An embedder's `distribution: {mean, sigma}` shifts scores toward a mean
of 0.5 (sigma 0.4), clamped to [0, 1].

Hybrid merge (Meilisearch's `ScoreWithRatioResult`): the keyword list's scores are weighted by
`1 - semanticRatio`, the semantic list's by `semanticRatio`; both lists (each `offset + limit` long)
are merged by weighted score, a document keeps its first (best) appearance, and the page is cut from
the merged list. `semanticHitCount` counts the page's hits that came from the semantic list. Hits keep
their own unweighted `_rankingScore` and details.

Hits carry no `_semanticScore`: Meilisearch removed it in v1.8 (the semantic similarity is the hit's
`_rankingScore`, its `vectorSort` detail holds no vectors).

Beyond Meilisearch, `fusion` (`hybrid.fusion`, opt-in; absent = the score merge above) fuses the two
lists over a deeper window instead: each list is `max(offset + limit, FUSION_WINDOW)` long (a fused
top 10 drawn from two top-10 lists misses what only ranks 11-100 on each side; measured in
`benchmarks/test_hybrid_relevance.py`), and with `r` = semanticRatio:

- `convex`: `(1 - r) * k + r * s`, where `k` and `s` are the sides' scores min-max normalized over their
  own list (1 for a list whose scores are all equal, 0 for a document absent from a list). The keyword
  score is the raw BM25 when the keyword list is ranked by it (rankingRules starting with `bm25`: its
  details lead with `bm25`), else the ranking score; the semantic score is the vector's ranking score.
- `rrf`: reciprocal-rank fusion, `(1 - r) / (RRF_K + rank_k) + r / (RRF_K + rank_s)` (ranks from 1, an
  absent side adds 0), divided by its maximum `1 / (RRF_K + 1)` so it lies in (0, 1].

The fused value is the hit's `_rankingScore`, and `rankingScoreThreshold` applies to it (the lists
themselves are fetched without a threshold). Ties go to the better single rank, then to the keyword
side. A hit counts in `semanticHitCount`, and shows the `_rankingScoreDetails` of that side, when its
semantic term outweighs its keyword term.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from pyroaring import BitMap

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.search.types import MatchingWords, SearchRequest, SearchResult
from hanzo_engine.engine.vector.embedders import build, effective_distribution, is_generating
from hanzo_engine.engine.vector.rest import EmbedderError
from hanzo_engine.engine.vector.store import VectorStore

FUSIONS: Final = ("convex", "rrf")
FUSION_WINDOW: Final = 100  # each list's depth for `fusion` (at least offset + limit)
RRF_K: Final = 60  # the usual reciprocal-rank constant (Cormack et al.)
HYBRID_EMBED_SECONDS: Final = 3.0
DEFAULT_SEARCH_CUTOFF_MS: Final = 1500


@dataclass
class AiOutcome:
    result: SearchResult
    semantic_hit_count: int
    query_vector: list[float] | None  # None: the query could not be embedded (keyword results)


def search_kind(q: str | None, vector: Sequence[float] | None, ratio: float | None, media: Any = None) -> str:
    """`keyword`, `semantic` or `hybrid` for a query with a `hybrid` parameter (ratio None: no hybrid)."""
    if ratio is None or ratio == 0.0:
        return "keyword"
    placeholder = q is None or not q.strip()
    if placeholder and vector is None and media is None:
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


def semantic(
    reader: IndexReader,
    settings: dict[str, Any],
    embedder: str,
    vector: Sequence[float],
    offset: int,
    limit: int,
    universe: BitMap | None,
    threshold: float | None,
    *,
    with_rest: bool = True,
) -> SearchResult:
    """The semantic-only page: nearest documents first (filtered during the graph walk), then, as
    Meilisearch's vector sort, the matching documents without vectors (no similarity; not with
    `with_rest=False`, as `/similar`)."""
    store = VectorStore.of(reader.index)
    config = store.config(reader, embedder)
    all_docs = reader.documents_ids() if universe is None else universe
    candidates = len(all_docs)
    conf = (settings.get("embedders") or {}).get(embedder) or {}
    distribution = effective_distribution(conf)
    docids: list[int] = []
    scores: list[float] = []
    details: list[dict[str, Any]] = []
    want = offset + limit
    if config is not None and want > 0:
        for docid, similarity in store.search(reader, embedder, list(vector), want, universe):
            score = to_score(similarity, config.distance, distribution)
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
    return SearchResult(
        docids[offset:],
        scores[offset:],
        details[offset:],
        candidates,
        MatchingWords(),
        all_candidates=all_docs,
    )


def check_vector(
    reader: IndexReader,
    settings: dict[str, Any],
    embedder: str,
    q: str | None,
    vector: Sequence[float] | None,
    deadline: float | None = None,
    media: Any = None,
) -> list[float]:
    """The query vector: `vector` checked against the embedder, or `q` embedded by it before
    `deadline` (a `time.monotonic()` value). Meilisearch's 400 errors. `media` needs an embedder with
    `searchFragments`, which this build does not run (they are refused in the settings)."""
    conf = (settings.get("embedders") or {}).get(embedder)
    if conf is None:
        raise MeiliError("invalid_search_embedder", f"Cannot find embedder with name `{embedder}`.")
    config = VectorStore.of(reader.index).config(reader, embedder)
    if vector is None and media is not None:
        problem = (
            "`media` requested, and the configuration has source `rest`, but the configuration doesn't have "
            "`searchFragments`."
            if conf.get("source") == "rest"
            else "`media` requested but the configuration doesn't have source `rest`"
        )
        raise MeiliError(
            "vector_embedding_error", f"Error while generating embeddings: user error: {problem}"
        )
    if vector is None:
        if conf.get("source") == "userProvided":
            raise MeiliError(
                "vector_embedding_error",
                "Error while generating embeddings: user error: attempt to "
                "embed the following text in a configuration where embeddings must be user provided:"
                f"\n  - `{q or ''}`",
            )
        if not is_generating(conf):
            raise MeiliError(
                "vector_embedding_error",
                f"Error while generating embeddings: embedder `{embedder}` of "
                f"source `{conf.get('source')}` is not available in this build.",
            )
        try:
            runtime = build(embedder, conf)
            dims = config.dimensions if config is not None else runtime.dimensions
            if dims is None:
                dims = runtime.infer_dimensions()
            return runtime.embed_query(q or "", dims, deadline)
        except EmbedderError as err:
            raise MeiliError("vector_embedding_error", f"Error while generating embeddings: {err}") from None
    expected = config.dimensions if config is not None else conf.get("dimensions")
    if expected is not None and len(vector) != expected:
        raise MeiliError(
            "invalid_vector_dimensions",
            f"Invalid vector dimensions: expected: `{expected}`, found: `{len(vector)}`.",
        )
    return [float(x) for x in vector]


def ai_search(
    reader: IndexReader,
    request: SearchRequest,
    settings: dict[str, Any],
    embedder: str | None,
    ratio: float | None,
    vector: Sequence[float] | None,
    fusion: str | None = None,
    *,
    media: Any = None,
    multimodal: bool = False,
) -> AiOutcome | None:
    """A semantic or hybrid search; None when the query is a keyword search. `fusion` (None, `convex`
    or `rrf`) chooses how a hybrid search combines its two lists (see the module docstring). `media`
    (a search parameter of the `multimodal` feature) is embedded instead of `q`."""
    if media is not None and not multimodal:
        raise MeiliError(
            "feature_not_enabled",
            "passing `media` in a search query requires enabling the `multimodal` "
            "experimental feature. See https://github.com/orgs/meilisearch/discussions/846",
        )
    if embedder is None:
        return None
    kind = search_kind(request.q, vector, ratio, media)
    if kind == "keyword":
        return None
    assert ratio is not None
    from hanzo_engine.engine.search.engine import search

    if kind == "hybrid":
        try:
            query_vector = check_vector(
                reader, settings, embedder, request.q, vector, time.monotonic() + HYBRID_EMBED_SECONDS, media
            )
        except MeiliError as err:
            if err.code != "vector_embedding_error":
                raise
            # the query could not be embedded: keyword results only, as Meilisearch
            return AiOutcome(search(reader, request, settings), 0, None)
    else:
        cutoff = settings.get("searchCutoffMs") or DEFAULT_SEARCH_CUTOFF_MS
        query_vector = check_vector(
            reader, settings, embedder, request.q, vector, time.monotonic() + cutoff / 1000, media
        )
    threshold = request.ranking_score_threshold
    want = request.offset + request.limit
    if kind == "hybrid" and fusion is not None:
        return _fused_search(reader, request, settings, embedder, ratio, query_vector, fusion)
    sem = semantic(reader, settings, embedder, query_vector, 0, want, request.filter_universe, threshold)
    if kind == "semantic":
        page = SearchResult(
            sem.docids[request.offset :],
            sem.scores[request.offset :],
            sem.details[request.offset :],
            sem.candidates,
            sem.matching,
            all_candidates=sem.all_candidates,
        )
        return AiOutcome(page, len(page.docids), query_vector)
    kw = search(reader, replace(request, offset=0, limit=want), settings)
    merged, from_semantic = merge(kw, sem, ratio, request.offset, request.limit)
    merged.candidates = max(kw.candidates, sem.candidates)
    return AiOutcome(merged, from_semantic, query_vector)


def merge(
    keyword: SearchResult, sem: SearchResult, ratio: float, offset: int, limit: int
) -> tuple[SearchResult, int]:
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
    page = SearchResult(
        docids[offset:end],
        scores[offset:end],
        details[offset:end],
        0,
        keyword.matching,
        all_candidates=_union(keyword.all_candidates, sem.all_candidates),
    )
    return page, sum(semantic_flags[offset:end])


def _union(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a | b


# -- opt-in fusion (`hybrid.fusion`) ------------------------------------------------------------------


def _fused_search(
    reader: IndexReader,
    request: SearchRequest,
    settings: dict[str, Any],
    embedder: str,
    ratio: float,
    query_vector: list[float],
    fusion: str,
) -> AiOutcome:
    from hanzo_engine.engine.search.engine import search

    window = max(request.offset + request.limit, FUSION_WINDOW)
    kw = search(reader, replace(request, offset=0, limit=window, ranking_score_threshold=None), settings)
    sem = semantic(
        reader, settings, embedder, query_vector, 0, window, request.filter_universe, None, with_rest=False
    )
    page, from_semantic = fuse(
        kw, sem, ratio, fusion, request.offset, request.limit, request.ranking_score_threshold
    )
    return AiOutcome(page, from_semantic, query_vector)


def _keyword_values(keyword: SearchResult) -> list[float]:
    """The keyword side's fusion values: raw BM25 when the list is ranked by it, else ranking scores."""
    if keyword.details and next(iter(keyword.details[0]), None) == "bm25":
        return [float(d["bm25"]["value"]) for d in keyword.details]
    return list(keyword.scores)


def _min_max(values: list[float]) -> list[float]:
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi <= lo:
        return [1.0] * len(values)
    return [(v - lo) / (hi - lo) for v in values]


def fuse(
    keyword: SearchResult,
    sem: SearchResult,
    ratio: float,
    fusion: str,
    offset: int,
    limit: int,
    threshold: float | None = None,
) -> tuple[SearchResult, int]:
    """Convex or reciprocal-rank fusion of a keyword and a semantic list (module docstring): the page
    `[offset, offset + limit)` of the fused list and how many of its hits the semantic side won."""
    if fusion not in FUSIONS:
        raise ValueError(f"unknown fusion {fusion!r}; expected one of {FUSIONS}")
    # docid -> [keyword term, semantic term, best rank, keyword rank or -1, semantic rank or -1]
    terms: dict[int, list[float]] = {}
    if fusion == "convex":
        kw_values, sem_values = _min_max(_keyword_values(keyword)), _min_max(list(sem.scores))
    else:
        norm = RRF_K + 1  # the RRF maximum is 1 / (RRF_K + 1): dividing maps it to 1
        kw_values = [norm / (RRF_K + rank) for rank in range(1, len(keyword.docids) + 1)]
        sem_values = [norm / (RRF_K + rank) for rank in range(1, len(sem.docids) + 1)]
    for rank, (docid, value) in enumerate(zip(keyword.docids, kw_values, strict=True)):
        terms[docid] = [(1.0 - ratio) * value, 0.0, rank, rank, -1]
    for rank, (docid, value) in enumerate(zip(sem.docids, sem_values, strict=True)):
        entry = terms.setdefault(docid, [0.0, 0.0, rank, -1, rank])
        entry[1], entry[4] = ratio * value, rank
        entry[2] = min(entry[2], rank)
    order = sorted(terms, key=lambda d: (-(terms[d][0] + terms[d][1]), terms[d][2], terms[d][3] < 0))
    if threshold is not None:
        order = [d for d in order if terms[d][0] + terms[d][1] >= threshold]
        candidates = len(order)
    else:
        candidates = max(keyword.candidates, sem.candidates)
    docids: list[int] = []
    scores: list[float] = []
    details: list[dict[str, Any]] = []
    from_semantic = 0
    for docid in order[offset : offset + limit]:
        k_term, s_term, _, k_rank, s_rank = terms[docid]
        semantic_won = s_term > k_term
        from_semantic += semantic_won
        docids.append(docid)
        scores.append(min(k_term + s_term, 1.0))  # float sums may pass 1 by an ulp
        details.append(sem.details[int(s_rank)] if semantic_won else keyword.details[int(k_rank)])
    page = SearchResult(
        docids,
        scores,
        details,
        candidates,
        keyword.matching,
        all_candidates=_union(keyword.all_candidates, sem.all_candidates),
    )
    return page, from_semantic
