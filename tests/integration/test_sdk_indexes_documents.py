"""The official `meilisearch` Python SDK against a real server: index and document operations.

Each test drives the SDK the way an application does (create, add, wait_for_task, read back) and
checks the values the SDK hands back, so a response shape the SDK cannot parse fails here too.
"""

from __future__ import annotations

from typing import Any

import pytest
from meilisearch import Client
from meilisearch.errors import MeilisearchApiError
from meilisearch.index import Index
from meilisearch.models.task import Task, TaskInfo

LINK = "https://docs.meilisearch.com/errors#"


def wait(client: Client, info: TaskInfo, status: str = "succeeded") -> Task:
    task = client.wait_for_task(info.task_uid, timeout_in_ms=30_000, interval_in_ms=10)
    assert task.status == status, task
    return task


def docs_of(index: Index, **params: Any) -> list[dict[str, Any]]:
    return [dict(doc) for doc in index.get_documents({"limit": 1000, **params}).results]


def test_index_lifecycle(client: Client, index_uid: str) -> None:
    info = client.create_index(index_uid, {"primaryKey": "book_id"})
    assert (info.index_uid, info.status, info.type) == (index_uid, "enqueued", "indexCreation")
    task = wait(client, info)
    assert task.details == {"primaryKey": "book_id"}
    assert task.index_uid == index_uid and task.error is None

    index = client.get_index(index_uid)
    assert index.uid == index_uid and index.primary_key == "book_id"
    assert index.created_at is not None and index.updated_at is not None
    raw = client.get_raw_index(index_uid)
    assert list(raw) == ["uid", "createdAt", "updatedAt", "primaryKey"]

    listed = client.get_indexes({"limit": 1000})
    assert index_uid in [i.uid for i in listed["results"]]
    raw_list: Any = client.get_raw_indexes({"limit": 1000})  # the SDK annotates a list, returns the page
    assert [i["uid"] for i in raw_list["results"]] == sorted(i["uid"] for i in raw_list["results"])

    task = wait(client, index.update(primary_key="isbn"))
    assert task.type == "indexUpdate" and task.details == {"primaryKey": "isbn"}
    assert index.fetch_info().primary_key == "isbn"
    assert index.get_primary_key() == "isbn"

    renamed = f"{index_uid}_renamed"
    task = wait(client, index.update(new_uid=renamed))
    assert task.details == {"primaryKey": None, "oldIndexUid": index_uid, "newIndexUid": renamed}
    with pytest.raises(MeilisearchApiError) as exc:
        client.get_index(index_uid)
    assert exc.value.code == "index_not_found" and exc.value.status_code == 404

    task = wait(client, client.delete_index(renamed))
    assert task.type == "indexDeletion" and task.details == {"deletedDocuments": 0}
    with pytest.raises(MeilisearchApiError) as exc:
        client.get_index(renamed)
    assert exc.value.code == "index_not_found"
    assert exc.value.message == f"Index `{renamed}` not found."
    assert exc.value.link == LINK + "index_not_found"
    assert exc.value.type == "invalid_request"


def test_index_errors_through_the_sdk(client: Client, index_uid: str) -> None:
    with pytest.raises(MeilisearchApiError) as exc:
        client.create_index("not a valid uid")
    assert exc.value.status_code == 400 and exc.value.code == "invalid_index_uid"
    assert exc.value.message.startswith(
        "Invalid value at `.uid`: `not a valid uid` is not a valid index uid."
    )

    wait(client, client.create_index(index_uid))
    task = wait(client, client.create_index(index_uid), "failed")
    assert task.error == {
        "message": f"Index `{index_uid}` already exists.",
        "code": "index_already_exists",
        "type": "invalid_request",
        "link": LINK + "index_already_exists",
    }
    task = wait(client, client.delete_index(f"{index_uid}_missing"), "failed")
    assert task.error is not None and task.error["code"] == "index_not_found"
    assert task.details == {"deletedDocuments": 0}


