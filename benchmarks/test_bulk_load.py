"""Bulk load over HTTP until the task succeeds: documents per second (storage + task queue cost).

Peer, side by side in the same run: SQLite (stdlib) storing the same documents as (id, json) rows in
one transaction with synchronous=FULL, i.e. the same durability promise. Ratios are printed at the end
of the session (hanzo docs/s ÷ sqlite docs/s).

`./dev bench` runs the full workload (workloads/bulk-load.json); CI runs it in smoke mode
(HANZO_BENCH_SCALE=smoke) with --benchmark-disable, so it only checks that the code path works.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from tests.conftest import ServerProcess, wait_task

from benchmarks.corpus import generate, load_movies

WORKLOAD = json.loads((Path(__file__).resolve().parents[1] / "workloads" / "bulk-load.json").read_text())
SMOKE = os.environ.get("HANZO_BENCH_SCALE", "full") == "smoke"
RESULTS: dict[str, dict[str, float]] = {}


def datasets() -> dict[str, tuple[list[dict[str, Any]], int]]:
    if SMOKE:
        smoke = WORKLOAD["smoke"]
        return {
            "movies": (load_movies(), 1688),
            "generated": (generate(smoke["generated_documents"]), smoke["batch_size"]),
        }
    runs = WORKLOAD["runs"]
    return {
        "movies": (load_movies(), runs[0]["batch_size"]),
        "generated": (generate(runs[1]["documents"], runs[1]["seed"]), runs[1]["batch_size"]),
    }


DATASETS = datasets()


@pytest.fixture(scope="module")
def bench_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    srv = ServerProcess(tmp_path_factory.mktemp("bench") / "data.ms").start()
    yield srv
    srv.stop()


def load_over_http(url: str, index: str, docs: list[dict[str, Any]], batch: int) -> float:
    bodies = [msgspec.json.encode(docs[i : i + batch]) for i in range(0, len(docs), batch)]
    with httpx.Client(base_url=url, timeout=300) as http:
        http.delete(f"/indexes/{index}")
        start = time.perf_counter()
        uids = [
            http.post(
                f"/indexes/{index}/documents",
                content=body,
                params={"primaryKey": "id"},
                headers={"Content-Type": "application/json"},
            ).json()["taskUid"]
            for body in bodies
        ]
        for uid in uids:
            assert wait_task(http, uid, timeout=600)["status"] == "succeeded"
        elapsed = time.perf_counter() - start
        assert http.get(f"/indexes/{index}/stats").json()["numberOfDocuments"] == len(docs)
    return elapsed


def load_sqlite(path: Path, docs: list[dict[str, Any]], batch: int) -> float:
    path.unlink(missing_ok=True)
    start = time.perf_counter()
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=FULL")
    con.execute("CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT NOT NULL)")
    for i in range(0, len(docs), batch):
        chunk = docs[i : i + batch]
        with con:
            con.executemany(
                "INSERT OR REPLACE INTO docs VALUES (?, ?)", [(str(d["id"]), json.dumps(d)) for d in chunk]
            )
    con.close()
    return time.perf_counter() - start


@pytest.mark.parametrize("name", list(DATASETS))
def test_bulk_load_hanzo(benchmark: Any, bench_server: ServerProcess, name: str) -> None:
    docs, batch = DATASETS[name]
    elapsed = benchmark.pedantic(
        load_over_http,
        args=(bench_server.url, f"bulk_{name}", docs, batch),
        rounds=1 if SMOKE else 3,
        iterations=1,
    )
    rate = len(docs) / (elapsed if isinstance(elapsed, float) else benchmark.stats.stats.mean)
    benchmark.extra_info["docs_per_s"] = rate
    RESULTS.setdefault(name, {})["hanzo"] = rate


@pytest.mark.parametrize("name", list(DATASETS))
def test_bulk_load_sqlite_peer(benchmark: Any, tmp_path: Path, name: str) -> None:
    docs, batch = DATASETS[name]
    elapsed = benchmark.pedantic(
        load_sqlite, args=(tmp_path / "peer.db", docs, batch), rounds=1 if SMOKE else 3, iterations=1
    )
    rate = len(docs) / (elapsed if isinstance(elapsed, float) else benchmark.stats.stats.mean)
    benchmark.extra_info["docs_per_s"] = rate
    RESULTS.setdefault(name, {})["sqlite"] = rate


def teardown_module() -> None:
    for name, rates in RESULTS.items():
        if "hanzo" in rates and "sqlite" in rates:
            print(
                f"\n[bulk-load] {name}: hanzo {rates['hanzo']:,.0f} docs/s, sqlite {rates['sqlite']:,.0f} "
                f"docs/s, ratio {rates['hanzo'] / rates['sqlite']:.2f}"
            )
