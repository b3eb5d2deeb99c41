"""Search throughput under load: hanzo-engine beside a one-worker Starlette + uvicorn + tantivy server.

Issue 15's benchmark. Per workload (a parameter):

- `realistic`: `benchmarks.realistic_corpus` (wordfreq vocabulary, topic mixtures), 100,000 documents and
  1,000 queries (85% of 1-3 words, 15% of 4-8);
- `movies`: the older movie-vocabulary generator `benchmarks.corpus.generate`, same sizes, queries drawn
  from its documents the same way.

hanzo-engine runs as a real server process (`tests.conftest.ServerProcess`, with `--http-workers <CPUs>`
when the build has that flag) loaded over HTTP with NDJSON; the peer (`benchmarks/peers/tantivy_server.py`)
indexes the same NDJSON file (title + overview, BM25) and serves the same route. Both are driven with
`POST /indexes/movies/search {"q": ..., "limit": 20}` rotating the 1,000 queries, at 1, 10, 50 and 500
connections for `HANZO_THROUGHPUT_SECONDS` each (15 s; 1 s in smoke mode), hanzo then the peer at each
level. The load comes from `wrk` (a Lua script rotating the bodies) when it is on PATH, else from an
asyncio HTTP/1.1 keep-alive client of ours in this process (`_asyncio_load`). A request times out after
10 s. Clients and servers share the machine's cores, on loopback.

Reported per server and level: req/s of 2xx answers, p50/p95/p99 latency, transport errors, timeouts,
non-2xx answers with the 503s apart, the server's CPU seconds per request (utime + stime, children
included, of its whole process tree, from before the level until it is idle again, divided by the
answers) and the memory of the tree (RSS, PSS, anonymous, file-backed). Before the levels (warming both
servers up the same way), one connection sends the queries one at a time: `processingTimeMs` and wall
p50/p95 for short (1-3 words) and long queries apart.

Results: `benchmarks/results/throughput.json` (`throughput.smoke.json` in smoke mode, ~2,000 documents,
no timing assertions). Asserted in both modes: every level answered, no transport error or non-2xx other
than 503 from hanzo up to 50 connections, every sequential query answered 200. Without tantivy (the
`bench` extra, not installed by `./dev test`) the hanzo side runs alone.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import ServerProcess, free_port, wait_task

pytest.importorskip("wordfreq")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from benchmarks import corpus, realistic_corpus
from benchmarks.proctree import cpu_seconds, http_workers, http_workers_args, memory, settle

SMOKE = os.environ.get("HANZO_BENCH_SCALE", "full") == "smoke"
N_DOCS = 2_000 if SMOKE else 100_000
N_QUERIES = 1_000
SEQUENTIAL = 200 if SMOKE else N_QUERIES
LEVEL_SECONDS = max(1, round(float(os.environ.get("HANZO_THROUGHPUT_SECONDS") or (1 if SMOKE else 15))))
CONNECTIONS = (1, 10, 50, 500)
TIMEOUT_S = 10
INDEX = "movies"
SEARCH_PATH = f"/indexes/{INDEX}/search"
RESULTS_FILE = (
    Path(__file__).resolve().parent / "results" / ("throughput.smoke.json" if SMOKE else "throughput.json")
)
PEER_SCRIPT = Path(__file__).resolve().parent / "peers" / "tantivy_server.py"
# tantivy is a peer from the `bench` extra: without it the hanzo side runs alone
HAVE_PEER = importlib.util.find_spec("tantivy") is not None
CLIENT = os.environ.get("HANZO_THROUGHPUT_CLIENT") or ("wrk" if shutil.which("wrk") else "asyncio")
CPUS = os.cpu_count() or 1


# -- load generators --------------------------------------------------------------------------------

LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local bodies = {%s}
local threads = {}
local n = 0
n503 = 0

function setup(thread)
  thread:set("first", #threads * 997)
  table.insert(threads, thread)
end

function init(args)
  n = first or 0
end

function request()
  n = n + 1
  return wrk.format(nil, nil, nil, bodies[(n %% #bodies) + 1])
end

function response(status, headers, body)
  if status == 503 then n503 = n503 + 1 end
end

function done(summary, latency, requests)
  local s503 = 0
  for _, t in ipairs(threads) do s503 = s503 + t:get("n503") end
  local e = summary.errors
  io.write(string.format('WRKJSON {"durationUs": %%d, "requests": %%d, "connectErrors": %%d, ' ..
    '"readErrors": %%d, "writeErrors": %%d, "non2xx": %%d, "timeouts": %%d, "s503": %%d, ' ..
    '"p50Us": %%d, "p95Us": %%d, "p99Us": %%d, "maxUs": %%d}\\n',
    summary.duration, summary.requests, e.connect, e.read, e.write, e.status, e.timeout, s503,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max))
end
"""


