"""GET /tasks, GET /tasks/:uid, POST /tasks/cancel, DELETE /tasks against Meilisearch's task contract.

Expected bodies come from Meilisearch's own integration snapshots (tests/tasks/mod.rs): the task
object's fields and their order, `details` per task type, the ISO-8601 `duration`, RFC 3339 dates,
pagination (`limit`, `from`, `next`, `reverse`, `total`), every filter, cancelation and deletion.

Tests that need tasks to stay `enqueued` run on a private server behind a "blocker": one large
document addition whose batch takes a couple of seconds. Everything enqueued while it is processing
waits behind it; canceling the blocker afterwards ends the wait at once.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task

JSON = {"content-type": "application/json"}
TASK_KEYS = [
    "uid",
    "batchUid",
    "indexUid",
    "status",
    "type",
    "canceledBy",
    "details",
    "error",
    "duration",
    "enqueuedAt",
    "startedAt",
    "finishedAt",
]
SUMMARY_KEYS = ["taskUid", "indexUid", "status", "type", "enqueuedAt"]
# `time`'s RFC 3339: UTC with `Z`, a fraction only when non-zero and without trailing zeros
DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{0,8}[1-9])?Z")
DURATION_RE = re.compile(r"P(\d+D)?(T\d+(\.\d{3}|\.\d{6}|\.\d{9})?S)?")
BLOCKER_DOCS = 400_000


# -- helpers ---------------------------------------------------------------------------------------


def to_ns(date: str) -> int:
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z", date)
    assert m is not None, date
    seconds = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1_000_000_000 + int((m.group(2) or "0").ljust(9, "0"))


def from_ns(ns: int) -> str:
    seconds, nanos = divmod(ns, 1_000_000_000)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return base + (f".{nanos:09d}" if nanos else "") + "Z"


def iso_duration(ns: int) -> str:
    """Meilisearch's `serialize_duration`: days, then seconds with a 3, 6 or 9 digit fraction."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    days, seconds = divmod(seconds, 86_400)
    out = f"P{days}D" if days else "P"
    if seconds or nanos or not days:
        if nanos == 0:
            out += f"T{seconds}S"
        elif nanos % 1_000_000 == 0:
            out += f"T{seconds}.{nanos // 1_000_000:03d}S"
        elif nanos % 1_000 == 0:
            out += f"T{seconds}.{nanos // 1_000:06d}S"
        else:
            out += f"T{seconds}.{nanos:09d}S"
    return out


def add_documents(http: httpx.Client, uid: str, docs: list[dict[str, Any]], **params: str) -> int:
    r = http.post(f"/indexes/{uid}/documents", json=docs, params=params)
    assert r.status_code == 202, r.text
    return int(r.json()["taskUid"])


def done(http: httpx.Client, uid: int) -> dict[str, Any]:
    return wait_task(http, uid)


def tasks(http: httpx.Client, **params: Any) -> dict[str, Any]:
    r = http.get("/tasks", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def uids_of(listing: dict[str, Any]) -> list[int]:
    return [t["uid"] for t in listing["results"]]


def error(code: str, message: str, type_: str = "invalid_request") -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": type_,
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


def cancel(http: httpx.Client, query: str) -> int:
    r = http.post(f"/tasks/cancel?{query}")
    assert r.status_code == 200, r.text
    return int(r.json()["taskUid"])


def delete(http: httpx.Client, query: str) -> int:
    r = http.delete(f"/tasks?{query}")
    assert r.status_code == 200, r.text
    return int(r.json()["taskUid"])


# -- a private server for queue states that need tasks to wait ----------------------------------


@pytest.fixture(scope="module")
def private(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    srv = ServerProcess(Path(tmp_path_factory.mktemp("tasks-private")) / "data.ms").start()
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            yield client
    finally:
        srv.stop()


@cache
def blocker_payload() -> bytes:
    return ("[" + ",".join(f'{{"id":{i}}}' for i in range(BLOCKER_DOCS)) + "]").encode()


def start_blocker(http: httpx.Client, uid: str) -> int:
    """Enqueue the large addition and return its uid once its batch is processing."""
    r = http.post(f"/indexes/{uid}/documents", content=blocker_payload(), headers=JSON)
    assert r.status_code == 202, r.text
    task = int(r.json()["taskUid"])
    deadline = time.monotonic() + 30
    while (status := http.get(f"/tasks/{task}").json()["status"]) == "enqueued":
        assert time.monotonic() < deadline
        time.sleep(0.002)
    assert status == "processing", "the blocker finished before the test could queue work behind it"
    return task


def still_processing(http: httpx.Client, task: int) -> None:
    status = http.get(f"/tasks/{task}").json()["status"]
    assert status == "processing", f"blocker is {status}: the test premise (queued work) is gone"


# -- summarized task and task object -------------------------------------------------------------


def test_summarized_task_is_202_with_five_fields(http: httpx.Client, index_uid: str) -> None:
    r = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 1}])
    assert r.status_code == 202
    body = r.json()
    assert list(body) == SUMMARY_KEYS
    assert body["indexUid"] == index_uid
    assert body["status"] == "enqueued"
    assert body["type"] == "documentAdditionOrUpdate"
    assert isinstance(body["taskUid"], int)
    assert DATE_RE.fullmatch(body["enqueuedAt"])


