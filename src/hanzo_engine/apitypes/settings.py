"""Index settings (= meilisearch-types `settings.rs` + milli's settings update): model, validation, merging.

Vocabulary
- A *stored* settings object is the full JSON of the 22 settings in `SETTING_NAMES` order, with the
  defaults of `DEFAULT_SETTINGS` filled in and secrets (embedder `apiKey`s) in clear. The index keeps
  it under one main-db key; `complete_settings` turns anything older or partial into that shape.
- A *patch* (`SettingsPatch`) is one update request, tri-state per key like milli's `Setting<T>`:
  key absent = NotSet (unchanged), value `None` = Reset (back to the default), any other value = Set.
  Nested objects (`typoTolerance`, `minWordSizeForTypos`, `faceting`, `pagination`, each embedder and
  its fields) follow the same rule one level down, so a patch is plain JSON and travels as the task's
  `kind` unchanged (`SettingsPatch.to_json` / `from_json`).

Validation happens once, at the route (`parse_settings_patch`, `parse_setting_value`), with deserr's
messages and one `invalid_settings_*` code per setting; values are normalized there (sets sorted and
deduplicated, ranking rules renamed to their current names, `"*"` in displayed/searchable attributes
meaning the wildcard, 639-1 locales turned into 639-3). What can only be checked against the stored
state (`oneTypo <= twoTypos` when only one is sent, the 256-embedder cap) fails the task in `apply_patch`.

Decisions where Meilisearch's versions differ (the contract's v1.36+ forms are produced):
- ranking rules accept `attribute` (pre-1.36), `attributeRank`, `wordPosition` (and the short-lived
  `attributePosition`, stored as `wordPosition`) and `bm25`, hanzo-engine's extra rule; mixing
  `attribute` with the split rules is refused.
- in task details a reset displayed/searchable attribute list shows `["*"]`, as Meilisearch's wildcard
  serializer writes it; every other reset shows `null`.
- embedders: only the shape and the `source` are checked (`embedder_settings`, which also merges them).

The value checks shared by the parsers are `settings_checks`; the locales are `locales`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

import msgspec

from .chat_settings import DEFAULT_INDEX_CHAT, mask_secret, merge_index_chat, parse_index_chat
from .deserr import Field, InvalidValue, deserialize_object
from .embedder_settings import mask_embedders, merge_embedders, parse_embedders
from .errors import MeiliError
from .locales import parse_localized_attributes
from .settings_checks import (
    USIZE_MAX,
    invalid_value,
    parse_boolean,
    parse_choice,
    parse_fields,
    parse_object,
    parse_string,
    parse_string_set,
    parse_strings,
    parse_uint,
    setting_code,
    type_error,
)

__all__ = [
    "DEFAULT_RANKING_RULES",
    "DEFAULT_SETTINGS",
    "LEGACY_RANKING_RULES",
    "PATCH_SUB_ROUTES",
    "SETTING_NAMES",
    "SettingState",
    "SettingsPatch",
    "apply_patch",
    "complete_settings",
    "mask_api_key",
    "parse_setting_value",
    "parse_settings_patch",
    "patch_details",
    "settings_view",
    "sub_route_path",
    "what_changed",
]

SETTING_NAMES: Final = (
    "displayedAttributes",
    "searchableAttributes",
    "filterableAttributes",
    "sortableAttributes",
    "foreignKeys",
    "rankingRules",
    "stopWords",
    "nonSeparatorTokens",
    "separatorTokens",
    "dictionary",
    "synonyms",
    "distinctAttribute",
    "proximityPrecision",
    "typoTolerance",
    "faceting",
    "pagination",
    "embedders",
    "searchCutoffMs",
    "localizedAttributes",
    "facetSearch",
    "prefixSearch",
    "chat",
)
# Sub-routes updated with PATCH (their body merges); every other sub-route is updated with PUT.
PATCH_SUB_ROUTES: Final = frozenset({"typoTolerance", "faceting", "pagination", "embedders", "chat"})

DEFAULT_RANKING_RULES: Final = (
    "words",
    "typo",
    "proximity",
    "attributeRank",
    "sort",
    "wordPosition",
    "exactness",
)
LEGACY_RANKING_RULES: Final = ("words", "typo", "proximity", "attribute", "sort", "exactness")

DEFAULT_SETTINGS: Final[dict[str, Any]] = {
    "displayedAttributes": ["*"],
    "searchableAttributes": ["*"],
    "filterableAttributes": [],
    "sortableAttributes": [],
    "foreignKeys": [],
    "rankingRules": list(DEFAULT_RANKING_RULES),
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
    "chat": DEFAULT_INDEX_CHAT,
}

_WILDCARD_SETTINGS: Final = frozenset({"displayedAttributes", "searchableAttributes"})
_U8_MAX: Final = 255


def sub_route_path(name: str) -> str:
    """`searchCutoffMs` -> `search-cutoff-ms` (the sub-route under `/settings/`)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


