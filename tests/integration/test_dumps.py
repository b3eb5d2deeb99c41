"""Dumps through real servers: create one with `POST /dumps`, start a fresh server with `--import-dump`,
and find every document, setting, key, task and search answer again; plus a dump written by hand from
Meilisearch's v6 format description, and the start-up rules of `--import-dump`.
"""

from __future__ import annotations

import io
import tarfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from pyroaring import BitMap

from hanzo_engine.auth.keys import generate_key_value
from hanzo_engine.dump import DumpReader
from tests.conftest import MASTER_KEY, ServerProcess, wait_task

AUTH = {"Authorization": f"Bearer {MASTER_KEY}"}
JSON = {**AUTH, "Content-Type": "application/json"}
TASK_FIELDS_SET_AT_RUN = ("status", "startedAt", "finishedAt", "duration")


def client(srv: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=srv.url, timeout=60, headers=AUTH)


def post(http: httpx.Client, path: str, body: Any, method: str = "POST") -> int:
    r = http.request(method, path, content=msgspec.json.encode(body), headers=JSON)
    assert r.status_code in (200, 202), r.text
    return int(r.json()["taskUid"])


def all_tasks(http: httpx.Client) -> list[dict[str, Any]]:
    page = http.get("/tasks", params={"limit": 10_000}).json()
    return list(reversed(page["results"]))


def all_documents(http: httpx.Client, uid: str) -> list[dict[str, Any]]:
    return list(http.get(f"/indexes/{uid}/documents", params={"limit": 100_000}).json()["results"])


