"""The scheduler driven step by step (no thread, no sleeps): registration, batching, outcomes, recovery."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from hanzo_engine.apitypes.tasks import TaskQuery
from hanzo_engine.scheduler.scheduler import Scheduler


def add_docs(
    s: Scheduler,
    uid: str,
    docs: list[dict[str, Any]],
    method: str = "replace",
    primary_key: str | None = None,
) -> int:
    file_uuid, path = s.new_update_file()
    path.write_bytes(b"".join(msgspec.json.encode(d) + b"\n" for d in docs))
    task = s.register(
        "documentAdditionOrUpdate",
        uid,
        details={"receivedDocuments": len(docs), "indexedDocuments": None},
        kind={
            "method": method,
            "primaryKey": primary_key,
            "contentFile": file_uuid,
            "contentSize": path.stat().st_size,
            "allowIndexCreation": True,
        },
    )
    return int(task["taskUid"])


def run_all(s: Scheduler) -> int:
    batches = 0
    while s.tick():
        batches += 1
    return batches


def documents(s: Scheduler, uid: str) -> list[dict[str, Any]]:
    index = s.index(uid)
    assert index is not None
    with index.read() as r:
        return list(r.iter_documents())


def test_consecutive_additions_share_one_batch_and_apply_in_order(sched: Scheduler) -> None:
    a = add_docs(sched, "movies", [{"id": 1, "title": "a"}])
    b = add_docs(sched, "movies", [{"id": 1, "genre": "drama"}], method="update")
    c = add_docs(sched, "movies", [{"id": 2, "title": "c"}])
    assert run_all(sched) == 1
    views = [sched.get_task(u) for u in (a, b, c)]
    assert {v["batchUid"] for v in views if v} == {0}
    assert [v["status"] for v in views if v] == ["succeeded"] * 3
    assert documents(sched, "movies") == [{"id": 1, "title": "a", "genre": "drama"}, {"id": 2, "title": "c"}]


def test_a_bad_task_fails_alone_and_changes_nothing(sched: Scheduler) -> None:
    good = add_docs(sched, "movies", [{"id": 1}])
    bad = add_docs(sched, "movies", [{"id": 2}, {"id": "not valid!"}])
    run_all(sched)
    assert sched.get_task(good)["status"] == "succeeded"  # type: ignore[index]
    failed = sched.get_task(bad)
    assert failed is not None and failed["status"] == "failed"
    assert failed["error"]["code"] == "invalid_document_id"
    assert failed["details"] == {"receivedDocuments": 2, "indexedDocuments": 0}
    assert documents(sched, "movies") == [{"id": 1}]


def test_cancelation_of_enqueued_tasks(sched: Scheduler) -> None:
    a = add_docs(sched, "movies", [{"id": 1}])
    b = add_docs(sched, "movies", [{"id": 2}])
    cancel = sched.register(
        "taskCancelation",
        None,
        details={"matchedTasks": 0, "canceledTasks": None, "originalFilter": "?uids=1"},
        kind={"query": TaskQuery(uids={b})},
    )
    sched.tick()  # the cancelation overtakes the additions
    assert sched.get_task(b)["status"] == "canceled"  # type: ignore[index]
    assert sched.get_task(b)["canceledBy"] == cancel["taskUid"]  # type: ignore[index]
    assert sched.get_task(cancel["taskUid"])["details"] == {  # type: ignore[index]
        "matchedTasks": 1,
        "canceledTasks": 1,
        "originalFilter": "?uids=1",
    }
    run_all(sched)
    assert sched.get_task(a)["status"] == "succeeded"  # type: ignore[index]
    assert documents(sched, "movies") == [{"id": 1}]


def cancel_tasks(s: Scheduler, *uids: int) -> int:
    task = s.register(
        "taskCancelation",
        None,
        details={"matchedTasks": 0, "canceledTasks": None, "originalFilter": "?uids="},
        kind={"query": TaskQuery(uids=set(uids))},
    )
    return int(task["taskUid"])


def test_a_cancelation_registered_once_the_batch_started_stops_it(sched: Scheduler) -> None:
    # the window between the commit that makes a task `processing` and the batch's run
    task = add_docs(sched, "movies", [{"id": 1}])
    started = sched._start_batch([task], "test")
    assert started is not None
    cancel = cancel_tasks(sched, task)
    sched._run_batch(*started)
    run_all(sched)
    assert sched.get_task(task)["status"] == "canceled"  # type: ignore[index]
    assert sched.get_task(task)["canceledBy"] == cancel  # type: ignore[index]
    assert sched.index("movies") is None


def test_a_cancelation_registered_after_the_choice_runs_before_the_chosen_tasks(sched: Scheduler) -> None:
    task = add_docs(sched, "movies", [{"id": 1}])
    cancel = cancel_tasks(sched, task)  # as if it arrived after the autobatcher chose `task`
    assert sched._start_batch([task], "test") is None
    assert sched.get_task(task)["status"] == "enqueued"  # type: ignore[index]
    run_all(sched)
    assert sched.get_task(task)["canceledBy"] == cancel  # type: ignore[index]


def test_task_deletion_only_deletes_finished_tasks(sched: Scheduler) -> None:
    a = add_docs(sched, "movies", [{"id": 1}])
    run_all(sched)
    b = add_docs(sched, "movies", [{"id": 2}])
    deletion = sched.register(
        "taskDeletion",
        None,
        details={"matchedTasks": 0, "deletedTasks": None, "originalFilter": "?uids=0,1"},
        kind={"query": TaskQuery(uids={a, b})},
    )
    sched.tick()
    assert sched.get_task(a) is None
    assert sched.get_task(b)["status"] == "enqueued"  # type: ignore[index]
    assert sched.get_task(deletion["taskUid"])["details"]["deletedTasks"] == 1  # type: ignore[index]
    assert sched.get_batch(0) is None, "a batch left without tasks is deleted with them"
    run_all(sched)
    assert sched.get_task(b)["status"] == "succeeded"  # type: ignore[index]


def test_recovery_reuses_the_applied_batch_marker(tmp_path: Path) -> None:
    s = Scheduler(tmp_path / "data.ms")
    uid = add_docs(s, "movies", [{"id": i} for i in range(10)])
    choice_uids = [uid]
    started = s._start_batch(choice_uids, "test")
    assert started is not None
    batch, tasks = started
    from hanzo_engine.scheduler import processing

    processing.apply_batch(s, batch, tasks, interrupted=lambda: False)  # index committed, tasks not finished
    s.mapper.close()
    s.store.close()

    s = Scheduler(tmp_path / "data.ms")
    assert s.get_task(uid)["status"] == "processing"  # type: ignore[index]
    s.recover()
    view = s.get_task(uid)
    assert view is not None and view["status"] == "succeeded" and view["batchUid"] == batch["uid"]
    assert len(documents(s, "movies")) == 10
    assert list((tmp_path / "data.ms" / "update_files").iterdir()) == []
    s.mapper.close()
    s.store.close()


def test_index_lifecycle(sched: Scheduler) -> None:
    sched.register("indexCreation", "a", details={"primaryKey": "key"}, kind={"primaryKey": "key"})
    again = sched.register("indexCreation", "a", details={"primaryKey": None}, kind={"primaryKey": None})
    run_all(sched)
    err = sched.get_task(again["taskUid"])["error"]  # type: ignore[index]
    assert err == {
        "message": "Index `a` already exists.",
        "code": "index_already_exists",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#index_already_exists",
    }
    add_docs(sched, "a", [{"key": "x"}])
    sched.register(
        "indexSwap", None, details={"swaps": []}, kind={"swaps": [{"indexes": ["a", "b"], "rename": True}]}
    )
    run_all(sched)
    assert sched.index("a") is None
    assert documents(sched, "b") == [{"key": "x"}]
    deletion = sched.register("indexDeletion", "b", details={"deletedDocuments": None}, kind={})
    run_all(sched)
    assert sched.get_task(deletion["taskUid"])["details"] == {"deletedDocuments": 1}  # type: ignore[index]
    assert sched.index("b") is None
    assert list((sched.db_path / "indexes").iterdir()) == []


def test_full_collections_are_deferred_while_a_batch_applies(
    sched: Scheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a full collection walks every live container: a batch's documents are hundreds of thousands of
    # them, so the writer defers it for the batch and restores the thresholds after, even on failure
    import gc

    from hanzo_engine.scheduler import processing

    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    apply_batch = processing.apply_batch

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.get_threshold())
        return apply_batch(*args, **kwargs)

    monkeypatch.setattr(processing, "apply_batch", recording)
    add_docs(sched, "movies", [{"id": 1, "title": "a"}])
    assert run_all(sched) == 1
    assert seen and seen[0][:2] == before[:2] and seen[0][2] >= 1 << 30
    assert gc.get_threshold() == before

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr(processing, "apply_batch", failing)
    task = add_docs(sched, "movies", [{"id": 2}])
    run_all(sched)
    assert (sched.get_task(task) or {}).get("status") == "failed"
    assert gc.get_threshold() == before


def test_when_finished_calls_back_once_the_outcome_is_committed(sched: Any) -> None:
    first = add_docs(sched, "movies", [{"id": 1}])
    second = add_docs(sched, "books", [{"id": 2}])
    seen: list[tuple[int, str]] = []

    def record(uid: int) -> Any:
        return lambda: seen.append((uid, sched.get_task(uid)["status"]))

    sched.when_finished(first, record(first))
    forget = sched.when_finished(second, record(second))
    forget()
    forget()  # forgetting twice is harmless
    run_all(sched)
    assert seen == [(first, "succeeded")]
    assert not sched._finish_callbacks


def test_payload_files_are_deleted_by_the_remover_while_the_writer_runs(tmp_path: Path) -> None:
    s = Scheduler(tmp_path / "data.ms")
    s.start()
    try:
        uid = add_docs(s, "movies", [{"id": 1}])
        assert s.wait_idle()
        assert s.get_task(uid)["status"] == "succeeded"  # type: ignore[index]
    finally:
        s.stop()  # drains the remover
    assert list((tmp_path / "data.ms" / "update_files").iterdir()) == []


def test_a_small_document_batch_waits_for_writes_streaming_in(sched: Any) -> None:
    import threading
    import time

    first = add_docs(sched, "movies", [{"id": 1}])
    sched._thread = threading.current_thread()  # `tick` runs as the writer thread would
    sched.batch_wait = 0.5
    # nothing arrived while a batch ran (one write at a time): no wait
    assert not sched._wait_for_more([first], sched._enqueued_window())
    sched._arrived = 1  # writes arrived during the last batch

    def more() -> None:
        time.sleep(0.02)
        add_docs(sched, "movies", [{"id": 2}])
        add_docs(sched, "movies", [{"id": 3}])

    writer = threading.Thread(target=more)
    writer.start()
    assert sched.tick()
    writer.join()
    batch = sched.get_task(first)["batchUid"]
    assert [sched.get_task(u)["batchUid"] for u in (first, first + 1, first + 2)] == [batch] * 3
    assert len(documents(sched, "movies")) == 3
    # settings batches never wait
    uid = sched.register(
        "settingsUpdate", "movies", details={}, kind={"settings": {"rankingRules": ["words"]}}
    )["taskUid"]
    sched._arrived = 1
    assert not sched._wait_for_more([uid], sched._enqueued_window())
