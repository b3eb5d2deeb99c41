"""Deterministic generated corpora for benchmarks (our own generator; no download needed).

Words are drawn with Zipfian frequencies from the vocabulary of the Meilisearch movies demo set, so
documents look like the demo records ({id, title, overview, genres, release_date, rating}).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

# The shared datasets live beside the repository (../shared/datasets); HANZO_DATASETS overrides.
DATASETS = Path(os.environ.get("HANZO_DATASETS") or Path(__file__).resolve().parents[1].parent / "shared" / "datasets")
MOVIES = DATASETS / "meilisearch" / "movies_1688.json"
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
