"""Search routes: `POST` and `GET /indexes/{index_uid}/search` (action `search`).

Order of the checks, as Meilisearch runs them: the body or query string (deserr), the path's index
uid, the GET-only hybrid checks, `useNetwork` (needs the `network` feature), the index lookup (404),
the search kind (`vector`/`media`/`hybrid`), then in the read transaction: filter syntax, sort
syntax, `attributesToSearchOn`, `distinct`, filter attributes, sort attributes, the search itself,
and `facets`. Errors found by the search core carry the "Index `uid`: " prefix, syntax errors and
facet errors do not.

Filters, sorting, distinct and facet counts belong to the filters issue: their syntax and
"not filterable / not sortable" errors are Meilisearch's; a request that passes those checks and
would need the missing feature is refused with a 400 of the parameter's code saying so, never
answered with unfiltered or unsorted hits. Semantic and hybrid searches likewise (vectors issue).

Pagination (contract §3.2): `maxTotalHits` bounds the reachable window (offset capped at it, limit at
what remains); page mode asks the engine for an exhaustive count. Totals are capped at `maxTotalHits`.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import decode_json_body, to_json
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.apitypes.search import (
    SearchQuery,
    parse_search_body,
    parse_sort,
    search_query_from_params,
    search_query_params,
)
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.documents.fields import select_fields
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.search.format import Highlighter, format_document, formatted_options, is_faceted_by
from hanzo_engine.engine.search.types import SearchRequest, SearchResult
from hanzo_engine.engine.tokenizer import Tokenizer
from hanzo_engine.engine.update.indexer import search_fields

from ..app_state import route, state
from ..http import JSONResponse, query_pairs, read_body, read_index
from ..search_exec import fused_query, run_queued

SEARCH_PATH: Final = "/indexes/{index_uid}/search"
VECTORS: Final = "_vectors"
INCLUDE_METADATA_HEADER: Final = "meili-include-metadata"
NETWORK_DISCUSSION: Final = "https://github.com/orgs/meilisearch/discussions/805"
DEFAULT_MAX_TOTAL_HITS: Final = 1000


def uuid7() -> str:
    """A UUIDv7: 48-bit Unix milliseconds, version 7, variant 10, random bits."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = ((millis & ((1 << 48) - 1)) << 80) | (0x7 << 76) | (((rand >> 62) & 0xFFF) << 64) | (0b10 << 62)
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def include_metadata(request: Request) -> bool:
    """Whether the request asked for `metadata` (`Meili-Include-Metadata: true` or `1`)."""
    value = request.headers.get(INCLUDE_METADATA_HEADER)
    return value is not None and value.lower() in ("true", "1")


def duration_text(seconds: float) -> str:
    """A duration as Rust's `{:.2?}` prints it (`1.23ms`, `512.00µs`, `2.00s`)."""
    if seconds >= 1:
        return f"{seconds:.2f}s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f}ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.2f}µs"
    return f"{seconds * 1e9:.2f}ns"


# --------------------------------------------------------------------------------------------------
# Checks that need the index
# --------------------------------------------------------------------------------------------------


def _index_error(uid: str, code: str, message: str) -> MeiliError:
    return MeiliError(code, f"Index `{uid}`: {message}")


def _not_available(uid: str, code: str, what: str, issue: str) -> MeiliError:
    return _index_error(uid, code, f"{what} is not available in this build yet (see the {issue} issue).")


