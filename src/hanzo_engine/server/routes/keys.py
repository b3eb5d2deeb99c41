"""API key routes (= Meilisearch's `routes/api_key.rs`): list, create, get, update, delete.

All need the master key or a key holding the matching `keys.*` action; without a master key the guard
answers 401 `missing_master_key`. A key is addressed by its uid or by its key value. As with actix's
extractors, a PATCH body is validated before the key in the path is looked up.
"""

from __future__ import annotations

from typing import Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import QueryField, decode_json_body, parse_query
from hanzo_engine.auth import AuthController, open_auth
from hanzo_engine.auth.keys import parse_create_key, parse_patch_key

from ..app_state import controller
from ..http import JSONResponse, query_pairs, read_body
from ..options import Options

PAGINATION: Final = (
    QueryField("offset", "usize", "invalid_api_key_offset", 0),
    QueryField("limit", "usize", "invalid_api_key_limit", 20),
)


def open_controller(options: Options) -> AuthController:
    """The app's key resolver: the keys stored under `<db_path>/auth`, checked against the master key."""
    return open_auth(options.db_path, options.master_key)


async def list_keys(request: Request) -> Response:
    """One page of keys, most recently created first; `total` counts them all."""
    q = parse_query(query_pairs(request), PAGINATION)
    ctl = controller(request)
    keys = ctl.list_keys()
    page = keys[q["offset"] : q["offset"] + q["limit"]]
    return JSONResponse(
        {
            "results": [ctl.view(k) for k in page],
            "offset": q["offset"],
            "limit": q["limit"],
            "total": len(keys),
        }
    )


async def create_key(request: Request) -> Response:
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    key = parse_create_key(body)
    ctl = controller(request)
    # a synced LMDB commit: off the event loop
    created = await run_in_threadpool(ctl.create_key, key)
    return JSONResponse(ctl.view(created), status_code=201)


async def get_key(request: Request) -> Response:
    ctl = controller(request)
    return JSONResponse(ctl.view(ctl.get_key(ctl.resolve_uid(request.path_params["key_or_uid"]))))


async def update_key(request: Request) -> Response:
    patch = parse_patch_key(decode_json_body(await read_body(request), request.headers.get("content-type")))
    ctl = controller(request)
    uid = ctl.resolve_uid(request.path_params["key_or_uid"])
    updated = await run_in_threadpool(ctl.update_key, uid, patch)
    return JSONResponse(ctl.view(updated))


async def delete_key(request: Request) -> Response:
    ctl = controller(request)
    uid = ctl.resolve_uid(request.path_params["key_or_uid"])
    await run_in_threadpool(ctl.delete_key, uid)
    return Response(status_code=204)
