"""Deterministic generated corpora for benchmarks (our own generators; no download needed).

Words are drawn with Zipfian frequencies from the vocabulary of the Meilisearch movies demo set
(`meilisearch/movies_1688.json`, shipped in `tests/assets/datasets`), so documents look like the demo
records ({id, title, overview, genres, release_date, rating}).

`corpus_files` gives the realistic benchmark corpus instead: NDJSON documents and a queries file (one
query a line) written by `benchmarks.realistic_corpus` (real English word frequencies from `wordfreq`,
topic mixtures), generated once and cached under `HANZO_BENCH_CACHE` (default `<tmp>/hanzo-bench-corpus`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
from tests import datasets

from benchmarks import realistic_corpus

MOVIES = "meilisearch/movies_1688.json"  # a dataset name (see tests/datasets.py)
SEED = 42
GENRES = [
    "Action",
    "Adventure",
    "Animation",
    "Comedy",
    "Crime",
    "Drama",
    "Family",
    "Fantasy",
    "Horror",
    "Mystery",
    "Romance",
    "Science Fiction",
    "Thriller",
    "War",
    "Western",
]


def load_movies() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = datasets.load_json(MOVIES)
    return docs


def vocabulary() -> list[str]:
    words: dict[str, int] = {}
    for doc in load_movies():
        for w in re.findall(r"[a-z]+", f"{doc.get('title', '')} {doc.get('overview', '')}".lower()):
            words[w] = words.get(w, 0) + 1
    return [w for w, _ in sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))]


def generate(n_docs: int, seed: int = 42) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    vocab = vocabulary()
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    probs = 1.0 / ranks
    probs /= probs.sum()
    title_len = rng.integers(1, 6, n_docs)
    body_len = rng.integers(15, 60, n_docs)
    words = rng.choice(len(vocab), size=int(title_len.sum() + body_len.sum()), p=probs)
    genres = rng.integers(0, len(GENRES), (n_docs, 2))
    dates = rng.integers(0, 1_700_000_000, n_docs)
    ratings = np.round(rng.uniform(1, 10, n_docs), 1)
    docs = []
    pos = 0
    for i in range(n_docs):
        t = words[pos : pos + title_len[i]]
        pos += title_len[i]
        b = words[pos : pos + body_len[i]]
        pos += body_len[i]
        docs.append(
            {
                "id": i,
                "title": " ".join(vocab[w] for w in t).title(),
                "overview": " ".join(vocab[w] for w in b).capitalize() + ".",
                "genres": sorted({GENRES[genres[i, 0]], GENRES[genres[i, 1]]}),
                "release_date": int(dates[i]),
                "rating": float(ratings[i]),
            }
        )
    return docs


def corpus_files(n_docs: int, n_queries: int, seed: int = SEED) -> tuple[Path, Path] | None:
    """NDJSON documents + a queries file (one query a line) of the realistic corpus, generated once and
    cached (`benchmarks.realistic_corpus.corpus_files`), or None without `wordfreq`."""
    return realistic_corpus.corpus_files(n_docs, n_queries, seed)
