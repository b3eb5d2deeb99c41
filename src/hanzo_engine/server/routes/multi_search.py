"""`POST /multi-search` (action `search`): several searches in one request, or one federated list.

Order of the work, as Meilisearch's route: the body (deserr, first problem in key order), one search
permit for the whole request, then per query in order the index authorization ("Inside `.queries[i]`:
The provided API key is invalid.") and the tenant token's filter AND-ed to the query's.

Without `federation`: each query runs as `POST /indexes/{uid}/search` would, in query order; the first
failure answers for the whole request, prefixed "Inside `.queries[i]`: " (a missing index is 400 here).

With `federation`, the queries run as one federated search: `server/federation/perform.py`.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import Field, InvalidValue, decode_json_body, deserialize_object
from hanzo_engine.apitypes.errors import MeiliError, invalid_index_uid
from hanzo_engine.apitypes.index_uid import is_valid_index_uid
from hanzo_engine.apitypes.search import (
    SEARCH_BODY,
    SearchQuery,
    check_hybrid_fusion,
    personalization_unavailable,
    pop_hybrid_fusion,
    search_query_of,
)
from hanzo_engine.filter_parser import FilterFeatures

from .. import remotes, sharding
from ..app_state import state
from ..auth import auth_filter
from ..features import ExperimentalFeatures, feature_not_enabled, runtime_features
from ..federation.perform import Federated, read_network_of, run_federated, search_over_network
from ..federation.types import (
    DEFAULT_LIMIT,
    FederationOptions,
    MultiQuery,
    MultiSearchError,
    check_use_network,
    inside,
    query_where,
)
from ..foreign_keys import ForeignIndexes
from ..http import IndexSource, JSONResponse, read_body, read_index
from ..search import (
    NETWORK_DISCUSSION,
    fused_query,
    include_metadata,
    is_keyword_only,
    perform,
    search_rules,
    uuid7,
)
from ..search_queue import run_search, search_queue

# -------------------------------------------------------------------------------------------------
# Request body
# -------------------------------------------------------------------------------------------------


def _weight(value: float) -> float:
    if value < 0.0:
        raise InvalidValue("the value of `weight` is invalid, expected a positive float (>= 0.0).")
    return value


def _index_uid(value: str) -> str:
    if not is_valid_index_uid(value):
        raise InvalidValue(invalid_index_uid(value).message)
    return value


_OPTIONS_FIELDS: Final = (
    Field("weight", "number", "invalid_multi_search_weight", default=1.0, validate=_weight),
    Field("remote", "string", "invalid_multi_search_remote", nullable=True, default=None),
    Field("queryPosition", "usize", "invalid_multi_search_query_position", nullable=True, default=None),
)
# `SearchQueryWithIndex`: `indexUid`, the search parameters (pagination optional, so that its presence is
# known), then `federationOptions`.
_OPTIONAL: Final = frozenset({"offset", "limit", "showPerformanceDetails"})
# the most queries a keyword multi-search runs on the event loop's thread (more go to the thread pool)
INLINE_MAX_QUERIES: Final = 8
QUERY_FIELDS: Final = (
    Field(
        "indexUid",
        "string",
        "invalid_index_uid",
        required=True,
        missing_code="missing_index_uid",
        validate=_index_uid,
    ),
    *(dataclasses.replace(f, nullable=True, default=None) if f.name in _OPTIONAL else f for f in SEARCH_BODY),
    Field("federationOptions", "object", "bad_request", nullable=True, default=None, fields=_OPTIONS_FIELDS),
)


def _search_query(p: dict[str, Any], fusion: str | None = None) -> SearchQuery:
    """A query's `SearchQuery`: its pagination is optional here (absent means the defaults)."""
    limit = DEFAULT_LIMIT if p["limit"] is None else p["limit"]
    shown = bool(p["showPerformanceDetails"])
    return search_query_of(
        dict(p, offset=p["offset"] or 0, limit=limit, showPerformanceDetails=shown), fusion
    )


