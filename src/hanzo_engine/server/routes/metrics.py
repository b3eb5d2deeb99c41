"""`GET /metrics`: Prometheus metrics of the instance (HTTP, storage, tasks, search queue, webhooks)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.tasks import TASK_STATUSES, TASK_TYPES
from hanzo_engine.engine.storage.environment import file_bytes
from hanzo_engine.scheduler.webhooks import metrics as webhook_metrics

from ..features import feature_not_enabled, runtime_features
from ..metrics import LATENCY_BUCKETS, instance_http_metrics, refresh_worker_metrics
from ..search_queue import search_queue

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
            total += file_bytes(os.path.join(root, name))  # an index's data file is sparse
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
        "db_size": _dir_size(st.options.db_path),
        "used": used,
        "indexes": indexes,
        "statuses": {s: len(store.bitmap(f"status:{s}")) for s in TASK_STATUSES},
        "types": {t: len(store.bitmap(f"type:{t}")) for t in TASK_TYPES},
        "task_indexes": {uid: len(store.bitmap(f"index:{uid}")) for uid in indexes},
        "last_update": scheduler.last_update(),
    }


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
            out.sample(
                "meilisearch_http_response_time_seconds_bucket",
                observed,
                method=method,
                path=path,
                le=_number(bound),
            )
        out.sample(
            "meilisearch_http_response_time_seconds_bucket", hist[-1], method=method, path=path, le="+Inf"
        )
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
    for kind, values in (
        ("statuses", data["statuses"]),
        ("types", data["types"]),
        ("indexes", data["task_indexes"]),
    ):
        for value, count in values.items():
            out.sample("meilisearch_nb_tasks", count, kind=kind, value=value)
    out.family("meilisearch_last_update", "gauge", "Meilisearch Last Update")
    out.sample("meilisearch_last_update", (data["last_update"] or 0) // 1_000_000_000)
    queue = search_queue(request)
    out.family("meilisearch_search_queue_size", "gauge", "Meilisearch Search Queue Size")
    out.sample("meilisearch_search_queue_size", queue.capacity)
    out.family("meilisearch_searches_running", "gauge", "Meilisearch Searches Running")
    out.sample("meilisearch_searches_running", queue.running)
    out.family(
        "meilisearch_searches_waiting_to_be_processed", "gauge", "Meilisearch Searches Being Processed"
    )
    out.sample("meilisearch_searches_waiting_to_be_processed", queue.instance_waiting())
    scheduler = request.app.state.hanzo.scheduler
    for name, kind, help_text, value in await run_in_threadpool(
        webhook_metrics, scheduler.store, scheduler.webhooks
    ):
        out.family(name, kind, help_text)
        out.sample(name, value)
    return Response(out.text(), media_type="text/plain; version=0.0.4")
