"""Choose the next batch among enqueued tasks. A pure function of the enqueued tasks (no I/O).

Priority, as Meilisearch's scheduler:
1. every enqueued `taskCancelation` together (they must overtake the work they cancel);
2. every enqueued `taskDeletion` together;
3. a `snapshotCreation`, then a `dumpCreation`, each alone;
4. otherwise the oldest enqueued index task, with the consecutive compatible tasks of the same index:
   document additions/updates, document deletions and settings updates batch together; index creation,
   update, deletion and swaps run alone. Tasks of other indexes in between are independent and skipped
   over, but a swap naming the index is a barrier: nothing after it may overtake it.

Invariants: a batch never holds tasks of two indexes (swaps aside), and the tasks of one index always
run in uid order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BATCHABLE = frozenset({"documentAdditionOrUpdate", "documentDeletion", "settingsUpdate"})
ALONE_INDEX_TASKS = frozenset({"indexCreation", "indexUpdate", "indexDeletion", "indexCompaction"})


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


def autobatch(
    enqueued: Sequence[dict[str, Any]], *, max_tasks: int | None = None, max_bytes: int | None = None
) -> BatchChoice | None:
    """Pick the next batch from `enqueued` (tasks in ascending uid order)."""
    if not enqueued:
        return None
    for kind in ("taskCancelation", "taskDeletion"):
        uids = [t["uid"] for t in enqueued if t["type"] == kind]
        if uids:
            return BatchChoice(uids, None, f"batched all enqueued tasks of type `{kind}`")
    for kind in ("snapshotCreation", "dumpCreation", "upgradeDatabase"):
        for t in enqueued:
            if t["type"] == kind:
                return BatchChoice([t["uid"]], None, f"a batch of type `{kind}` always runs alone")

    first = enqueued[0]
    if first["type"] == "indexSwap" or first.get("indexUid") is None:
        return BatchChoice([first["uid"]], None, f"a batch of type `{first['type']}` always runs alone")
    index_uid = first["indexUid"]
    if first["type"] in ALONE_INDEX_TASKS:
        return BatchChoice([first["uid"]], index_uid, f"a batch of type `{first['type']}` always runs alone")

    chosen = [first["uid"]]
    size = first["kind"].get("contentSize", 0)
    strategy = "batched all enqueued tasks"
    for t in enqueued[1:]:
        if not _touches(t, index_uid):
            continue
        if t["type"] not in BATCHABLE:
            strategy = f"stopped at a task of type `{t['type']}` that cannot be batched with the others"
            break
        if max_tasks is not None and len(chosen) >= max_tasks:
            strategy = f"batched up to configured batch size limit of {max_tasks} tasks"
            break
        t_size = t["kind"].get("contentSize", 0)
        if max_bytes is not None and size + t_size > max_bytes:
            strategy = "batched up to configured batch size limit in bytes"
            break
        size += t_size
        chosen.append(t["uid"])
    return BatchChoice(chosen, index_uid, strategy)
