"""The runs of the indexing benchmark (`test_indexing_speed.py`), also usable alone for profiling.

Every run indexes documents of the realistic corpus (`benchmarks.realistic_corpus`: real English word
frequencies, `{id, title, overview, genres, release_date, rating, popularity}`) and returns its wall
time, the commit included:

- `hanzo_bulk`: `IndexWriter.put_document` for every document in one write transaction (storage,
  flatten, tokenizing, forward entries, bitmaps merged at flush, facets when `settings` make fields
  filterable or sortable), as a task applying one big payload does.
- `hanzo_append`: the same documents in successive transactions of `batch` documents each; the
  documents/s of every batch give the append curve.
- `tantivy_bulk`: tantivy-py, one writer with `threads` indexing threads, one commit: title, overview
  and genres as text, the id and date as indexed integers, every field stored.
- `fts5_bulk`: SQLite FTS5 (stdlib), title, overview and genres indexed, the numbers stored
  unindexed, one transaction.
- `http_load`: NDJSON payloads POSTed to a running server (`Content-Type: application/x-ndjson`) until
  every task succeeded, the anonymous RSS of the server process sampled meanwhile.

Profiling (py-spy, in the venv; `benchmarks/indexing_profile.py` buckets a raw profile into the indexing
stages, `benchmarks/results/indexing_profile.md` is its last reading):

    .venv/bin/py-spy record --native -r 200 -f raw -o /tmp/inproc.txt -- \\
        .venv/bin/python -m benchmarks.indexing_runs bulk 100000
    .venv/bin/py-spy record --native --subprocesses -r 200 -f raw -o /tmp/http.txt -- \\
        .venv/bin/python -m hanzo_engine --db-path /tmp/prof.ms --http-addr 127.0.0.1:7711 --no-analytics &
    .venv/bin/python -m benchmarks.indexing_runs http 100000 --url http://127.0.0.1:7711
    .venv/bin/python -m benchmarks.indexing_profile /tmp/inproc.txt
"""

from __future__ import annotations

import argparse
import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec

from benchmarks import realistic_corpus
from benchmarks.proctree import memory_bytes
from hanzo_engine.apitypes.settings import SettingsPatch, apply_patch, complete_settings
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.update.settings_hook import reindex_for_settings

Progress = Callable[[str], None]

# three filterable attributes (a string list, two numbers) and a sortable one, all already in the documents
FACET_SETTINGS: dict[str, Any] = {
    "filterableAttributes": ["genres", "rating", "release_date"],
    "sortableAttributes": ["popularity"],
}
TANTIVY_HEAP = 512 << 20  # split between the writer's threads
_encoder = msgspec.json.Encoder()


def settle() -> None:
    """Writes back what earlier runs left dirty in the page cache (`sync`), so that a run does not pay
    for the writeback of the one before: each engine still pays for its own durability (every one
    syncs its commits)."""
    os.sync()


def _quiet(_: str) -> None:
    pass


@functools.cache
def documents(n: int) -> list[dict[str, Any]]:
    """The first `n` documents of the realistic corpus (seed 42), generated once per size."""
    return realistic_corpus.generate(n)


def ndjson_payloads(docs: list[dict[str, Any]], batch: int) -> list[bytes]:
    """`docs` as NDJSON bodies of `batch` documents each."""
    return [_encoder.encode_lines(docs[i : i + batch]) for i in range(0, len(docs), batch)]


# -- hanzo in process ---------------------------------------------------------------------------------


def _create(path: Path, settings: dict[str, Any] | None) -> Index:
    index = Index.create(path, primary_key="id", created_at=0)
    if settings:
        # as a settings task on the empty index does it
        with index.write() as w:
            old = complete_settings(w.settings())
            new = apply_patch(old, SettingsPatch.from_json(settings))
            reindex_for_settings(w, old, new, "bench")
            w.set_settings(new)
    return index


def _put_all(index: Index, docs: list[dict[str, Any]], first: int, last: int) -> None:
    with index.write() as w:
        put = w.put_document
        for doc in docs[first:last]:
            put(str(doc["id"]), doc, merge=False)


