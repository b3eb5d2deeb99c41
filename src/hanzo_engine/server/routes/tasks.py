"""Task and batch routes: list with filters, get one, its payload, cancel, delete."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from hanzo_engine.apitypes.deserr import U32_MAX
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.tasks import (
    TaskQuery,
    original_filter,
    parse_batch_uid,
    parse_task_query,
    parse_task_uid,
)

from ..app_state import state
from ..auth import auth_filter
from ..features import feature_not_enabled, runtime_features
from ..http import JSONResponse, query_pairs

TASK_DOCUMENTS_LINK: Final = "https://github.com/orgs/meilisearch/discussions/808"
_CHUNK: Final = 1 << 20


def _page(listing: dict[str, Any], q: TaskQuery) -> JSONResponse:
    # Meilisearch asks its queue for `limit + 1` items (saturating at u32::MAX) to learn whether a next
    # page exists, then reports `limit - 1`: so `limit=4294967295` is echoed as 4294967294.
    if q.limit == U32_MAX:
        listing["limit"] = U32_MAX - 1
    return JSONResponse(listing)


def _visible(request: Request, q: TaskQuery) -> TaskQuery:
    """A key limited to some indexes sees only their tasks (and no global task), as Meilisearch."""
    visible = auth_filter(request)
    if visible.all_indexes_authorized():
        return q
    return state(request).scheduler.restrict_to_indexes(q, visible.is_index_authorized)


async def list_tasks(request: Request) -> Response:
    q = _visible(request, parse_task_query(query_pairs(request), "tasks"))
    return _page(state(request).scheduler.list_tasks(q), q)


async def get_task(request: Request) -> Response:
    uid = parse_task_uid(request.path_params["task_uid"])
    task = state(request).scheduler.get_task(uid)
    visible = auth_filter(request)
    if (
        task is not None
        and not visible.all_indexes_authorized()
        and not (task["indexUid"] is not None and visible.is_index_authorized(task["indexUid"]))
    ):
        task = None
    if task is None:
        raise MeiliError("task_not_found", f"Task `{uid}` not found.")
    return JSONResponse(task)


def _open_payload(request: Request, uid: int) -> tuple[BinaryIO, bool]:
    """The task's stored payload, open for reading (it stays readable if the batch deletes it), and
    whether it was uploaded as NDJSON."""
    scheduler = state(request).scheduler
    task = scheduler.store.get_task(uid)
    visible = auth_filter(request)
    if (
        task is not None
        and not visible.all_indexes_authorized()
        and not (task["indexUid"] is not None and visible.is_index_authorized(task["indexUid"]))
    ):
        task = None
    if task is None:
        raise MeiliError("task_not_found", f"Task `{uid}` not found.")
    # a finished task's payload is deleted (maybe not yet: the scheduler deletes it in the background)
    waiting = task["status"] in ("enqueued", "processing") and task["type"] == "documentAdditionOrUpdate"
    content = task["kind"].get("contentFile") if waiting else None
    try:
        if not content:
            raise FileNotFoundError(uid)
        f = open(scheduler.update_files / content, "rb")  # closed by `_stream`
    except FileNotFoundError:
        raise MeiliError(
            "task_file_not_found",
            f"Task `{uid}` does not contain any documents. Only `documentAdditionOrUpdate` tasks with the "
            "statuses `enqueued` or `processing` contain documents",
        ) from None
    return f, task["kind"].get("payloadFormat", "ndjson") == "ndjson"


def _stream(f: BinaryIO, separators: bool) -> Iterator[bytes]:
    """The file in chunks; without the line separators when the upload was JSON or CSV (Meilisearch
    stores those documents as compact JSON objects one after the other; compact JSON holds no raw
    newline, so every newline byte of the file is a separator)."""
    with f:
        while chunk := f.read(_CHUNK):
            yield chunk if separators else chunk.replace(b"\n", b"")


async def get_task_documents(request: Request) -> Response:
    """The documents of an enqueued or processing `documentAdditionOrUpdate` task, as NDJSON."""
    if not runtime_features(request).enabled("getTaskDocumentsRoute"):
        raise feature_not_enabled(
            "Getting the documents of an enqueued task", "get task documents route", TASK_DOCUMENTS_LINK
        )
    uid = parse_task_uid(request.path_params["task_uid"])
    f, separators = await run_in_threadpool(_open_payload, request, uid)
    return StreamingResponse(_stream(f, separators), media_type="application/x-ndjson")


async def _enqueue_filtered(request: Request, type_: str, counter: str) -> Response:
    """Cancel or delete: the task records the matching uids now and the raw query as `originalFilter`."""
    q = _visible(
        request, parse_task_query(query_pairs(request), "cancel" if type_ == "taskCancelation" else "delete")
    )
    response = await state(request).enqueue(
        type_,
        None,
        # `req.query_string()` in Meilisearch: the query exactly as received, still percent-encoded
        details={"matchedTasks": 0, counter: None, "originalFilter": original_filter(request.url.query)},
        kind={"query": q},
    )
    # Unlike every other asynchronous route, cancel and delete answer 200, not 202.
    response.status_code = 200
    return response


async def cancel_tasks(request: Request) -> Response:
    return await _enqueue_filtered(request, "taskCancelation", "canceledTasks")


async def delete_tasks(request: Request) -> Response:
    return await _enqueue_filtered(request, "taskDeletion", "deletedTasks")


async def list_batches(request: Request) -> Response:
    q = _visible(request, parse_task_query(query_pairs(request), "batches"))
    return _page(state(request).scheduler.list_batches(q), q)


async def get_batch(request: Request) -> Response:
    uid = parse_batch_uid(request.path_params["batch_uid"])
    batch = state(request).scheduler.get_batch(uid)
    if batch is None:
        raise MeiliError("batch_not_found", f"Batch `{uid}` not found.")
    return JSONResponse(batch)
