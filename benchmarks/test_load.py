"""Loopback load test: many concurrent clients mixing searches, multi-searches and document writes
against one server process for a bounded time.

Full run: 500 clients for 60 s; smoke (`HANZO_BENCH_SCALE=smoke`, what CI runs): 20 clients for 5 s.
Each client loops until the deadline over a fixed mix (per client, seeded): 60 % single-index searches
(1-3 words from the movies vocabulary, some with highlighting), 25 % multi-searches (half federated
across both indexes with weights, half two plain queries), 15 % document writes (1-5 documents added or
updated). The client side is asyncio + httpx in this process, one connection per request (see
`_run`); the server is a separate process with its default options (search queue of 1000, cores × 4
searches at once), serving HTTP from one worker process per CPU (`--http-workers`) when the build has
that flag.

Also reported: the CPU seconds the server and the client (this process) used, and the server's CPU per
request, since both share the machine's cores. The server's CPU and memory are those of its whole
process tree (its HTTP workers included): CPU summed, RSS summed, the peak RSS the sum of each
process's peak, PSS (shared pages split between the processes) beside.

Pass criteria: zero errors, where an error is any transport failure or any status other than 200/202,
except the documented `503 too_many_search_requests` carrying `Retry-After: 10` (counted apart); every
write task acknowledged during the run ends `succeeded`; the server's peak RSS stays under
`MAX_RSS_BYTES`. Reported: p50/p95/p99 latency per kind and overall, throughput, 503 count, peak RSS
(VmHWM summed over the server's processes), and the task backlog at the deadline. Results go to
`benchmarks/results/load.json` (`load.smoke.json` in smoke mode).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import ServerProcess, wait_task

from benchmarks.corpus import load_movies, vocabulary
from benchmarks.proctree import cpu_seconds, http_workers, http_workers_args, memory_bytes

SMOKE = os.environ.get("HANZO_BENCH_SCALE", "full") == "smoke"
CLIENTS = 20 if SMOKE else 500
DURATION = 5.0 if SMOKE else 60.0
MAX_RSS_BYTES = 4 << 30
RESULTS_FILE = Path(__file__).resolve().parent / "results" / ("load.smoke.json" if SMOKE else "load.json")
MIX = (("search", 0.60), ("multi", 0.25), ("write", 0.15))
INDEXES = ("load_movies", "load_movies_b")


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


@pytest.fixture(scope="module")
def load_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    srv = ServerProcess(tmp_path_factory.mktemp("load") / "data.ms", extra_args=http_workers_args()).start()
    movies = load_movies()
    with httpx.Client(base_url=srv.url, timeout=600) as http:
        uids = [
            http.post(f"/indexes/{uid}/documents", json=docs, params={"primaryKey": "id"}).json()["taskUid"]
            for uid, docs in ((INDEXES[0], movies), (INDEXES[1], movies[: len(movies) // 2]))
        ]
        for uid in uids:
            assert wait_task(http, uid, timeout=600)["status"] == "succeeded"
    yield srv
    srv.stop()


class Stats:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.throttled = 0
        self.tasks: list[int] = []


def _request(kind: str, rng: random.Random, words: list[str], next_id: list[int]) -> tuple[str, str, Any]:
    def q() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))

    if kind == "search":
        body: dict[str, Any] = {"q": q(), "limit": 10}
        if rng.random() < 0.3:
            body["attributesToHighlight"] = ["title"]
        return "POST", f"/indexes/{rng.choice(INDEXES)}/search", body
    if kind == "multi":
        if rng.random() < 0.5:
            return (
                "POST",
                "/multi-search",
                {
                    "federation": {"limit": 10},
                    "queries": [
                        {"indexUid": INDEXES[0], "q": q(), "federationOptions": {"weight": 1.0}},
                        {"indexUid": INDEXES[1], "q": q(), "federationOptions": {"weight": 0.5}},
                    ],
                },
            )
        return (
            "POST",
            "/multi-search",
            {
                "queries": [
                    {"indexUid": INDEXES[0], "q": q(), "limit": 5},
                    {"indexUid": INDEXES[1], "q": q(), "limit": 5},
                ]
            },
        )
    docs = []
    for _ in range(rng.randint(1, 5)):
        next_id[0] += 1
        docs.append({"id": 1_000_000 + next_id[0], "title": q().title(), "overview": f"{q()} {q()} {q()}."})
    return "POST", f"/indexes/{INDEXES[0]}/documents", docs


async def _client(
    client: httpx.AsyncClient, seed: int, deadline: float, words: list[str], stats: Stats, next_id: list[int]
) -> None:
    rng = random.Random(seed)
    kinds, weights = zip(*MIX, strict=True)
    while time.monotonic() < deadline:
        kind = rng.choices(kinds, weights)[0]
        method, path, body = _request(kind, rng, words, next_id)
        started = time.perf_counter()
        try:
            res = await client.request(method, path, json=body)
        except httpx.HTTPError as exc:
            stats.errors.append(f"{kind} {path}: {type(exc).__name__}: {exc}")
            continue
        elapsed = time.perf_counter() - started
        if (
            res.status_code == 503
            and res.headers.get("retry-after") == "10"
            and res.json().get("code") == "too_many_search_requests"
        ):
            stats.throttled += 1
            await asyncio.sleep(rng.uniform(0.05, 0.2))  # a polite client backs off (Retry-After is 10 s)
            continue
        if res.status_code not in (200, 202):
            stats.errors.append(f"{kind} {path}: {res.status_code} {res.text[:200]}")
            continue
        if res.status_code == 202:
            stats.tasks.append(res.json()["taskUid"])
        stats.latency[kind].append(elapsed)


async def _run(url: str, words: list[str], pid: int) -> tuple[Stats, float, list[int]]:
    stats = Stats()
    rss: list[int] = []
    # A fresh connection per request: with 500 clients on a loaded machine, a client can take longer than
    # the server's 5 s keep-alive timeout to reuse a pooled connection, and the server closes it just
    # as the request goes out (a client-side race, not a server error; on loopback connecting is ~0.1 ms).
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        started = time.monotonic()
        deadline = started + DURATION
        next_id = [0]

        async def sample_rss() -> None:
            while time.monotonic() < deadline:
                rss.append(memory_bytes(pid)["rss"])
                await asyncio.sleep(0.5)

        sampler = asyncio.create_task(sample_rss())
        await asyncio.gather(
            *(_client(client, seed, deadline, words, stats, next_id) for seed in range(CLIENTS))
        )
        elapsed = time.monotonic() - started
        await sampler
    return stats, elapsed, rss


def test_load(load_server: ServerProcess) -> None:
    assert load_server.proc is not None
    pid = load_server.proc.pid
    words = vocabulary()[:3000]
    rss_before = memory_bytes(pid)["rss"]
    server_cpu, client_cpu = cpu_seconds(pid), time.process_time()
    stats, elapsed, rss = asyncio.run(_run(load_server.url, words, pid))
    server_cpu, client_cpu = cpu_seconds(pid) - server_cpu, time.process_time() - client_cpu
    after = memory_bytes(pid)
    peak = after["peakRss"]

    with httpx.Client(base_url=load_server.url, timeout=60) as http:
        backlog = http.get("/tasks", params={"statuses": "enqueued,processing", "limit": 0}).json()["total"]
        drained = time.monotonic()
        for uid in stats.tasks[-1:]:
            wait_task(http, uid, timeout=900)
        drain_seconds = time.monotonic() - drained
        failed = http.get("/tasks", params={"statuses": "failed,canceled", "limit": 0}).json()["total"]

    everything = [x for values in stats.latency.values() for x in values]
    completed = len(everything)
    report: dict[str, Any] = {
        "clients": CLIENTS,
        "durationSeconds": round(elapsed, 2),
        "requests": completed,
        "throughputPerSecond": round(completed / elapsed, 1),
        "throttled503": stats.throttled,
        "errors": len(stats.errors),
        "peakRssBytes": peak,
        "rssBeforeBytes": rss_before,
        "httpWorkers": http_workers(),
        "serverProcesses": after["processes"],
        "memoryAfterMiB": {k: round(v / 2**20, 1) for k, v in after.items() if k != "processes"},
        "rssSamplesMiB": [round(x / 2**20) for x in rss[:: max(1, len(rss) // 20)]],
        "taskBacklogAtDeadline": backlog,
        "drainSeconds": round(drain_seconds, 1),
        "writesAcknowledged": len(stats.tasks),
        "failedTasks": failed,
        # both sides share the machine's cores: who used them tells where the throughput went
        "serverCpuSeconds": round(server_cpu, 1),
        "clientCpuSeconds": round(client_cpu, 1),
        "serverCpuMsPerRequest": round(server_cpu * 1000 / max(completed, 1), 2),
        "latencyMs": {},
    }
    for kind, values in [*sorted(stats.latency.items()), ("all", everything)]:
        report["latencyMs"][kind] = {
            "count": len(values),
            **{f"p{q}": round(_percentile(values, q) * 1000, 1) for q in (50, 95, 99)},
            "max": round(max(values, default=0.0) * 1000, 1),
        }
    RESULTS_FILE.parent.mkdir(exist_ok=True)
    RESULTS_FILE.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nload test ({'smoke' if SMOKE else 'full'}): {json.dumps(report, indent=2)}")

    assert not stats.errors, stats.errors[:10]
    assert failed == 0
    assert completed > 0 and all(stats.latency[kind] for kind, _ in MIX)
    assert peak < MAX_RSS_BYTES
