"""Realistic English benchmark corpus: real word frequencies, topic mixtures, deterministic per seed.

The narrow movie vocabulary of `benchmarks.corpus` hides what typo and prefix derivations, frequent
words and long posting lists cost on real text. This generator draws from the ~57,000 alphabetic words
among `wordfreq`'s top 60,000 English words with their real frequencies, so stop words keep their real
share and the long tail is long. Plain unigram sampling has no co-occurrence (which BM25, proximity and
posting intersections depend on), so every document mixes one or two topics: a topic owns 600 content
words (frequency ranks 150..40,000, Zipf-weighted inside the topic); a title token is a topic word with
probability 0.85, an overview token with probability 0.40, otherwise a background word drawn from the
real distribution. Topics themselves are Zipf-popular, so some words co-occur in many documents.

Documents look like the Meilisearch movies demo records:
`{id, title, overview, genres, release_date, rating, popularity}`.

Everything is vectorized with numpy (PCG64, fixed word list), so the same seed gives the same corpus and
a million documents take seconds; `corpus_files` writes them as NDJSON (plus a query file) in chunks,
cached under `HANZO_BENCH_CACHE` (default `<tmp>/hanzo-bench-corpus`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

GENRES = [
    "Action",
    "Adventure",
    "Animation",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Family",
    "Fantasy",
    "History",
    "Horror",
    "Music",
    "Mystery",
    "Romance",
    "Science Fiction",
    "Thriller",
    "War",
    "Western",
]
# the genres of a document drawing from topics t and u: those of t % 18 and u % 18, at index 18 * t + u
GENRE_PAIRS = [tuple(sorted({a, b})) for a in GENRES for b in GENRES]
VOCAB_SIZE = 60_000
N_TOPICS = 2_000
TOPIC_WORDS = 600
TOPIC_RANKS = (150, 40_000)
TITLE_TOPIC_SHARE = 0.85
BODY_TOPIC_SHARE = 0.40
CONTENT_RANK = 100  # words ranked below this are function words: short queries rarely consist of them
CHUNK = 50_000  # documents generated at once (bounds memory; part of what the seed determines)
VERSION = 1  # bump when the output for a seed changes: it names the cache files
_VARIANTS = 6  # word, "word,", "word.", "Word", "Word,", "Word."


def _cache_dir() -> Path:
    return Path(os.environ.get("HANZO_BENCH_CACHE") or Path(tempfile.gettempdir()) / "hanzo-bench-corpus")


@functools.cache
def vocabulary() -> tuple[list[str], np.ndarray]:
    """The alphabetic ASCII words among wordfreq's top English words, most frequent first, and their
    probabilities (real frequencies, normalised over the kept words)."""
    import wordfreq

    freq = wordfreq.get_frequency_dict("en")
    words = [w for w in wordfreq.top_n_list("en", VOCAB_SIZE) if w.isalpha() and w.isascii()]
    probs = np.array([freq[w] for w in words], dtype=np.float64)
    return words, probs / probs.sum()


@functools.cache
def _spellings() -> np.ndarray:
    """Every word in its six spellings (see `_VARIANTS`), as one object array indexed variant * V + id."""
    words, _ = vocabulary()
    caps = [w.capitalize() for w in words]
    return np.array(
        [
            *words,
            *(w + "," for w in words),
            *(w + "." for w in words),
            *caps,
            *(w + "," for w in caps),
            *(w + "." for w in caps),
        ],
        dtype=object,
    )


def _zipf_cdf(n: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** exponent
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def _draw(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF sampling: indices of `cdf` for uniform draws `u`."""
    return np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)


def _join(spelled: np.ndarray, ends: np.ndarray) -> list[str]:
    """Split a flat array of spelled tokens at `ends` (exclusive ends per document) and join each part."""
    starts = np.concatenate(([0], ends[:-1]))
    return [" ".join(spelled[s:e]) for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]


