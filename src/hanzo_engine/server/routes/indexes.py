"""Index routes: list, create, get, update (primary key, rename), delete, swap."""

from __future__ import annotations

import functools
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import (
    Field,
    InvalidValue,
    QueryField,
    decode_json_body,
    deserialize_object,
    found_description,
    parse_query,
)
from hanzo_engine.apitypes.errors import MeiliError, invalid_index_uid
from hanzo_engine.apitypes.index_uid import is_valid_index_uid, validate_index_uid
from hanzo_engine.apitypes.tasks import format_timestamp
from hanzo_engine.auth.controller import AuthFilter
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.scheduler.scheduler import Scheduler

from ..app_state import custom_metadata, state
from ..auth import auth_filter
from ..http import JSONResponse, query_pairs, read_body, read_index

PAGINATION = (
    QueryField("offset", "usize", "invalid_index_offset", 0),
    QueryField("limit", "usize", "invalid_index_limit", 20),
)


def _body_index_uid(uid: str) -> str:
    """An index uid read by deserr from a JSON body: its error is "Invalid value at `.uid`: ..."."""
    if not is_valid_index_uid(uid):
        raise InvalidValue(invalid_index_uid(uid).message)
    return uid


CREATE_INDEX = (
    Field(
        "uid",
        "string",
        "invalid_index_uid",
        required=True,
        missing_code="missing_index_uid",
        validate=_body_index_uid,
    ),
    Field("primaryKey", "string_or_null", "invalid_index_primary_key", default=None),
)
UPDATE_INDEX = (
    Field("primaryKey", "string_or_null", "invalid_index_primary_key"),
    Field("uid", "string", "invalid_index_uid", nullable=True),
)
IMMUTABLE_INDEX_FIELDS = {
    "createdAt": "immutable_index_created_at",
    "updatedAt": "immutable_index_updated_at",
}
SWAP = (
    Field(
        "indexes", "string_array", "invalid_swap_indexes", required=True, missing_code="missing_swap_indexes"
    ),
    Field("rename", "boolean", "invalid_swap_rename", default=False),
)


def index_view(uid: str, r: IndexReader) -> dict[str, Any]:
    return {
        "uid": uid,
        "createdAt": format_timestamp(r.created_at),
        "updatedAt": format_timestamp(r.updated_at),
        "primaryKey": r.primary_key,
    }


def _index_page(scheduler: Scheduler, offset: int, limit: int, visible: AuthFilter) -> dict[str, Any]:
    """One page of indexes sorted by uid; only the page's environments are opened, one at a time.
    Indexes the caller's key may not access are left out (and not counted), as Meilisearch."""
    uids = sorted(uid for uid in scheduler.mapper.mapping() if visible.is_index_authorized(uid))
    results = []
    for uid in uids[offset : offset + limit]:
        try:
            results.append(read_index(scheduler, uid, functools.partial(index_view, uid)))
        except MeiliError:
            continue  # deleted since the mapping was read
    return {"results": results, "offset": offset, "limit": limit, "total": len(uids)}


async def list_indexes(request: Request) -> Response:
    q = parse_query(query_pairs(request), PAGINATION)
    return JSONResponse(
        await run_in_threadpool(
            _index_page, state(request).scheduler, q["offset"], q["limit"], auth_filter(request)
        )
    )


async def create_index(request: Request) -> Response:
    meta = custom_metadata(request)
    body = deserialize_object(
        decode_json_body(await read_body(request), request.headers.get("content-type")), CREATE_INDEX
    )
    uid = body["uid"]
    pk = body["primaryKey"]
    if not auth_filter(request).allow_index_creation(uid):
        raise MeiliError("invalid_api_key", "The provided API key is invalid.")
    return await state(request).enqueue(
        "indexCreation", uid, details={"primaryKey": pk}, kind={"primaryKey": pk}, custom_metadata=meta
    )


async def get_index(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    return JSONResponse(read_index(state(request).scheduler, uid, lambda r: index_view(uid, r)))


async def update_index(request: Request) -> Response:
    meta = custom_metadata(request)
    # actix runs the body extractor before the handler validates the path's uid
    body = deserialize_object(
        decode_json_body(await read_body(request), request.headers.get("content-type")),
        UPDATE_INDEX,
        immutable=IMMUTABLE_INDEX_FIELDS,
    )
    uid = validate_index_uid(request.path_params["index_uid"])
    kind: dict[str, Any] = {}
    details: dict[str, Any] = {"primaryKey": body.get("primaryKey")}
    if "primaryKey" in body:
        kind["primaryKey"] = body["primaryKey"]
    if body.get("uid") is not None:
        new_uid = validate_index_uid(body["uid"])
        kind["newUid"] = new_uid
        details.update(oldIndexUid=uid, newIndexUid=new_uid)
    return await state(request).enqueue("indexUpdate", uid, details=details, kind=kind, custom_metadata=meta)


async def delete_index(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    meta = custom_metadata(request)
    return await state(request).enqueue(
        "indexDeletion", uid, details={"deletedDocuments": None}, kind={}, custom_metadata=meta
    )


async def swap_indexes(request: Request) -> Response:
    """Validate the whole payload (types, then pair lengths, then duplicates) before enqueueing."""
    meta = custom_metadata(request)
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    if not isinstance(body, list):
        raise MeiliError(
            "bad_request", f"Invalid value type: expected an array, but found {found_description(body)}"
        )
    entries = [deserialize_object(entry, SWAP, path=f"[{i}]") for i, entry in enumerate(body)]
    for i, entry in enumerate(entries):
        for j, name in enumerate(entry["indexes"]):
            if not is_valid_index_uid(name):
                raise MeiliError(
                    "invalid_swap_indexes",
                    f"Invalid value at `[{i}].indexes[{j}]`: {invalid_index_uid(name).message}",
                )
    visible = auth_filter(request)
    swaps = []
    for entry in entries:
        names = entry["indexes"]
        if len(names) != 2:
            listed = ", ".join(f'"{n}"' for n in names)
            raise MeiliError(
                "invalid_swap_indexes",
                f"Two indexes must be given for each swap. The list `[{listed}]` contains {len(names)} indexes.",
            )
        # as Meilisearch: each pair, once its length is checked, must be within the key's indexes
        if not all(visible.is_index_authorized(name) for name in names):
            raise MeiliError("invalid_api_key", "The provided API key is invalid.")
        swaps.append({"indexes": names, "rename": entry["rename"]})
    # Meilisearch refuses a repeated index when registering the task, before anything is enqueued.
    seen: set[str] = set()
    for swap in swaps:
        for name in swap["indexes"]:
            if name in seen:
                raise MeiliError(
                    "invalid_swap_duplicate_index_found",
                    f"Indexes must be declared only once during a swap. `{name}` was specified several times.",
                )
            seen.add(name)
    return await state(request).enqueue(
        "indexSwap", None, details={"swaps": swaps}, kind={"swaps": swaps}, custom_metadata=meta
    )
