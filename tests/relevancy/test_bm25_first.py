"""The bm25-first ranking mode (`engine/search/bm25_first.py`): `bm25` as the first ranking rule.

The candidates are the documents matching ANY query term; they are ordered by BM25 over all the
terms (then docid), checked against a pure-Python BM25F computed from the raw documents with the index
tokenizer (k1 1.2, b 0.75, per-field lengths, every field weighing 1 with `searchableAttributes: ["*"]`,
idf = ln(1 + (N - df + 0.5) / (df + 0.5))).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from pyroaring import BitMap

from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.documents.fields import flatten
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search import bm25_first
from hanzo_engine.engine.search.bm25_first import bm25_candidates, bm25_rank, bm25_scores_of
from hanzo_engine.engine.search.context import SearchContext
from hanzo_engine.engine.search.derivations import build_nodes
from hanzo_engine.engine.search.engine import search
from hanzo_engine.engine.search.query import MAX_TERMS_BM25, parse_query
from hanzo_engine.engine.search.types import SearchRequest, SearchResult
from hanzo_engine.engine.tokenizer import Tokenizer

K1, B = 1.2, 0.75
STOP = ["the", "of"]
BM25_FIRST = ["bm25", "words", "typo", "proximity", "attribute", "exactness"]

DOCS: list[dict[str, Any]] = [
    {"id": 0, "title": "Ocean currents", "body": "The ocean moves heat; currents carry it far."},
    {"id": 1, "title": "Desert winds", "body": "Winds shape dunes. The desert is dry, the desert is wide."},
    {"id": 2, "title": "ocean ocean ocean", "body": "A short one."},
    {
        "id": 3,
        "title": "Mountain",
        "body": "Snow, rock, ocean views and winds on every mountain ridge we climbed.",
    },
    {"id": 4, "title": "", "body": ["ocean", "winds of the ocean", "dunes"]},
    {"id": 5, "title": "Rivers", "body": "ocean rivers meet the sea near the dunes"},
    {"id": 6, "title": "the", "body": "nothing here"},
    {"id": 7, "title": "Glaciers", "body": "ice sheets and glaciers retreat; meltwater flows to rivers"},
]


def texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


def field_words() -> dict[str, dict[int, list[str]]]:
    """field -> doc id -> its words (normalized, stop words out)."""
    tok = Tokenizer(stop_words=STOP)
    words: dict[str, dict[int, list[str]]] = {}
    for doc in DOCS:
        for name, value in flatten(doc).items():
            found = [w for text in texts(value) for w, _ in tok.word_positions(text)]
            if found:
                words.setdefault(name, {}).setdefault(doc["id"], []).extend(found)
    return words


def reference(terms: list[tuple[str, ...]]) -> dict[int, float]:
    """BM25F of every document matching at least one term (a word, or a phrase of consecutive words)."""
    words = field_words()

    def tf(ws: list[str], term: tuple[str, ...]) -> int:
        return sum(tuple(ws[i : i + len(term)]) == term for i in range(len(ws) - len(term) + 1))

    n = len(DOCS)
    containing = {
        t: {i for per_doc in words.values() for i, ws in per_doc.items() if tf(ws, t)} for t in terms
    }
    scores: dict[int, float] = {}
    for i in set().union(*containing.values()):
        total = 0.0
        for t in terms:
            df = len(containing[t])
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tfc = 0.0  # the term's occurrences over the fields, each length-normalized
            for per_doc in words.values():
                ws = per_doc.get(i)
                f = tf(ws, t) if ws else 0
                if not ws or not f:
                    continue
                avgdl = sum(len(v) for v in per_doc.values()) / len(per_doc)
                tfc += f / (1 - B + B * len(ws) / avgdl)
            if tfc:
                total += idf * tfc * (K1 + 1) / (tfc + K1)
        scores[i] = total
    return scores


def expected_order(scores: dict[int, float]) -> list[int]:
    return sorted(scores, key=lambda i: (-scores[i], i))


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    idx = Index.create(tmp_path / "idx", primary_key="id", created_at=0)
    with idx.write() as w:
        w.set_settings({"typoTolerance": {"enabled": False}, "stopWords": STOP, "rankingRules": BM25_FIRST})
    with idx.write() as w:
        for doc in DOCS:  # in id order: internal docids equal the ids
            w.put_document(str(doc["id"]), doc, merge=False)
    yield idx
    idx.close()


def run(index: Index, q: str, settings: dict[str, Any] | None = None, **params: Any) -> SearchResult:
    with index.read() as reader:
        full = complete_settings({**reader.settings(), **(settings or {})})
        return search(reader, SearchRequest(q=q, limit=params.pop("limit", 100), **params), full)


@pytest.mark.parametrize(
    "q", ["ocean winds ", "desert rivers ", "glaciers ocean dunes ", "sea mountain winds ", "winds "]
)
def test_any_word_ordered_by_bm25(index: Index, q: str) -> None:
    expected = reference([(w,) for w in q.split()])
    result = run(index, q)
    assert result.docids == expected_order(expected)
    assert result.candidates == len(expected)
    for docid, detail, score in zip(result.docids, result.details, result.scores, strict=True):
        raw = detail["bm25"]["value"]
        assert raw == pytest.approx(expected[docid], rel=1e-12)
        assert score == (1 + round(raw / (raw + 5.0) * 99)) / 100


def test_words_rule_first_keeps_only_documents_with_the_words(index: Index) -> None:
    # the contrast: with Meilisearch's rules, `last` keeps the first word (ocean) mandatory
    result = run(index, "ocean glaciers ", {"rankingRules": BM25_FIRST[1:]})
    assert 7 not in result.docids
    assert 7 in run(index, "ocean glaciers ").docids


def test_phrase_term(index: Index) -> None:
    expected = reference([("ocean", "currents"), ("dunes",)])
    result = run(index, '"ocean currents" dunes')
    assert result.docids == expected_order(expected)
    for docid, detail in zip(result.docids, result.details, strict=True):
        assert detail["bm25"]["value"] == pytest.approx(expected[docid], rel=1e-12)


def filler_words(n: int) -> list[str]:
    """`n` distinct words found nowhere (letters only: one token each)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [f"zz{letters[i // 676]}{letters[i // 26 % 26]}{letters[i % 26]}" for i in range(n)]


