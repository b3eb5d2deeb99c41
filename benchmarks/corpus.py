"""Deterministic generated corpora for benchmarks (our own generator; no download needed).

Words are drawn with Zipfian frequencies from the vocabulary of the Meilisearch movies demo set, so
documents look like the demo records ({id, title, overview, genres, release_date, rating}).

`corpus_files` gives the shared benchmark corpus instead: NDJSON documents and TSV queries written by
`../shared/tools/make_corpus.py` (real English word frequencies from `wordfreq`, topic mixtures), run once
and cached under `HANZO_BENCH_CACHE` (default `<tmp>/hanzo-bench-corpus`).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

# The shared datasets live beside the repository (../shared/datasets); HANZO_DATASETS overrides.
DATASETS = Path(os.environ.get("HANZO_DATASETS") or Path(__file__).resolve().parents[1].parent / "shared" / "datasets")
MOVIES = DATASETS / "meilisearch" / "movies_1688.json"
CACHE = Path(os.environ.get("HANZO_BENCH_CACHE") or Path(tempfile.gettempdir()) / "hanzo-bench-corpus")
MAKE_CORPUS = DATASETS.parent / "tools" / "make_corpus.py"
SEED = 42
GENRES = ["Action", "Adventure", "Animation", "Comedy", "Crime", "Drama", "Family", "Fantasy", "Horror",
          "Mystery", "Romance", "Science Fiction", "Thriller", "War", "Western"]


def load_movies() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = msgspec.json.decode(MOVIES.read_bytes())
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
        docs.append({
            "id": i,
            "title": " ".join(vocab[w] for w in t).title(),
            "overview": " ".join(vocab[w] for w in b).capitalize() + ".",
            "genres": sorted({GENRES[genres[i, 0]], GENRES[genres[i, 1]]}),
            "release_date": int(dates[i]),
            "rating": float(ratings[i]),
        })
    return docs


def corpus_files(n_docs: int, n_queries: int, seed: int = SEED) -> tuple[Path, Path] | None:
    """NDJSON documents + TSV queries from the shared generator (cached), or None without wordfreq.

    The generator is slow (minutes even for a small corpus: it builds its topics first), so its output
    is cached by (documents, seed, queries): the query count is part of the key because the generator
    draws the query documents before the documents, so it changes both files.
    """
    if importlib.util.find_spec("wordfreq") is None or not MAKE_CORPUS.exists():
        return None
    docs_path = CACHE / f"corpus_{n_docs}_{seed}_{n_queries}.ndjson"
    queries_path = CACHE / f"queries_{n_docs}_{seed}_{n_queries}.tsv"
    if not (docs_path.exists() and queries_path.exists()):
        CACHE.mkdir(parents=True, exist_ok=True)
        # written under other names and renamed: an interrupted run never leaves a truncated cache entry
        tmp_docs, tmp_queries = docs_path.with_suffix(".part"), queries_path.with_suffix(".part")
        subprocess.run([sys.executable, str(MAKE_CORPUS), "--docs", str(n_docs), "--out", str(tmp_docs),
                        "--queries", str(tmp_queries), "--nqueries", str(n_queries), "--seed", str(seed)],
                       check=True)
        tmp_docs.replace(docs_path)
        tmp_queries.replace(queries_path)
    return docs_path, queries_path
