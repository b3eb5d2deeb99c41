"""BM25 in `_rankingScoreDetails.bm25.value`, checked against a slow pure-Python reference.

Definition (engine/search/ranking_rules/bm25.py `score`), BM25F: per query term t of the document,
idf(t) * tfc * (k1 + 1) / (tfc + k1), summed over the terms, with tfc = the sum over the searched
fields f holding t of w(f) * tf / (1 - b + b * dl / avgdl); k1 = 1.2, b = 0.75,
idf = ln(1 + (N - df + 0.5) / (df + 0.5)); N = documents in the index, df = documents containing t in
a searched field, tf = occurrences of t in f, dl = words of f in the document, avgdl = words of f over
the documents having words in f (stop words are not words), w(f) = 3 for the fields of the first
searchable attribute when the attributes are listed, else 1. The reference recomputes all of it from
the raw documents with the index tokenizer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.documents.fields import flatten
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search.engine import search
from hanzo_engine.engine.search.types import SearchRequest
from hanzo_engine.engine.tokenizer import Tokenizer

K1, B = 1.2, 0.75
FIRST_WEIGHT = 3.0

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
    {"id": 5, "title": "Rivers", "nested": {"note": "ocean rivers meet the sea"}},
    {"id": 6, "title": "the", "body": "nothing here"},
]


def texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        yield str(value)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


def reference(
    docs: list[dict[str, Any]],
    query: list[str],
    fields: list[str] | None,
    stop_words: list[str],
    first: str | None = None,
) -> dict[Any, float]:
    """BM25F of every document matching all of `query`, straight from the documents (`first`: the
    field of the first listed searchable attribute)."""
    tok = Tokenizer(stop_words=stop_words)
    # field -> doc id -> words (normalized, stop words out)
    words: dict[str, dict[Any, list[str]]] = {}
    for doc in docs:
        for name, value in flatten(doc).items():
            if fields is not None and name not in fields:
                continue
            found = [w for text in texts(value) for w, _ in tok.word_positions(text)]
            if found:
                words.setdefault(name, {}).setdefault(doc["id"], []).extend(found)
    n = len(docs)
    containing = {t: {i for per_doc in words.values() for i, ws in per_doc.items() if t in ws} for t in query}
    matching = set.intersection(*containing.values())
    scores: dict[Any, float] = {}
    for i in matching:
        total = 0.0
        for t in query:
            df = len(containing[t])
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tfc = 0.0
            for name, per_doc in words.items():
                ws = per_doc.get(i)
                if not ws or t not in ws:
                    continue
                tf = ws.count(t)
                avgdl = sum(len(v) for v in per_doc.values()) / len(per_doc)
                tfc += (FIRST_WEIGHT if name == first else 1.0) * tf / (1 - B + B * len(ws) / avgdl)
            if tfc:
                total += idf * tfc * (K1 + 1) / (tfc + K1)
        scores[i] = total
    return scores


def build(path: Path, docs: list[dict[str, Any]], settings: dict[str, Any]) -> Index:
    index = Index.create(path, primary_key="id", created_at=0)
    with index.write() as w:
        w.set_settings(settings)
    with index.write() as w:
        for doc in docs:
            w.put_document(str(doc["id"]), doc, merge=False)
    return index


def engine_bm25(index: Index, q: str, **params: Any) -> tuple[dict[Any, float], list[dict[str, Any]]]:
    with index.read() as reader:
        settings = complete_settings(reader.settings())
        if "bm25" not in settings["rankingRules"]:
            # the tie-break has no detail entry: a last `bm25` rule shows the same raw value
            settings["rankingRules"] = [*settings["rankingRules"], "bm25"]
        result = search(reader, SearchRequest(q=q, limit=100, matching_strategy="all", **params), settings)
        ids = [reader.document_by_internal_id(d)["id"] for d in result.docids]  # type: ignore[index]
    return {i: d["bm25"]["value"] for i, d in zip(ids, result.details, strict=True)}, result.details


NO_TYPO = {"typoTolerance": {"enabled": False}, "stopWords": ["the", "of"]}


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    idx = build(tmp_path / "idx", DOCS, NO_TYPO)
    yield idx
    idx.close()


@pytest.mark.parametrize(
    "q", ["ocean ", "winds ", "ocean winds ", "desert ", "ocean ocean ", "dunes winds ", "rivers sea "]
)
def test_bm25_matches_reference(index: Index, q: str) -> None:
    got, _ = engine_bm25(index, q)
    expected = reference(DOCS, q.split(), None, ["the", "of"])
    assert got.keys() == expected.keys()
    for i, value in expected.items():
        assert got[i] == pytest.approx(value, rel=1e-12), i


def test_bm25_over_searched_fields_only(tmp_path: Path) -> None:
    idx = build(tmp_path / "idx", DOCS, {**NO_TYPO, "searchableAttributes": ["body"]})
    try:
        got, _ = engine_bm25(idx, "ocean ")
        assert got == pytest.approx(reference(DOCS, ["ocean"], ["body"], ["the", "of"]), rel=1e-12)
        got, _ = engine_bm25(idx, "ocean ", attributes_to_search_on=["body"])
        assert got == pytest.approx(reference(DOCS, ["ocean"], ["body"], ["the", "of"]), rel=1e-12)
    finally:
        idx.close()
    idx = build(tmp_path / "idx2", DOCS, NO_TYPO)
    try:
        got, _ = engine_bm25(idx, "ocean ", attributes_to_search_on=["title", "nested"])
        assert got == pytest.approx(
            reference(DOCS, ["ocean"], ["title", "nested.note"], ["the", "of"]), rel=1e-12
        )
    finally:
        idx.close()


def test_bm25f_weighs_the_first_searchable_attribute(tmp_path: Path) -> None:
    idx = build(tmp_path / "idx", DOCS, {**NO_TYPO, "searchableAttributes": ["title", "body"]})
    try:
        for q in ("ocean ", "ocean winds "):
            got, _ = engine_bm25(idx, q)
            expected = reference(DOCS, q.split(), ["title", "body"], ["the", "of"], first="title")
            assert got == pytest.approx(expected, rel=1e-12)
        # `ocean` is in titles: with every field weighing 1 the values would differ
        got, _ = engine_bm25(idx, "ocean ")
        assert got != pytest.approx(reference(DOCS, ["ocean"], ["title", "body"], ["the", "of"]))
    finally:
        idx.close()


def test_bm25_follows_updates_and_deletes(index: Index) -> None:
    docs = [d for d in DOCS if d["id"] != 2]
    with index.write() as w:
        w.delete_document("2")
        w.put_document("0", {"id": 0, "title": "Ocean", "body": "ocean ocean waves"}, merge=False)
    docs = [{"id": 0, "title": "Ocean", "body": "ocean ocean waves"} if d["id"] == 0 else d for d in docs]
    got, _ = engine_bm25(index, "ocean ")
    assert got == pytest.approx(reference(docs, ["ocean"], None, ["the", "of"]), rel=1e-12)


def test_bm25_as_a_ranking_rule(tmp_path: Path) -> None:
    idx = build(tmp_path / "idx", DOCS, {**NO_TYPO, "rankingRules": ["words", "bm25"]})
    try:
        got, details = engine_bm25(idx, "ocean ")
        # ordered by BM25, the detail shows the raw value and value / (value + 5)
        values = [d["bm25"]["value"] for d in details]
        assert values == sorted(values, reverse=True)
        for d in details:
            assert d["bm25"]["order"] == 0  # matchingStrategy `all`: no words rule
            assert d["bm25"]["score"] == pytest.approx(d["bm25"]["value"] / (d["bm25"]["value"] + 5))
        assert got == pytest.approx(reference(DOCS, ["ocean"], None, ["the", "of"]), rel=1e-12)
    finally:
        idx.close()


def test_bm25_breaks_ties_left_by_the_rules(index: Index) -> None:
    # "ocean" alone: words, typo, proximity... tie most documents; BM25 then orders them
    with index.read() as reader:
        settings = complete_settings(reader.settings())
        settings["rankingRules"] = ["words"]
        result = search(reader, SearchRequest(q="ocean ", limit=100), settings)
        ids = [reader.document_by_internal_id(d)["id"] for d in result.docids]  # type: ignore[index]
    assert all(list(d) == ["words"] for d in result.details)  # the tie-break has no detail entry
    expected = reference(DOCS, ["ocean"], None, ["the", "of"])
    values = [expected[i] for i in ids]
    assert values == sorted(values, reverse=True)
    assert len(set(values)) > 1