def test_swap_indexes(client: Client, index_uid: str) -> None:
    a, b = f"{index_uid}_a", f"{index_uid}_b"
    wait(client, client.index(a).add_documents([{"id": 1, "origin": "a"}]))
    wait(client, client.index(b).add_documents([{"id": 1, "origin": "b"}, {"id": 2, "origin": "b"}]))
    info = client.swap_indexes([{"indexes": [a, b]}])
    assert info.index_uid is None and info.type == "indexSwap"
    task = wait(client, info)
    assert task.details == {"swaps": [{"indexes": [a, b], "rename": False}]}
    assert docs_of(client.index(a)) == [{"id": 1, "origin": "b"}, {"id": 2, "origin": "b"}]
    assert docs_of(client.index(b)) == [{"id": 1, "origin": "a"}]

    c = f"{index_uid}_c"
    wait(client, client.swap_indexes([{"indexes": [b, c], "rename": True}]))
    assert docs_of(client.index(c)) == [{"id": 1, "origin": "a"}]
    with pytest.raises(MeilisearchApiError):
        client.get_index(b)


def test_add_documents_infers_primary_key_and_creates_index(client: Client, index_uid: str) -> None:
    index = client.index(index_uid)
    docs = [
        {"book_id": 1, "title": "Alice in Wonderland", "meta": {"pages": 200, "tags": ["a", "b"]}},
        {"book_id": 2, "title": "Le Petit Prince"},
    ]
    info = index.add_documents(docs)
    assert info.type == "documentAdditionOrUpdate" and info.index_uid == index_uid
    task = index.wait_for_task(info.task_uid, timeout_in_ms=30_000, interval_in_ms=10)
    assert task.status == "succeeded"
    assert task.details == {"receivedDocuments": 2, "indexedDocuments": 2}
    assert index.fetch_info().primary_key == "book_id"
    assert docs_of(index) == docs


def test_add_documents_with_explicit_primary_key(client: Client, index_uid: str) -> None:
    index = client.index(index_uid)
    wait(client, index.add_documents([{"isbn": "978-0", "id": 5, "title": "x"}], primary_key="isbn"))
    assert index.get_primary_key() == "isbn"
    assert dict(index.get_document("978-0")) == {"isbn": "978-0", "id": 5, "title": "x"}
    # another primary key once documents exist fails the task and changes nothing
    task = wait(client, index.add_documents([{"isbn": "1", "id": 6}], primary_key="id"), "failed")
    assert task.error is not None and task.error["code"] == "index_primary_key_already_exists"
    assert task.details == {"receivedDocuments": 1, "indexedDocuments": 0}
    assert index.get_documents().total == 1


def test_add_documents_ndjson_and_csv(client: Client, index_uid: str) -> None:
    index = client.index(index_uid)
    ndjson = b'{"id": 1, "name": "one"}\n{"id": 2, "name": "two", "extra": [1, 2]}\n'
    task = wait(client, index.add_documents_ndjson(ndjson))
    assert task.details == {"receivedDocuments": 2, "indexedDocuments": 2}
    csv = b"id:number,name,price:number,available:boolean\n3,three,9.5,true\n4,four,,false\n"
    task = wait(client, index.add_documents_csv(csv))
    assert task.details == {"receivedDocuments": 2, "indexedDocuments": 2}
    semicolons = b"id;name\n5;five\n"
    wait(client, index.add_documents_csv(semicolons, csv_delimiter=";"))
    assert docs_of(index) == [
        {"id": 1, "name": "one"},
        {"id": 2, "name": "two", "extra": [1, 2]},
        {"id": 3, "name": "three", "price": 9.5, "available": True},
        {"id": 4, "name": "four", "price": None, "available": False},
        {"id": "5", "name": "five"},
    ]
    with pytest.raises(MeilisearchApiError) as exc:
        index.add_documents_csv(b"id,name\n1,a,b\n")
    assert exc.value.status_code == 400 and exc.value.code == "malformed_payload"
    assert index.get_documents().total == 5


