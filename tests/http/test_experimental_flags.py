"""Experimental features that change what a route does (Meilisearch's `index-scheduler/src/features.rs`
and their consumers):

- `disableDocumentsFetchQueue`: a documents fetch (`GET /documents`, `POST /documents/fetch`) holds a
  search-queue permit, as a search does, unless the feature is on (`routes/indexes/documents.rs`).
- `taskQueueCompactionRoute`: `POST /tasks/compact` answers `feature_not_enabled` while it is off, and
  compacts the task queue when it is on (`routes/tasks/compact.rs`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """No waiting room and one search per core: a burst of fetches overflows the queue."""
    srv = ServerProcess(
        tmp_path_factory.mktemp("flags") / "data.ms",
        extra_args=["--experimental-search-queue-size", "0", "--experimental-nb-searches-per-core", "1"],
    ).start()
    with httpx.Client(base_url=srv.url, timeout=120) as http:
        docs = [{"id": i, "text": f"document number {i} " * 20} for i in range(2000)]
        res = http.post("/indexes/fetch/documents", json=docs)
        assert wait_task(http, res.json()["taskUid"], timeout=120)["status"] == "succeeded"
    yield srv
    srv.stop()


async def _burst(url: str, requests: int) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        calls = [
            client.post("/indexes/fetch/documents/fetch", json={"limit": 1000})
            if i % 2
            else client.get("/indexes/fetch/documents", params={"limit": 1000})
            for i in range(requests)
        ]
        return list(await asyncio.gather(*calls))


def _features(url: str, **values: bool) -> None:
    with httpx.Client(base_url=url, timeout=30) as http:
        res = http.patch("/experimental-features", json=values)
        assert res.status_code == 200, res.text


def test_documents_fetch_goes_through_the_search_queue(tight: ServerProcess) -> None:
    burst = 4 * (os.cpu_count() or 1) + 16
    responses = asyncio.run(_burst(tight.url, burst))
    assert {r.status_code for r in responses} == {200, 503}, [r.status_code for r in responses]
    refused: dict[str, Any] = next(r for r in responses if r.status_code == 503).json()
    assert refused["code"] == "too_many_search_requests"
    _features(tight.url, disableDocumentsFetchQueue=True)
    try:
        statuses = [r.status_code for r in asyncio.run(_burst(tight.url, burst))]
        assert statuses == [200] * burst
    finally:
        _features(tight.url, disableDocumentsFetchQueue=False)


def test_task_queue_compaction_route_needs_its_feature(http: httpx.Client) -> None:
    res = http.post("/tasks/compact")
    assert res.status_code == 400
    assert res.json() == {
        "message": "Using the /tasks/compact route requires enabling the `task queue compaction route` experimental "
        "feature. See https://github.com/orgs/meilisearch/discussions/883",
        "code": "feature_not_enabled",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#feature_not_enabled",
    }


def test_task_queue_compaction(tmp_path: Path) -> None:
    """With the feature on, the task queue's file is compacted in place and the instance must restart:
    `/health` answers 500 `mustRestart` until it does, and every task is still there afterwards."""
    srv = ServerProcess(tmp_path / "data.ms").start()
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as http:
            for _ in range(20):
                res = http.post(
                    "/indexes/compact/documents", json=[{"id": j, "text": "x" * 2000} for j in range(50)]
                )
            wait_task(http, res.json()["taskUid"], timeout=60)
            res = http.delete("/tasks", params={"types": "documentAdditionOrUpdate"})
            assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
            total = http.get("/tasks", params={"limit": 1}).json()["total"]
            _features(srv.url, taskQueueCompactionRoute=True)
            res = http.post("/tasks/compact")
            assert res.status_code == 200, res.text
            body = res.json()
            assert list(body) == ["preSize", "postSize", "status", "actionRequired"]
            assert (
                body["status"] == "succeeded" and body["actionRequired"] == "you must restart your instance"
            )
            pre, pre_unit = body["preSize"].split(" ")
            post, post_unit = body["postSize"].split(" ")
            assert pre_unit.endswith("B") and post_unit.endswith("B") and int(pre) > 0 and int(post) > 0
            res = http.get("/health")
            assert (res.status_code, res.json()) == (500, {"status": "mustRestart"})
    finally:
        srv.kill9()
    srv.start()
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as http:
            assert http.get("/health").json() == {"status": "available"}
            assert http.get("/tasks", params={"limit": 1}).json()["total"] == total
            res = http.post("/indexes/compact/documents", json=[{"id": 1}])  # the queue takes tasks again
            assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
    finally:
        srv.stop()


def test_exact_size() -> None:
    from hanzo_engine.server.routes.compaction import exact_size

    assert [exact_size(n) for n in (0, 1234, 4096, 3_000_000, 1 << 20, 466944)] == [
        "0 B",
        "1234 B",
        "4 KiB",
        "3 MB",
        "1 MiB",
        "456 KiB",
    ]