def test_long_queries_keep_every_distinct_term(index: Index) -> None:
    # 75 words, as a natural-language question: the 76th distinct term still counts
    fillers = " ".join(filler_words(75))
    assert run(index, f"{fillers} glaciers ").docids == [7]
    # the default pipeline keeps 10 terms: the last word is ignored
    assert run(index, f"{fillers} glaciers ", {"rankingRules": BM25_FIRST[1:]}).docids == []


def test_distinct_terms_are_bounded_at_1024(index: Index) -> None:
    fillers = filler_words(MAX_TERMS_BM25)
    assert MAX_TERMS_BM25 == 1024
    # repeats of kept terms do not use up the bound
    assert run(index, " ".join([*fillers[:-1], *fillers[:-1], "glaciers "])).docids == [7]
    # a 1,025th distinct term is ignored
    assert run(index, " ".join([*fillers, "glaciers "])).docids == []


def test_parse_distinct_counts_query_term_frequency() -> None:
    tok = Tokenizer(stop_words=STOP)
    q = 'Ocean winds, the ocean; OCEAN "ocean winds" winds "ocean winds" ocea'
    parsed = parse_query(q, tok, max_terms=MAX_TERMS_BM25, distinct=True)
    assert [(t.index, t.word, t.count, t.is_prefix) for t in parsed.terms] == [
        (0, "ocean", 3, False),
        (1, "winds", 2, False),
        (2, "ocean winds", 2, False),
        (3, "ocea", 1, True),
    ]
    assert parsed.terms[2].phrase == ["ocean", "winds"]
    # the default parsing keeps repeats as separate terms, up to 10
    plain = parse_query(q, tok)
    assert [t.word for t in plain.terms] == [
        "ocean",
        "winds",
        "ocean",
        "ocean",
        "ocean winds",
        "winds",
        "ocean winds",
        "ocea",
    ]
    assert all(t.count == 1 for t in plain.terms)
    assert len(parse_query(" ".join(filler_words(30)), tok).terms) == 10
    assert (
        len(parse_query(" ".join(filler_words(1100)), tok, max_terms=MAX_TERMS_BM25, distinct=True).terms)
        == 1024
    )


@pytest.mark.parametrize(
    "q", ["ocean ocean winds ", "winds ocean winds winds dunes ocean ", "the ocean of the sea "]
)
def test_repeated_terms_weigh_by_query_term_frequency(index: Index, q: str) -> None:
    # a repeated word adds its BM25 once per occurrence (bm25s, SQLite FTS5): qtf * idf
    words = q.split()
    expected = reference([(w,) for w in words if w not in STOP])
    result = run(index, q)
    assert result.docids == expected_order(expected)
    for docid, detail in zip(result.docids, result.details, strict=True):
        assert detail["bm25"]["value"] == pytest.approx(expected[docid], rel=1e-12)
    once = run(index, " ".join(dict.fromkeys(words)) + " ")
    assert result.candidates == once.candidates


