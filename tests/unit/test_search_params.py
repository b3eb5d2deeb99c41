"""Search request validation: defaults, every parameter's code and message, the GET form, `sort` syntax.

Expected messages are Meilisearch's (`tests/search/errors.rs`, `tests/search/locales.rs`,
`tests/search/hybrid.rs` and the deserr wording of `meilisearch-types`).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.locales import LOCALES
from hanzo_engine.apitypes.search import (
    HybridQuery,
    SearchQuery,
    SortCriterion,
    fix_sort_query_parameters,
    parse_search_body,
    parse_search_params,
    parse_sort,
    rust_f64_display,
)

BODY_FIELDS = (
    "`q`, `offset`, `limit`, `page`, `hitsPerPage`, `attributesToRetrieve`, `attributesToCrop`, `cropLength`, "
    "`cropMarker`, `attributesToHighlight`, `highlightPreTag`, `highlightPostTag`, `showMatchesPosition`, "
    "`filter`, `sort`, `distinct`, `facets`, `matchingStrategy`, `attributesToSearchOn`, `rankingScoreThreshold`, "
    "`locales`, `hybrid`, `vector`, `retrieveVectors`, `media`, `personalize`, `useNetwork`, `showRankingScore`, "
    "`showRankingScoreDetails`, `showPerformanceDetails`"
)
GET_PARAMS = (
    "`q`, `offset`, `limit`, `page`, `hitsPerPage`, `attributesToRetrieve`, `attributesToCrop`, `cropLength`, "
    "`cropMarker`, `attributesToHighlight`, `highlightPreTag`, `highlightPostTag`, `showMatchesPosition`, "
    "`filter`, `sort`, `distinct`, `facets`, `matchingStrategy`, `attributesToSearchOn`, `rankingScoreThreshold`, "
    "`locales`, `hybridEmbedder`, `hybridSemanticRatio`, `vector`, `retrieveVectors`, `personalizeUserContext`, "
    "`useNetwork`, `showRankingScore`, `showRankingScoreDetails`, `showPerformanceDetails`"
)


def body_error(body: Any) -> tuple[str, str]:
    with pytest.raises(MeiliError) as info:
        parse_search_body(body)
    return info.value.code, info.value.message


def get_error(pairs: list[tuple[str, str]]) -> tuple[str, str]:
    with pytest.raises(MeiliError) as info:
        parse_search_params(pairs)
    return info.value.code, info.value.message


# -- defaults ----------------------------------------------------------------------------------


def test_empty_body_and_empty_query_string_give_every_default() -> None:
    expected = SearchQuery(
        q=None,
        offset=0,
        limit=20,
        page=None,
        hits_per_page=None,
        attributes_to_retrieve=None,
        attributes_to_crop=None,
        crop_length=10,
        crop_marker="…",
        attributes_to_highlight=None,
        highlight_pre_tag="<em>",
        highlight_post_tag="</em>",
        show_matches_position=False,
        filter=None,
        sort=None,
        distinct=None,
        facets=None,
        matching_strategy="last",
        attributes_to_search_on=None,
        ranking_score_threshold=None,
        locales=None,
        hybrid=None,
        vector=None,
        retrieve_vectors=False,
        media=None,
        personalize=None,
        use_network=None,
        show_ranking_score=False,
        show_ranking_score_details=False,
        show_performance_details=False,
    )
    assert parse_search_body({}) == expected
    assert parse_search_params([]) == expected
    assert not expected.is_finite_pagination


def test_every_parameter_is_read_from_a_body() -> None:
    query = parse_search_body(
        {
            "q": "hello",
            "offset": 3,
            "limit": 4,
            "page": 2,
            "hitsPerPage": 5,
            "attributesToRetrieve": ["a", "b.c"],
            "attributesToCrop": ["a:3"],
            "cropLength": 7,
            "cropMarker": "[…]",
            "attributesToHighlight": ["*"],
            "highlightPreTag": "<b>",
            "highlightPostTag": "</b>",
            "showMatchesPosition": True,
            "filter": ["a = 1"],
            "sort": ["a:asc"],
            "distinct": "a",
            "facets": ["a"],
            "matchingStrategy": "frequency",
            "attributesToSearchOn": ["a"],
            "rankingScoreThreshold": 0.25,
            "locales": ["fr", "jpn"],
            "hybrid": {"embedder": "default", "semanticRatio": 0.75},
            "vector": [1, 0.5],
            "retrieveVectors": True,
            "media": {"image": "x"},
            "personalize": {"userContext": "likes cats"},
            "useNetwork": False,
            "showRankingScore": True,
            "showRankingScoreDetails": True,
            "showPerformanceDetails": True,
        }
    )
    assert query == SearchQuery(
        q="hello",
        offset=3,
        limit=4,
        page=2,
        hits_per_page=5,
        attributes_to_retrieve=["a", "b.c"],
        attributes_to_crop=["a:3"],
        crop_length=7,
        crop_marker="[…]",
        attributes_to_highlight=["*"],
        highlight_pre_tag="<b>",
        highlight_post_tag="</b>",
        show_matches_position=True,
        filter=["a = 1"],
        sort=["a:asc"],
        distinct="a",
        facets=["a"],
        matching_strategy="frequency",
        attributes_to_search_on=["a"],
        ranking_score_threshold=0.25,
        locales=["fra", "jpn"],
        hybrid=HybridQuery("default", 0.75),
        vector=[1.0, 0.5],
        retrieve_vectors=True,
        media={"image": "x"},
        personalize="likes cats",
        use_network=False,
        show_ranking_score=True,
        show_ranking_score_details=True,
        show_performance_details=True,
    )
    assert query.is_finite_pagination


def test_nullable_fields_accept_null() -> None:
    query = parse_search_body(
        {
            "q": None,
            "page": None,
            "hitsPerPage": None,
            "attributesToRetrieve": None,
            "attributesToCrop": None,
            "attributesToHighlight": None,
            "filter": None,
            "sort": None,
            "distinct": None,
            "facets": None,
            "attributesToSearchOn": None,
            "rankingScoreThreshold": None,
            "locales": None,
            "hybrid": None,
            "vector": None,
            "media": None,
            "personalize": None,
            "useNetwork": None,
        }
    )
    assert query == SearchQuery()


def test_hybrid_semantic_ratio_defaults_to_half() -> None:
    assert parse_search_body({"hybrid": {"embedder": "e"}}).hybrid == HybridQuery("e", 0.5)


# -- POST errors ---------------------------------------------------------------------------------

BODY_ERRORS = [
    (
        {"q": ["doggo"]},
        "invalid_search_q",
        'Invalid value type at `.q`: expected a string, but found an array: `["doggo"]`',
    ),
    (
        {"offset": "doggo"},
        "invalid_search_offset",
        'Invalid value type at `.offset`: expected a positive integer, but found a string: `"doggo"`',
    ),
    (
        {"offset": None},
        "invalid_search_offset",
        "Invalid value type at `.offset`: expected a positive integer, but found null",
    ),
    (
        {"limit": "doggo"},
        "invalid_search_limit",
        'Invalid value type at `.limit`: expected a positive integer, but found a string: `"doggo"`',
    ),
    (
        {"limit": -1},
        "invalid_search_limit",
        "Invalid value type at `.limit`: expected a positive integer, but found a negative integer: `-1`",
    ),
    (
        {"limit": 1.5},
        "invalid_search_limit",
        "Invalid value type at `.limit`: expected a positive integer, but found a number: `1.5`",
    ),
    (
        {"page": "doggo"},
        "invalid_search_page",
        'Invalid value type at `.page`: expected a positive integer, but found a string: `"doggo"`',
    ),
    (
        {"hitsPerPage": "doggo"},
        "invalid_search_hits_per_page",
        'Invalid value type at `.hitsPerPage`: expected a positive integer, but found a string: `"doggo"`',
    ),
    (
        {"attributesToRetrieve": "doggo"},
        "invalid_search_attributes_to_retrieve",
        'Invalid value type at `.attributesToRetrieve`: expected an array, but found a string: `"doggo"`',
    ),
    (
        {"attributesToRetrieve": [1]},
        "invalid_search_attributes_to_retrieve",
        "Invalid value type at `.attributesToRetrieve[0]`: expected a string, but found a positive integer: `1`",
    ),
    (
        {"attributesToCrop": "doggo"},
        "invalid_search_attributes_to_crop",
        'Invalid value type at `.attributesToCrop`: expected an array, but found a string: `"doggo"`',
    ),
    (
        {"cropLength": "doggo"},
        "invalid_search_crop_length",
        'Invalid value type at `.cropLength`: expected a positive integer, but found a string: `"doggo"`',
    ),
    (
        {"cropMarker": ["doggo"]},
        "invalid_search_crop_marker",
        'Invalid value type at `.cropMarker`: expected a string, but found an array: `["doggo"]`',
    ),
    (
        {"attributesToHighlight": "doggo"},
        "invalid_search_attributes_to_highlight",
        'Invalid value type at `.attributesToHighlight`: expected an array, but found a string: `"doggo"`',
    ),
    (
        {"highlightPreTag": ["doggo"]},
        "invalid_search_highlight_pre_tag",
        'Invalid value type at `.highlightPreTag`: expected a string, but found an array: `["doggo"]`',
    ),
    (
        {"highlightPostTag": ["doggo"]},
        "invalid_search_highlight_post_tag",
        'Invalid value type at `.highlightPostTag`: expected a string, but found an array: `["doggo"]`',
    ),
    (
        {"showMatchesPosition": "doggo"},
        "invalid_search_show_matches_position",
        'Invalid value type at `.showMatchesPosition`: expected a boolean, but found a string: `"doggo"`',
    ),
    (
        {"sort": "doggo"},
        "invalid_search_sort",
        'Invalid value type at `.sort`: expected an array, but found a string: `"doggo"`',
    ),
    (
        {"distinct": True},
        "invalid_search_distinct",
        "Invalid value type at `.distinct`: expected a string, but found a boolean: `true`",
    ),
    (
        {"facets": "doggo"},
        "invalid_search_facets",
        'Invalid value type at `.facets`: expected an array, but found a string: `"doggo"`',
    ),
    (
        {"matchingStrategy": "doggo"},
        "invalid_search_matching_strategy",
        "Unknown value `doggo` at `.matchingStrategy`: expected one of `last`, `all`, `frequency`",
    ),
    (
        {"matchingStrategy": {"doggo": "doggo"}},
        "invalid_search_matching_strategy",
        'Invalid value type at `.matchingStrategy`: expected a string, but found an object: `{"doggo":"doggo"}`',
    ),
    (
        {"attributesToSearchOn": "doggo"},
        "invalid_search_attributes_to_search_on",
        'Invalid value type at `.attributesToSearchOn`: expected an array, but found a string: `"doggo"`',
    ),
    (
        {"rankingScoreThreshold": "doggo"},
        "invalid_search_ranking_score_threshold",
        'Invalid value type at `.rankingScoreThreshold`: expected a number, but found a string: `"doggo"`',
    ),
    (
        {"rankingScoreThreshold": 42},
        "invalid_search_ranking_score_threshold",
        "Invalid value at `.rankingScoreThreshold`: the value of `rankingScoreThreshold` is invalid, expected a "
        "float between `0.0` and `1.0`.",
    ),
    (
        {"rankingScoreThreshold": -0.1},
        "invalid_search_ranking_score_threshold",
        "Invalid value at `.rankingScoreThreshold`: the value of `rankingScoreThreshold` is invalid, expected a "
        "float between `0.0` and `1.0`.",
    ),
    (
        {"locales": "fr"},
        "invalid_search_locales",
        'Invalid value type at `.locales`: expected an array, but found a string: `"fr"`',
    ),
    (
        {"locales": [3]},
        "invalid_search_locales",
        "Invalid value type at `.locales[0]`: expected a string, but found a positive integer: `3`",
    ),
    (
        {"hybrid": "doggo"},
        "invalid_search_hybrid_query",
        'Invalid value type at `.hybrid`: expected an object, but found a string: `"doggo"`',
    ),
    (
        {"hybrid": {"semanticRatio": 0.5}},
        "invalid_search_hybrid_query",
        "Missing field `embedder` inside `.hybrid`",
    ),
    (
        {"hybrid": {"embedder": "e", "ratio": 1}},
        "invalid_search_hybrid_query",
        "Unknown field `ratio` inside `.hybrid`: expected one of `semanticRatio`, `embedder`",
    ),
    (
        {"hybrid": {"embedder": 1}},
        "invalid_search_embedder",
        "Invalid value type at `.hybrid.embedder`: expected a string, but found a positive integer: `1`",
    ),
    (
        {"hybrid": {"embedder": "default", "semanticRatio": 1.2}},
        "invalid_search_semantic_ratio",
        "Invalid value at `.hybrid.semanticRatio`: the value of `semanticRatio` is invalid, expected a float between "
        "`0.0` and `1.0`.",
    ),
    (
        {"hybrid": {"embedder": "default", "semanticRatio": -0.8}},
        "invalid_search_semantic_ratio",
        "Invalid value at `.hybrid.semanticRatio`: the value of `semanticRatio` is invalid, expected a float between "
        "`0.0` and `1.0`.",
    ),
    (
        {"vector": "doggo"},
        "invalid_search_vector",
        'Invalid value type at `.vector`: expected an array, but found a string: `"doggo"`',
    ),
    (
        {"vector": [1, "a"]},
        "invalid_search_vector",
        'Invalid value type at `.vector[1]`: expected a number, but found a string: `"a"`',
    ),
    (
        {"retrieveVectors": "doggo"},
        "invalid_search_retrieve_vectors",
        'Invalid value type at `.retrieveVectors`: expected a boolean, but found a string: `"doggo"`',
    ),
    (
        {"retrieveVectors": [True]},
        "invalid_search_retrieve_vectors",
        "Invalid value type at `.retrieveVectors`: expected a boolean, but found an array: `[true]`",
    ),
    ({"personalize": {}}, "invalid_search_personalize", "Missing field `userContext` inside `.personalize`"),
    (
        {"personalize": {"userContext": 1}},
        "invalid_search_personalize_user_context",
        "Invalid value type at `.personalize.userContext`: expected a string, but found a positive integer: `1`",
    ),
    (
        {"useNetwork": "yes"},
        "invalid_search_use_network",
        'Invalid value type at `.useNetwork`: expected a boolean, but found a string: `"yes"`',
    ),
    (
        {"showRankingScore": 1},
        "invalid_search_show_ranking_score",
        "Invalid value type at `.showRankingScore`: expected a boolean, but found a positive integer: `1`",
    ),
    (
        {"showRankingScoreDetails": "x"},
        "invalid_search_show_ranking_score_details",
        'Invalid value type at `.showRankingScoreDetails`: expected a boolean, but found a string: `"x"`',
    ),
    (
        {"showPerformanceDetails": "x"},
        "invalid_search_show_performance_details",
        'Invalid value type at `.showPerformanceDetails`: expected a boolean, but found a string: `"x"`',
    ),
]


@pytest.mark.parametrize(("body", "code", "message"), BODY_ERRORS)
def test_body_parameter_errors(body: dict[str, Any], code: str, message: str) -> None:
    assert body_error(body) == (code, message)


def test_unknown_body_field_lists_every_parameter() -> None:
    assert body_error({"marin": "hello"}) == (
        "bad_request",
        f"Unknown field `marin`: expected one of {BODY_FIELDS}",
    )
    code, message = body_error({"limits": 3})
    assert (code, message) == (
        "bad_request",
        f"Unknown field `limits`: did you mean `limit`? expected one of {BODY_FIELDS}",
    )


def test_body_must_be_an_object() -> None:
    assert body_error("doggo") == (
        "bad_request",
        'Invalid value type: expected an object, but found a string: `"doggo"`',
    )


def test_first_invalid_key_in_body_order_wins() -> None:
    assert body_error({"limit": "x", "offset": "y"})[0] == "invalid_search_limit"
    assert body_error({"offset": "y", "limit": "x"})[0] == "invalid_search_offset"


def test_unknown_locale_lists_the_accepted_names() -> None:
    code, message = body_error({"locales": ["invalid"]})
    listed = ", ".join(f"`{name}`" for name in LOCALES)
    assert code == "invalid_search_locales"
    assert message == f"Unknown value `invalid` at `.locales[0]`: expected one of {listed}"
    assert message.startswith("Unknown value `invalid` at `.locales[0]`: expected one of `af`, `ak`, `am`")


def test_filter_and_media_take_any_json() -> None:
    assert parse_search_body({"filter": True}).filter is True
    assert parse_search_body({"filter": [["a = 1", "b = 2"], "c = 3"]}).filter == [
        ["a = 1", "b = 2"],
        "c = 3",
    ]
    assert parse_search_body({"media": [1, 2]}).media == [1, 2]


def test_semantic_ratio_and_vectors_are_f32() -> None:
    query = parse_search_body({"hybrid": {"embedder": "e", "semanticRatio": 1.00000001}, "vector": [0.1]})
    assert query.hybrid == HybridQuery("e", 1.0)
    assert query.vector is not None and query.vector[0] == pytest.approx(0.1) and query.vector[0] != 0.1


# -- GET ---------------------------------------------------------------------------------------


def test_get_form_reads_every_parameter() -> None:
    query = parse_search_params(
        [
            ("q", "hello world"),
            ("offset", "3"),
            ("limit", "+4"),
            ("page", "2"),
            ("hitsPerPage", "5"),
            ("attributesToRetrieve", "title,id,,"),
            ("attributesToCrop", "overview:5"),
            ("cropLength", "7"),
            ("cropMarker", "..."),
            ("attributesToHighlight", "*"),
            ("highlightPreTag", "<b>"),
            ("highlightPostTag", "</b>"),
            ("showMatchesPosition", "true"),
            ("filter", "a = 1"),
            ("sort", "a:asc,_geoPoint(1, 2):desc"),
            ("distinct", "a"),
            ("facets", "genre,price"),
            ("matchingStrategy", "all"),
            ("attributesToSearchOn", "title"),
            ("rankingScoreThreshold", "0.5"),
            ("locales", "en,jpn"),
            ("hybridEmbedder", "default"),
            ("hybridSemanticRatio", "0.25"),
            ("vector", "0.5,1"),
            ("retrieveVectors", "true"),
            ("personalizeUserContext", "likes cats"),
            ("useNetwork", "false"),
            ("showRankingScore", "true"),
            ("showRankingScoreDetails", "true"),
            ("showPerformanceDetails", "true"),
        ]
    )
    assert query == SearchQuery(
        q="hello world",
        offset=3,
        limit=4,
        page=2,
        hits_per_page=5,
        attributes_to_retrieve=["title", "id"],
        attributes_to_crop=["overview:5"],
        crop_length=7,
        crop_marker="...",
        attributes_to_highlight=["*"],
        highlight_pre_tag="<b>",
        highlight_post_tag="</b>",
        show_matches_position=True,
        filter="a = 1",
        sort=["a:asc", "_geoPoint(1,2):desc"],
        distinct="a",
        facets=["genre", "price"],
        matching_strategy="all",
        attributes_to_search_on=["title"],
        ranking_score_threshold=0.5,
        locales=["eng", "jpn"],
        hybrid=HybridQuery("default", 0.25),
        vector=[0.5, 1.0],
        retrieve_vectors=True,
        media=None,
        personalize="likes cats",
        use_network=False,
        show_ranking_score=True,
        show_ranking_score_details=True,
        show_performance_details=True,
    )


def test_get_filter_is_json_when_it_parses() -> None:
    assert parse_search_params([("filter", '["a = 1", ["b = 2"]]')]).filter == ["a = 1", ["b = 2"]]
    assert parse_search_params([("filter", '"a = 1"')]).filter == "a = 1"
    assert parse_search_params([("filter", "123")]).filter == 123
    assert parse_search_params([("filter", "a = [1, 2")]).filter == "a = [1, 2"
    assert parse_search_params([("filter", "")]).filter == ""


def test_get_sort_rejoins_geo_points() -> None:
    assert fix_sort_query_parameters("_geoPoint(12, 13):asc,title:desc") == [
        "_geoPoint(12,13):asc",
        "title:desc",
    ]
    assert fix_sort_query_parameters('"a:asc, b:desc"') == ["a:asc", "b:desc"]
    assert fix_sort_query_parameters("a:asc,") == ["a:asc", ""]
    assert parse_search_params([("sort", "_geoPoint(1.5, -2):desc")]).sort == ["_geoPoint(1.5,-2):desc"]


def test_get_hybrid_ratio_alone_needs_an_embedder() -> None:
    assert get_error([("hybridSemanticRatio", "0.5")]) == (
        "invalid_search_hybrid_query",
        "`hybridEmbedder` is mandatory when `hybridSemanticRatio` is present",
    )
    assert parse_search_params([("hybridEmbedder", "e")]).hybrid == HybridQuery("e", 0.5)


def test_get_vector_needs_an_embedder() -> None:
    assert get_error([("vector", "1,2")]) == (
        "missing_search_hybrid",
        "`hybridEmbedder` is mandatory when `vector` is present",
    )


GET_ERRORS = [
    (
        [("offset", "doggo")],
        "invalid_search_offset",
        "Invalid value in parameter `offset`: could not parse `doggo` as a positive integer",
    ),
    (
        [("limit", "doggo")],
        "invalid_search_limit",
        "Invalid value in parameter `limit`: could not parse `doggo` as a positive integer",
    ),
    (
        [("limit", "-1")],
        "invalid_search_limit",
        "Invalid value in parameter `limit`: could not parse `-1` as a positive integer",
    ),
    (
        [("page", "doggo")],
        "invalid_search_page",
        "Invalid value in parameter `page`: could not parse `doggo` as a positive integer",
    ),
    (
        [("hitsPerPage", "doggo")],
        "invalid_search_hits_per_page",
        "Invalid value in parameter `hitsPerPage`: could not parse `doggo` as a positive integer",
    ),
    (
        [("cropLength", "doggo")],
        "invalid_search_crop_length",
        "Invalid value in parameter `cropLength`: could not parse `doggo` as a positive integer",
    ),
    (
        [("showMatchesPosition", "doggo")],
        "invalid_search_show_matches_position",
        "Invalid value in parameter `showMatchesPosition`: could not parse `doggo` as a boolean, expected either "
        "`true` or `false`",
    ),
    (
        [("retrieveVectors", "")],
        "invalid_search_retrieve_vectors",
        "Invalid value in parameter `retrieveVectors`: could not parse `` as a boolean, expected either `true` or "
        "`false`",
    ),
    (
        [("retrieveVectors", "doggo")],
        "invalid_search_retrieve_vectors",
        "Invalid value in parameter `retrieveVectors`: could not parse `doggo` as a boolean, expected either "
        "`true` or `false`",
    ),
    (
        [("showRankingScore", "1")],
        "invalid_search_show_ranking_score",
        "Invalid value in parameter `showRankingScore`: could not parse `1` as a boolean, expected either `true` or "
        "`false`",
    ),
    (
        [("useNetwork", "no")],
        "invalid_search_use_network",
        "Invalid value in parameter `useNetwork`: could not parse `no` as a boolean, expected either `true` or "
        "`false`",
    ),
    (
        [("matchingStrategy", "doggo")],
        "invalid_search_matching_strategy",
        "Unknown value `doggo` for parameter `matchingStrategy`: expected one of `last`, `all`, `frequency`",
    ),
    (
        [("rankingScoreThreshold", "2")],
        "invalid_search_ranking_score_threshold",
        "Invalid value in parameter `rankingScoreThreshold`: the value of `rankingScoreThreshold` is invalid, "
        "expected a float between `0.0` and `1.0`.",
    ),
    (
        [("rankingScoreThreshold", " 0.5")],
        "invalid_search_ranking_score_threshold",
        "Invalid value in parameter `rankingScoreThreshold`: the value of `rankingScoreThreshold` is invalid, "
        "expected a float between `0.0` and `1.0`.",
    ),
    (
        [("hybridEmbedder", "e"), ("hybridSemanticRatio", "abc")],
        "invalid_search_semantic_ratio",
        "Invalid value in parameter `hybridSemanticRatio`: the value of `semanticRatio` is invalid, expected a float "
        "between `0.0` and `1.0`.",
    ),
    (
        [("hybridEmbedder", "e"), ("vector", "1,x")],
        "invalid_search_vector",
        "Invalid value in parameter `vector`: invalid float literal",
    ),
]


@pytest.mark.parametrize(("pairs", "code", "message"), GET_ERRORS)
def test_get_parameter_errors(pairs: list[tuple[str, str]], code: str, message: str) -> None:
    assert get_error(pairs) == (code, message)


def test_get_unknown_locale_message() -> None:
    code, message = get_error([("locales", "en,invalid")])
    listed = ", ".join(sorted(LOCALES, key=lambda n: (len(n), n)))
    assert code == "invalid_search_locales"
    assert (
        message
        == f"Invalid value in parameter `locales`: Unsupported locale `invalid`, expected one of {listed}"
    )
    assert message.startswith(
        "Invalid value in parameter `locales`: Unsupported locale `invalid`, expected one of "
        "af, ak, am, ar, az, be, bg, bn, ca, cs,"
    )
    assert ", zu, afr, aka," in message and ", ces, cmn, " in message


def test_unknown_get_parameter_lists_every_parameter() -> None:
    assert get_error([("marin", "x")]) == (
        "bad_request",
        f"Unknown parameter `marin`: expected one of {GET_PARAMS}",
    )


def test_get_threshold_accepts_rust_float_syntax() -> None:
    assert parse_search_params([("rankingScoreThreshold", "1e-1")]).ranking_score_threshold == 0.1
    assert parse_search_params([("rankingScoreThreshold", ".5")]).ranking_score_threshold == 0.5
    threshold = parse_search_params([("rankingScoreThreshold", "NaN")]).ranking_score_threshold
    assert threshold is not None and math.isnan(threshold)  # Rust's range check lets NaN through


# -- sort --------------------------------------------------------------------------------------


def test_sort_expressions() -> None:
    assert parse_sort(["truc:asc", "a:b:desc", "_geoPoint(42, 59.895):desc", "truc(12, 13):desc"]) == [
        SortCriterion(True, field="truc"),
        SortCriterion(False, field="a:b"),
        SortCriterion(False, geo_point=(42.0, 59.895)),
        SortCriterion(False, field="truc(12, 13)"),
    ]
    assert parse_sort([]) == []


SORT_ERRORS = [
    (
        "title",
        "Invalid syntax for the sort parameter: expected expression ending by `:asc` or `:desc`, found `title`.",
    ),
    (
        "truc:asc:deesc",
        "Invalid syntax for the sort parameter: expected expression ending by `:asc` or `:desc`, found `truc:asc:deesc`.",
    ),
    (
        "_geo:asc",
        "`_geo` is a reserved keyword and thus can't be used as a sort expression. Use the "
        "_geoPoint(latitude, longitude) built-in rule to sort on _geo field coordinates.",
    ),
    ("_geoDistance:asc", "`_geoDistance` is a reserved keyword and thus can't be used as a sort expression."),
    (
        "_geoPoint:asc",
        "Invalid syntax for the geo parameter: expected expression formated like "
        "`_geoPoint(latitude, longitude)` and ending by `:asc` or `:desc`, found `_geoPoint`.",
    ),
    (
        "_geoPoint(35, 85, 75):asc",
        "Invalid syntax for the geo parameter: expected expression formated like "
        "`_geoPoint(latitude, longitude)` and ending by `:asc` or `:desc`, found "
        "`_geoPoint(35, 85, 75)`.",
    ),
    (
        "_geoRadius(1, 2, 3):asc",
        "`_geoRadius` is a reserved keyword and thus can't be used as a sort expression. "
        "Use the _geoPoint(latitude, longitude) built-in rule to sort on _geo field "
        "coordinates.",
    ),
    ("_geoPoint(200, 200):asc", "Bad latitude `200`. Latitude must be contained between -90 and 90 degrees."),
    (
        "_geoPoint(0, -180.000001):desc",
        "Bad longitude `-180.000001`. Longitude must be contained between -180 and "
        "180 degrees. Hint: try using `179.999999` instead.",
    ),
]


@pytest.mark.parametrize(("text", "message"), SORT_ERRORS)
def test_sort_errors(text: str, message: str) -> None:
    with pytest.raises(MeiliError) as info:
        parse_sort(["ok:asc", text])
    assert (info.value.code, info.value.message) == ("invalid_search_sort", message)


def test_rust_float_display() -> None:
    assert [rust_f64_display(v) for v in (200.0, 90.000001, -0.5, 1e-7, 1e21)] == [
        "200",
        "90.000001",
        "-0.5",
        "0.0000001",
        "1000000000000000000000",
    ]
