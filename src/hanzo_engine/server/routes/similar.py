"""`GET/POST /indexes/{index_uid}/similar` (action `search`): the documents whose vectors are nearest
to a given document's, for one embedder (docs/api-contract.md §3.13).

The target document's first embedding is the query; the document itself is excluded; `filter` is
evaluated as the search route's (errors re-coded `invalid_similar_filter`) and applied during the
graph walk. Only documents with vectors are returned, ranked by similarity (scores as semantic search).
"""

from __future__ import annotations

import time
from typing import Any, Final

from pyroaring import BitMap
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import (
    Field,
    QueryField,
    decode_json_body,
    deserialize_object,
    parse_query,
)
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.apitypes.search import SEARCH_BODY, SearchQuery
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.vector.hybrid import semantic
from hanzo_engine.engine.vector.store import VectorStore
from hanzo_engine.filter_parser import FilterFeatures

from ..app_state import state
from ..auth import auth_filter
from ..http import JSONResponse, query_pairs, read_body, read_index
from ..search import DEFAULT_MAX_TOTAL_HITS, HitMaker, filter_features, prepare_query
from ..search_queue import run_queued

PATH: Final = "/indexes/{index_uid}/similar"
_SHARED: Final = {f.name: f for f in SEARCH_BODY}
_ID_MESSAGE: Final = (
    "Invalid value at `.id`: the value of `id` is invalid. A document identifier can be of type "
    "integer or string, only composed of alphanumeric characters (a-z A-Z 0-9), hyphens (-) and "
    "underscores (_), and can not be more than 511 bytes."
)


def _field(name: str, code: str) -> Field:
    f = _SHARED[name]
    return Field(f.name, f.kind, code, default=f.default, nullable=f.nullable, validate=f.validate)


SIMILAR_BODY: Final = (
    Field("id", "any", "invalid_similar_id", required=True, missing_code="invalid_similar_id"),
    Field(
        "embedder",
        "string",
        "invalid_similar_embedder",
        required=True,
        missing_code="invalid_similar_embedder",
    ),
    _field("offset", "invalid_similar_offset"),
    _field("limit", "invalid_similar_limit"),
    _field("filter", "invalid_similar_filter"),
    _field("attributesToRetrieve", "invalid_similar_attributes_to_retrieve"),
    _field("retrieveVectors", "invalid_similar_retrieve_vectors"),
    _field("showRankingScore", "invalid_similar_show_ranking_score"),
    _field("showRankingScoreDetails", "invalid_similar_show_ranking_score_details"),
    _field("showPerformanceDetails", "invalid_similar_show_performance_details"),
    _field("rankingScoreThreshold", "invalid_similar_ranking_score_threshold"),
)
SIMILAR_PARAMS: Final = (
    QueryField("id", "string", "invalid_similar_id"),
    QueryField("embedder", "string", "invalid_similar_embedder"),
    QueryField("offset", "usize", "invalid_similar_offset", 0),
    QueryField("limit", "usize", "invalid_similar_limit", 20),
    QueryField("filter", "string", "invalid_similar_filter", None),
    QueryField("attributesToRetrieve", "csv", "invalid_similar_attributes_to_retrieve", None),
    QueryField("retrieveVectors", "bool", "invalid_similar_retrieve_vectors", False),
    QueryField("showRankingScore", "bool", "invalid_similar_show_ranking_score", False),
    QueryField("showRankingScoreDetails", "bool", "invalid_similar_show_ranking_score_details", False),
    QueryField("showPerformanceDetails", "bool", "invalid_similar_show_performance_details", False),
    QueryField("rankingScoreThreshold", "string", "invalid_similar_ranking_score_threshold", None),
)


