"""Task and batch records <-> the lines of a dump v6 (`tasks/queue.jsonl`, `batches/queue.jsonl`).

A TaskDump line is Meilisearch's `dump::TaskDump`:

    {"uid", "batchUid", "indexUid", "status", "type": <KindDump>, "canceledBy"?, "details"?: <Details>,
     "error"?, "enqueuedAt", "startedAt"?, "finishedAt"?, "network"?, "customMetadata"?}

with three serde conventions mixed, exactly as Meilisearch writes them:

- `KindDump` is externally tagged with camelCase variant names and snake_case fields:
  `{"documentImport": {"primary_key", "method": "ReplaceDocuments", "documents_count",
  "allow_index_creation"}}`, unit variants as bare strings (`"indexDeletion"`, `"documentClear"`);
- `Details` is externally tagged with PascalCase variant names and snake_case fields:
  `{"DocumentAdditionOrUpdate": {"received_documents": 1, "indexed_documents": 1}}`;
- task sets (`taskCancelation.tasks`) are roaring bitmaps serialized by serde as a byte array: the
  portable roaring format, which is also what pyroaring's `BitMap.serialize()` produces.

Decisions:
- hanzo-engine keeps `batchUid` in its dumps (Meilisearch blanks it since v1.12.5 because its batches
  were not dumped then); batches are dumped too, so the pair stays consistent, and Meilisearch reads it.
- `skipCreation` of a document task has no KindDump field (Meilisearch drops its own equivalent);
  a re-enqueued task from a dump creates missing documents.
- Settings details are kept as stored (embedder API keys already masked); details read from a
  Meilisearch dump get their secrets masked, as its task views show them.
"""

from __future__ import annotations

import re
from typing import Any

from pyroaring import BitMap

from hanzo_engine.apitypes.settings import mask_api_key
from hanzo_engine.apitypes.tasks import format_timestamp, parse_timestamp

from .store import Batch, Task

_METHODS = {"replace": "ReplaceDocuments", "update": "UpdateDocuments"}
_METHODS_BACK = {v: k for k, v in _METHODS.items()}


class RecordError(ValueError):
    """A dump line that cannot be mapped onto a task or batch record."""


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _pascal(name: str) -> str:
    return name[:1].upper() + name[1:]


def _ts(ns: int | None) -> str | None:
    return None if ns is None else format_timestamp(ns)


def _parse_ts(text: Any) -> int | None:
    if text is None:
        return None
    try:
        return parse_timestamp(str(text))
    except ValueError:
        raise RecordError(f"`{text}` is not an RFC 3339 date") from None


def _bitmap_bytes(uids: Any) -> list[int]:
    return list(BitMap(int(u) for u in uids).serialize())


def _bitmap_uids(value: Any) -> list[int]:
    if isinstance(value, list) and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        try:
            return list(BitMap.deserialize(bytes(value)))
        except Exception:  # not a serialized bitmap: a plain list of uids, as older hand-made dumps
            return [int(b) for b in value]
    raise RecordError("`tasks` is not a serialized roaring bitmap")


def _version_tuple(text: Any) -> list[int]:
    parts = re.findall(r"\d+", str(text or ""))
    return [int(p) for p in [*parts, "0", "0", "0"][:3]]


# -- task -> TaskDump ------------------------------------------------------------------------------