def test_task_object_fields_order_dates_and_duration(http: httpx.Client, index_uid: str) -> None:
    summary = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 1}, {"id": 2}]).json()
    task = done(http, summary["taskUid"])
    assert list(task) == TASK_KEYS
    assert task["uid"] == summary["taskUid"]
    assert isinstance(task["batchUid"], int)
    assert task["indexUid"] == index_uid
    assert task["status"] == "succeeded"
    assert task["type"] == "documentAdditionOrUpdate"
    assert task["canceledBy"] is None
    assert task["details"] == {"receivedDocuments": 2, "indexedDocuments": 2}
    assert list(task["details"]) == ["receivedDocuments", "indexedDocuments"]
    assert task["error"] is None
    assert task["enqueuedAt"] == summary["enqueuedAt"]
    for key in ("enqueuedAt", "startedAt", "finishedAt"):
        assert DATE_RE.fullmatch(task[key]), task[key]
    enqueued, started, finished = (to_ns(task[k]) for k in ("enqueuedAt", "startedAt", "finishedAt"))
    assert enqueued <= started <= finished
    assert DURATION_RE.fullmatch(task["duration"])
    assert task["duration"] == iso_duration(finished - started)
    assert http.get(f"/tasks/{task['uid']}").json() == task


def test_duration_is_exact_for_many_tasks(http: httpx.Client, index_uid: str) -> None:
    last = 0
    for i in range(5):
        last = add_documents(http, index_uid, [{"id": i}])
    done(http, last)
    for task in tasks(http, indexUids=index_uid)["results"]:
        started, finished = to_ns(task["startedAt"]), to_ns(task["finishedAt"])
        assert task["duration"] == iso_duration(finished - started)


def test_unknown_task_is_404(http: httpx.Client) -> None:
    r = http.get("/tasks/4294967295")
    assert r.status_code == 404
    assert r.json() == error("task_not_found", "Task `4294967295` not found.")


def test_task_uid_parses_like_a_rust_u32(http: httpx.Client, index_uid: str) -> None:
    uid = done(http, add_documents(http, index_uid, [{"id": 1}]))["uid"]
    # `str::parse::<u32>` takes a leading `+`; other digits than ASCII are not numeric characters
    assert http.get(f"/tasks/+{uid}").json()["uid"] == uid
    for raw in ("doggo", "-1", "4294967296", "١٢"):
        r = http.get(f"/tasks/{raw}")
        assert r.status_code == 400, raw
        assert r.json() == error(
            "invalid_task_uids", f"Task uid `{raw}` is invalid. It should only contain numeric characters."
        )


# -- details per task type -------------------------------------------------------------------------


def test_index_creation_details(http: httpx.Client, index_uid: str) -> None:
    first = done(http, http.post("/indexes", json={"uid": index_uid}).json()["taskUid"])
    assert first["type"] == "indexCreation"
    assert first["details"] == {"primaryKey": None}
    second = done(
        http, http.post("/indexes", json={"uid": index_uid, "primaryKey": "doggos"}).json()["taskUid"]
    )
    assert second["status"] == "failed"
    assert second["details"] == {"primaryKey": "doggos"}
    assert second["error"] == error("index_already_exists", f"Index `{index_uid}` already exists.")
    assert second["duration"] is not None


