"""Chat routes (= Meilisearch's `routes/chats/`): workspaces, their settings and chat completions.

Every route is behind the experimental feature `chatCompletions` (checked after auth, before anything else
but the body's JSON shape, as Meilisearch's extractors run first). Workspaces live in the tasks environment
(`scheduler/chats.py`), written synchronously by the primary process; no task is involved.

`POST /chats/{workspace}/chat/completions` streams Server-Sent Events; the conversation itself (LLM rounds,
searches, sources) is `server.chats.conversation`.
"""

from __future__ import annotations

from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.chat_settings import (
    apply_workspace_patch,
    default_workspace,
    parse_workspace_patch,
    workspace_view,
)
from hanzo_engine.apitypes.deserr import QueryField, decode_json_body, parse_query
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.scheduler import chats as store

from ..app_state import state
from ..chats.conversation import start_completion
from ..chats.gate import check_chat
from ..http import JSONResponse, query_pairs, read_body

# `GET /chats` pages as `GET /indexes` does, with the same error codes
PAGINATION: Final = (
    QueryField("offset", "usize", "invalid_index_offset", 0),
    QueryField("limit", "usize", "invalid_index_limit", 20),
)


def _chat_not_found(uid: str) -> MeiliError:
    """The settings and completion routes' 404 (the workspace routes use `_workspace_not_found`)."""
    return MeiliError("chat_not_found", f"Chat `{uid}` not found")


def _workspace_not_found(uid: str) -> MeiliError:
    return MeiliError("chat_not_found", f"chat {uid} not found")


async def list_chats(request: Request) -> Response:
    q = parse_query(query_pairs(request), PAGINATION)
    check_chat(request, "listing the chats")
    uids = await run_in_threadpool(store.list_workspaces, state(request).scheduler.store)
    offset, limit = q["offset"], q["limit"]
    page = [{"uid": uid} for uid in uids[offset : offset + limit]]
    return JSONResponse({"results": page, "offset": offset, "limit": limit, "total": len(uids)})


async def get_chat(request: Request) -> Response:
    check_chat(request, "displaying a chat")
    uid = validate_index_uid(request.path_params["workspace"])
    if await run_in_threadpool(store.get_workspace, state(request).scheduler.store, uid) is None:
        raise _workspace_not_found(uid)
    return JSONResponse({"uid": uid})


async def delete_chat(request: Request) -> Response:
    check_chat(request, "deleting a chat")
    uid = validate_index_uid(request.path_params["workspace"])
    if not await run_in_threadpool(store.delete_workspace, state(request).scheduler.store, uid):
        raise _workspace_not_found(uid)
    return Response(status_code=204)


async def get_chat_settings(request: Request) -> Response:
    check_chat(request, "using the /chats/settings route")
    uid = request.path_params["workspace"]
    settings = await run_in_threadpool(store.get_workspace, state(request).scheduler.store, uid)
    if settings is None:
        raise _chat_not_found(uid)
    return JSONResponse(workspace_view(settings))


def _patch(sched_store: Any, uid: str, patch: dict[str, Any]) -> dict[str, Any]:
    new = apply_workspace_patch(store.get_workspace(sched_store, uid), patch)
    store.put_workspace(sched_store, uid, new)
    return new


async def patch_chat_settings(request: Request) -> Response:
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    patch = parse_workspace_patch(body)
    check_chat(request, "using the /chats/settings route")
    uid = request.path_params["workspace"]
    new = await run_in_threadpool(_patch, state(request).scheduler.store, uid, patch)
    return JSONResponse(workspace_view(new))


def _reset(sched_store: Any, uid: str) -> dict[str, Any] | None:
    if store.get_workspace(sched_store, uid) is None:
        return None
    settings = default_workspace()
    store.put_workspace(sched_store, uid, settings)
    return settings


async def reset_chat_settings(request: Request) -> Response:
    check_chat(request, "using the /chats/settings route")
    uid = request.path_params["workspace"]
    settings = await run_in_threadpool(_reset, state(request).scheduler.store, uid)
    if settings is None:
        raise _chat_not_found(uid)
    return JSONResponse(workspace_view(settings))


async def chat_completions(request: Request) -> Response:
    uid = request.path_params["workspace"]
    return await start_completion(request, uid, await read_body(request), _chat_not_found)