def check_search_kind(query: SearchQuery, settings: dict[str, Any], uid: str) -> None:
    """Meilisearch's `search_kind`: which searches are keyword searches, and the errors of the others."""
    placeholder = query.q is None or not query.q.strip()
    has_media = query.media is not None
    if has_media and query.vector is not None:
        raise MeiliError("invalid_search_media_and_vector",
                         "Invalid request: both `media` and `vector` parameters are present.")
    if (has_media or query.vector is not None) and query.hybrid is None:
        raise MeiliError("missing_search_hybrid",
                         "Invalid request: missing `hybrid` parameter when `vector` or `media` are present.")
    hybrid = query.hybrid
    if hybrid is None or hybrid.semantic_ratio == 0.0:
        return
    if not has_media and placeholder and query.vector is None:
        return  # no query and no vector: a placeholder keyword search, even with `hybrid`
    embedders = settings.get("embedders") or {}
    if hybrid.embedder not in embedders:
        raise MeiliError("invalid_search_embedder", f"Cannot find embedder with name `{hybrid.embedder}`.")
    raise _not_available(uid, "invalid_search_hybrid_query", "Semantic and hybrid search", "vectors")


def _filter_subexpressions(value: Any) -> list[str]:
    """The filter's non-empty expressions in evaluation order; Meilisearch's syntax errors otherwise."""
    def invalid(expected: str, found: Any) -> MeiliError:
        return MeiliError("invalid_search_filter",
                          f"Invalid syntax for the filter parameter: `expected {expected}, found: {to_json(found)}`.")

    if isinstance(value, str):
        return [value] if value.strip() else []
    if not isinstance(value, list):
        raise invalid("String, Array", value)
    out = []
    for item in value:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, list):
            for inner in item:
                if not isinstance(inner, str):
                    raise invalid("String", inner)
                out.append(inner)
        else:
            raise invalid("String, [String]", item)
    return [expr for expr in out if expr.strip()]


_FILTER_STOP: Final = frozenset(" \t\n\r=!<>()[],'\"")
_RESERVED_FILTER_FIELDS: Final = ("_geo", "_geoDistance", "_geoPoint")
_GEO_FILTERS: Final = ("_geoRadius", "_geoBoundingBox", "_geoPolygon")


def _first_filter_attribute(expr: str) -> tuple[str, int, int] | None:
    """The first attribute of a filter expression with its character span (`NOT` and `(` skipped)."""
    i, n = 0, len(expr)
    while i < n:
        if expr[i].isspace() or expr[i] == "(":
            i += 1
        elif expr.startswith("NOT", i) and (i + 3 == n or expr[i + 3].isspace() or expr[i + 3] == "("):
            i += 3
        else:
            break
    if i >= n:
        return None
    if expr[i] in "'\"":
        end = expr.find(expr[i], i + 1)
        end = n if end < 0 else end
        return expr[i + 1 : end], i + 1, end
    start = i
    while i < n and expr[i] not in _FILTER_STOP:
        i += 1
    return (expr[start:i], start, i) if i > start else None


def _pattern_matches(pattern: str, field: str) -> bool:
    """A filterable pattern covers `field`: equal, nested under it, or a `*` glob at either end."""
    if pattern == "*":
        return True
    if pattern.startswith("*") and pattern.endswith("*") and len(pattern) > 1:
        return pattern[1:-1] in field
    if pattern.startswith("*"):
        return field.endswith(pattern[1:])
    if pattern.endswith("*"):
        return field.startswith(pattern[:-1])
    return is_faceted_by(field, pattern)


def _filter_rules(settings: dict[str, Any]) -> list[tuple[list[str], bool]]:
    """filterableAttributes as (patterns, filtering enabled) rules, in order."""
    rules = []
    for rule in settings.get("filterableAttributes") or []:
        if isinstance(rule, str):
            rules.append(([rule], True))
        else:
            flt = rule.get("features", {}).get("filter", {})
            rules.append((list(rule.get("attributePatterns", [])),
                          bool(flt.get("equality", True) or flt.get("comparison", False))))
    return rules


def _matching_rule(rules: list[tuple[list[str], bool]], field: str) -> tuple[int, bool] | None:
    for index, (patterns, enabled) in enumerate(rules):
        if any(_pattern_matches(p, field) for p in patterns):
            return index, enabled
    return None


def _filterable_patterns(rules: list[tuple[list[str], bool]]) -> list[str]:
    return sorted({p for patterns, enabled in rules if enabled for p in patterns})


