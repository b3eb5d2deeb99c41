"""Memory with several HTTP processes against one (issue 15: "memory with N workers stays within 1.5x of
one worker's RSS plus the shared page cache; report both").

The realistic corpus (100,000 documents; 2,000 in smoke mode) is loaded once over HTTP into a data
directory (by a server of its own); then a server with `--http-workers 1`, and one with
`--http-workers <CPUs>`, each started on that directory, is warmed by one pass over the 1,000 queries and driven at 50 connections for `HANZO_THROUGHPUT_SECONDS`
(15 s; 1 s in smoke mode), as `test_throughput.py` drives its levels. After each run the memory of the
server's process tree (`benchmarks.proctree.memory`): RSS, anonymous, file-backed (the LMDB pages the
processes map, shared between them) and PSS, which counts each shared page once over the tree.

Reported ratios, several processes against one: PSS against one process's RSS (what the tree costs the
machine against one process; target <= 1.5) and the anonymous memory (what each process holds privately).
Nothing is asserted on them: `benchmarks/results/worker_memory.json` keeps the figures.

    .venv/bin/python -m pytest -s -p no:cacheprovider benchmarks/test_worker_memory.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import ServerProcess

pytest.importorskip("wordfreq")

from benchmarks import realistic_corpus
from benchmarks.proctree import memory
from benchmarks.throughput_support import CPUS, drive, git_commit, load_ndjson, sequential

SMOKE = os.environ.get("HANZO_BENCH_SCALE", "full") == "smoke"
N_DOCS = 2_000 if SMOKE else 100_000
N_QUERIES = 1_000
CONNECTIONS = 50
LEVEL_SECONDS = max(1, round(float(os.environ.get("HANZO_THROUGHPUT_SECONDS") or (1 if SMOKE else 15))))
PSS_TARGET = 1.5
RESULTS_FILE = (
    Path(__file__).resolve().parent
    / "results"
    / ("worker_memory.smoke.json" if SMOKE else "worker_memory.json")
)


def _load(data: Path, docs: Path) -> None:
    """Index `docs` into `data` with a server of its own, stopped afterwards: the measured servers start
    on the loaded directory alike, none with the memory an indexing task leaves behind."""
    server = ServerProcess(data, extra_args=["--http-workers", "1"])
    try:
        server.start(timeout=120)
        with httpx.Client(base_url=server.url, timeout=600) as http:
            load_ndjson(http, docs, N_DOCS)
    finally:
        server.stop()


def _run(data: Path, workers: int, queries: list[str], script: Path) -> dict[str, Any]:
    """Start a server of `workers` processes on `data`, warm it up, drive it, and return its load figures
    and the memory of its process tree after the load."""
    server = ServerProcess(data, extra_args=["--http-workers", str(workers)])
    try:
        server.start(timeout=120)
        assert server.proc is not None
        warm = sequential(server.url, queries)
        assert warm["statuses"] == {"200": len(queries)}, warm
        bodies = [json.dumps({"q": q, "limit": 20}) for q in queries]
        level = drive(server.port, server.proc.pid, bodies, CONNECTIONS, LEVEL_SECONDS, script)
        assert level["ok"] > 0 and level["transportErrors"] == 0 and level["non2xx"] == 0, level
        return {
            "workers": workers,
            "reqPerS": level["reqPerS"],
            "memory": memory(server.proc.pid),
        }
    finally:
        server.stop()


def test_memory_with_workers(tmp_path: Path) -> None:
    files = realistic_corpus.corpus_files(N_DOCS, N_QUERIES)
    assert files is not None
    docs, queries = files[0], realistic_corpus.read_queries(files[1])
    script = tmp_path / "load.lua"
    data = tmp_path / "data.ms"
    _load(data, docs)
    one = _run(data, 1, queries, script)
    several = _run(data, max(2, CPUS), queries, script)
    m1, mn = one["memory"], several["memory"]
    assert mn["processes"] == several["workers"] and m1["processes"] == 1, (m1, mn)
    ratios = {
        "pssVsOneRss": round(mn["pssMiB"] / m1["rssMiB"], 3),
        "anon": round(mn["anonMiB"] / m1["anonMiB"], 3),
        "rss": round(mn["rssMiB"] / m1["rssMiB"], 3),
    }
    report = {
        "documents": N_DOCS,
        "connections": CONNECTIONS,
        "levelSeconds": LEVEL_SECONDS,
        "cpus": CPUS,
        "gitCommit": git_commit(),
        "one": one,
        "several": several,
        "ratios": ratios,
        "pssTarget": PSS_TARGET,
        "command": ("HANZO_BENCH_SCALE=smoke " if SMOKE else "")
        + ".venv/bin/python -m pytest -s -p no:cacheprovider benchmarks/test_worker_memory.py",
    }
    RESULTS_FILE.parent.mkdir(exist_ok=True)
    if not SMOKE:
        RESULTS_FILE.write_text(json.dumps(report, indent=2) + "\n")
    r = ratios
    print(
        f"\nmemory, {N_DOCS:,} realistic documents, {CONNECTIONS} connections for {LEVEL_SECONDS} s:\n"
        f"  1 process: {json.dumps(m1)} ({one['reqPerS']:,.0f} req/s)\n"
        f"  {several['workers']} processes: {json.dumps(mn)} ({several['reqPerS']:,.0f} req/s)\n"
        f"  PSS of {several['workers']} / RSS of 1: {r['pssVsOneRss']} (target <= {PSS_TARGET}); "
        f"anonymous {r['anon']}x, RSS {r['rss']}x"
    )
