"""`POST /indexes/{uid}/fields`: every field of an index with what its settings make of it."""

from __future__ import annotations

from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import Field, decode_json_body, deserialize_object
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.attribute_patterns import MATCH, match_pattern
from hanzo_engine.engine.index import IndexReader

from ..app_state import state
from ..http import JSONResponse, read_body, read_index
from ..index_fields import field_descriptor
from ..search import known_fields

_FILTER_FLAGS: Final = ("displayed", "searchable", "sortable", "distinct", "rankingRule", "filterable")
_FIELDS_FILTER: Final = (
    Field(
        "attributePatterns",
        "string_array",
        "invalid_index_fields_filter_attribute_patterns",
        nullable=True,
        default=None,
    ),
    *(
        Field(
            name,
            "boolean",
            "invalid_index_fields_filter_" + ("ranking_rule" if name == "rankingRule" else name),
            nullable=True,
            default=None,
        )
        for name in _FILTER_FLAGS
    ),
)
_FIELDS_BODY: Final = (
    Field("offset", "usize", "invalid_index_offset", default=0),
    Field("limit", "usize", "invalid_index_limit", default=20),
    Field(
        "filter", "object", "invalid_index_fields_filter", nullable=True, default=None, fields=_FIELDS_FILTER
    ),
)


def _keep(field: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    if flt is None:
        return True
    patterns = flt.get("attributePatterns")
    if patterns is not None and not any(match_pattern(p, field["name"]) == MATCH for p in patterns):
        return False
    return all(flt.get(flag) is None or flt[flag] == field[flag]["enabled"] for flag in _FILTER_FLAGS)


def _fields_page(reader: IndexReader, body: dict[str, Any]) -> dict[str, Any]:
    settings = complete_settings(reader.settings())
    fields = [
        d for d in (field_descriptor(n, settings) for n in known_fields(reader)) if _keep(d, body["filter"])
    ]
    offset, limit = body["offset"], body["limit"]
    return {
        "results": fields[offset : offset + limit],
        "offset": offset,
        "limit": limit,
        "total": len(fields),
    }


async def post_index_fields(request: Request) -> Response:
    body = deserialize_object(
        decode_json_body(await read_body(request), request.headers.get("content-type")), _FIELDS_BODY
    )
    uid = validate_index_uid(request.path_params["index_uid"])
    scheduler = state(request).scheduler
    return JSONResponse(await run_in_threadpool(read_index, scheduler, uid, lambda r: _fields_page(r, body)))
