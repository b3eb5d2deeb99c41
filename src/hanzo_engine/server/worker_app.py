"""The ASGI application of a search worker process (see `server.workers` for the whole design).

The search routes (search, multi-search, facet search, similar) run here, on read-only environments,
behind the same middleware and auth as in the primary; every other request goes to the primary through
`server.proxy`. The worker publishes its HTTP metrics to the runtime directory for the primary's
`/metrics`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final, cast

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Match, Route
from starlette.types import Message, Receive, Scope, Send

from hanzo_engine.auth import AuthController, KeyStore
from hanzo_engine.scheduler.readers import IndexReaders

from . import sharding
from .app import http_middleware
from .app_state import AppState
from .errors import http_exception
from .metrics import http_metrics
from .options import Options
from .proxy import PrimaryProxy
from .route_table import ROUTES, starlette_route
from .search_lane import SearchLane
from .shared_counts import SharedCounts, SharedGeneration
from .workers import FEATURES_CHANGES, METRICS_PREFIX, PRIMARY_SOCKET, SEARCH_COUNTS

log = logging.getLogger("hanzo_engine.server.worker")

# (method, path template) of the routes a worker answers itself: the read-only search family
LOCAL_ROUTES: Final = frozenset((spec.method, spec.path) for spec in ROUTES if spec.worker)
METRICS_PUBLISH_SECONDS: Final = 1.0
WORKER_HEADER: Final = b"x-hanzo-worker"


class WorkerDispatch:
    """Search routes to the local app, everything else to the primary."""

    def __init__(self, local: Starlette, proxy: PrimaryProxy, slot: int) -> None:
        self.local = local
        self.proxy = proxy
        self.lane = SearchLane(local, local, http_middleware())
        self.routes = [r for r in local.router.routes if isinstance(r, Route)]
        # names the process that answered a search (for operators and the multi-process tests)
        self._served_by = (WORKER_HEADER, str(slot).encode())

    def _is_local(self, scope: Scope) -> bool:
        return any(route.matches(scope)[0] is Match.FULL for route in self.routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]

            async def send_marked(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []), self._served_by]}
                await send(message)

            uid = self.lane.takes(scope)
            if uid is not None:
                await self.lane.serve(scope, uid, receive, send_marked)
                return
            if len(path) > 1 and path.endswith("/"):
                scope = dict(scope, path=path.rstrip("/") or "/")
            if not self._is_local(scope):
                await self.proxy(scope, receive, send)
                return
            await self.local(scope, receive, send_marked)
            return
        await self.local(scope, receive, send)


def _publish_metrics(app: Starlette, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(http_metrics(app.state).snapshot())
    os.replace(tmp, path)


def create_worker_app(options: Options, runtime_dir: Path, slot: int) -> WorkerDispatch:
    readers = IndexReaders(options.db_path)
    sharding.install_filter(readers.store)  # `_shard` filters against the stored network
    # the worker never runs the scheduler: only the search routes run here, and they read `indexes`
    app_state = AppState(options=options, scheduler=cast(Any, None), indexes=readers)
    proxy = PrimaryProxy(str(runtime_dir / PRIMARY_SOCKET))
    metrics_path = runtime_dir / f"{METRICS_PREFIX}{slot}.json"

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        registry = http_metrics(app.state)
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            # a restarted worker goes on from its predecessor's counts: counters never go back
            registry.add(metrics_path.read_bytes())

        async def publish() -> None:
            published = None
            while True:
                await asyncio.sleep(METRICS_PUBLISH_SECONDS)
                current = (sum(registry.requests.values()), len(registry.requests))
                if current != published:
                    with contextlib.suppress(OSError):
                        _publish_metrics(app, metrics_path)
                    published = current

        def publish_now() -> None:
            with contextlib.suppress(OSError):
                _publish_metrics(app, metrics_path)

        publisher = asyncio.create_task(publish())
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, publish_now)  # the primary's `/metrics` asks
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGUSR1)
            publisher.cancel()
            with contextlib.suppress(OSError):
                _publish_metrics(app, metrics_path)
            await proxy.aclose()
            readers.close()

    routes = [starlette_route(spec) for spec in ROUTES if spec.worker]
    local = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: http_exception},
        middleware=http_middleware(),
    )
    local.router.redirect_slashes = False
    local.state.hanzo = app_state
    local.state.master_key = options.master_key
    local.state.key_resolver = AuthController(
        KeyStore(options.db_path / "auth", readonly=True), options.master_key
    )
    local.state.payload_limit = options.http_payload_size_limit
    local.state.search_counts = SharedCounts(runtime_dir / SEARCH_COUNTS, slot)
    local.state.features_changes = SharedGeneration(runtime_dir / FEATURES_CHANGES)
    return WorkerDispatch(local, proxy, slot)