# --------------------------------------------------------------------------------------------------
# The tri-state patch
# --------------------------------------------------------------------------------------------------


class SettingState(Enum):
    SET = "set"
    RESET = "reset"
    NOT_SET = "notSet"


@dataclass(frozen=True)
class SettingsPatch:
    """One settings update: `values[key]` is the normalized new value, `None` for a reset; absent keys
    are left unchanged. Build it with `parse_settings_patch`/`parse_setting_value`/`reset_all`."""

    values: dict[str, Any] = field(default_factory=dict)

    def state(self, key: str) -> SettingState:
        if key not in self.values:
            return SettingState.NOT_SET
        return SettingState.RESET if self.values[key] is None else SettingState.SET

    def to_json(self) -> dict[str, Any]:
        """The task-kind form: keys in `SETTING_NAMES` order, resets as `null`."""
        return {k: copy.deepcopy(self.values[k]) for k in SETTING_NAMES if k in self.values}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SettingsPatch:
        return cls({k: copy.deepcopy(v) for k, v in data.items() if k in SETTING_NAMES})

    @classmethod
    def reset_all(cls) -> SettingsPatch:
        return cls(dict.fromkeys(SETTING_NAMES))


# --------------------------------------------------------------------------------------------------
# One parser per setting: (value, path) -> normalized value. `None` (reset) never reaches them.
# --------------------------------------------------------------------------------------------------


def _wildcard_list(name: str) -> Callable[[Any, str], Any]:
    def parse(value: Any, path: str) -> Any:
        names = parse_strings(value, path, setting_code(name))
        # Any list holding "*" means "all fields", which is the default: store it as a reset.
        return None if "*" in names else names

    return parse


_FILTERABLE = setting_code("filterableAttributes")
_FILTER_FEATURES: Final = (
    Field("facetSearch", "boolean", _FILTERABLE, default=False),
    Field(
        "filter",
        "object",
        _FILTERABLE,
        default=lambda: {"equality": True, "comparison": False},
        fields=(
            Field("equality", "boolean", _FILTERABLE, default=True),
            Field("comparison", "boolean", _FILTERABLE, default=False),
        ),
    ),
)
_FILTER_RULE: Final = (
    Field("attributePatterns", "string_array", _FILTERABLE, required=True, missing_code=_FILTERABLE),
    Field(
        "features",
        "object",
        _FILTERABLE,
        fields=_FILTER_FEATURES,
        default=lambda: {"facetSearch": False, "filter": {"equality": True, "comparison": False}},
    ),
)


def _filterable(value: Any, path: str) -> list[Any]:
    """Plain field names (legacy semantics) and granular `{attributePatterns, features}` rules, in order."""
    if not isinstance(value, list):
        raise type_error(path, "an array", value, _FILTERABLE)
    rules: list[Any] = []
    for i, item in enumerate(value):
        at = f"{path}[{i}]"
        if isinstance(item, dict):
            rule = parse_fields(item, at, _FILTERABLE, _FILTER_RULE)
            features, flt = rule["features"], rule["features"]["filter"]
            rules.append(
                {
                    "attributePatterns": rule["attributePatterns"],
                    "features": {
                        "facetSearch": features["facetSearch"],
                        "filter": {"equality": flt["equality"], "comparison": flt["comparison"]},
                    },
                }
            )
        else:
            rules.append(parse_string(item, at, _FILTERABLE))
    return rules