def test_replace_versus_update(client: Client, index_uid: str) -> None:
    index = client.index(index_uid)
    wait(
        client, index.add_documents([{"id": 1, "title": "old", "genre": "drama", "nested": {"a": 1, "b": 2}}])
    )
    wait(client, index.update_documents([{"id": 1, "title": "new", "nested": {"c": 3}}]))
    assert dict(index.get_document(1)) == {"id": 1, "title": "new", "genre": "drama", "nested": {"c": 3}}
    wait(client, index.add_documents([{"id": 1, "title": "replaced"}]))
    assert dict(index.get_document(1)) == {"id": 1, "title": "replaced"}
    task = wait(client, index.update_documents([{"id": 1, "year": 2000}, {"id": 2, "year": 2001}]))
    assert task.details == {"receivedDocuments": 2, "indexedDocuments": 2}
    assert docs_of(index) == [{"id": 1, "title": "replaced", "year": 2000}, {"id": 2, "year": 2001}]


def test_get_documents_offset_limit_fields(client: Client, index_uid: str) -> None:
    index = client.index(index_uid)
    wait(client, index.add_documents([{"id": i, "title": f"t{i}", "rank": i * 10} for i in range(25)]))
    page = index.get_documents()
    assert (page.offset, page.limit, page.total, len(page.results)) == (0, 20, 25, 20)
    page = index.get_documents({"offset": 20, "limit": 10})
    assert (page.offset, page.limit, page.total) == (20, 10, 25)
    assert [doc.id for doc in page.results] == [20, 21, 22, 23, 24]
    page = index.get_documents({"limit": 2, "fields": ["title"]})
    assert [dict(doc) for doc in page.results] == [{"title": "t0"}, {"title": "t1"}]
    page = index.get_documents({"ids": [7, "3"], "fields": ["id", "rank"]})
    assert [dict(doc) for doc in page.results] == [{"id": 3, "rank": 30}, {"id": 7, "rank": 70}]
    doc = index.get_document(4, {"fields": ["rank", "id"]})
    assert dict(doc) == {"id": 4, "rank": 40}
    assert doc.rank == 40
    with pytest.raises(MeilisearchApiError) as exc:
        index.get_document(99)
    assert exc.value.status_code == 404
    assert (exc.value.code, exc.value.message) == ("document_not_found", "Document `99` not found.")
    with pytest.raises(MeilisearchApiError) as exc:
        index.get_documents({"limit": -1})
    assert exc.value.code == "invalid_document_limit"


def test_delete_documents(client: Client, index_uid: str) -> None:
    index = client.index(index_uid)
    wait(client, index.add_documents([{"id": i} for i in range(6)]))
    task = wait(client, index.delete_document(0))
    assert task.type == "documentDeletion"
    assert task.details == {"providedIds": 1, "deletedDocuments": 1, "originalFilter": None}
    with pytest.warns(DeprecationWarning):
        info = index.delete_documents([1, "2", 42])
    task = wait(client, info)
    assert task.details == {"providedIds": 3, "deletedDocuments": 2, "originalFilter": None}
    assert [doc.id for doc in index.get_documents().results] == [3, 4, 5]
    task = wait(client, index.delete_all_documents())
    assert task.details == {"deletedDocuments": 3}
    assert index.get_documents().total == 0
    assert index.get_primary_key() == "id"


def test_failed_addition_reports_error(client: Client, index_uid: str) -> None:
    index = client.index(index_uid)
    task = wait(client, index.add_documents([{"title": "no id here"}]), "failed")
    assert task.error is not None
    assert task.error["code"] == "index_primary_key_no_candidate_found"
    assert task.error["type"] == "invalid_request"
    assert task.error["link"] == LINK + "index_primary_key_no_candidate_found"
    assert task.details == {"receivedDocuments": 1, "indexedDocuments": 0}
    task = wait(client, index.add_documents([{"id": "has space"}]), "failed")
    assert task.error is not None and task.error["code"] == "invalid_document_id"
    assert index.get_documents().total == 0


def test_custom_metadata(client: Client, index_uid: str) -> None:
    index = client.index(index_uid)
    info = index.add_documents([{"id": 1}], metadata="import-42")
    task = wait(client, info)
    assert task.custom_metadata == "import-42"
