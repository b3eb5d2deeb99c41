"""POST /dumps and POST /snapshots (= Meilisearch's `routes/dump.rs` and `routes/snapshot.rs`).

Both take no body and answer 202 with the summarized task. As Meilisearch, the dump task carries the
API keys as they are when it is registered (and the instance uid), which the dump writes to
`keys.jsonl`; the dump itself is written by the scheduler (`scheduler.backups`).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.scheduler.backups import key_lines, read_instance_uid

from ..app_state import controller, state


async def create_dump(request: Request) -> Response:
    st = state(request)
    keys = key_lines(controller(request).list_keys())
    instance_uid = await run_in_threadpool(read_instance_uid, st.options.db_path)
    return await st.enqueue(
        "dumpCreation", None, details={"dumpUid": None}, kind={"keys": keys, "instanceUid": instance_uid}
    )


async def create_snapshot(request: Request) -> Response:
    return await state(request).enqueue("snapshotCreation", None, details=None, kind={})
