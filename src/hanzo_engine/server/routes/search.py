"""Search routes: `POST` and `GET /indexes/{index_uid}/search` (action `search`); the search itself
(checks, engine request, hits) is `server/search.py`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import decode_json_body
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.apitypes.search import (
    SearchQuery,
    parse_search_body,
    personalization_unavailable,
    search_query_from_params,
    search_query_params,
)

from ..app_state import state
from ..features import runtime_features
from ..federation.perform import network_search
from ..foreign_keys import ForeignIndexes
from ..http import JSONResponse, query_pairs, read_body, read_index
from ..search import (
    filter_features,
    fused_query,
    include_metadata,
    is_keyword_only,
    perform,
    search_rules,
    uuid7,
)
from ..search_queue import run_queued


async def _search(request: Request, uid: str, query: SearchQuery) -> Response:
    request_uid = uuid7()
    if query.use_network is not None or runtime_features(request).enabled(
        "network"
    ):  # a leader: true by default
        networked = await network_search(request, uid, query, request_uid)
        if networked is not None:
            return JSONResponse(networked)
    with_metadata = include_metadata(request)
    query = fused_query(request, uid, query)
    indexes = state(request).indexes
    features = filter_features(request)
    rules = search_rules(request)
    foreign = ForeignIndexes(indexes) if features.foreign_keys else None
    body = await run_queued(
        request,
        read_index,
        indexes,
        uid,
        lambda reader: perform(reader, uid, query, request_uid, with_metadata, features, rules, foreign),
        inline=is_keyword_only(query),
    )
    if query.personalize is not None:
        raise personalization_unavailable()  # once the search ran, as Meilisearch's reranking step
    return JSONResponse(body)


async def search_with_post(request: Request) -> Response:
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    query = parse_search_body(body)
    uid = validate_index_uid(request.path_params["index_uid"])
    return await _search(request, uid, query)


async def search_with_get(request: Request) -> Response:
    params = search_query_params(query_pairs(request))
    uid = validate_index_uid(request.path_params["index_uid"])
    query = search_query_from_params(params)
    return await _search(request, uid, query)
