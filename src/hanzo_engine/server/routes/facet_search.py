"""`POST /indexes/{index_uid}/facet-search` (action `search`): the values of one facet matching a
prefix (typo-tolerant), counted among the documents a search selects (docs/api-contract.md §3.11).

As Meilisearch's `perform_facet_search`: the body is validated (unknown keys are ignored, the struct
does not deny them), the tenant token's filter is AND-ed to the request's, then in the read
transaction: `facetSearch: false` -> `facet_search_disabled`; the search's checks (filter syntax,
search kind...); the facet name must be facet-searchable (first matching `filterableAttributes` rule
enabling `facetSearch`); the candidates are those of the search (`q`, `filter`, matching strategy,
the distinct attribute applied to the first page only unless `exhaustiveFacetCount`, which counts
exhaustively as a page-mode search does). A semantic or hybrid search (`hybrid`, `vector`, `media`)
counts every document the filter allows, as milli's `execute_for_candidates`; a semantic one without
`vector` still embeds the query first. Errors carry no "Index `uid`: " prefix, as in Meilisearch.
"""

from __future__ import annotations

import contextlib
import encodings.utf_32_le  # noqa: F401  (the typo automata encode words in UTF-32: loaded with the route)
import importlib
import pkgutil
import time
from typing import Any, Final

from pyroaring import BitMap
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import Field, decode_json_body, deserialize_object
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.apitypes.search import SEARCH_BODY, HybridQuery, SearchQuery
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.search.facet_distribution import facet_search
from hanzo_engine.engine.update.facets import FacetRules
from hanzo_engine.engine.vector.hybrid import check_vector, search_kind
from hanzo_engine.filter_parser import FilterFeatures
from hanzo_engine.scheduler.network import read_network

from .. import network_documents, sharding
from ..app_state import state
from ..features import runtime_features
from ..foreign_keys import ForeignIndexes
from ..http import JSONResponse, read_body, read_index
from ..index_fields import facet_sort_order
from ..search import (
    NETWORK_DISCUSSION,
    engine_request,
    filter_features,
    fused_query,
    parse_search_filter,
    prepare_query,
    without_hidden,
)
from ..search import run_engine_search as _run
from ..search_queue import run_queued


def _preload_search_engine() -> None:
    """The HTTP layer and the engine import the search modules (and their native parts) at the first
    search; loading them with this route spares the first facet search that cost, which its
    `processingTimeMs` would show. A module that fails to load is left to fail where it is used:
    preloading never stops the server."""
    import hanzo_engine._native as native
    import hanzo_engine.engine.search as search_package

    for package in (native, search_package):
        for module in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            with contextlib.suppress(Exception):
                importlib.import_module(module.name)


_preload_search_engine()

_SHARED: Final = {f.name: f for f in SEARCH_BODY}
FACET_SEARCH_BODY: Final = (
    Field("facetQuery", "string", "invalid_facet_search_query", nullable=True, default=None),
    Field(
        "facetName",
        "string",
        "invalid_facet_search_facet_name",
        required=True,
        missing_code="missing_facet_search_facet_name",
    ),
    _SHARED["q"],
    _SHARED["vector"],
    _SHARED["media"],
    _SHARED["hybrid"],
    _SHARED["filter"],
    _SHARED["matchingStrategy"],
    _SHARED["attributesToSearchOn"],
    _SHARED["rankingScoreThreshold"],
    _SHARED["locales"],
    Field(
        "exhaustiveFacetCount",
        "boolean",
        "invalid_facet_search_exhaustive_facet_count",
        nullable=True,
        default=None,
    ),
    _SHARED["useNetwork"],
)
_KNOWN: Final = frozenset(f.name for f in FACET_SEARCH_BODY)
DEFAULT_LIMIT: Final = 20


def not_facet_searchable(name: str, settings: dict[str, Any], rules: FacetRules) -> MeiliError:
    """milli's `InvalidFacetSearchFacetName`."""
    matched = rules.matching(name)
    patterns = sorted({p for r in rules.filters if r.facet_search for p in r.patterns})
    valid, hidden = without_hidden(patterns, settings)
    if matched is not None:
        i = matched[0]
        tail = (
            f"Note: this attribute matches rule #{i} in filterableAttributes, but this rule does not enable "
            f'facetSearch.\nHint: enable facetSearch in rule #{i} by adding `"facetSearch": true` to the '
            f"rule.\nHint: prepend another rule matching {name} with facetSearch: true before rule #{i}"
        )
    elif not valid:
        tail = (
            "This index does not have configured facet-searchable attributes. To make it facet-searchable "
            "add it to the `filterableAttributes` index settings."
        )
    else:
        tail = (
            f"Available facet-searchable attributes patterns are: `{', '.join(valid)}"
            f"{', <..hidden-attributes>' if hidden else ''}`. To make it facet-searchable add it to the "
            "`filterableAttributes` index settings."
        )
    return MeiliError(
        "invalid_facet_search_facet_name", f"Attribute `{name}` is not facet-searchable. {tail}"
    )


