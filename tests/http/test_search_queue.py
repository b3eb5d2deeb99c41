"""The bounded search queue (docs/api-contract.md §3.14): its scheduling rules driven step by step on an event loop,
then a real server refusing a burst past its queue with `503 too_many_search_requests` and `Retry-After`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.server.search_queue import SearchQueue
from tests.conftest import ServerProcess, wait_task

TOO_MANY = "Too many search requests running at the same time: {}. Retry after 10s."


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def refused(task: asyncio.Task[None], capacity: int) -> bool:
    err = task.exception()
    return (
        isinstance(err, MeiliError)
        and err.code == "too_many_search_requests"
        and err.status == 503
        and err.message == TOO_MANY.format(capacity)
    )


# -- scheduling rules ---------------------------------------------------------------------------------


def test_at_most_parallelism_run_and_waiters_go_in_order() -> None:
    async def scenario() -> None:
        queue = SearchQueue(capacity=10, parallelism=2, time_to_abort=60)
        await queue.acquire()
        await queue.acquire()
        third, fourth = asyncio.create_task(queue.acquire()), asyncio.create_task(queue.acquire())
        await settle()
        assert (queue.running, queue.waiting, third.done(), fourth.done()) == (2, 2, False, False)
        queue.release()
        await settle()
        assert (third.done(), fourth.done(), queue.running, queue.waiting) == (True, False, 2, 1)
        queue.release()
        await settle()
        assert fourth.done() and (queue.running, queue.waiting) == (2, 0)
        queue.release()
        queue.release()
        assert queue.running == 0

    run(scenario())


def test_a_full_queue_evicts_a_waiting_search() -> None:
    async def scenario() -> None:
        queue = SearchQueue(capacity=1, parallelism=1, time_to_abort=60)
        await queue.acquire()
        waiting = asyncio.create_task(queue.acquire())
        await settle()
        newcomer = asyncio.create_task(queue.acquire())
        await settle()
        assert refused(waiting, 1)  # the only waiting search made room for the newcomer
        assert not newcomer.done() and queue.waiting == 1
        queue.release()
        await settle()
        assert newcomer.done() and newcomer.exception() is None and queue.running == 1

    run(scenario())


def test_capacity_zero_refuses_what_cannot_run_now() -> None:
    async def scenario() -> None:
        queue = SearchQueue(capacity=0, parallelism=1, time_to_abort=60)
        await queue.acquire()
        late = asyncio.create_task(queue.acquire())
        await settle()
        assert refused(late, 0) and queue.waiting == 0
        queue.release()
        await queue.acquire()  # free again: runs at once
        assert queue.running == 1

    run(scenario())


def test_cancelled_searches_give_their_place_back() -> None:
    async def scenario() -> None:
        queue = SearchQueue(capacity=5, parallelism=1, time_to_abort=60)
        await queue.acquire()
        gone = asyncio.create_task(queue.acquire())
        await settle()
        gone.cancel()
        await settle()
        assert queue.waiting == 0
        # granted, then cancelled before it could run: the permit comes back
        granted = asyncio.create_task(queue.acquire())
        await settle()
        queue.release()
        granted.cancel()
        await settle()
        assert granted.cancelled() and queue.running == 0 and queue.waiting == 0

    run(scenario())


def test_a_search_that_waited_too_long_is_dropped() -> None:
    async def scenario() -> None:
        queue = SearchQueue(capacity=5, parallelism=1, time_to_abort=0.01)
        await queue.acquire()
        slow = asyncio.create_task(queue.acquire())
        await asyncio.sleep(0.05)
        queue.release()
        await settle()
        assert refused(slow, 5) and queue.running == 0

    run(scenario())


# -- a real server ------------------------------------------------------------------------------------


def _documents(n: int) -> list[dict[str, Any]]:
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    return [{"id": i, "text": " ".join(words[(i * k) % len(words)] for k in range(1, 30))} for i in range(n)]


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """No waiting room and one search per core."""
    srv = ServerProcess(
        tmp_path_factory.mktemp("queue") / "data.ms",
        extra_args=["--experimental-search-queue-size", "0", "--experimental-nb-searches-per-core", "1"],
    ).start()
    with httpx.Client(base_url=srv.url, timeout=120) as http:
        res = http.post("/indexes/queue/documents", json=_documents(1000))
        assert wait_task(http, res.json()["taskUid"], timeout=120)["status"] == "succeeded"
    yield srv
    srv.stop()


async def _burst(url: str, requests: int, body: dict[str, Any]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        return list(await asyncio.gather(*(client.post("/multi-search", json=body) for _ in range(requests))))


def test_burst_past_the_queue_gets_503_with_retry_after(tight: ServerProcess) -> None:
    # each multi-search holds one permit for all its queries, long enough for the burst to pile up: more
    # queries than run on the event loop's thread (INLINE_MAX_QUERIES), so the loop reads the burst's
    # other requests meanwhile (inline, a process would read them only once the permit is free)
    query = {"indexUid": "queue", "q": "alpha delta", "limit": 200, "showRankingScoreDetails": True}
    body = {"queries": [query for _ in range(40)]}
    responses = asyncio.run(_burst(tight.url, 2 * (os.cpu_count() or 1) + 8, body))
    statuses = [r.status_code for r in responses]
    assert set(statuses) == {200, 503}, statuses
    for res in responses:
        if res.status_code == 503:
            assert res.headers["retry-after"] == "10"
            assert res.json() == {
                "message": TOO_MANY.format(0),
                "code": "too_many_search_requests",
                "type": "system",
                "link": "https://docs.meilisearch.com/errors#too_many_search_requests",
            }
        else:
            assert len(res.json()["results"]) == 40
    # the single-index search route goes through the same queue
    with httpx.Client(base_url=tight.url, timeout=30) as http:
        assert http.post("/indexes/queue/search", json={"q": "alpha"}).status_code == 200


def test_default_queue_absorbs_a_burst(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms").start()
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as http:
            res = http.post("/indexes/queue/documents", json=_documents(50))
            assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
        body = {"queries": [{"indexUid": "queue", "q": ""}, {"indexUid": "queue", "q": "echo", "limit": 1}]}
        responses = asyncio.run(_burst(srv.url, 100, body))
        assert [r.status_code for r in responses] == [200] * 100
    finally:
        srv.stop()
