"""Snapshots through real servers: taken while searches keep running, restored with `--import-snapshot`
into an equal instance; `--schedule-snapshot`; the start-up rules of `--import-snapshot`.
"""

from __future__ import annotations

import os
import stat
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from hanzo_engine.apitypes.tasks import parse_timestamp
from tests.conftest import MASTER_KEY, ServerProcess, wait_task

AUTH = {"Authorization": f"Bearer {MASTER_KEY}"}
JSON = {**AUTH, "Content-Type": "application/json"}


def post(http: httpx.Client, path: str, body: Any, method: str = "POST") -> int:
    r = http.request(method, path, content=msgspec.json.encode(body), headers=JSON)
    assert r.status_code in (200, 202), r.text
    return int(r.json()["taskUid"])


def state(http: httpx.Client) -> dict[str, Any]:
    out: dict[str, Any] = {"indexes": http.get("/indexes").json(), "keys": http.get("/keys").json()}
    for index in out["indexes"]["results"]:
        index.pop("updatedAt")  # the task left enqueued in the copy runs again, at another time
    for index in out["indexes"]["results"]:
        uid = index["uid"]
        out[uid] = {
            "settings": http.get(f"/indexes/{uid}/settings").json(),
            "documents": http.get(f"/indexes/{uid}/documents", params={"limit": 100_000}).json(),
        }
    return out


def tasks(http: httpx.Client) -> list[dict[str, Any]]:
    return list(http.get("/tasks", params={"limit": 1000}).json()["results"])


# Timing-sensitive on a loaded 2-core machine (searches must overlap a snapshot that can take ~100 ms);
# one retry, never more, so a real failure still fails.
@pytest.mark.flaky(reruns=1)
def test_snapshot_under_search_load_restores_an_equal_instance(tmp_path: Path) -> None:
    snapshots = tmp_path / "snaps"
    srv = ServerProcess(
        tmp_path / "data.ms", extra_args=["--master-key", MASTER_KEY, "--snapshot-dir", str(snapshots)]
    ).start()
    searches: list[tuple[float, float]] = []
    errors: list[str] = []
    stop = threading.Event()

    def search_loop() -> None:
        with httpx.Client(base_url=srv.url, timeout=30, headers=AUTH) as http:
            while not stop.is_set():
                began = time.time()
                r = http.post("/indexes/articles/search", json={"q": "snapshot words", "limit": 5})
                if r.status_code != 200 or not r.json()["hits"]:
                    errors.append(r.text)
                searches.append((began, time.time()))

    def docs(start: int, n: int) -> list[dict[str, Any]]:
        return [
            {"id": i, "title": f"article {i} snapshot words", "body": "consistent copy " * 20}
            for i in range(start, start + n)
        ]

    try:
        with httpx.Client(base_url=srv.url, timeout=60, headers=AUTH) as http:
            post(
                http,
                "/indexes/articles/settings",
                {"filterableAttributes": ["id"], "stopWords": ["a"]},
                method="PATCH",
            )
            wait_task(http, post(http, "/indexes/articles/documents", docs(0, 10_000)), timeout=60)
            http.post(
                "/keys",
                json={"name": "reader", "actions": ["search"], "indexes": ["articles"], "expiresAt": None},
            )
            worker = threading.Thread(target=search_loop)
            worker.start()
            # While the writer indexes `more`, queue `late` then the snapshot: the snapshot overtakes
            # `late` (snapshots go before index tasks), so the copy holds `late` enqueued, with its payload.
            more = post(http, "/indexes/articles/documents", docs(10_000, 10_000))
            late = post(http, "/indexes/articles/documents", [{"id": 99_999, "title": "late snapshot words"}])
            snapshot_task = post(http, "/snapshots", None)
            # generous: on a loaded 2-core machine indexing `more` and the copy under search load are slow
            done = wait_task(http, snapshot_task, timeout=240)
            wait_task(http, late, timeout=240)
            stop.set()
            worker.join()
            assert done["status"] == "succeeded", done
            assert (
                http.get(f"/tasks/{more}").json()["batchUid"]
                < done["batchUid"]
                < http.get(f"/tasks/{late}").json()["batchUid"]
            )
            assert not errors, errors[:3]
            # searches were answered while the snapshot was being taken
            began, ended = (parse_timestamp(done[k]) / 1e9 for k in ("startedAt", "finishedAt"))
            assert any(s < ended and e > began for s, e in searches), (began, ended, len(searches))
            expected = state(http)
            expected_tasks = tasks(http)
    finally:
        stop.set()
        srv.stop()

    snapshot = snapshots / "data.ms.snapshot"
    assert stat.S_IMODE(snapshot.stat().st_mode) == 0o444
    with tarfile.open(snapshot) as tar:
        names = set(tar.getnames())
    assert {"VERSION", "instance-uid", "tasks/data.mdb", "auth/data.mdb"} <= names
    assert any(n.startswith("indexes/") and n.endswith("/data.mdb") for n in names)

    restored = ServerProcess(
        tmp_path / "restored.ms", extra_args=["--master-key", MASTER_KEY, "--import-snapshot", str(snapshot)]
    ).start()
    try:
        with httpx.Client(base_url=restored.url, timeout=60, headers=AUTH) as http:
            wait_task(http, late)  # the enqueued addition runs again from the copied payload
            assert state(http) == expected
            got = tasks(http)
    finally:
        restored.stop()
    by_uid = {t["uid"]: t for t in got}
    # the snapshot task is recorded as done in its own copy (no second snapshot on restore)
    assert by_uid[snapshot_task]["status"] == "succeeded"
    for task in expected_tasks:
        if task["uid"] not in (snapshot_task, late):
            assert by_uid[task["uid"]] == task
    assert by_uid[late]["status"] == "succeeded" and by_uid[late]["details"]["indexedDocuments"] == 1


