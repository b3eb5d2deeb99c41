"""`GET` and `PATCH /experimental-features` (the features themselves: `server.features`)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import decode_json_body, deserialize_object

from ..features import FEATURE_FIELDS, runtime_features
from ..http import JSONResponse, read_body


async def get_features(request: Request) -> Response:
    return JSONResponse(runtime_features(request).view())


async def patch_features(request: Request) -> Response:
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    patch = deserialize_object(body, FEATURE_FIELDS)
    return JSONResponse(await run_in_threadpool(runtime_features(request).update, patch))