def test_index_update_and_deletion_details(http: httpx.Client, index_uid: str) -> None:
    failed = done(http, http.patch(f"/indexes/{index_uid}", json={"primaryKey": "bones"}).json()["taskUid"])
    assert failed["type"] == "indexUpdate"
    assert failed["status"] == "failed"
    assert failed["details"] == {"primaryKey": "bones"}
    assert failed["error"] == error("index_not_found", f"Index `{index_uid}` not found.")

    done(http, add_documents(http, index_uid, [{"id": 42, "content": "doggos & fluff"}], primaryKey="id"))
    deletion = done(http, http.delete(f"/indexes/{index_uid}").json()["taskUid"])
    assert deletion["type"] == "indexDeletion"
    assert deletion["status"] == "succeeded"
    assert deletion["details"] == {"deletedDocuments": 1}

    again = done(http, http.delete(f"/indexes/{index_uid}").json()["taskUid"])
    assert again["status"] == "failed"
    assert again["details"] == {"deletedDocuments": 0}
    assert again["error"] == error("index_not_found", f"Index `{index_uid}` not found.")


def test_document_deletion_details(http: httpx.Client, index_uid: str) -> None:
    # on a missing index: the counters of a failed task are 0
    by_id = done(http, http.delete(f"/indexes/{index_uid}/documents/1").json()["taskUid"])
    assert by_id["type"] == "documentDeletion"
    assert by_id["status"] == "failed"
    assert by_id["details"] == {"providedIds": 1, "deletedDocuments": 0, "originalFilter": None}
    assert list(by_id["details"]) == ["providedIds", "deletedDocuments", "originalFilter"]
    assert by_id["error"] == error("index_not_found", f"Index `{index_uid}` not found.")

    batch = http.post(
        f"/indexes/{index_uid}/documents/delete-batch", json=[4294967294, 4294967293, 4294967292]
    )
    failed = done(http, batch.json()["taskUid"])
    assert failed["details"] == {"providedIds": 3, "deletedDocuments": 0, "originalFilter": None}

    done(http, add_documents(http, index_uid, [{"id": 1}, {"id": 2}, {"id": 3}]))
    deleted = done(
        http, http.post(f"/indexes/{index_uid}/documents/delete-batch", json=[1, 42]).json()["taskUid"]
    )
    assert deleted["status"] == "succeeded"
    assert deleted["details"] == {"providedIds": 2, "deletedDocuments": 1, "originalFilter": None}

    cleared = done(http, http.delete(f"/indexes/{index_uid}/documents").json()["taskUid"])
    assert cleared["type"] == "documentDeletion"
    assert cleared["details"] == {"deletedDocuments": 2}


def test_index_swap_details(http: httpx.Client, index_uid: str) -> None:
    a, b = f"{index_uid}_a", f"{index_uid}_b"
    done(http, http.post("/indexes", json={"uid": a}).json()["taskUid"])
    done(http, http.post("/indexes", json={"uid": b}).json()["taskUid"])
    swap = done(http, http.post("/swap-indexes", json=[{"indexes": [a, b]}]).json()["taskUid"])
    assert swap["indexUid"] is None
    assert swap["type"] == "indexSwap"
    assert swap["status"] == "succeeded"
    assert swap["details"] == {"swaps": [{"indexes": [a, b], "rename": False}]}


def test_index_swap_missing_indexes_are_listed_sorted(http: httpx.Client, index_uid: str) -> None:
    doggos, cattos = f"{index_uid}_doggos", f"{index_uid}_cattos"
    swap = done(http, http.post("/swap-indexes", json=[{"indexes": [doggos, cattos]}]).json()["taskUid"])
    assert swap["status"] == "failed"
    assert swap["details"] == {"swaps": [{"indexes": [doggos, cattos], "rename": False}]}
    assert swap["error"] == error("index_not_found", f"Indexes `{cattos}`, `{doggos}` not found.")


def test_cancelation_and_deletion_details_of_finished_tasks(http: httpx.Client, index_uid: str) -> None:
    target = done(http, http.post("/indexes", json={"uid": index_uid}).json()["taskUid"])
    canceled = done(http, cancel(http, f"uids={target['uid']}"))
    assert canceled["indexUid"] is None
    assert canceled["type"] == "taskCancelation"
    assert canceled["status"] == "succeeded"
    assert canceled["details"] == {
        "matchedTasks": 1,
        "canceledTasks": 0,
        "originalFilter": f"?uids={target['uid']}",
    }
    # a finished task is not touched by a cancelation
    assert http.get(f"/tasks/{target['uid']}").json() == target

    deletion = done(http, delete(http, f"uids={target['uid']}"))
    assert deletion["indexUid"] is None
    assert deletion["type"] == "taskDeletion"
    assert deletion["details"] == {
        "matchedTasks": 1,
        "deletedTasks": 1,
        "originalFilter": f"?uids={target['uid']}",
    }


