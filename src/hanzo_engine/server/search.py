"""What the search routes share (Meilisearch's `meilisearch/src/search/mod.rs`): the query's checks, its
preparation (`prepare_query`), the engine request, the hits (`HitMaker`) and the response body (`perform`).

Order of the checks, as Meilisearch runs them: the body or query string (deserr), the path's index
uid, the GET-only hybrid checks, `useNetwork` (needs the `network` feature), the index lookup (404),
the search kind (`vector`/`media`/`hybrid`), then in the read transaction: filter syntax, sort
syntax, `attributesToSearchOn`, `distinct`, filter attributes, sort attributes, the search itself,
and `facets`. Errors found by the search core carry the "Index `uid`: " prefix, syntax errors and
facet errors do not.

Filters are evaluated on the facet structures (`engine/search/filter.py`) before the search, whose
universe they restrict; `sort` and `distinct` go to the engine as an `Ordering`
(`engine/search/sorting.py`); `facetDistribution`/`facetStats` are counted over every matching
document (`engine/search/facet_distribution.py`). With a `_geoPoint` sort, hits whose retrieved
`_geo` has a point get `_geoDistance` (meters, rounded). Semantic and hybrid searches run on the
vector store (`engine/vector/hybrid.py`, with the opt-in `hybrid.fusion`); as Meilisearch since v1.8,
their hits carry no `_semanticScore` (the similarity is `_rankingScore`).

Pagination (docs/api-contract.md §3.2): `maxTotalHits` bounds the reachable window (offset capped at it, limit at
what remains); page mode asks the engine for an exhaustive count. Totals are capped at `maxTotalHits`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from pyroaring import BitMap
from starlette.requests import Request

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.search import (
    SearchQuery,
    parse_sort,
)
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.documents.fields import select_fields
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.search.facet_distribution import facet_distribution as engine_facet_distribution
from hanzo_engine.engine.search.facet_store import FacetStore
from hanzo_engine.engine.search.filter import FilterContext, FilterOperatorError
from hanzo_engine.engine.search.format import (
    DocumentFormatter,
    Highlighter,
    formatted_options,
    is_faceted_by,
)
from hanzo_engine.engine.search.geo import haversine
from hanzo_engine.engine.search.sorting import Ordering
from hanzo_engine.engine.search.types import SearchRequest, SearchResult
from hanzo_engine.engine.tokenizer import Tokenizer
from hanzo_engine.engine.update.facets import FacetRules
from hanzo_engine.engine.update.indexer import search_fields
from hanzo_engine.engine.vector.hybrid import AiOutcome, ai_search
from hanzo_engine.filter_parser import FilterError, FilterFeatures, Node, check_features, parse_filter_value

from .app_state import state
from .auth import auth_filter
from .features import runtime_features
from .foreign_keys import ForeignIndexes, hydrate_hits, resolve_foreign
from .pins import apply_pins, plan_pins

SEARCH_PATH: Final = "/indexes/{index_uid}/search"
VECTORS: Final = "_vectors"
_encode_json: Final = msgspec.json.Encoder().encode
INCLUDE_METADATA_HEADER: Final = "meili-include-metadata"
NETWORK_DISCUSSION: Final = "https://github.com/orgs/meilisearch/discussions/805"
DEFAULT_MAX_TOTAL_HITS: Final = 1000


def uuid7() -> str:
    """A UUIDv7: 48-bit Unix milliseconds, version 7, variant 10, random bits."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = ((millis & ((1 << 48) - 1)) << 80) | (0x7 << 76) | (((rand >> 62) & 0xFFF) << 64) | (0b10 << 62)
    value |= rand & ((1 << 62) - 1)
    h = f"{value:032x}"  # uuid.UUID's str, without building the object (one per search)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


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
        raise MeiliError(
            "invalid_search_media_and_vector",
            "Invalid request: both `media` and `vector` parameters are present.",
        )
    if (has_media or query.vector is not None) and query.hybrid is None:
        raise MeiliError(
            "missing_search_hybrid",
            "Invalid request: missing `hybrid` parameter when `vector` or `media` are present.",
        )
    hybrid = query.hybrid
    if hybrid is None or hybrid.semantic_ratio == 0.0:
        return
    if not has_media and placeholder and query.vector is None:
        return  # no query and no vector: a placeholder keyword search, even with `hybrid`
    embedders = settings.get("embedders") or {}
    if hybrid.embedder not in embedders:
        raise MeiliError("invalid_search_embedder", f"Cannot find embedder with name `{hybrid.embedder}`.")