def _wrk(url: str, bodies: list[str], connections: int, seconds: int, script: Path) -> dict[str, Any]:
    if not script.exists():
        script.write_text(LUA % ",\n".join(f"[==[{b}]==]" for b in bodies))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [
        "wrk",
        "-t",
        str(min(connections, CPUS)),
        "-c",
        str(connections),
        "-d",
        f"{seconds}s",
        "--timeout",
        f"{TIMEOUT_S}s",
        "-s",
        str(script),
        url + SEARCH_PATH,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    line = next(x for x in done.stdout.splitlines() if x.startswith("WRKJSON "))
    raw = json.loads(line.removeprefix("WRKJSON "))
    return {
        "seconds": raw["durationUs"] / 1e6,
        "answers": raw["requests"],
        "ok": raw["requests"] - raw["non2xx"],
        "transportErrors": raw["connectErrors"] + raw["readErrors"] + raw["writeErrors"],
        "timeouts": raw["timeouts"],
        "non2xx": raw["non2xx"] - raw["s503"],
        "s503": raw["s503"],
        **{f"p{q}Ms": raw[f"p{q}Us"] / 1000 for q in (50, 95, 99)},
        "maxMs": raw["maxUs"] / 1000,
        "clientCpuSeconds": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
    }


async def _read_status(reader: asyncio.StreamReader) -> int:
    """Read one HTTP/1.1 response (Content-Length or chunked); its status."""
    status = int((await reader.readuntil(b"\r\n")).split()[1])
    length, chunked = 0, False
    while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if not chunked:
        await reader.readexactly(length)
        return status
    while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
        await reader.readexactly(size + 2)
    await reader.readuntil(b"\r\n")
    return status


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


async def _asyncio_load(port: int, bodies: list[str], connections: int, seconds: int) -> dict[str, Any]:
    """Keep-alive connections each sending the rotating bodies one after the other until the deadline."""
    latencies: list[float] = []
    counts = {"ok": 0, "transportErrors": 0, "timeouts": 0, "non2xx": 0, "s503": 0}
    requests = [
        (
            f"POST {SEARCH_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(b.encode())}\r\n\r\n{b}"
        ).encode()
        for b in bodies
    ]
    started = time.monotonic()
    deadline = started + seconds

    async def connection(first: int) -> None:
        n = first
        streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while time.monotonic() < deadline:
                n += 1
                try:
                    if streams is None:
                        streams = await asyncio.wait_for(
                            asyncio.open_connection("127.0.0.1", port), TIMEOUT_S
                        )
                    sent = time.perf_counter()
                    streams[1].write(requests[n % len(requests)])
                    status = await asyncio.wait_for(_read_status(streams[0]), TIMEOUT_S)
                except TimeoutError:
                    counts["timeouts"] += 1
                except (
                    OSError,
                    asyncio.IncompleteReadError,
                    asyncio.LimitOverrunError,
                    ValueError,
                    IndexError,
                ):
                    counts["transportErrors"] += 1
                else:
                    latencies.append(time.perf_counter() - sent)
                    counts["ok" if 200 <= status < 300 else "s503" if status == 503 else "non2xx"] += 1
                    continue
                if streams is not None:  # a failed connection is replaced
                    streams[1].close()
                    streams = None
        finally:
            if streams is not None:
                streams[1].close()

    cpu = time.process_time()
    tasks = [asyncio.create_task(connection(i * 997)) for i in range(connections)]
    await asyncio.wait(tasks, timeout=seconds)
    for task in tasks:  # in flight at the deadline: dropped, as wrk does
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "seconds": seconds,
        "answers": len(latencies),
        **counts,
        **{f"p{q}Ms": _percentile(latencies, q) * 1000 for q in (50, 95, 99)},
        "maxMs": max(latencies, default=0.0) * 1000,
        "clientCpuSeconds": round(time.process_time() - cpu, 2),
    }


def _drive(port: int, root: int, bodies: list[str], connections: int, script: Path) -> dict[str, Any]:
    """One level against one server: the load, then the server's CPU per answer and its memory."""
    settle(root)
    cpu = cpu_seconds(root)
    if CLIENT == "wrk":
        result = _wrk(f"http://127.0.0.1:{port}", bodies, connections, LEVEL_SECONDS, script)
    else:
        result = asyncio.run(_asyncio_load(port, bodies, connections, LEVEL_SECONDS))
    mem = memory(root)
    settle(root)
    server_cpu = cpu_seconds(root) - cpu
    result.update(
        {
            "reqPerS": round(result["ok"] / result["seconds"], 1),
            "serverCpuSeconds": round(server_cpu, 2),
            "serverCpuMsPerRequest": round(server_cpu * 1000 / max(result["answers"], 1), 3),
            "memory": mem,
        }
    )
    for key in ("p50Ms", "p95Ms", "p99Ms", "maxMs", "seconds"):
        result[key] = round(result[key], 2)
    return result