def perform_facet_search(
    reader: IndexReader,
    uid: str,
    body: dict[str, Any],
    query: SearchQuery,
    features: FilterFeatures,
    foreign: ForeignIndexes | None = None,
) -> dict[str, Any]:
    started = time.perf_counter()
    settings = complete_settings(reader.settings())
    if not settings.get("facetSearch", True):
        raise MeiliError("facet_search_disabled", "The facet search is disabled for this index")
    parse_search_filter(query.filter, features)  # syntax first, as `prepare_search`
    name: str = body["facetName"]
    rules = FacetRules(settings)
    matched = rules.matching(name)
    if matched is None or not matched[1].facet_search:
        raise not_facet_searchable(name, settings, rules)
    try:
        prepared = prepare_query(reader, uid, query, features, foreign)
    except MeiliError as err:
        # the search route names the index in engine errors; Meilisearch's facet search does not
        raise MeiliError(err.code, err.message.removeprefix(f"Index `{uid}`: ")) from None
    if query.media is not None and not features.multimodal:
        raise MeiliError(
            "feature_not_enabled",
            "passing `media` in a search query requires enabling the "
            "`multimodal` experimental feature. See https://github.com/orgs/meilisearch/discussions/846",
        )
    hybrid = query.hybrid
    kind = search_kind(query.q, query.vector, None if hybrid is None else hybrid.semantic_ratio, query.media)
    if kind != "keyword":
        assert hybrid is not None
        if query.vector is not None or kind == "semantic":
            # the vector's dimensions are checked; a semantic search without one embeds the query first
            # (Meilisearch runs it), and its failure is the answer
            check_vector(reader, settings, hybrid.embedder, query.q, query.vector, media=query.media)
        # a semantic or hybrid search matches every document its filter allows (milli's
        # `execute_for_candidates`)
        candidates = prepared.universe if prepared.universe is not None else reader.documents_ids()
    else:
        exhaustive = bool(body["exhaustiveFacetCount"])
        request = engine_request(
            prepared, query, offset=0, limit=0 if exhaustive else DEFAULT_LIMIT, exhaustive=exhaustive
        )
        result = _run(reader, request, settings)
        candidates = result.all_candidates if result.all_candidates is not None else BitMap()
    facet_query: str | None = body["facetQuery"]
    hits = facet_search(reader, settings, name, facet_query, candidates)
    return {
        "facetHits": hits,
        "facetQuery": facet_query,
        "processingTimeMs": int((time.perf_counter() - started) * 1000),
    }


async def search_facet_values(request: Request) -> Response:
    raw = decode_json_body(await read_body(request), request.headers.get("content-type"))
    if isinstance(raw, dict):
        raw = {k: v for k, v in raw.items() if k in _KNOWN}  # unknown parameters are ignored
    body = deserialize_object(raw, FACET_SEARCH_BODY)
    uid = validate_index_uid(request.path_params["index_uid"])
    if body["useNetwork"] is not None and not runtime_features(request).enabled("network"):
        raise MeiliError(
            "feature_not_enabled",
            "passing `useNetwork` in a search query requires enabling the "
            f"`network` experimental feature. See {NETWORK_DISCUSSION}",
        )
    hybrid = body["hybrid"]
    query = SearchQuery(
        q=body["q"],
        filter=body["filter"],
        matching_strategy=body["matchingStrategy"],
        attributes_to_search_on=body["attributesToSearchOn"],
        ranking_score_threshold=body["rankingScoreThreshold"],
        locales=body["locales"],
        vector=body["vector"],
        media=body["media"],
        hybrid=None if hybrid is None else HybridQuery(hybrid["embedder"], hybrid["semanticRatio"]),
    )
    query = fused_query(request, uid, query)
    features = filter_features(request)
    if await sharding.request_uses_network(
        runtime_features(request).enabled("network"), state(request).indexes.store, body["useNetwork"]
    ):  # true by default with a leader
        return JSONResponse(await _network_facet_search(request, uid, raw, body, query, features))
    indexes = state(request).indexes
    foreign = ForeignIndexes(indexes) if features.foreign_keys else None  # `_foreign(..)` filters
    result = await run_queued(
        request,
        read_index,
        indexes,
        uid,
        lambda reader: perform_facet_search(reader, uid, body, query, features, foreign),
    )
    return JSONResponse(result)


async def _network_facet_search(
    request: Request,
    uid: str,
    raw: dict[str, Any],
    body: dict[str, Any],
    query: SearchQuery,
    features: FilterFeatures,
) -> dict[str, Any]:
    """`useNetwork: true`: the facet search on every remote (`network_documents.facet_search`), sent
    with the tenant token's filter and without `useNetwork`."""
    indexes = state(request).indexes
    network = await run_in_threadpool(read_network, indexes.store)
    forwarded = {k: v for k, v in raw.items() if k != "useNetwork"}
    forwarded["filter"] = query.filter

    def local() -> Any:
        foreign = ForeignIndexes(indexes) if features.foreign_keys else None
        return run_queued(
            request,
            read_index,
            indexes,
            uid,
            lambda reader: perform_facet_search(reader, uid, body, query, features, foreign),
        )

    def by_count() -> Any:
        return run_in_threadpool(
            read_index,
            indexes,
            uid,
            lambda reader: (
                facet_sort_order(body["facetName"], complete_settings(reader.settings())) == "count"
            ),
        )

    return await network_documents.facet_search(network, uid, forwarded, local, by_count)
