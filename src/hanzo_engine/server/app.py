"""`create_app(options)`: the Starlette application serving Meilisearch's HTTP API."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from hanzo_engine.scheduler.scheduler import Scheduler

from . import sharding
from .app_state import AppState
from .errors import http_exception
from .metrics import HttpMetrics
from .options import Options
from .route_table import ROUTES, starlette_route
from .routes import keys, webhooks
from .wait_for_task import WaitForTask
from .workers import WorkerPool

log = logging.getLogger("hanzo_engine.server")


class TrimTrailingSlash:
    """Meilisearch trims trailing slashes before routing: `/indexes/` is `/indexes`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if len(path) > 1 and path.endswith("/"):
                scope = dict(scope, path=path.rstrip("/") or "/")
        await self.app(scope, receive, send)


def http_middleware() -> list[Middleware]:
    """What every process of the server wraps its routes in, outermost first (the primary adds
    `WaitForTask` innermost). The innermost ones see the matched route and the uncompressed bodies."""
    return [
        Middleware(TrimTrailingSlash),
        Middleware(
            CORSMiddleware,
            allow_origins=["*"],
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["*"],
            max_age=86400,
        ),
        Middleware(GZipMiddleware, minimum_size=1024),
        Middleware(HttpMetrics),
    ]


def create_app(options: Options, *, scheduler: Scheduler | None = None) -> Starlette:
    from . import startup

    # lock the data directory, restore a snapshot, check the format version (before any env is opened)
    boot = startup.prepare(options)
    if scheduler is None:
        scheduler = Scheduler(
            options.db_path,
            max_batched_tasks=options.experimental_max_number_of_batched_tasks,
            batch_size_limit=options.experimental_limit_batched_tasks_total_size,
            max_indexing_memory=options.max_indexing_memory,
            max_indexing_threads=options.max_indexing_threads,
            dump_dir=options.dump_dir,
            snapshot_dir=options.snapshot_dir,
        )
    app_state = AppState(options=options, scheduler=scheduler)
    sharding.install_filter(scheduler.store)  # `_shard` filters against the stored network
    webhooks.install(scheduler, options)  # outgoing-request policy, task webhook sender

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        scheduler.start()
        boot.start(scheduler)
        sharding.resume_forwards(scheduler.store)  # writes a previous run took but had not forwarded yet
        pool: WorkerPool | None = getattr(app.state, "worker_pool", None)
        if pool is not None:
            # every index opened once for writing first: a worker opens environments read-only and
            # needs every database of an index to exist already
            scheduler.indexes()
            pool.start()
        try:
            yield
        finally:
            if pool is not None:
                pool.stop()
            scheduler.stop()
            boot.stop()

    routes = [starlette_route(spec) for spec in ROUTES]
    exception_handlers: dict[Any, Any] = {HTTPException: http_exception}
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers=exception_handlers,
        middleware=[*http_middleware(), Middleware(WaitForTask), Middleware(sharding.ShardedWrites)],
    )
    app.router.redirect_slashes = False
    app.state.hanzo = app_state
    app.state.master_key = options.master_key
    app.state.key_resolver = keys.open_controller(options)
    boot.attach(scheduler, app.state.key_resolver.store)  # `--import-dump`, keys env for snapshots
    app.state.payload_limit = options.http_payload_size_limit
    return app
