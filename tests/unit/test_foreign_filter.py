"""The `_foreign(field, filter)` clause of the filter grammar (Meilisearch's filter-parser `parse_foreign`)."""

from __future__ import annotations

import pytest

from hanzo_engine.filter_parser import (
    And,
    Comparison,
    FilterError,
    FilterFeatures,
    Foreign,
    Not,
    Or,
    Token,
    check_features,
    parse_filter_value,
    reject_foreign,
    to_string,
)

ON = FilterFeatures(foreign_keys=True)


def t(value: str) -> Token:
    return Token.synthetic(value)


def test_the_clause_parses_into_a_foreign_node() -> None:
    node = parse_filter_value("genres = action AND NOT _foreign(author, id = a1 OR popularity > 3)")
    assert node == And(
        [
            Comparison(t("genres"), "=", t("action")),
            Not(
                Foreign(
                    t("author"),
                    Or([Comparison(t("id"), "=", t("a1")), Comparison(t("popularity"), ">", t("3"))]),
                )
            ),
        ]
    )
    # spaces inside the parentheses, a quoted field
    assert parse_filter_value("_foreign( 'author' ,  id = a1 )") == Foreign(
        t("author"), Comparison(t("id"), "=", t("a1"))
    )


def test_the_printed_form_parses_back() -> None:
    node = parse_filter_value('x = 1 OR _foreign(author, birthday STARTS WITH "1958-" AND popularity >= 3.5)')
    assert (
        to_string(node)
        == '"x" = "1" OR _foreign("author", "birthday" STARTS WITH "1958-" AND "popularity" >= "3.5")'
    )
    assert parse_filter_value(to_string(node)) == node


def test_a_field_named_foreign_is_still_a_field() -> None:
    assert parse_filter_value("_foreign = 3") == Comparison(t("_foreign"), "=", t("3"))


@pytest.mark.parametrize(
    ("source", "fragment", "position"),
    [
        ("_foreign(author)", ")", "16:17 _foreign(author)"),
        ("a = 1 AND _foreign (author, id = 1)", " (author, id = 1)", "19:36 _foreign (author, id = 1)"),
    ],
)
def test_malformed_clauses(source: str, fragment: str, position: str) -> None:
    with pytest.raises(FilterError) as err:
        parse_filter_value(source)
    assert err.value.message == (
        "Was expecting a field name and an condition inside `_foreign(..)` filter but "
        f"instead found `{fragment}`.\n{position}"
    )


def test_the_gate_points_at_the_field_and_prints_the_clause() -> None:
    node = parse_filter_value("genres = action AND _foreign(author, id = a1)")
    with pytest.raises(FilterError) as err:
        check_features(node, FilterFeatures())
    assert err.value.feature == "foreignKeys"
    assert err.value.message == (
        "using a foreign filter requires enabling the `foreign_keys` experimental feature. See "
        "https://github.com/orgs/meilisearch/discussions/873\n30:36 _foreign(author, id = a1)"
    )
    check_features(node, ON)


def test_gates_look_inside_the_clause() -> None:
    with pytest.raises(FilterError) as err:
        check_features(parse_filter_value("_foreign(a, b CONTAINS c)"), ON)
    assert err.value.feature == "containsFilter"
    assert err.value.message.endswith("\n15:23 _foreign(a, b CONTAINS c)")


def test_one_index_routes_refuse_it() -> None:
    reject_foreign(parse_filter_value("a = 1"))
    reject_foreign(None)
    with pytest.raises(FilterError) as err:
        reject_foreign(parse_filter_value("a = 1 OR _foreign(author, id = a1)"))
    assert err.value.message == (
        "Filter condition `_foreign` is not supported for this endpoint.\n19:25 _foreign(author, id = a1)"
    )