_FOREIGN_KEYS = setting_code("foreignKeys")
_FOREIGN_KEY: Final = (
    Field("foreignIndexUid", "string", _FOREIGN_KEYS, required=True, missing_code=_FOREIGN_KEYS),
    Field("fieldName", "string", _FOREIGN_KEYS, required=True, missing_code=_FOREIGN_KEYS),
)


def _foreign_keys(value: Any, path: str) -> list[dict[str, str]]:
    """milli's `Vec<ForeignKey>`: `{foreignIndexUid, fieldName}` objects, both required, kept in order.

    Neither the foreign index nor the field is checked here: Meilisearch stores them as sent and only
    a `_foreign(...)` filter resolves them."""
    if not isinstance(value, list):
        raise type_error(path, "an array", value, _FOREIGN_KEYS)
    keys = []
    for i, item in enumerate(value):
        key = parse_fields(item, f"{path}[{i}]", _FOREIGN_KEYS, _FOREIGN_KEY)
        keys.append({"foreignIndexUid": key["foreignIndexUid"], "fieldName": key["fieldName"]})
    return keys


_RULES = setting_code("rankingRules")
_BUILTIN_RULES: Final = {
    "words": "words",
    "typo": "typo",
    "proximity": "proximity",
    "attribute": "attribute",
    "attributeRank": "attributeRank",
    "wordPosition": "wordPosition",
    "attributePosition": "wordPosition",
    "sort": "sort",
    "exactness": "exactness",
    "bm25": "bm25",
}
_RESERVED_KEYWORDS: Final = ("_geo", "_geoDistance", "_geoPoint", "_geoRadius", "_geoBoundingBox")
_RESERVED_CALLS: Final = ("_geoRadius(", "_geoBoundingBox(", "_geo(", "_geoDistance(")
_MIXED_ATTRIBUTE_RULES: Final = (
    "Mixed usage of the attribute, attributeRank, and wordPosition ranking rules. You must either use the "
    "attribute ranking rule alone or the attributeRank and wordPosition ranking rules."
)


def _criterion_error(text: str) -> str | None:
    """Milli's `Criterion::from_str` for a non-builtin name: None when `field:asc|desc` is valid."""
    left, sep, direction = text.rpartition(":")
    if not sep or direction not in ("asc", "desc"):
        return (
            f"`{text}` ranking rule is invalid. Valid ranking rules are words, typo, sort, proximity, "
            "attribute, exactness and custom ranking rules."
        )
    geo_point = left.startswith("_geoPoint(") and left.endswith(")")
    if not geo_point and left not in _RESERVED_KEYWORDS and not left.startswith(_RESERVED_CALLS):
        return None
    # geo expressions are search-time tools: `_geoPoint(..)` sorts, radius and bounding box filter
    if geo_point or left.startswith("_geoPoint"):
        name, usage = "_geoPoint", "sorting"
    elif left.startswith("_geoRadius"):
        name, usage = "_geoRadius", "filtering"
    elif left.startswith("_geoBoundingBox"):
        name, usage = "_geoBoundingBox", "filtering"
    else:
        return f"`{left}` is a reserved keyword and thus can't be used as a ranking rule"
    return (
        f"`{name}` is a reserved keyword and thus can't be used as a ranking rule. "
        f"`{name}` can only be used for {usage} at search time"
    )


def _ranking_rules(value: Any, path: str) -> list[str]:
    rules: list[str] = []
    for i, text in enumerate(parse_strings(value, path, _RULES)):
        builtin = _BUILTIN_RULES.get(text)
        if builtin is None:
            problem = _criterion_error(text)
            if problem is not None:
                raise invalid_value(f"{path}[{i}]", problem, _RULES)
        rules.append(builtin or text)
    if "attribute" in rules and ("attributeRank" in rules or "wordPosition" in rules):
        raise MeiliError(_RULES, _MIXED_ATTRIBUTE_RULES)
    return rules


def _string_set_of(name: str) -> Callable[[Any, str], Any]:
    return lambda value, path: parse_string_set(value, path, setting_code(name))


def _synonyms(value: Any, path: str) -> dict[str, list[str]]:
    code = setting_code("synonyms")
    mapping = parse_object(value, path, code)
    for key, alternatives in mapping.items():
        parse_strings(alternatives, f"{path}.{key}", code)
    return {key: list(mapping[key]) for key in sorted(mapping)}  # a BTreeMap: keys sorted