def hanzo_bulk(
    docs: list[dict[str, Any]],
    path: Path,
    settings: dict[str, Any] | None = None,
    progress: Progress = _quiet,
) -> float:
    """Seconds to index `docs` in one write transaction (commit included) into a new index at `path`."""
    index = _create(path, settings)
    try:
        progress(f"hanzo in process: {len(docs):,} documents in one transaction")
        settle()
        start = time.perf_counter()
        _put_all(index, docs, 0, len(docs))
        elapsed = time.perf_counter() - start
        with index.read() as r:
            assert r.number_of_documents() == len(docs)
        return elapsed
    finally:
        index.close()


def hanzo_append(
    docs: list[dict[str, Any]], path: Path, batch: int, progress: Progress = _quiet
) -> list[tuple[int, float]]:
    """(documents already indexed, documents/s of the batch) for each successive batch of `batch`
    documents appended to a new index at `path`, one write transaction per batch."""
    index = _create(path, None)
    curve: list[tuple[int, float]] = []
    try:
        every = max(1, len(docs) // batch // 10)
        for n, first in enumerate(range(0, len(docs), batch)):
            last = min(first + batch, len(docs))
            settle()
            start = time.perf_counter()
            _put_all(index, docs, first, last)
            curve.append((first, (last - first) / (time.perf_counter() - start)))
            if n % every == 0:
                progress(f"append: {last:,} documents, last batch {curve[-1][1]:,.0f} docs/s")
        return curve
    finally:
        index.close()


# -- peers ----------------------------------------------------------------------------------------


def tantivy_bulk(docs: list[dict[str, Any]], path: Path, threads: int, progress: Progress = _quiet) -> float:
    """Seconds for tantivy to index `docs` with `threads` indexing threads, one commit (merges waited
    for), documents built from the same dicts."""
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", stored=True, indexed=True)
    sb.add_text_field("title", stored=True)
    sb.add_text_field("overview", stored=True)
    sb.add_text_field("genres", stored=True)
    sb.add_integer_field("release_date", stored=True, indexed=True)
    sb.add_float_field("rating", stored=True)
    sb.add_float_field("popularity", stored=True)
    schema = sb.build()
    index = tantivy.Index(schema, path=str(path))
    progress(f"tantivy ({threads} threads): {len(docs):,} documents")
    settle()
    start = time.perf_counter()
    writer = index.writer(TANTIVY_HEAP, threads)
    add, from_dict = writer.add_document, tantivy.Document.from_dict
    for doc in docs:
        add(from_dict(doc, schema))
    writer.commit()
    writer.wait_merging_threads()
    elapsed = time.perf_counter() - start
    index.reload()
    assert index.searcher().num_docs == len(docs)
    return elapsed


def fts5_bulk(docs: list[dict[str, Any]], path: Path, progress: Progress = _quiet) -> float:
    """Seconds for SQLite FTS5 to index `docs` in one transaction (commit included)."""
    con = sqlite3.connect(path)
    try:
        progress(f"sqlite fts5: {len(docs):,} documents")
        settle()
        start = time.perf_counter()
        con.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(title, overview, genres, release_date UNINDEXED,"
            " rating UNINDEXED, popularity UNINDEXED)"
        )
        with con:
            con.executemany(
                "INSERT INTO docs(rowid, title, overview, genres, release_date, rating, popularity)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    (
                        d["id"],
                        d["title"],
                        d["overview"],
                        " ".join(d["genres"]),
                        d["release_date"],
                        d["rating"],
                        d["popularity"],
                    )
                    for d in docs
                ),
            )
        elapsed = time.perf_counter() - start
        assert con.execute("SELECT count(*) FROM docs").fetchone()[0] == len(docs)
        return elapsed
    finally:
        con.close()


# -- over HTTP ------------------------------------------------------------------------------------


def process_memory(pid: int) -> dict[str, int]:
    """RssAnon and VmHWM of one process (not its children), in bytes."""
    out = {"anon": 0, "hwm": 0}
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return out
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "VmHWM"):
            out["anon" if key == "RssAnon" else "hwm"] = int(value.split()[0]) * 1024
    return out


