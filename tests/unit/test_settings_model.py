"""Settings model: defaults, validation messages (Meilisearch's exact text), normalization, PATCH merging."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.locales import LOCALES
from hanzo_engine.apitypes.settings import (
    DEFAULT_SETTINGS,
    SETTING_NAMES,
    SettingsPatch,
    SettingState,
    apply_patch,
    complete_settings,
    mask_api_key,
    parse_setting_value,
    parse_settings_patch,
    patch_details,
    settings_view,
    sub_route_path,
    what_changed,
)
from hanzo_engine.apitypes.settings_checks import setting_code

# docs/api-contract.md §4, verbatim (key order included)
CONTRACT_DEFAULTS: dict[str, Any] = {
    "displayedAttributes": ["*"],
    "searchableAttributes": ["*"],
    "filterableAttributes": [],
    "sortableAttributes": [],
    "rankingRules": ["words", "typo", "proximity", "attributeRank", "sort", "wordPosition", "exactness"],
    "stopWords": [],
    "nonSeparatorTokens": [],
    "separatorTokens": [],
    "dictionary": [],
    "synonyms": {},
    "distinctAttribute": None,
    "proximityPrecision": "byWord",
    "typoTolerance": {
        "enabled": True,
        "minWordSizeForTypos": {"oneTypo": 5, "twoTypos": 9},
        "disableOnWords": [],
        "disableOnAttributes": [],
        "disableOnNumbers": False,
    },
    "faceting": {"maxValuesPerFacet": 100, "sortFacetValuesBy": {"*": "alpha"}},
    "pagination": {"maxTotalHits": 1000},
    "embedders": {},
    "searchCutoffMs": None,
    "localizedAttributes": None,
    "facetSearch": True,
    "prefixSearch": "indexingTime",
}
# what the index stores: the contract's defaults plus `foreignKeys` (after `sortableAttributes`, as
# Meilisearch serializes it) and `chat`, which GET /settings shows only while the `foreignKeys` and
# `chatCompletions` features are on (docs/api-contract.md §4, §13)
_CHAT_DEFAULT: dict[str, Any] = {
    "description": "",
    "documentTemplate": "{% for field in fields %}{% if field.is_searchable and field.value != nil %}"
    "{{ field.name }}: {{ field.value }}\n{% endif %}{% endfor %}",
    "documentTemplateMaxBytes": 400,
    "searchParameters": {},
}
_CUT = list(CONTRACT_DEFAULTS).index("rankingRules")
STORED_DEFAULTS: dict[str, Any] = {
    **dict(list(CONTRACT_DEFAULTS.items())[:_CUT]),
    "foreignKeys": [],
    **dict(list(CONTRACT_DEFAULTS.items())[_CUT:]),
    "chat": _CHAT_DEFAULT,
}


def error_of(fn: Any, *args: Any) -> tuple[str, str]:
    with pytest.raises(MeiliError) as info:
        fn(*args)
    return info.value.code, info.value.message


def patch(body: dict[str, Any]) -> dict[str, Any]:
    return parse_settings_patch(body).values


# ------------------------------------------------------------------------------------------------
# Defaults and names
# ------------------------------------------------------------------------------------------------


def test_defaults_are_the_contract_in_order() -> None:
    assert DEFAULT_SETTINGS == STORED_DEFAULTS
    assert list(DEFAULT_SETTINGS) == list(STORED_DEFAULTS) == list(SETTING_NAMES)
    assert list(DEFAULT_SETTINGS["typoTolerance"]) == list(CONTRACT_DEFAULTS["typoTolerance"])


def test_view_of_nothing_stored_is_the_defaults_and_a_copy() -> None:
    view = settings_view({})
    assert view == STORED_DEFAULTS and list(view) == list(STORED_DEFAULTS)
    view["rankingRules"].append("bm25")
    assert DEFAULT_SETTINGS["rankingRules"] == CONTRACT_DEFAULTS["rankingRules"]


def test_complete_settings_fills_missing_keys_in_order() -> None:
    full = complete_settings({"stopWords": ["a"], "displayedAttributes": ["x"]})
    assert list(full) == list(SETTING_NAMES)
    assert full["stopWords"] == ["a"] and full["displayedAttributes"] == ["x"]
    assert full["pagination"] == {"maxTotalHits": 1000}


@pytest.mark.parametrize(
    ("name", "code", "path"),
    [
        ("displayedAttributes", "invalid_settings_displayed_attributes", "displayed-attributes"),
        ("searchCutoffMs", "invalid_settings_search_cutoff_ms", "search-cutoff-ms"),
        ("typoTolerance", "invalid_settings_typo_tolerance", "typo-tolerance"),
        ("localizedAttributes", "invalid_settings_localized_attributes", "localized-attributes"),
        ("prefixSearch", "invalid_settings_prefix_search", "prefix-search"),
    ],
)
def test_codes_and_sub_route_paths(name: str, code: str, path: str) -> None:
    assert setting_code(name) == code
    assert sub_route_path(name) == path


# ------------------------------------------------------------------------------------------------
# Wrong JSON types: one code per setting, path `.name` in PATCH /settings and none on a sub-route
# ------------------------------------------------------------------------------------------------

WRONG_TYPES = [
    ("displayedAttributes", "doggo", "an array", 'a string: `"doggo"`'),
    ("searchableAttributes", "doggo", "an array", 'a string: `"doggo"`'),
    ("filterableAttributes", "doggo", "an array", 'a string: `"doggo"`'),
    ("sortableAttributes", "doggo", "an array", 'a string: `"doggo"`'),
    ("rankingRules", "doggo", "an array", 'a string: `"doggo"`'),
    ("stopWords", "doggo", "an array", 'a string: `"doggo"`'),
    ("nonSeparatorTokens", 1, "an array", "a positive integer: `1`"),
    ("separatorTokens", True, "an array", "a boolean: `true`"),
    ("dictionary", {"a": 1}, "an array", 'an object: `{"a":1}`'),
    ("synonyms", "doggo", "an object", 'a string: `"doggo"`'),
    ("distinctAttribute", ["doggo"], "a string", 'an array: `["doggo"]`'),
    ("proximityPrecision", 1, "a string", "a positive integer: `1`"),
    ("typoTolerance", "doggo", "an object", 'a string: `"doggo"`'),
    ("faceting", "doggo", "an object", 'a string: `"doggo"`'),
    ("pagination", "doggo", "an object", 'a string: `"doggo"`'),
    ("embedders", [], "an object", "an array: `[]`"),
    ("searchCutoffMs", "doggo", "a positive integer", 'a string: `"doggo"`'),
    ("searchCutoffMs", -1, "a positive integer", "a negative integer: `-1`"),
    ("localizedAttributes", {}, "an array", "an object: `{}`"),
    ("facetSearch", "yes", "a boolean", 'a string: `"yes"`'),
    ("prefixSearch", 0, "a string", "a positive integer: `0`"),
]


@pytest.mark.parametrize(("name", "value", "expected", "found"), WRONG_TYPES)
def test_wrong_type_in_settings(name: str, value: Any, expected: str, found: str) -> None:
    assert error_of(parse_settings_patch, {name: value}) == (
        setting_code(name),
        f"Invalid value type at `.{name}`: expected {expected}, but found {found}",
    )


@pytest.mark.parametrize(("name", "value", "expected", "found"), WRONG_TYPES)
def test_wrong_type_on_sub_route(name: str, value: Any, expected: str, found: str) -> None:
    assert error_of(parse_setting_value, name, value) == (
        setting_code(name),
        f"Invalid value type: expected {expected}, but found {found}",
    )


def test_wrong_item_type_is_located() -> None:
    assert error_of(parse_settings_patch, {"stopWords": ["a", 2]}) == (
        "invalid_settings_stop_words",
        "Invalid value type at `.stopWords[1]`: expected a string, but found a positive integer: `2`",
    )
    assert error_of(parse_setting_value, "synonyms", {"puppy": "dog"}) == (
        "invalid_settings_synonyms",
        'Invalid value type at `.puppy`: expected an array, but found a string: `"dog"`',
    )


def test_unknown_and_non_object_top_level() -> None:
    code, message = error_of(parse_settings_patch, {"foo": 12})
    assert code == "bad_request"
    assert message == "Unknown field `foo`: expected one of " + ", ".join(f"`{n}`" for n in SETTING_NAMES)
    assert error_of(parse_settings_patch, {"stopWord": []})[1].startswith(
        "Unknown field `stopWord`: did you mean `stopWords`? expected one of `displayedAttributes`"
    )
    assert error_of(parse_settings_patch, "doggo") == (
        "bad_request",
        'Invalid value type: expected an object, but found a string: `"doggo"`',
    )


def test_first_error_in_key_order_wins() -> None:
    body = {"stopWords": "x", "foo": 1}
    assert error_of(parse_settings_patch, body)[0] == "invalid_settings_stop_words"
    assert error_of(parse_settings_patch, {"foo": 1, "stopWords": "x"})[0] == "bad_request"


# ------------------------------------------------------------------------------------------------
# Per-setting validation
# ------------------------------------------------------------------------------------------------

INVALID_RULE = (
    "ranking rule is invalid. Valid ranking rules are words, typo, sort, proximity, attribute, "
    "exactness and custom ranking rules."
)


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ("manyTheFish", f"`manyTheFish` {INVALID_RULE}"),
        ("price", f"`price` {INVALID_RULE}"),
        ("price:deesc", f"`price:deesc` {INVALID_RULE}"),
        ("asc:price", f"`asc:price` {INVALID_RULE}"),
        ("_geo:asc", "`_geo` is a reserved keyword and thus can't be used as a ranking rule"),
        (
            "_geoDistance:desc",
            "`_geoDistance` is a reserved keyword and thus can't be used as a ranking rule",
        ),
        ("_geo(12, 13):asc", "`_geo(12, 13)` is a reserved keyword and thus can't be used as a ranking rule"),
        (
            "_geoPoint:asc",
            "`_geoPoint` is a reserved keyword and thus can't be used as a ranking rule. "
            "`_geoPoint` can only be used for sorting at search time",
        ),
        (
            "_geoPoint(42, 75):asc",
            "`_geoPoint` is a reserved keyword and thus can't be used as a ranking rule. "
            "`_geoPoint` can only be used for sorting at search time",
        ),
        (
            "_geoRadius(42, 75, 59):asc",
            "`_geoRadius` is a reserved keyword and thus can't be used as a ranking "
            "rule. `_geoRadius` can only be used for filtering at search time",
        ),
        (
            "_geoBoundingBox:desc",
            "`_geoBoundingBox` is a reserved keyword and thus can't be used as a ranking "
            "rule. `_geoBoundingBox` can only be used for filtering at search time",
        ),
    ],
)
def test_invalid_ranking_rules(rule: str, problem: str) -> None:
    assert error_of(parse_settings_patch, {"rankingRules": ["words", rule]}) == (
        "invalid_settings_ranking_rules",
        f"Invalid value at `.rankingRules[1]`: {problem}",
    )


def test_custom_ranking_rules_keep_their_field() -> None:
    rules = ["price:asc", "a:b:desc", "it's spacy over there:asc", "_geoPointx:asc"]
    assert patch({"rankingRules": rules})["rankingRules"] == rules


@pytest.mark.parametrize(
    "rules",
    [
        ["words", "attribute", "attributeRank"],
        ["attribute", "wordPosition"],
        ["typo", "attribute", "attributePosition", "exactness"],
    ],
)
def test_mixed_attribute_rules_are_refused(rules: list[str]) -> None:
    assert error_of(parse_setting_value, "rankingRules", rules) == (
        "invalid_settings_ranking_rules",
        "Mixed usage of the attribute, attributeRank, and wordPosition ranking rules. You must either use the "
        "attribute ranking rule alone or the attributeRank and wordPosition ranking rules.",
    )


def test_current_and_legacy_rule_names_are_accepted() -> None:
    legacy = ["words", "typo", "proximity", "attribute", "sort", "exactness"]
    assert patch({"rankingRules": legacy})["rankingRules"] == legacy
    current = ["words", "typo", "proximity", "attributeRank", "sort", "wordPosition", "exactness", "bm25"]
    assert patch({"rankingRules": current})["rankingRules"] == current
    # the intermediate name of the position rule is stored under its current name
    assert patch({"rankingRules": ["attributeRank", "attributePosition"]})["rankingRules"] == [
        "attributeRank",
        "wordPosition",
    ]


def test_typo_tolerance_validation() -> None:
    assert error_of(parse_settings_patch, {"typoTolerance": {"minWordSizeForTypos": "doggo"}}) == (
        "invalid_settings_typo_tolerance",
        'Invalid value type at `.typoTolerance.minWordSizeForTypos`: expected an object, but found a string: `"doggo"`',
    )
    assert error_of(
        parse_setting_value, "typoTolerance", {"typoTolerance": {"minWordSizeForTypos": "doggo"}}
    ) == (
        "invalid_settings_typo_tolerance",
        "Unknown field `typoTolerance`: expected one of `enabled`, `minWordSizeForTypos`, `disableOnWords`, "
        "`disableOnAttributes`, `disableOnNumbers`",
    )
    assert error_of(
        parse_settings_patch, {"typoTolerance": {"minWordSizeForTypos": {"oneTypo": 10, "twoTypos": 9}}}
    ) == (
        "invalid_settings_typo_tolerance",
        "Invalid value at `.typoTolerance.minWordSizeForTypos`: `minWordSizeForTypos` setting is invalid. `oneTypo` "
        "and `twoTypos` fields should be between `0` and `255`, and `twoTypos` should be greater or equals to "
        "`oneTypo` but found `oneTypo: 10` and twoTypos: 9`.",
    )
    assert error_of(parse_setting_value, "typoTolerance", {"minWordSizeForTypos": {"twoTypos": 256}}) == (
        "invalid_settings_typo_tolerance",
        "Invalid value at `.minWordSizeForTypos.twoTypos`: value: `256` is too large to be deserialized, maximum "
        "value authorized is `255`",
    )
    assert error_of(parse_setting_value, "typoTolerance", {"enabled": "yes"}) == (
        "invalid_settings_typo_tolerance",
        'Invalid value type at `.enabled`: expected a boolean, but found a string: `"yes"`',
    )
    assert error_of(parse_setting_value, "typoTolerance", {"disableOnNumbers": 1}) == (
        "invalid_settings_typo_tolerance",
        "Invalid value type at `.disableOnNumbers`: expected a boolean, but found a positive integer: `1`",
    )


def test_pagination_validation() -> None:
    assert error_of(parse_settings_patch, {"pagination": {"maxTotalHits": "doggo"}}) == (
        "invalid_settings_pagination",
        'Invalid value type at `.pagination.maxTotalHits`: expected a positive integer, but found a string: `"doggo"`',
    )
    assert error_of(parse_setting_value, "pagination", {"maxTotalHits": 0}) == (
        "invalid_settings_pagination",
        "Invalid value at `.maxTotalHits`: a non-zero integer value lower than `18446744073709551615` was "
        "expected, but found a zero",
    )
    assert error_of(parse_setting_value, "pagination", {"maxTotalHit": 1}) == (
        "invalid_settings_pagination",
        "Unknown field `maxTotalHit`: did you mean `maxTotalHits`? expected one of `maxTotalHits`",
    )


def test_faceting_validation_and_normalization() -> None:
    assert error_of(parse_settings_patch, {"faceting": {"sortFacetValuesBy": {"genre": "random"}}}) == (
        "invalid_settings_faceting",
        "Unknown value `random` at `.faceting.sortFacetValuesBy.genre`: expected one of `alpha`, `count`",
    )
    assert error_of(parse_setting_value, "faceting", {"maxValuesPerFacet": -1}) == (
        "invalid_settings_faceting",
        "Invalid value type at `.maxValuesPerFacet`: expected a positive integer, but found a negative integer: `-1`",
    )
    assert patch({"faceting": {"sortFacetValuesBy": {"b": "count", "a": "alpha"}}})["faceting"] == {
        "sortFacetValuesBy": {"a": "alpha", "b": "count"}
    }


def test_enums() -> None:
    assert error_of(parse_settings_patch, {"proximityPrecision": "byWords"}) == (
        "invalid_settings_proximity_precision",
        "Unknown value `byWords` at `.proximityPrecision`: did you mean `byWord`? expected one of `byWord`, `byAttribute`",
    )
    assert error_of(parse_setting_value, "prefixSearch", "sometimes") == (
        "invalid_settings_prefix_search",
        "Unknown value `sometimes`: expected one of `indexingTime`, `disabled`",
    )
    assert patch({"proximityPrecision": "byAttribute", "prefixSearch": "disabled"}) == {
        "proximityPrecision": "byAttribute",
        "prefixSearch": "disabled",
    }


def test_localized_attributes() -> None:
    code, message = error_of(
        parse_settings_patch,
        {"localizedAttributes": [{"attributePatterns": ["*_ja", "*_zh"], "locales": ["japan"]}]},
    )
    assert code == "invalid_settings_localized_attributes"
    expected_names = ", ".join(f"`{name}`" for name in LOCALES)
    assert (
        message
        == f"Unknown value `japan` at `.localizedAttributes[0].locales[0]`: expected one of {expected_names}"
    )
    assert message.startswith(
        "Unknown value `japan` at `.localizedAttributes[0].locales[0]`: expected one of "
        "`af`, `ak`, `am`, `ar`, `az`, `be`, `bn`, `bg`"
    )
    assert message.endswith("`zho`, `zul`, `cym`, `cmn`")
    assert error_of(
        parse_settings_patch, {"localizedAttributes": [{"attributePatterns": ["*_ja"], "locales": "jpn"}]}
    ) == (
        code,
        'Invalid value type at `.localizedAttributes[0].locales`: expected an array, but found a string: `"jpn"`',
    )
    assert error_of(
        parse_settings_patch, {"localizedAttributes": [{"attributePatterns": "*_ja", "locales": ["jpn"]}]}
    ) == (
        code,
        'Invalid value type at `.localizedAttributes[0].attributePatterns`: expected an array, but found a string: `"*_ja"`',
    )
    assert error_of(parse_settings_patch, {"localizedAttributes": [{"locales": ["jpn"]}]}) == (
        code,
        "Missing field `attributePatterns` inside `.localizedAttributes[0]`",
    )
    assert error_of(parse_setting_value, "localizedAttributes", [{"attributePatterns": ["a"]}]) == (
        code,
        "Missing field `locales` inside `[0]`",
    )
    # 639-1 codes are stored (and returned) as 639-3
    assert patch(
        {"localizedAttributes": [{"attributePatterns": ["*_ja"], "locales": ["ja", "jpn", "en", "cmn"]}]}
    ) == {"localizedAttributes": [{"attributePatterns": ["*_ja"], "locales": ["jpn", "jpn", "eng", "cmn"]}]}


def test_filterable_attributes_strings_and_rules() -> None:
    value = patch(
        {
            "filterableAttributes": [
                "genre",
                {
                    "attributePatterns": ["price", "stats.*"],
                    "features": {"facetSearch": True, "filter": {"comparison": True}},
                },
                {"attributePatterns": ["id"]},
            ]
        }
    )["filterableAttributes"]
    assert value == [
        "genre",
        {
            "attributePatterns": ["price", "stats.*"],
            "features": {"facetSearch": True, "filter": {"equality": True, "comparison": True}},
        },
        {
            "attributePatterns": ["id"],
            "features": {"facetSearch": False, "filter": {"equality": True, "comparison": False}},
        },
    ]
    code = "invalid_settings_filterable_attributes"
    assert error_of(parse_settings_patch, {"filterableAttributes": [1]}) == (
        code,
        "Invalid value type at `.filterableAttributes[0]`: expected a string, but found a positive integer: `1`",
    )
    assert error_of(parse_settings_patch, {"filterableAttributes": [{"features": {}}]}) == (
        code,
        "Missing field `attributePatterns` inside `.filterableAttributes[0]`",
    )
    assert error_of(parse_settings_patch, {"filterableAttributes": [{"patterns": ["a"]}]}) == (
        code,
        "Unknown field `patterns` inside `.filterableAttributes[0]`: expected one of `attributePatterns`, `features`",
    )
    assert error_of(
        parse_setting_value,
        "filterableAttributes",
        [{"attributePatterns": ["a"], "features": {"filter": {"equality": None}}}],
    ) == (code, "Invalid value type at `[0].features.filter.equality`: expected a boolean, but found null")


def test_embedders_basic_validation() -> None:
    code = "invalid_settings_embedders"
    assert error_of(parse_settings_patch, {"embedders": {"default": {"source": "openai"}}}) == (
        code,
        "Unknown value `openai` at `.embedders.default.source`: did you mean `openAi`? expected one of "
        "`openAi`, `huggingFace`, `ollama`, `userProvided`, `rest`, `composite`",
    )
    assert error_of(parse_settings_patch, {"embedders": {"default": "openAi"}}) == (
        code,
        'Invalid value type at `.embedders.default`: expected an object, but found a string: `"openAi"`',
    )
    assert error_of(parse_setting_value, "embedders", {"default": {"dimensions": "3"}}) == (
        code,
        'Invalid value type at `.default.dimensions`: expected a positive integer, but found a string: `"3"`',
    )
    assert error_of(parse_setting_value, "embedders", {"e": {"colour": 1}})[1].startswith(
        "Unknown field `colour` inside `.e`: expected one of `source`, `model`, `revision`, `pooling`, `apiKey`"
    )
    assert error_of(parse_setting_value, "embedders", {"e": {"headers": {"a": 1}}}) == (
        code,
        "Invalid value type at `.e.headers.a`: expected a string, but found a positive integer: `1`",
    )
    # `{}`, `null` embedders and per-field nulls are accepted; fields are stored in Meilisearch's order
    assert parse_setting_value("embedders", {}).values == {"embedders": {}}
    assert parse_setting_value("embedders", None).values == {"embedders": None}
    # (a body the settings route also accepts: `distribution` may be reset whatever the source)
    assert patch(
        {"embedders": {"b": None, "a": {"distribution": None, "dimensions": 2, "source": "userProvided"}}}
    ) == {"embedders": {"a": {"source": "userProvided", "dimensions": 2, "distribution": None}, "b": None}}


# ------------------------------------------------------------------------------------------------
# Normalization
# ------------------------------------------------------------------------------------------------


def test_wildcard_lists_become_resets() -> None:
    p = parse_settings_patch({"displayedAttributes": ["title", "*"], "searchableAttributes": ["*"]})
    assert p.values == {"displayedAttributes": None, "searchableAttributes": None}
    assert p.state("displayedAttributes") is SettingState.RESET
    kept = patch({"displayedAttributes": ["b", "a", "b"], "searchableAttributes": ["b", "a"]})
    assert kept == {"displayedAttributes": ["b", "a", "b"], "searchableAttributes": ["b", "a"]}


def test_sets_are_sorted_and_deduplicated() -> None:
    body = {
        name: ["the", "a", "the", "Zed"]
        for name in ("sortableAttributes", "stopWords", "nonSeparatorTokens", "separatorTokens", "dictionary")
    }
    assert patch(body) == {name: ["Zed", "a", "the"] for name in body}
    typo = patch({"typoTolerance": {"disableOnWords": ["b", "a", "b"], "disableOnAttributes": ["y", "x"]}})
    assert typo["typoTolerance"] == {"disableOnWords": ["a", "b"], "disableOnAttributes": ["x", "y"]}


def test_synonyms_keys_sorted_values_as_sent() -> None:
    assert patch({"synonyms": {"puppy": ["dog", "doggo"], "cat": ["kitten"]}}) == {
        "synonyms": {"cat": ["kitten"], "puppy": ["dog", "doggo"]}
    }


def test_null_is_reset_and_absence_is_not_set() -> None:
    p = parse_settings_patch({"stopWords": None, "searchCutoffMs": 150})
    assert p.state("stopWords") is SettingState.RESET
    assert p.state("searchCutoffMs") is SettingState.SET
    assert p.state("synonyms") is SettingState.NOT_SET
    assert parse_settings_patch({}).values == {}
    assert SettingsPatch.from_json(p.to_json()) == p


# ------------------------------------------------------------------------------------------------
# Applying patches
# ------------------------------------------------------------------------------------------------


def test_apply_replaces_and_resets_without_touching_the_input() -> None:
    current = apply_patch({}, parse_settings_patch({"stopWords": ["a"], "distinctAttribute": "sku"}))
    frozen = copy.deepcopy(current)
    new = apply_patch(current, parse_settings_patch({"stopWords": None, "sortableAttributes": ["price"]}))
    assert current == frozen
    assert (
        new["stopWords"] == []
        and new["distinctAttribute"] == "sku"
        and new["sortableAttributes"] == ["price"]
    )
    assert list(new) == list(SETTING_NAMES)
    assert apply_patch(new, SettingsPatch.reset_all()) == STORED_DEFAULTS


def test_typo_tolerance_merges_per_sub_key() -> None:
    s = apply_patch({}, parse_setting_value("typoTolerance", {"enabled": False, "disableOnWords": ["x"]}))
    s = apply_patch(s, parse_setting_value("typoTolerance", {"minWordSizeForTypos": {"twoTypos": 12}}))
    assert s["typoTolerance"] == {
        "enabled": False,
        "minWordSizeForTypos": {"oneTypo": 5, "twoTypos": 12},
        "disableOnWords": ["x"],
        "disableOnAttributes": [],
        "disableOnNumbers": False,
    }
    s = apply_patch(
        s, parse_setting_value("typoTolerance", {"minWordSizeForTypos": {"oneTypo": 7}, "enabled": None})
    )
    assert s["typoTolerance"]["minWordSizeForTypos"] == {"oneTypo": 7, "twoTypos": 12}
    assert s["typoTolerance"]["enabled"] is True
    s = apply_patch(s, parse_setting_value("typoTolerance", {"minWordSizeForTypos": None}))
    assert s["typoTolerance"]["minWordSizeForTypos"] == {"oneTypo": 5, "twoTypos": 9}
    assert s["typoTolerance"]["disableOnWords"] == ["x"]
    assert (
        apply_patch(s, parse_setting_value("typoTolerance", None))["typoTolerance"]
        == CONTRACT_DEFAULTS["typoTolerance"]
    )


def test_typo_bound_crossing_the_stored_one_fails_when_applied() -> None:
    assert error_of(
        apply_patch, {}, parse_setting_value("typoTolerance", {"minWordSizeForTypos": {"oneTypo": 10}})
    ) == (
        "invalid_settings_typo_tolerance",
        "`minWordSizeForTypos` setting is invalid. `oneTypo` and `twoTypos` fields should be between `0` and "
        "`255`, and `twoTypos` should be greater or equals to `oneTypo` but found `oneTypo: 10` and twoTypos: 9`.",
    )


def test_faceting_and_pagination_merge() -> None:
    s = apply_patch({}, parse_setting_value("faceting", {"sortFacetValuesBy": {"genre": "count"}}))
    assert s["faceting"] == {"maxValuesPerFacet": 100, "sortFacetValuesBy": {"*": "alpha", "genre": "count"}}
    s = apply_patch(s, parse_setting_value("faceting", {"maxValuesPerFacet": 3}))
    assert s["faceting"] == {"maxValuesPerFacet": 3, "sortFacetValuesBy": {"*": "alpha", "genre": "count"}}
    s = apply_patch(s, parse_setting_value("faceting", {"sortFacetValuesBy": {"*": "count"}}))
    assert s["faceting"]["sortFacetValuesBy"] == {"*": "count"}
    s = apply_patch(s, parse_setting_value("faceting", {"sortFacetValuesBy": None}))
    assert s["faceting"] == {"maxValuesPerFacet": 3, "sortFacetValuesBy": {"*": "alpha"}}
    s = apply_patch(s, parse_setting_value("pagination", {"maxTotalHits": 20}))
    assert s["pagination"] == {"maxTotalHits": 20}
    assert apply_patch(s, parse_setting_value("pagination", {}))["pagination"] == {"maxTotalHits": 20}
    assert apply_patch(s, parse_setting_value("pagination", {"maxTotalHits": None}))["pagination"] == {
        "maxTotalHits": 1000
    }


def test_embedders_merge_per_embedder_and_field() -> None:
    s = apply_patch(
        {},
        parse_setting_value(
            "embedders",
            {
                "a": {"source": "userProvided", "dimensions": 3},
                "b": {"source": "rest", "url": "http://x", "apiKey": "secret", "request": {}, "response": {}},
            },
        ),
    )
    s = apply_patch(
        s,
        parse_setting_value("embedders", {"b": {"apiKey": None, "dimensions": 4}, "c": {"source": "ollama"}}),
    )
    assert s["embedders"] == {
        "a": {"source": "userProvided", "dimensions": 3},
        "b": {"source": "rest", "dimensions": 4, "url": "http://x", "request": {}, "response": {}},
        "c": {"source": "ollama"},
    }
    # a new source starts a new configuration; null removes an embedder; `{}` changes nothing
    s = apply_patch(
        s, parse_setting_value("embedders", {"b": {"source": "userProvided", "dimensions": 2}, "c": None})
    )
    assert s["embedders"] == {
        "a": {"source": "userProvided", "dimensions": 3},
        "b": {"source": "userProvided", "dimensions": 2},
    }
    assert apply_patch(s, parse_setting_value("embedders", {}))["embedders"] == s["embedders"]
    assert apply_patch(s, parse_settings_patch({"embedders": None}))["embedders"] == {}


def test_too_many_embedders() -> None:
    many = {f"e{i}": {"source": "userProvided", "dimensions": 1} for i in range(257)}
    assert error_of(apply_patch, {}, parse_setting_value("embedders", many)) == (
        "invalid_settings_embedders",
        "Too many embedders in the configuration. Found 257, but limited to 256.",
    )


# ------------------------------------------------------------------------------------------------
# Views: details, masking, what changed
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("secret", "shown"),
    [
        ("short", "XXX..."),
        ("0123456789", "01XXXX..."),
        ("01234567890123456789", "012XXXXX..."),
        ("My super secret value you will never guess", "My suXXXXXX..."),
    ],
)
def test_api_key_masking(secret: str, shown: str) -> None:
    assert mask_api_key(secret) == shown


def test_patch_details_only_sent_keys_in_canonical_order() -> None:
    p = parse_settings_patch(
        {
            "stopWords": None,
            "displayedAttributes": None,
            "rankingRules": ["typo"],
            "typoTolerance": {"enabled": None},
            "embedders": {"x": {"source": "rest", "apiKey": "My super secret value you will never guess"}},
        }
    )
    details = patch_details(p)
    assert details == {
        "displayedAttributes": ["*"],
        "rankingRules": ["typo"],
        "stopWords": None,
        "typoTolerance": {"enabled": None},
        "embedders": {"x": {"source": "rest", "apiKey": "My suXXXXXX..."}},
    }
    assert list(details) == ["displayedAttributes", "rankingRules", "stopWords", "typoTolerance", "embedders"]
    # the patch itself keeps the secret: the scheduler needs it
    assert p.values["embedders"]["x"]["apiKey"] == "My super secret value you will never guess"


def test_reset_all_details() -> None:
    details = patch_details(SettingsPatch.reset_all())
    assert list(details) == list(SETTING_NAMES)
    assert details == {
        name: (["*"] if name in ("displayedAttributes", "searchableAttributes") else None)
        for name in SETTING_NAMES
    }


def test_view_masks_stored_api_keys() -> None:
    stored = apply_patch(
        {}, parse_setting_value("embedders", {"e": {"source": "openAi", "apiKey": "sk-0123456789abcdef"}})
    )
    from hanzo_engine.engine.vector.embedders import display_embedder

    assert settings_view(stored)["embedders"]["e"]["apiKey"] == "skXXXX..."
    shown = settings_view(stored, display_embedder)["embedders"]["e"]  # as GET /settings shows it
    assert {k: shown[k] for k in ("source", "apiKey", "model")} == {
        "source": "openAi",
        "apiKey": "skXXXX...",
        "model": "text-embedding-3-small",
    }
    assert stored["embedders"]["e"]["apiKey"] == "sk-0123456789abcdef"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"searchableAttributes": ["title"]}, {"searchable"}),
        ({"filterableAttributes": ["genre"], "sortableAttributes": ["price"]}, {"filterable", "sortable"}),
        ({"stopWords": ["the"]}, {"stopWords"}),
        ({"separatorTokens": ["|"], "dictionary": ["J. R. R."]}, {"tokenizer"}),
        ({"proximityPrecision": "byAttribute"}, {"proximity"}),
        ({"typoTolerance": {"disableOnAttributes": ["sku"]}}, {"typo"}),
        ({"typoTolerance": {"enabled": False}}, set()),
        ({"embedders": {"e": {"source": "userProvided", "dimensions": 2}}}, {"embedders"}),
        (
            {
                "displayedAttributes": ["a"],
                "rankingRules": ["words"],
                "pagination": {"maxTotalHits": 5},
                "faceting": {"maxValuesPerFacet": 1},
                "searchCutoffMs": 10,
            },
            set(),
        ),
        ({"stopWords": []}, set()),  # setting the default changes nothing
        ({"prefixSearch": "disabled", "facetSearch": False}, {"prefix", "facetSearch"}),
    ],
)
def test_what_changed(body: dict[str, Any], expected: set[str]) -> None:
    old = complete_settings({})
    assert what_changed(old, apply_patch(old, parse_settings_patch(body))) == expected