def wait_idle(http: httpx.Client, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not http.get("/tasks", params={"statuses": "enqueued,processing"}).json()["results"]:
            return
        time.sleep(0.02)
    raise TimeoutError("tasks still pending")


def populate(http: httpx.Client) -> dict[str, Any]:
    """Two indexes with settings and documents, a custom key, a failed and a canceled task."""
    movies = [
        {
            "id": i,
            "title": f"movie {i} the quick brown fox",
            "genre": ["drama", "comedy"][i % 2],
            "nested": {"year": 1990 + i % 30},
        }
        for i in range(300)
    ]
    post(http, "/indexes", {"uid": "movies", "primaryKey": "id"})
    post(
        http,
        "/indexes/movies/settings",
        {
            "filterableAttributes": ["genre"],
            "sortableAttributes": ["nested.year"],
            "stopWords": ["the"],
            "synonyms": {"film": ["movie"]},
            "rankingRules": ["words", "typo", "sort", "proximity", "exactness"],
            "typoTolerance": {"minWordSizeForTypos": {"oneTypo": 4}},
            "pagination": {"maxTotalHits": 50},
            # a loaded CI machine must not hit the search cutoff, which would make the compared pages differ
            "searchCutoffMs": 60000,
        },
        method="PATCH",
    )
    post(http, "/indexes/movies/documents", movies)
    post(http, "/indexes/movies/documents/delete-batch", [0, 1, 2])
    post(
        http,
        "/indexes/books/documents",
        [{"book_id": "b-1", "title": "Dune"}, {"book_id": "b-2", "title": "Emma"}],
    )
    failed = post(http, "/indexes/books/documents", [{"title": "no id"}])
    key = http.post(
        "/keys",
        json={
            "name": "ci",
            "description": "dump test",
            "actions": ["search", "documents.*"],
            "indexes": ["movies", "bo*"],
            "expiresAt": "2099-01-01T00:00:00Z",
        },
        headers=AUTH,
    ).json()
    features = http.patch("/experimental-features", json={"containsFilter": True, "network": True})
    assert features.status_code == 200, features.text
    wait_idle(http)
    assert http.get(f"/tasks/{failed}").json()["status"] == "failed"
    return {"key": key}


def snapshot_state(http: httpx.Client) -> dict[str, Any]:
    """Everything a client can read back."""
    state: dict[str, Any] = {
        "indexes": http.get("/indexes").json()["results"],
        "keys": http.get("/keys").json(),
        "features": http.get("/experimental-features").json(),
    }
    for index in state["indexes"]:
        uid = index["uid"]
        state[uid] = {
            "settings": http.get(f"/indexes/{uid}/settings").json(),
            "documents": all_documents(http, uid),
            "stats": http.get(f"/indexes/{uid}/stats").json(),
        }
        # page-level sizes depend on the write history, not on the content
        for size in ("rawDocumentDbSize", "avgDocumentSize", "indexSize", "usedIndexSize"):
            state[uid]["stats"].pop(size)
    state["search"] = http.post(
        "/indexes/movies/search",
        json={"q": "film quick", "filter": "genre = drama", "sort": ["nested.year:desc"], "limit": 20},
    ).json()
    state["search"].pop("processingTimeMs", None)
    state["search"].pop("requestUid", None)  # a fresh UUIDv7 per request
    return state


def test_dump_round_trip_through_real_servers(tmp_path: Path) -> None:
    source = ServerProcess(
        tmp_path / "src.ms", extra_args=["--master-key", MASTER_KEY, "--dump-dir", str(tmp_path / "dumps")]
    ).start()
    try:
        with client(source) as http:
            populate(http)
            # Keep the writer busy, then queue a small addition and the dump: the dump overtakes the
            # addition (dumps go before index tasks), so the addition is dumped still enqueued.
            big = [
                {"id": 10_000 + i, "title": f"filler {i} " + "lorem ipsum " * 10, "genre": "filler"}
                for i in range(20_000)
            ]
            post(http, "/indexes/movies/documents", big)
            late = post(http, "/indexes/books/documents", [{"book_id": "b-3", "title": "Ulysses"}])
            dump_task = post(http, "/dumps", None)
            done = wait_task(http, dump_task, timeout=60)
            assert done["status"] == "succeeded", done
            dump_uid = done["details"]["dumpUid"]
            assert len(dump_uid) == 18 and dump_uid[8] == "-"
            wait_idle(http)
            before = snapshot_state(http)
            tasks_before = all_tasks(http)
            # the routes are guarded by `dumps.create` / `snapshots.create`, global actions
            reader = http.post(
                "/keys", json={"actions": ["search", "tasks.*"], "indexes": ["*"], "expiresAt": None}
            ).json()["key"]
            for path in ("/dumps", "/snapshots"):
                refused = http.post(path, headers={"Authorization": f"Bearer {reader}"})
                assert refused.status_code == 403 and refused.json()["code"] == "invalid_api_key"
            assert http.post("/dumps", headers={"Authorization": ""}).status_code == 401
            http.delete(f"/keys/{reader}")
    finally:
        source.stop()

    dump_file = tmp_path / "dumps" / f"{dump_uid}.dump"
    with DumpReader(dump_file) as reader:
        dumped = {line["uid"]: (line, payload) for line, payload in reader.tasks()}
        assert reader.version == "V6"
    # the late addition was enqueued when dumped, with its payload; the dump recorded itself as done
    assert dumped[late][0]["status"] == "enqueued" and dumped[late][1] is not None
    assert dumped[dump_task][0]["status"] == "succeeded"

    target = ServerProcess(
        tmp_path / "dst.ms", extra_args=["--master-key", MASTER_KEY, "--import-dump", str(dump_file)]
    ).start()
    try:
        with client(target) as http:
            wait_idle(http)
            after = snapshot_state(http)
            tasks_after = all_tasks(http)
    finally:
        target.stop()

    # the index of the re-run task was touched at a different time on each server
    for state in (before, after):
        for index in state["indexes"]:
            if index["uid"] == "books":
                index.pop("updatedAt")
    assert after == before
    assert [t["uid"] for t in tasks_after] == [t["uid"] for t in tasks_before]
    for old, new in zip(tasks_before, tasks_after, strict=True):
        if old["uid"] in (late, dump_task):
            # ran again after the import / finished at a faked time in the dump: same task, same outcome
            assert {k: v for k, v in new.items() if k not in TASK_FIELDS_SET_AT_RUN} == {
                k: v for k, v in old.items() if k not in TASK_FIELDS_SET_AT_RUN
            }
            assert new["status"] == old["status"] == "succeeded"
        else:
            assert new == old
    assert {"book_id": "b-3", "title": "Ulysses"} in after["books"]["documents"]
    assert after["features"]["containsFilter"] is True and after["features"]["metrics"] is False


# -- a dump written from the format description ----------------------------------------------------


def _tar(members: dict[str, bytes], path: Path, prefix: str = "") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _lines(values: list[Any]) -> bytes:
    return b"".join(msgspec.json.encode(v) + b"\n" for v in values)


KEY_UID = "9f8a34da-b6b2-42f0-939b-dbd4c3448655"
FIXTURE_SETTINGS = {
    "displayedAttributes": ["*"],
    "searchableAttributes": ["name", "race"],
    "filterableAttributes": ["race", "age"],
    "sortableAttributes": ["age"],
    "rankingRules": ["words", "typo", "proximity", "attribute", "sort", "exactness"],
    "stopWords": ["the"],
    "nonSeparatorTokens": [],
    "separatorTokens": [],
    "dictionary": [],
    "synonyms": {"pup": ["puppy"]},
    "distinctAttribute": None,
    "proximityPrecision": "byWord",
    "typoTolerance": {
        "enabled": True,
        "minWordSizeForTypos": {"oneTypo": 5, "twoTypos": 9},
        "disableOnWords": [],
        "disableOnAttributes": [],
    },
    "faceting": {"maxValuesPerFacet": 111, "sortFacetValuesBy": {"age": "count"}},
    "pagination": {"maxTotalHits": 1000},
    "embedders": {},
    "searchCutoffMs": None,
    # a setting of a newer Meilisearch this build does not know: skipped, not fatal
    "chat": {"description": "dogs"},
}


def meilisearch_v6_dump(path: Path) -> Path:
    """A dump shaped as Meilisearch v1.x writes it (crates/dump writer and its test dump)."""
    doggos = [
        {"id": 1, "race": "golden retriever", "name": "paul", "age": 4},
        {"id": 2, "race": "bernese mountain", "name": "tamo", "age": 6},
        {"id": 3, "race": "great pyrenees", "name": "patou", "age": 5},
    ]
    tasks = [
        {
            "uid": 0,
            "batchUid": None,
            "indexUid": "doggos",
            "status": "succeeded",
            "type": {
                "documentImport": {
                    "primary_key": "id",
                    "method": "UpdateDocuments",
                    "documents_count": 3,
                    "allow_index_creation": True,
                }
            },
            "details": {"DocumentAdditionOrUpdate": {"received_documents": 3, "indexed_documents": 3}},
            "enqueuedAt": "2022-11-11T00:00:00Z",
            "startedAt": "2022-11-20T00:00:00Z",
            "finishedAt": "2022-11-21T00:00:00Z",
        },
        {
            "uid": 1,
            "batchUid": None,
            "indexUid": "doggos",
            "status": "failed",
            "type": {
                "settings": {
                    "settings": {"rankingRules": ["words"]},
                    "is_deletion": False,
                    "allow_index_creation": True,
                }
            },
            "details": {"SettingsUpdate": {"settings": {"rankingRules": ["words"]}}},
            "error": {
                "message": "Index `doggos`: boom.",
                "code": "internal",
                "type": "internal",
                "link": "https://docs.meilisearch.com/errors#internal",
            },
            "enqueuedAt": "2022-11-12T00:00:00.5Z",
            "startedAt": "2022-11-20T00:00:01Z",
            "finishedAt": "2022-11-21T00:00:01Z",
        },
        {
            "uid": 2,
            "batchUid": None,
            "indexUid": None,
            "status": "succeeded",
            "type": {"taskCancelation": {"query": "?uids=0", "tasks": list(BitMap([0]).serialize())}},
            "details": {
                "TaskCancelation": {"matched_tasks": 1, "canceled_tasks": 0, "original_filter": "?uids=0"}
            },
            "enqueuedAt": "2022-11-13T00:00:00Z",
            "startedAt": "2022-11-20T00:00:02Z",
            "finishedAt": "2022-11-21T00:00:02Z",
        },
        {
            "uid": 3,
            "batchUid": None,
            "indexUid": "doggos",
            "status": "enqueued",
            "type": {
                "documentImport": {
                    "primary_key": None,
                    "method": "ReplaceDocuments",
                    "documents_count": 2,
                    "allow_index_creation": True,
                }
            },
            "details": {"DocumentAdditionOrUpdate": {"received_documents": 2, "indexed_documents": None}},
            "enqueuedAt": "2022-11-14T00:00:00Z",
        },
        {
            "uid": 5,
            "batchUid": None,
            "indexUid": "catto",
            "status": "enqueued",
            "type": "indexDeletion",
            "enqueuedAt": "2022-11-15T00:00:00Z",
        },
    ]
    members = {
        "metadata.json": msgspec.json.encode(
            {"dumpVersion": "V6", "dbVersion": "1.12.0", "dumpDate": "2022-11-21T00:00:00Z"}
        ),
        "instance_uid.uuid": b"9e15e977-f2ae-4761-943f-1eaf75fd736d",
        "keys.jsonl": _lines(
            [
                {
                    "description": "The main key to manage all the doggos",
                    "name": "doggos_key",
                    "uid": KEY_UID,
                    "actions": ["documents.*"],
                    "indexes": ["doggos"],
                    "expires_at": "4130-03-14T12:21:00Z",
                    "created_at": "1960-11-15T00:00:00Z",
                    "updated_at": "2022-11-10T00:00:00Z",
                },
                {
                    "uid": "4622f717-1c00-47bb-a494-39d76a49b591",
                    "actions": ["*"],
                    "indexes": ["*"],
                    "expires_at": None,
                    "created_at": "2022-01-01T00:01:00Z",
                    "updated_at": "2022-05-04T17:25:00Z",
                },
            ]
        ),
        "experimental-features.json": b'{"metrics": false}',
        "tasks/queue.jsonl": _lines(tasks),
        "tasks/update_files/3.jsonl": _lines([{"id": 4, "race": "leonberg"}, {"id": 5, "race": "patou"}]),
        "indexes/doggos/metadata.json": msgspec.json.encode(
            {
                "uid": "doggos",
                "primaryKey": "id",
                "createdAt": "2022-11-20T12:00:00Z",
                "updatedAt": "2022-11-21T00:00:00Z",
            }
        ),
        "indexes/doggos/settings.json": msgspec.json.encode(FIXTURE_SETTINGS),
        "indexes/doggos/documents.jsonl": _lines(doggos),
    }
    # tar-rs names members `./x` when a directory is appended as "."; the reader must accept both
    return _tar(members, path, prefix="./")


def test_a_meilisearch_v6_dump_imports(tmp_path: Path) -> None:
    dump = meilisearch_v6_dump(tmp_path / "meili.dump")
    srv = ServerProcess(
        tmp_path / "data.ms", extra_args=["--master-key", MASTER_KEY, "--import-dump", str(dump)]
    )
    srv.start()
    try:
        with client(srv) as http:
            wait_idle(http)
            docs = all_documents(http, "doggos")
            assert [d["id"] for d in docs] == [1, 2, 3, 4, 5]
            assert docs[0] == {"id": 1, "race": "golden retriever", "name": "paul", "age": 4}
            index = http.get("/indexes/doggos").json()
            assert index["createdAt"] == "2022-11-20T12:00:00Z" and index["primaryKey"] == "id"
            # the same settings sent to a fresh index give the same stored settings
            control = {k: v for k, v in FIXTURE_SETTINGS.items() if k != "chat"}
            control_task = post(http, "/indexes/control/settings", control, method="PATCH")
            assert control_task == 6  # uids continue after the dump's last task (5)
            wait_task(http, control_task)
            assert http.get("/indexes/doggos/settings").json() == http.get("/indexes/control/settings").json()
            # keys keep their uid, so their value under the same master key
            key = http.get(f"/keys/{KEY_UID}").json()
            assert key["key"] == generate_key_value(uuid.UUID(KEY_UID), MASTER_KEY)
            assert (key["name"], key["actions"], key["indexes"]) == (
                "doggos_key",
                ["documents.*"],
                ["doggos"],
            )
            assert key["expiresAt"] == "4130-03-14T12:21:00Z" and key["createdAt"] == "1960-11-15T00:00:00Z"
            assert http.get("/keys").json()["total"] == 2
            tasks = {t["uid"]: t for t in all_tasks(http)}
            assert tasks[0]["details"] == {"receivedDocuments": 3, "indexedDocuments": 3}
            assert tasks[0]["enqueuedAt"] == "2022-11-11T00:00:00Z" and tasks[0]["duration"] == "P1D"
            assert tasks[1]["status"] == "failed" and tasks[1]["error"]["message"] == "Index `doggos`: boom."
            assert tasks[1]["enqueuedAt"] == "2022-11-12T00:00:00.5Z"
            assert tasks[2]["details"] == {"matchedTasks": 1, "canceledTasks": 0, "originalFilter": "?uids=0"}
            # the enqueued tasks ran once the server started
            assert tasks[3]["status"] == "succeeded" and tasks[3]["details"]["indexedDocuments"] == 2
            assert tasks[5]["status"] == "failed" and tasks[5]["error"]["code"] == "index_not_found"
            hits = http.post("/indexes/doggos/search", json={"q": "patou"}).json()["hits"]
            assert {h["id"] for h in hits} == {3, 5}
    finally:
        srv.stop()


def test_import_dump_start_up_rules(tmp_path: Path) -> None:
    dump = meilisearch_v6_dump(tmp_path / "meili.dump")
    existing = ServerProcess(tmp_path / "data.ms").start()
    existing.stop()
    with pytest.raises(RuntimeError) as exc:
        ServerProcess(tmp_path / "data.ms", extra_args=["--import-dump", str(dump)]).start()
    assert "database already exists at" in str(exc.value) and "try to delete it or rename it" in str(
        exc.value
    )
    with pytest.raises(RuntimeError) as exc:
        ServerProcess(
            tmp_path / "new.ms", extra_args=["--import-dump", str(tmp_path / "missing.dump")]
        ).start()
    assert "dump doesn't exist at" in str(exc.value)
    assert not (tmp_path / "new.ms").exists()  # a refused start leaves nothing behind
    srv = ServerProcess(
        tmp_path / "data.ms", extra_args=["--import-dump", str(dump), "--ignore-dump-if-db-exists"]
    ).start()
    try:
        assert httpx.get(f"{srv.url}/indexes").json()["total"] == 0  # the existing (empty) database
    finally:
        srv.stop()
    # a dump that is not a dump fails the start and removes the half-built database
    bad = tmp_path / "bad.dump"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(RuntimeError) as exc:
        ServerProcess(tmp_path / "bad.ms", extra_args=["--import-dump", str(bad)]).start()
    assert "importing the dump" in str(exc.value)
    assert not (tmp_path / "bad.ms").exists()
