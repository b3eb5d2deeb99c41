"""Flattening (flatten-serde-json), fieldDistribution names and field selection."""

from __future__ import annotations

from typing import Any

import pytest

from hanzo_engine.engine.documents.fields import field_names, flatten, select_fields

# -- flatten: the crate's own cases ----------------------------------------------------------


def test_nothing_to_flatten() -> None:
    document = {
        "id": "287947",
        "title": "Shazam!",
        "release_date": 1553299200,
        "genres": ["Action", "Comedy"],
    }
    assert flatten(document) == document


def test_flatten_object_keeps_an_empty_parent() -> None:
    assert flatten({"a": {"b": "c", "d": "e", "f": "g"}}) == {"a": [], "a.b": "c", "a.d": "e", "a.f": "g"}


def test_flatten_array_merges_scalars_and_collects_object_values() -> None:
    flat = flatten({"a": [1, "b", [], [{}], {"b": "c"}, {"b": "d"}, {"b": "e"}]})
    assert flat == {"a": [1, "b"], "a.b": ["c", "d", "e"]}
    # A single scalar merged into a key stays a scalar.
    assert flatten({"a": [42, {"b": "c"}, {"b": "d"}, {"b": "e"}]}) == {"a": 42, "a.b": ["c", "d", "e"]}
    assert flatten({"a": [{"b": "c"}, {"b": "d"}, {"b": "e"}, None]}) == {"a": None, "a.b": ["c", "d", "e"]}
    assert flatten({"tags": ["one"]}) == {"tags": "one"}


def test_collision_with_object() -> None:
    assert flatten({"a": {"b": "c"}, "a.b": "d"}) == {"a": [], "a.b": ["c", "d"]}


def test_collision_with_array() -> None:
    flat = flatten({"a": [{"b": "c"}, {"b": "d", "c": "e"}, [35]], "a.b": "f"})
    assert flat == {"a.b": ["c", "d", "f"], "a.c": "e", "a": 35}


def test_flatten_nested_arrays() -> None:
    flat = flatten({"a": [["b", "c"], {"d": "e"}, ["f", "g"], [{"h": "i"}, {"d": "j"}], ["k", "l"]]})
    assert flat == {"a": ["b", "c", "f", "g", "k", "l"], "a.d": ["e", "j"], "a.h": "i"}


def test_flatten_nested_arrays_and_objects() -> None:
    flat = flatten(
        {"a": ["b", ["c", "d"], {"e": ["f", "g"]}, [{"h": "i"}, {"e": ["j", {"z": "y"}]}], ["l"], "m"]}
    )
    assert flat == {"a": ["b", "c", "d", "l", "m"], "a.e": ["f", "g", "j"], "a.h": "i", "a.e.z": "y"}


def test_flatten_empty_containers_and_does_not_alias_user_lists() -> None:
    assert flatten({"a": {}, "b": [], "c": None}) == {"a": [], "b": [], "c": None}
    document: dict[str, Any] = {"a": [1, 2], "b": {"c": [3]}}
    flat = flatten(document)
    flat["a"].append(99)
    assert document == {"a": [1, 2], "b": {"c": [3]}}


# -- fieldDistribution -----------------------------------------------------------------------


def _general_walk(document: dict[str, Any]) -> dict[str, Any]:
    from hanzo_engine.engine.documents import fields

    out: dict[str, Any] = {}
    all_keys: list[str] = []
    fields._flatten_object(out, None, document, all_keys)
    for key in all_keys:
        out.setdefault(key, [])
    return out


def test_flat_documents_flatten_as_the_general_walk() -> None:
    """Documents of scalars and arrays of scalars take a shortcut: same values, same key order
    (empty arrays last), lists copied."""
    import random

    rng = random.Random(5)
    scalars = [0, 1.5, "x", "", None, True, False]
    for _ in range(5000):
        document: dict[str, Any] = {}
        for key in rng.sample(["a", "b", "a.b", "c", "d"], rng.randint(0, 5)):
            r = rng.random()
            if r < 0.4:
                document[key] = [rng.choice(scalars) for _ in range(rng.randint(0, 3))]
            elif r < 0.5:
                document[key] = [[1]] if rng.random() < 0.5 else [{"z": 1}]
            elif r < 0.6:
                document[key] = {"z": rng.choice(scalars)}
            else:
                document[key] = rng.choice(scalars)
        flat = flatten(document)
        expected = _general_walk(document)
        assert flat == expected and list(flat) == list(expected), document
        for key, value in document.items():
            if type(value) is list and len(value) > 1 and type(flat[key]) is list:
                assert flat[key] is not value


def test_field_names_are_top_level_without_vectors() -> None:
    document = {
        "id": 1,
        "doggo": {"name": "x", "age": 2},
        "_geo": {"lat": 1, "lng": 2},
        "_vectors": {},
        "n": None,
    }
    assert field_names(document) == ["id", "doggo", "_geo", "n"]


# -- select_fields ---------------------------------------------------------------------------

DOC: dict[str, Any] = {
    "id": 1,
    "title": "t",
    "author": {"name": "Ada", "born": 1815, "address": {"city": "London", "zip": "N1"}},
    "reviews": [{"user": "u1", "score": 5}, {"user": "u2"}, "loose", [{"score": 1}]],
    "a.b": "dotted",
}


@pytest.mark.parametrize("fields", [None, ["*"], ["title", "*"]])
def test_select_everything(fields: list[str] | None) -> None:
    assert select_fields(DOC, fields) == DOC


def test_select_top_level_fields_in_document_order() -> None:
    assert list(select_fields(DOC, ["title", "id", "unknown"])) == ["id", "title"]
    assert select_fields(DOC, []) == {}


def test_select_dot_paths_keeps_nesting() -> None:
    assert select_fields(DOC, ["author.name", "author.address.city"]) == {
        "author": {"name": "Ada", "address": {"city": "London"}}
    }


def test_select_parent_covers_children() -> None:
    assert select_fields(DOC, ["author", "author.name"]) == {"author": DOC["author"]}


def test_select_through_arrays_keeps_only_matching_objects() -> None:
    assert select_fields(DOC, ["reviews.score"]) == {"reviews": [{"score": 5}, [{"score": 1}]]}


def test_select_literal_dotted_key_and_unknown_subfields() -> None:
    assert select_fields(DOC, ["a.b"]) == {"a.b": "dotted"}
    # A matched container stays even when nothing inside it did (current permissive-json-pointer).
    assert select_fields(DOC, ["title.sub", "author.unknown"]) == {"author": {}}
    assert select_fields({"a": [[], [1]], "b": []}, ["a.x", "b.x"]) == {"a": [[], []], "b": []}
    assert select_fields(DOC, ["author."]) == {}
