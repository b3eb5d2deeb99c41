"""Task and batch routes: list with filters, get one, cancel, delete."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.tasks import original_filter, parse_task_query

from ..app_state import route, state
from ..http import JSONResponse, query_pairs


def _uid(raw: str, code: str, what: str) -> int:
    if not raw.isdigit() or int(raw) >= 2**32:
        raise MeiliError(code, f"{what} uid `{raw}` is invalid. It should only contain numeric characters.")
    return int(raw)


@route("GET", "/tasks", action="tasks.get")
async def list_tasks(request: Request) -> Response:
    q = parse_task_query(query_pairs(request), "tasks")
    return JSONResponse(state(request).scheduler.list_tasks(q))


@route("GET", "/tasks/{task_uid}", action="tasks.get")
async def get_task(request: Request) -> Response:
    raw = request.path_params["task_uid"]
    uid = _uid(raw, "invalid_task_uids", "Task")
    task = state(request).scheduler.get_task(uid)
    if task is None:
        raise MeiliError("task_not_found", f"Task `{uid}` not found.")
    return JSONResponse(task)


@route("POST", "/tasks/cancel", action="tasks.cancel")
async def cancel_tasks(request: Request) -> Response:
    pairs = query_pairs(request)
    q = parse_task_query(pairs, "cancel")
    response = await state(request).enqueue(
        "taskCancelation", None,
        details={"matchedTasks": 0, "canceledTasks": None, "originalFilter": original_filter(pairs)},
        kind={"query": q},
    )
    response.status_code = 200
    return response


@route("DELETE", "/tasks", action="tasks.delete")
async def delete_tasks(request: Request) -> Response:
    pairs = query_pairs(request)
    q = parse_task_query(pairs, "delete")
    response = await state(request).enqueue(
        "taskDeletion", None,
        details={"matchedTasks": 0, "deletedTasks": None, "originalFilter": original_filter(pairs)},
        kind={"query": q},
    )
    response.status_code = 200
    return response


@route("GET", "/batches", action="tasks.get")
async def list_batches(request: Request) -> Response:
    q = parse_task_query(query_pairs(request), "batches")
    return JSONResponse(state(request).scheduler.list_batches(q))


@route("GET", "/batches/{batch_uid}", action="tasks.get")
async def get_batch(request: Request) -> Response:
    raw = request.path_params["batch_uid"]
    uid = _uid(raw, "invalid_batch_uids", "Batch")
    batch = state(request).scheduler.get_batch(uid)
    if batch is None:
        raise MeiliError("batch_not_found", f"Batch `{uid}` not found.")
    return JSONResponse(batch)
