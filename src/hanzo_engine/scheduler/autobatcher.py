"""Choose the next batch among enqueued tasks. A pure function of the enqueued tasks (no I/O).

Priority, as Meilisearch's scheduler:
1. the newest enqueued `taskCancelation`, alone (cancelations must overtake the work they cancel);
2. every enqueued `taskDeletion` together, then every `snapshotCreation` together;
3. a `dumpCreation` alone;
4. otherwise the oldest enqueued index task, with the consecutive compatible tasks of the same index:
   document additions/updates and deletions batch together, settings updates batch together (not with
   documents), an index deletion ends the batch it joins; index creation, update, edition by function and swaps
   run alone. Tasks of other indexes in between are independent and skipped
   over, but a swap naming the index is a barrier: nothing after it may overtake it.

Invariants: a batch never holds tasks of two indexes (swaps aside), and the tasks of one index always
run in uid order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BATCHABLE = frozenset(
    {"documentAdditionOrUpdate", "documentDeletion", "settingsUpdate", "dsrUpdate", "dsrClear"}
)  # (dynamic search rules: only ever on `.meili_dsr`)
# (`documentEdition`: Meilisearch never batches an edition by function with another task)
ALONE_INDEX_TASKS = frozenset(
    {"indexCreation", "indexUpdate", "indexDeletion", "indexCompaction", "documentEdition"}
)


@dataclass(frozen=True)
class BatchChoice:
    task_uids: list[int]
    index_uid: str | None
    strategy: str


def _touches(task: dict[str, Any], index_uid: str) -> bool:
    if task.get("indexUid") == index_uid:
        return True
    if task["type"] == "indexSwap":
        return any(index_uid in swap["indexes"] for swap in task["kind"]["swaps"])
    return False


def _alone(task: dict[str, Any]) -> str:
    return (
        f"created batch containing only task with id {task['uid']} of type `{task['type']}` that cannot be "
        "batched with any other task."
    )


def _family(task: dict[str, Any]) -> str:
    return "settings" if task["type"] == "settingsUpdate" else "documents"


def autobatch(
    enqueued: Sequence[dict[str, Any]], *, max_tasks: int | None = None, max_bytes: int | None = None
) -> BatchChoice | None:
    """Pick the next batch from `enqueued` (tasks in ascending uid order).

    The `strategy` strings are Meilisearch's `BatchStopReason` texts.
    """
    if not enqueued:
        return None
    cancelations = [t for t in enqueued if t["type"] == "taskCancelation"]
    if cancelations:
        # The newest cancelation first, as Meilisearch (`to_cancel.max()`).
        return BatchChoice([cancelations[-1]["uid"]], None, _alone(cancelations[-1]))
    for kind in ("taskDeletion", "snapshotCreation"):
        uids = [t["uid"] for t in enqueued if t["type"] == kind]
        if uids:
            return BatchChoice(
                uids,
                None,
                f"stopped after the last task of type `{kind}` because they cannot "
                "be batched with tasks of any other type.",
            )
    for kind in ("dumpCreation", "upgradeDatabase"):
        for t in enqueued:
            if t["type"] == kind:
                return BatchChoice([t["uid"]], None, _alone(t))

    first = enqueued[0]
    if first["type"] == "indexSwap" or first.get("indexUid") is None:
        return BatchChoice([first["uid"]], None, _alone(first))
    index_uid = first["indexUid"]
    if first["type"] in ALONE_INDEX_TASKS:
        return BatchChoice([first["uid"]], index_uid, _alone(first))

    chosen = [first["uid"]]
    size = first["kind"].get("contentSize", 0)
    family = _family(first)
    strategy = ""
    for t in enqueued[1:]:
        if not _touches(t, index_uid):
            continue
        if t["type"] == "indexDeletion":
            # Work before a deletion is pointless but must still be reported: it joins the deletion.
            chosen.append(t["uid"])
            strategy = f"stopped after task with id {t['uid']} because it deletes the index"
            break
        if t["type"] not in BATCHABLE:
            strategy = f"batched all enqueued tasks for index `{index_uid}`"
            break
        if _family(t) != family:
            strategy = (
                f"stopped before task with id {t['uid']} because it is a settings change which cannot be "
                "batched with document operations"
                if family == "documents"
                else f"stopped before task with id {t['uid']} because it is a document operation which cannot be "
                "batched with settings changes"
            )
            break
        if max_tasks is not None and len(chosen) >= max_tasks:
            strategy = f"batched up to configured batch limit of {max_tasks} tasks"
            break
        t_size = t["kind"].get("contentSize", 0)
        if max_bytes is not None and size + t_size > max_bytes:
            strategy = f"batched up to configured batch size limit of {max_bytes}B with a total of {size}B"
            break
        size += t_size
        chosen.append(t["uid"])
    if not strategy:
        # Every enqueued task of the index was taken; Meilisearch names the index when other work remains.
        strategy = (
            "batched all enqueued tasks"
            if len(chosen) == len(enqueued)
            else f"batched all enqueued tasks for index `{index_uid}`"
        )
    return BatchChoice(chosen, index_uid, strategy)