def kind_dump(task: Task) -> Any:
    """The `KindDump` of a task record."""
    type_, kind, details = task["type"], task.get("kind") or {}, task.get("details") or {}
    if type_ == "documentAdditionOrUpdate":
        return {
            "documentImport": {
                "primary_key": kind.get("primaryKey"),
                "method": _METHODS.get(kind.get("method", "replace"), "ReplaceDocuments"),
                "documents_count": int(kind.get("documentsCount") or details.get("receivedDocuments") or 0),
                "allow_index_creation": bool(kind.get("allowIndexCreation", True)),
            }
        }
    if type_ == "documentDeletion":
        op = kind.get("op")
        if op == "clear":
            return "documentClear"
        if op == "filter":
            return {"documentDeletionByFilter": {"filter": kind.get("filter")}}
        return {"documentDeletion": {"documents_ids": list(kind.get("ids") or [])}}
    if type_ == "documentEdition":
        return {
            "documentEdition": {
                "filter": kind.get("filter"),
                "context": kind.get("context"),
                "function": kind.get("function", ""),
            }
        }
    if type_ == "settingsUpdate":
        return {
            "settings": {
                "settings": kind.get("settings") or {},
                "is_deletion": bool(kind.get("isDeletion")),
                "allow_index_creation": bool(kind.get("allowIndexCreation", True)),
            }
        }
    if type_ == "indexDeletion":
        return "indexDeletion"
    if type_ == "indexCreation":
        return {"indexCreation": {"primary_key": kind.get("primaryKey")}}
    if type_ == "indexUpdate":
        return {"indexUpdate": {"primary_key": kind.get("primaryKey"), "uid": kind.get("newUid")}}
    if type_ == "indexSwap":
        return {"indexSwap": {"swaps": kind.get("swaps") or []}}
    if type_ in ("taskCancelation", "taskDeletion"):
        tag = "taskCancelation" if type_ == "taskCancelation" else "tasksDeletion"
        return {
            tag: {
                "query": details.get("originalFilter") or "",
                "tasks": _bitmap_bytes(kind.get("tasks") or []),
            }
        }
    if type_ == "dumpCreation":
        return {
            "dumpCreation": {"keys": list(kind.get("keys") or []), "instance_uid": kind.get("instanceUid")}
        }
    if type_ == "snapshotCreation":
        return "snapshotCreation"
    if type_ == "upgradeDatabase":
        return {"upgradeDatabase": {"from": _version_tuple(details.get("upgradeFrom"))}}
    if type_ == "indexCompaction":
        return {"indexCompaction": {"index_uid": task.get("indexUid")}}
    # export, network and dynamic-search-rule tasks: their kind is kept as given
    return {type_: {_snake(k): v for k, v in kind.items()}} if kind else type_


def details_dump(task: Task) -> dict[str, Any] | None:
    """The `Details` enum value of a task record's details (None when it has none)."""
    details = task.get("details")
    if details is None:
        return None
    type_, kind = task["type"], task.get("kind") or {}
    d = details.get
    if type_ == "documentAdditionOrUpdate":
        return {
            "DocumentAdditionOrUpdate": {
                "received_documents": d("receivedDocuments", 0),
                "indexed_documents": d("indexedDocuments"),
            }
        }
    if type_ == "settingsUpdate":
        return {"SettingsUpdate": {"settings": details}}
    if type_ in ("indexCreation", "indexUpdate"):
        return {
            "IndexInfo": {
                "primary_key": d("primaryKey"),
                "new_index_uid": d("newIndexUid"),
                "old_index_uid": d("oldIndexUid"),
            }
        }
    if type_ == "indexDeletion" or (type_ == "documentDeletion" and kind.get("op") == "clear"):
        return {"ClearAll": {"deleted_documents": d("deletedDocuments")}}
    if type_ == "documentDeletion":
        if "providedIds" in details:
            return {
                "DocumentDeletion": {
                    "provided_ids": d("providedIds", 0),
                    "deleted_documents": d("deletedDocuments"),
                }
            }
        return {
            "DocumentDeletionByFilter": {
                "original_filter": d("originalFilter") or "",
                "deleted_documents": d("deletedDocuments"),
            }
        }
    if type_ == "documentEdition":
        return {
            "DocumentEdition": {
                "deleted_documents": d("deletedDocuments"),
                "edited_documents": d("editedDocuments"),
                "original_filter": d("originalFilter"),
                "context": d("context"),
                "function": d("function", ""),
            }
        }
    if type_ == "taskCancelation":
        return {
            "TaskCancelation": {
                "matched_tasks": d("matchedTasks", 0),
                "canceled_tasks": d("canceledTasks"),
                "original_filter": d("originalFilter") or "",
            }
        }
    if type_ == "taskDeletion":
        return {
            "TaskDeletion": {
                "matched_tasks": d("matchedTasks", 0),
                "deleted_tasks": d("deletedTasks"),
                "original_filter": d("originalFilter") or "",
            }
        }
    if type_ == "dumpCreation":
        return {"Dump": {"dump_uid": d("dumpUid")}}
    if type_ == "indexSwap":
        return {"IndexSwap": {"swaps": d("swaps") or []}}
    if type_ == "upgradeDatabase":
        return {
            "UpgradeDatabase": {
                "from": _version_tuple(d("upgradeFrom")),
                "to": _version_tuple(d("upgradeTo")),
            }
        }
    return {_pascal(type_): {_snake(k): v for k, v in details.items()}}