def test_original_filter_is_the_raw_query_string(http: httpx.Client, index_uid: str) -> None:
    # Meilisearch stores `req.query_string()`: still percent-encoded, exactly as sent
    first = add_documents(http, index_uid, [{"id": 1}])
    second = add_documents(http, index_uid, [{"id": 2}])
    done(http, second)
    query = f"uids={first}%2C{second}&indexUids={index_uid}"
    canceled = done(http, cancel(http, query))
    assert canceled["details"] == {"matchedTasks": 2, "canceledTasks": 0, "originalFilter": f"?{query}"}
    deleted = done(http, delete(http, query))
    assert deleted["details"] == {"matchedTasks": 2, "deletedTasks": 2, "originalFilter": f"?{query}"}


# -- customMetadata ----------------------------------------------------------------------------------


def test_custom_metadata_is_echoed_last(http: httpx.Client, index_uid: str) -> None:
    r = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 1}], params={"customMetadata": "my meta"})
    summary = r.json()
    assert list(summary) == [*SUMMARY_KEYS, "customMetadata"]
    assert summary["customMetadata"] == "my meta"
    task = done(http, summary["taskUid"])
    assert list(task) == [*TASK_KEYS, "customMetadata"]
    assert task["customMetadata"] == "my meta"
    listed = tasks(http, uids=task["uid"])["results"]
    assert listed == [task]

    plain = done(http, add_documents(http, index_uid, [{"id": 2}]))
    assert "customMetadata" not in plain


# -- pagination --------------------------------------------------------------------------------------


@pytest.fixture
def five_tasks(http: httpx.Client, index_uid: str) -> list[int]:
    uids = [add_documents(http, index_uid, [{"id": i}]) for i in range(5)]
    done(http, uids[-1])
    return uids


def test_list_is_newest_first_with_total_limit_from_next(
    http: httpx.Client, index_uid: str, five_tasks: list[int]
) -> None:
    t = five_tasks
    page = tasks(http, indexUids=index_uid, limit=2)
    assert list(page) == ["results", "total", "limit", "from", "next"]
    assert uids_of(page) == [t[4], t[3]]
    assert (page["total"], page["limit"], page["from"], page["next"]) == (5, 2, t[4], t[2])
    page = tasks(http, indexUids=index_uid, limit=2, **{"from": page["next"]})
    assert uids_of(page) == [t[2], t[1]]
    assert (page["from"], page["next"], page["total"]) == (t[2], t[0], 5)
    page = tasks(http, indexUids=index_uid, limit=2, **{"from": page["next"]})
    assert uids_of(page) == [t[0]]
    assert (page["from"], page["next"]) == (t[0], None)

    default = tasks(http, indexUids=index_uid)
    assert default["limit"] == 20
    assert uids_of(default) == t[::-1]
    assert (default["from"], default["next"], default["total"]) == (t[4], None, 5)


def test_reverse_lists_oldest_first(http: httpx.Client, index_uid: str, five_tasks: list[int]) -> None:
    t = five_tasks
    page = tasks(http, indexUids=index_uid, limit=2, reverse="true")
    assert uids_of(page) == [t[0], t[1]]
    assert (page["from"], page["next"], page["total"]) == (t[0], t[2], 5)
    page = tasks(http, indexUids=index_uid, limit=3, reverse="true", **{"from": t[3]})
    assert uids_of(page) == [t[3], t[4]]
    assert page["next"] is None
    assert uids_of(tasks(http, indexUids=index_uid, reverse="false")) == t[::-1]


