"""GET /health, /version, / and the stats routes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, Response

from hanzo_engine import MEILISEARCH_COMPAT_VERSION
from hanzo_engine.apitypes.deserr import QueryField, parse_query
from hanzo_engine.apitypes.errors import MeiliError, index_not_found
from hanzo_engine.apitypes.tasks import format_timestamp
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.storage.environment import file_bytes
from hanzo_engine.engine.vector.store import VectorStore
from hanzo_engine.scheduler.stats import database_sizes, human_size

from .. import dashboard
from ..app_state import AppState, state
from ..auth import auth_filter
from ..http import JSONResponse


async def health(request: Request) -> Response:
    if getattr(
        request.app.state, "must_restart", False
    ):  # the task queue was compacted (`POST /tasks/compact`)
        return JSONResponse({"status": "mustRestart"}, status_code=500)
    return JSONResponse({"status": "available"})


async def version(request: Request) -> Response:
    return JSONResponse(
        {
            "commitSha": os.environ.get("HANZO_COMMIT_SHA", "unknown"),
            "commitDate": os.environ.get("HANZO_COMMIT_DATE", "unknown"),
            "pkgVersion": MEILISEARCH_COMPAT_VERSION,
        }
    )


def _wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


async def root(request: Request) -> Response:
    """The search preview dashboard; in production only for a browser (the page then needs a key).

    Meilisearch answers `/` in production with a status object; scripts and clients still get it.
    """
    if state(request).options.env == "production" and not _wants_html(request):
        return JSONResponse({"status": "Meilisearch is running"})
    return FileResponse(
        dashboard.INDEX_HTML,
        media_type=dashboard.media_type(dashboard.INDEX_HTML),
        headers={"cache-control": "no-cache"},
    )


async def dashboard_asset(request: Request) -> Response:
    """A static file of the dashboard (its script, style sheet and vendored libraries)."""
    path = dashboard.asset(request.path_params["asset"])
    if path is None:
        return Response(status_code=404)
    return FileResponse(path, media_type=dashboard.media_type(path), headers={"cache-control": "no-cache"})


def _dir_size(path: Path) -> int:
    total = 0
    for root_dir, _dirs, files in os.walk(path):
        for name in files:
            total += file_bytes(os.path.join(root_dir, name))  # an index's data file is sparse
    return total


def _size_format(text: str) -> bool:
    """`sizeFormat`: True for `human`, False for `raw` (deserr's enum error otherwise)."""
    if text not in ("human", "raw"):
        raise MeiliError(
            "invalid_stats_size_format",
            f"Unknown value `{text}` for parameter `sizeFormat`: expected one of `human`, `raw`",
        )
    return text == "human"


STATS_QUERY = (
    QueryField("showInternalDatabaseSizes", "bool", "invalid_stats_show_internal_database_sizes", False),
    QueryField("sizeFormat", "string", "invalid_stats_size_format", False, parse=_size_format),
)


def _size(n: int, human: bool) -> int | str:
    return human_size(n) if human else n


def _stats_of(
    st: AppState, uid: str, index: Index, *, internal: bool, human: bool = False
) -> tuple[dict[str, Any], int]:
    """IndexStats (Meilisearch field order) and the index's `updatedAt`, from one read transaction."""
    with index.read() as r:
        count = r.number_of_documents()
        raw_size = r.documents_size()
        stats: dict[str, Any] = {
            "numberOfDocuments": count,
            "rawDocumentDbSize": _size(raw_size, human),
            "avgDocumentSize": _size(raw_size // count if count else 0, human),
            # Meilisearch 1.53: the index's database file and the part of it in use
            "indexSize": _size(index.file_size(), human),
            "usedIndexSize": _size(index.used_size(), human),
            "isIndexing": st.scheduler.is_indexing(uid),
        }
        if internal:
            sizes = database_sizes(r)
            if sizes:
                stats["internalDatabaseSizes"] = {name: _size(n, human) for name, n in sizes.items()}
        embeddings, embedded = VectorStore.of(index).embedding_stats(r)
        stats["numberOfEmbeddings"] = embeddings
        stats["numberOfEmbeddedDocuments"] = embedded
        stats["fieldDistribution"] = dict(sorted(r.field_distribution().items()))
        return stats, r.updated_at


def index_stats(request: Request, uid: str, *, internal: bool = False, human: bool = False) -> dict[str, Any]:
    st = state(request)
    index = st.scheduler.index(uid)
    if index is None:
        raise index_not_found(uid)
    return _stats_of(st, uid, index, internal=internal, human=human)[0]


async def get_index_stats(request: Request) -> Response:
    q = parse_query(list(request.query_params.multi_items()), STATS_QUERY)
    uid = request.path_params["index_uid"]
    return JSONResponse(
        index_stats(request, uid, internal=q["showInternalDatabaseSizes"], human=q["sizeFormat"])
    )


async def get_stats(request: Request) -> Response:
    q = parse_query(list(request.query_params.multi_items()), STATS_QUERY)
    st = state(request)
    human: bool = q["sizeFormat"]
    indexes = {}
    used = 0
    # Meilisearch's `lastUpdate` is the newest `updatedAt` among the indexes (null without any index),
    # not the end of the last task: cancelations, task deletions or failures do not move it.
    last: int | None = None
    # One index at a time: the mapper keeps a bounded set of environments open, so holding every
    # index of a large instance at once would see the first ones closed under our feet.
    visible = auth_filter(request)
    for uid in sorted(u for u in st.scheduler.mapper.mapping() if visible.is_index_authorized(u)):
        index = st.scheduler.index(uid)
        if index is None:  # deleted meanwhile
            continue
        indexes[uid], updated_at = _stats_of(
            st, uid, index, internal=q["showInternalDatabaseSizes"], human=human
        )
        used += index.used_size()
        last = updated_at if last is None else max(last, updated_at)
    size = _dir_size(st.options.db_path)
    return JSONResponse(
        {
            "databaseSize": _size(size, human),
            "usedDatabaseSize": _size(used, human),
            "lastUpdate": format_timestamp(last) if last is not None else None,
            "indexes": indexes,
        }
    )
