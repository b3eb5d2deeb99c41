"""Instance routes: `/experimental-features`, `/metrics`, `/logs/*`, `POST /indexes/{uid}/fields`,
`POST /indexes/{uid}/compact`, and the two HTTP middlewares they rely on.

- Experimental features (contract §9.1) live in `<db>/experimental-features.json`, written atomically
  (temp file, fsync, rename). The CLI flags `--experimental-enable-metrics`, `--experimental-enable-
  logs-route` and `--experimental-contains-filter` force their feature on whatever was PATCHed;
  `--experimental-legacy-search-default` is only the default of `legacySearch` until it is PATCHed.
- `HttpMetrics` (middleware) counts requests per (method, route template, status) and keeps a latency
  histogram per (method, route template) — templates, never raw paths, so the label set stays bounded;
  it also adds `Retry-After: 10` to every 503 (`too_many_search_requests`, contract §0) and writes one
  DEBUG record per request on the `hanzo_engine.http` logger (what `/logs/stream` usually shows).
- `WaitForTask` (middleware) implements read-after-write for RAG pipelines: a write carrying
  `X-Hanzo-Wait-For-Task: <ms>` gets its normal `202` summarized task, but only once the task is
  finished or `<ms>` elapsed (at most 10 minutes); the `X-Hanzo-Task-Status` response header then says
  which (`succeeded`, `failed`, `canceled`, or still `enqueued`/`processing`). Meilisearch clients
  never send the header, so nothing changes for them.
- `/logs/stderr` filters the stderr handler with a tracing-style target (`info`,
  `hanzo_engine.scheduler=debug,uvicorn=off`, targets being logger-name prefixes); `/logs/stream`
  streams records (human or JSON lines; `profile` mode is answered as JSON lines) to one client at a
  time until it disconnects or `DELETE /logs/stream`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hanzo_engine.apitypes.deserr import Field, InvalidValue, decode_json_body, deserialize_object
from hanzo_engine.apitypes.errors import MeiliError, error_json
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.apitypes.tasks import FINISHED_STATUSES, TASK_STATUSES, TASK_TYPES
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.filter_parser import FilterFeatures
from hanzo_engine.scheduler.webhooks import metrics as webhook_metrics

from ..app_state import route, state
from ..http import JSONResponse, read_body, read_index
from ..search_exec import RETRY_AFTER_SECONDS, search_queue
from .indexes import custom_metadata
from .search import known_fields

log = logging.getLogger("hanzo_engine.http")

# -------------------------------------------------------------------------------------------------
# Experimental features
# -------------------------------------------------------------------------------------------------

FEATURES: Final = (
    "metrics", "logsRoute", "editDocumentsByFunction", "containsFilter", "dynamicSearchRules", "network",
    "getTaskDocumentsRoute", "taskQueueCompactionRoute", "compositeEmbedders", "chatCompletions", "multimodal",
    "foreignKeys", "disableDocumentsFetchQueue", "legacySearch", "renderRoute",
)
FEATURES_FILE: Final = "experimental-features.json"
_FEATURE_FIELDS: Final = tuple(Field(name, "boolean", "bad_request", nullable=True) for name in FEATURES)


def feature_not_enabled(action: str, feature: str, link: str) -> MeiliError:
    return MeiliError("feature_not_enabled",
                      f"{action} requires enabling the `{feature}` experimental feature. See {link}")


class ExperimentalFeatures:
    """The runtime features: persisted choices, CLI-forced features OR-ed on top (thread-safe)."""

    def __init__(self, path: Path, *, forced: frozenset[str], legacy_search_default: bool) -> None:
        self.path = path
        self.forced = forced
        self.legacy_search_default = legacy_search_default
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = (-1, -1)  # never read yet
        self._stored: dict[str, bool] = {}
        self._reload()

    def _reload(self) -> None:
        """Re-read the file when it changed: another process of the server may have written it."""
        try:
            st = os.stat(self.path)
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_ino)
        except OSError:
            stamp = None
        if stamp == self._stamp:
            return
        try:
            stored = json.loads(self.path.read_text())
        except (OSError, ValueError):
            stored = {}
        self._stored = {k: bool(v) for k, v in stored.items() if k in FEATURES}
        self._stamp = stamp

    def view(self) -> dict[str, bool]:
        with self._lock:
            self._reload()
            stored = dict(self._stored)
        out = {name: stored.get(name, False) or name in self.forced for name in FEATURES}
        out["legacySearch"] = stored.get("legacySearch", self.legacy_search_default)
        return out

    def enabled(self, name: str) -> bool:
        return self.view()[name]

    def filter_features(self) -> FilterFeatures:
        """The experimental features filters may use (`containsFilter`, `network`, `multimodal`)."""
        view = self.view()
        return FilterFeatures(contains_filter=view["containsFilter"], multimodal=view["multimodal"],
                              network=view["network"], foreign_keys=view["foreignKeys"])

    def update(self, patch: dict[str, bool | None]) -> dict[str, bool]:
        """Apply the non-null values of `patch` and persist them before answering."""
        with self._lock:
            self._stored.update({k: v for k, v in patch.items() if v is not None})
            tmp = self.path.with_suffix(".tmp")
            with open(tmp, "w") as f:
                json.dump(self._stored, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        return self.view()


def runtime_features(request: Request) -> ExperimentalFeatures:
    """The app's experimental features, loaded on first use."""
    features: ExperimentalFeatures | None = getattr(request.app.state, "experimental_features", None)
    if features is None:
        options = request.app.state.hanzo.options
        forced = {name for name, flag in (("metrics", options.experimental_enable_metrics),
                                          ("logsRoute", options.experimental_enable_logs_route),
                                          ("containsFilter", options.experimental_contains_filter)) if flag}
        features = ExperimentalFeatures(options.db_path / FEATURES_FILE, forced=frozenset(forced),
                                        legacy_search_default=options.experimental_legacy_search_default)
        request.app.state.experimental_features = features
    return features


