"""`POST /indexes/{uid}/compact`: enqueue an `indexCompaction` task."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.index_uid import validate_index_uid

from ..app_state import custom_metadata, route, state


@route("POST", "/indexes/{index_uid}/compact", action="indexes.compact")
async def compact_index(request: Request) -> Response:
    """202 `indexCompaction`; the scheduler copies the index's LMDB file compacted (a missing index
    makes the task fail with `index_not_found`, as in Meilisearch)."""
    uid = validate_index_uid(request.path_params["index_uid"])
    meta = custom_metadata(request)
    return await state(request).enqueue("indexCompaction", uid, details={}, kind={}, custom_metadata=meta)
