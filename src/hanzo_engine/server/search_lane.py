"""The search lane: `POST /indexes/{index_uid}/search` served without the general request path.

A search is the request a production instance answers most, and its answer costs little next to the
layers every request crosses on its way to a handler (the error and exception middlewares, the
trailing-slash rewrite, the write-forwarding and wait-for-task checks, a router matching the path
against the whole route table, a second match in a search worker). The lane recognises the search
route from the raw path and sends the request straight to the route's own endpoint (auth guard,
handler, Meilisearch errors: `route_table.starlette_route`) wrapped in the same response middlewares
as every route (`app.http_middleware`: CORS, gzip, HTTP metrics), so an answer is byte for byte the one
the general path gives. Every other request, and a search carrying `X-Hanzo-Wait-For-Task` (whose
checks belong to `server.wait_for_task`), goes the general path.
"""

from __future__ import annotations

import re
from typing import Final

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .wait_for_task import WAIT_HEADER

SEARCH_PATH: Final = "/indexes/{index_uid}/search"
# starlette's `{index_uid}` converter: one non-empty path segment; a trailing slash is trimmed first
_SEARCH_RE: Final = re.compile(r"/indexes/([^/]+)/search/?")


def _search_route(app: Starlette) -> Route:
    for route in app.router.routes:
        if isinstance(route, Route) and route.path == SEARCH_PATH and "POST" in (route.methods or ()):
            return route
    raise LookupError("the app has no POST /indexes/{index_uid}/search route")


def _wrap(app: ASGIApp, middleware: list[Middleware]) -> ASGIApp:
    for cls, args, kwargs in reversed(middleware):
        app = cls(app, *args, **kwargs)
    return app


class SearchLane:
    """`POST /indexes/{index_uid}/search` to the search endpoint of `local`, everything else to `app`.

    `local` is the Starlette app whose routes, state and middleware the lane reuses; `middleware` the
    response middlewares of `app.http_middleware()`, outermost first."""

    def __init__(self, app: ASGIApp, local: Starlette, middleware: list[Middleware]) -> None:
        self.app = app
        self.local = local
        self.route = _search_route(local)
        self.endpoint = self.route.endpoint
        self.stack = _wrap(self._answer, middleware)

    def takes(self, scope: Scope) -> str | None:
        """The raw index uid when the lane answers this request."""
        if scope["type"] != "http" or scope["method"] != "POST":
            return None
        match = _SEARCH_RE.fullmatch(scope["path"])
        if match is None:
            return None
        for name, _ in scope["headers"]:
            if name == WAIT_HEADER:
                return None
        return match[1]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        uid = self.takes(scope)
        if uid is None:
            await self.app(scope, receive, send)
            return
        await self.serve(scope, uid, receive, send)

    async def serve(self, scope: Scope, uid: str, receive: Receive, send: Send) -> None:
        """Answer a request `takes` accepted (with `uid`, what it returned)."""
        # what starlette's app, router and route would have put in the scope
        scope = {
            **scope,
            "app": self.local,
            "router": self.local.router,
            "route": self.route,
            "endpoint": self.endpoint,
            "path_params": {"index_uid": uid},
        }
        await self.stack(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.endpoint(Request(scope, receive, send))
        await response(scope, receive, send)
