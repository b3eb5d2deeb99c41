"""Every failure becomes a Meilisearch error body; nothing leaks a traceback to the client."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.errors import MeiliError, error_json

from .http import JSONResponse

log = logging.getLogger("hanzo_engine.server")

Endpoint = Callable[[Request], Awaitable[Response]]


def error_response(err: MeiliError) -> Response:
    return JSONResponse(err.to_json(), status_code=err.status)


def safe(endpoint: Endpoint) -> Endpoint:
    """Run an endpoint, answering MeiliErrors with their code and anything else with a 500 `internal`."""

    async def wrapped(request: Request) -> Response:
        try:
            return await endpoint(request)
        except MeiliError as err:
            return error_response(err)
        except Exception as exc:
            log.exception("internal error on %s %s", request.method, request.url.path)
            return JSONResponse(
                error_json("internal", f"An internal error occurred: {type(exc).__name__}."), status_code=500
            )

    wrapped.__name__ = getattr(endpoint, "__name__", "endpoint")
    wrapped.__doc__ = endpoint.__doc__
    return wrapped


async def http_exception(request: Request, exc: Exception) -> Response:
    # actix answers unknown paths (404) and wrong methods (405) with an empty body.
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    return Response(status_code=status)
