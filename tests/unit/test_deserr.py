"""Request validation: every message is compared with the text Meilisearch (deserr/serde_json) answers."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine.apitypes.deserr import (
    MISSING,
    Field,
    InvalidValue,
    QueryField,
    _kinds_text,
    check_json_content_type,
    decode_json_body,
    deserialize_object,
    did_you_mean,
    found_description,
    parse_json,
    parse_query,
    to_json,
)
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.rustcompat.serde_json import value_error


def error_of(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, str, int]:
    with pytest.raises(MeiliError) as info:
        fn(*args, **kwargs)
    return info.value.code, info.value.message, info.value.status


# ------------------------------------------------------------------------------------------------
# Content type
# ------------------------------------------------------------------------------------------------

ACCEPTED = "Accepted values for the Content-Type header are: `application/json`"


def test_missing_content_type() -> None:
    assert error_of(check_json_content_type, None) == (
        "missing_content_type",
        f"A Content-Type header is missing. {ACCEPTED}",
        415,
    )


@pytest.mark.parametrize("header", ["text/plain", "", "application/json, text/plain", "json", "application/"])
def test_invalid_content_type(header: str) -> None:
    assert error_of(check_json_content_type, header) == (
        "invalid_content_type",
        f"The Content-Type `{header}` is invalid. {ACCEPTED}",
        415,
    )


def test_non_ascii_content_type_is_shown_as_unknown() -> None:
    _, message, _ = error_of(check_json_content_type, "applicätion/json")
    assert message == f"The Content-Type `unknown` is invalid. {ACCEPTED}"


@pytest.mark.parametrize(
    "header",
    [
        "application/json",
        "application/json; charset=utf-8",
        'application/json;charset="utf-8"',
        "Application/JSON",
        "text/json",
        "application/vnd.api+json",
    ],
)
def test_json_content_types_are_accepted(header: str) -> None:
    check_json_content_type(header)


def test_content_type_is_checked_before_the_body() -> None:
    assert error_of(decode_json_body, b"", None)[0] == "missing_content_type"
    assert decode_json_body(b'{"a": 1}', "application/json") == {"a": 1}


# ------------------------------------------------------------------------------------------------
# Payload decoding
# ------------------------------------------------------------------------------------------------


def test_missing_payload() -> None:
    assert error_of(parse_json, b"") == ("missing_payload", "A json payload is missing.", 400)


def test_malformed_payload_matches_meilisearch_snapshot() -> None:
    # meilisearch tests/auth/errors.rs: error_api_key_malformed_payload
    assert error_of(parse_json, b'{"malormed": "payload"') == (
        "malformed_payload",
        "The json payload provided is malformed. `EOF while parsing an object at line 1 column 22`.",
        400,
    )


@pytest.mark.parametrize(
    ("body", "serde_message"),
    [
        (b"x", "expected value at line 1 column 1"),
        (b"  ", "EOF while parsing a value at line 1 column 2"),
        (b"{", "EOF while parsing an object at line 1 column 1"),
        (b"[1", "EOF while parsing a list at line 1 column 2"),
        (b'{"a":1,}', "trailing comma at line 1 column 8"),
        (b"[1,]", "trailing comma at line 1 column 4"),
        (b"[1 2]", "expected `,` or `]` at line 1 column 4"),
        (b'{"a" 1}', "expected `:` at line 1 column 6"),
        (b'{"a":1 "b":2}', "expected `,` or `}` at line 1 column 8"),
        (b"{1:2}", "key must be a string at line 1 column 2"),
        (b"[,1]", "expected value at line 1 column 2"),
        (b"tru", "EOF while parsing a value at line 1 column 3"),
        (b"trux", "expected ident at line 1 column 4"),
        (b"-", "EOF while parsing a value at line 1 column 1"),
        (b"-x", "invalid number at line 1 column 2"),
        (b"01", "invalid number at line 1 column 2"),
        (b"1.", "EOF while parsing a value at line 1 column 2"),
        (b"1.x", "invalid number at line 1 column 3"),
        (b"1ex", "invalid number at line 1 column 3"),
        (b"1e400", "number out of range at line 1 column 5"),
        (b'"abc', "EOF while parsing a string at line 1 column 4"),
        (b'"a\x01"', "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 3"),
        (b'"\\x"', "invalid escape at line 1 column 3"),
        (b'"\\uZZZZ"', "invalid escape at line 1 column 7"),
        (b'"\\udc00"', "lone leading surrogate in hex escape at line 1 column 7"),
        (b'"\\ud800"', "unexpected end of hex escape at line 1 column 8"),
        (b'"\xff"', "invalid unicode code point at line 1 column 3"),
        (b'{"a":1}x', "trailing characters at line 1 column 8"),
        (b'{\n  "a":\n}', "expected value at line 3 column 1"),
        (b"\xef\xbb\xbf{}", "expected value at line 1 column 1"),
        (b"NaN", "expected value at line 1 column 1"),
    ],
)
def test_malformed_payload_messages(body: bytes, serde_message: str) -> None:
    assert error_of(parse_json, body)[:2] == (
        "malformed_payload",
        f"The json payload provided is malformed. `{serde_message}`.",
    )


def test_nesting_limit_is_serde_json_recursion_limit() -> None:
    assert parse_json(b"[" * 127 + b"]" * 127) is not None
    assert error_of(parse_json, b"[" * 128 + b"]" * 128)[1] == (
        "The json payload provided is malformed. `recursion limit exceeded at line 1 column 128`."
    )
    # the 128th `{` is byte 635 (5 bytes per level), reported at its 1-based column
    deep = b'{"a":' * 130 + b"1" + b"}" * 130
    assert "recursion limit exceeded at line 1 column 636" in error_of(parse_json, deep)[1]


def test_integers_beyond_64_bits_become_floats_like_serde_json() -> None:
    assert parse_json(b"[18446744073709551615, -9223372036854775808]") == [2**64 - 1, -(2**63)]
    value = parse_json(b'{"a": 18446744073709551616, "b": -9223372036854775809}')
    assert value == {"a": 1.8446744073709552e19, "b": -9.223372036854776e18}
    assert isinstance(value["a"], float) and isinstance(value["b"], float)
    # serde_json scales the leading u64 digits by a power of ten, which is not always the nearest float
    assert parse_json(b"53027323055910374915") == 5.302732305591038e19 != float(53027323055910374915)
    assert error_of(parse_json, b"1" * 400)[1].endswith("`number out of range at line 1 column 400`.")


def test_zero_with_huge_exponent_is_accepted_like_serde() -> None:
    assert parse_json(b"[0e99999999999]") == [0.0]


def test_serde_range_limit_not_msgspec_one() -> None:
    # the nearest f64 is finite, but serde_json's 17976931348623158 * 1e292 overflows
    assert parse_json(b"1.7976931348623157e308") == 1.7976931348623157e308
    assert error_of(parse_json, b"[1.7976931348623158e308]")[1] == (
        "The json payload provided is malformed. `number out of range at line 1 column 23`."
    )


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from([None, 0, 2]))
def test_scanner_accepts_what_python_serialises(value: Any, indent: int | None) -> None:
    body = json.dumps(value, ensure_ascii=False, indent=indent).encode()
    assert value_error(body) is None
    assert parse_json(body) == msgspec.json.decode(body)


@settings(max_examples=500, deadline=None)
@given(json_values, st.data())
def test_scanner_and_msgspec_agree_on_mutated_documents(value: Any, data: st.DataObject) -> None:
    body = json.dumps(value).encode()
    pos = data.draw(st.integers(min_value=0, max_value=len(body)))
    action = data.draw(st.sampled_from(["delete", "insert"]))
    if action == "delete":
        body = body[:pos] + body[pos + 1 :]
    else:
        body = (
            body[:pos]
            + data.draw(st.sampled_from(list(b'{}[],:"\\ -.e0a\x00'))).to_bytes(1, "big")
            + body[pos:]
        )
    try:
        msgspec.json.decode(body)
        msgspec_ok = True
    except (msgspec.DecodeError, ValueError):
        msgspec_ok = False
    assert (value_error(body) is None) == msgspec_ok, body


# ------------------------------------------------------------------------------------------------
# Value rendering (deserr's "found ..." part)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "a boolean: `true`"),
        (0, "a positive integer: `0`"),
        (-1, "a negative integer: `-1`"),
        (1.0, "a number: `1.0`"),
        (1e16, "a number: `1e16`"),
        (1e15, "a number: `1000000000000000.0`"),
        (0.0001, "a number: `0.0001`"),
        (0.00001, "a number: `0.00001`"),
        (1.5e-7, "a number: `1.5e-7`"),
        (-0.0, "a number: `-0.0`"),
        (2**64, "a number: `1.8446744073709552e19`"),
        ("doggo", 'a string: `"doggo"`'),
        ('é\n"\x01', 'a string: `"é\\n\\"\\u0001"`'),
        ([2], "an array: `[2]`"),
        ({"a": [1, "x", None, 1.5, {"b": True}]}, 'an object: `{"a":[1,"x",null,1.5,{"b":true}]}`'),
    ],
)
def test_found_description(value: Any, text: str) -> None:
    assert found_description(value) == text


def test_to_json_keeps_key_order() -> None:
    assert to_json({"z": 1, "a": 2}) == '{"z":1,"a":2}'


# deserr's own snapshot table (errors/json.rs `test_value_kinds_description_json`)
NUL, BOO, INT, NEG, FLO, STR, SEQ, MAP = range(8)


@pytest.mark.parametrize(
    ("kinds", "text"),
    [
        ([], "a different value"),
        ([BOO], "a boolean"),
        ([INT], "a positive integer"),
        ([NEG], "a negative integer"),
        ([STR], "a string"),
        ([SEQ], "an array"),
        ([MAP], "an object"),
        ([INT, BOO], "a boolean or a positive integer"),
        ([NUL, INT], "null or a positive integer"),
        ([SEQ, NEG], "a negative integer or an array"),
        ([INT, FLO], "a number"),
        ([INT, FLO, NEG], "a number"),
        ([INT, FLO, NEG, NUL], "null or a number"),
        ([BOO, INT, FLO, NEG, NUL], "null, a boolean, or a number"),
        ([NUL, BOO, INT, FLO, NEG, NUL], "null, a boolean, or a number"),
        ([INT, NEG, STR], "an integer or a string"),
    ],
)
def test_kinds_description(kinds: list[int], text: str) -> None:
    assert _kinds_text(kinds) == text


DID_YOU_MEAN_FIELDS = ["q", "filter", "sort", "attributesToHighlight"]


@pytest.mark.parametrize(
    ("received", "suggestion"),
    [
        ("filler", "did you mean `filter`? "),
        ("sart", "did you mean `sort`? "),
        ("attributes_to_highlight", "did you mean `attributesToHighlight`? "),
        ("attributesToHighloght", "did you mean `attributesToHighlight`? "),
        ("a", ""),
        ("query", ""),
        ("filterable", ""),
        ("sortable", ""),
        ("srot", "did you mean `sort`? "),  # a transposition costs 1
    ],
)
def test_did_you_mean_matches_deserr(received: str, suggestion: str) -> None:
    assert did_you_mean(received, DID_YOU_MEAN_FIELDS) == suggestion


# ------------------------------------------------------------------------------------------------
# Objects
# ------------------------------------------------------------------------------------------------


def in_range(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise InvalidValue(
            "the value of `rankingScoreThreshold` is invalid, expected a float between `0.0` and `1.0`."
        )
    return value


SEARCH = (
    Field("q", "string_or_null", "invalid_search_q"),
    Field("limit", "usize", "invalid_search_limit", default=20),
    Field("page", "u32", "invalid_search_page"),
    Field("attributesToRetrieve", "string_array", "invalid_search_attributes_to_retrieve", nullable=True),
    Field("showRankingScore", "boolean", "invalid_search_show_ranking_score", default=False),
    Field(
        "matchingStrategy", "string", "invalid_search_matching_strategy", choices=("last", "all", "frequency")
    ),
    Field("rankingScoreThreshold", "number", "invalid_search_ranking_score_threshold", validate=in_range),
    Field(
        "hybrid",
        "object",
        "invalid_search_hybrid_query",
        nullable=True,
        fields=(
            Field("embedder", "string", "invalid_search_embedder", required=True),
            Field("semanticRatio", "number", "invalid_search_semantic_ratio"),
        ),
    ),
    Field("filter", "any", "invalid_search_filter"),
)


def search(body: dict[str, Any]) -> dict[str, Any]:
    return deserialize_object(body, SEARCH)


def test_valid_object_gets_defaults_and_omits_missing() -> None:
    out = search({"q": None, "hybrid": {"embedder": "default"}, "filter": ["a = 1"]})
    assert out == {
        "q": None,
        "hybrid": {"embedder": "default"},
        "filter": ["a = 1"],
        "limit": 20,
        "showRankingScore": False,
    }
    assert "page" not in out


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
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
            {"limit": 1.0},
            "invalid_search_limit",
            "Invalid value type at `.limit`: expected a positive integer, but found a number: `1.0`",
        ),
        (
            {"limit": None},
            "invalid_search_limit",
            "Invalid value type at `.limit`: expected a positive integer, but found null",
        ),
        (
            {"page": 4294967296},
            "invalid_search_page",
            "Invalid value at `.page`: value: `4294967296` is too large to be deserialized, "
            "maximum value authorized is `4294967295`",
        ),
        (
            {"q": 42},
            "invalid_search_q",
            "Invalid value type at `.q`: expected a string, but found a positive integer: `42`",
        ),
        (
            {"showRankingScore": "true"},
            "invalid_search_show_ranking_score",
            'Invalid value type at `.showRankingScore`: expected a boolean, but found a string: `"true"`',
        ),
        (
            {"attributesToRetrieve": ["a", 1]},
            "invalid_search_attributes_to_retrieve",
            "Invalid value type at `.attributesToRetrieve[1]`: expected a string, but found a positive integer: `1`",
        ),
        (
            {"attributesToRetrieve": "a"},
            "invalid_search_attributes_to_retrieve",
            'Invalid value type at `.attributesToRetrieve`: expected an array, but found a string: `"a"`',
        ),
        (
            {"matchingStrategy": "doggo"},
            "invalid_search_matching_strategy",
            "Unknown value `doggo` at `.matchingStrategy`: expected one of `last`, `all`, `frequency`",
        ),
        (
            {"matchingStrategy": "frequenci"},
            "invalid_search_matching_strategy",
            "Unknown value `frequenci` at `.matchingStrategy`: did you mean `frequency`? "
            "expected one of `last`, `all`, `frequency`",
        ),
        (
            {"rankingScoreThreshold": 42},
            "invalid_search_ranking_score_threshold",
            "Invalid value at `.rankingScoreThreshold`: the value of `rankingScoreThreshold` is invalid, "
            "expected a float between `0.0` and `1.0`.",
        ),
        (
            {"rankingScoreThreshold": "0.5"},
            "invalid_search_ranking_score_threshold",
            'Invalid value type at `.rankingScoreThreshold`: expected a number, but found a string: `"0.5"`',
        ),
        (
            {"hybrid": {}},
            "bad_request",
            "Missing field `embedder` inside `.hybrid`",
        ),
        (
            {"hybrid": {"embedder": "e", "semanticRatioo": 0.5}},
            "invalid_search_hybrid_query",
            "Unknown field `semanticRatioo` inside `.hybrid`: did you mean `semanticRatio`? "
            "expected one of `embedder`, `semanticRatio`",
        ),
        (
            {"hybrid": "e"},
            "invalid_search_hybrid_query",
            'Invalid value type at `.hybrid`: expected an object, but found a string: `"e"`',
        ),
        (
            {"hybrid": {"embedder": 1}},
            "invalid_search_embedder",
            "Invalid value type at `.hybrid.embedder`: expected a string, but found a positive integer: `1`",
        ),
    ],
)
def test_field_errors(body: dict[str, Any], code: str, message: str) -> None:
    assert error_of(search, body)[:2] == (code, message)


def test_unknown_field() -> None:
    names = "`q`, `limit`, `page`, `attributesToRetrieve`, `showRankingScore`, `matchingStrategy`, "
    names += "`rankingScoreThreshold`, `hybrid`, `filter`"
    assert error_of(search, {"doggo": 1}) == (
        "bad_request",
        f"Unknown field `doggo`: expected one of {names}",
        400,
    )
    assert (
        error_of(search, {"filtre": 1})[1]
        == f"Unknown field `filtre`: did you mean `filter`? expected one of {names}"
    )


def test_first_problem_in_payload_order_wins() -> None:
    assert error_of(search, {"limit": "x", "doggo": 1})[0] == "invalid_search_limit"
    assert error_of(search, {"doggo": 1, "limit": "x"})[0] == "bad_request"


def test_top_level_must_be_an_object() -> None:
    assert error_of(search, "x")[:2] == (  # type: ignore[arg-type]
        "bad_request",
        'Invalid value type: expected an object, but found a string: `"x"`',
    )
    assert error_of(search, [1, 2])[1] == (  # type: ignore[arg-type]
        "Invalid value type: expected an object, but found an array: `[1,2]`"
    )


def test_missing_required_field_uses_route_code() -> None:
    fields = (
        Field("uid", "string", "invalid_index_uid", required=True, missing_code="missing_index_uid"),
        Field("primaryKey", "string_or_null", "invalid_index_primary_key", default=None),
    )
    assert error_of(deserialize_object, {"primaryKey": "id"}, fields) == (
        "missing_index_uid",
        "Missing field `uid`",
        400,
    )
    assert deserialize_object({"uid": "movies"}, fields) == {"uid": "movies", "primaryKey": None}


def test_immutable_fields() -> None:
    fields = (
        Field("description", "string_or_null", "invalid_api_key_description"),
        Field("name", "string_or_null", "invalid_api_key_name"),
    )
    immutable = {"uid": "immutable_api_key_uid", "expiresAt": "immutable_api_key_expires_at"}
    assert error_of(deserialize_object, {"uid": "x"}, fields, immutable=immutable)[:2] == (
        "immutable_api_key_uid",
        "Immutable field `uid`: expected one of `description`, `name`",
    )
    assert error_of(deserialize_object, {"doggo": "x"}, fields, immutable=immutable)[:2] == (
        "bad_request",
        "Unknown field `doggo`: expected one of `description`, `name`",
    )


def test_other_kinds() -> None:
    fields = (
        Field("ids", "string_or_integer_array", "invalid_document_ids"),
        Field("offset", "integer", "invalid_document_offset"),
        Field("context", "object", "invalid_document_edition_context"),
        Field("big", "u64", "bad_request"),
    )
    assert deserialize_object(
        {"ids": ["a", 1], "offset": -3, "context": {"x": 1}, "big": 2**64 - 1}, fields
    ) == {
        "ids": ["a", 1],
        "offset": -3,
        "context": {"x": 1},
        "big": 2**64 - 1,
    }
    assert error_of(deserialize_object, {"ids": [True]}, fields)[1] == (
        "Invalid value type at `.ids[0]`: expected an integer or a string, but found a boolean: `true`"
    )
    assert error_of(deserialize_object, {"offset": 0.5}, fields)[1] == (
        "Invalid value type at `.offset`: expected an integer, but found a number: `0.5`"
    )
    assert error_of(deserialize_object, {"context": []}, fields)[1] == (
        "Invalid value type at `.context`: expected an object, but found an array: `[]`"
    )


# ------------------------------------------------------------------------------------------------
# Query strings
# ------------------------------------------------------------------------------------------------

PAGINATION = (
    QueryField("offset", "usize", "invalid_index_offset", default=0),
    QueryField("limit", "usize", "invalid_index_limit", default=20),
)
SEARCH_QUERY = (
    QueryField("limit", "u32", "invalid_search_limit"),
    QueryField("showRankingScore", "bool", "invalid_search_show_ranking_score"),
    QueryField("attributesToRetrieve", "csv", "invalid_search_attributes_to_retrieve"),
    QueryField(
        "matchingStrategy", "string", "invalid_search_matching_strategy", choices=("last", "all", "frequency")
    ),
    QueryField("q", "string", "invalid_search_q"),
)


def test_query_defaults_and_values() -> None:
    assert parse_query([], PAGINATION) == {"offset": 0, "limit": 20}
    assert parse_query([("limit", "+5"), ("offset", "18446744073709551615")], PAGINATION) == {
        "limit": 5,
        "offset": 2**64 - 1,
    }
    out = parse_query(
        [("attributesToRetrieve", "a,,b,"), ("showRankingScore", "true"), ("q", "")], SEARCH_QUERY
    )
    assert out == {"attributesToRetrieve": ["a", "b"], "showRankingScore": True, "q": ""}


def test_unknown_query_parameter() -> None:
    assert error_of(parse_query, [("lol", "1")], PAGINATION) == (
        "bad_request",
        "Unknown parameter `lol`: expected one of `offset`, `limit`",
        400,
    )
    assert error_of(parse_query, [("limt", "1")], PAGINATION)[1] == (
        "Unknown parameter `limt`: did you mean `limit`? expected one of `offset`, `limit`"
    )


@pytest.mark.parametrize("text", ["doggo", "-1", " 1", "1 ", "", "1.0", "0x10", "1_000", "١"])
def test_query_integers_follow_rust_parse(text: str) -> None:
    assert error_of(parse_query, [("limit", text)], PAGINATION)[:2] == (
        "invalid_index_limit",
        f"Invalid value in parameter `limit`: could not parse `{text}` as a positive integer",
    )


def test_query_u32_overflow() -> None:
    assert parse_query([("limit", "4294967295")], SEARCH_QUERY) == {"limit": 4294967295}
    assert error_of(parse_query, [("limit", "4294967296")], SEARCH_QUERY)[1] == (
        "Invalid value in parameter `limit`: could not parse `4294967296` as a positive integer"
    )


@pytest.mark.parametrize("text", ["True", "1", "yes", ""])
def test_query_booleans(text: str) -> None:
    assert error_of(parse_query, [("showRankingScore", text)], SEARCH_QUERY)[:2] == (
        "invalid_search_show_ranking_score",
        f"Invalid value in parameter `showRankingScore`: could not parse `{text}` as a boolean, "
        "expected either `true` or `false`",
    )


def test_query_enum() -> None:
    assert error_of(parse_query, [("matchingStrategy", "doggo")], SEARCH_QUERY)[:2] == (
        "invalid_search_matching_strategy",
        "Unknown value `doggo` for parameter `matchingStrategy`: expected one of `last`, `all`, `frequency`",
    )


def test_query_custom_parser() -> None:
    def ratio(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise InvalidValue(f"could not parse `{text}` as a float") from None

    fields = (QueryField("ratio", "string", "invalid_search_semantic_ratio", parse=ratio),)
    assert parse_query([("ratio", "0.5")], fields) == {"ratio": 0.5}
    assert error_of(parse_query, [("ratio", "x")], fields)[1] == (
        "Invalid value in parameter `ratio`: could not parse `x` as a float"
    )


def test_repeated_parameter_keeps_last_value_first_slot() -> None:
    assert parse_query([("limit", "x"), ("limit", "3")], PAGINATION)["limit"] == 3
    # `limit` keeps its first position, so its error is reported before the later unknown key
    assert (
        error_of(parse_query, [("limit", "1"), ("lol", "1"), ("limit", "x")], PAGINATION)[0]
        == "invalid_index_limit"
    )


def test_missing_sentinel_repr() -> None:
    assert repr(MISSING) == "MISSING"
