"""`attributeRank`, the legacy `attribute` rule and the `searchableAttributes` order (milli
`search/new/tests/attribute_fid.rs`, `words_ranking_rules_order.rs`).

A field weighs its rank in `searchableAttributes` (0 for the first; every field weighs 0 with
`["*"]`); per query term the cost is the weight of the best field holding it (times the number of
words of an ngram), summed over the terms: rank = max + 1 - cost with max = terms x heaviest
weight. The legacy `attribute` rule is attributeRank followed by wordPosition, shown as one
`attribute` detail (`attributeRankingOrderScore`, `queryWordDistanceScore`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Idx, assert_buckets, assert_milli_order, buckets

FIELDS = [
    ("", "", "the quick brown fox jumps over the lazy dog"),
    ("", "the quick brown foxes jump over the lazy dog", ""),
    ("the quick brown fox jumps over the lazy dog", "", ""),
    ("the", "quick brown fox jumps over the lazy dog", ""),
    ("the quick", "brown fox jumps over the lazy dog", ""),
    ("the quick brown", "fox jumps over the lazy dog", ""),
    ("the quick brown fox", "jumps over the lazy dog", ""),
    ("the quick", "brown fox jumps", "over the lazy dog"),
    ("the quick brown", "fox", "jumps over the lazy dog"),
    ("the quick brown", "fox jumps", "over the lazy dog"),
    ("", "the quick brown fox", "jumps over the lazy dog"),
    ("the quick", "", "brown fox jumps over the lazy dog"),
    ("", "the quickbrownfox", "jumps over the lazy dog"),
    ("", "the quick brown fox", "jumps over the lazy dog"),
    ("", "the quickbrownfox", "jumps overthelazy dog"),
]
DOCS = [{"id": i, "title": t, "description": d, "plot": p} for i, (t, d, p) in enumerate(FIELDS)]
SEARCHABLE = ["title", "description", "plot"]
QUERY = "the quick brown fox jumps over the lazy dog"
# milli's snapshot (attribute_fid_ngrams): (id, fid rank /19, position rank /91), in order
MILLI = [
    (2, 19, 91),
    (6, 15, 81),
    (5, 14, 79),
    (4, 13, 77),
    (3, 12, 83),
    (9, 11, 75),
    (8, 10, 79),
    (7, 10, 73),
    (11, 7, 77),
    (10, 6, 81),
    (13, 6, 81),
    (12, 6, 78),
    (14, 5, 75),
    (0, 1, 91),
]


@pytest.fixture(scope="module")
def legacy(make_index: Callable[..., Idx]) -> Idx:
    return make_index(DOCS, {"searchableAttributes": SEARCHABLE, "rankingRules": ["attribute"]})


def test_legacy_attribute_rule(legacy: Idx) -> None:
    result = legacy.search(QUERY, matchingStrategy="all")
    assert_milli_order(result["hits"], [i for i, _, _ in MILLI])
    for hit, (i, fid, pos) in zip(result["hits"], MILLI, strict=True):
        detail = hit["_rankingScoreDetails"]["attribute"]
        assert (hit["id"], detail["attributeRankingOrderScore"], detail["queryWordDistanceScore"]) == (
            i,
            fid / 19,
            pos / 91,
        ), hit["id"]
        # the detail's score folds both ranks; with one rule it is the ranking score
        assert detail["score"] == hit["_rankingScore"] == ((fid - 1) * 91 + pos) / (19 * 91)
        assert list(detail) == ["order", "attributeRankingOrderScore", "queryWordDistanceScore", "score"]


def test_attribute_rank(make_index: Callable[..., Idx]) -> None:
    idx = make_index(DOCS, {"searchableAttributes": SEARCHABLE, "rankingRules": ["attributeRank"]})
    result = idx.search(QUERY, matchingStrategy="all")
    expected: dict[int, list[int]] = {}
    for i, fid, _ in MILLI:
        expected.setdefault(fid, []).append(i)
    assert_buckets(buckets(result["hits"]), [expected[f] for f in sorted(expected, reverse=True)])
    for hit in result["hits"]:
        fid = next(f for i, f, _ in MILLI if i == hit["id"])
        assert hit["_rankingScoreDetails"]["attributeRank"] == {"order": 0, "score": fid / 19}


def test_searchable_attributes_order_is_the_weight(make_index: Callable[..., Idx]) -> None:
    docs = [
        {"id": 0, "a": "kiwi", "b": "", "c": ""},
        {"id": 1, "a": "", "b": "kiwi", "c": ""},
        {"id": 2, "a": "", "b": "", "c": "kiwi"},
    ]
    idx = make_index(
        docs, {"searchableAttributes": ["a", "b", "c"], "rankingRules": ["words", "attributeRank"]}
    )
    assert idx.ids("kiwi") == [0, 1, 2]
    assert [h["_rankingScoreDetails"]["attributeRank"]["score"] for h in idx.search("kiwi")["hits"]] == [
        1,
        2 / 3,
        1 / 3,
    ]
    idx.settings({"searchableAttributes": ["c", "a", "b"]})
    assert idx.ids("kiwi") == [2, 0, 1]
    # restricted to some attributes: only those are searched, the weights stay
    assert idx.ids("kiwi", attributesToSearchOn=["a", "b"]) == [0, 1]
    # with every field searchable (`*`) all fields weigh 0: attributeRank ties everything
    idx.settings({"searchableAttributes": ["*"]})
    result = idx.search("kiwi")
    assert_buckets(buckets(result["hits"]), [[0, 1, 2]])
    assert {h["_rankingScoreDetails"]["attributeRank"]["score"] for h in result["hits"]} == {1.0}


def test_nested_fields_share_their_parent_weight(make_index: Callable[..., Idx]) -> None:
    docs = [
        {"id": 0, "meta": {"x": "kiwi"}, "name": ""},
        {"id": 1, "meta": {"x": ""}, "name": "kiwi"},
        {"id": 2, "meta": {"y": {"z": "kiwi"}}, "name": ""},
    ]
    idx = make_index(
        docs, {"searchableAttributes": ["name", "meta"], "rankingRules": ["words", "attributeRank"]}
    )
    assert_buckets(idx.buckets("kiwi"), [[1], [0, 2]])


def test_attribute_rank_before_words_keeps_partial_matches(make_index: Callable[..., Idx]) -> None:
    docs: list[dict[str, Any]] = [
        {
            "id": 0,
            "title": "albert einstein",
            "category": "physics",
            "description": "famous physicist who developed the theory of relativity",
        },
        {
            "id": 1,
            "title": "albert abraham michelson",
            "category": "physics",
            "description": "measured the speed of light with great precision",
        },
        {
            "id": 2,
            "title": "albert camus",
            "category": "literature",
            "description": "french author and philosopher known for absurdism",
        },
        {
            "id": 3,
            "title": "albert schweitzer",
            "category": "medicine",
            "description": "physician and philosopher in africa",
        },
        {
            "id": 4,
            "title": "physics of fluids",
            "category": "physics",
            "description": "a journal about fluid dynamics and related topics",
        },
        {
            "id": 5,
            "title": "richard feynman",
            "category": "physics",
            "description": "albert einstein once inspired this quantum physicist",
        },
    ]
    searchable = ["title", "category", "description"]
    idx = make_index(
        docs,
        {"searchableAttributes": searchable, "rankingRules": ["words", "typo", "proximity", "attribute"]},
    )
    # "physics" is the last word: a prefix, and with one typo it matches "physici(an)" in 3
    assert_milli_order(idx.search("albert physics")["hits"], [0, 1, 5, 3, 2])
    for rules in (
        ["attributeRank", "words", "typo", "proximity"],
        ["wordPosition", "words", "typo", "proximity"],
        ["attributeRank", "wordPosition", "words", "typo", "proximity"],
    ):
        idx.settings({"rankingRules": rules})
        result = idx.search("albert physics")
        assert sorted(h["id"] for h in result["hits"]) == [0, 1, 2, 3, 5], rules
        # milli inserts `words` before the first relevancy rule
        assert next(iter(result["hits"][0]["_rankingScoreDetails"])) == "words"
        assert sorted(idx.ids("albert physics", matchingStrategy="all")) == [0, 1, 3, 5]