def _document_id(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise MeiliError("invalid_similar_id", _ID_MESSAGE)
    text = str(value)
    if (
        not text
        or len(text.encode()) > 511
        or not all(c.isascii() and (c.isalnum() or c in "-_") for c in text)
    ):
        raise MeiliError("invalid_similar_id", _ID_MESSAGE)
    return text


def perform_similar(
    reader: IndexReader, uid: str, body: dict[str, Any], features: FilterFeatures
) -> dict[str, Any]:
    started = time.perf_counter()
    ext_id = _document_id(body["id"])
    embedder: str = body["embedder"]
    query = SearchQuery(
        filter=body.get("filter"),
        attributes_to_retrieve=body.get("attributesToRetrieve"),
        retrieve_vectors=bool(body.get("retrieveVectors")),
        show_ranking_score=bool(body.get("showRankingScore")),
        show_ranking_score_details=bool(body.get("showRankingScoreDetails")),
    )
    try:
        prepared = prepare_query(reader, uid, query, features)
    except MeiliError as err:
        code = "invalid_similar_filter" if err.code == "invalid_search_filter" else err.code
        raise MeiliError(code, err.message) from None
    settings = prepared.settings
    if embedder not in (settings.get("embedders") or {}):
        raise MeiliError("invalid_similar_embedder", f"Cannot find embedder with name `{embedder}`.")
    docid = reader.internal_id(ext_id)
    if docid is None:
        raise MeiliError("not_found_similar_id", f"Document `{ext_id}` not found.")
    max_total = (settings.get("pagination") or {}).get("maxTotalHits") or DEFAULT_MAX_TOTAL_HITS
    offset = min(int(body.get("offset") or 0), max_total)
    requested: int = body["limit"] if body.get("limit") is not None else 20
    limit = min(requested, max(max_total - offset, 0))
    universe = reader.documents_ids() if prepared.universe is None else BitMap(prepared.universe)
    universe.discard(docid)
    vectors = VectorStore.of(reader.index).get_vectors(reader, embedder, docid)
    hits: list[dict[str, Any]] = []
    total = 0
    if vectors is not None and len(vectors):
        result = semantic(
            reader,
            settings,
            embedder,
            vectors[0].tolist(),
            offset,
            limit,
            universe,
            body.get("rankingScoreThreshold"),
            with_rest=False,
        )
        total = min(result.candidates, max_total)
        maker = HitMaker(reader, query, settings, result)
        for hit_docid, score, details in zip(result.docids, result.scores, result.details, strict=True):
            document = reader.document_by_internal_id(hit_docid)
            if document is not None:
                hits.append(maker.make(document, score, details))
    out: dict[str, Any] = {
        "hits": hits,
        "id": ext_id,
        "processingTimeMs": int((time.perf_counter() - started) * 1000),
        "limit": body.get("limit", 20),
        "offset": offset,
        "estimatedTotalHits": total,
    }
    if body.get("showPerformanceDetails"):
        out["performanceDetails"] = {"similar": f"{(time.perf_counter() - started) * 1000:.2f}ms"}
    return out


async def _similar(request: Request, body: dict[str, Any]) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    # a tenant token's search rules restrict similar documents as they restrict a search
    body = {**body, "filter": auth_filter(request).fuse_filter(uid, body.get("filter"))}
    features = filter_features(request)
    result = await run_queued(
        request,
        read_index,
        state(request).indexes,
        uid,
        lambda reader: perform_similar(reader, uid, body, features),
    )
    return JSONResponse(result)


async def similar_post(request: Request) -> Response:
    raw = decode_json_body(await read_body(request), request.headers.get("content-type"))
    return await _similar(request, deserialize_object(raw, SIMILAR_BODY, unknown_code="bad_request"))


async def similar_get(request: Request) -> Response:
    params = parse_query(query_pairs(request), SIMILAR_PARAMS)
    for name, code in (("id", "invalid_similar_id"), ("embedder", "invalid_similar_embedder")):
        if name not in params:
            raise MeiliError(code, f"Missing parameter `{name}`")
    threshold = params.get("rankingScoreThreshold")
    if threshold is not None:
        try:
            value = float(threshold)
        except ValueError:
            value = -1.0
        if not 0.0 <= value <= 1.0:
            raise MeiliError(
                "invalid_similar_ranking_score_threshold",
                "Invalid value in parameter "
                "`rankingScoreThreshold`: the value of `rankingScoreThreshold` is invalid, expected a "
                "float between `0.0` and `1.0`.",
            )
        params["rankingScoreThreshold"] = value
    return await _similar(request, params)
