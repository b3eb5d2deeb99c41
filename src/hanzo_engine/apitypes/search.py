"""Search request vocabulary (= Meilisearch's `SearchQuery`, `SearchQueryGet` and `AscDesc`).

`parse_search_body` validates a decoded `POST /indexes/{uid}/search` body, `parse_search_params` the
query-string pairs of the GET form; both return the same `SearchQuery`. Messages and codes are
deserr's (`invalid_search_*`, unknown fields and parameters are `bad_request`), with the accepted
names listed in Meilisearch's declaration order, which is the order written below.

GET differences (Meilisearch's `TryFrom<SearchQueryGet>`): list parameters are comma-separated;
`sort` is split on commas but a `_geoPoint(lat, lng):asc` is joined back; `filter` is used as JSON
when it parses as JSON and as a string otherwise; `hybrid` is spread over `hybridEmbedder` and
`hybridSemanticRatio`; `personalize` is `personalizeUserContext`; `media` does not exist.

`parse_sort` is milli's `AscDesc::from_str` with the search-time `SortError` messages; it is
syntax only (whether the attribute is sortable needs the index).

Beyond Meilisearch: the POST body's `hybrid` object also takes `fusion` (`"convex"` or `"rrf"`, the opt-in
rank fusions of `engine/vector/hybrid.py`). It is taken out of the object before deserr's checks
(`pop_hybrid_fusion`), so every Meilisearch request, and every Meilisearch error message (the "expected
one of" list of `hybrid`'s fields included), is unchanged; it is validated once the rest of the body is.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from hanzo_engine.rustcompat.floats import f64_display as rust_f64_display
from hanzo_engine.rustcompat.floats import parse_f64

from .deserr import (
    Field,
    InvalidValue,
    QueryField,
    deserialize_object,
    did_you_mean,
    found_description,
    parse_json,
    parse_query,
    split_comma_list,
)
from .errors import MeiliError
from .locales import LOCALES

__all__ = [
    "DEFAULT_CROP_LENGTH",
    "DEFAULT_CROP_MARKER",
    "DEFAULT_HIGHLIGHT_POST_TAG",
    "DEFAULT_HIGHLIGHT_PRE_TAG",
    "DEFAULT_SEARCH_LIMIT",
    "DEFAULT_SEMANTIC_RATIO",
    "HYBRID_FUSIONS",
    "HybridQuery",
    "SearchQuery",
    "SortCriterion",
    "check_hybrid_fusion",
    "fix_sort_query_parameters",
    "parse_search_body",
    "parse_search_params",
    "parse_sort",
    "pop_hybrid_fusion",
    "rust_f64_display",
    "search_query_from_params",
    "search_query_params",
]

DEFAULT_SEARCH_OFFSET: Final = 0
DEFAULT_SEARCH_LIMIT: Final = 20
DEFAULT_CROP_LENGTH: Final = 10
DEFAULT_CROP_MARKER: Final = "…"
DEFAULT_HIGHLIGHT_PRE_TAG: Final = "<em>"
DEFAULT_HIGHLIGHT_POST_TAG: Final = "</em>"
DEFAULT_SEMANTIC_RATIO: Final = 0.5
MATCHING_STRATEGIES: Final = ("last", "all", "frequency")
HYBRID_FUSIONS: Final = ("convex", "rrf")  # = engine.vector.hybrid.FUSIONS

MatchingStrategyName = Literal["last", "all", "frequency"]


@dataclass(frozen=True)
class HybridQuery:
    embedder: str
    semantic_ratio: float = DEFAULT_SEMANTIC_RATIO
    fusion: str | None = None  # beyond Meilisearch: None (its score merge), "convex" or "rrf"


@dataclass
class SearchQuery:
    """One search request, every parameter with Meilisearch's default.

    `filter` is the raw JSON value (string or array; anything else is refused by the route, as
    milli's filter parser does). `locales` are the ISO 639-3 names (639-1 input is converted).
    `personalize` is the `userContext` string.
    """

    q: str | None = None
    offset: int = DEFAULT_SEARCH_OFFSET
    limit: int = DEFAULT_SEARCH_LIMIT
    page: int | None = None
    hits_per_page: int | None = None
    attributes_to_retrieve: list[str] | None = None
    attributes_to_crop: list[str] | None = None
    crop_length: int = DEFAULT_CROP_LENGTH
    crop_marker: str = DEFAULT_CROP_MARKER
    attributes_to_highlight: list[str] | None = None
    highlight_pre_tag: str = DEFAULT_HIGHLIGHT_PRE_TAG
    highlight_post_tag: str = DEFAULT_HIGHLIGHT_POST_TAG
    show_matches_position: bool = False
    filter: Any = None
    sort: list[str] | None = None
    distinct: str | None = None
    facets: list[str] | None = None
    matching_strategy: MatchingStrategyName = "last"
    attributes_to_search_on: list[str] | None = None
    ranking_score_threshold: float | None = None
    locales: list[str] | None = None
    hybrid: HybridQuery | None = None
    vector: list[float] | None = None
    retrieve_vectors: bool = False
    media: Any = None
    personalize: str | None = None
    use_network: bool | None = None
    show_ranking_score: bool = False
    show_ranking_score_details: bool = False
    show_performance_details: bool = False

    @property
    def is_finite_pagination(self) -> bool:
        """Page mode (`page` or `hitsPerPage` given): exhaustive `totalHits`/`totalPages`."""
        return self.page is not None or self.hits_per_page is not None

    @property
    def formats_hits(self) -> bool:
        """Whether hits are highlighted, cropped or show `_matchesPosition` (the query's matching words
        are needed)."""
        return bool(self.show_matches_position or self.attributes_to_highlight or self.attributes_to_crop)


# --------------------------------------------------------------------------------------------------
# Shared value checks
# --------------------------------------------------------------------------------------------------

_THRESHOLD_MESSAGE: Final = (
    "the value of `rankingScoreThreshold` is invalid, expected a float between `0.0` and `1.0`."
)
_RATIO_MESSAGE: Final = "the value of `semanticRatio` is invalid, expected a float between `0.0` and `1.0`."


def _threshold(value: float) -> float:
    # Rust's `f > 1.0 || f < 0.0` lets NaN through; so does this
    if value > 1.0 or value < 0.0:
        raise InvalidValue(_THRESHOLD_MESSAGE)
    return value


def _as_f32(value: float) -> float:
    """The f32 nearest to `value` (Meilisearch keeps `semanticRatio` and vectors as f32)."""
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _semantic_ratio(value: float) -> float:
    ratio = _as_f32(value)
    if ratio > 1.0 or ratio < 0.0:
        raise InvalidValue(_RATIO_MESSAGE)
    return ratio


def _locale_choices() -> tuple[str, ...]:
    return tuple(LOCALES)


def _json_locales(names: list[Any]) -> list[str]:
    """`locales` items: each a known 639-1/639-3 name (deserr's enum wording), kept as 639-3."""
    out = []
    for i, name in enumerate(names):
        path = f".locales[{i}]"
        if not isinstance(name, str):
            raise MeiliError(
                "invalid_search_locales",
                f"Invalid value type at `{path}`: expected a string, but found {found_description(name)}",
            )
        if name not in LOCALES:
            choices = _locale_choices()
            listed = ", ".join(f"`{c}`" for c in choices)
            raise MeiliError(
                "invalid_search_locales",
                f"Unknown value `{name}` at `{path}`: {did_you_mean(name, choices)}expected one of {listed}",
            )
        out.append(LOCALES[name])
    return out


def _json_vector(values: list[Any]) -> list[float]:
    out = []
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MeiliError(
                "invalid_search_vector",
                f"Invalid value type at `.vector[{i}]`: expected a number, but found {found_description(value)}",
            )
        out.append(_as_f32(float(value)))
    return out


# --------------------------------------------------------------------------------------------------
# POST body
# --------------------------------------------------------------------------------------------------

_HYBRID_FIELDS: Final = (
    Field(
        "semanticRatio",
        "number",
        "invalid_search_semantic_ratio",
        default=DEFAULT_SEMANTIC_RATIO,
        validate=_semantic_ratio,
    ),
    Field(
        "embedder",
        "string",
        "invalid_search_embedder",
        required=True,
        missing_code="invalid_search_hybrid_query",
    ),
)
_PERSONALIZE_FIELDS: Final = (
    Field(
        "userContext",
        "string",
        "invalid_search_personalize_user_context",
        required=True,
        missing_code="invalid_search_personalize",
    ),
)

# The order of `SearchQuery`'s fields in Meilisearch: it is the "expected one of" list.
SEARCH_BODY: Final = (
    Field("q", "string", "invalid_search_q", nullable=True, default=None),
    Field("offset", "usize", "invalid_search_offset", default=DEFAULT_SEARCH_OFFSET),
    Field("limit", "usize", "invalid_search_limit", default=DEFAULT_SEARCH_LIMIT),
    Field("page", "usize", "invalid_search_page", nullable=True, default=None),
    Field("hitsPerPage", "usize", "invalid_search_hits_per_page", nullable=True, default=None),
    Field(
        "attributesToRetrieve",
        "string_array",
        "invalid_search_attributes_to_retrieve",
        nullable=True,
        default=None,
    ),
    Field(
        "attributesToCrop", "string_array", "invalid_search_attributes_to_crop", nullable=True, default=None
    ),
    Field("cropLength", "usize", "invalid_search_crop_length", default=DEFAULT_CROP_LENGTH),
    Field("cropMarker", "string", "invalid_search_crop_marker", default=DEFAULT_CROP_MARKER),
    Field(
        "attributesToHighlight",
        "string_array",
        "invalid_search_attributes_to_highlight",
        nullable=True,
        default=None,
    ),
    Field("highlightPreTag", "string", "invalid_search_highlight_pre_tag", default=DEFAULT_HIGHLIGHT_PRE_TAG),
    Field(
        "highlightPostTag", "string", "invalid_search_highlight_post_tag", default=DEFAULT_HIGHLIGHT_POST_TAG
    ),
    Field("showMatchesPosition", "boolean", "invalid_search_show_matches_position", default=False),
    Field("filter", "any", "invalid_search_filter", default=None),
    Field("sort", "string_array", "invalid_search_sort", nullable=True, default=None),
    Field("distinct", "string", "invalid_search_distinct", nullable=True, default=None),
    Field("facets", "string_array", "invalid_search_facets", nullable=True, default=None),
    Field(
        "matchingStrategy",
        "string",
        "invalid_search_matching_strategy",
        default="last",
        choices=MATCHING_STRATEGIES,
    ),
    Field(
        "attributesToSearchOn",
        "string_array",
        "invalid_search_attributes_to_search_on",
        nullable=True,
        default=None,
    ),
    Field(
        "rankingScoreThreshold",
        "number",
        "invalid_search_ranking_score_threshold",
        nullable=True,
        default=None,
        validate=_threshold,
    ),
    Field("locales", "array", "invalid_search_locales", nullable=True, default=None, validate=_json_locales),
    Field(
        "hybrid", "object", "invalid_search_hybrid_query", nullable=True, default=None, fields=_HYBRID_FIELDS
    ),
    Field("vector", "array", "invalid_search_vector", nullable=True, default=None, validate=_json_vector),
    Field("retrieveVectors", "boolean", "invalid_search_retrieve_vectors", default=False),
    Field("media", "any", "invalid_search_media", default=None),
    Field(
        "personalize",
        "object",
        "invalid_search_personalize",
        nullable=True,
        default=None,
        fields=_PERSONALIZE_FIELDS,
    ),
    Field("useNetwork", "boolean", "invalid_search_use_network", nullable=True, default=None),
    Field("showRankingScore", "boolean", "invalid_search_show_ranking_score", default=False),
    Field("showRankingScoreDetails", "boolean", "invalid_search_show_ranking_score_details", default=False),
    Field("showPerformanceDetails", "boolean", "invalid_search_show_performance_details", default=False),
)


_FUSION_FIELD: Final = (
    Field(
        "fusion", "string", "invalid_search_hybrid_query", nullable=True, default=None, choices=HYBRID_FUSIONS
    ),
)
_NO_FUSION: Final = object()


def pop_hybrid_fusion(value: Any) -> tuple[Any, Any]:
    """`(body without hybrid.fusion, its raw value)`, for `check_hybrid_fusion` once the rest of the body
    is valid. The body is copied only when its `hybrid` object has a `fusion` key."""
    if isinstance(value, dict):
        hybrid = value.get("hybrid")
        if isinstance(hybrid, dict) and "fusion" in hybrid:
            rest = {k: v for k, v in hybrid.items() if k != "fusion"}
            return {**value, "hybrid": rest}, hybrid["fusion"]
    return value, _NO_FUSION


def check_hybrid_fusion(raw: Any, path: str = ".hybrid") -> str | None:
    """The validated `hybrid.fusion` (None when absent or null), with deserr's messages at `path`."""
    if raw is _NO_FUSION:
        return None
    fusion: str | None = deserialize_object({"fusion": raw}, _FUSION_FIELD, path=path)["fusion"]
    return fusion


PERSONALIZATION_DISCUSSION: Final = "https://github.com/orgs/meilisearch/discussions/866"


def personalization_unavailable() -> MeiliError:
    """What Meilisearch answers to a search with `personalize` when no reranker is configured (its
    personalization service is disabled without a Cohere key, and this build has none): the search runs,
    then reranking its results fails with `feature_not_enabled`."""
    return MeiliError(
        "feature_not_enabled",
        "reranking search results requires enabling the `personalization` "
        f"experimental feature. See {PERSONALIZATION_DISCUSSION}",
    )


def parse_search_body(value: Any) -> SearchQuery:
    """Validate a decoded JSON search body (first problem in key order wins, as deserr; `hybrid.fusion`
    after everything else, see the module docstring)."""
    value, raw_fusion = pop_hybrid_fusion(value)
    p = deserialize_object(value, SEARCH_BODY)
    hybrid = p["hybrid"]
    fusion = check_hybrid_fusion(raw_fusion) if hybrid is not None else None
    return search_query_of(p, fusion)


def search_query_of(p: dict[str, Any], fusion: str | None) -> SearchQuery:
    """The `SearchQuery` of deserialized search parameters `p` (keys as in `SEARCH_BODY`) and the
    validated `hybrid.fusion`."""
    hybrid = p["hybrid"]
    personalize = p["personalize"]
    return SearchQuery(
        q=p["q"],
        offset=p["offset"],
        limit=p["limit"],
        page=p["page"],
        hits_per_page=p["hitsPerPage"],
        attributes_to_retrieve=p["attributesToRetrieve"],
        attributes_to_crop=p["attributesToCrop"],
        crop_length=p["cropLength"],
        crop_marker=p["cropMarker"],
        attributes_to_highlight=p["attributesToHighlight"],
        highlight_pre_tag=p["highlightPreTag"],
        highlight_post_tag=p["highlightPostTag"],
        show_matches_position=p["showMatchesPosition"],
        filter=p["filter"],
        sort=p["sort"],
        distinct=p["distinct"],
        facets=p["facets"],
        matching_strategy=p["matchingStrategy"],
        attributes_to_search_on=p["attributesToSearchOn"],
        ranking_score_threshold=p["rankingScoreThreshold"],
        locales=p["locales"],
        hybrid=None if hybrid is None else HybridQuery(hybrid["embedder"], hybrid["semanticRatio"], fusion),
        vector=p["vector"],
        retrieve_vectors=p["retrieveVectors"],
        media=p["media"],
        personalize=None if personalize is None else personalize["userContext"],
        use_network=p["useNetwork"],
        show_ranking_score=p["showRankingScore"],
        show_ranking_score_details=p["showRankingScoreDetails"],
        show_performance_details=p["showPerformanceDetails"],
    )


# --------------------------------------------------------------------------------------------------
# GET query string
# --------------------------------------------------------------------------------------------------


def _get_threshold(text: str) -> float:
    number = parse_f64(text)
    if number is None:
        raise InvalidValue(_THRESHOLD_MESSAGE)
    return _threshold(number)


def _get_semantic_ratio(text: str) -> float:
    number = parse_f64(text)
    if number is None:
        raise InvalidValue(_RATIO_MESSAGE)
    return _semantic_ratio(number)


def _get_matching_strategy(text: str) -> str:
    if text not in MATCHING_STRATEGIES:
        raise MeiliError(
            "invalid_search_matching_strategy",
            f"Unknown value `{text}` for parameter `matchingStrategy`: {did_you_mean(text, MATCHING_STRATEGIES)}"
            f"expected one of {', '.join(f'`{s}`' for s in MATCHING_STRATEGIES)}",
        )
    return text


def _get_locales(text: str) -> list[str]:
    """Comma list of locales; an unknown one fails with `Locale::from_str`'s message."""
    out = []
    for name in split_comma_list(text):
        if name not in LOCALES:
            listed = ", ".join(sorted(LOCALES, key=lambda n: (len(n), n)))
            raise InvalidValue(f"Unsupported locale `{name}`, expected one of {listed}")
        out.append(LOCALES[name])
    return out


def _get_vector(text: str) -> list[float]:
    out = []
    for item in split_comma_list(text):
        number = parse_f64(item)
        if number is None:
            raise InvalidValue("invalid float literal")
        out.append(_as_f32(number))
    return out


def _get_filter(text: str) -> Any:
    """The filter as JSON when it parses as JSON (`["a = 1"]`), else the string itself."""
    try:
        return parse_json(text.encode())
    except MeiliError:
        return text


# Meilisearch's `SearchQueryGet` order (the "expected one of" list of an unknown parameter).
SEARCH_PARAMS: Final = (
    QueryField("q", "string", "invalid_search_q", None),
    QueryField("offset", "usize", "invalid_search_offset", DEFAULT_SEARCH_OFFSET),
    QueryField("limit", "usize", "invalid_search_limit", DEFAULT_SEARCH_LIMIT),
    QueryField("page", "usize", "invalid_search_page", None),
    QueryField("hitsPerPage", "usize", "invalid_search_hits_per_page", None),
    QueryField("attributesToRetrieve", "csv", "invalid_search_attributes_to_retrieve", None),
    QueryField("attributesToCrop", "csv", "invalid_search_attributes_to_crop", None),
    QueryField("cropLength", "usize", "invalid_search_crop_length", DEFAULT_CROP_LENGTH),
    QueryField("cropMarker", "string", "invalid_search_crop_marker", DEFAULT_CROP_MARKER),
    QueryField("attributesToHighlight", "csv", "invalid_search_attributes_to_highlight", None),
    QueryField("highlightPreTag", "string", "invalid_search_highlight_pre_tag", DEFAULT_HIGHLIGHT_PRE_TAG),
    QueryField("highlightPostTag", "string", "invalid_search_highlight_post_tag", DEFAULT_HIGHLIGHT_POST_TAG),
    QueryField("showMatchesPosition", "bool", "invalid_search_show_matches_position", False),
    QueryField("filter", "string", "invalid_search_filter", None, parse=_get_filter),
    QueryField("sort", "string", "invalid_search_sort", None),
    QueryField("distinct", "string", "invalid_search_distinct", None),
    QueryField("facets", "csv", "invalid_search_facets", None),
    QueryField(
        "matchingStrategy", "string", "invalid_search_matching_strategy", "last", parse=_get_matching_strategy
    ),
    QueryField("attributesToSearchOn", "csv", "invalid_search_attributes_to_search_on", None),
    QueryField(
        "rankingScoreThreshold",
        "string",
        "invalid_search_ranking_score_threshold",
        None,
        parse=_get_threshold,
    ),
    QueryField("locales", "string", "invalid_search_locales", None, parse=_get_locales),
    QueryField("hybridEmbedder", "string", "invalid_search_embedder", None),
    QueryField(
        "hybridSemanticRatio", "string", "invalid_search_semantic_ratio", None, parse=_get_semantic_ratio
    ),
    QueryField("vector", "string", "invalid_search_vector", None, parse=_get_vector),
    QueryField("retrieveVectors", "bool", "invalid_search_retrieve_vectors", False),
    QueryField("personalizeUserContext", "string", "invalid_search_personalize_user_context", None),
    QueryField("useNetwork", "bool", "invalid_search_use_network", None),
    QueryField("showRankingScore", "bool", "invalid_search_show_ranking_score", False),
    QueryField("showRankingScoreDetails", "bool", "invalid_search_show_ranking_score_details", False),
    QueryField("showPerformanceDetails", "bool", "invalid_search_show_performance_details", False),
)


def fix_sort_query_parameters(sort_query: str) -> list[str]:
    """Split the GET `sort` on commas, joining `_geoPoint(lat, lng):asc` back (Meilisearch's helper)."""
    parameters: list[str] = []
    merge = False
    for current in (s.strip() for s in sort_query.strip('"').split(",")):
        if current.startswith("_geoPoint("):
            parameters.append(current)
            merge = True
        elif merge and parameters:
            parameters[-1] += "," + current
            if current.endswith("):desc") or current.endswith("):asc"):
                merge = False
        else:
            parameters.append(current)
            merge = False
    return parameters


def search_query_params(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Deserialize the GET query string (the extractor step, before the index uid is checked)."""
    return parse_query(pairs, SEARCH_PARAMS)


def search_query_from_params(p: dict[str, Any]) -> SearchQuery:
    """`TryFrom<SearchQueryGet> for SearchQuery`: the hybrid checks, then the POST shape."""
    embedder, ratio = p["hybridEmbedder"], p["hybridSemanticRatio"]
    if embedder is None and ratio is not None:
        raise MeiliError(
            "invalid_search_hybrid_query",
            "`hybridEmbedder` is mandatory when `hybridSemanticRatio` is present",
        )
    hybrid = (
        None
        if embedder is None
        else HybridQuery(embedder, DEFAULT_SEMANTIC_RATIO if ratio is None else ratio)
    )
    if p["vector"] is not None and hybrid is None:
        raise MeiliError("missing_search_hybrid", "`hybridEmbedder` is mandatory when `vector` is present")
    return SearchQuery(
        q=p["q"],
        offset=p["offset"],
        limit=p["limit"],
        page=p["page"],
        hits_per_page=p["hitsPerPage"],
        attributes_to_retrieve=p["attributesToRetrieve"],
        attributes_to_crop=p["attributesToCrop"],
        crop_length=p["cropLength"],
        crop_marker=p["cropMarker"],
        attributes_to_highlight=p["attributesToHighlight"],
        highlight_pre_tag=p["highlightPreTag"],
        highlight_post_tag=p["highlightPostTag"],
        show_matches_position=p["showMatchesPosition"],
        filter=p["filter"],
        sort=None if p["sort"] is None else fix_sort_query_parameters(p["sort"]),
        distinct=p["distinct"],
        facets=p["facets"],
        matching_strategy=p["matchingStrategy"],
        attributes_to_search_on=p["attributesToSearchOn"],
        ranking_score_threshold=p["rankingScoreThreshold"],
        locales=p["locales"],
        hybrid=hybrid,
        vector=p["vector"],
        retrieve_vectors=p["retrieveVectors"],
        media=None,
        personalize=p["personalizeUserContext"],
        use_network=p["useNetwork"],
        show_ranking_score=p["showRankingScore"],
        show_ranking_score_details=p["showRankingScoreDetails"],
        show_performance_details=p["showPerformanceDetails"],
    )


def parse_search_params(pairs: Iterable[tuple[str, str]]) -> SearchQuery:
    """The GET form: `search_query_params` then `search_query_from_params`."""
    return search_query_from_params(search_query_params(pairs))


# --------------------------------------------------------------------------------------------------
# Sort expressions (milli's `AscDesc` + search-time `SortError`)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SortCriterion:
    """`field` is set for `attr:asc|desc`, `geo_point` (lat, lng) for `_geoPoint(lat, lng):asc|desc`."""

    ascending: bool
    field: str | None = None
    geo_point: tuple[float, float] | None = None


_RESERVED_KEYWORDS: Final = ("_geo", "_geoDistance", "_geoPoint", "_geoRadius", "_geoBoundingBox")


def _bad_geo(kind: str, value: float) -> MeiliError:
    shown = rust_f64_display(value)
    if kind == "lat":
        message = f"Bad latitude `{shown}`. Latitude must be contained between -90 and 90 degrees."
    else:
        normalized = math.fmod(value + 180.0, 360.0)
        normalized = (normalized + 360.0 if normalized < 0 else normalized) - 180.0
        message = (
            f"Bad longitude `{shown}`. Longitude must be contained between -180 and 180 degrees. "
            f"Hint: try using `{rust_f64_display(normalized)}` instead."
        )
    return MeiliError("invalid_search_sort", message)


def _reserved(name: str) -> MeiliError:
    """`AscDescError::ReservedKeyword` turned into the search-time `SortError` message."""
    if name.startswith("_geoPoint"):
        message = (
            "Invalid syntax for the geo parameter: expected expression formated like "
            f"`_geoPoint(latitude, longitude)` and ending by `:asc` or `:desc`, found `{name}`."
        )
    elif name == "_geo":
        message = (
            "`_geo` is a reserved keyword and thus can't be used as a sort expression. "
            "Use the _geoPoint(latitude, longitude) built-in rule to sort on _geo field coordinates."
        )
    elif name.startswith(("_geoRadius", "_geoBoundingBox")):
        keyword = "_geoRadius" if name.startswith("_geoRadius") else "_geoBoundingBox"
        message = (
            f"`{keyword}` is a reserved keyword and thus can't be used as a sort expression. "
            "Use the _geoPoint(latitude, longitude) built-in rule to sort on _geo field coordinates."
        )
    else:
        message = f"`{name}` is a reserved keyword and thus can't be used as a sort expression."
    return MeiliError("invalid_search_sort", message)


def _member(text: str, ascending: bool) -> SortCriterion:
    if text.startswith("_geoPoint(") and text.endswith(")"):
        point = text[len("_geoPoint(") : -1]
        lat_text, sep, lng_text = point.partition(",")
        lat, lng = parse_f64(lat_text.strip()), parse_f64(lng_text.strip())
        if not sep or lat is None or lng is None:
            raise _reserved(text)
        if not -90.0 <= lat <= 90.0:
            raise _bad_geo("lat", lat)
        if not -180.0 <= lng <= 180.0:
            raise _bad_geo("lng", lng)
        return SortCriterion(ascending, geo_point=(lat, lng))
    if text in _RESERVED_KEYWORDS or text.startswith(
        ("_geoRadius(", "_geoBoundingBox(", "_geo(", "_geoDistance(")
    ):
        raise _reserved(text)
    return SortCriterion(ascending, field=text)


def parse_sort(sort: Sequence[str]) -> list[SortCriterion]:
    """Parse every `sort` item (`rsplit` on the last `:`); the first bad one raises `invalid_search_sort`."""
    out = []
    for text in sort:
        left, sep, direction = text.rpartition(":")
        if not sep or direction not in ("asc", "desc"):
            raise MeiliError(
                "invalid_search_sort",
                f"Invalid syntax for the sort parameter: expected expression ending by `:asc` or `:desc`, found `{text}`.",
            )
        out.append(_member(left, direction == "asc"))
    return out