def task_line(task: Task) -> dict[str, Any]:
    """The TaskDump line of a task record (field order as Meilisearch serializes it)."""
    line: dict[str, Any] = {
        "uid": task["uid"],
        "batchUid": task.get("batchUid"),
        "indexUid": task.get("indexUid"),
        "status": task["status"],
        "type": kind_dump(task),
    }
    if task.get("canceledBy") is not None:
        line["canceledBy"] = task["canceledBy"]
    details = details_dump(task)
    if details is not None:
        line["details"] = details
    if task.get("error") is not None:
        line["error"] = task["error"]
    line["enqueuedAt"] = format_timestamp(task["enqueuedAt"])
    if task.get("startedAt") is not None:
        line["startedAt"] = format_timestamp(task["startedAt"])
    if task.get("finishedAt") is not None:
        line["finishedAt"] = format_timestamp(task["finishedAt"])
    if task.get("network") is not None:
        line["network"] = task["network"]
    if task.get("customMetadata") is not None:
        line["customMetadata"] = task["customMetadata"]
    return line


# -- TaskDump -> task ------------------------------------------------------------------------------


def _tagged(value: Any) -> tuple[str, dict[str, Any]]:
    """(tag, fields) of an externally tagged enum value; a bare string is a unit variant."""
    if isinstance(value, str):
        return value, {}
    if isinstance(value, dict) and len(value) == 1:
        tag, fields = next(iter(value.items()))
        return tag, fields if isinstance(fields, dict) else {}
    raise RecordError(f"`{value!r}` is not an enum value")


def _mask_secrets(settings: dict[str, Any]) -> dict[str, Any]:
    """Mask embedder API keys that are still in clear (Meilisearch stores them so in task details)."""
    embedders = settings.get("embedders")
    if not isinstance(embedders, dict):
        return settings
    masked = {}
    for name, config in embedders.items():
        if (
            isinstance(config, dict)
            and isinstance(config.get("apiKey"), str)
            and not config["apiKey"].endswith("...")
        ):
            config = dict(config, apiKey=mask_api_key(config["apiKey"]))
        masked[name] = config
    return dict(settings, embedders=masked)


def _details_record(tag: str, f: dict[str, Any]) -> dict[str, Any]:
    if tag == "DocumentAdditionOrUpdate":
        return {
            "receivedDocuments": f.get("received_documents", 0),
            "indexedDocuments": f.get("indexed_documents"),
        }
    if tag == "SettingsUpdate":
        return _mask_secrets(dict(f.get("settings") or {}))
    if tag == "IndexInfo":
        out: dict[str, Any] = {"primaryKey": f.get("primary_key")}
        if f.get("old_index_uid") is not None:
            out["oldIndexUid"] = f["old_index_uid"]
        if f.get("new_index_uid") is not None:
            out["newIndexUid"] = f["new_index_uid"]
        return out
    if tag == "DocumentDeletion":
        return {
            "providedIds": f.get("provided_ids", 0),
            "deletedDocuments": f.get("deleted_documents"),
            "originalFilter": None,
        }
    if tag == "DocumentDeletionByFilter":
        return {"deletedDocuments": f.get("deleted_documents"), "originalFilter": f.get("original_filter")}
    if tag == "DocumentEdition":
        return {
            "editedDocuments": f.get("edited_documents"),
            "deletedDocuments": f.get("deleted_documents"),
            "originalFilter": f.get("original_filter"),
            "context": f.get("context"),
            "function": f.get("function"),
        }
    if tag == "ClearAll":
        return {"deletedDocuments": f.get("deleted_documents")}
    if tag == "TaskCancelation":
        return {
            "matchedTasks": f.get("matched_tasks", 0),
            "canceledTasks": f.get("canceled_tasks"),
            "originalFilter": f.get("original_filter"),
        }
    if tag == "TaskDeletion":
        return {
            "matchedTasks": f.get("matched_tasks", 0),
            "deletedTasks": f.get("deleted_tasks"),
            "originalFilter": f.get("original_filter"),
        }
    if tag == "Dump":
        return {"dumpUid": f.get("dump_uid")}
    if tag == "IndexSwap":
        return {"swaps": f.get("swaps") or []}
    if tag == "UpgradeDatabase":
        return {
            "upgradeFrom": "v" + ".".join(map(str, f.get("from") or [])),
            "upgradeTo": "v" + ".".join(map(str, f.get("to") or [])),
        }
    return {_camel(k): v for k, v in f.items()}


