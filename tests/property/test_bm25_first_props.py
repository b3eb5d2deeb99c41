"""The bm25-first mode's native BM25 (`_native.bm25` through `ranking_rules.bm25.BM25Scorer`) equals the Python
definition (`ranking_rules.bm25.score`) bit for bit, query-term frequencies included.

Random documents over a small vocabulary built for collisions (typo neighbours, repeated words, several
fields), random settings (searchable attributes, typo tolerance, multi-word synonyms, which are
rescored in Python) and random long queries with repeated words, parsed as the bm25-first mode parses
them (distinct terms, `count` = query-term frequency): every candidate's native score must equal
`ranking_rules.bm25.score` with the same frequencies, and the page `search` returns must be the top of that
scoring (raw BM25 descending, then docid).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search import bm25_first
from hanzo_engine.engine.search.bm25_first import bm25_candidates, bm25_rank, bm25_scores_of
from hanzo_engine.engine.search.context import SearchContext
from hanzo_engine.engine.search.derivations import build_nodes
from hanzo_engine.engine.search.engine import search
from hanzo_engine.engine.search.query import MAX_TERMS_BM25, parse_query
from hanzo_engine.engine.search.ranking_rules import bm25
from hanzo_engine.engine.search.types import SearchRequest
from hanzo_engine.engine.update.indexer import read_forward

VOCAB = [
    "sun",
    "flower",
    "flowers",
    "sunn",
    "new",
    "news",
    "york",
    "light",
    "lights",
    "night",
    "knight",
    "dark",
    "darkness",
    "the",
    "of",
    "house",
    "houses",
    "mouse",
    "ocean",
    "oceans",
    "blue",
    "glue",
]
RULES = ["bm25", "words", "typo", "proximity", "attribute", "exactness"]

text = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=12).map(" ".join)
document = st.fixed_dictionaries({"title": text, "body": text, "tags": st.lists(text, max_size=2)})
# long questions: many repeats of few words, typos, a trailing prefix now and then
query = (
    st.lists(st.sampled_from([*VOCAB, "oceen", "lihgt", "hous", "zzz"]), min_size=1, max_size=60)
    .map(" ".join)
    .flatmap(lambda q: st.sampled_from([q, q + " ", q + " fl"]))
)
config = st.fixed_dictionaries(
    {
        "searchableAttributes": st.sampled_from([["*"], ["body", "title"], ["tags", "title", "body"]]),
        "typoTolerance": st.sampled_from([{}, {"enabled": False}, {"disableOnAttributes": ["title"]}]),
        "synonyms": st.sampled_from([{}, {"sun": ["blue ocean"], "night": ["dark"]}]),
        "stopWords": st.sampled_from([[], ["the", "of"]]),
    }
)


def build_index(path: Path, docs: list[dict[str, Any]], cfg: dict[str, Any]) -> Index:
    index = Index.create(path, primary_key="id", created_at=0)
    with index.write() as w:
        w.set_settings(complete_settings({**cfg, "rankingRules": RULES}))
    with index.write() as w:
        for i, doc in enumerate(docs):
            w.put_document(str(i), {"id": i, **doc}, merge=False)
    return index


@settings(max_examples=80, deadline=None)
@given(
    docs=st.lists(document, min_size=1, max_size=30),
    cfg=config,
    queries=st.lists(query, min_size=1, max_size=3),
)
def test_native_bm25_equals_python_with_query_term_frequencies(
    docs: list[dict[str, Any]], cfg: dict[str, Any], queries: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(Path(tmp) / "i", docs, cfg)
        try:
            with index.read() as reader:
                view = complete_settings(reader.settings())
                for q in queries:
                    s = SearchContext(reader, view, SearchRequest(q=q))
                    parsed = parse_query(q, s.tokenizer, max_terms=MAX_TERMS_BM25, distinct=True)
                    if parsed.is_placeholder:
                        continue
                    assert len({(t.word, t.is_prefix) for t in parsed.terms}) == len(parsed.terms)
                    qtf = [t.count for t in parsed.terms]
                    nodes = build_nodes(s, parsed.terms, ngrams=False, splits=False)
                    candidates = bm25_candidates(s, nodes, s.all_docids)
                    docids, native = bm25_scores_of(s, nodes, candidates, qtf)
                    python: dict[int, float] = {}
                    for d in docids.tolist():
                        fwd = read_forward(reader, d)
                        assert fwd is not None
                        python[d] = bm25.score(s, fwd[0], fwd[1], nodes, qtf)
                    assert dict(zip(docids.tolist(), native.tolist(), strict=True)) == python, q
                    result = search(reader, SearchRequest(q=q, limit=5, offset=1), view)
                    ranked = sorted(python, key=lambda d: (-python[d], d))
                    assert result.docids == ranked[1:6], q
                    assert [h["bm25"]["value"] for h in result.details] == [python[d] for d in ranked[1:6]]
                    assert result.candidates == len(candidates)
        finally:
            index.close()


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(document, min_size=1, max_size=40),
    cfg=config,
    q=query,
    on=st.sampled_from([None, ["title"], ["body", "tags"]]),
    keep=st.sets(st.integers(0, 39)),
    wants=st.lists(st.integers(1, 45), min_size=1, max_size=4),
)
def test_pruned_top_equals_the_full_ranking(
    docs: list[dict[str, Any]],
    cfg: dict[str, Any],
    q: str,
    on: list[str] | None,
    keep: set[int],
    wants: list[int],
) -> None:
    """`bm25_rank` (per-document bounds, only the candidates that may reach the top scored) gives the
    first `want` of the full ranking: same documents, order and scores, a filter's universe and
    `attributesToSearchOn` included; in batches of one document too, so that the bounds stop the scoring."""
    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(Path(tmp) / "i", docs, cfg)
        try:
            with index.read() as reader:
                view = complete_settings(reader.settings())
                s = SearchContext(reader, view, SearchRequest(q=q, attributes_to_search_on=on))
                parsed = parse_query(q, s.tokenizer, max_terms=MAX_TERMS_BM25, distinct=True)
                if parsed.is_placeholder:
                    return
                qtf = [t.count for t in parsed.terms]
                nodes = build_nodes(s, parsed.terms, ngrams=False, splits=False)
                for universe in (s.all_docids, s.all_docids & BitMap(keep)):
                    candidates = bm25_candidates(s, nodes, universe)
                    docids, scores = bm25_scores_of(s, nodes, candidates, qtf)
                    full = sorted(
                        zip(docids.tolist(), scores.tolist(), strict=True), key=lambda x: (-x[1], x[0])
                    )
                    for want in wants:
                        for batch in (1, 3, bm25_first.BATCH):
                            with patch.object(bm25_first, "BATCH", batch):
                                assert bm25_rank(s, nodes, candidates, want, qtf) == full[:want], (q, want)
        finally:
            index.close()