def _parse_query(value: Any, i: int) -> MultiQuery:
    path = f".queries[{i}]"
    value, raw_fusion = pop_hybrid_fusion(value)  # beyond Meilisearch, checked after the rest (as search)
    try:
        p = deserialize_object(value, QUERY_FIELDS, path=path)
    except MeiliError as err:
        # the shared item validators of `locales` and `vector` name their path from the body's root
        message = err.message.replace("`.locales[", f"`{path}.locales[").replace(
            "`.vector[", f"`{path}.vector["
        )
        raise MeiliError(err.code, message) from None
    fusion = check_hybrid_fusion(raw_fusion, path=f"{path}.hybrid") if p["hybrid"] is not None else None
    options = p["federationOptions"]
    pagination = next(
        (name for name in ("offset", "limit", "page", "hitsPerPage") if p[name] is not None), None
    )
    return MultiQuery(
        index_uid=p["indexUid"],
        query=_search_query(p, fusion),
        options=None
        if options is None
        else FederationOptions(options["weight"], options["remote"], options["queryPosition"]),
        pagination=pagination,
        show_performance_details=p["showPerformanceDetails"],
    )


def _parse_queries(items: list[Any]) -> list[MultiQuery]:
    return [_parse_query(item, i) for i, item in enumerate(items)]


def _facets_by_index(value: dict[str, Any]) -> dict[str, list[str] | None]:
    out: dict[str, list[str] | None] = {}
    for uid, facets in value.items():
        path = f".federation.facetsByIndex.{uid}"
        if not is_valid_index_uid(uid):
            raise MeiliError(
                "invalid_multi_search_facets_by_index",
                f"Invalid value at `{path}`: {invalid_index_uid(uid).message}",
            )
        field = Field(uid, "string_array", "invalid_multi_search_facets_by_index", nullable=True)
        out[uid] = deserialize_object({uid: facets}, (field,), path=".federation.facetsByIndex")[uid]
    return out


_FEDERATION_FIELDS: Final = (
    Field("limit", "usize", "invalid_search_limit", default=DEFAULT_LIMIT),
    Field("offset", "usize", "invalid_search_offset", default=0),
    Field("page", "usize", "invalid_search_page", nullable=True, default=None),
    Field("hitsPerPage", "usize", "invalid_search_hits_per_page", nullable=True, default=None),
    Field(
        "facetsByIndex",
        "object",
        "invalid_multi_search_facets_by_index",
        default=dict,
        validate=_facets_by_index,
    ),
    Field(
        "mergeFacets",
        "object",
        "invalid_multi_search_merge_facets",
        nullable=True,
        default=None,
        fields=(
            Field(
                "maxValuesPerFacet",
                "usize",
                "invalid_multi_search_max_values_per_facet",
                nullable=True,
                default=None,
            ),
        ),
    ),
    Field("distinct", "string", "invalid_search_distinct", nullable=True, default=None),
    Field("showPerformanceDetails", "boolean", "invalid_search_show_performance_details", default=False),
    Field("personalize", "object", "invalid_search_personalize", nullable=True, default=None),
)


def _parse_federation(value: dict[str, Any]) -> dict[str, Any]:
    return deserialize_object(
        value, _FEDERATION_FIELDS, path=".federation", unknown_code="invalid_multi_search_federated"
    )


MULTI_SEARCH_BODY: Final = (
    Field("queries", "array", "bad_request", required=True, validate=_parse_queries),
    Field(
        "federation",
        "object",
        "invalid_multi_search_federated",
        nullable=True,
        default=None,
        validate=_parse_federation,
    ),
)

# -------------------------------------------------------------------------------------------------
# Non-federated multi-search
# -------------------------------------------------------------------------------------------------