@route("GET", "/experimental-features", action="experimental.get")
async def get_features(request: Request) -> Response:
    return JSONResponse(runtime_features(request).view())


@route("PATCH", "/experimental-features", action="experimental.update")
async def patch_features(request: Request) -> Response:
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    patch = deserialize_object(body, _FEATURE_FIELDS)
    return JSONResponse(await run_in_threadpool(runtime_features(request).update, patch))


# -------------------------------------------------------------------------------------------------
# HTTP middlewares: metrics, Retry-After, wait-for-task
# -------------------------------------------------------------------------------------------------

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
        return msgspec.json.encode({
            "requests": [[m, p, s, c] for (m, p, s), c in self.requests.items()],
            "latency": [[m, p, hist] for (m, p), hist in self.latency.items()],
        })

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


WAIT_HEADER: Final = b"x-hanzo-wait-for-task"
TASK_STATUS_HEADER: Final = b"x-hanzo-task-status"
MAX_WAIT_MS: Final = 600_000


async def wait_for_task(app_state: Any, task_uid: int, timeout: float) -> str | None:
    """Poll the task until it is finished or `timeout` seconds passed; its last known status."""
    scheduler = app_state.hanzo.scheduler
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        task = scheduler.store.get_task(task_uid)
        status: str | None = None if task is None else task["status"]
        if status is None or status in FINISHED_STATUSES or time.monotonic() >= deadline:
            return status
        await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.05)


