"""The realistic benchmark corpus: deterministic per seed, a broad vocabulary, real stop-word shares."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("wordfreq")

from benchmarks import realistic_corpus

FIELDS = {"id", "title", "overview", "genres", "release_date", "rating", "popularity"}


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return realistic_corpus.generate(100_000, seed=7)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def test_same_seed_same_corpus_other_seed_other_corpus() -> None:
    a = realistic_corpus.generate(2_000, seed=3)
    assert a == realistic_corpus.generate(2_000, seed=3)
    assert a != realistic_corpus.generate(2_000, seed=4)
    assert realistic_corpus.make_queries(a, 200, seed=3) == realistic_corpus.make_queries(a, 200, seed=3)
    assert realistic_corpus.make_queries(a, 200, seed=3) != realistic_corpus.make_queries(a, 200, seed=5)


def test_documents_look_like_movie_records(docs: list[dict]) -> None:
    assert [d["id"] for d in docs] == list(range(len(docs)))
    for doc in docs[:1000]:
        assert set(doc) == FIELDS
        assert doc["title"] and doc["title"][0].isupper()
        assert doc["overview"][0].isupper() and doc["overview"].endswith(".")
        assert doc["genres"] and set(doc["genres"]) <= set(realistic_corpus.GENRES)
        assert 1 <= doc["rating"] <= 10 and doc["popularity"] >= 0
    lengths = [len(d["overview"].split()) for d in docs]
    assert 30 <= sum(lengths) / len(lengths) <= 60 and max(lengths) > 150


def test_vocabulary_is_broad_with_real_stop_word_share(docs: list[dict]) -> None:
    counts = Counter(w for d in docs for w in _words(f"{d['title']} {d['overview']}"))
    assert len(counts) > 40_000  # tens of thousands of distinct words at 100k documents
    total = sum(counts.values())
    stop = {"the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "with", "as", "was", "on"}
    share = sum(counts[w] for w in stop) / total
    assert 0.08 <= share <= 0.35, share  # function words: a sizeable share, as in English prose
    assert 0.02 <= counts["the"] / total <= 0.07
    # words of a topic co-occur: the commonest pair of first two title words is far above chance
    pairs = Counter(tuple(_words(d["title"])[:2]) for d in docs if len(_words(d["title"])) >= 2)
    firsts, seconds = Counter(a for a, _ in pairs.elements()), Counter(b for _, b in pairs.elements())
    (a, b), seen = pairs.most_common(1)[0]
    n = sum(pairs.values())
    assert seen >= 5 * firsts[a] * seconds[b] / n


def test_queries_short_and_long(docs: list[dict]) -> None:
    queries = realistic_corpus.make_queries(docs, 1_000)
    assert len(queries) == 1_000 and all(queries)
    short = [q for q in queries if len(q.split()) <= 3]
    assert 0.78 <= len(short) / len(queries) <= 0.92
    assert max(len(q.split()) for q in queries) <= 8
    assert len(set(queries)) > 800


def test_corpus_files_cached_and_consistent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANZO_BENCH_CACHE", str(tmp_path))
    files = realistic_corpus.corpus_files(1_500, 100, seed=9)
    assert files is not None
    docs_path, queries_path = files
    docs = [json.loads(line) for line in docs_path.read_text().splitlines()]
    assert docs == realistic_corpus.generate(1_500, seed=9)
    assert realistic_corpus.read_queries(queries_path) == realistic_corpus.make_queries(docs, 100, seed=9)
    mtime = docs_path.stat().st_mtime_ns
    assert realistic_corpus.corpus_files(1_500, 100, seed=9) == files
    other = realistic_corpus.corpus_files(1_500, 50, seed=9)  # new queries, the documents reused
    assert other is not None and other[0] == docs_path and docs_path.stat().st_mtime_ns == mtime
    assert realistic_corpus.read_queries(other[1]) == realistic_corpus.make_queries(docs, 50, seed=9)
