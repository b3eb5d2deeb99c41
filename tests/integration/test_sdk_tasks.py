"""The official Python SDK (meilisearch) against the task, batch and meta routes.

The SDK parses every answer into pydantic models (Task, TaskInfo, TaskResults, Batch, BatchResults,
IndexStats), so a missing or mistyped field fails here even where raw-JSON tests would not look.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from meilisearch.errors import MeilisearchApiError
from meilisearch.models.task import Batch, BatchResults, Task, TaskInfo, TaskResults


def add(client: Any, uid: str, docs: list[dict[str, Any]]) -> TaskInfo:
    info: TaskInfo = client.index(uid).add_documents(docs)
    return info


def test_wait_for_task_and_get_task(client: Any, index_uid: str) -> None:
    info = add(client, index_uid, [{"id": 1, "title": "Carol"}, {"id": 2, "title": "Wonder Woman"}])
    assert isinstance(info, TaskInfo)
    assert (info.index_uid, info.status, info.type) == (index_uid, "enqueued", "documentAdditionOrUpdate")
    assert isinstance(info.enqueued_at, datetime)

    task = client.wait_for_task(info.task_uid, timeout_in_ms=10_000, interval_in_ms=10)
    assert isinstance(task, Task)
    assert task.uid == info.task_uid
    assert task.status == "succeeded"
    assert task.details == {"receivedDocuments": 2, "indexedDocuments": 2}
    assert task.error is None and task.canceled_by is None
    assert task.duration is not None and task.duration.startswith("PT")
    assert task.started_at is not None and task.finished_at is not None
    assert task.enqueued_at <= task.started_at <= task.finished_at
    assert client.get_task(info.task_uid) == task


def test_wait_for_a_failed_task(client: Any, index_uid: str) -> None:
    info = client.index(index_uid).delete()
    task = client.wait_for_task(info.task_uid, timeout_in_ms=10_000, interval_in_ms=10)
    assert task.status == "failed"
    assert task.error == {
        "message": f"Index `{index_uid}` not found.",
        "code": "index_not_found",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#index_not_found",
    }


def test_get_tasks_with_filters(client: Any, index_uid: str) -> None:
    uids = [add(client, index_uid, [{"id": i}]).task_uid for i in range(3)]
    client.wait_for_task(uids[-1], interval_in_ms=10)

    results = client.get_tasks({"indexUids": [index_uid]})
    assert isinstance(results, TaskResults)
    assert [t.uid for t in results.results] == uids[::-1]
    assert (results.total, results.limit, results.from_, results.next_) == (3, 20, uids[2], None)

    page = client.get_tasks({"indexUids": [index_uid], "limit": 2})
    assert [t.uid for t in page.results] == [uids[2], uids[1]]
    assert page.next_ == uids[0]
    page = client.get_tasks({"indexUids": [index_uid], "limit": 2, "from": page.next_})
    assert [t.uid for t in page.results] == [uids[0]]
    assert page.next_ is None

    filtered = client.get_tasks(
        {
            "indexUids": [index_uid],
            "types": ["documentAdditionOrUpdate", "indexCreation"],
            "statuses": ["succeeded", "failed"],
            "uids": [str(uids[0]), str(uids[2])],
        }
    )
    assert [t.uid for t in filtered.results] == [uids[2], uids[0]]
    assert client.get_tasks({"indexUids": [index_uid], "statuses": ["failed"]}).results == []
    reverse = client.get_tasks({"indexUids": [index_uid], "reverse": "true"})
    assert [t.uid for t in reverse.results] == uids
    # the index handle filters its own tasks the same way
    assert [t.uid for t in client.index(index_uid).get_tasks().results] == uids[::-1]


def test_cancel_tasks(client: Any, index_uid: str) -> None:
    uid = add(client, index_uid, [{"id": 1}]).task_uid
    client.wait_for_task(uid, interval_in_ms=10)
    info = client.cancel_tasks({"uids": [str(uid)], "indexUids": [index_uid]})
    assert isinstance(info, TaskInfo)
    assert (info.index_uid, info.status, info.type) == (None, "enqueued", "taskCancelation")
    task = client.wait_for_task(info.task_uid, interval_in_ms=10)
    assert task.status == "succeeded"
    # the SDK url-encodes the comma-joined list; originalFilter is the query exactly as sent
    assert task.details == {
        "matchedTasks": 1,
        "canceledTasks": 0,
        "originalFilter": f"?uids={uid}&indexUids={index_uid}",
    }
    assert client.get_task(uid).status == "succeeded"


def test_delete_tasks(client: Any, index_uid: str) -> None:
    first = add(client, index_uid, [{"id": 1}]).task_uid
    second = add(client, index_uid, [{"id": 2}]).task_uid
    client.wait_for_task(second, interval_in_ms=10)
    info = client.delete_tasks({"uids": [str(first), str(second)]})
    assert info.type == "taskDeletion"
    task = client.wait_for_task(info.task_uid, interval_in_ms=10)
    assert task.details == {
        "matchedTasks": 2,
        "deletedTasks": 2,
        "originalFilter": f"?uids={first}%2C{second}",
    }
    with pytest.raises(MeilisearchApiError) as excinfo:
        client.get_task(first)
    assert (excinfo.value.status_code, excinfo.value.code) == (404, "task_not_found")
    assert client.get_tasks({"indexUids": [index_uid]}).total == 0


def test_get_batches_and_get_batch(client: Any, index_uid: str) -> None:
    task = client.wait_for_task(add(client, index_uid, [{"id": 1}]).task_uid, interval_in_ms=10)
    results = client.get_batches({"indexUids": [index_uid]})
    assert isinstance(results, BatchResults)
    assert results.total == 1
    batch = results.results[0]
    assert isinstance(batch, Batch)
    assert client.get_batch(batch.uid) == batch
    assert batch.details == {"receivedDocuments": 1, "indexedDocuments": 1}
    # Meilisearch's best-effort diagnostics follow the four maps (its own tests redact them)
    assert list(batch.stats)[4:] == ["progressTrace", "writeChannelCongestion", "internalDatabaseSizes"]
    assert {
        k: v for k, v in batch.stats.items() if k in ("totalNbTasks", "status", "types", "indexUids")
    } == {
        "totalNbTasks": 1,
        "status": {"succeeded": 1},
        "types": {"documentAdditionOrUpdate": 1},
        "indexUids": {index_uid: 1},
    }
    assert (batch.started_at, batch.finished_at) == (task.started_at, task.finished_at)
    # (an empty page cannot be asked through the SDK: its BatchResults model requires an integer `from`)
    with pytest.raises(MeilisearchApiError) as excinfo:
        client.get_batch(4294967295)
    assert (excinfo.value.status_code, excinfo.value.code) == (404, "batch_not_found")


def test_stats_version_and_health(client: Any, index_uid: str) -> None:
    client.wait_for_task(
        add(client, index_uid, [{"id": 1, "name": "a"}, {"id": 2}]).task_uid, interval_in_ms=10
    )
    stats = client.index(index_uid).get_stats()
    assert stats.number_of_documents == 2
    assert stats.is_indexing is False
    assert (stats.field_distribution.id, stats.field_distribution.name) == (2, 1)
    everything = client.get_all_stats()
    assert everything["indexes"][index_uid]["numberOfDocuments"] == 2
    assert isinstance(everything["databaseSize"], int)
    assert set(client.get_version()) == {"commitSha", "commitDate", "pkgVersion"}
    assert client.health() == {"status": "available"}
    assert client.is_healthy() is True
