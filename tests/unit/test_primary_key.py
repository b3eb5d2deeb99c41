"""Primary-key inference and external document ids (milli's rules and messages)."""

from __future__ import annotations

from typing import Any

import pytest

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.documents.primary_key import (
    document_id_json,
    extract_document_id,
    infer_primary_key,
    invalid_document_id_error,
    normalize_document_id,
)

HINT = "Please specify the primary key manually using the `primaryKey` query parameter."
INVALID_TAIL = (
    "is invalid. A document identifier can be of type integer or string, only composed of alphanumeric "
    "characters (a-z A-Z 0-9), hyphens (-) and underscores (_), and can not be more than 511 bytes."
)


# -- inference -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["id", "ID", "_id", "movieId", "paid", "userID", "Id"])
def test_infers_the_single_field_ending_with_id(name: str) -> None:
    assert infer_primary_key({"title": "x", name: 1, "identity": 2}) == name


def test_no_candidate() -> None:
    with pytest.raises(MeiliError) as info:
        infer_primary_key({"title": "x", "nested": {"id": 1}, "identity": 3})
    assert info.value.code == "index_primary_key_no_candidate_found"
    assert info.value.message == (
        "The primary key inference failed as the engine did not find any field ending with `id` in its name. "
        + HINT
    )


def test_multiple_candidates_are_sorted_and_the_first_two_named() -> None:
    with pytest.raises(MeiliError) as info:
        infer_primary_key({"userId": 1, "id": 2, "chat_id": 3, "title": "t", "blog_id": 4})
    assert info.value.code == "index_primary_key_multiple_candidates_found"
    assert info.value.message == (
        "The primary key inference failed as the engine found 4 fields ending with `id` in their names: "
        "'blog_id' and 'chat_id'. " + HINT
    )


def test_candidates_sort_by_code_point() -> None:
    with pytest.raises(MeiliError) as info:
        infer_primary_key({"id": 1, "ID": 2})
    assert "'ID' and 'id'" in info.value.message


# -- id extraction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "canonical"),
    [
        (1, "1"),
        ("1", "1"),
        (0, "0"),
        (-42, "-42"),
        (2**64 - 1, "18446744073709551615"),
        (-(2**63), "-9223372036854775808"),
        ("a-Z_09", "a-Z_09"),
        ("x" * 511, "x" * 511),
    ],
)
def test_valid_ids(value: Any, canonical: str) -> None:
    assert extract_document_id({"title": "t", "id": value}, "id") == canonical
    assert normalize_document_id(value) == canonical


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("bad id", '"bad id"'),
        ("", '""'),
        ("x" * 512, '"' + "x" * 512 + '"'),
        ("é", '"é"'),
        ("a\nb", '"a\\nb"'),
        (1.0, "1.0"),
        (1.5, "1.5"),
        (True, "true"),
        (None, "null"),
        ([1], "[1]"),
        ({"b": 1, "a": 2}, '{"b":1,"a":2}'),
        (2**64, "18446744073709551616"),
        (-(2**63) - 1, "-9223372036854775809"),
    ],
)
def test_invalid_ids(value: Any, shown: str) -> None:
    with pytest.raises(MeiliError) as info:
        extract_document_id({"id": value}, "id")
    assert info.value.code == "invalid_document_id"
    assert info.value.message == f"Document identifier `{shown}` {INVALID_TAIL}"
    assert normalize_document_id(value) is None
    assert invalid_document_id_error(value).message == info.value.message
    assert document_id_json(value) == shown


def test_missing_id_prints_the_document_compactly_in_its_key_order() -> None:
    document = {
        "title": "The Parable of the Sower",
        "author": "Octavia E. Butler",
        "price": 10.0,
        "tags": ["é"],
    }
    with pytest.raises(MeiliError) as info:
        extract_document_id(document, "id")
    assert info.value.code == "missing_document_id"
    assert info.value.message == (
        "Document doesn't have a `id` attribute: "
        '`{"title":"The Parable of the Sower","author":"Octavia E. Butler","price":10.0,"tags":["é"]}`.'
    )


def test_nested_primary_key_in_either_shape() -> None:
    assert extract_document_id({"product": {"sku": "abc", "name": "n"}}, "product.sku") == "abc"
    assert extract_document_id({"product.sku": 12}, "product.sku") == "12"
    assert extract_document_id({"a": {"b.c": 1}}, "a.b.c") == "1"
    assert extract_document_id({"a.b": {"c": "x"}}, "a.b.c") == "x"


def test_nested_primary_key_ignores_non_objects_on_the_way() -> None:
    assert extract_document_id({"product": 5, "product.sku": "z"}, "product.sku") == "z"
    with pytest.raises(MeiliError) as info:
        extract_document_id({"product": [{"sku": 1}]}, "product.sku")
    assert info.value.code == "missing_document_id"
    assert (
        info.value.message == 'Document doesn\'t have a `product.sku` attribute: `{"product":[{"sku":1}]}`.'
    )


def test_nested_primary_key_with_two_matches() -> None:
    document = {"a.b": 1, "a": {"b": 2}}
    with pytest.raises(MeiliError) as info:
        extract_document_id(document, "a.b")
    assert info.value.code == "invalid_document_id"
    assert info.value.message == 'Document have too many matching `a.b` attribute: `{"a.b":1,"a":{"b":2}}`.'


def test_nested_invalid_value_is_reported_before_a_later_second_match() -> None:
    with pytest.raises(MeiliError) as info:
        extract_document_id({"a": {"b": "bad id"}, "a.b": 1}, "a.b")
    assert info.value.message == f'Document identifier `"bad id"` {INVALID_TAIL}'


def test_a_longer_key_does_not_match_a_prefix() -> None:
    with pytest.raises(MeiliError) as info:
        extract_document_id({"ab": {"c": 1}, "a": {"bc": 2}}, "a.b")
    assert info.value.code == "missing_document_id"


def test_normalize_document_id_for_delete_batches() -> None:
    assert normalize_document_id("doc-1") == "doc-1"
    assert normalize_document_id(12) == "12"
    assert normalize_document_id(" 12") is None
    assert normalize_document_id(12.0) is None
    assert normalize_document_id(False) is None

    class Name(str):
        pass

    assert normalize_document_id(Name("ok")) == "ok"
    assert type(normalize_document_id(Name("ok"))) is str