def _sequential(url: str, queries: list[str]) -> dict[str, Any]:
    """One connection, one query at a time: `processingTimeMs` and the wall time, short and long apart."""
    by_kind: dict[str, dict[str, list[float]]] = {
        k: {"processing": [], "wall": []} for k in ("short", "long")
    }
    statuses: dict[int, int] = {}
    empty = 0
    with httpx.Client(base_url=url, timeout=TIMEOUT_S) as http:
        for q in queries:
            sent = time.perf_counter()
            res = http.post(SEARCH_PATH, json={"q": q, "limit": 20})
            wall = time.perf_counter() - sent
            statuses[res.status_code] = statuses.get(res.status_code, 0) + 1
            if res.status_code != 200:
                continue
            body = res.json()
            empty += not body["hits"]
            series = by_kind["short" if len(q.split()) <= 3 else "long"]
            series["processing"].append(float(body["processingTimeMs"]))
            series["wall"].append(wall * 1000)
    out: dict[str, Any] = {
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "emptyResults": empty,
    }
    for kind, measured in by_kind.items():
        out[kind] = {
            "count": len(measured["wall"]),
            **{
                f"{name}P{q}Ms": round(_percentile(values, q), 2)
                for name, values in (("processing", measured["processing"]), ("wall", measured["wall"]))
                for q in (50, 95)
            },
        }
    return out


# -- servers ----------------------------------------------------------------------------------------


