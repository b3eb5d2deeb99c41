"""Index routes: list, create, get, update (primary key, rename), delete, swap."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import Field, QueryField, decode_json_body, deserialize_object, parse_query
from hanzo_engine.apitypes.errors import MeiliError, index_not_found
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.apitypes.tasks import format_timestamp
from hanzo_engine.engine.index import Index

from ..app_state import route, state
from ..http import JSONResponse, query_pairs, read_body

PAGINATION = (
    QueryField("offset", "usize", "invalid_index_offset", 0),
    QueryField("limit", "usize", "invalid_index_limit", 20),
)
CREATE_INDEX = (
    Field("uid", "string", "invalid_index_uid", required=True, missing_code="missing_index_uid"),
    Field("primaryKey", "string_or_null", "invalid_index_primary_key", default=None),
)
UPDATE_INDEX = (
    Field("primaryKey", "string_or_null", "invalid_index_primary_key"),
    Field("uid", "string", "invalid_index_uid"),
)
IMMUTABLE_INDEX_FIELDS = {"createdAt": "immutable_index_created_at", "updatedAt": "immutable_index_updated_at"}
SWAP = (
    Field("indexes", "string_array", "invalid_swap_indexes", required=True, missing_code="missing_swap_indexes"),
    Field("rename", "boolean", "invalid_swap_rename", default=False),
)
CUSTOM_METADATA = QueryField("customMetadata", "string", "invalid_index_custom_metadata", None)


def index_view(uid: str, index: Index) -> dict[str, Any]:
    with index.read() as r:
        return {
            "uid": uid,
            "createdAt": format_timestamp(r.created_at),
            "updatedAt": format_timestamp(r.updated_at),
            "primaryKey": r.primary_key,
        }


def custom_metadata(request: Request) -> str | None:
    value: str | None = parse_query(query_pairs(request), (CUSTOM_METADATA,))["customMetadata"]
    return value


@route("GET", "/indexes", action="indexes.get")
async def list_indexes(request: Request) -> Response:
    q = parse_query(query_pairs(request), PAGINATION)
    all_indexes = state(request).scheduler.indexes()
    page = all_indexes[q["offset"] : q["offset"] + q["limit"]]
    return JSONResponse({
        "results": [index_view(uid, index) for uid, index in page],
        "offset": q["offset"], "limit": q["limit"], "total": len(all_indexes),
    })


@route("POST", "/indexes", action="indexes.create")
async def create_index(request: Request) -> Response:
    meta = custom_metadata(request)
    body = deserialize_object(decode_json_body(await read_body(request), request.headers.get("content-type")),
                              CREATE_INDEX)
    uid = validate_index_uid(body["uid"])
    pk = body["primaryKey"]
    return await state(request).enqueue(
        "indexCreation", uid, details={"primaryKey": pk}, kind={"primaryKey": pk}, custom_metadata=meta
    )


@route("GET", "/indexes/{index_uid}", action="indexes.get")
async def get_index(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    index = state(request).scheduler.index(uid)
    if index is None:
        raise index_not_found(uid)
    return JSONResponse(index_view(uid, index))


@route("PATCH", "/indexes/{index_uid}", action="indexes.update")
async def update_index(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    meta = custom_metadata(request)
    body = deserialize_object(decode_json_body(await read_body(request), request.headers.get("content-type")),
                              UPDATE_INDEX, immutable=IMMUTABLE_INDEX_FIELDS)
    kind: dict[str, Any] = {}
    details: dict[str, Any] = {"primaryKey": body.get("primaryKey")}
    if "primaryKey" in body:
        kind["primaryKey"] = body["primaryKey"]
    if "uid" in body:
        new_uid = validate_index_uid(body["uid"])
        kind["newUid"] = new_uid
        details.update(oldIndexUid=uid, newIndexUid=new_uid)
    return await state(request).enqueue("indexUpdate", uid, details=details, kind=kind, custom_metadata=meta)


@route("DELETE", "/indexes/{index_uid}", action="indexes.delete")
async def delete_index(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    meta = custom_metadata(request)
    return await state(request).enqueue(
        "indexDeletion", uid, details={"deletedDocuments": None}, kind={}, custom_metadata=meta
    )


@route("POST", "/swap-indexes", action="indexes.swap")
async def swap_indexes(request: Request) -> Response:
    meta = custom_metadata(request)
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    if not isinstance(body, list):
        raise MeiliError("bad_request", f"Invalid value type: expected an array, but found {_kind(body)}")
    swaps = []
    for i, entry in enumerate(body):
        swap = deserialize_object(entry, SWAP, path=f"[{i}]")
        names = swap["indexes"]
        if len(names) != 2:
            listed = ", ".join(f'"{n}"' for n in names)
            raise MeiliError(
                "invalid_swap_indexes",
                f"Two indexes must be given for each swap. The list `[{listed}]` contains {len(names)} indexes.",
            )
        for name in names:
            validate_index_uid(name)
        swaps.append({"indexes": names, "rename": swap["rename"]})
    return await state(request).enqueue(
        "indexSwap", None, details={"swaps": swaps}, kind={"swaps": swaps}, custom_metadata=meta
    )


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object: `{...}`"
    if isinstance(value, str):
        return f'a string: `"{value}"`'
    return f"`{value}`"