class WaitForTask:
    """`X-Hanzo-Wait-For-Task: <ms>`: hold a `202` until its task is finished (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = dict(scope.get("headers", [])).get(WAIT_HEADER) if scope["type"] == "http" else None
        if raw is None:
            await self.app(scope, receive, send)
            return
        text = raw.decode("latin-1").strip()
        if not text.isdigit() or int(text) > MAX_WAIT_MS:
            message = (f"The `X-Hanzo-Wait-For-Task` header must be a number of milliseconds between 0 and "
                       f"{MAX_WAIT_MS}, found `{text}`.")
            await JSONResponse(error_json("bad_request", message), status_code=400)(scope, receive, send)
            return
        timeout = int(text) / 1000
        start: Message | None = None
        chunks: list[bytes] = []

        async def hold_202(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and message["status"] == 202:
                start = message
                return
            if start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            headers = list(start.get("headers", []))
            try:
                task_uid = int(msgspec.json.decode(body)["taskUid"])
            except (msgspec.DecodeError, KeyError, TypeError, ValueError):
                task_uid = -1
            if task_uid >= 0:
                status = await wait_for_task(scope["app"].state, task_uid, timeout)
                if status is not None:
                    headers.append((TASK_STATUS_HEADER, status.encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await self.app(scope, receive, hold_202)


# -------------------------------------------------------------------------------------------------
# GET /metrics
# -------------------------------------------------------------------------------------------------

METRICS_LINK: Final = "https://github.com/meilisearch/product/discussions/625"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _Exposition:
    """Prometheus text format 0.0.4, one metric family at a time."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, number: float, /, **labels: str) -> None:
        if labels:
            inner = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
            self.lines.append(f"{name}{{{inner}}} {_number(number)}")
        else:
            self.lines.append(f"{name} {_number(number)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _dir_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def _storage_metrics(app_state: Any) -> dict[str, Any]:
    """Index document counts and sizes and task counts, read off the event loop."""
    st = app_state.hanzo
    scheduler = st.scheduler
    indexes: dict[str, tuple[int, int, bool]] = {}
    used = 0
    for uid in sorted(scheduler.mapper.mapping()):
        index = scheduler.index(uid)
        if index is None:
            continue
        with index.read() as r:
            count = r.number_of_documents()
        indexes[uid] = (count, index.file_size(), scheduler.is_indexing(uid))
        used += index.used_size()
    store = scheduler.store
    return {
        "db_size": _dir_size(st.options.db_path), "used": used, "indexes": indexes,
        "statuses": {s: len(store.bitmap(f"status:{s}")) for s in TASK_STATUSES},
        "types": {t: len(store.bitmap(f"type:{t}")) for t in TASK_TYPES},
        "task_indexes": {uid: len(store.bitmap(f"index:{uid}")) for uid in indexes},
        "last_update": scheduler.last_update(),
    }


@route("GET", "/metrics", action="metrics.get")
async def get_metrics(request: Request) -> Response:
    if not runtime_features(request).enabled("metrics"):
        raise feature_not_enabled("Getting metrics", "metrics", METRICS_LINK)
    data = await run_in_threadpool(_storage_metrics, request.app.state)
    await refresh_worker_metrics(request.app.state)
    out = _Exposition()
    registry = instance_http_metrics(request.app.state)
    out.family("meilisearch_http_requests_total", "counter", "Meilisearch HTTP requests total")
    for (method, path, status), count in sorted(registry.requests.items()):
        out.sample("meilisearch_http_requests_total", count, method=method, path=path, status=str(status))
    out.family("meilisearch_http_response_time_seconds", "histogram", "Meilisearch HTTP response times")
    for (method, path), hist in sorted(registry.latency.items()):
        for bound, observed in zip(LATENCY_BUCKETS, hist, strict=False):
            out.sample("meilisearch_http_response_time_seconds_bucket", observed, method=method, path=path,
                       le=_number(bound))
        out.sample("meilisearch_http_response_time_seconds_bucket", hist[-1], method=method, path=path, le="+Inf")
        out.sample("meilisearch_http_response_time_seconds_sum", hist[-2], method=method, path=path)
        out.sample("meilisearch_http_response_time_seconds_count", hist[-1], method=method, path=path)
    out.family("meilisearch_db_size_bytes", "gauge", "Meilisearch DB Size In Bytes")
    out.sample("meilisearch_db_size_bytes", data["db_size"])
    out.family("meilisearch_used_db_size_bytes", "gauge", "Meilisearch Used DB Size In Bytes")
    out.sample("meilisearch_used_db_size_bytes", data["used"])
    out.family("meilisearch_index_count", "gauge", "Meilisearch Index Count")
    out.sample("meilisearch_index_count", len(data["indexes"]))
    out.family("meilisearch_index_docs_count", "gauge", "Meilisearch Index Docs Count")
    for uid, (count, _size, _busy) in data["indexes"].items():
        out.sample("meilisearch_index_docs_count", count, index=uid)
    out.family("meilisearch_index_size_bytes", "gauge", "Size of each index's LMDB file in bytes")
    for uid, (_count, size, _busy) in data["indexes"].items():
        out.sample("meilisearch_index_size_bytes", size, index=uid)
    out.family("meilisearch_is_indexing", "gauge", "Meilisearch Is Indexing")
    out.sample("meilisearch_is_indexing", int(any(busy for _c, _s, busy in data["indexes"].values())))
    out.family("meilisearch_nb_tasks", "gauge", "Meilisearch Number of tasks")
    for kind, values in (("statuses", data["statuses"]), ("types", data["types"]),
                         ("indexes", data["task_indexes"])):
        for value, count in values.items():
            out.sample("meilisearch_nb_tasks", count, kind=kind, value=value)
    out.family("meilisearch_last_update", "gauge", "Meilisearch Last Update")
    out.sample("meilisearch_last_update", (data["last_update"] or 0) // 1_000_000_000)
    queue = search_queue(request)
    out.family("meilisearch_search_queue_size", "gauge", "Meilisearch Search Queue Size")
    out.sample("meilisearch_search_queue_size", queue.capacity)
    out.family("meilisearch_searches_running", "gauge", "Meilisearch Searches Running")
    out.sample("meilisearch_searches_running", queue.running)
    out.family("meilisearch_searches_waiting_to_be_processed", "gauge", "Meilisearch Searches Being Processed")
    out.sample("meilisearch_searches_waiting_to_be_processed", queue.instance_waiting())
    scheduler = request.app.state.hanzo.scheduler
    for name, kind, help_text, value in await run_in_threadpool(webhook_metrics, scheduler.store, scheduler.webhooks):
        out.family(name, kind, help_text)
        out.sample(name, value)
    return Response(out.text(), media_type="text/plain; version=0.0.4")


# -------------------------------------------------------------------------------------------------
# /logs/stderr and /logs/stream
# -------------------------------------------------------------------------------------------------

LOGS_LINK: Final = "https://github.com/orgs/meilisearch/discussions/721"
TRACE: Final = 5
_LEVELS: Final = {"trace": TRACE, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
                  "error": logging.ERROR, "off": logging.CRITICAL + 1}
_LEVEL_ERROR: Final = ('error parsing level filter: expected one of "off", "error", "warn", "info", "debug", '
                       '"trace", or a number 0-5')
_NUMERIC_LEVELS: Final = ("off", "error", "warn", "info", "debug", "trace")


class LogTargets(logging.Filter):
    """A tracing `Targets` filter: per logger-name prefix a minimum level (longest prefix wins)."""

    def __init__(self, default: int, targets: list[tuple[str, int]]) -> None:
        super().__init__()
        self.default = default
        self.targets = sorted(targets, key=lambda t: -len(t[0]))

    @classmethod
    def parse(cls, text: str) -> LogTargets:
        default = logging.CRITICAL + 1  # tracing: a target list without a bare level enables nothing else
        targets: list[tuple[str, int]] = []
        for directive in (d.strip() for d in text.split(",")):
            if not directive:
                continue
            name, sep, level_text = directive.partition("=")
            bare = None if sep else _level(name)
            if bare is not None:
                default = bare
                continue
            level = TRACE if not sep else _level(level_text)
            if level is None:
                raise InvalidValue(_LEVEL_ERROR)
            if not name or any(c.isspace() for c in name):
                raise InvalidValue("invalid filter directive")
            targets.append((name, level))
        return cls(default, targets)

    def level_for(self, name: str) -> int:
        for prefix, level in self.targets:
            if name == prefix or name.startswith(prefix + "."):
                return level
        return self.default

    def min_level(self) -> int:
        return min([self.default, *(level for _p, level in self.targets)])

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.level_for(record.name)


def _level(text: str) -> int | None:
    text = text.strip().lower()
    if text.isdigit() and int(text) <= 5:
        return _LEVELS[_NUMERIC_LEVELS[int(text)]]
    return _LEVELS.get("warn" if text == "warning" else text)


def _parse_targets(text: str) -> LogTargets:
    return LogTargets.parse(text)


def _targets(value: str | LogTargets) -> LogTargets:
    """The body's `target`: parsed by its validator, or the default text (defaults skip validators)."""
    return value if isinstance(value, LogTargets) else LogTargets.parse(value)


_STDERR_BODY: Final = (Field("target", "string", "bad_request", default="info", validate=_parse_targets),)
_STREAM_BODY: Final = (
    Field("target", "string", "bad_request", default="info", validate=_parse_targets),
    Field("mode", "string", "bad_request", default="human", choices=("human", "json", "profile")),
    Field("profileMemory", "boolean", "bad_request", default=False),
)


def _stderr_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if getattr(h, "_hanzo_engine", False)]


def _targets_of(handler: logging.Handler) -> list[LogTargets]:
    return [f for f in handler.filters if isinstance(f, LogTargets)]


@route("POST", "/logs/stderr", action="metrics.get")
async def logs_stderr(request: Request) -> Response:
    body = deserialize_object(decode_json_body(await read_body(request), request.headers.get("content-type")),
                              _STDERR_BODY)
    if not runtime_features(request).enabled("logsRoute"):
        raise feature_not_enabled("Modifying logs through the `/logs/*` routes", "logs route", LOGS_LINK)
    targets = _targets(body["target"])
    for handler in _stderr_handlers():
        for old in _targets_of(handler):
            handler.removeFilter(old)
        handler.addFilter(targets)
    _log_stream(request).refresh_root_level()
    return Response(status_code=204)


def _human_line(record: logging.LogRecord) -> str:
    when = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    level = "WARN" if record.levelno == logging.WARNING else record.levelname
    return f"{when} {level:>5} {record.name}: {record.getMessage()}\n"


def _json_line(record: logging.LogRecord) -> str:
    when = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    level = "WARN" if record.levelno == logging.WARNING else record.levelname
    return json.dumps({"timestamp": when, "level": level, "fields": {"message": record.getMessage()},
                       "target": record.name}) + "\n"


class _StreamHandler(logging.Handler):
    """Hands formatted records to the streaming response's queue, from any thread (drops when full)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None], as_json: bool) -> None:
        super().__init__(level=TRACE)
        self.loop = loop
        self.queue = queue
        self.as_json = as_json

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = _json_line(record) if self.as_json else _human_line(record)
            self.loop.call_soon_threadsafe(self._put, line)
        except Exception:  # a closed loop or a bad record must never break the caller's logging
            self.handleError(record)

    def _put(self, line: str) -> None:
        if not self.queue.full():
            self.queue.put_nowait(line)


class _LogStream:
    """The one running `/logs/stream` (Meilisearch allows a single one at a time), and the root
    logger's level: records below it are never created, so it follows the lowest level the stderr
    filter and the stream need, and goes back up when they no longer do."""

    def __init__(self) -> None:
        self.handler: _StreamHandler | None = None
        self.base_level = logging.getLogger().level  # the `--log-level` the server started with

    def refresh_root_level(self) -> None:
        levels = [t.min_level() for h in _stderr_handlers() for t in _targets_of(h)] or [self.base_level]
        if self.handler is not None:
            levels += [t.min_level() for t in _targets_of(self.handler)]
        logging.getLogger().setLevel(max(TRACE, min(levels)))

    def stop(self) -> None:
        handler, self.handler = self.handler, None
        if handler is not None:
            logging.getLogger().removeHandler(handler)
            handler.loop.call_soon_threadsafe(handler.queue.put_nowait, None)
            self.refresh_root_level()


def _log_stream(request: Request) -> _LogStream:
    stream: _LogStream | None = getattr(request.app.state, "log_stream", None)
    if stream is None:
        stream = request.app.state.log_stream = _LogStream()
    return stream


@route("POST", "/logs/stream", action="metrics.get")
async def logs_stream(request: Request) -> Response:
    body = deserialize_object(decode_json_body(await read_body(request), request.headers.get("content-type")),
                              _STREAM_BODY)
    if not runtime_features(request).enabled("logsRoute"):
        raise feature_not_enabled("Modifying logs through the `/logs/*` routes", "logs route", LOGS_LINK)
    stream = _log_stream(request)
    if stream.handler is not None:
        raise MeiliError("bad_request", "The `/logs/stream` route is currently in use by someone else.")
    queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=10_000)
    handler = _StreamHandler(asyncio.get_running_loop(), queue, as_json=body["mode"] != "human")
    targets = _targets(body["target"])
    handler.addFilter(targets)
    stream.handler = handler
    logging.getLogger().addHandler(handler)
    stream.refresh_root_level()

    async def lines() -> AsyncIterator[str]:
        try:
            yield ""  # sends the headers now: the gzip middleware holds them until a first body chunk
            while (line := await queue.get()) is not None:
                yield line
        finally:
            if stream.handler is handler:
                stream.stop()

    return StreamingResponse(lines(), media_type="text/plain")


@route("DELETE", "/logs/stream", action="metrics.get")
async def delete_logs_stream(request: Request) -> Response:
    if not runtime_features(request).enabled("logsRoute"):
        raise feature_not_enabled("Modifying logs through the `/logs/*` routes", "logs route", LOGS_LINK)
    _log_stream(request).stop()
    return Response(status_code=204)


# -------------------------------------------------------------------------------------------------
# POST /indexes/{uid}/fields
# -------------------------------------------------------------------------------------------------

_FILTER_FLAGS: Final = ("displayed", "searchable", "sortable", "distinct", "rankingRule", "filterable")
_FIELDS_FILTER: Final = (
    Field("attributePatterns", "string_array", "invalid_index_fields_filter_attribute_patterns", nullable=True,
          default=None),
    *(Field(name, "boolean", "invalid_index_fields_filter_" + ("ranking_rule" if name == "rankingRule" else name),
            nullable=True, default=None) for name in _FILTER_FLAGS),
)
_FIELDS_BODY: Final = (
    Field("offset", "usize", "invalid_index_offset", default=0),
    Field("limit", "usize", "invalid_index_limit", default=20),
    Field("filter", "object", "invalid_index_fields_filter", nullable=True, default=None, fields=_FIELDS_FILTER),
)


def match_pattern(pattern: str, name: str) -> str:
    """milli's `match_pattern`: "match", "parent" (the field is a parent of the pattern) or "none"."""
    if pattern == "*":
        return "match"
    if len(pattern) > 1 and pattern.startswith("*") and pattern.endswith("*"):
        if pattern[1:-1] in name:
            return "match"
    elif pattern.startswith("*"):
        if name.endswith(pattern[1:]):
            return "match"
    elif pattern.endswith("*"):
        if name.startswith(pattern[:-1]):
            return "match"
    elif pattern == name:
        return "match"
    return "parent" if pattern.startswith(name + ".") else "none"


def _legacy_match(attribute: str, name: str) -> bool:
    """milli's `match_field_legacy` == Match: the field is the attribute or nested under it."""
    return name == attribute or name.startswith(attribute + ".")


def _filter_features(name: str, rules: list[Any]) -> dict[str, bool]:
    """The features of the first filterableAttributes rule matching `name` (all off without one)."""
    for rule in rules:
        if isinstance(rule, str):
            if _legacy_match(rule, name):
                return {"facetSearch": True, "equality": True, "comparison": True}
            continue
        if any(match_pattern(p, name) == "match" for p in rule.get("attributePatterns", [])):
            features = rule.get("features") or {}
            flt = features.get("filter") or {}
            return {"facetSearch": bool(features.get("facetSearch", False)),
                    "equality": bool(flt.get("equality", True)), "comparison": bool(flt.get("comparison", False))}
    return {"facetSearch": False, "equality": False, "comparison": False}


def facet_sort_order(name: str, settings: dict[str, Any]) -> str:
    """The `faceting.sortFacetValuesBy` order of a facet (exact name, then a pattern, then `*`)."""
    orders: dict[str, str] = ((settings.get("faceting") or {}).get("sortFacetValuesBy")) or {}
    if name in orders:
        return orders[name]
    for pattern, order in orders.items():
        if pattern != "*" and match_pattern(pattern, name) == "match":
            return order
    return orders.get("*", "alpha")


def field_descriptor(name: str, settings: dict[str, Any]) -> dict[str, Any]:
    """One entry of `POST /indexes/{uid}/fields` (Meilisearch's `Field`), from the index settings."""
    displayed = settings.get("displayedAttributes") or ["*"]
    searchable = settings.get("searchableAttributes") or ["*"]
    features = _filter_features(name, settings.get("filterableAttributes") or [])
    order = None
    for rule in settings.get("rankingRules") or []:
        field, _, direction = rule.rpartition(":")
        if field == name and direction in ("asc", "desc"):
            order = direction
            break
    ranking: dict[str, Any] = {"enabled": order is not None}
    if order is not None:
        ranking["order"] = order
    locales: list[str] = []
    for rule in settings.get("localizedAttributes") or []:
        if any(match_pattern(p, name) == "match" for p in rule.get("attributePatterns", [])):
            locales = list(rule.get("locales", []))
            break
    distinct = settings.get("distinctAttribute")
    return {
        "name": name,
        "displayed": {"enabled": displayed == ["*"] or any(_legacy_match(d, name) for d in displayed)},
        "searchable": {"enabled": searchable == ["*"] or any(_legacy_match(s, name) for s in searchable)},
        "sortable": {"enabled": any(_legacy_match(s, name) for s in settings.get("sortableAttributes") or [])},
        "distinct": {"enabled": distinct is not None and _legacy_match(distinct, name)},
        "rankingRule": ranking,
        "filterable": {"enabled": any(features.values()), "sortBy": facet_sort_order(name, settings), **features},
        "localized": {"locales": locales},
    }


def _keep(field: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    if flt is None:
        return True
    patterns = flt.get("attributePatterns")
    if patterns is not None and not any(match_pattern(p, field["name"]) == "match" for p in patterns):
        return False
    return all(flt.get(flag) is None or flt[flag] == field[flag]["enabled"] for flag in _FILTER_FLAGS)


def _fields_page(reader: IndexReader, body: dict[str, Any]) -> dict[str, Any]:
    settings = complete_settings(reader.settings())
    fields = [d for d in (field_descriptor(n, settings) for n in known_fields(reader)) if _keep(d, body["filter"])]
    offset, limit = body["offset"], body["limit"]
    return {"results": fields[offset : offset + limit], "offset": offset, "limit": limit, "total": len(fields)}


@route("POST", "/indexes/{index_uid}/fields", action="fields.post")
async def post_index_fields(request: Request) -> Response:
    body = deserialize_object(decode_json_body(await read_body(request), request.headers.get("content-type")),
                              _FIELDS_BODY)
    uid = validate_index_uid(request.path_params["index_uid"])
    scheduler = state(request).scheduler
    return JSONResponse(await run_in_threadpool(read_index, scheduler, uid, lambda r: _fields_page(r, body)))


# -------------------------------------------------------------------------------------------------
# POST /indexes/{uid}/compact
# -------------------------------------------------------------------------------------------------


@route("POST", "/indexes/{index_uid}/compact", action="indexes.compact")
async def compact_index(request: Request) -> Response:
    """202 `indexCompaction`; the scheduler copies the index's LMDB file compacted (a missing index
    makes the task fail with `index_not_found`, as in Meilisearch)."""
    uid = validate_index_uid(request.path_params["index_uid"])
    meta = custom_metadata(request)
    return await state(request).enqueue("indexCompaction", uid, details={}, kind={}, custom_metadata=meta)