def _chunks(n_docs: int, seed: int) -> Iterator[list[dict[str, Any]]]:
    rng = np.random.Generator(np.random.PCG64(seed))
    words, probs = vocabulary()
    n_vocab = len(words)
    spellings = _spellings()
    background_cdf = np.cumsum(probs)
    background_cdf /= background_cdf[-1]
    # topic word lists (a few duplicates inside a topic only merge their weights)
    topics = rng.integers(TOPIC_RANKS[0], min(TOPIC_RANKS[1], n_vocab), size=(N_TOPICS, TOPIC_WORDS))
    in_topic_cdf = _zipf_cdf(TOPIC_WORDS, 0.8)
    topic_cdf = _zipf_cdf(N_TOPICS, 0.8)

    def tokens(doc_topics: np.ndarray, lengths: np.ndarray, topic_share: float) -> np.ndarray:
        """Word ids for documents of the given lengths, each drawing from its one or two topics."""
        owner = np.repeat(np.arange(len(lengths)), lengths)
        total = len(owner)
        side = (rng.random(total) < 0.5).astype(np.int64)
        topic_word = topics[doc_topics[owner, side], _draw(in_topic_cdf, rng.random(total))]
        background = _draw(background_cdf, rng.random(total))
        return np.where(rng.random(total) < topic_share, topic_word, background)

    for first in range(0, n_docs, CHUNK):
        n = min(CHUNK, n_docs - first)
        doc_topics = _draw(topic_cdf, rng.random((n, 2)))
        single = rng.random(n) < 0.7
        doc_topics[single, 1] = doc_topics[single, 0]
        title_len = rng.integers(1, 7, size=n)
        body_len = np.clip(rng.lognormal(3.6, 0.5, size=n), 8, 300).astype(np.int64)

        title_ids = tokens(doc_topics, title_len, TITLE_TOPIC_SHARE) + 3 * n_vocab  # capitalised
        title_ends = np.cumsum(title_len)

        body_ids = tokens(doc_topics, body_len, BODY_TOPIC_SHARE)
        body_ends = np.cumsum(body_len)
        # sentences of ~14 words with the odd comma; the overview ends with a full stop
        mark = rng.random(len(body_ids))
        variant = np.where(mark < 1 / 14, 2, np.where(mark < 1 / 14 + 1 / 12, 1, 0))
        variant[body_ends - 1] = 2
        capital = np.empty(len(body_ids), dtype=bool)
        capital[0] = True
        capital[1:] = variant[:-1] == 2
        body_ids = body_ids + (variant + 3 * capital) * n_vocab

        dates = rng.integers(-1_500_000_000, 1_750_000_000, size=n)
        ratings = np.round(rng.uniform(1, 10, size=n), 1)
        popularity = np.round(rng.pareto(1.5, size=n) * 5, 3)

        titles = _join(spellings[title_ids], title_ends)
        overviews = _join(spellings[body_ids], body_ends)
        genres = (doc_topics % len(GENRES)) @ np.array([len(GENRES), 1])
        yield [
            {
                "id": first + i,
                "title": title,
                "overview": overview,
                "genres": list(GENRE_PAIRS[pair]),
                "release_date": date,
                "rating": rating,
                "popularity": pop,
            }
            for i, (title, overview, pair, date, rating, pop) in enumerate(
                zip(
                    titles,
                    overviews,
                    genres.tolist(),
                    dates.tolist(),
                    ratings.tolist(),
                    popularity.tolist(),
                    strict=True,
                )
            )
        ]


def generate(n_docs: int, seed: int = 42) -> list[dict[str, Any]]:
    """`n_docs` realistic documents (ids 0..n_docs-1); the same seed gives the same documents."""
    return [doc for chunk in _chunks(n_docs, seed) for doc in chunk]