@dataclass
class MemorySampler:
    """Samples, every `interval` seconds in a thread, the anonymous RSS of the process `pid` (the
    server's main process, which applies the writes; HTTP worker processes serve requests only) and of
    its whole tree; VmHWM counts LMDB's file-backed pages too, so it is reported beside them."""

    pid: int
    interval: float = 0.05
    peak_anon: int = 0
    peak_tree_anon: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> None:
        self.peak_anon = max(self.peak_anon, process_memory(self.pid)["anon"])
        self.peak_tree_anon = max(self.peak_tree_anon, memory_bytes(self.pid)["anon"])

    def __enter__(self) -> MemorySampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self.sample()


def wait_tasks(http: httpx.Client, uids: list[int], timeout: float, progress: Progress = _quiet) -> None:
    """Wait until every task of `uids` finished; fail on a task that did not succeed. Polls back off
    from 5 ms to 200 ms: each poll takes the GIL from the indexing thread of a one-process server."""
    deadline = time.monotonic() + timeout
    pending = list(uids)
    pause = 0.005
    while pending:
        task = http.get(f"/tasks/{pending[0]}").json()
        if task["status"] in ("failed", "canceled"):
            raise AssertionError(f"task {pending[0]} {task['status']}: {task.get('error')}")
        if task["status"] == "succeeded":
            pending.pop(0)
            progress(f"http: {len(uids) - len(pending)}/{len(uids)} tasks succeeded")
            continue
        if time.monotonic() > deadline:
            raise TimeoutError(f"task {pending[0]} did not finish in {timeout} s")
        time.sleep(pause)
        pause = min(pause * 1.5, 0.2)


def http_load(
    url: str, index: str, payloads: list[bytes], n_docs: int, pid: int | None, progress: Progress = _quiet
) -> dict[str, float]:
    """POST every NDJSON payload, then wait for every task: `seconds` from the first request to the
    last success; with the server's `pid`, the peak anonymous RSS of that process sampled meanwhile
    (`peakAnonBytes`; `peakTreeAnonBytes` with its HTTP workers), its VmHWM after the load
    (`vmHwmBytes`) and its anonymous RSS before (`baseAnonBytes`)."""
    out: dict[str, float] = {}
    with httpx.Client(base_url=url, timeout=600) as http:
        if pid is not None:
            out["baseAnonBytes"] = process_memory(pid)["anon"]
        sampler = MemorySampler(pid) if pid is not None else None
        if sampler is not None:
            sampler.__enter__()
        try:
            settle()
            start = time.perf_counter()
            uids = []
            for body in payloads:
                response = http.post(
                    f"/indexes/{index}/documents",
                    content=body,
                    params={"primaryKey": "id"},
                    headers={"Content-Type": "application/x-ndjson"},
                )
                assert response.status_code == 202, response.text
                uids.append(response.json()["taskUid"])
            progress(f"http: {len(payloads)} payloads enqueued")
            wait_tasks(http, uids, timeout=3600, progress=progress)
            out["seconds"] = time.perf_counter() - start
        finally:
            if sampler is not None:
                sampler.__exit__()
        if sampler is not None and pid is not None:
            out["peakAnonBytes"] = sampler.peak_anon
            out["peakTreeAnonBytes"] = sampler.peak_tree_anon
            out["vmHwmBytes"] = process_memory(pid)["hwm"]
        stats = http.get(f"/indexes/{index}/stats").json()
        assert stats["numberOfDocuments"] == n_docs, stats
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="One indexing run (for profiling).")
    parser.add_argument("run", choices=["bulk", "facets", "http"])
    parser.add_argument("docs", type=int)
    parser.add_argument("--url", help="the server of an `http` run")
    parser.add_argument("--batch", type=int, default=100_000, help="documents per payload (http)")
    parser.add_argument("--path", type=Path, help="the index directory (bulk, facets); default: a temp dir")
    args = parser.parse_args()
    docs = documents(args.docs)
    if args.run == "http":
        if not args.url:
            parser.error("an http run needs --url")
        result = http_load(args.url, "bench", ndjson_payloads(docs, args.batch), len(docs), None, print)
        print(f"{len(docs) / result['seconds']:,.0f} docs/s over HTTP")
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = args.path or Path(tmp) / "index"
        seconds = hanzo_bulk(docs, path, FACET_SETTINGS if args.run == "facets" else None, print)
    print(f"{len(docs) / seconds:,.0f} docs/s in process")


if __name__ == "__main__":
    main()
