"""Custom `field:asc` / `field:desc` rules, and every rule order on milli's ranking test set
(milli `tests/search/query_criteria.rs`: 17 documents carrying the rank each rule must give them
for the query "hello world america", with synonyms).

A custom rule sorts like milli's facet sort: numbers before strings in both directions, strings
trimmed and lowercased (booleans as "true"/"false"), arrays by their smallest value ascending and
largest descending, documents without the field last; its score detail is `{order, value}` and it
does not count in `_rankingScore`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from .conftest import (
    MILLI_QUERY,
    MILLI_SETTINGS,
    Idx,
    assert_buckets,
    assert_groups,
    buckets,
    milli_expected_groups,
    milli_test_set,
)


@pytest.fixture(scope="module")
def milli_index(make_index: Callable[..., Idx]) -> Idx:
    return make_index(milli_test_set(), {**MILLI_SETTINGS, "rankingRules": ["words"]})


CASES = [
    ([], "all"),
    (["words"], "last"),
    (["attribute"], "all"),
    (["typo"], "all"),
    (["exactness"], "all"),
    (["proximity"], "all"),
    (["asc_desc_rank:asc"], "all"),
    (["asc_desc_rank:desc"], "all"),
    (["unexisting_field:asc"], "all"),
    (["unexisting_field:desc"], "all"),
    (["sort"], "all"),
    (["words", "typo", "proximity", "attribute", "exactness"], "last"),
]


@pytest.mark.parametrize(
    ("rules", "strategy"), CASES, ids=lambda v: ",".join(v) if isinstance(v, list) else v
)
def test_milli_test_set(milli_index: Idx, rules: list[str], strategy: str) -> None:
    milli_index.settings({"rankingRules": rules})
    result = milli_index.search(MILLI_QUERY, matchingStrategy=strategy)
    assert_groups(result["hits"], milli_expected_groups(milli_test_set(), rules, strategy))


def test_milli_test_set_rule_orders(milli_index: Idx) -> None:
    """milli's `criteria_mixup`: words first, then every order of the other five rules."""
    docs = milli_test_set()
    for rest in itertools.permutations(["attribute", "asc_desc_rank:desc", "exactness", "proximity", "typo"]):
        rules = ["words", *rest]
        milli_index.settings({"rankingRules": rules})
        result = milli_index.search(MILLI_QUERY)
        assert_buckets(buckets(result["hits"]), milli_expected_groups(docs, rules, "last"))


DOCS: list[dict[str, Any]] = [
    {"id": 0, "name": "kiwi", "price": 3, "tag": "Banana"},
    {"id": 1, "name": "kiwi", "price": 1.5, "tag": "apple"},
    {"id": 2, "name": "kiwi", "price": "12", "tag": " cherry"},
    {"id": 3, "name": "kiwi", "tag": True},
    {"id": 4, "name": "kiwi", "price": [7, 0.5], "tag": ["date", "Zucchini"]},
    {"id": 5, "name": "kiwi", "price": None},
    {"id": 6, "name": "kiwi", "price": "abc"},
    {"id": 7, "name": "kiwi", "price": {"nested": 1}, "meta": {"rank": 2}},
    {"id": 8, "name": "kiwi", "meta": {"rank": 1}},
]


@pytest.fixture(scope="module")
def custom(make_index: Callable[..., Idx]) -> Idx:
    return make_index(DOCS, {"rankingRules": ["price:asc"]})


def test_asc_numbers_then_strings_then_missing(custom: Idx) -> None:
    result = custom.search("kiwi")
    assert_buckets(buckets(result["hits"]), [[4], [1], [0], [2], [6], [3, 5, 7, 8]])
    values = [h["_rankingScoreDetails"]["price:asc"]["value"] for h in result["hits"]]
    # milli shows the facet value: numbers as floats, strings normalized, null when missing
    assert values[:5] == [0.5, 1.5, 3.0, "12", "abc"]
    assert values[5:] == [None] * 4
    assert {h["_rankingScore"] for h in result["hits"]} == {1.0}  # sort rules do not score


def test_desc_numbers_first_too(custom: Idx) -> None:
    custom.settings({"rankingRules": ["price:desc"]})
    result = custom.search("kiwi")
    assert_buckets(buckets(result["hits"]), [[4], [0], [1], [6], [2], [3, 5, 7, 8]])
    assert result["hits"][0]["_rankingScoreDetails"]["price:desc"] == {"order": 0, "value": 7.0}


def test_strings_are_lowercased_and_booleans_are_strings(custom: Idx) -> None:
    custom.settings({"rankingRules": ["tag:asc"]})
    assert_buckets(custom.buckets("kiwi"), [[1], [0], [2], [4], [3], [5, 6, 7, 8]])
    custom.settings({"rankingRules": ["tag:desc"]})
    assert_buckets(custom.buckets("kiwi"), [[4], [3], [2], [0], [1], [5, 6, 7, 8]])


def test_nested_field(custom: Idx) -> None:
    custom.settings({"rankingRules": ["meta.rank:asc"]})
    assert_buckets(custom.buckets("kiwi"), [[8], [7], [0, 1, 2, 3, 4, 5, 6]])


def test_custom_rule_before_words_sorts_every_match(make_index: Callable[..., Idx]) -> None:
    docs = [
        {"id": 0, "t": "red apple", "n": 3},
        {"id": 1, "t": "red", "n": 1},
        {"id": 2, "t": "apple", "n": 2},
        {"id": 3, "t": "red apple pie", "n": 2},
    ]
    idx = make_index(docs, {"rankingRules": ["n:asc", "words", "exactness"]})
    # `last` keeps the documents with "red" only; the custom rule orders them before words does
    result = idx.search("red apple")
    assert [h["id"] for h in result["hits"]] == [1, 3, 0]
    details = result["hits"][0]["_rankingScoreDetails"]
    assert list(details) == ["n:asc", "words", "exactness"]
    assert details["n:asc"] == {"order": 0, "value": 1.0}
    # words and typo still rank inside equal custom values
    idx.settings({"rankingRules": ["words", "n:desc"]})
    assert idx.ids("red apple") == [0, 3, 1]


def test_placeholder_search_uses_custom_rules(custom: Idx) -> None:
    custom.settings({"rankingRules": ["words", "price:asc", "typo"]})
    result = custom.search(None)
    assert [h["id"] for h in result["hits"]] == [4, 1, 0, 2, 6, 3, 5, 7, 8]
    assert result["hits"][0]["_rankingScoreDetails"] == {"price:asc": {"order": 0, "value": 0.5}}
    assert result["hits"][0]["_rankingScore"] == 1.0


def test_hidden_field_is_redacted(make_index: Callable[..., Idx]) -> None:
    idx = make_index(
        [{"id": 0, "t": "kiwi", "secret": 2}, {"id": 1, "t": "kiwi", "secret": 1}],
        {"rankingRules": ["words", "secret:asc"], "displayedAttributes": ["id", "t"]},
    )
    result = idx.search("kiwi")
    assert [h["id"] for h in result["hits"]] == [1, 0]
    assert result["hits"][0]["_rankingScoreDetails"]["<hidden-rule-1>"] == {"order": 1, "value": "<hidden>"}