def test_pagination_edges(http: httpx.Client, index_uid: str, five_tasks: list[int]) -> None:
    t = five_tasks
    # limit=0: nothing shown, but `next` points at the first task of the page
    page = tasks(http, indexUids=index_uid, limit=0)
    assert (page["results"], page["total"], page["limit"], page["from"], page["next"]) == (
        [],
        5,
        0,
        None,
        t[4],
    )
    # `from` before every match: empty page, total unchanged
    page = tasks(http, indexUids=index_uid, **{"from": t[0] - 1})
    assert (page["results"], page["total"], page["from"], page["next"]) == ([], 5, None, None)
    page = tasks(http, indexUids=index_uid, reverse="true", **{"from": t[4] + 1})
    assert (page["results"], page["total"], page["from"], page["next"]) == ([], 5, None, None)
    # Meilisearch fetches limit+1 (saturating) and reports limit-1: u32::MAX comes back one lower
    page = tasks(http, indexUids=index_uid, limit=4294967295)
    assert page["limit"] == 4294967294
    assert uids_of(page) == t[::-1]


# -- filters -----------------------------------------------------------------------------------------


def test_filter_uids_and_batch_uids(http: httpx.Client, index_uid: str, five_tasks: list[int]) -> None:
    t = five_tasks
    assert uids_of(tasks(http, uids=f"{t[1]},{t[3]}")) == [t[3], t[1]]
    assert tasks(http, uids=f"{t[1]},{t[3]}")["total"] == 2
    assert uids_of(tasks(http, uids=f"*,{t[1]}", indexUids=index_uid)) == t[::-1]
    batch = http.get(f"/tasks/{t[2]}").json()["batchUid"]
    in_batch = tasks(http, batchUids=batch)
    assert t[2] in uids_of(in_batch)
    assert all(task["batchUid"] == batch for task in in_batch["results"])
    assert tasks(http, batchUids=4294967295)["total"] == 0
    assert uids_of(tasks(http, batchUids="*", indexUids=index_uid)) == t[::-1]


def test_filter_index_uids(http: httpx.Client, index_uid: str) -> None:
    other = f"{index_uid}_other"
    a = add_documents(http, index_uid, [{"id": 1}])
    b = add_documents(http, other, [{"id": 1}])
    done(http, a)
    done(http, b)
    global_task = done(http, cancel(http, f"uids={a}"))["uid"]
    assert uids_of(tasks(http, indexUids=index_uid)) == [a]
    assert uids_of(tasks(http, indexUids=f"{index_uid},{other}")) == [b, a]
    # with an index filter, tasks tied to no index are never listed; `*` means no filter at all
    assert global_task not in uids_of(tasks(http, indexUids=f"{index_uid},{other}", limit=1000))
    assert global_task in uids_of(tasks(http, indexUids="*", uids=global_task))
    assert global_task in uids_of(tasks(http, indexUids=f"*,{index_uid}", uids=global_task))
    assert tasks(http, indexUids=f"{index_uid}_nope")["total"] == 0


def test_filter_statuses_and_types(http: httpx.Client, index_uid: str) -> None:
    ok = done(http, http.post("/indexes", json={"uid": index_uid}).json()["taskUid"])["uid"]
    ko = done(http, http.post("/indexes", json={"uid": index_uid}).json()["taskUid"])["uid"]
    add = done(http, add_documents(http, index_uid, [{"id": 1}]))["uid"]
    assert uids_of(tasks(http, indexUids=index_uid, statuses="succeeded")) == [add, ok]
    assert uids_of(tasks(http, indexUids=index_uid, statuses="failed")) == [ko]
    assert uids_of(tasks(http, indexUids=index_uid, statuses="succeeded,failed")) == [add, ko, ok]
    assert uids_of(tasks(http, indexUids=index_uid, statuses="SUCCEEDED,Failed")) == [add, ko, ok]
    assert uids_of(tasks(http, indexUids=index_uid, statuses="enqueued,processing,canceled")) == []
    assert uids_of(tasks(http, indexUids=index_uid, statuses="*")) == [add, ko, ok]
    assert uids_of(tasks(http, indexUids=index_uid, types="indexCreation")) == [ko, ok]
    assert uids_of(tasks(http, indexUids=index_uid, types="IndexCreation,DOCUMENTADDITIONORUPDATE")) == [
        add,
        ko,
        ok,
    ]
    assert uids_of(tasks(http, indexUids=index_uid, types="*,settingsUpdate")) == [add, ko, ok]
    # AND across parameters, OR within one
    assert uids_of(tasks(http, indexUids=index_uid, types="indexCreation", statuses="failed")) == [ko]
    assert (
        uids_of(tasks(http, indexUids=index_uid, types="documentAdditionOrUpdate", statuses="failed")) == []
    )