def parse_search_filter(
    value: Any, features: FilterFeatures | None = None, code: str = "invalid_search_filter"
) -> Node | None:
    """The parsed filter (None when there is none): syntax errors as `code`, experimental operators
    whose feature is off as `feature_not_enabled`, as Meilisearch's `parse_filter`."""
    if value is None:
        return None
    try:
        node = parse_filter_value(value)
        check_features(node, features or FilterFeatures())
    except FilterError as err:
        raise MeiliError("feature_not_enabled" if err.feature is not None else code, err.message) from None
    return node


def without_hidden(names: Sequence[str], settings: dict[str, Any]) -> tuple[list[str], bool]:
    """milli's `remove_hidden_fields`: the names that are displayed, sorted, and whether any was not."""
    valid = sorted(set(names))
    displayed = settings.get("displayedAttributes") or ["*"]
    if displayed == ["*"]:
        return valid, False
    shown = [name for name in valid if name in set(displayed)]
    return shown, len(shown) < len(valid)


def _check_search_on(
    attributes: list[str], settings: dict[str, Any], fields: Sequence[str], uid: str
) -> None:
    """`attributesToSearchOn` items must be searchable fields (unchecked with the `*` wildcard setting)."""
    searchable = settings.get("searchableAttributes") or ["*"]
    if searchable == ["*"]:
        return
    names = [f for f in fields if any(is_faceted_by(f, s) for s in searchable)]
    for attr in attributes:
        if attr != "*" and attr not in names:
            valid, hidden = without_hidden(names, settings)
            raise _index_error(
                uid,
                "invalid_search_attributes_to_search_on",
                f"Attribute `{attr}` is not searchable. Available searchable attributes are: "
                f"`{', '.join(valid)}{', <..hidden-attributes>' if hidden else ''}`.",
            )


def check_distinct(distinct: str, settings: dict[str, Any], uid: str) -> None:
    """The `distinct` search parameter must name a filterable attribute (milli's check)."""
    rules = FacetRules(settings)
    matched = rules.matching(distinct)
    if matched is not None and matched[1].filterable:
        return
    valid, hidden = without_hidden(rules.filterable_patterns(), settings)
    if matched is not None:
        index = matched[0]
        tail = (
            f"Note: this attribute matches rule #{index} in filterableAttributes, but this rule does not "
            f"enable filtering.\nHint: enable filtering in rule #{index} by adding appropriate filter "
            f"features.\nHint: prepend another rule matching {distinct} with filter features before rule #{index}"
        )
    elif not valid:
        tail = "This index does not have configured filterable attributes."
    else:
        tail = f"Available filterable attributes patterns are: `{', '.join(valid)}{', <..hidden-attributes>' if hidden else ''}`."
    raise _index_error(
        uid,
        "invalid_search_distinct",
        f"Attribute `{distinct}` is not filterable and thus, cannot be used as distinct attribute. {tail}",
    )


def _check_sort(sort: list[str], settings: dict[str, Any], uid: str) -> None:
    criteria = parse_sort(sort)  # syntax was checked before; this only re-reads it
    if not criteria:
        return
    if "sort" not in (settings.get("rankingRules") or []):
        raise _index_error(
            uid,
            "invalid_search_sort",
            "You must specify where `sort` is listed in the rankingRules "
            "setting to use the sort parameter at search time.",
        )
    message = unsortable_message(criteria, settings)
    if message is not None:
        raise _index_error(uid, "invalid_search_sort", message)


def unsortable_message(criteria: list[Any], settings: dict[str, Any]) -> str | None:
    """Meilisearch's message for the first sort criterion on an attribute that is not sortable (None when
    every one is), listing the displayed sortable attributes."""
    sortable = settings.get("sortableAttributes") or []
    for criterion in criteria:
        if criterion.field is not None:
            if any(is_faceted_by(criterion.field, s) for s in sortable):
                continue
        elif "_geo" in sortable:
            continue
        field = criterion.field if criterion.field is not None else "_geo"
        valid, hidden = without_hidden(sortable, settings)
        listed = (
            "This index does not have configured sortable attributes."
            if not valid
            else f"Available sortable attributes are: `{', '.join(valid)}{', <..hidden-attributes>' if hidden else ''}`."
        )
        return f"Attribute `{field}` is not sortable. {listed}"
    return None


