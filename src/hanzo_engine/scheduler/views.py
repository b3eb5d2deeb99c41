"""Task and batch records -> the JSON Meilisearch serves (field order included)."""

from __future__ import annotations

from typing import Any

from hanzo_engine.apitypes.tasks import format_duration, format_timestamp

from .store import Batch, Task

# DetailsView field order in Meilisearch; details are emitted in this order whatever the task type.
DETAILS_ORDER = (
    "receivedDocuments", "indexedDocuments", "editedDocuments", "primaryKey", "oldIndexUid", "newIndexUid",
    "providedIds", "deletedDocuments", "matchedTasks", "canceledTasks", "deletedTasks", "originalFilter",
    "dumpUid", "context", "function", "swaps", "upgradeFrom", "upgradeTo",
)
# Counters that a failed or canceled task reports as 0 (Meilisearch's `Details::to_failed`).
FAILED_COUNTERS = ("indexedDocuments", "editedDocuments", "deletedDocuments", "canceledTasks", "deletedTasks")


def _ts(ns: int | None) -> str | None:
    return None if ns is None else format_timestamp(ns)


def _duration(started: int | None, finished: int | None) -> str | None:
    if started is None or finished is None:
        return None
    return format_duration(finished - started)


def ordered_details(details: dict[str, Any]) -> dict[str, Any]:
    known = {k: details[k] for k in DETAILS_ORDER if k in details}
    # Settings details (issue: settings) keep the order they were submitted in, after the known keys.
    extra = {k: v for k, v in details.items() if k not in known}
    return {**known, **extra}


def failed_details(details: dict[str, Any] | None) -> dict[str, Any] | None:
    if details is None:
        return None
    out = dict(details)
    for key in FAILED_COUNTERS:
        if key in out:
            out[key] = 0
    return out


def task_view(task: Task) -> dict[str, Any]:
    view: dict[str, Any] = {
        "uid": task["uid"],
        "batchUid": task.get("batchUid"),
        "indexUid": task.get("indexUid"),
        "status": task["status"],
        "type": task["type"],
        "canceledBy": task.get("canceledBy"),
    }
    if task.get("details") is not None:
        view["details"] = ordered_details(task["details"])
    view["error"] = task.get("error")
    view["duration"] = _duration(task.get("startedAt"), task.get("finishedAt"))
    view["enqueuedAt"] = format_timestamp(task["enqueuedAt"])
    view["startedAt"] = _ts(task.get("startedAt"))
    view["finishedAt"] = _ts(task.get("finishedAt"))
    if task.get("customMetadata") is not None:
        view["customMetadata"] = task["customMetadata"]
    return view


def summarized_task(task: Task) -> dict[str, Any]:
    view = {
        "taskUid": task["uid"],
        "indexUid": task.get("indexUid"),
        "status": task["status"],
        "type": task["type"],
        "enqueuedAt": format_timestamp(task["enqueuedAt"]),
    }
    if task.get("customMetadata") is not None:
        view["customMetadata"] = task["customMetadata"]
    return view


def accumulate_details(into: dict[str, Any], other: dict[str, Any] | None) -> None:
    """Merge a task's details into a batch's, as Meilisearch's `DetailsView::accumulate`."""
    if not other:
        return
    for key, value in other.items():
        if key not in into or into[key] is None:
            into[key] = value
        elif isinstance(value, int) and isinstance(into[key], int) and not isinstance(value, bool):
            into[key] += value
        elif key == "originalFilter" and value is not None:
            into[key] = f"{into[key]}&{value}"
        elif key == "swaps":
            into[key] = [*into[key], *value]


def batch_view(batch: Batch) -> dict[str, Any]:
    return {
        "uid": batch["uid"],
        "progress": batch.get("progress"),
        "details": ordered_details(batch.get("details") or {}),
        "stats": batch.get("stats") or {"totalNbTasks": 0, "status": {}, "types": {}, "indexUids": {}},
        "duration": _duration(batch.get("startedAt"), batch.get("finishedAt")),
        "startedAt": _ts(batch.get("startedAt")),
        "finishedAt": _ts(batch.get("finishedAt")),
        "batchStrategy": batch.get("batchStrategy", ""),
    }