def _without_hidden(names: Sequence[str], settings: dict[str, Any]) -> tuple[list[str], bool]:
    """milli's `remove_hidden_fields`: the names that are displayed, sorted, and whether any was not."""
    valid = sorted(set(names))
    displayed = settings.get("displayedAttributes") or ["*"]
    if displayed == ["*"]:
        return valid, False
    shown = [name for name in valid if name in set(displayed)]
    return shown, len(shown) < len(valid)


def _check_filter(expressions: list[str], settings: dict[str, Any], uid: str) -> None:
    rules = _filter_rules(settings)
    patterns = _filterable_patterns(rules)
    for expr in expressions:
        found = _first_filter_attribute(expr)
        if found is None:
            continue
        attribute, start, end = found
        if attribute.startswith(_GEO_FILTERS):
            attribute, end = "_geo", start + len(attribute.partition("(")[0])
        matched = _matching_rule(rules, attribute)
        if matched is None or not matched[1]:
            listed = ("This index does not have configured filterable attributes." if not patterns else
                      "Available filterable attribute patterns are: " + ", ".join(f"`{p}`" for p in patterns) + ".")
            raise _index_error(uid, "invalid_search_filter",
                               f"Attribute `{attribute}` is not filterable. {listed}\n{start + 1}:{end + 1} {expr}")
    raise _not_available(uid, "invalid_search_filter", "Filtering search results", "filters")


def _check_reserved_filter(expressions: list[str]) -> None:
    for expr in expressions:
        found = _first_filter_attribute(expr)
        if found is not None and found[0] in _RESERVED_FILTER_FIELDS:
            span_end = len(expr.rstrip())
            raise MeiliError(
                "invalid_search_filter",
                f"`{found[0]}` is a reserved keyword and thus can't be used as a filter expression. Use the "
                "`_geoRadius(latitude, longitude, distance)` or `_geoBoundingBox([latitude, longitude], "
                "[latitude, longitude])` built-in rules to filter on `_geo` coordinates.\n"
                f"{found[1] + 1}:{span_end + 1} {expr}",
            )


def _check_search_on(attributes: list[str], settings: dict[str, Any], fields: Sequence[str], uid: str) -> None:
    """`attributesToSearchOn` items must be searchable fields (unchecked with the `*` wildcard setting)."""
    searchable = settings.get("searchableAttributes") or ["*"]
    if searchable == ["*"]:
        return
    names = [f for f in fields if any(is_faceted_by(f, s) for s in searchable)]
    for attr in attributes:
        if attr != "*" and attr not in names:
            valid, hidden = _without_hidden(names, settings)
            raise _index_error(
                uid, "invalid_search_attributes_to_search_on",
                f"Attribute `{attr}` is not searchable. Available searchable attributes are: "
                f"`{', '.join(valid)}{', <..hidden-attributes>' if hidden else ''}`.",
            )


def check_distinct(distinct: str, settings: dict[str, Any], uid: str) -> None:
    rules = _filter_rules(settings)
    matched = _matching_rule(rules, distinct)
    if matched is not None and matched[1]:
        raise _not_available(uid, "invalid_search_distinct", "Distinct at search time", "filters")
    valid, hidden = _without_hidden(_filterable_patterns(rules), settings)
    if matched is not None:
        index = matched[0]
        tail = (f"Note: this attribute matches rule #{index} in filterableAttributes, but this rule does not "
                f"enable filtering.\nHint: enable filtering in rule #{index} by adding appropriate filter "
                f"features.\nHint: prepend another rule matching {distinct} with filter features before rule #{index}")
    elif not valid:
        tail = "This index does not have configured filterable attributes."
    else:
        tail = f"Available filterable attributes patterns are: `{', '.join(valid)}{', <..hidden-attributes>' if hidden else ''}`."
    raise _index_error(uid, "invalid_search_distinct",
                       f"Attribute `{distinct}` is not filterable and thus, cannot be used as distinct attribute. {tail}")


