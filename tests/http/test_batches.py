"""GET /batches and GET /batches/:uid, and autobatching, against Meilisearch (tests/batches/mod.rs).

A batch object is `{uid, progress, details, stats{totalNbTasks, status, types, indexUids},
duration, startedAt, finishedAt, batchStrategy}`. A finished batch's details are read back from
Meilisearch's store, so null DetailsView fields are absent (an index creation batch shows `{}`);
`stats` maps are Rust BTreeMaps (statuses and types in enum order, index uids sorted).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task
from tests.http.test_tasks import BLOCKER_DOCS, DATE_RE, iso_duration, start_blocker, still_processing, to_ns

BATCH_KEYS = ["uid", "progress", "details", "stats", "duration", "startedAt", "finishedAt", "batchStrategy"]


def add_documents(http: httpx.Client, uid: str, docs: list[dict[str, Any]]) -> int:
    r = http.post(f"/indexes/{uid}/documents", json=docs)
    assert r.status_code == 202, r.text
    return int(r.json()["taskUid"])


def batch_of(http: httpx.Client, task_uid: int) -> dict[str, Any]:
    task = wait_task(http, task_uid)
    r = http.get(f"/batches/{task['batchUid']}")
    assert r.status_code == 200, r.text
    batch: dict[str, Any] = r.json()
    return batch


def batches(http: httpx.Client, **params: Any) -> dict[str, Any]:
    r = http.get("/batches", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def uids_of(listing: dict[str, Any]) -> list[int]:
    return [b["uid"] for b in listing["results"]]


def stats(
    total: int, status: dict[str, int], types: dict[str, int], index_uids: dict[str, int]
) -> dict[str, Any]:
    return {"totalNbTasks": total, "status": status, "types": types, "indexUids": index_uids}


RUST_DURATION = re.compile(r"\d+\.\d{2}(s|ms|µs|ns)")
HUMAN_CHANGE = re.compile(r"\d+(\.\d+)? (B|KiB|MiB|GiB) \([+-]\d+(\.\d+)? (B|KiB|MiB|GiB)\)")
DIAGNOSTICS = ("progressTrace", "writeChannelCongestion", "internalDatabaseSizes", "embedderRequests")


def core(batch_stats: dict[str, Any]) -> dict[str, Any]:
    """A batch's stats without Meilisearch's best-effort diagnostics (its tests redact them too), after
    checking their shapes: `progressTrace` always, each step path a Rust `{:.2?}` duration;
    `writeChannelCongestion` and `internalDatabaseSizes` when present, after the four maps."""
    keys = list(batch_stats)
    assert keys[:4] == ["totalNbTasks", "status", "types", "indexUids"]
    assert keys[4] == "progressTrace" and all(k in DIAGNOSTICS for k in keys[4:]), keys
    trace = batch_stats["progressTrace"]
    assert trace and all(isinstance(k, str) and RUST_DURATION.fullmatch(v) for k, v in trace.items()), trace
    if "writeChannelCongestion" in batch_stats:
        congestion = batch_stats["writeChannelCongestion"]
        assert list(congestion) == ["attempts", "blocking_attempts", "blocking_ratio"]
    for value in batch_stats.get("internalDatabaseSizes", {}).values():
        assert HUMAN_CHANGE.fullmatch(value), value
    return {k: v for k, v in batch_stats.items() if k not in DIAGNOSTICS}


def assert_finished_batch_shape(batch: dict[str, Any]) -> None:
    assert list(batch) == BATCH_KEYS
    assert batch["progress"] is None
    assert DATE_RE.fullmatch(batch["startedAt"])
    assert DATE_RE.fullmatch(batch["finishedAt"])
    assert batch["duration"] == iso_duration(to_ns(batch["finishedAt"]) - to_ns(batch["startedAt"]))


# -- batch objects ---------------------------------------------------------------------------------


def test_document_addition_batch(http: httpx.Client, index_uid: str) -> None:
    task_uid = add_documents(http, index_uid, [{"id": 42, "content": "doggos & fluff"}])
    batch = batch_of(http, task_uid)
    task = http.get(f"/tasks/{task_uid}").json()
    assert_finished_batch_shape(batch)
    assert batch["uid"] == task["batchUid"]
    assert batch["details"] == {"receivedDocuments": 1, "indexedDocuments": 1}
    assert core(batch["stats"]) == stats(1, {"succeeded": 1}, {"documentAdditionOrUpdate": 1}, {index_uid: 1})
    # a first addition: indexing diagnostics and the databases it grew, as Meilisearch's snapshot
    assert list(batch["stats"]) == [
        "totalNbTasks",
        "status",
        "types",
        "indexUids",
        "progressTrace",
        "writeChannelCongestion",
        "internalDatabaseSizes",
    ]
    assert batch["stats"]["writeChannelCongestion"] == {
        "attempts": 1,
        "blocking_attempts": 0,
        "blocking_ratio": 0.0,
    }
    assert "processing tasks" in batch["stats"]["progressTrace"]
    assert "documents" in batch["stats"]["internalDatabaseSizes"]
    assert batch["batchStrategy"] == "batched all enqueued tasks"
    # the tasks of a batch share its dates
    assert (task["startedAt"], task["finishedAt"]) == (batch["startedAt"], batch["finishedAt"])
    assert http.get("/batches", params={"uids": task_uid}).status_code == 200


def test_index_creation_batch_omits_null_details(http: httpx.Client, index_uid: str) -> None:
    created = batch_of(http, http.post("/indexes", json={"uid": index_uid}).json()["taskUid"])
    assert_finished_batch_shape(created)
    assert created["details"] == {}
    assert core(created["stats"]) == stats(1, {"succeeded": 1}, {"indexCreation": 1}, {index_uid: 1})
    assert list(created["stats"])[4:] == ["progressTrace"]  # no indexing diagnostics for a creation

    failed = batch_of(
        http, http.post("/indexes", json={"uid": index_uid, "primaryKey": "doggos"}).json()["taskUid"]
    )
    assert failed["details"] == {"primaryKey": "doggos"}
    assert core(failed["stats"]) == stats(1, {"failed": 1}, {"indexCreation": 1}, {index_uid: 1})


def test_failed_document_deletion_batch(http: httpx.Client, index_uid: str) -> None:
    r = http.post(f"/indexes/{index_uid}/documents/delete-batch", json=[4294967294, 4294967293, 4294967292])
    batch = batch_of(http, r.json()["taskUid"])
    # the task shows `"originalFilter": null`; the stored batch drops it
    assert batch["details"] == {"providedIds": 3, "deletedDocuments": 0}
    assert core(batch["stats"]) == stats(1, {"failed": 1}, {"documentDeletion": 1}, {index_uid: 1})


def test_cancelation_and_deletion_batches(http: httpx.Client, index_uid: str) -> None:
    target = wait_task(http, http.post("/indexes", json={"uid": index_uid}).json()["taskUid"])["uid"]
    canceled = batch_of(http, http.post(f"/tasks/cancel?uids={target}").json()["taskUid"])
    assert_finished_batch_shape(canceled)
    assert canceled["details"] == {"matchedTasks": 1, "canceledTasks": 0, "originalFilter": f"?uids={target}"}
    assert core(canceled["stats"]) == stats(1, {"succeeded": 1}, {"taskCancelation": 1}, {})

    deleted = batch_of(http, http.delete(f"/tasks?uids={target}").json()["taskUid"])
    assert deleted["details"] == {"matchedTasks": 1, "deletedTasks": 1, "originalFilter": f"?uids={target}"}
    assert core(deleted["stats"]) == stats(1, {"succeeded": 1}, {"taskDeletion": 1}, {})


def test_batch_strategy_of_tasks_that_run_alone(http: httpx.Client, index_uid: str) -> None:
    created = wait_task(http, http.post("/indexes", json={"uid": index_uid}).json()["taskUid"])
    batch = http.get(f"/batches/{created['batchUid']}").json()
    assert batch["batchStrategy"] == (
        f"created batch containing only task with id {created['uid']} of type `indexCreation` that cannot be "
        "batched with any other task."
    )
    updated = wait_task(
        http, http.patch(f"/indexes/{index_uid}", json={"primaryKey": "id"}).json()["taskUid"]
    )
    batch = http.get(f"/batches/{updated['batchUid']}").json()
    assert batch["batchStrategy"] == (
        f"created batch containing only task with id {updated['uid']} of type `indexUpdate` that cannot be "
        "batched with any other task."
    )
    cancelation = wait_task(http, http.post(f"/tasks/cancel?uids={created['uid']}").json()["taskUid"])
    batch = http.get(f"/batches/{cancelation['batchUid']}").json()
    assert batch["batchStrategy"] == (
        f"created batch containing only task with id {cancelation['uid']} of type `taskCancelation` that "
        "cannot be batched with any other task."
    )
    deletion = wait_task(http, http.delete(f"/tasks?uids={created['uid']}").json()["taskUid"])
    batch = http.get(f"/batches/{deletion['batchUid']}").json()
    assert batch["batchStrategy"] == (
        "stopped after the last task of type `taskDeletion` because they cannot be batched with tasks of any "
        "other type."
    )


# -- listing and filters -----------------------------------------------------------------------------


@pytest.fixture
def four_batches(http: httpx.Client, index_uid: str) -> list[int]:
    """indexCreation (ok), indexCreation (failed), indexUpdate, indexDeletion: one batch each."""
    out = []
    for method, path, body in (
        ("POST", "/indexes", {"uid": index_uid}),
        ("POST", "/indexes", {"uid": index_uid}),
        ("PATCH", f"/indexes/{index_uid}", {"primaryKey": "id"}),
        ("DELETE", f"/indexes/{index_uid}", None),
    ):
        r = http.request(method, path, json=body)
        out.append(wait_task(http, r.json()["taskUid"])["batchUid"])
    return out


def test_list_batches_pagination(http: httpx.Client, index_uid: str, four_batches: list[int]) -> None:
    b = four_batches
    page = batches(http, indexUids=index_uid, limit=2)
    assert list(page) == ["results", "total", "limit", "from", "next"]
    assert uids_of(page) == [b[3], b[2]]
    assert (page["total"], page["limit"], page["from"], page["next"]) == (4, 2, b[3], b[1])
    page = batches(http, indexUids=index_uid, limit=2, **{"from": b[1]})
    assert uids_of(page) == [b[1], b[0]]
    assert page["next"] is None
    page = batches(http, indexUids=index_uid, limit=3, reverse="true")
    assert uids_of(page) == b[:3]
    assert (page["from"], page["next"]) == (b[0], b[3])
    assert batches(http, indexUids=index_uid)["limit"] == 20
    for listed in batches(http, indexUids=index_uid)["results"]:
        assert listed == http.get(f"/batches/{listed['uid']}").json()
    assert batches(http, indexUids=index_uid, limit=4294967295)["limit"] == 4294967294


def test_list_batches_filters(http: httpx.Client, index_uid: str, four_batches: list[int]) -> None:
    b = four_batches
    assert uids_of(batches(http, indexUids=index_uid, statuses="succeeded")) == [b[3], b[2], b[0]]
    assert uids_of(batches(http, indexUids=index_uid, statuses="failed")) == [b[1]]
    assert uids_of(batches(http, indexUids=index_uid, statuses="*,failed")) == b[::-1]
    assert uids_of(batches(http, indexUids=index_uid, types="indexCreation")) == [b[1], b[0]]
    assert uids_of(batches(http, indexUids=index_uid, types="indexCreation,IndexUpdate")) == [
        b[2],
        b[1],
        b[0],
    ]
    assert uids_of(batches(http, indexUids=index_uid, types="indexCreation", statuses="failed")) == [b[1]]
    assert uids_of(batches(http, indexUids=f"*,{index_uid}_nope", batchUids=f"{b[0]},{b[2]}")) == [b[2], b[0]]
    assert batches(http, batchUids=f"{b[0]},{b[2]}")["total"] == 2
    assert uids_of(batches(http, indexUids=index_uid, canceledBy=0)) == []
    assert batches(http, indexUids=f"{index_uid}_nope")["total"] == 0


# -- autobatching and queue states (private server) ----------------------------------------------


@pytest.fixture(scope="module")
def private(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    srv = ServerProcess(Path(tmp_path_factory.mktemp("batches-private")) / "data.ms").start()
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            yield client
    finally:
        srv.stop()


def test_consecutive_additions_share_a_batch(private: httpx.Client) -> None:
    blocker = start_blocker(private, "auto_blocker")
    queued = [
        add_documents(private, "auto", [{"id": 1}]),
        add_documents(private, "auto", [{"id": 2}, {"id": 3}]),
        add_documents(private, "auto", [{"id": 1, "more": True}]),
    ]
    still_processing(private, blocker)
    stop = private.post(f"/tasks/cancel?uids={blocker}").json()["taskUid"]

    done = [wait_task(private, uid) for uid in queued]
    assert [t["status"] for t in done] == ["succeeded"] * 3
    assert len({t["batchUid"] for t in done}) == 1
    assert [t["details"]["indexedDocuments"] for t in done] == [1, 2, 1]
    batch = private.get(f"/batches/{done[0]['batchUid']}").json()
    assert_finished_batch_shape(batch)
    assert batch["details"] == {"receivedDocuments": 4, "indexedDocuments": 4}
    assert core(batch["stats"]) == stats(3, {"succeeded": 3}, {"documentAdditionOrUpdate": 3}, {"auto": 3})
    assert batch["batchStrategy"] == "batched all enqueued tasks"
    for task in done:
        assert (task["startedAt"], task["finishedAt"]) == (batch["startedAt"], batch["finishedAt"])
    listed = private.get("/tasks", params={"batchUids": batch["uid"]}).json()
    assert [t["uid"] for t in listed["results"]] == queued[::-1]
    assert wait_task(private, stop)["status"] == "succeeded"


def test_processing_batch_and_cancelation_batch(private: httpx.Client) -> None:
    blocker = start_blocker(private, "zz_blocker")
    processing_task = private.get(f"/tasks/{blocker}").json()
    processing = private.get(f"/batches/{processing_task['batchUid']}").json()
    victims = [add_documents(private, "aa_victim", [{"id": i}]) for i in range(2)]
    still_processing(private, blocker)
    cancel = private.post(f"/tasks/cancel?uids={blocker},{victims[0]},{victims[1]}").json()["taskUid"]

    assert list(processing) == BATCH_KEYS
    assert core(processing["stats"]) == stats(
        1, {"processing": 1}, {"documentAdditionOrUpdate": 1}, {"zz_blocker": 1}
    )
    # served from memory: the nulls of the unfinished details are kept
    assert processing["details"] == {"receivedDocuments": BLOCKER_DOCS, "indexedDocuments": None}
    assert (processing["finishedAt"], processing["duration"]) == (None, None)
    assert processing["startedAt"] == processing_task["startedAt"]

    batch = batch_of(private, cancel)
    assert_finished_batch_shape(batch)
    assert batch["details"] == {
        "receivedDocuments": BLOCKER_DOCS + 2,
        "indexedDocuments": 0,
        "matchedTasks": 3,
        "canceledTasks": 3,
        "originalFilter": f"?uids={blocker},{victims[0]},{victims[1]}",
    }
    assert core(batch["stats"]) == stats(
        4,
        {"succeeded": 1, "canceled": 3},
        {"documentAdditionOrUpdate": 3, "taskCancelation": 1},
        {"aa_victim": 2, "zz_blocker": 1},
    )
    # BTreeMap order: statuses and kinds in enum order, index uids sorted
    assert list(batch["stats"]["status"]) == ["succeeded", "canceled"]
    assert list(batch["stats"]["types"]) == ["documentAdditionOrUpdate", "taskCancelation"]
    assert list(batch["stats"]["indexUids"]) == ["aa_victim", "zz_blocker"]
    assert uids_of(batches(private, canceledBy=cancel)) == [batch["uid"]]
    assert uids_of(batches(private, statuses="canceled", indexUids="aa_victim")) == [batch["uid"]]


def test_batches_uids_filter_selects_batches_by_task_uid(private: httpx.Client) -> None:
    blocker = start_blocker(private, "uids_blocker")
    queued = [add_documents(private, "uids", [{"id": i}]) for i in range(2)]
    still_processing(private, blocker)
    private.post(f"/tasks/cancel?uids={blocker}")
    first, second = (wait_task(private, uid) for uid in queued)
    # the second task's uid is past its batch's: selecting by batch uid instead would miss it (the
    # first one's may equal it, when this test runs alone)
    assert first["batchUid"] == second["batchUid"] != second["uid"]
    assert uids_of(batches(private, uids=second["uid"])) == [second["batchUid"]]
    assert uids_of(batches(private, uids=f"{first['uid']},{second['uid']}")) == [first["batchUid"]]


def test_processing_batch_has_progress(private: httpx.Client) -> None:
    blocker = start_blocker(private, "progress_blocker")
    try:
        batch_uid = private.get(f"/tasks/{blocker}").json()["batchUid"]
        progress = private.get(f"/batches/{batch_uid}").json()["progress"]
        assert isinstance(progress, dict)
        assert list(progress) == ["steps", "percentage"]
    finally:
        wait_task(private, private.post(f"/tasks/cancel?uids={blocker}").json()["taskUid"])


def test_canceled_processing_task_keeps_its_batch_uid(private: httpx.Client) -> None:
    blocker = start_blocker(private, "reuse_blocker")
    batch_uid = private.get(f"/tasks/{blocker}").json()["batchUid"]
    cancel = wait_task(private, private.post(f"/tasks/cancel?uids={blocker}").json()["taskUid"])
    assert cancel["batchUid"] == batch_uid
    assert private.get(f"/tasks/{blocker}").json()["batchUid"] == batch_uid


def test_batch_strategy_when_other_indexes_have_work(private: httpx.Client) -> None:
    blocker = start_blocker(private, "strategy_blocker")
    first = add_documents(private, "strategy_a", [{"id": 1}])
    second = add_documents(private, "strategy_b", [{"id": 1}])
    still_processing(private, blocker)
    private.post(f"/tasks/cancel?uids={blocker}")
    assert batch_of(private, first)["batchStrategy"] == "batched all enqueued tasks for index `strategy_a`"
    assert batch_of(private, second)["batchStrategy"] == "batched all enqueued tasks"


def test_newest_cancelation_runs_first(private: httpx.Client) -> None:
    blocker = start_blocker(private, "order_blocker")
    waiting = add_documents(private, "order_waiting", [{"id": 1}])
    older = private.post(f"/tasks/cancel?uids={waiting}").json()["taskUid"]
    still_processing(private, blocker)
    newer = private.post(f"/tasks/cancel?uids={blocker}").json()["taskUid"]
    older_task, newer_task = wait_task(private, older), wait_task(private, newer)
    assert newer_task["batchUid"] < older_task["batchUid"]
