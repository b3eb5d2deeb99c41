"""HTTP request metrics: the registry, the middleware filling it, and the Prometheus text exposition.

`HttpMetrics` (middleware) counts requests per (method, route template, status) and keeps a latency
histogram per (method, route template): templates, never raw paths, so the label set stays bounded. It
also adds `Retry-After` to every 503 (`too_many_search_requests`) and writes one DEBUG record per request
on the `hanzo_engine.http` logger (what `/logs/stream` usually shows). A search worker publishes its
registry to the runtime directory; the primary's `/metrics` adds them up (`instance_http_metrics`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from pathlib import Path
from typing import Any, Final

import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .search_queue import RETRY_AFTER_SECONDS

log = logging.getLogger("hanzo_engine.http")

LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class HttpMetricsRegistry:
    """Request counters and latency histograms (touched from the event loop only)."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str, int], int] = {}
        self.latency: dict[tuple[str, str], list[float]] = {}  # bucket counts..., sum, count

    def observe(self, method: str, path: str, status: int, seconds: float) -> None:
        key = (method, path, status)
        self.requests[key] = self.requests.get(key, 0) + 1
        hist = self.latency.get((method, path))
        if hist is None:
            hist = self.latency[(method, path)] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        for i, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                hist[i] += 1
        hist[-2] += seconds
        hist[-1] += 1

    def snapshot(self) -> bytes:
        """The counters as JSON, as a search worker publishes them for the primary's `/metrics`."""
        return msgspec.json.encode(
            {
                "requests": [[m, p, s, c] for (m, p, s), c in self.requests.items()],
                "latency": [[m, p, hist] for (m, p), hist in self.latency.items()],
            }
        )

    def add(self, snapshot: bytes) -> None:
        """Add another process's published counters to these."""
        data = msgspec.json.decode(snapshot)
        for m, p, status, count in data["requests"]:
            key = (m, p, status)
            self.requests[key] = self.requests.get(key, 0) + count
        for m, p, hist in data["latency"]:
            mine = self.latency.setdefault((m, p), [0.0] * (len(LATENCY_BUCKETS) + 2))
            for i, value in enumerate(hist):
                mine[i] += value


def http_metrics(app_state: Any) -> HttpMetricsRegistry:
    registry: HttpMetricsRegistry | None = getattr(app_state, "http_metrics", None)
    if registry is None:
        registry = app_state.http_metrics = HttpMetricsRegistry()
    return registry


async def refresh_worker_metrics(app_state: Any, wait: float = 0.5) -> None:
    """Ask every search worker to publish its HTTP metrics now (SIGUSR1) and wait, a bounded time,
    until each has: a scrape then counts every request answered before it."""
    pool = getattr(app_state, "worker_pool", None)
    runtime_dir: Path | None = getattr(app_state, "runtime_dir", None)
    if pool is None or runtime_dir is None:
        return
    asked = time.time_ns()
    slots = pool.signal_all(signal.SIGUSR1)
    deadline = time.monotonic() + wait
    pending = set(slots)
    while pending and time.monotonic() < deadline:
        for slot in list(pending):
            try:
                if (runtime_dir / f"metrics-{slot}.json").stat().st_mtime_ns >= asked:
                    pending.discard(slot)
            except OSError:
                pass
        if pending:
            await asyncio.sleep(0.005)


def instance_http_metrics(app_state: Any) -> HttpMetricsRegistry:
    """This process's HTTP metrics plus those the search workers published (`server.workers`)."""
    own = http_metrics(app_state)
    runtime_dir: Path | None = getattr(app_state, "runtime_dir", None)
    if runtime_dir is None:
        return own
    total = HttpMetricsRegistry()
    total.add(own.snapshot())
    for path in sorted(runtime_dir.glob("metrics-*.json")):
        try:
            total.add(path.read_bytes())
        except (OSError, msgspec.DecodeError, ValueError, KeyError, TypeError):
            continue  # a worker's file being replaced: its counts come with the next scrape
    return total


class HttpMetrics:
    """Per-route request metrics and `Retry-After` on 503 answers (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                if status == 503:
                    headers = list(message.get("headers", []))
                    headers.append((b"retry-after", str(RETRY_AFTER_SECONDS).encode()))
                    message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            matched = scope.get("route")
            template = getattr(matched, "path", None)
            if template is not None:  # unknown paths are not recorded: their label set is unbounded
                seconds = time.perf_counter() - started
                http_metrics(scope["app"].state).observe(scope["method"], template, status, seconds)
                if log.isEnabledFor(logging.DEBUG):
                    # `/keys/{key_or_uid}` may carry a key value: such paths are logged as their template
                    shown = template if "{key_or_uid}" in template else scope["path"]
                    log.debug("%s %s %s %.3fms", scope["method"], shown, status, seconds * 1e3)