def _query_docs(n_docs: int, n: int, seed: int) -> np.ndarray:
    """Which documents the `n` queries are taken from (two candidates per query, in query order)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    return rng.choice(n_docs, size=min(2 * n, n_docs), replace=False)


def _queries(source: dict[int, dict[str, Any]], order: np.ndarray, n: int, seed: int) -> list[str]:
    words, _ = vocabulary()
    rank = {w: r for r, w in enumerate(words)}
    rng = np.random.Generator(np.random.PCG64([seed, 1]))
    queries: list[str] = []
    for qi in range(n):
        doc = source[int(order[qi % len(order)])]
        title = [w.strip(",.").lower() for w in doc["title"].split()]
        body = [w.strip(",.").lower() for w in doc["overview"].split()]
        r = rng.random()
        size = 1 if r < 0.35 else 2 if r < 0.70 else 3 if r < 0.85 else int(rng.integers(4, 9))
        if size <= 3:
            # search-as-you-type: title and topic words, rarely function words, in their order
            content_body = [w for w in body if rank.get(w, 0) >= TOPIC_RANKS[0]]
            src = title + content_body[:size] if rng.random() < 0.6 else body
            cand = [w for w in src if rank.get(w, 0) >= CONTENT_RANK] or src
            start = int(rng.integers(0, max(1, len(cand) - size + 1)))
            picked = list(dict.fromkeys(cand[start : start + size]))
        else:
            # a natural-language query: a run of the overview as written
            start = int(rng.integers(0, max(1, len(body) - size + 1)))
            picked = body[start : start + size]
        queries.append(" ".join(picked))
    return queries


def make_queries(docs: list[dict[str, Any]], n: int, seed: int = 42) -> list[str]:
    """`n` queries taken from `docs`: ~85% of 1-3 words (title and topic words, as typed in a search box)
    and ~15% of 4-8 consecutive overview words (natural-language queries)."""
    order = _query_docs(len(docs), n, seed)
    return _queries({int(i): docs[int(i)] for i in order}, order, n, seed)


def corpus_files(n_docs: int, n_queries: int, seed: int = 42) -> tuple[Path, Path] | None:
    """NDJSON documents and a queries file (one query a line) for (n_docs, n_queries, seed), generated once
    and cached; None when `wordfreq` is not installed. The queries are those of `make_queries`."""
    if importlib.util.find_spec("wordfreq") is None:
        return None
    cache = _cache_dir()
    stem = f"realistic_v{VERSION}_{n_docs}_{seed}"
    docs_path = cache / f"{stem}.ndjson"
    queries_path = cache / f"{stem}_{n_queries}.queries.txt"
    if docs_path.exists() and queries_path.exists():
        return docs_path, queries_path
    cache.mkdir(parents=True, exist_ok=True)
    order = _query_docs(n_docs, n_queries, seed)
    wanted = set(order.tolist())
    source: dict[int, dict[str, Any]] = {}
    if docs_path.exists():  # only the queries are new: read their documents back
        with docs_path.open("rb") as lines:
            for i, line in enumerate(lines):
                if i in wanted:
                    source[i] = msgspec.json.decode(line)
    else:
        encoder = msgspec.json.Encoder()
        # written under a temporary name and renamed: an interrupted run never leaves a truncated entry
        part = docs_path.with_name(f"{docs_path.name}.{os.getpid()}.part")
        with part.open("wb") as out:
            for chunk in _chunks(n_docs, seed):
                out.write(encoder.encode_lines(chunk))
                source.update((doc["id"], doc) for doc in chunk if doc["id"] in wanted)
        part.replace(docs_path)
    queries = _queries(source, order, n_queries, seed)
    part = queries_path.with_name(f"{queries_path.name}.{os.getpid()}.part")
    part.write_text("".join(q + "\n" for q in queries), encoding="utf-8")
    part.replace(queries_path)
    return docs_path, queries_path


def read_queries(path: Path) -> list[str]:
    """The queries of a file written by `corpus_files`."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line]