def _check_sort(sort: list[str], settings: dict[str, Any], uid: str) -> None:
    criteria = parse_sort(sort)  # syntax was checked before; this only re-reads it
    if not criteria:
        return
    if "sort" not in (settings.get("rankingRules") or []):
        raise _index_error(uid, "invalid_search_sort", "You must specify where `sort` is listed in the rankingRules "
                           "setting to use the sort parameter at search time.")
    sortable = settings.get("sortableAttributes") or []
    for criterion in criteria:
        field = criterion.field if criterion.field is not None else "_geo"
        ok = any(is_faceted_by(field, s) for s in sortable) if criterion.field is not None else "_geo" in sortable
        if not ok:
            valid, hidden = _without_hidden(sortable, settings)
            listed = ("This index does not have configured sortable attributes." if not valid else
                      f"Available sortable attributes are: `{', '.join(valid)}{', <..hidden-attributes>' if hidden else ''}`.")
            raise _index_error(uid, "invalid_search_sort", f"Attribute `{field}` is not sortable. {listed}")
    raise _not_available(uid, "invalid_search_sort", "Sorting search results", "filters")


def facet_distribution(facets: list[str], settings: dict[str, Any], uid: str,
                       ) -> tuple[dict[str, Any], dict[str, Any]]:
    """`facetDistribution`/`facetStats` when they are necessarily empty; the errors of invalid names."""
    rules = _filter_rules(settings)
    patterns = _filterable_patterns(rules)
    invalid: dict[str, int | None] = {}
    for name in facets:
        if name == "*":
            continue
        matched = _matching_rule(rules, name)
        if matched is None or not matched[1]:
            invalid[name] = None if matched is None else matched[0]
    if invalid:
        names = sorted(invalid)
        listed = ("This index does not have configured filterable attributes." if not patterns else
                  f"Available filterable attributes patterns are: `{', '.join(patterns)}`.")
        if len(names) == 1:
            field, rule = names[0], invalid[names[0]]
            if rule is not None:
                detail = (f"Attribute `{field}` matched rule #{rule} in filterableAttributes, but this rule does not "
                          f"enable filtering.\nHint: enable filtering in rule #{rule} by modifying the "
                          f"features.filter object\nHint: prepend another rule matching `{field}` with appropriate "
                          f"filter features before rule #{rule}")
            else:
                detail = f"Attribute `{field}` is not filterable. {listed}"
        else:
            detail = f"Attributes `{', '.join(names)}` are not filterable. {listed}"
        raise MeiliError("invalid_search_facets", f"Invalid facet distribution: {detail}")
    if facets and (patterns or any(name != "*" for name in facets)):
        raise _not_available(uid, "invalid_search_facets", "Facet distribution", "filters")
    return {}, {}


# --------------------------------------------------------------------------------------------------
# Hits
# --------------------------------------------------------------------------------------------------


def known_fields(reader: IndexReader) -> list[str]:
    """Top-level and nested field names in first-seen order (stand-in for milli's fields-ids map)."""
    names = list(reader.fields_ids_map())
    seen = set(names)
    for name in search_fields(reader):
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


