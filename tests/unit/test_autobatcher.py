"""The autobatcher is a pure function: enqueued tasks in, the next batch out."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hanzo_engine.scheduler.autobatcher import BATCHABLE, autobatch

TYPES = [
    "documentAdditionOrUpdate",
    "documentDeletion",
    "settingsUpdate",
    "indexCreation",
    "indexDeletion",
    "indexUpdate",
    "taskCancelation",
    "taskDeletion",
    "indexSwap",
    "dumpCreation",
]


def task(uid: int, type_: str, index: str | None = "a", size: int = 0, swaps: Any = None) -> dict[str, Any]:
    kind: dict[str, Any] = {"contentSize": size}
    if type_ == "indexSwap":
        kind["swaps"] = swaps or [{"indexes": ["a", "b"], "rename": False}]
        index = None
    if type_ in ("taskCancelation", "taskDeletion", "dumpCreation"):
        index = None
    return {"uid": uid, "type": type_, "indexUid": index, "kind": kind}


def test_nothing_enqueued() -> None:
    assert autobatch([]) is None


def test_consecutive_document_tasks_of_one_index_batch_together() -> None:
    tasks = [
        task(0, "documentAdditionOrUpdate"),
        task(1, "documentAdditionOrUpdate", "b"),
        task(2, "documentDeletion"),
        task(3, "documentAdditionOrUpdate"),
    ]
    choice = autobatch(tasks)
    assert choice is not None
    assert choice.task_uids == [0, 2, 3]
    assert choice.index_uid == "a"


def test_index_deletion_joins_and_ends_the_batch() -> None:
    tasks = [
        task(0, "documentAdditionOrUpdate"),
        task(1, "indexDeletion"),
        task(2, "documentAdditionOrUpdate"),
    ]
    choice = autobatch(tasks)
    assert choice is not None and choice.task_uids == [0, 1]
    assert choice.strategy == "stopped after task with id 1 because it deletes the index"


def test_settings_and_documents_do_not_mix() -> None:
    tasks = [task(0, "documentAdditionOrUpdate"), task(1, "settingsUpdate"), task(2, "settingsUpdate")]
    choice = autobatch(tasks)
    assert choice is not None and choice.task_uids == [0]
    choice = autobatch(tasks[1:])
    assert choice is not None and choice.task_uids == [1, 2]


def test_index_creation_runs_alone() -> None:
    tasks = [task(0, "indexCreation"), task(1, "documentAdditionOrUpdate")]
    choice = autobatch(tasks)
    assert choice is not None and choice.task_uids == [0]


def test_cancelations_overtake_everything() -> None:
    tasks = [
        task(0, "documentAdditionOrUpdate"),
        task(1, "taskCancelation"),
        task(2, "taskDeletion"),
        task(3, "taskCancelation"),
    ]
    choice = autobatch(tasks)
    assert choice is not None and choice.task_uids == [3], "the newest cancelation first"
    choice = autobatch([t for t in tasks if t["uid"] != 3])
    assert choice is not None and choice.task_uids == [1]
    choice = autobatch([t for t in tasks if t["uid"] not in (1, 3)])
    assert choice is not None and choice.task_uids == [2]


def test_swap_is_a_barrier_for_the_indexes_it_names() -> None:
    tasks = [
        task(0, "documentAdditionOrUpdate", "a"),
        task(1, "indexSwap"),
        task(2, "documentAdditionOrUpdate", "a"),
    ]
    choice = autobatch(tasks)
    assert choice is not None and choice.task_uids == [0]


def test_limits_on_count_and_bytes() -> None:
    tasks = [task(i, "documentAdditionOrUpdate", size=100) for i in range(10)]
    choice = autobatch(tasks, max_tasks=3)
    assert choice is not None and choice.task_uids == [0, 1, 2]
    choice = autobatch(tasks, max_bytes=450)
    assert choice is not None and choice.task_uids == [0, 1, 2, 3]
    # the first task always runs, even when it alone exceeds the byte limit
    choice = autobatch(tasks, max_bytes=10)
    assert choice is not None and choice.task_uids == [0]


@given(st.lists(st.tuples(st.sampled_from(TYPES), st.sampled_from(["a", "b", "c"])), min_size=1, max_size=30))
def test_batches_preserve_per_index_order_and_never_mix_indexes(spec: list[tuple[str, str]]) -> None:
    pending = [task(i, t, idx) for i, (t, idx) in enumerate(spec)]
    order: list[int] = []
    while pending:
        choice = autobatch(pending)
        assert choice is not None
        chosen = [t for t in pending if t["uid"] in set(choice.task_uids)]
        assert chosen, "a batch is never empty"
        if len(chosen) > 1 and chosen[0]["type"] not in ("taskCancelation", "taskDeletion"):
            assert {t["indexUid"] for t in chosen} == {choice.index_uid}
            assert all(t["type"] in BATCHABLE for t in chosen[:-1])
            assert chosen[-1]["type"] in BATCHABLE | {"indexDeletion"}
        order.extend(choice.task_uids)
        pending = [t for t in pending if t["uid"] not in set(choice.task_uids)]
    assert sorted(order) == list(range(len(spec)))
    # For each index, its index-scoped tasks run in uid order.
    for idx in "abc":
        ran = [
            u
            for u in order
            if spec[u][1] == idx
            and spec[u][0] not in ("taskCancelation", "taskDeletion", "indexSwap", "dumpCreation")
        ]
        assert ran == sorted(ran)
