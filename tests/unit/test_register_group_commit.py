"""Concurrent registrations share synced commits (`Scheduler._register_grouped`): every caller returns
once its own task is stored, uids stay unique and dense, and a failed commit fails every task in it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hanzo_engine.scheduler.scheduler import Scheduler


def _register(s: Scheduler, i: int) -> int:
    task = s.register("indexCreation", f"i{i % 7}", details={"primaryKey": None}, kind={"primaryKey": None})
    # stored (committed) by the time the caller gets its answer
    assert s.get_task(task["taskUid"]) is not None
    return int(task["taskUid"])


def test_concurrent_registrations_are_all_stored_with_dense_uids(sched: Scheduler) -> None:
    with ThreadPoolExecutor(32) as pool:
        uids = list(pool.map(lambda i: _register(sched, i), range(400)))
    assert sorted(uids) == list(range(400))
    assert list(sched.store.bitmap("status:enqueued")) == list(range(400))


def test_a_failed_group_commit_fails_each_of_its_tasks_and_the_next_ones_go_on(sched: Scheduler) -> None:
    real = sched.store.register
    entered = threading.Event()
    release = threading.Event()
    calls = 0

    def failing(txn: Any, task: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:  # the first commit waits until others queue behind it, then succeeds
            entered.set()
            release.wait(5)
            return real(txn, task)
        if task["indexUid"] == "boom":
            raise OSError("disk gone")
        return real(txn, task)

    sched.store.register = failing  # type: ignore[method-assign]
    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(_register, sched, 0)
        assert entered.wait(5)
        queued = [
            pool.submit(sched.register, "indexCreation", uid, details={}, kind={"primaryKey": None})
            for uid in ("ok", "boom", "ok2")
        ]
        while len(sched._group) < 3:
            threading.Event().wait(0.01)
        release.set()
        assert first.result(5) == 0
        errors = [f.exception(5) for f in queued]
    # the three queued registrations shared one commit, which failed: none of them is stored
    assert all(isinstance(e, OSError) for e in errors)
    assert list(sched.store.bitmap("status:enqueued")) == [0]
    # and the lead was handed on: a later registration commits
    assert _register(sched, 1) == 1
