"""Crash safety: every acknowledged task ends succeeded or failed, no document lost or doubled.

Two kinds of crash:
- `kill -9` of the real server while tasks are enqueued and a batch is processing, at several moments;
- deterministic crashes injected at the two dangerous points of a batch (HANZO_CRASH_POINT): after the
  tasks were marked processing, and after the index commit but before the tasks were marked finished
  (the window the `applied-batch` marker exists for).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from tests.conftest import ServerProcess, wait_task

DOCS_PER_TASK = 3000


def payload(task_no: int, version: int = 0) -> bytes:
    docs = [
        {
            "id": task_no * DOCS_PER_TASK + i,
            "title": f"document {i} of task {task_no}",
            "version": version,
            "body": "lorem ipsum dolor sit amet " * 4,
        }
        for i in range(DOCS_PER_TASK)
    ]
    return msgspec.json.encode(docs)


def all_documents(http: httpx.Client, uid: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = http.get(f"/indexes/{uid}/documents", params={"offset": offset, "limit": 1000}).json()
        out.extend(page["results"])
        offset += 1000
        if offset >= page["total"]:
            return out


def wait_all(http: httpx.Client, uids: list[int], timeout: float = 120) -> list[dict[str, Any]]:
    return [wait_task(http, uid, timeout) for uid in uids]


def enqueue(http: httpx.Client, uid: str, n_tasks: int, start: int = 0) -> list[int]:
    acked = []
    for t in range(start, start + n_tasks):
        r = http.post(
            f"/indexes/{uid}/documents", content=payload(t), headers={"Content-Type": "application/json"}
        )
        assert r.status_code == 202, r.text
        acked.append(r.json()["taskUid"])
    return acked


def check_outcome(http: httpx.Client, uid: str, acked: list[int], n_tasks: int) -> None:
    tasks = wait_all(http, acked)
    assert [t["status"] for t in tasks] == ["succeeded"] * len(acked)
    assert all(t["details"]["indexedDocuments"] == DOCS_PER_TASK for t in tasks)
    docs = all_documents(http, uid)
    ids = [d["id"] for d in docs]
    assert len(ids) == len(set(ids)), "a document was doubled"
    assert set(ids) == set(range(n_tasks * DOCS_PER_TASK)), "a document was lost"
    stats = http.get(f"/indexes/{uid}/stats").json()
    assert stats["numberOfDocuments"] == n_tasks * DOCS_PER_TASK


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.3])
def test_kill_9_while_tasks_are_enqueued_and_processing(tmp_path: Path, delay: float) -> None:
    srv = ServerProcess(tmp_path / "data.ms").start()
    n_tasks = 12
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            acked = enqueue(http, "crash", n_tasks)
            time.sleep(delay)
            srv.kill9()
        srv.start()
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            check_outcome(http, "crash", acked, n_tasks)
            uids = [t["uid"] for t in http.get("/tasks", params={"limit": 1000}).json()["results"]]
            assert sorted(uids) == sorted(acked), "a task was lost or invented"
    finally:
        srv.stop()


@pytest.mark.parametrize("point", ["after-start-batch", "after-apply-batch"])
def test_injected_crash_inside_a_batch(tmp_path: Path, point: str) -> None:
    srv = ServerProcess(tmp_path / "data.ms", env={"HANZO_CRASH_POINT": point}).start()
    n_tasks = 3
    with httpx.Client(base_url=srv.url, timeout=30) as http:
        acked = []
        for t in range(n_tasks):
            try:
                r = http.post(
                    "/indexes/crash/documents",
                    content=payload(t),
                    headers={"Content-Type": "application/json"},
                )
            except httpx.TransportError:
                break  # the server died under us: this write was not acknowledged
            assert r.status_code == 202
            acked.append(r.json()["taskUid"])
    assert srv.proc is not None
    srv.proc.wait(timeout=30)
    assert srv.proc.returncode == 137, srv.output()
    srv.proc = None
    srv.env = {}
    srv.start()
    with httpx.Client(base_url=srv.url, timeout=30) as http:
        # A write the server stored but died before answering may exist too (it was never acknowledged);
        # every task that exists must end succeeded, with its documents exactly once.
        stored = sorted(t["uid"] for t in http.get("/tasks").json()["results"])
        assert set(acked) <= set(stored)
        acked = stored
        check_outcome(http, "crash", acked, len(acked))
        # The re-run kept its batch: the recovered tasks are reported under one finished batch each.
        for task in wait_all(http, acked):
            batch = http.get(f"/batches/{task['batchUid']}").json()
            assert batch["finishedAt"] is not None
    srv.stop()


def test_restart_keeps_finished_state(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms").start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            acked = enqueue(http, "durable", 2)
            before = wait_all(http, acked)
        srv.stop()
        srv.start()
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            after = [http.get(f"/tasks/{uid}").json() for uid in acked]
            assert after == before
            r = http.post(
                "/indexes/durable/documents", content=payload(5), headers={"Content-Type": "application/json"}
            )
            assert r.json()["taskUid"] == max(acked) + 1, "task uids must keep increasing across restarts"
    finally:
        srv.stop()