def _single(
    indexes: IndexSource,
    uid: str,
    query: SearchQuery,
    request_uid: str,
    with_metadata: bool,
    filters: FilterFeatures,
    rules: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    foreign = ForeignIndexes(indexes) if filters.foreign_keys else None
    body = read_index(
        indexes,
        uid,
        lambda reader: perform(reader, uid, query, request_uid, with_metadata, filters, rules, foreign),
    )
    if query.personalize is not None:
        raise personalization_unavailable()  # once the search ran, as Meilisearch's reranking step
    return body


def multi(
    indexes: IndexSource,
    queries: list[MultiQuery],
    features: ExperimentalFeatures,
    request_uid: str,
    with_metadata: bool,
    first: int = 0,
    rules: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Each query as its own search, in order; the first failure names its query (`first` is the
    position of `queries[0]` in the request). `rules`: the dynamic search rules to apply."""
    results = []
    filters = features.filter_features()
    for i, q in enumerate(queries, start=first):
        if q.options is not None:
            raise MultiSearchError(
                "invalid_multi_search_federation_options",
                f"Inside `.queries[{i}]`: Using `federationOptions` is not allowed in a non-federated search.\n"
                f" - Hint: remove `federationOptions` from query #{i} or add `federation` to the request.",
                400,
            )
        try:
            check_use_network(q.query, features)
            body = _single(indexes, q.index_uid, q.query, request_uid, with_metadata, filters, rules)
        except MeiliError as err:
            raise inside(err, query_where(i)) from None
        results.append({"indexUid": q.index_uid, **body})
    return results


async def _multi_networked(
    request: Request,
    queries: list[MultiQuery],
    features: ExperimentalFeatures,
    request_uid: str,
    with_metadata: bool,
) -> list[dict[str, Any]]:
    """Non-federated multi-search where some query has `useNetwork: true`: that query runs over the
    network as the search route would (`search_over_network`), the others as usual, in order."""
    results: list[dict[str, Any]] = []
    indexes = state(request).indexes
    network = await read_network_of(request, features)
    for i, q in enumerate(queries):
        if q.options is None and sharding.uses_network(q.query.use_network, network):
            try:
                body = await search_over_network(request, q.index_uid, q.query, request_uid, features)
            except MeiliError as err:
                raise inside(err, query_where(i)) from None
            results.append({"indexUid": q.index_uid, **body})
        else:
            results.extend(
                await run_in_threadpool(multi, indexes, [q], features, request_uid, with_metadata, i)
            )
    return results


# -------------------------------------------------------------------------------------------------
# The route
# -------------------------------------------------------------------------------------------------


async def multi_search(request: Request) -> Response:
    body = deserialize_object(
        decode_json_body(await read_body(request), request.headers.get("content-type")), MULTI_SEARCH_BODY
    )
    queries: list[MultiQuery] = body["queries"]
    federation: dict[str, Any] | None = body["federation"]
    features = runtime_features(request)
    request_uid, with_metadata = uuid7(), include_metadata(request)
    indexes = state(request).indexes
    # queries that embed nothing never wait on the network: on the event loop's thread (`run_search`),
    # unless they are many: the loop would not read its other connections for their whole run
    inline = len(queries) <= INLINE_MAX_QUERIES and all(is_keyword_only(q.query) for q in queries)
    async with search_queue(request).permit():
        visible = auth_filter(request)
        for i, q in enumerate(queries):
            if not visible.is_index_authorized(q.index_uid):
                raise MeiliError(
                    "invalid_api_key", f"Inside `.queries[{i}]`: The provided API key is invalid."
                )
            q.query = fused_query(request, q.index_uid, q.query)
        if federation is None:
            network = await read_network_of(request, features)
            if features.enabled("network") and any(
                sharding.uses_network(q.query.use_network, network) for q in queries
            ):
                return JSONResponse(
                    {
                        "results": await _multi_networked(
                            request, queries, features, request_uid, with_metadata
                        )
                    }
                )
            results = await run_search(
                partial(multi, rules=search_rules(request)),
                indexes,
                queries,
                features,
                request_uid,
                with_metadata,
                inline=inline,
            )
            return JSONResponse({"results": results})
        is_proxy = request.headers.get(remotes.PROXY_SEARCH_HEADER) == "true"
        if is_proxy and not features.enabled("network"):
            raise feature_not_enabled("Performing a remote federated search", "network", NETWORK_DISCUSSION)
        network = await read_network_of(request, features)
        searcher = Federated(indexes, federation, features, network, is_proxy)
        searcher.rules = search_rules(request)
        return JSONResponse(
            await run_federated(request, searcher, queries, request_uid, with_metadata, inline=inline)
        )
