"""`POST /indexes/{uid}/compact`: enqueue an `indexCompaction` task. `POST /tasks/compact` (behind the
`taskQueueCompactionRoute` experimental feature): compact the task queue's LMDB file in place, as
Meilisearch's `routes/tasks/compact.rs`. The write transaction it opens is never released, so that no
task can be written to the replaced file: the instance must restart, and `/health` says so."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.index_uid import validate_index_uid

from ..app_state import custom_metadata, state
from ..features import feature_not_enabled, runtime_features
from ..http import JSONResponse

TASK_QUEUE_COMPACTION_DISCUSSION: Final = "https://github.com/orgs/meilisearch/discussions/883"
# byte_unit's exact units, smallest first: a size shows in the largest one dividing it
_EXACT_UNITS: Final = (
    ("B", 1),
    ("KB", 10**3),
    ("KiB", 1 << 10),
    ("MB", 10**6),
    ("MiB", 1 << 20),
    ("GB", 10**9),
    ("GiB", 1 << 30),
    ("TB", 10**12),
    ("TiB", 1 << 40),
)


async def compact_index(request: Request) -> Response:
    """202 `indexCompaction`; the scheduler copies the index's LMDB file compacted (a missing index
    makes the task fail with `index_not_found`, as in Meilisearch)."""
    uid = validate_index_uid(request.path_params["index_uid"])
    meta = custom_metadata(request)
    return await state(request).enqueue("indexCompaction", uid, details={}, kind={}, custom_metadata=meta)


def exact_size(n: int) -> str:
    """A byte count in the largest unit that divides it exactly: `4 KiB`, `3 MB`, `1234 B`, `0 B`."""
    name, size = next(
        (name, size) for name, size in reversed(_EXACT_UNITS) if n % size == 0 and (n or size == 1)
    )
    return f"{n // size} {name}"


def _compact(env: Any, outcome: Future[tuple[int, int]]) -> None:
    """Copy the environment compacted over its data file while holding its write transaction, then keep
    holding it until the process ends (a failure releases it)."""
    txn = env.begin(write=True)
    try:
        source = Path(env.path()) / "data.mdb"
        before = source.stat().st_size
        copy = source.with_name("data.mdb.cpy")
        with open(copy, "wb") as file:
            env.copyfd(file.fileno(), compact=True)
            file.flush()
            os.fsync(file.fileno())
        os.replace(copy, source)
        outcome.set_result((before, source.stat().st_size))
    except Exception as err:  # reported in the response; the queue stays usable
        txn.abort()
        outcome.set_exception(err)
        return
    while True:
        time.sleep(3600)


async def compact_task_queue(request: Request) -> Response:
    if not runtime_features(request).enabled("taskQueueCompactionRoute"):
        raise feature_not_enabled(
            "Using the /tasks/compact route", "task queue compaction route", TASK_QUEUE_COMPACTION_DISCUSSION
        )
    outcome: Future[tuple[int, int]] = Future()
    env = state(request).scheduler.store.env
    threading.Thread(target=_compact, args=(env, outcome), name="task-queue-compaction", daemon=True).start()
    try:
        before, after = await asyncio.wrap_future(outcome)
    except Exception as err:
        return JSONResponse({"status": "failed", "errorMessage": str(err)}, status_code=500)
    request.app.state.must_restart = True
    return JSONResponse(
        {
            "preSize": exact_size(before),
            "postSize": exact_size(after),
            "status": "succeeded",
            "actionRequired": "you must restart your instance",
        }
    )