def test_filter_canceled_by_with_no_canceled_task(http: httpx.Client, index_uid: str) -> None:
    target = done(http, add_documents(http, index_uid, [{"id": 1}]))["uid"]
    cancelation = done(http, cancel(http, f"uids={target}"))["uid"]
    page = tasks(http, canceledBy=cancelation)
    assert (page["results"], page["total"]) == ([], 0)
    assert tasks(http, canceledBy=f"{cancelation},4294967295")["total"] == 0


def test_six_date_filters_have_exclusive_bounds(http: httpx.Client, index_uid: str) -> None:
    task = done(http, add_documents(http, index_uid, [{"id": 1}]))
    for name in ("Enqueued", "Started", "Finished"):
        at = to_ns(task[f"{name.lower()}At"])
        before, after = f"before{name}At", f"after{name}At"
        assert uids_of(tasks(http, uids=task["uid"], **{after: from_ns(at - 1)})) == [task["uid"]], name
        assert uids_of(tasks(http, uids=task["uid"], **{after: from_ns(at)})) == [], name
        assert uids_of(tasks(http, uids=task["uid"], **{before: from_ns(at + 1)})) == [task["uid"]], name
        assert uids_of(tasks(http, uids=task["uid"], **{before: from_ns(at)})) == [], name
        both = {after: from_ns(at - 1), before: from_ns(at + 1)}
        assert uids_of(tasks(http, uids=task["uid"], **both)) == [task["uid"]], name
        assert uids_of(tasks(http, uids=task["uid"], **{after: "*", before: "*"})) == [task["uid"]], name