class HitMaker:
    """Meilisearch's `HitMaker` on field names: retrieval, `_vectors`, formatting, scores."""

    def __init__(self, reader: IndexReader, query: SearchQuery, settings: dict[str, Any], result: SearchResult) -> None:
        self.query = query
        self.fields = known_fields(reader)
        displayed = settings.get("displayedAttributes") or ["*"]
        self.displayed_setting: set[str] | None = None if displayed == ["*"] else set(displayed)
        self.vectors_hidden = self.displayed_setting is not None and VECTORS not in self.displayed_setting
        self.retrieve_vectors = query.retrieve_vectors and not self.vectors_hidden
        tokenizer = Tokenizer.from_settings({**settings, "stopWords": []})  # as HitMaker's: no stop words
        self.highlighter = Highlighter(result.matching, tokenizer, crop_marker=query.crop_marker,
                                       highlight_pre_tag=query.highlight_pre_tag,
                                       highlight_post_tag=query.highlight_post_tag)
        self.wants_format = bool(query.attributes_to_highlight or query.attributes_to_crop)
        shown = self.displayed_setting
        # `_vectors` is not part of the stored document in Meilisearch: never formatted nor positioned,
        # retrieved only through `retrieveVectors`
        self.displayed = [f for f in self.fields if not is_faceted_by(f, VECTORS) and (shown is None or f in shown)]
        wanted = query.attributes_to_retrieve
        if wanted is None or "*" in wanted:
            self.to_retrieve = self.displayed
        else:
            wanted_set, displayed_set = set(wanted), set(self.displayed)
            self.to_retrieve = [f for f in self.fields if f in wanted_set and f in displayed_set]
        self.options = formatted_options(
            attributes_to_highlight=query.attributes_to_highlight, attributes_to_crop=query.attributes_to_crop,
            crop_length=query.crop_length, to_retrieve=self.to_retrieve, displayed=self.displayed,
            fields=self.fields,
        )

    def make(self, document: dict[str, Any], score: float, details: dict[str, Any]) -> dict[str, Any]:
        q = self.query
        if self.retrieve_vectors:
            hit = _vectors_last(select_fields(document, [*self.to_retrieve, VECTORS]))
        else:
            hit = dict(select_fields(document, self.to_retrieve))
        if q.show_matches_position or self.wants_format:
            formatted, positions = format_document(document, self.highlighter, self.options,
                                                   displayed=self.displayed,
                                                   show_matches_position=q.show_matches_position)
            if formatted:
                hit["_formatted"] = formatted
            if positions is not None:
                hit["_matchesPosition"] = positions
        if q.show_ranking_score:
            hit["_rankingScore"] = score
        if q.show_ranking_score_details:
            hit["_rankingScoreDetails"] = details
        return hit


def _vectors_last(selected: dict[str, Any]) -> dict[str, Any]:
    """`_vectors` taken out with serde_json's `swap_remove` (the last key moves into its slot), then
    put back last as an object (`{}` when the document has none), as Meilisearch's `make_hit`."""
    keys = list(selected)
    vectors = selected.get(VECTORS)
    if VECTORS in selected:
        position = keys.index(VECTORS)
        last = keys.pop()
        if position < len(keys):
            keys[position] = last
    out = {key: selected[key] for key in keys}
    out[VECTORS] = vectors if isinstance(vectors, dict) else {}
    return out


# --------------------------------------------------------------------------------------------------
# The search
# --------------------------------------------------------------------------------------------------


def run_engine_search(reader: IndexReader, request: SearchRequest, settings: dict[str, Any]) -> SearchResult:
    # imported here so that the HTTP layer loads even while the engine module is being replaced
    from hanzo_engine.engine.search.engine import search

    return search(reader, request, settings)


def check_query(reader: IndexReader, uid: str, query: SearchQuery) -> dict[str, Any]:
    """Every check of `query` that needs the index, in Meilisearch's order; the completed settings."""
    settings = complete_settings(reader.settings())
    check_search_kind(query, settings, uid)

    expressions = [] if query.filter is None else _filter_subexpressions(query.filter)
    _check_reserved_filter(expressions)
    if query.sort is not None:
        parse_sort(query.sort)
    if query.attributes_to_search_on is not None:
        _check_search_on(query.attributes_to_search_on, settings, known_fields(reader), uid)
    if query.distinct is not None:
        check_distinct(query.distinct, settings, uid)
    if expressions:
        _check_filter(expressions, settings, uid)
    if query.sort is not None:
        _check_sort(query.sort, settings, uid)
    return settings