def facet_distribution(
    facets: list[str],
    settings: dict[str, Any],
    uid: str,
    reader: IndexReader | None = None,
    candidates: BitMap | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`facetDistribution`/`facetStats` of `facets` over `candidates` (all the documents a search
    matched), after Meilisearch's check of the names (none when `*` is among them)."""
    rules = FacetRules(settings)
    patterns = rules.filterable_patterns()
    invalid: dict[str, int | None] = {}
    for name in facets if "*" not in facets else ():
        matched = rules.matching(name)
        if matched is None or not matched[1].filterable:
            invalid[name] = None if matched is None else matched[0]
    if invalid:
        names = sorted(invalid)
        listed = (
            "This index does not have configured filterable attributes."
            if not patterns
            else f"Available filterable attributes patterns are: `{', '.join(patterns)}`."
        )
        if len(names) == 1:
            field, rule = names[0], invalid[names[0]]
            if rule is not None:
                detail = (
                    f"Attribute `{field}` matched rule #{rule} in filterableAttributes, but this rule does not "
                    f"enable filtering.\nHint: enable filtering in rule #{rule} by modifying the "
                    f"features.filter object\nHint: prepend another rule matching `{field}` with appropriate "
                    f"filter features before rule #{rule}"
                )
            else:
                detail = f"Attribute `{field}` is not filterable. {listed}"
        else:
            detail = f"Attributes `{', '.join(names)}` are not filterable. {listed}"
        raise MeiliError("invalid_search_facets", f"Invalid facet distribution: {detail}")
    if reader is None or candidates is None:
        # callers that do not pass the candidates yet (federated facets) cannot count anything
        if facets and (patterns or any(name != "*" for name in facets)):
            raise _not_available(uid, "invalid_search_facets", "Facet distribution", "filters")
        return {}, {}
    return engine_facet_distribution(reader, settings, candidates, facets)


# --------------------------------------------------------------------------------------------------
# Hits
# --------------------------------------------------------------------------------------------------


def _per_committed_state(
    reader: IndexReader, name: str, compute: Callable[[], tuple[str, ...]]
) -> tuple[str, ...]:
    """`compute()` kept on the index under `name` per committed state (the id of the last write
    transaction the reader sees): every search of an unchanged index asks for the same names."""
    state = reader.state_id
    cached: tuple[int, tuple[str, ...]] | None = getattr(reader.index, name, None)
    if cached is not None and state is not None and cached[0] == state:
        return cached[1]
    names = compute()
    if state is not None:
        setattr(reader.index, name, (state, names))
    return names


def stored_fields(reader: IndexReader) -> tuple[str, ...]:
    """The fields-ids map: every top-level name a stored document may hold."""
    return _per_committed_state(reader, "_stored_fields", lambda: tuple(reader.fields_ids_map()))


def known_fields(reader: IndexReader) -> list[str]:
    """Top-level and nested field names in first-seen order (stand-in for milli's fields-ids map)."""

    def compute() -> tuple[str, ...]:
        names = list(stored_fields(reader))
        seen = set(names)
        for name in search_fields(reader):
            if name not in seen:
                seen.add(name)
                names.append(name)
        return tuple(names)

    return list(_per_committed_state(reader, "_known_fields", compute))


class HitMaker:
    """Meilisearch's `HitMaker` on field names: retrieval, `_vectors`, formatting, scores."""

    def __init__(
        self, reader: IndexReader, query: SearchQuery, settings: dict[str, Any], result: SearchResult
    ) -> None:
        self.query = query
        self.fields = known_fields(reader)
        displayed = settings.get("displayedAttributes") or ["*"]
        self.displayed_setting: set[str] | None = None if displayed == ["*"] else set(displayed)
        self.vectors_hidden = self.displayed_setting is not None and VECTORS not in self.displayed_setting
        self.retrieve_vectors = query.retrieve_vectors and not self.vectors_hidden
        self.geo_point = geo_sort_point(query.sort)
        shown = self.displayed_setting
        # `_vectors` is not part of the stored document in Meilisearch: never formatted nor positioned,
        # retrieved only through `retrieveVectors`
        self.displayed = [
            f for f in self.fields if not is_faceted_by(f, VECTORS) and (shown is None or f in shown)
        ]
        wanted = query.attributes_to_retrieve
        if wanted is None or "*" in wanted:
            self.to_retrieve = self.displayed
        else:
            wanted_set, displayed_set = set(wanted), set(self.displayed)
            self.to_retrieve = [f for f in self.fields if f in wanted_set and f in displayed_set]
        # A stored document holds its keys in fields-ids-map order and only names from that map
        # (`engine/index.py` `_ordered`): when the page shows every one of them as stored, a hit is the
        # stored JSON itself (`raw_hit`), never decoded nor encoded again.
        stored_names = stored_fields(reader)
        self.stored_as_is = (
            not self.retrieve_vectors
            and self.geo_point is None
            and not query.formats_hits
            and VECTORS not in stored_names
            and set(stored_names) <= set(self.to_retrieve)
            # a name with a dot is also a path into its own value: `select_fields` may keep part of it
            and not any("." in name for name in stored_names)
        )
        # the highlighter's tokenizer and options cost more than a plain hit: made only when used
        self.formatter: DocumentFormatter | None = None
        if query.formats_hits:
            tokenizer = Tokenizer.from_settings({**settings, "stopWords": []})  # as HitMaker's: no stop words
            highlighter = Highlighter(
                result.matching,
                tokenizer,
                crop_marker=query.crop_marker,
                highlight_pre_tag=query.highlight_pre_tag,
                highlight_post_tag=query.highlight_post_tag,
            )
            options = formatted_options(
                attributes_to_highlight=query.attributes_to_highlight,
                attributes_to_crop=query.attributes_to_crop,
                crop_length=query.crop_length,
                to_retrieve=self.to_retrieve,
                displayed=self.displayed,
                fields=self.fields,
            )
            self.formatter = DocumentFormatter(
                highlighter, options, self.displayed, query.show_matches_position
            )

    def make(self, document: dict[str, Any], score: float, details: dict[str, Any]) -> dict[str, Any]:
        q = self.query
        if self.retrieve_vectors:
            hit = _vectors_last(select_fields(document, [*self.to_retrieve, VECTORS]))
        else:
            hit = dict(select_fields(document, self.to_retrieve))
        if self.geo_point is not None:
            insert_geo_distance(hit, self.geo_point)
        if self.formatter is not None:
            formatted, positions = self.formatter.format(document)
            if formatted:
                hit["_formatted"] = formatted
            if positions is not None:
                hit["_matchesPosition"] = positions
        if q.show_ranking_score:
            hit["_rankingScore"] = score
        if q.show_ranking_score_details:
            hit["_rankingScoreDetails"] = details
        return hit

    def raw_hit(self, stored: bytes, score: float, details: dict[str, Any]) -> msgspec.Raw:
        """What `make` gives the decoded `stored` document, encoded, when `stored_as_is`: the stored JSON
        with the scores appended as `make` appends them."""
        q = self.query
        extra = []
        if q.show_ranking_score:
            extra.append(b'"_rankingScore":' + _encode_json(score))
        if q.show_ranking_score_details:
            extra.append(b'"_rankingScoreDetails":' + _encode_json(details))
        if not extra:
            return msgspec.Raw(stored)
        head = stored[:-1]  # the object without its closing brace
        joined = b",".join(extra)
        return msgspec.Raw(head + (joined if head == b"{" else b"," + joined) + b"}")


# Meilisearch's `insert_geo_distance` finds the sort's point with this pattern.
_GEO_POINT = re.compile(r"_geoPoint\(\s*([0-9.\-]+)\s*,\s*([0-9.\-]+)\s*\)")


def geo_sort_point(sort: list[str] | None) -> tuple[float, float] | None:
    """The point of the first `_geoPoint(lat, lng)` sort criterion, if any."""
    for criterion in sort or ():
        found = _GEO_POINT.search(criterion)
        if found is not None:
            try:
                return float(found.group(1)), float(found.group(2))
            except ValueError:
                return None
    return None


def _geo_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def insert_geo_distance(hit: dict[str, Any], point: tuple[float, float]) -> None:
    """`_geoDistance`: meters from the sort's point to the hit's (retrieved) `_geo`, rounded."""
    geo = hit.get("_geo")
    if not isinstance(geo, dict):
        return
    lat, lng = _geo_number(geo.get("lat")), _geo_number(geo.get("lng"))
    if lat is not None and lng is not None:
        # Rust's `f64::round` rounds halves away from zero (distances are never negative)
        hit["_geoDistance"] = math.floor(haversine(point[0], point[1], lat, lng) + 0.5)


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


def keyword_or_ai_search(
    reader: IndexReader,
    request: SearchRequest,
    settings: dict[str, Any],
    query: SearchQuery,
    *,
    multimodal: bool = False,
) -> tuple[SearchResult, AiOutcome | None]:
    """The engine's answer to `request`: semantic or hybrid when `query` asks for it (with the AI
    outcome), else a keyword search."""
    hybrid = query.hybrid
    ai = ai_search(
        reader,
        request,
        settings,
        hybrid.embedder if hybrid else None,
        hybrid.semantic_ratio if hybrid else None,
        query.vector,
        hybrid.fusion if hybrid else None,
        media=query.media,
        multimodal=multimodal,
    )
    return (ai.result if ai is not None else run_engine_search(reader, request, settings)), ai


@dataclass
class PreparedQuery:
    """A checked query: completed settings, the documents its filter allows (None: all) and its sort
    rules and distinct (None: neither)."""

    settings: dict[str, Any]
    universe: BitMap | None
    ordering: Ordering | None


def is_keyword_only(query: SearchQuery) -> bool:
    """The search embeds nothing, so it never waits on an embedder's network round trip (it may then
    run on the event loop's thread: `search_queue.run_queued`)."""
    return query.hybrid is None and query.vector is None and query.media is None


def prepare_query(
    reader: IndexReader,
    uid: str,
    query: SearchQuery,
    features: FilterFeatures | None = None,
    foreign: ForeignIndexes | None = None,
) -> PreparedQuery:
    """Every check of `query` that needs the index, in Meilisearch's order (filter syntax, sort syntax,
    `attributesToSearchOn`, `distinct`, the filter's attributes and evaluation, sort attributes), with
    the filter evaluated and the sort/distinct prepared for the engine."""
    settings = complete_settings(reader.settings())
    check_search_kind(query, settings, uid)
    node = parse_search_filter(query.filter, features)
    if node is not None and foreign is not None:  # `_foreign(..)` clauses, while `foreignKeys` is on
        node = resolve_foreign(node, settings, uid, foreign)
    criteria = parse_sort(query.sort) if query.sort is not None else None
    if query.attributes_to_search_on is not None:
        _check_search_on(query.attributes_to_search_on, settings, known_fields(reader), uid)
    if query.distinct is not None:
        check_distinct(query.distinct, settings, uid)
    store = FacetStore(reader)
    universe = None
    if node is not None:
        try:
            universe = FilterContext(reader, settings, store).evaluate(node)
        except (FilterError, FilterOperatorError) as err:
            raise _index_error(uid, "invalid_search_filter", err.message) from None
    if query.sort is not None:
        _check_sort(query.sort, settings, uid)
    distinct = query.distinct if query.distinct is not None else settings.get("distinctAttribute")
    custom_rules = any(r.endswith((":asc", ":desc")) for r in settings.get("rankingRules") or [])
    ordering = None
    if criteria or distinct is not None or custom_rules:
        ordering = Ordering(reader, settings, criteria, distinct, store)
    return PreparedQuery(settings, universe, ordering)


def check_query(reader: IndexReader, uid: str, query: SearchQuery) -> dict[str, Any]:
    """Every check of `query` that needs the index (see `prepare_query`); the completed settings."""
    return prepare_query(reader, uid, query).settings


def engine_request(
    prepared: PreparedQuery,
    query: SearchQuery,
    *,
    offset: int,
    limit: int,
    exhaustive: bool,
    scores_needed: bool = True,
    matching_needed: bool = True,
) -> SearchRequest:
    """The engine's request for a prepared query (`offset`/`limit` already capped); `scores_needed`
    False when the caller shows the hits without their ranking scores and details, `matching_needed`
    False when it neither highlights, crops nor shows matches' positions."""
    threshold = query.ranking_score_threshold
    search_on = query.attributes_to_search_on
    return SearchRequest(
        q=query.q,
        offset=offset,
        limit=limit,
        matching_strategy=query.matching_strategy,
        attributes_to_search_on=None if search_on is None or "*" in search_on else list(search_on),
        ranking_score_threshold=None
        if threshold is None or threshold != threshold
        else threshold,  # NaN: none
        exhaustive_count=exhaustive,
        locales=query.locales,
        filter_universe=prepared.universe,
        ordering=prepared.ordering,
        scores_needed=scores_needed,
        matching_needed=matching_needed,
    )


def perform(
    reader: IndexReader,
    uid: str,
    query: SearchQuery,
    request_uid: str,
    with_metadata: bool,
    features: FilterFeatures | None = None,
    rules: list[dict[str, Any]] | None = None,
    foreign: ForeignIndexes | None = None,
) -> dict[str, Any]:
    """One search on `uid` in the read transaction of `reader`: the response body of the search route.
    `rules`: the dynamic search rules to apply (`server/pins.py`), None when the feature is off;
    `foreign`: the other indexes, for `_foreign` filters and hit hydration, None when `foreignKeys` is off."""
    started = time.perf_counter()
    prepared = prepare_query(reader, uid, query, features, foreign)
    settings = prepared.settings

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
    pins = plan_pins(reader, uid, rules, query.q, prepared.universe, query.filter) if rules else []
    if pins:  # the organic ranking from its start: pins take absolute positions in it
        request = engine_request(
            prepared, query, offset=0, limit=offset + limit + len(pins), exhaustive=finite
        )
    else:
        shown = query.show_ranking_score or query.show_ranking_score_details
        keyword_only = is_keyword_only(query)
        request = engine_request(
            prepared,
            query,
            offset=offset,
            limit=limit,
            exhaustive=finite,
            scores_needed=shown or not keyword_only,
            matching_needed=query.formats_hits or not keyword_only,
        )
    result, ai = keyword_or_ai_search(
        reader, request, settings, query, multimodal=features is not None and features.multimodal
    )
    if pins:
        result = apply_pins(result, pins, offset, limit)

    maker = HitMaker(reader, query, settings, result)
    hits: list[Any] = []
    if maker.stored_as_is and foreign is None:  # (foreign keys hydrate hits: they need them decoded)
        for docid, score, details in zip(result.docids, result.scores, result.details, strict=True):
            stored = reader.stored_document(docid)
            if stored is not None:
                hits.append(maker.raw_hit(stored, score, details))
    else:
        for docid, score, details in zip(result.docids, result.scores, result.details, strict=True):
            document = reader.document_by_internal_id(docid)
            if document is not None:
                hits.append(maker.make(document, score, details))
        if foreign is not None:
            hydrate_hits(hits, settings, foreign)

    facets = None
    if query.facets is not None:
        candidates = result.all_candidates if result.all_candidates is not None else BitMap()
        facets = facet_distribution(query.facets, settings, uid, reader, candidates)
    number_of_hits = min(result.candidates, max_total_hits)
    body: dict[str, Any] = {"hits": hits, "query": query.q or ""}
    if ai is not None and query.retrieve_vectors and ai.query_vector is not None:
        body["queryVector"] = ai.query_vector
    body["processingTimeMs"] = int((time.perf_counter() - started) * 1000)
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
    if ai is not None:
        body["semanticHitCount"] = ai.semantic_hit_count
    return body


def filter_features(request: Request) -> FilterFeatures:
    """The experimental features filters may use (`containsFilter`, `network`, `multimodal`)."""
    return runtime_features(request).filter_features()


def search_rules(request: Request) -> list[dict[str, Any]] | None:
    """The stored dynamic search rules while `dynamicSearchRules` is on (None otherwise or when none)."""
    from hanzo_engine.scheduler.dynamic_search_rules import all_rules

    if not runtime_features(request).enabled("dynamicSearchRules"):
        return None
    return all_rules(state(request).indexes.store) or None


def fused_query(request: Request, uid: str, query: SearchQuery) -> SearchQuery:
    """`query` with the tenant token's search-rule filter for `uid` AND-ed to its own (docs/api-contract.md §0.2)."""
    fused = auth_filter(request).fuse_filter(uid, query.filter)
    return query if fused is query.filter else dataclasses.replace(query, filter=fused)