def _typo_tolerance(value: Any, path: str) -> dict[str, Any]:
    code = setting_code("typoTolerance")
    min_path = f"{path}.minWordSizeForTypos"

    def u8(v: int) -> int:
        if v > _U8_MAX:
            raise InvalidValue(
                f"value: `{v}` is too large to be deserialized, maximum value authorized is `{_U8_MAX}`"
            )
        return v

    def min_sizes(sizes: dict[str, Any]) -> dict[str, Any]:
        one, two = sizes.get("oneTypo"), sizes.get("twoTypos")
        if one is not None and two is not None and one > two:
            raise invalid_value(min_path, _min_word_size_message(one, two), code)
        return sizes

    fields = (
        Field("enabled", "boolean", code, nullable=True),
        Field(
            "minWordSizeForTypos",
            "object",
            code,
            nullable=True,
            validate=min_sizes,
            fields=(
                Field("oneTypo", "u64", code, nullable=True, validate=u8),
                Field("twoTypos", "u64", code, nullable=True, validate=u8),
            ),
        ),
        Field("disableOnWords", "string_array", code, nullable=True, validate=lambda v: sorted(set(v))),
        Field("disableOnAttributes", "string_array", code, nullable=True, validate=lambda v: sorted(set(v))),
        Field("disableOnNumbers", "boolean", code, nullable=True),
    )
    return parse_fields(value, path, code, fields)


def _min_word_size_message(one: int, two: int) -> str:
    return (
        "`minWordSizeForTypos` setting is invalid. `oneTypo` and `twoTypos` fields should be between `0` and "
        f"`255`, and `twoTypos` should be greater or equals to `oneTypo` but found `oneTypo: {one}` and twoTypos: {two}`."
    )


def _faceting(value: Any, path: str) -> dict[str, Any]:
    code = setting_code("faceting")

    def sort_by(mapping: dict[str, Any]) -> dict[str, str]:
        for key, order in mapping.items():
            parse_choice(order, f"{path}.sortFacetValuesBy.{key}", code, ("alpha", "count"))
        return {key: mapping[key] for key in sorted(mapping)}

    fields = (
        Field("maxValuesPerFacet", "usize", code, nullable=True),
        Field("sortFacetValuesBy", "object", code, nullable=True, validate=sort_by),
    )
    return parse_fields(value, path, code, fields)


def _pagination(value: Any, path: str) -> dict[str, Any]:
    code = setting_code("pagination")

    def non_zero(v: int) -> int:
        if v == 0:
            raise InvalidValue(
                f"a non-zero integer value lower than `{USIZE_MAX}` was expected, but found a zero"
            )
        return v

    return parse_fields(
        value, path, code, (Field("maxTotalHits", "usize", code, nullable=True, validate=non_zero),)
    )


_PARSERS: Final[dict[str, Callable[[Any, str], Any]]] = {
    "displayedAttributes": _wildcard_list("displayedAttributes"),
    "searchableAttributes": _wildcard_list("searchableAttributes"),
    "filterableAttributes": _filterable,
    "sortableAttributes": _string_set_of("sortableAttributes"),
    "foreignKeys": _foreign_keys,
    "rankingRules": _ranking_rules,
    "stopWords": _string_set_of("stopWords"),
    "nonSeparatorTokens": _string_set_of("nonSeparatorTokens"),
    "separatorTokens": _string_set_of("separatorTokens"),
    "dictionary": _string_set_of("dictionary"),
    "synonyms": _synonyms,
    "distinctAttribute": lambda v, p: parse_string(v, p, setting_code("distinctAttribute")),
    "proximityPrecision": lambda v, p: parse_choice(
        v, p, setting_code("proximityPrecision"), ("byWord", "byAttribute")
    ),
    "typoTolerance": _typo_tolerance,
    "faceting": _faceting,
    "pagination": _pagination,
    "embedders": parse_embedders,
    "searchCutoffMs": lambda v, p: parse_uint(v, p, setting_code("searchCutoffMs")),
    "localizedAttributes": parse_localized_attributes,
    "facetSearch": lambda v, p: parse_boolean(v, p, setting_code("facetSearch")),
    "prefixSearch": lambda v, p: parse_choice(
        v, p, setting_code("prefixSearch"), ("indexingTime", "disabled")
    ),
    "chat": parse_index_chat,
}


