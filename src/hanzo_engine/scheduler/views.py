"""Task and batch records -> the JSON Meilisearch serves (field order included)."""

from __future__ import annotations

from typing import Any

from hanzo_engine.apitypes.tasks import TASK_STATUSES, TASK_TYPES, format_duration, format_timestamp

from .store import Batch, Task

# DetailsView field order in Meilisearch; details are emitted in this order whatever the task type.
DETAILS_ORDER = (
    "receivedDocuments",
    "indexedDocuments",
    "editedDocuments",
    "primaryKey",
    "oldIndexUid",
    "newIndexUid",
    "providedIds",
    "deletedDocuments",
    "matchedTasks",
    "canceledTasks",
    "deletedTasks",
    "originalFilter",
    "dumpUid",
    "context",
    "function",
    "swaps",
    "upgradeFrom",
    "upgradeTo",
)
# Batch stats maps are Rust `BTreeMap`s: statuses and kinds in enum declaration order, uids sorted.
_STATUS_RANK = {name: rank for rank, name in enumerate(TASK_STATUSES)}
_TYPE_RANK = {name: rank for rank, name in enumerate(TASK_TYPES)}
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
        # an edition by function keeps its `deletedDocuments` (`Details::to_failed` zeroes only `editedDocuments`)
        if key in out and not (key == "deletedDocuments" and "function" in out):
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
    if task.get("network") is not None:
        view["network"] = task["network"]
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


# DetailsView counters that add up across the tasks of a batch.
SUMMED_DETAILS = frozenset(
    {
        "receivedDocuments",
        "indexedDocuments",
        "editedDocuments",
        "providedIds",
        "deletedDocuments",
        "matchedTasks",
        "canceledTasks",
        "deletedTasks",
    }
)


def accumulate_details(into: dict[str, Any], other: dict[str, Any] | None) -> None:
    """Merge a task's details into a batch's, as Meilisearch's `DetailsView::accumulate`.

    Counters add up, `originalFilter`s are joined with `&`, `swaps` concatenate, `upgradeTo` keeps the
    latest and the other DetailsView fields the first non-null value. Any other key is a settings
    field: `Settings::merge` keeps the latest value submitted (a reset `null` included).
    """
    if not other:
        return
    for key, value in other.items():
        if key not in DETAILS_ORDER:
            into[key] = value
            continue
        current = into.get(key)
        if current is None:
            into[key] = value
        elif value is None:
            continue
        elif key in SUMMED_DETAILS:
            into[key] = current + value
        elif key == "originalFilter":
            into[key] = f"{current}&{value}"
        elif key == "swaps":
            into[key] = [*current, *value]
        elif key == "upgradeTo":
            into[key] = value


def _by_rank(counts: dict[str, int], rank: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])))


def batch_stats_view(stats: dict[str, Any] | None) -> dict[str, Any]:
    """`BatchStats` as Meilisearch serializes it: fixed key order, each map in `BTreeMap` order."""
    stats = stats or {}
    view: dict[str, Any] = {
        "totalNbTasks": stats.get("totalNbTasks", 0),
        "status": _by_rank(stats.get("status") or {}, _STATUS_RANK),
        "types": _by_rank(stats.get("types") or {}, _TYPE_RANK),
        "indexUids": dict(sorted((stats.get("indexUids") or {}).items())),
    }
    # optional extras (progressTrace, writeChannelCongestion, ...) keep their place after the maps
    view.update({k: v for k, v in stats.items() if k not in view})
    return view


def batch_details_view(details: dict[str, Any] | None, *, finished: bool) -> dict[str, Any]:
    """A batch's accumulated details.

    Meilisearch stores a finished batch as JSON and reads it back: an `Option<Option<_>>` field that
    was `null` comes back absent, so a finished batch omits the null DetailsView fields (an index
    creation without primary key shows `{}`). Settings keys are flattened `Setting`s whose `null`
    (reset) survives the round trip. A processing batch is served from memory and keeps its nulls.
    """
    view = ordered_details(details or {})
    if finished:
        view = {k: v for k, v in view.items() if v is not None or k not in DETAILS_ORDER}
    return view


def batch_view(batch: Batch) -> dict[str, Any]:
    finished = batch.get("finishedAt") is not None
    return {
        "uid": batch["uid"],
        "progress": batch.get("progress"),
        "details": batch_details_view(batch.get("details"), finished=finished),
        "stats": batch_stats_view(batch.get("stats")),
        "duration": _duration(batch.get("startedAt"), batch.get("finishedAt")),
        "startedAt": _ts(batch.get("startedAt")),
        "finishedAt": _ts(batch.get("finishedAt")),
        "batchStrategy": batch.get("batchStrategy", ""),
    }
