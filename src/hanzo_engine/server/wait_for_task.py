"""`WaitForTask` (middleware): read-after-write for RAG pipelines.

A write carrying `X-Hanzo-Wait-For-Task: <ms>` gets its normal `202` summarized task, but only once the
task is finished or `<ms>` elapsed (at most 10 minutes); the `X-Hanzo-Task-Status` response header then
says which (`succeeded`, `failed`, `canceled`, or still `enqueued`/`processing`). Meilisearch clients
never send the header, so nothing changes for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Final

import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hanzo_engine.apitypes.errors import error_json
from hanzo_engine.apitypes.tasks import FINISHED_STATUSES

from .http import JSONResponse

WAIT_HEADER: Final = b"x-hanzo-wait-for-task"
TASK_STATUS_HEADER: Final = b"x-hanzo-task-status"
MAX_WAIT_MS: Final = 600_000


async def wait_for_task(app_state: Any, task_uid: int, timeout: float) -> str | None:
    """Wait until the task is finished or `timeout` seconds passed; its last known status. The
    scheduler wakes the wait when the task's batch is committed; polls back it up (a deleted task)."""
    scheduler = app_state.hanzo.scheduler
    loop = asyncio.get_running_loop()
    finished = asyncio.Event()
    forget = scheduler.when_finished(task_uid, lambda: loop.call_soon_threadsafe(finished.set))
    try:
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            task = scheduler.store.get_task(task_uid)
            status: str | None = None if task is None else task["status"]
            if status is None or status in FINISHED_STATUSES or time.monotonic() >= deadline:
                return status
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished.wait(), min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.05)
    finally:
        forget()


class WaitForTask:
    """`X-Hanzo-Wait-For-Task: <ms>`: hold a `202` until its task is finished (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = dict(scope.get("headers", [])).get(WAIT_HEADER) if scope["type"] == "http" else None
        if raw is None:
            await self.app(scope, receive, send)
            return
        text = raw.decode("latin-1").strip()
        if not text.isdigit() or int(text) > MAX_WAIT_MS:
            message = (
                f"The `X-Hanzo-Wait-For-Task` header must be a number of milliseconds between 0 and "
                f"{MAX_WAIT_MS}, found `{text}`."
            )
            await JSONResponse(error_json("bad_request", message), status_code=400)(scope, receive, send)
            return
        timeout = int(text) / 1000
        start: Message | None = None
        chunks: list[bytes] = []

        async def hold_202(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and message["status"] == 202:
                start = message
                return
            if start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            headers = list(start.get("headers", []))
            try:
                task_uid = int(msgspec.json.decode(body)["taskUid"])
            except (msgspec.DecodeError, KeyError, TypeError, ValueError):
                task_uid = -1
            if task_uid >= 0:
                status = await wait_for_task(scope["app"].state, task_uid, timeout)
                if status is not None:
                    headers.append((TASK_STATUS_HEADER, status.encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await self.app(scope, receive, hold_202)