def perform(reader: IndexReader, uid: str, query: SearchQuery, request_uid: str, with_metadata: bool,
            ) -> dict[str, Any]:
    """One search on `uid` in the read transaction of `reader`: the response body of the search route."""
    started = time.perf_counter()
    settings = check_query(reader, uid, query)

    max_total_hits = (settings.get("pagination") or {}).get("maxTotalHits") or DEFAULT_MAX_TOTAL_HITS
    finite = query.is_finite_pagination
    if finite:
        hits_per_page = query.hits_per_page if query.hits_per_page is not None else 20
        page = query.page if query.page is not None else 1
        offset, limit = (hits_per_page * (page - 1), hits_per_page) if page > 0 else (0, 0)
    else:
        offset, limit = query.offset, query.limit
    offset = min(offset, max_total_hits)
    limit = min(limit, max(max_total_hits - offset, 0))
    threshold = query.ranking_score_threshold
    search_on = query.attributes_to_search_on
    request = SearchRequest(
        q=query.q, offset=offset, limit=limit, matching_strategy=query.matching_strategy,
        attributes_to_search_on=None if search_on is None or "*" in search_on else list(search_on),
        ranking_score_threshold=None if threshold is None or threshold != threshold else threshold,  # NaN: none
        exhaustive_count=finite, locales=query.locales,
    )
    result = run_engine_search(reader, request, settings)

    maker = HitMaker(reader, query, settings, result)
    hits = []
    for docid, score, details in zip(result.docids, result.scores, result.details, strict=True):
        document = reader.document_by_internal_id(docid)
        if document is not None:
            hits.append(maker.make(document, score, details))

    facets = None if query.facets is None else facet_distribution(query.facets, settings, uid)
    number_of_hits = min(result.candidates, max_total_hits)
    body: dict[str, Any] = {"hits": hits, "query": query.q or "",
                            "processingTimeMs": int((time.perf_counter() - started) * 1000)}
    if finite:
        hits_per_page = query.hits_per_page if query.hits_per_page is not None else 20
        body["hitsPerPage"] = hits_per_page
        body["page"] = query.page if query.page is not None else 1
        body["totalPages"] = -(-number_of_hits // hits_per_page) if hits_per_page else 0
        body["totalHits"] = number_of_hits
    else:
        body["limit"] = query.limit
        body["offset"] = offset
        body["estimatedTotalHits"] = number_of_hits
    if facets is not None:
        body["facetDistribution"], body["facetStats"] = facets
    body["requestUid"] = request_uid
    if with_metadata:
        metadata: dict[str, Any] = {"queryUid": uuid7(), "indexUid": uid}
        primary_key = reader.primary_key
        if primary_key is not None:
            metadata["primaryKey"] = primary_key
        body["metadata"] = metadata
    if query.show_performance_details:
        body["performanceDetails"] = {"search": duration_text(time.perf_counter() - started)}
    return body


async def _search(request: Request, uid: str, query: SearchQuery) -> Response:
    request_uid = uuid7()
    if query.use_network is not None:
        raise MeiliError("feature_not_enabled", "passing `useNetwork` in a search query requires enabling the "
                         f"`network` experimental feature. See {NETWORK_DISCUSSION}")
    with_metadata = include_metadata(request)
    query = fused_query(request, uid, query)
    scheduler = state(request).scheduler
    body = await run_queued(
        request, read_index, scheduler, uid, lambda reader: perform(reader, uid, query, request_uid, with_metadata)
    )
    return JSONResponse(body)


@route("POST", SEARCH_PATH, action="search")
async def search_with_post(request: Request) -> Response:
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    query = parse_search_body(body)
    uid = validate_index_uid(request.path_params["index_uid"])
    return await _search(request, uid, query)


@route("GET", SEARCH_PATH, action="search")
async def search_with_get(request: Request) -> Response:
    params = search_query_params(query_pairs(request))
    uid = validate_index_uid(request.path_params["index_uid"])
    query = search_query_from_params(params)
    return await _search(request, uid, query)
