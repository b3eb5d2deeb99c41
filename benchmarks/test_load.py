"""Loopback load test: many concurrent clients mixing searches, multi-searches and document writes
against one server process for a bounded time.

Full run: 500 clients for 60 s over the realistic corpus (`benchmarks.realistic_corpus`, real English word
frequencies) of 100,000 documents; smoke (`HANZO_BENCH_SCALE=smoke`, what CI runs): 20 clients for 5 s
over 2,000 documents. Index `load_movies` holds the corpus, `load_movies_b` its first half. Each client
loops until the deadline over a fixed mix (per client, seeded): 60 % single-index searches (queries of
the realistic query generator, 30 % of them highlighting the title), 25 % multi-searches (half federated
across both indexes with weights, half two plain queries), 15 % document writes of 1-5 documents to
`load_movies`, each document new (80 %) or replacing a corpus document (20 %).

The client side runs in this process and must stay cheap, or on a small machine it eats the cores the
server needs: one persistent HTTP/1.1 keep-alive connection per client (`Connection`, an asyncio
protocol over uvloop with httptools parsing the answers), searches sent as request bytes encoded before
the run, writes encoded once each. The server is a separate process with its default options (search
queue of 1000, cores × 4 searches at once), serving HTTP from one worker process per CPU
(`--http-workers`) when the build has that flag.

Also reported: the CPU seconds the server and the client (this process) used, each per request, since
both share the machine's cores. The server's CPU and memory are those of its whole process tree (its
HTTP workers included): CPU summed, RSS summed, the peak RSS the sum of each process's peak, PSS (shared
pages split between the processes) beside.

Pass criteria: zero errors, where an error is any transport failure or any status other than 200/202,
except the documented `503 too_many_search_requests` carrying `Retry-After: 10` (counted apart); every
write acknowledged during the run (its `taskUid` collected) ends `succeeded` having indexed exactly the
documents it sent; afterwards the index holds the corpus plus every new document once (its document
count) and every written document reads back as its last acknowledged write (`revision`); the server's
peak RSS stays under `MAX_RSS_BYTES`. Reported: p50/p95/p99 latency per kind and overall, throughput,
503 count, peak RSS (VmHWM summed over the server's processes), and the task backlog at the deadline.
Results go to `benchmarks/results/load.json` (`load.smoke.json` in smoke mode).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, cast

import httptools
import httpx
import msgspec
import pytest
from tests.conftest import ServerProcess, wait_task

pytest.importorskip("wordfreq")

from benchmarks import realistic_corpus
from benchmarks.proctree import cpu_seconds, http_workers, http_workers_args, memory_bytes

SMOKE = os.environ.get("HANZO_BENCH_SCALE", "full") == "smoke"
CLIENTS = 20 if SMOKE else 500
DURATION = 5.0 if SMOKE else 60.0
N_DOCS = 2_000 if SMOKE else 100_000
N_QUERIES = 1_000 if SMOKE else 5_000
MAX_RSS_BYTES = 4 << 30
RESULTS_FILE = Path(__file__).resolve().parent / "results" / ("load.smoke.json" if SMOKE else "load.json")
MIX = (("search", 0.60), ("multi", 0.25), ("write", 0.15))
INDEXES = ("load_movies", "load_movies_b")
NEW_ID_BASE = 10_000_000  # above every corpus id
UPDATE_SHARE = 0.2  # of the written documents, those replacing a corpus document
REQUEST_TIMEOUT = 120.0  # past the deadline, what is still in flight counts as an error
POOL = 4_000  # distinct pre-encoded requests per read kind

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


@pytest.fixture(scope="module")
def corpus() -> tuple[Path, list[str]]:
    files = realistic_corpus.corpus_files(N_DOCS, N_QUERIES)
    assert files is not None
    return files[0], realistic_corpus.read_queries(files[1])


@pytest.fixture(scope="module")
def load_server(tmp_path_factory: pytest.TempPathFactory, corpus: tuple[Path, list[str]]) -> Any:
    srv = ServerProcess(tmp_path_factory.mktemp("load") / "data.ms", extra_args=http_workers_args()).start()
    lines = corpus[0].read_bytes().splitlines(keepends=True)
    with httpx.Client(base_url=srv.url, timeout=900) as http:
        uids = [
            http.post(
                f"/indexes/{uid}/documents",
                content=b"".join(part),
                params={"primaryKey": "id"},
                headers={"Content-Type": "application/x-ndjson"},
            ).json()["taskUid"]
            for uid, part in ((INDEXES[0], lines), (INDEXES[1], lines[: len(lines) // 2]))
        ]
        for uid in uids:
            assert wait_task(http, uid, timeout=900)["status"] == "succeeded"
    _wait_for_workers(srv.url)
    yield srv
    srv.stop()


def _wait_for_workers(url: str, timeout: float = 120.0) -> None:
    """Until every search worker answers: the clients' connections are made once, at the start, and a
    worker still starting would leave its share of them to the primary for the whole run."""
    workers = http_workers() or 1
    answered: set[str] = set()
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=url, timeout=30, headers={"Connection": "close"}) as http:
        while len(answered) < workers - 1:
            assert time.monotonic() < deadline, f"search workers {answered} of {workers - 1} answering"
            res = http.post(f"/indexes/{INDEXES[0]}/search", json={"q": "", "limit": 1})
            if "x-hanzo-worker" in res.headers:
                answered.add(res.headers["x-hanzo-worker"])
            else:
                time.sleep(0.05)


def _request(path: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def _read_requests(queries: list[str]) -> dict[str, list[bytes]]:
    """The search and multi-search requests the clients draw from, encoded once."""
    rng = random.Random(7)
    searches = []
    for _ in range(POOL):
        body: dict[str, Any] = {"q": rng.choice(queries), "limit": 10}
        if rng.random() < 0.3:
            body["attributesToHighlight"] = ["title"]
        searches.append(_request(f"/indexes/{rng.choice(INDEXES)}/search", _encode(body)))
    multis = []
    for _ in range(POOL):
        if rng.random() < 0.5:
            multi: dict[str, Any] = {
                "federation": {"limit": 10},
                "queries": [
                    {"indexUid": INDEXES[0], "q": rng.choice(queries), "federationOptions": {"weight": 1.0}},
                    {"indexUid": INDEXES[1], "q": rng.choice(queries), "federationOptions": {"weight": 0.5}},
                ],
            }
        else:
            multi = {
                "queries": [
                    {"indexUid": INDEXES[0], "q": rng.choice(queries), "limit": 5},
                    {"indexUid": INDEXES[1], "q": rng.choice(queries), "limit": 5},
                ]
            }
        multis.append(_request("/multi-search", _encode(multi)))
    return {"search": searches, "multi": multis}


class Stats:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.throttled = 0
        # per acknowledged write: its task uid and the (id, revision) of each document it sent
        self.writes: list[tuple[int, list[tuple[int, int]]]] = []
        self.revision = 0
        self.new_ids = 0


class Answer:
    __slots__ = ("body", "retry_after", "status")

    def __init__(self, status: int, body: bytes, retry_after: bytes | None) -> None:
        self.status = status
        self.body = body
        self.retry_after = retry_after


class Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: `send(request)` writes a whole request and waits for its
    answer (one request at a time)."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[Answer] | None = None
        self.chunks: list[bytes] = []
        self.retry_after: bytes | None = None
        self.closed = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's does not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc or ConnectionResetError("connection closed by the server"))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"retry-after":
            self.retry_after = value

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        answer = Answer(self.parser.get_status_code(), b"".join(self.chunks), self.retry_after)
        self.chunks = []
        self.retry_after = None
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(answer)

    def _fail(self, exc: Exception) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)
        if self.transport is not None:
            self.transport.close()

    async def send(self, request: bytes) -> Answer:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self.waiter


async def _connect(port: int) -> Connection:
    _, conn = await asyncio.get_running_loop().create_connection(Connection, "127.0.0.1", port)
    return conn


async def _client(
    port: int,
    seed: int,
    deadline: float,
    pools: dict[str, list[bytes]],
    queries: list[str],
    stats: Stats,
) -> None:
    rng = random.Random(seed)
    searches, multis = pools["search"], pools["multi"]
    write_path = f"/indexes/{INDEXES[0]}/documents"
    search_until, multi_until = MIX[0][1], MIX[0][1] + MIX[1][1]
    conn: Connection | None = None
    try:
        while time.monotonic() < deadline:
            draw = rng.random()
            docs: list[tuple[int, int]] = []
            if draw < search_until:
                kind, request = "search", searches[rng.randrange(len(searches))]
            elif draw < multi_until:
                kind, request = "multi", multis[rng.randrange(len(multis))]
            else:
                kind, batch = "write", []
                for _ in range(rng.randint(1, 5)):
                    doc_id = rng.randrange(N_DOCS)
                    if rng.random() >= UPDATE_SHARE or any(doc_id == seen for seen, _ in docs):
                        stats.new_ids += 1
                        doc_id = NEW_ID_BASE + stats.new_ids
                    stats.revision += 1
                    docs.append((doc_id, stats.revision))
                    overview = ". ".join(rng.choice(queries).capitalize() for _ in range(3))
                    batch.append(
                        {
                            "id": doc_id,
                            "title": rng.choice(queries).title(),
                            "overview": overview + ".",
                            "genres": [rng.choice(realistic_corpus.GENRES)],
                            "rating": round(rng.uniform(1, 10), 1),
                            "revision": stats.revision,
                        }
                    )
                request = _request(write_path, _encode(batch))
            started = time.perf_counter()
            try:
                if conn is None or conn.closed:
                    conn = await _connect(port)
                answer = await conn.send(request)
            except (OSError, httptools.HttpParserError) as exc:
                stats.errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                conn = None
                continue
            elapsed = time.perf_counter() - started
            status = answer.status
            if status == 200 or status == 202:
                stats.latency[kind].append(elapsed)
                if status == 202:
                    stats.writes.append((_decode(answer.body)["taskUid"], docs))
                continue
            if status == 503 and answer.retry_after == b"10":
                if _decode(answer.body).get("code") == "too_many_search_requests":
                    stats.throttled += 1
                    # a polite client backs off (Retry-After is 10 s)
                    await asyncio.sleep(rng.uniform(0.05, 0.2))
                    continue
            stats.errors.append(f"{kind}: {status} {answer.body[:200]!r}")
    finally:
        if conn is not None and conn.transport is not None:
            conn.transport.close()


async def _run(
    port: int, pools: dict[str, list[bytes]], queries: list[str], pid: int
) -> tuple[Stats, float, list[int]]:
    stats = Stats()
    rss: list[int] = []
    started = time.monotonic()
    deadline = started + DURATION

    async def sample_rss() -> None:
        while time.monotonic() < deadline:
            rss.append(memory_bytes(pid)["rss"])
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample_rss())
    clients = [
        asyncio.create_task(_client(port, seed, deadline, pools, queries, stats)) for seed in range(CLIENTS)
    ]
    _, pending = await asyncio.wait(clients, timeout=DURATION + REQUEST_TIMEOUT)
    for task in pending:  # still waiting for an answer long after the deadline
        task.cancel()
        stats.errors.append("a request got no answer within the timeout")
    await asyncio.gather(*clients, return_exceptions=True)
    elapsed = time.monotonic() - started
    await sampler
    await asyncio.sleep(0.1)  # the transports the clients closed finish closing
    return stats, elapsed, rss


def _check_writes(http: httpx.Client, stats: Stats) -> dict[str, Any]:
    """Every acknowledged write `succeeded` with all its documents; the index holds each document once,
    as its last write left it. Returns what the report says of it."""
    problems: list[str] = []
    sent = dict(stats.writes)
    statuses: dict[int, dict[str, Any]] = {}
    uids = sorted(sent)
    for i in range(0, len(uids), 500):
        part = uids[i : i + 500]
        page = http.get("/tasks", params={"uids": ",".join(map(str, part)), "limit": len(part)}).json()
        statuses.update((task["uid"], task) for task in page["results"])
    for uid, docs in sent.items():
        task = statuses.get(uid)
        if task is None:
            problems.append(f"task {uid}: unknown")
        elif task["status"] != "succeeded":
            problems.append(f"task {uid}: {task['status']} {task.get('error')}")
        elif task["details"].get("indexedDocuments") != len(docs):
            problems.append(f"task {uid}: indexed {task['details']} of {len(docs)} documents")

    # the last acknowledged write of each id (writes to one index apply in task order)
    expected: dict[int, int] = {}
    for uid in uids:
        for doc_id, revision in sent[uid]:
            expected[doc_id] = revision
    ids = sorted(expected)
    found: dict[int, int | None] = {}
    for i in range(0, len(ids), 1000):
        part = ids[i : i + 1000]
        page = http.post(
            f"/indexes/{INDEXES[0]}/documents/fetch",
            json={"ids": part, "fields": ["id", "revision"], "limit": len(part)},
        ).json()
        found.update((doc["id"], doc.get("revision")) for doc in page["results"])
    lost = [doc_id for doc_id in ids if doc_id not in found]
    stale = [doc_id for doc_id in ids if doc_id in found and found[doc_id] != expected[doc_id]]
    if lost:
        problems.append(f"{len(lost)} written documents missing, e.g. {lost[:5]}")
    if stale:
        problems.append(f"{len(stale)} documents not as their last write left them, e.g. {stale[:5]}")
    new_docs = sum(1 for doc_id in ids if doc_id >= NEW_ID_BASE)
    count = http.get(f"/indexes/{INDEXES[0]}/stats").json()["numberOfDocuments"]
    if count != N_DOCS + new_docs:
        problems.append(f"{count} documents in the index, expected {N_DOCS} + {new_docs} new")
    return {
        "documentsWritten": sum(len(docs) for docs in sent.values()),
        "newDocuments": new_docs,
        "replacedDocuments": len(ids) - new_docs,
        "documentsAfter": count,
        "writeProblems": problems,
    }


def test_load(load_server: ServerProcess, corpus: tuple[Path, list[str]]) -> None:
    import uvloop

    assert load_server.proc is not None
    pid = load_server.proc.pid
    queries = corpus[1]
    pools = _read_requests(queries)
    rss_before = memory_bytes(pid)["rss"]
    server_cpu, client_cpu = cpu_seconds(pid), time.process_time()
    stats, elapsed, rss = uvloop.run(_run(load_server.port, pools, queries, pid))
    server_cpu, client_cpu = cpu_seconds(pid) - server_cpu, time.process_time() - client_cpu
    after = memory_bytes(pid)
    peak = after["peakRss"]

    with httpx.Client(base_url=load_server.url, timeout=120) as http:
        backlog = http.get("/tasks", params={"statuses": "enqueued,processing", "limit": 0}).json()["total"]
        drained = time.monotonic()
        for uid in sorted(uid for uid, _ in stats.writes)[-1:]:
            wait_task(http, uid, timeout=900)
        drain_seconds = time.monotonic() - drained
        failed = http.get("/tasks", params={"statuses": "failed,canceled", "limit": 0}).json()["total"]
        writes = _check_writes(http, stats)

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
        "writesAcknowledged": len(stats.writes),
        "failedTasks": failed,
        # both sides share the machine's cores: who used them tells where the throughput went
        "serverCpuSeconds": round(server_cpu, 1),
        "clientCpuSeconds": round(client_cpu, 1),
        "serverCpuMsPerRequest": round(server_cpu * 1000 / max(completed, 1), 2),
        "clientCpuMsPerRequest": round(client_cpu * 1000 / max(completed, 1), 2),
        "corpus": "benchmarks/realistic_corpus.py (wordfreq)",
        "documents": N_DOCS,
        "queries": len(queries),
        "client": "asyncio + uvloop, httptools, one keep-alive connection per client",
        **{k: v for k, v in writes.items() if k != "writeProblems"},
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
    assert not writes["writeProblems"], writes["writeProblems"][:10]
    assert completed > 0 and all(stats.latency[kind] for kind, _ in MIX)
    assert peak < MAX_RSS_BYTES
