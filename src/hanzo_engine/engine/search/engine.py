"""A keyword search from request to page (milli's `search/new/mod.rs`, `execute_search`).

The query is parsed into located terms (`query`), the universe is the documents left by negative
terms and the filter; without terms the page is a placeholder search (`sorting.Ordering` or the
docid order). Otherwise the query graph's nodes and derivations are built (`derivations`) on the
search context (`context`), and the page comes from the bm25-first mode (`bm25_first`) when `bm25`
is the first ranking rule and nothing needs the pipeline, else from the bucket sort (`bucket_sort`)
over the rules of `ranking_rules`. `docs/search-walk.md` walks one request through these modules.
"""

from __future__ import annotations

import time
from typing import Any

from pyroaring import BitMap

from hanzo_engine.engine.index import IndexReader

from .bm25_first import bm25_first_page
from .bucket_sort import bucket_sort
from .context import SearchContext
from .derivations import build_nodes
from .matching_words import matching_words
from .query import MAX_TERMS, MAX_TERMS_BM25, parse_query
from .query_graph import QueryGraph
from .ranking_rules import bm25, effective_rules
from .ranking_rules.sort import sort_detail, sort_value
from .types import MatchingWords, SearchRequest, SearchResult


def search(reader: IndexReader, request: SearchRequest, settings: dict[str, Any]) -> SearchResult:
    """Run a keyword search in `reader`'s transaction. `settings` = the full settings view."""
    started = time.monotonic()
    ctx = SearchContext(reader, settings, request)
    prefix_search = settings.get("prefixSearch", "indexingTime") != "disabled"
    rules = [r for r in settings.get("rankingRules") or [] if r]
    # bm25 first: an OR query ranked by BM25 (`bm25_first.py`); sort and distinct need the pipeline
    bm25_first = rules[:1] == ["bm25"] and (
        request.ordering is None or (not request.ordering.sort_names and request.ordering.distinct is None)
    )
    parsed = parse_query(
        request.q,
        ctx.tokenizer,
        prefix_search=prefix_search,
        max_terms=MAX_TERMS_BM25 if bm25_first else MAX_TERMS,
        distinct=bm25_first,
    )
    universe = ctx.all_docids
    for w in parsed.negative_words:
        universe = universe - ctx.word_docids(w)
    for phrase in parsed.negative_phrases:
        universe = universe - ctx.phrase_docids(phrase)
    if request.filter_universe is not None:
        universe = universe & request.filter_universe
    ordering = request.ordering  # sort rules and distinct (`sorting.Ordering`)

    if parsed.is_placeholder:
        if ordering is not None:
            result: SearchResult = ordering.placeholder(universe, request, rules)
            return result
        result = _placeholder(ctx, universe, request, rules)
        result.all_candidates = universe
        return result

    nodes = build_nodes(ctx, parsed.terms, ngrams=not bm25_first, splits=not bm25_first)
    graph = QueryGraph(len(parsed.terms), nodes, bool(parsed.terms[-1].is_prefix))
    if bm25_first:
        ids, scores, hit_details, found = bm25_first_page(
            ctx,
            nodes,
            universe,
            request.offset,
            request.limit,
            request.ranking_score_threshold,
            bm25.LEVELS,
            bm25.HALF,
            [t.count for t in parsed.terms],
        )
        return SearchResult(
            docids=ids,
            scores=scores,
            details=hit_details,
            candidates=len(found),
            matching=matching_words(graph) if request.matching_needed else MatchingWords(),
            all_candidates=found,
        )
    strategy = request.matching_strategy
    pipeline = effective_rules(rules, strategy, ordering.sort_names if ordering is not None else None)
    result = bucket_sort(ctx, graph, request, pipeline, strategy, universe, started)
    if request.matching_needed:
        result.matching = matching_words(graph)
    return result


def _placeholder(
    ctx: SearchContext, universe: BitMap, request: SearchRequest, rules: list[str]
) -> SearchResult:
    """No query and no `sorting.Ordering`: only custom `field:asc|desc` rules order the documents,
    by their stored values, then the docid."""
    custom = effective_rules([r for r in rules if r.endswith((":asc", ":desc"))], "all")
    want = request.offset + request.limit
    details: list[dict[str, Any]] = []
    if custom:
        shown = ctx.settings.get("displayedAttributes") or ["*"]
        displayed = None if shown == ["*"] else set(shown)
        keyed = []
        for docid in universe:
            doc = ctx.reader.document_by_internal_id(docid) or {}
            values = [sort_value(doc, r) for r in custom]
            keyed.append((tuple(v[0] for v in values), docid, [v[1] for v in values]))
        keyed.sort(key=lambda x: (x[0], x[1]))
        page = keyed[request.offset : want]
        docids = [d for _, d, _ in page]
        for _, _, values in page:
            detail: dict[str, Any] = {}
            for order, (rule, value) in enumerate(zip(custom, values, strict=True)):
                detail.update(sort_detail(rule, order, value, displayed))
            details.append(detail)
    else:
        docids = list(universe[request.offset : want]) if request.limit else []
        details = [{} for _ in docids]
    return SearchResult(
        docids=docids,
        scores=[1.0] * len(docids),
        details=details,
        candidates=len(universe),
        matching=MatchingWords(),
    )