def test_pagination_filter_negation_threshold(index: Index) -> None:
    expected = expected_order(reference([("ocean",), ("winds",)]))
    assert run(index, "ocean winds ", offset=2, limit=3).docids == expected[2:5]
    universe = BitMap([1, 3, 5])
    assert run(index, "ocean winds ", filter_universe=universe).docids == [
        i for i in expected if i in universe
    ]
    assert run(index, "ocean winds -desert").docids == [i for i in expected if i != 1]
    result = run(index, "ocean winds ")
    cut = result.scores[2]
    kept = run(index, "ocean winds ", ranking_score_threshold=cut)
    assert kept.docids == [d for d, s in zip(result.docids, result.scores, strict=True) if s >= cut]
    assert kept.candidates == len(kept.docids)


def test_typo_derivations_count(tmp_path: Path) -> None:
    idx = Index.create(tmp_path / "typo", primary_key="id", created_at=0)
    try:
        with idx.write() as w:
            w.set_settings({"stopWords": STOP, "rankingRules": BM25_FIRST})
        with idx.write() as w:
            for doc in DOCS:
                w.put_document(str(doc["id"]), doc, merge=False)
        # `glacier` (prefix) and `oceen` (one typo) stand for glaciers and ocean
        expected = reference([("ocean",), ("glaciers",)])
        result = run(idx, "oceen glacier")
        assert sorted(result.docids) == sorted(expected)
        assert result.docids == expected_order(expected)
    finally:
        idx.close()


@pytest.mark.parametrize(
    "q", ["ocean winds dunes glaciers ", "the ocean rivers sea ", "winds desert mountain "]
)
def test_maxscore_pruning_keeps_the_exact_top(tmp_path: Path, q: str) -> None:
    # no stop words: `the` and `ocean` match most documents, which the pruning may skip
    idx = Index.create(tmp_path / "prune", primary_key="id", created_at=0)
    try:
        with idx.write() as w:
            w.set_settings({"typoTolerance": {"enabled": False}, "rankingRules": BM25_FIRST})
        with idx.write() as w:
            for doc in DOCS:
                w.put_document(str(doc["id"]), doc, merge=False)
        with idx.read() as reader:
            settings = complete_settings(reader.settings())
            s = SearchContext(reader, settings, SearchRequest(q=q))
            nodes = build_nodes(s, parse_query(q, s.tokenizer).terms)
            candidates = bm25_candidates(s, nodes, s.all_docids)
            docids, scores = bm25_scores_of(s, nodes, candidates)
            full = sorted(zip(docids.tolist(), scores.tolist(), strict=True), key=lambda x: (-x[1], x[0]))
            for want in range(1, len(full) + 2):
                assert bm25_rank(s, nodes, candidates, want) == full[:want]
    finally:
        idx.close()


def test_pruning_follows_writes(tmp_path: Path) -> None:
    # the pruned top stays exact across writes that move a term between fields and delete documents
    idx = Index.create(tmp_path / "writes", primary_key="id", created_at=0)
    q = "ocean"
    before = [
        {"id": 0, "title": "calm", "body": "ocean ocean ocean ocean"},
        {"id": 1, "title": "ocean", "body": "ocean ocean"},
        {"id": 2, "title": "ocean", "body": "a long body of many words with the ocean once in it"},
        *({"id": i, "title": "other", "body": "nothing"} for i in range(3, 8)),
    ]

    def check() -> None:
        with idx.read() as reader:
            settings = complete_settings(reader.settings())
            s = SearchContext(reader, settings, SearchRequest(q=q))
            parsed = parse_query(q, s.tokenizer, max_terms=MAX_TERMS_BM25, distinct=True)
            nodes = build_nodes(s, parsed.terms, ngrams=False, splits=False)
            candidates = bm25_candidates(s, nodes, s.all_docids)
            docids, scores = bm25_scores_of(s, nodes, candidates)
            full = sorted(zip(docids.tolist(), scores.tolist(), strict=True), key=lambda x: (-x[1], x[0]))
            for want in range(1, len(full) + 1):
                for batch in (1, bm25_first.BATCH):
                    with patch.object(bm25_first, "BATCH", batch), patch.object(bm25_first, "GROWTH", 0.0):
                        assert bm25_rank(s, nodes, candidates, want) == full[:want]

    try:
        with idx.write() as w:
            w.set_settings({"typoTolerance": {"enabled": False}, "rankingRules": BM25_FIRST})
        with idx.write() as w:
            for doc in before:
                w.put_document(str(doc["id"]), doc, merge=False)
        check()
        with idx.write() as w:
            w.put_document(
                "0", {"id": 0, "title": "ocean ocean ocean", "body": "ocean ocean ocean ocean"}, merge=False
            )
        check()
        with idx.write() as w:
            w.delete_document("1")
        check()
        with idx.write() as w:
            w.put_document("5", {"id": 5, "title": "ocean", "body": "ocean"}, merge=False)
        check()
    finally:
        idx.close()
