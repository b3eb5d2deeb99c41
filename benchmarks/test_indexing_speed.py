"""Full-text indexing throughput in process (documents/s) on the generated corpus.

hanzo: `IndexWriter.put_document` for every document in one write transaction, commit included
(storage, flatten, native tokenizing, forward index, word and word-field bitmaps merged at flush).
Peer, side by side in the same run: SQLite FTS5 (stdlib sqlite3) indexing the same title + overview
in one transaction, commit included (default durability: both fsync at commit). The ratio
hanzo ÷ FTS5 is printed at the end.

Full runs use 20,000 documents; smoke mode (HANZO_BENCH_SCALE=smoke, with --benchmark-disable in
CI) 2,000. The best of the rounds is reported: on a shared 2-core machine the others mostly
measure the neighbours.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.corpus import generate
from hanzo_engine.engine.index import Index

SMOKE = os.environ.get("HANZO_BENCH_SCALE", "full") == "smoke"
DOCS = generate(2_000 if SMOKE else 20_000)
ROUNDS = 1 if SMOKE else 3
RESULTS: dict[str, float] = {}


def index_hanzo(path: Path) -> float:
    index = Index.create(path / "index", primary_key="id", created_at=0)
    try:
        start = time.perf_counter()
        with index.write() as writer:
            for doc in DOCS:
                writer.put_document(str(doc["id"]), doc, merge=False)
        elapsed = time.perf_counter() - start
        with index.read() as reader:
            assert reader.number_of_documents() == len(DOCS)
            assert reader.txn.stat(index.db(b"word-docids"))["entries"] > 0
        return elapsed
    finally:
        index.close()


def index_fts5(path: Path) -> float:
    con = sqlite3.connect(path / "fts.db")
    try:
        start = time.perf_counter()
        con.execute("CREATE VIRTUAL TABLE docs USING fts5(title, overview)")
        with con:
            con.executemany(
                "INSERT INTO docs(rowid, title, overview) VALUES (?, ?, ?)",
                ((doc["id"], doc["title"], doc["overview"]) for doc in DOCS),
            )
        elapsed = time.perf_counter() - start
        assert con.execute("SELECT count(*) FROM docs WHERE docs MATCH 'the'").fetchone()[0] > 0
        return elapsed
    finally:
        con.close()


def record(benchmark: Any, name: str, fn: Callable[[Path], float]) -> None:
    timings: list[float] = []

    def one_round() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            timings.append(fn(Path(tmp)))

    benchmark.pedantic(one_round, rounds=ROUNDS, iterations=1)
    rate = len(DOCS) / min(timings)
    benchmark.extra_info["docs_per_s"] = rate
    RESULTS[name] = rate


def test_indexing_hanzo(benchmark: Any) -> None:
    record(benchmark, "hanzo", index_hanzo)


def test_indexing_sqlite_fts5_peer(benchmark: Any) -> None:
    record(benchmark, "fts5", index_fts5)


@pytest.fixture(scope="module", autouse=True)
def report() -> Any:
    yield
    if "hanzo" in RESULTS and "fts5" in RESULTS:
        print(
            f"\n[indexing] {len(DOCS):,} generated documents: hanzo {RESULTS['hanzo']:,.0f} docs/s, "
            f"sqlite fts5 {RESULTS['fts5']:,.0f} docs/s, ratio {RESULTS['hanzo'] / RESULTS['fts5']:.2f}"
        )
