"""The search queue (= Meilisearch's `SearchQueue`, docs/api-contract.md §3.14): it bounds the work
the server accepts:

- at most `parallelism` searches run at once (`cores × --experimental-nb-searches-per-core`); each
  runs in the thread pool, where the native core releases the GIL, or, when it never waits on the
  network, on the event loop's thread (`run_queued`);
- at most `capacity` more wait (`--experimental-search-queue-size`, default 1000). A search arriving
  at a full queue takes the place of a waiting one chosen at random, which is answered `503
  too_many_search_requests` (Meilisearch evicts at random too, so a burst cannot starve the queue
  with requests whose clients already gave up). With a capacity of 0, any search that cannot run
  at once is refused;
- a search that waited longer than `--experimental-drop-search-after` seconds is refused instead of
  run: its client has most likely timed out.

Waiting searches get the freed slots in arrival order (Meilisearch picks at random; first come first
served keeps the latency tail short, which is what the load test measures). The queue lives on the
event loop: acquiring and releasing a permit are plain loop callbacks, no lock is needed. One
multi-search holds one permit for all its queries, as in Meilisearch. The `Retry-After: 10` header of
the 503 is added by the HTTP middleware of `server/metrics.py`.

Invariants: `running <= parallelism`; a permit is released exactly once, also when the request is
cancelled (client gone) while waiting or right after being granted.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from hanzo_engine.apitypes.errors import MeiliError

from .shared_counts import SharedCounts

T = TypeVar("T")

RETRY_AFTER_SECONDS: Final = 10


def too_many_search_requests(capacity: int) -> MeiliError:
    return MeiliError(
        "too_many_search_requests",
        f"Too many search requests running at the same time: {capacity}. Retry after {RETRY_AFTER_SECONDS}s.",
    )


class SearchQueue:
    """A bounded queue of searches with at most `parallelism` of them running (see the module doc)."""

    def __init__(
        self, capacity: int, parallelism: int, time_to_abort: float, shared: SharedCounts | None = None
    ) -> None:
        self.capacity = capacity
        self.parallelism = max(1, parallelism)
        self.time_to_abort = time_to_abort
        self.running = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._rng = random.Random()
        # with several server processes: the other processes' waiting searches count against capacity
        self._shared = shared

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _publish(self) -> None:
        if self._shared is not None:
            self._shared.set(len(self._waiting))

    def instance_waiting(self) -> int:
        return len(self._waiting) + (self._shared.others() if self._shared is not None else 0)

    async def acquire(self) -> None:
        """Wait for a permit; `too_many_search_requests` when the search is evicted or waited too long."""
        if self.running < self.parallelism and not self._waiting:
            self.running += 1
            return
        if self.capacity == 0:
            raise too_many_search_requests(self.capacity)
        if self.instance_waiting() >= self.capacity:
            if not self._waiting:  # the others' searches fill the queue: this one cannot wait
                raise too_many_search_requests(self.capacity)
            victim = self._waiting[self._rng.randrange(len(self._waiting))]
            self._waiting.remove(victim)
            victim.set_exception(too_many_search_requests(self.capacity))
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        self._publish()
        started = time.monotonic()
        try:
            await future
        except asyncio.CancelledError:
            if future in self._waiting:
                self._waiting.remove(future)
                self._publish()
            elif future.done() and not future.cancelled() and future.exception() is None:
                self.release()  # granted, but the request went away before using it
            raise
        if time.monotonic() - started > self.time_to_abort:
            self.release()
            raise too_many_search_requests(self.capacity)

    def release(self) -> None:
        """Give the permit back; the oldest waiting search (if any) takes it over."""
        self.running -= 1
        while self._waiting:
            future = self._waiting.popleft()
            if future.done():
                continue
            self.running += 1
            future.set_result(None)
            break
        self._publish()

    @asynccontextmanager
    async def permit(self) -> AsyncIterator[None]:
        await self.acquire()
        try:
            yield
        finally:
            self.release()


def search_queue(request: Request) -> SearchQueue:
    """The app's search queue, created on first use from the server options."""
    queue: SearchQueue | None = getattr(request.app.state, "search_queue", None)
    if queue is None:
        options = request.app.state.hanzo.options
        cores = os.cpu_count() or 1
        # several server processes share the instance's parallelism and queue (`server.workers`)
        shared: SharedCounts | None = getattr(request.app.state, "search_counts", None)
        processes = options.http_workers if shared is not None else 1
        queue = SearchQueue(
            options.experimental_search_queue_size,
            max(1, cores * options.experimental_nb_searches_per_core // processes),
            float(options.experimental_drop_search_after),
            shared,
        )
        request.app.state.search_queue = queue
    return queue


async def run_search(func: Callable[..., T], *args: Any, inline: bool) -> T:
    """`func(*args)` in the thread pool, or with `inline` on the event loop's own thread.

    `inline` is for work that never waits on the network (keyword searches): such work holds the GIL
    for most of its run, so a pool thread would not let the loop do much meanwhile, and handing it to
    the pool and back costs about half of what the search of a short query costs. Every process runs
    its own loop, so the instance still searches on every core."""
    if inline:
        # one turn of the loop first (the caller's permit held): the loop polls its sockets between
        # searches and the searches beyond `parallelism` wait in the queue's arrival order. Run straight
        # away, under 500 connections some requests waited seconds (wrk: p99 4 s, timeouts; with the
        # turn: p99 0.6-0.75 s, none)
        await asyncio.sleep(0)
        return func(*args)
    return await run_in_threadpool(func, *args)


async def run_queued(request: Request, func: Callable[..., T], *args: Any, inline: bool = False) -> T:
    """`func(*args)` holding a search permit while it runs (`run_search`)."""
    async with search_queue(request).permit():
        return await run_search(func, *args, inline=inline)