def _kind_record(tag: str, f: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(task type, kind record) of a KindDump. Document payloads are attached by the importer."""
    if tag == "documentImport":
        method = _METHODS_BACK.get(f.get("method", "ReplaceDocuments"), "replace")
        return "documentAdditionOrUpdate", {
            "method": method,
            "primaryKey": f.get("primary_key"),
            "contentFile": None,
            "contentSize": 0,
            "documentsCount": int(f.get("documents_count") or 0),
            "allowIndexCreation": bool(f.get("allow_index_creation", True)),
            "skipCreation": False,
        }
    if tag == "documentDeletion":
        return "documentDeletion", {"op": "ids", "ids": [str(i) for i in f.get("documents_ids") or []]}
    if tag == "documentClear":
        return "documentDeletion", {"op": "clear"}
    if tag == "documentDeletionByFilter":
        return "documentDeletion", {"op": "filter", "filter": f.get("filter")}
    if tag == "documentEdition":
        return "documentEdition", {
            "filter": f.get("filter"),
            "context": f.get("context"),
            "function": f.get("function"),
        }
    if tag == "settings":
        return "settingsUpdate", {
            "settings": f.get("settings") or {},
            "isDeletion": bool(f.get("is_deletion")),
            "allowIndexCreation": bool(f.get("allow_index_creation", True)),
        }
    if tag == "indexDeletion":
        return "indexDeletion", {}
    if tag == "indexCreation":
        return "indexCreation", {"primaryKey": f.get("primary_key")}
    if tag == "indexUpdate":
        kind: dict[str, Any] = {}
        if f.get("primary_key") is not None:
            kind["primaryKey"] = f["primary_key"]
        if f.get("uid") is not None:
            kind["newUid"] = f["uid"]
        return "indexUpdate", kind
    if tag == "indexSwap":
        return "indexSwap", {"swaps": f.get("swaps") or []}
    if tag in ("taskCancelation", "tasksDeletion"):
        type_ = "taskCancelation" if tag == "taskCancelation" else "taskDeletion"
        return type_, {"tasks": _bitmap_uids(f.get("tasks", []))}
    if tag == "dumpCreation":
        return "dumpCreation", {"keys": list(f.get("keys") or []), "instanceUid": f.get("instance_uid")}
    if tag == "snapshotCreation":
        return "snapshotCreation", {}
    if tag == "upgradeDatabase":
        return "upgradeDatabase", {}
    if tag == "indexCompaction":
        return "indexCompaction", {}
    return tag, {_camel(k): v for k, v in f.items()}


def task_record(line: dict[str, Any]) -> Task:
    """The task record of a TaskDump line (without payload: `kind.contentFile` is None)."""
    try:
        tag, fields = _tagged(line["type"])
        details_value = line.get("details")
        details = None
        if details_value is not None:
            details = _details_record(*_tagged(details_value))
        type_, kind = _kind_record(tag, fields)
        task: Task = {
            "uid": int(line["uid"]),
            "batchUid": line.get("batchUid"),
            "indexUid": line.get("indexUid"),
            "status": str(line["status"]),
            "type": type_,
            "canceledBy": line.get("canceledBy"),
            "details": details,
            "error": line.get("error"),
            "enqueuedAt": _parse_ts(line["enqueuedAt"]),
            "startedAt": _parse_ts(line.get("startedAt")),
            "finishedAt": _parse_ts(line.get("finishedAt")),
            "kind": kind,
        }
    except (KeyError, TypeError) as exc:
        raise RecordError(f"task line is missing {exc}") from None
    if isinstance(line.get("network"), dict):
        task["network"] = line["network"]
    if line.get("customMetadata") is not None:
        task["customMetadata"] = line["customMetadata"]
    return task


# -- batches ---------------------------------------------------------------------------------------


def batch_line(batch: Batch, enqueued_at: tuple[int, int] | None) -> dict[str, Any]:
    """A `batches/queue.jsonl` line (`meilisearch_types::batches::Batch`) of a batch record.

    `enqueued_at` is (earliest, oldest) enqueue time of the batch's tasks, when any remain."""
    line: dict[str, Any] = {
        "uid": batch["uid"],
        "details": batch.get("details") or {},
        "stats": batch.get("stats") or {},
        "startedAt": format_timestamp(batch["startedAt"]),
        "finishedAt": _ts(batch.get("finishedAt")),
    }
    if enqueued_at is not None:
        line["enqueuedAt"] = {
            "earliest": format_timestamp(enqueued_at[0]),
            "oldest": format_timestamp(enqueued_at[1]),
        }
    line["stopReason"] = batch.get("batchStrategy", "")
    return line


def batch_record(line: dict[str, Any]) -> Batch:
    try:
        return {
            "uid": int(line["uid"]),
            "progress": None,
            "details": line.get("details") or {},
            "stats": line.get("stats") or {},
            "startedAt": _parse_ts(line["startedAt"]),
            "finishedAt": _parse_ts(line.get("finishedAt")),
            "batchStrategy": line.get("stopReason") or "",
        }
    except (KeyError, TypeError) as exc:
        raise RecordError(f"batch line is missing {exc}") from None
