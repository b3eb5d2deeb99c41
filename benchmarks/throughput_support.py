"""What the throughput benchmarks (`benchmarks/test_throughput.py`) share: the load generators (`wrk`
with a Lua script rotating the request bodies, or an asyncio HTTP/1.1 keep-alive client of ours), one
level against one server with its CPU and memory (`drive`), the one-connection pass (`sequential`), the
tantivy peer as a subprocess (`Peer`), loading NDJSON into hanzo in payloads (`load_ndjson`) and the
commit measured (`git_commit`)."""

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
from tests.conftest import free_port

from benchmarks.proctree import cpu_seconds, memory, settle

TIMEOUT_S = 10
INDEX = "movies"
SEARCH_PATH = f"/indexes/{INDEX}/search"
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


def wrk_load(url: str, bodies: list[str], connections: int, seconds: int, script: Path) -> dict[str, Any]:
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


async def read_status(reader: asyncio.StreamReader) -> int:
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


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


async def asyncio_load(port: int, bodies: list[str], connections: int, seconds: int) -> dict[str, Any]:
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
                    status = await asyncio.wait_for(read_status(streams[0]), TIMEOUT_S)
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
        **{f"p{q}Ms": percentile(latencies, q) * 1000 for q in (50, 95, 99)},
        "maxMs": max(latencies, default=0.0) * 1000,
        "clientCpuSeconds": round(time.process_time() - cpu, 2),
    }


def drive(
    port: int, root: int, bodies: list[str], connections: int, seconds: int, script: Path
) -> dict[str, Any]:
    """One level against one server for `seconds`: the load, then the server's CPU per answer and its
    memory."""
    settle(root)
    cpu = cpu_seconds(root)
    if CLIENT == "wrk":
        result = wrk_load(f"http://127.0.0.1:{port}", bodies, connections, seconds, script)
    else:
        result = asyncio.run(asyncio_load(port, bodies, connections, seconds))
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


def first_searches(url: str, query: str, connections: int = 8, rounds: int = 2) -> list[list[float]]:
    """Wall ms of `query` sent at once on `connections` new connections, `rounds` times: every server
    process answers some, so each pays its first search here (after a large load, a process builds
    the index's word dictionary on its first search) and not inside a measured level, where wrk's
    latency correction would turn that one slow answer into hundreds of slow samples."""
    from concurrent.futures import ThreadPoolExecutor

    def one(_: int) -> float:
        with httpx.Client(base_url=url, timeout=TIMEOUT_S, headers={"Connection": "close"}) as http:
            sent = time.perf_counter()
            http.post(SEARCH_PATH, json={"q": query, "limit": 20})
            return round((time.perf_counter() - sent) * 1000, 1)

    with ThreadPoolExecutor(connections) as pool:
        return [sorted(pool.map(one, range(connections)), reverse=True) for _ in range(rounds)]


def sequential(url: str, queries: list[str]) -> dict[str, Any]:
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
                f"{name}P{q}Ms": round(percentile(values, q), 2)
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


def _git(*args: str) -> str:
    root = Path(__file__).resolve().parents[1]
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=True
    ).stdout.strip()


def git_commit() -> str:
    """The commit measured, marked `-dirty` when the working tree had changes (or `unknown`)."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def load_ndjson(http: httpx.Client, docs: Path, payload_docs: int, timeout: float = 3600.0) -> float:
    """Add an NDJSON file's documents to the hanzo index in payloads of `payload_docs` lines, then wait
    for every task; the seconds from the first request until the last task succeeded."""
    started = time.monotonic()
    uids: list[int] = []

    def send(lines: list[bytes]) -> None:
        res = http.post(
            f"/indexes/{INDEX}/documents",
            params={"primaryKey": "id"},
            content=b"".join(lines),
            headers={"Content-Type": "application/x-ndjson"},
        )
        assert res.status_code == 202, res.text
        uids.append(res.json()["taskUid"])

    batch: list[bytes] = []
    with docs.open("rb") as lines:
        for line in lines:
            batch.append(line)
            if len(batch) == payload_docs:
                send(batch)
                batch = []
    if batch:
        send(batch)
    deadline = started + timeout
    for uid in uids:
        # polled twice a second: a poll every few ms would compete with the indexing it waits for
        while (task := http.get(f"/tasks/{uid}").json())["status"] in ("enqueued", "processing"):
            assert time.monotonic() < deadline, task
            time.sleep(0.5)
        assert task["status"] == "succeeded", task
    return time.monotonic() - started
