"""What every route needs: the app's shared state, its API keys, the `customMetadata` of a task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import QueryField, parse_query

from .http import IndexSource, JSONResponse, query_pairs

if TYPE_CHECKING:
    from hanzo_engine.auth import AuthController
    from hanzo_engine.scheduler.scheduler import Scheduler

    from .options import Options


@dataclass
class AppState:
    options: Options
    scheduler: Scheduler
    # where the search routes read indexes: the scheduler itself, or a search worker's read-only view
    indexes: IndexSource = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.indexes is None:
            self.indexes = self.scheduler

    async def enqueue(
        self,
        type_: str,
        index_uid: str | None,
        *,
        details: dict[str, Any] | None,
        kind: dict[str, Any],
        custom_metadata: str | None = None,
    ) -> Response:
        """Register a task off the event loop (it waits for a synced LMDB commit) and answer 202."""
        task = await run_in_threadpool(
            self.scheduler.register,
            type_,
            index_uid,
            details=details,
            kind=kind,
            custom_metadata=custom_metadata,
        )
        return JSONResponse(task, status_code=202)


def state(request: Request) -> AppState:
    st: AppState = request.app.state.hanzo
    return st


def controller(request: Request) -> AuthController:
    """The app's API keys (`app.state.key_resolver`)."""
    ctl: AuthController = request.app.state.key_resolver
    return ctl


CUSTOM_METADATA: Final = QueryField("customMetadata", "string", "invalid_index_custom_metadata", None)


def custom_metadata(request: Request) -> str | None:
    """The `customMetadata` query parameter a task-enqueuing route stores on its task."""
    value: str | None = parse_query(query_pairs(request), (CUSTOM_METADATA,))["customMetadata"]
    return value
