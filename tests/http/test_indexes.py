"""Index routes over raw HTTP: response shapes and values, compared with Meilisearch's.

Covers create / get / list / update (primary key, rename) / delete / swap, the summarized task and
finished task bodies, request decompression, trailing slashes and the empty-bodied 404/405 answers.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import ServerProcess, wait_task

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
SUMMARY_KEYS = ["taskUid", "indexUid", "status", "type", "enqueuedAt"]
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


def assert_summary(res: httpx.Response, index_uid: str | None, type_: str) -> int:
    assert res.status_code == 202, res.text
    body = res.json()
    assert list(body) == SUMMARY_KEYS
    assert body["indexUid"] == index_uid
    assert body["status"] == "enqueued"
    assert body["type"] == type_
    assert RFC3339.match(body["enqueuedAt"]), body
    uid: int = body["taskUid"]
    return uid


def succeeded(http: httpx.Client, task_uid: int) -> dict[str, Any]:
    task = wait_task(http, task_uid)
    assert task["status"] == "succeeded", task
    assert list(task) == TASK_KEYS
    assert task["error"] is None and task["canceledBy"] is None
    return task


def create(http: httpx.Client, uid: str, primary_key: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"uid": uid}
    if primary_key is not None:
        body["primaryKey"] = primary_key
    return succeeded(http, assert_summary(http.post("/indexes", json=body), uid, "indexCreation"))


def add_documents(http: httpx.Client, uid: str, docs: Any) -> dict[str, Any]:
    res = http.post(f"/indexes/{uid}/documents", json=docs)
    return succeeded(http, assert_summary(res, uid, "documentAdditionOrUpdate"))


def test_create_index_without_primary_key(http: httpx.Client, index_uid: str) -> None:
    task = create(http, index_uid)
    assert task["indexUid"] == index_uid
    assert task["type"] == "indexCreation"
    assert task["details"] == {"primaryKey": None}
    res = http.get(f"/indexes/{index_uid}")
    assert res.status_code == 200
    body = res.json()
    assert list(body) == ["uid", "createdAt", "updatedAt", "primaryKey"]
    assert body["uid"] == index_uid
    assert body["primaryKey"] is None
    assert RFC3339.match(body["createdAt"]) and RFC3339.match(body["updatedAt"])


def test_create_index_with_primary_key(http: httpx.Client, index_uid: str) -> None:
    task = create(http, index_uid, "primary")
    assert task["details"] == {"primaryKey": "primary"}
    assert http.get(f"/indexes/{index_uid}").json()["primaryKey"] == "primary"


def test_create_index_with_null_primary_key(http: httpx.Client, index_uid: str) -> None:
    res = http.post("/indexes", json={"uid": index_uid, "primaryKey": None})
    task = succeeded(http, assert_summary(res, index_uid, "indexCreation"))
    assert task["details"] == {"primaryKey": None}


def test_create_index_gzip_and_deflate_bodies(http: httpx.Client, index_uid: str) -> None:
    body = json.dumps({"uid": f"{index_uid}_gz", "primaryKey": None}).encode()
    res = http.post(
        "/indexes",
        content=gzip.compress(body),
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    succeeded(http, assert_summary(res, f"{index_uid}_gz", "indexCreation"))
    body = json.dumps({"uid": f"{index_uid}_zl"}).encode()
    res = http.post(
        "/indexes",
        content=zlib.compress(body),
        headers={"Content-Type": "application/json", "Content-Encoding": "deflate"},
    )
    succeeded(http, assert_summary(res, f"{index_uid}_zl", "indexCreation"))
    assert http.get(f"/indexes/{index_uid}_gz").status_code == 200
    assert http.get(f"/indexes/{index_uid}_zl").status_code == 200


def test_list_indexes_sorted_and_paginated(http: httpx.Client, index_uid: str) -> None:
    # created out of order; listed in byte order of their uid ("B" < "_" < "a")
    names = [f"{index_uid}_b", f"{index_uid}_a", f"{index_uid}_B", f"{index_uid}_c"]
    for name in names:
        create(http, name)
    everything = http.get("/indexes", params={"limit": 10_000}).json()
    uids = [index["uid"] for index in everything["results"]]
    assert uids == sorted(uids)
    assert everything["offset"] == 0 and everything["limit"] == 10_000
    assert everything["total"] == len(uids)
    mine = [u for u in uids if u.startswith(f"{index_uid}_")]
    assert mine == sorted(names)
    for index in everything["results"]:
        assert list(index) == ["uid", "createdAt", "updatedAt", "primaryKey"]

    default = http.get("/indexes").json()
    assert list(default) == ["results", "offset", "limit", "total"]
    assert default["offset"] == 0 and default["limit"] == 20
    assert default["results"] == everything["results"][:20]

    start = uids.index(mine[0])
    page = http.get("/indexes", params={"offset": start + 1, "limit": 2}).json()
    assert page == {
        "results": everything["results"][start + 1 : start + 3],
        "offset": start + 1,
        "limit": 2,
        "total": len(uids),
    }
    empty = http.get("/indexes", params={"limit": 0}).json()
    assert empty == {"results": [], "offset": 0, "limit": 0, "total": len(uids)}
    past_end = http.get("/indexes", params={"offset": 1_000_000}).json()
    assert past_end == {"results": [], "offset": 1_000_000, "limit": 20, "total": len(uids)}


def test_update_primary_key(http: httpx.Client, index_uid: str) -> None:
    create(http, index_uid)
    before = http.get(f"/indexes/{index_uid}").json()
    res = http.patch(f"/indexes/{index_uid}", json={"primaryKey": "primary"})
    task = succeeded(http, assert_summary(res, index_uid, "indexUpdate"))
    assert task["details"] == {"primaryKey": "primary"}
    after = http.get(f"/indexes/{index_uid}").json()
    assert after["primaryKey"] == "primary"
    assert after["createdAt"] == before["createdAt"]
    assert after["updatedAt"] > after["createdAt"]


def test_update_nothing_succeeds(http: httpx.Client, index_uid: str) -> None:
    create(http, index_uid, "id")
    task = succeeded(
        http, assert_summary(http.patch(f"/indexes/{index_uid}", json={}), index_uid, "indexUpdate")
    )
    assert task["details"] == {"primaryKey": None}
    assert http.get(f"/indexes/{index_uid}").json()["primaryKey"] == "id"


def test_update_same_primary_key_with_documents_succeeds(http: httpx.Client, index_uid: str) -> None:
    create(http, index_uid, "id")
    add_documents(http, index_uid, [{"id": 1}])
    res = http.patch(f"/indexes/{index_uid}", json={"primaryKey": "id"})
    assert succeeded(http, assert_summary(res, index_uid, "indexUpdate"))["details"] == {"primaryKey": "id"}


def test_rename_index_keeps_documents(http: httpx.Client, index_uid: str) -> None:
    create(http, index_uid)
    add_documents(http, index_uid, [{"id": 1, "title": "Movie 1"}, {"id": 2, "title": "Movie 2"}])
    new_uid = f"{index_uid}_renamed"
    res = http.patch(f"/indexes/{index_uid}", json={"uid": new_uid, "primaryKey": "id"})
    task = succeeded(http, assert_summary(res, index_uid, "indexUpdate"))
    assert task["details"] == {"primaryKey": "id", "oldIndexUid": index_uid, "newIndexUid": new_uid}
    assert http.get(f"/indexes/{index_uid}").status_code == 404
    index = http.get(f"/indexes/{new_uid}").json()
    assert index["uid"] == new_uid and index["primaryKey"] == "id"
    docs = http.get(f"/indexes/{new_uid}/documents").json()
    assert docs["results"] == [{"id": 1, "title": "Movie 1"}, {"id": 2, "title": "Movie 2"}]


def test_delete_index(http: httpx.Client, index_uid: str) -> None:
    create(http, index_uid)
    add_documents(http, index_uid, [{"id": 1}, {"id": 2}, {"id": 3}])
    task = succeeded(http, assert_summary(http.delete(f"/indexes/{index_uid}"), index_uid, "indexDeletion"))
    assert task["details"] == {"deletedDocuments": 3}
    assert http.get(f"/indexes/{index_uid}").status_code == 404
    assert http.get(f"/indexes/{index_uid}/documents").status_code == 404
    # the uid can be reused, starting empty
    create(http, index_uid)
    assert http.get(f"/indexes/{index_uid}/documents").json()["total"] == 0


def test_documents_addition_updates_updated_at(http: httpx.Client, index_uid: str) -> None:
    create(http, index_uid)
    before = http.get(f"/indexes/{index_uid}").json()
    add_documents(http, index_uid, [{"id": 1}])
    after = http.get(f"/indexes/{index_uid}").json()
    assert after["createdAt"] == before["createdAt"]
    assert after["updatedAt"] > before["updatedAt"]
    assert after["primaryKey"] == "id"


def test_swap_indexes(http: httpx.Client, index_uid: str) -> None:
    a, b, c, d = (f"{index_uid}_{n}" for n in "abcd")
    for name in (a, b, c, d):
        add_documents(http, name, {"id": 1, "index": name})
    res = http.post("/swap-indexes", json=[{"indexes": [a, b]}, {"indexes": [c, d]}])
    task = succeeded(http, assert_summary(res, None, "indexSwap"))
    assert task["indexUid"] is None
    assert task["details"] == {
        "swaps": [{"indexes": [a, b], "rename": False}, {"indexes": [c, d], "rename": False}]
    }
    assert http.get(f"/indexes/{a}/documents").json()["results"] == [{"id": 1, "index": b}]
    assert http.get(f"/indexes/{b}/documents").json()["results"] == [{"id": 1, "index": a}]
    assert http.get(f"/indexes/{c}/documents").json()["results"] == [{"id": 1, "index": d}]
    assert http.get(f"/indexes/{d}/documents").json()["results"] == [{"id": 1, "index": c}]
    # the index objects keep their own uid
    assert http.get(f"/indexes/{a}").json()["uid"] == a


def test_swap_with_rename(http: httpx.Client, index_uid: str) -> None:
    a, b = f"{index_uid}_a", f"{index_uid}_b"
    add_documents(http, a, [{"id": 7}])
    res = http.post("/swap-indexes", json=[{"indexes": [a, b], "rename": True}])
    task = succeeded(http, assert_summary(res, None, "indexSwap"))
    assert task["details"] == {"swaps": [{"indexes": [a, b], "rename": True}]}
    assert http.get(f"/indexes/{a}").status_code == 404
    assert http.get(f"/indexes/{b}/documents").json()["results"] == [{"id": 7}]


def test_empty_swap_list_succeeds(http: httpx.Client) -> None:
    task = succeeded(http, assert_summary(http.post("/swap-indexes", json=[]), None, "indexSwap"))
    assert task["details"] == {"swaps": []}


def test_trailing_slash_is_ignored(http: httpx.Client, index_uid: str) -> None:
    res = http.post("/indexes/", json={"uid": index_uid})
    succeeded(http, assert_summary(res, index_uid, "indexCreation"))
    assert http.get(f"/indexes/{index_uid}/").json()["uid"] == index_uid
    assert http.get("/indexes/").json()["limit"] == 20
    add_documents(http, index_uid, [{"id": 1}])
    assert http.get(f"/indexes/{index_uid}/documents/").json()["total"] == 1
    assert http.get(f"/indexes/{index_uid}/documents/1/").json() == {"id": 1}


def test_unknown_path_is_404_with_empty_body(http: httpx.Client, index_uid: str) -> None:
    for path in ("/doggo", "/indexes/x/doggo", "/indexes/x/documents/1/doggo", "/swap-indexes/x"):
        res = http.get(path)
        assert res.status_code == 404, path
        assert res.content == b"", path


def test_wrong_method_is_405_with_empty_body(http: httpx.Client, index_uid: str) -> None:
    for method, path in (
        ("PUT", f"/indexes/{index_uid}"),
        ("DELETE", "/indexes"),
        ("PATCH", "/indexes"),
        ("GET", "/swap-indexes"),
        ("PATCH", f"/indexes/{index_uid}/documents"),
        ("PUT", f"/indexes/{index_uid}/documents/1"),
        ("GET", f"/indexes/{index_uid}/documents/fetch"),
        ("GET", f"/indexes/{index_uid}/documents/delete-batch"),
    ):
        res = http.request(method, path)
        assert res.status_code == 405, (method, path)
        assert res.content == b"", (method, path)


def test_reading_many_indexes_during_a_batch_does_not_break_it(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms").start()
    try:
        with httpx.Client(base_url=srv.url, timeout=5) as client:
            last = 0
            for i in range(105):
                last = client.post("/indexes", json={"uid": f"many_{i:03d}"}).json()["taskUid"]
            wait_task(client, last, 60)
            docs = json.dumps([{"id": i, "text": "lorem ipsum"} for i in range(100_000)]).encode()
            res = client.post(
                "/indexes/big/documents", content=docs, headers={"Content-Type": "application/json"}
            )
            uid = res.json()["taskUid"]
            while True:
                # listing a page opens every index on it
                assert client.get("/indexes", params={"limit": 200}).status_code == 200
                task = client.get(f"/tasks/{uid}").json()
                if task["status"] in ("succeeded", "failed"):
                    break
            assert task["status"] == "succeeded", task["error"]
            assert client.get("/indexes/big/documents", params={"limit": 0}).json()["total"] == 100_000
    finally:
        srv.kill9()  # a deadlocked server would not stop on SIGTERM