def test_date_filters_accept_offsets_and_bare_dates(http: httpx.Client, index_uid: str) -> None:
    task = done(http, add_documents(http, index_uid, [{"id": 1}]))
    at = to_ns(task["enqueuedAt"])
    # the same instant one hour ahead in `+01:00`
    seconds, nanos = divmod(at - 1, 1_000_000_000)
    shifted = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds + 3600)) + f".{nanos:09d}+01:00"
    assert uids_of(tasks(http, uids=task["uid"], afterEnqueuedAt=shifted)) == [task["uid"]]
    # a bare date is midnight UTC; for `after*` it means after the whole day
    day = task["enqueuedAt"][:10]
    next_day = time.strftime("%Y-%m-%d", time.gmtime(at // 1_000_000_000 + 86_400))
    previous_day = time.strftime("%Y-%m-%d", time.gmtime(at // 1_000_000_000 - 86_400))
    assert uids_of(tasks(http, uids=task["uid"], beforeEnqueuedAt=next_day)) == [task["uid"]]
    assert uids_of(tasks(http, uids=task["uid"], beforeEnqueuedAt=day)) == []
    assert uids_of(tasks(http, uids=task["uid"], afterEnqueuedAt=day)) == []
    assert uids_of(tasks(http, uids=task["uid"], afterEnqueuedAt=previous_day)) == [task["uid"]]


# -- cancel and delete: status codes and deletion -------------------------------------------------


def test_cancel_and_delete_answer_200_with_a_summarized_task(http: httpx.Client) -> None:
    for method, path, type_ in (
        ("POST", "/tasks/cancel", "taskCancelation"),
        ("DELETE", "/tasks", "taskDeletion"),
    ):
        r = http.request(method, path, params={"uids": "4294967295"})
        assert r.status_code == 200
        body = r.json()
        assert list(body) == SUMMARY_KEYS
        assert (body["indexUid"], body["status"], body["type"]) == (None, "enqueued", type_)
        finished = done(http, body["taskUid"])
        assert finished["status"] == "succeeded"
        assert finished["details"]["matchedTasks"] == 0


def test_deleted_tasks_are_gone_and_uids_are_not_reused(http: httpx.Client, index_uid: str) -> None:
    first = add_documents(http, index_uid, [{"id": 1}])
    second = add_documents(http, index_uid, [{"id": 2}])
    batch = done(http, second)["batchUid"]
    deletion = done(http, delete(http, f"indexUids={index_uid}&statuses=succeeded"))
    assert deletion["details"] == {
        "matchedTasks": 2,
        "deletedTasks": 2,
        "originalFilter": f"?indexUids={index_uid}&statuses=succeeded",
    }
    for uid in (first, second):
        r = http.get(f"/tasks/{uid}")
        assert r.status_code == 404
        assert r.json() == error("task_not_found", f"Task `{uid}` not found.")
    assert tasks(http, indexUids=index_uid)["total"] == 0
    # a batch whose tasks are all deleted is deleted too
    r = http.get(f"/batches/{batch}")
    assert r.status_code == 404
    assert r.json() == error("batch_not_found", f"Batch `{batch}` not found.")
    # the deletion task keeps its own record, and new uids keep increasing
    assert http.get(f"/tasks/{deletion['uid']}").status_code == 200
    assert add_documents(http, index_uid, [{"id": 3}]) == deletion["uid"] + 1


# -- queue states that need waiting tasks (private server) ---------------------------------------


def test_enqueued_and_processing_task_views(private: httpx.Client) -> None:
    blocker = start_blocker(private, "views_blocker")
    processing = private.get(f"/tasks/{blocker}").json()
    waiting = add_documents(private, "views_waiting", [{"id": 1}])
    enqueued = private.get(f"/tasks/{waiting}").json()
    still_processing(private, blocker)
    stop = cancel(private, f"uids={blocker}")

    assert list(processing) == TASK_KEYS
    assert processing["status"] == "processing"
    assert isinstance(processing["batchUid"], int)
    assert processing["details"] == {"receivedDocuments": BLOCKER_DOCS, "indexedDocuments": None}
    assert DATE_RE.fullmatch(processing["startedAt"])
    assert (processing["finishedAt"], processing["duration"], processing["error"]) == (None, None, None)

    assert list(enqueued) == TASK_KEYS
    assert enqueued["status"] == "enqueued"
    assert enqueued["details"] == {"receivedDocuments": 1, "indexedDocuments": None}
    for key in ("batchUid", "canceledBy", "error", "duration", "startedAt", "finishedAt"):
        assert enqueued[key] is None, key
    done(private, waiting)
    done(private, stop)


def test_cancel_enqueued_and_processing_tasks(private: httpx.Client) -> None:
    blocker = start_blocker(private, "cancel_blocker")
    victims = [add_documents(private, "cancel_victim", [{"id": i}]) for i in range(3)]
    assert (
        private.get("/tasks", params={"statuses": "enqueued", "indexUids": "cancel_victim"}).json()["total"]
        == 3
    )
    still_processing(private, blocker)
    query = f"uids={blocker},{victims[0]},{victims[1]},{victims[2]}"
    cancelation = done(private, cancel(private, query))

    assert cancelation["status"] == "succeeded"
    assert cancelation["details"] == {"matchedTasks": 4, "canceledTasks": 4, "originalFilter": f"?{query}"}
    for uid, received in ((blocker, BLOCKER_DOCS), *((v, 1) for v in victims)):
        task = private.get(f"/tasks/{uid}").json()
        assert list(task) == TASK_KEYS
        assert task["status"] == "canceled"
        assert task["canceledBy"] == cancelation["uid"]
        assert task["details"] == {"receivedDocuments": received, "indexedDocuments": 0}
        assert task["error"] is None
        assert task["batchUid"] == cancelation["batchUid"]
        assert task["startedAt"] == cancelation["startedAt"]
        assert task["finishedAt"] == cancelation["finishedAt"]
        assert task["duration"] == cancelation["duration"]

    page = tasks(private, canceledBy=cancelation["uid"])
    assert uids_of(page) == [*victims[::-1], blocker]
    assert page["total"] == 4
    assert uids_of(tasks(private, statuses="canceled", indexUids="cancel_victim")) == victims[::-1]
    # nothing of the canceled additions was applied
    assert private.get("/indexes/cancel_victim").status_code == 404


def test_deletion_never_deletes_enqueued_tasks(private: httpx.Client) -> None:
    blocker = start_blocker(private, "delete_blocker")
    waiting = [add_documents(private, "delete_waiting", [{"id": i}]) for i in range(2)]
    deletion = delete(private, "indexUids=delete_waiting")
    still_processing(private, blocker)
    stop = cancel(private, f"uids={blocker}")

    finished = done(private, deletion)
    assert finished["details"] == {
        "matchedTasks": 2,
        "deletedTasks": 0,
        "originalFilter": "?indexUids=delete_waiting",
    }
    for uid in waiting:
        assert done(private, uid)["status"] == "succeeded"
    assert done(private, stop)["details"]["canceledTasks"] == 1