def test_schedule_snapshot_and_import_snapshot_rules(tmp_path: Path) -> None:
    snapshots = tmp_path / "snaps"
    srv = ServerProcess(
        tmp_path / "data.ms", extra_args=["--snapshot-dir", str(snapshots), "--schedule-snapshot", "1"]
    ).start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done = httpx.get(
                f"{srv.url}/tasks", params={"types": "snapshotCreation", "statuses": "succeeded"}
            )
            if done.json()["results"]:
                break
            time.sleep(0.1)
        else:
            pytest.fail("no scheduled snapshot was taken")
    finally:
        srv.stop()
    snapshot = snapshots / "data.ms.snapshot"
    assert snapshot.exists()
    with pytest.raises(RuntimeError) as exc:
        ServerProcess(tmp_path / "data.ms", extra_args=["--import-snapshot", str(snapshot)]).start()
    assert "database already exists at" in str(exc.value)
    with pytest.raises(RuntimeError) as exc:
        ServerProcess(tmp_path / "other.ms", extra_args=["--import-snapshot", str(tmp_path / "none")]).start()
    assert "snapshot doesn't exist at" in str(exc.value)
    ignored = ServerProcess(
        tmp_path / "data.ms",
        extra_args=["--import-snapshot", str(snapshot), "--ignore-snapshot-if-db-exists"],
    ).start()
    ignored.stop()
    fresh = ServerProcess(
        tmp_path / "fresh.ms",
        extra_args=["--import-snapshot", str(tmp_path / "none"), "--ignore-missing-snapshot"],
    ).start()
    fresh.stop()
    # the restored database is writable although the snapshot file is read-only
    restored = ServerProcess(
        tmp_path / "restored.ms", extra_args=["--import-snapshot", str(snapshot)]
    ).start()
    try:
        with httpx.Client(base_url=restored.url, timeout=30) as http:
            uid = http.post("/indexes", json={"uid": "after_restore"}).json()["taskUid"]
            assert wait_task(http, uid)["status"] == "succeeded"
    finally:
        restored.stop()
    assert os.access(tmp_path / "restored.ms" / "tasks" / "data.mdb", os.W_OK)


def test_a_server_refuses_a_directory_in_use_and_a_foreign_format(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms").start()
    try:
        with pytest.raises(RuntimeError) as exc:
            ServerProcess(tmp_path / "data.ms").start()
        assert "is in use by a hanzo-engine server (pid" in str(exc.value)
    finally:
        srv.stop()
    (tmp_path / "data.ms" / "VERSION").write_text("1.12.0")
    with pytest.raises(RuntimeError) as exc:
        ServerProcess(tmp_path / "data.ms").start()
    assert "was created by Meilisearch v1.12.0" in str(exc.value) and "--import-dump" in str(exc.value)
    (tmp_path / "data.ms" / "VERSION").write_text("hanzo-engine-db 7\n")
    with pytest.raises(RuntimeError) as exc:
        ServerProcess(tmp_path / "data.ms").start()
    assert "Database format version 7 is higher than the format of this hanzo-engine (1)" in str(exc.value)