class _Normalized:
    """Carries a parsed value through `deserialize_object` (whose validators may not return None)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _field_for(name: str) -> Field:
    parser = _PARSERS[name]
    return Field(name, "any", setting_code(name), validate=lambda v: _Normalized(parser(v, f".{name}")))


_PATCH_FIELDS: Final = tuple(_field_for(name) for name in SETTING_NAMES)


def parse_settings_patch(body: Any) -> SettingsPatch:
    """Validate a `PATCH /settings` body (first problem in key order wins, like deserr) and normalize it."""
    parsed = deserialize_object(body, _PATCH_FIELDS)
    return SettingsPatch(
        {
            name: parsed[name].value if isinstance(parsed[name], _Normalized) else None
            for name in SETTING_NAMES
            if name in parsed
        }
    )


def parse_setting_value(name: str, body: Any) -> SettingsPatch:
    """Validate one sub-route body (the bare value; `null` resets) into a single-key patch."""
    return SettingsPatch({name: None if body is None else _PARSERS[name](body, "")})


# --------------------------------------------------------------------------------------------------
# Applying a patch to stored settings
# --------------------------------------------------------------------------------------------------


def complete_settings(stored: dict[str, Any] | None) -> dict[str, Any]:
    """Full stored settings: every key in `SETTING_NAMES` order, defaults where absent (a copy)."""
    stored = stored or {}
    return {
        name: copy.deepcopy(stored[name]) if name in stored else _decode_default(_DEFAULT_SETTINGS_JSON[name])
        for name in SETTING_NAMES
    }


# Every search completes the settings: a default decoded from its JSON is a fresh deep copy at a
# tenth of `copy.deepcopy`'s cost (the defaults are plain JSON values, so decoding gives them back equal).
_DEFAULT_SETTINGS_JSON: Final = {name: msgspec.json.encode(value) for name, value in DEFAULT_SETTINGS.items()}
_decode_default: Final = msgspec.json.Decoder().decode


def _merge_fields(current: dict[str, Any], patch: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """Sub-key merge of a nested settings object: Set replaces, Reset restores the default."""
    merged = dict(current)
    for key, value in patch.items():
        merged[key] = copy.deepcopy(defaults[key] if value is None else value)
    return {key: merged[key] for key in defaults}


def _merge_typo(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    defaults = DEFAULT_SETTINGS["typoTolerance"]
    sizes = patch.get("minWordSizeForTypos")
    patch = dict(patch)
    if sizes is not None:
        patch["minWordSizeForTypos"] = _merge_fields(
            current.get("minWordSizeForTypos", defaults["minWordSizeForTypos"]),
            sizes,
            defaults["minWordSizeForTypos"],
        )
    merged = _merge_fields({**defaults, **current}, patch, defaults)
    one, two = merged["minWordSizeForTypos"]["oneTypo"], merged["minWordSizeForTypos"]["twoTypos"]
    if one > two:
        # only one bound was sent and it crosses the stored other one: milli fails the update
        raise MeiliError("invalid_settings_typo_tolerance", _min_word_size_message(one, two))
    return merged


def _merge_faceting(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    merged = _merge_fields({**DEFAULT_SETTINGS["faceting"], **current}, patch, DEFAULT_SETTINGS["faceting"])
    # milli's OrderByMap always answers for "*": alpha unless the user overrode it
    order = {"*": "alpha", **merged["sortFacetValuesBy"]}
    merged["sortFacetValuesBy"] = {key: order[key] for key in sorted(order)}
    return merged


def _merge_pagination(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    return _merge_fields({**DEFAULT_SETTINGS["pagination"], **current}, patch, DEFAULT_SETTINGS["pagination"])


_MERGERS: Final[dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]]] = {
    "typoTolerance": _merge_typo,
    "faceting": _merge_faceting,
    "pagination": _merge_pagination,
    "embedders": merge_embedders,
    "chat": merge_index_chat,
}


def apply_patch(current: dict[str, Any] | None, patch: SettingsPatch | dict[str, Any]) -> dict[str, Any]:
    """The settings after `patch`: complete, in `SETTING_NAMES` order. `current` is not modified.

    Top-level values are replaced; `typoTolerance` (and its `minWordSizeForTypos`), `faceting` and
    `pagination` merge per sub-key; `embedders` merge per embedder (`null` removes one) and per field.
    Raises `MeiliError` when the result is invalid given what was already stored.
    """
    values = patch.values if isinstance(patch, SettingsPatch) else SettingsPatch.from_json(patch).values
    new = complete_settings(current)
    for name in SETTING_NAMES:
        if name not in values:
            continue
        value = values[name]
        if value is None:
            new[name] = copy.deepcopy(DEFAULT_SETTINGS[name])
        elif name in _MERGERS:
            new[name] = _MERGERS[name](new[name], value)
        else:
            new[name] = copy.deepcopy(value)
    if "faceting" not in values:
        new["faceting"] = _merge_faceting(new["faceting"], {})
    return new


# --------------------------------------------------------------------------------------------------
# Views
# --------------------------------------------------------------------------------------------------


# Meilisearch's `hide_secret`, one copy for embedders, chat workspaces and webhook headers
mask_api_key = mask_secret


def settings_view(
    stored: dict[str, Any] | None,
    display_embedder: Callable[[dict[str, Any]], dict[str, Any]] = lambda config: config,
) -> dict[str, Any]:
    """The body of `GET /indexes/{uid}/settings`: every key in order, embedder API keys masked (the route
    drops `chat` and `foreignKeys` while their experimental features are off).

    `display_embedder` shows an embedder with the defaults the engine applies to it (the engine's
    `vector.embedders.display_embedder`; this layer sits below the engine and cannot import it)."""
    view = complete_settings(stored)
    view["embedders"] = mask_embedders(
        {
            name: display_embedder(conf) if isinstance(conf, dict) else conf
            for name, conf in view["embedders"].items()
        }
    )
    return view


def patch_details(patch: SettingsPatch) -> dict[str, Any]:
    """Task `details` of a settings update: only the keys sent, resets as `null` (a reset wildcard list
    shows `["*"]`, as Meilisearch serializes it), embedder API keys masked."""
    details = patch.to_json()
    for name in _WILDCARD_SETTINGS:
        if name in details and details[name] is None:
            details[name] = ["*"]
    if isinstance(details.get("embedders"), dict):
        details["embedders"] = mask_embedders(details["embedders"])
    return details


# Which index structures a setting feeds (the indexer rebuilds those); query-time settings feed none.
_STRUCTURES: Final[dict[str, str]] = {
    "searchableAttributes": "searchable",
    "filterableAttributes": "filterable",
    "sortableAttributes": "sortable",
    "stopWords": "stopWords",
    "nonSeparatorTokens": "tokenizer",
    "separatorTokens": "tokenizer",
    "dictionary": "tokenizer",
    "synonyms": "synonyms",
    "distinctAttribute": "distinct",
    "proximityPrecision": "proximity",
    "embedders": "embedders",
    "localizedAttributes": "localized",
    "facetSearch": "facetSearch",
    "prefixSearch": "prefix",
}


def what_changed(old: dict[str, Any] | None, new: dict[str, Any] | None) -> set[str]:
    """Index structures to rebuild between two stored settings.

    Names: `searchable`, `filterable`, `sortable`, `stopWords`, `tokenizer` (separators, non-separators,
    dictionary), `synonyms`, `distinct`, `proximity`, `embedders`, `localized`, `facetSearch`, `prefix`,
    and `typo` when `typoTolerance.disableOnAttributes` changes (those attributes are indexed for exact
    matches only). Displayed attributes, ranking rules, the rest of typo tolerance, faceting, pagination
    and the search cutoff act at query time and name nothing.
    """
    before, after = complete_settings(old), complete_settings(new)
    changed = {structure for name, structure in _STRUCTURES.items() if before[name] != after[name]}
    if before["typoTolerance"].get("disableOnAttributes") != after["typoTolerance"].get(
        "disableOnAttributes"
    ):
        changed.add("typo")
    return changed