class Peer:
    """The tantivy server as a subprocess on a free loopback port."""

    def __init__(self, docs: Path, workdir: Path) -> None:
        self.port = free_port()
        self.log = workdir / "peer.log"
        self.started = time.monotonic()
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    str(PEER_SCRIPT),
                    "--docs",
                    str(docs),
                    "--index-dir",
                    str(workdir / "peer-index"),
                    "--port",
                    str(self.port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 900.0) -> float:
        """Seconds from the start until it serves (the index is built first)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"peer exited with {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=0.5).status_code == 200:
                    return time.monotonic() - self.started
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"peer did not become ready:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _git_commit() -> str:
    """The commit measured, marked `-dirty` when the working tree had changes (or `unknown`)."""
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def _workload(name: str, workdir: Path) -> tuple[Path, list[str]]:
    """The NDJSON documents and the queries of a workload."""
    if name == "realistic":
        files = realistic_corpus.corpus_files(N_DOCS, N_QUERIES)
        assert files is not None
        return files[0], realistic_corpus.read_queries(files[1])
    docs = corpus.generate(N_DOCS)
    path = workdir / "movies.ndjson"
    path.write_bytes(b"".join(json.dumps(d).encode() + b"\n" for d in docs))
    return path, realistic_corpus.make_queries(docs, N_QUERIES)


# -- the benchmark ----------------------------------------------------------------------------------


def _row(r: dict[str, Any]) -> str:
    faults = f"{r['transportErrors']}/{r['timeouts']}/{r['non2xx']}/{r['s503']}"
    return (
        f"{r['reqPerS']:>8.1f} {r['p50Ms']:>8.1f} {r['p95Ms']:>8.1f} {r['p99Ms']:>8.1f} {faults:>12} "
        f"{r['serverCpuMsPerRequest']:>7.2f} {r['memory']['rssMiB']:>7.0f}"
    )


def _table(report: dict[str, Any]) -> str:
    head = f"{'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'err/to/x/503':>12} {'cpu ms':>7} {'RSS MiB':>7}"
    lines = [
        f"\nthroughput, {report['workload']} corpus: {report['documents']:,} documents, {report['queries']:,} "
        f"queries, {report['levelSeconds']} s a level, client {report['client']}, hanzo "
        f"--http-workers {report['httpWorkers'] or '(flag not supported)'}, {CPUS} CPUs",
        f"{'conns':>5} | {'hanzo-engine':^69} | {'starlette + tantivy (1 worker)':^69} | hanzo/peer",
        f"{'':>5} | {head} | {head} | {'req/s':>6} {'p99':>6}",
    ]
    for level in report["levels"]:
        ratio = level["ratio"]
        lines.append(
            f"{level['connections']:>5} | {_row(level['hanzo'])} | {_row(level['peer'])} | "
            f"{ratio['reqPerS']:>6.2f} {ratio['p99']:>6.2f}"
        )
    lines.append(
        "err/to/x/503 = transport errors / timeouts / other non-2xx / 503; cpu ms = server CPU per "
        "answer (process tree); RSS summed over the process tree"
    )
    for server in ("hanzo", "peer"):
        seq = report["sequential"][server]
        lines.append(
            f"one connection, {server:>5}: "
            + "; ".join(
                f"{kind} (n={seq[kind]['count']}) processingTimeMs p50 {seq[kind]['processingP50Ms']:.0f} p95 "
                f"{seq[kind]['processingP95Ms']:.0f}, wall p50 {seq[kind]['wallP50Ms']:.2f} p95 "
                f"{seq[kind]['wallP95Ms']:.2f} ms"
                for kind in ("short", "long")
            )
        )
    for server in ("hanzo", "peer"):
        lines.append(f"memory after the run, {server:>5}: {json.dumps(report['memory'][server])}")
    return "\n".join(lines)


def _save(workload: str, report: dict[str, Any]) -> None:
    RESULTS_FILE.parent.mkdir(exist_ok=True)
    try:
        results = json.loads(RESULTS_FILE.read_text())
    except (OSError, ValueError):
        results = {}
    results.setdefault("workloads", {})[workload] = report
    results["command"] = (
        "HANZO_BENCH_SCALE=smoke " if SMOKE else ""
    ) + ".venv/bin/python -m pytest -s -p no:cacheprovider benchmarks/test_throughput.py"
    RESULTS_FILE.write_text(json.dumps(results, indent=2) + "\n")


@pytest.mark.parametrize("workload", ["realistic", "movies"])
def test_throughput(workload: str, tmp_path: Path) -> None:
    docs_path, queries = _workload(workload, tmp_path)
    assert len(queries) == N_QUERIES
    bodies = [json.dumps({"q": q, "limit": 20}) for q in queries]
    script = tmp_path / "throughput.lua"

    peer = Peer(docs_path, tmp_path) if HAVE_PEER else None
    workers = http_workers()
    hanzo = ServerProcess(tmp_path / "data.ms", extra_args=http_workers_args())
    try:
        hanzo.start(timeout=120)
        assert hanzo.proc is not None
        loaded = time.monotonic()
        with httpx.Client(base_url=hanzo.url, timeout=600) as http:
            res = http.post(
                f"/indexes/{INDEX}/documents",
                params={"primaryKey": "id"},
                content=docs_path.read_bytes(),
                headers={"Content-Type": "application/x-ndjson"},
            )
            assert res.status_code == 202, res.text
            task = wait_task(http, res.json()["taskUid"], timeout=1800)
            assert task["status"] == "succeeded", task
        load_seconds = time.monotonic() - loaded
        peer_seconds = peer.wait_ready() if peer else 0.0

        servers = {"hanzo": (hanzo.port, hanzo.proc.pid)}
        if peer:
            servers["peer"] = (peer.port, peer.proc.pid)
        report: dict[str, Any] = {
            "workload": workload,
            "documents": N_DOCS,
            "queries": N_QUERIES,
            "levelSeconds": LEVEL_SECONDS,
            "client": CLIENT,
            "timeoutSeconds": TIMEOUT_S,
            "httpWorkers": workers,
            "cpus": CPUS,
            "gitCommit": _git_commit(),
            "hanzoLoadSeconds": round(load_seconds, 1),
            "peerReadySeconds": round(peer_seconds, 1),
            "levels": [],
            "sequential": {},
            "memory": {},
        }
        for name, (port, _) in servers.items():  # warm both up the same way: one pass over the queries
            report["sequential"][name] = _sequential(f"http://127.0.0.1:{port}", queries[:SEQUENTIAL])
        for connections in CONNECTIONS:
            level: dict[str, Any] = {"connections": connections}
            for name, (port, pid) in servers.items():
                level[name] = _drive(port, pid, bodies, connections, script)
            if peer is None:
                report["levels"].append(level)
                continue
            h, p = level["hanzo"], level["peer"]
            level["ratio"] = {
                "reqPerS": round(h["reqPerS"] / max(p["reqPerS"], 1e-9), 3),
                **{q: round(h[f"{q}Ms"] / max(p[f"{q}Ms"], 1e-9), 3) for q in ("p50", "p95", "p99")},
                "cpuPerRequest": round(h["serverCpuMsPerRequest"] / max(p["serverCpuMsPerRequest"], 1e-9), 3),
            }
            report["levels"].append(level)
        report["memory"] = {name: memory(pid) for name, (_, pid) in servers.items()}
    finally:
        hanzo.stop()
        if peer:
            peer.stop()

    _save(workload, report)
    print(_table(report) if peer else json.dumps(report, indent=2))

    for level in report["levels"]:
        for name in servers:
            assert level[name]["ok"] > 0, (name, level)
        if level["connections"] <= 50:
            h = level["hanzo"]
            assert h["transportErrors"] == 0 and h["non2xx"] == 0, level
    for name in servers:
        assert report["sequential"][name]["statuses"] == {"200": SEQUENTIAL}, report["sequential"][name]
