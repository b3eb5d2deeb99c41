"""The `proximity` ranking rule (milli `search/new/tests/proximity.rs`).

Properties: per pair of consecutive query terms the cost is the forward distance - 1 or the
backward distance (< 3), else 3 (milli's `MAX_DISTANCE` is 4), and a hard separator (`. `, `, `)
puts words 8 apart; phrase terms (and split words, multi-word synonyms) are close through their
first and last words, only forward; an ngram (`quickbrown`) costs one more than its words side by
side; `proximityPrecision: byAttribute` only tells "same field" from "not".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Idx, assert_buckets, assert_milli_order, buckets

SIMPLE = [
    "the very quick dark brown and smart fox did jump over the terribly lazy and small dog",
    "the. quick brown fox jumps over the lazy. dog",
    "the quick brown fox jumps over the lazy. dog",
    "dog the quick brown fox jumps over the lazy",
    "the quickbrown fox jumps over the lazy dog",
    "brown quick fox jumps over the lazy dog",
    "the really quick brown fox jumps over the very lazy dog",
    "the really quick brown fox jumps over the lazy dog",
    "the quick brown fox jumps over the lazy",
    "the quack brown fox jumps over the lazy",
    "the quack brown fox jumps over the lazy dog",
    "the quick brown fox jumps over the lazy dog",
]
# (milli's dataset lists id 9 twice: the second document replaces the first, keeping its docid)
SIMPLE_DOCS = [{"id": i if i < 10 else i - 1, "text": t} for i, t in enumerate(SIMPLE)]

EDGE = {
    1: "Sun Flower sounds like the title of a painting, maybe about a plant wilting under the heat.",
    2: "Sun Flower sounds like the title of a painting, maybe about a flower wilting under the heat.",
    3: "A flower wilting under the sun, unlike a sunflower",
    4: "sun flower wilting under the heat",
    5: "sunflower wilting under the heat",
    6: "this is the best meal I have ever had in such a beautiful summer day",
    7: "this is the best cooked meal of the summer",
    8: "this is the best meal of the summer",
    9: "this is the best meal of summer",
    10: "this is the best summer meal",
    11: "summer x y best",
    12: "summer x best",
    13: "summer best",
    15: "this is the best meal I have ever had in such a beautiful winter day",
    16: "this is the best cooked meal of the winter",
    17: "this is the best meal of the winter",
    18: "this is the best meal of winter",
    19: "this is the best winter meal",
    20: "winter x y best",
    21: "winter x best",
    22: "winter best",
}
SETTINGS = {"searchableAttributes": ["text"], "rankingRules": ["words", "proximity"]}


@pytest.fixture(scope="module")
def edge_index(make_index: Callable[..., Idx]) -> Idx:
    docs: list[dict[str, Any]] = [
        {
            "id": 0,
            "text": " ".join(f"s{a}{b}" for a in "abcdefgklmnopqrst" for b in "abcefghijklmnopqrtuvwxyz"),
        }
    ]
    docs += [{"id": i, "text": t} for i, t in sorted(EDGE.items())]
    docs.append(
        {"id": 14, "text": " ".join(f"win{a}{b}" for a in "abcdefgklmnopqrst" for b in "abcefghijklmnopqr")}
    )
    docs.sort(key=lambda d: d["id"])
    return make_index(docs, SETTINGS)


def proximity_scores(idx: Idx, q: str, **params: object) -> dict[int, float]:
    return {h["id"]: h["_rankingScoreDetails"]["proximity"]["score"] for h in idx.search(q, **params)["hits"]}


def test_proximity_simple(make_index: Callable[..., Idx]) -> None:
    idx = make_index(SIMPLE_DOCS, SETTINGS)
    result = idx.search("the quick brown fox jumps over the lazy dog", matchingStrategy="all")
    assert_milli_order(result["hits"], [9, 10, 4, 7, 6, 2, 3, 5, 1, 0])
    # 8 pairs of at most 3 each: rank = 25 - cost
    scores = {h["id"]: h["_rankingScoreDetails"]["proximity"]["score"] for h in result["hits"]}
    assert scores[9] == scores[10] == 1.0
    assert scores[4] == 24 / 25  # "the quickbrown": the 2-gram costs 1 more than "quick brown"
    assert scores[2] == 22 / 25  # "lazy. dog": 3 across the hard separator


def test_split_word_phrase_and_synonym(edge_index: Idx) -> None:
    # "sunflower" matches "sun flower" (split word); doc 2 has "flower wilting" elsewhere, and milli
    # counts a phrase-like term close through any occurrence of its last word
    result = edge_index.search("sunflower wilting", matchingStrategy="all")
    assert_milli_order(result["hits"], [2, 4, 5, 1, 3])
    assert_milli_order(edge_index.search('"sun flower" wilting', matchingStrategy="all")["hits"], [2, 4, 1])


def test_synonym_phrase(make_index: Callable[..., Idx]) -> None:
    docs = [{"id": i, "text": t} for i, t in sorted(EDGE.items()) if i <= 5]
    idx = make_index(docs, {**SETTINGS, "synonyms": {"xyz": ["sun flower"]}})
    assert_milli_order(idx.search("xyz wilting", matchingStrategy="all")["hits"], [2, 4, 1])


def test_backward_and_forward_distances(edge_index: Idx) -> None:
    # milli's precise order (it differs for prefixes stored in its proximity prefix database)
    result = edge_index.search("best su", matchingStrategy="all")
    assert_milli_order(result["hits"], [10, 13, 9, 12, 6, 7, 8, 11, 15])
    scores = {h["id"]: h["_rankingScoreDetails"]["proximity"]["score"] for h in result["hits"]}
    # forward 1 -> 0, backward 1 -> 1, forward 3 and backward 2 -> 2, further -> 3 (out of 3)
    assert [scores[i] for i in (10, 13, 9, 12, 11, 8)] == [1.0, 0.75, 0.5, 0.5, 0.25, 0.25]
    assert_milli_order(
        edge_index.search("best wint", matchingStrategy="all")["hits"], [19, 22, 18, 21, 15, 16, 17, 20]
    )


def test_proximity_only_between_consecutive_query_terms(make_index: Callable[..., Idx]) -> None:
    docs: list[dict[str, Any]] = [
        {"id": 0, "text": "alpha beta gamma"},
        {"id": 1, "text": "alpha gamma"},
        {"id": 2, "text": "gamma x x x x alpha"},
        *({"id": i, "text": "beta"} for i in (3, 4, 5)),
    ]
    idx = make_index(docs, SETTINGS)
    # `frequency` drops "beta" (the most frequent); "alpha" and "gamma" are then not consecutive
    # in the query, so milli computes no proximity between them: 1 and 2 tie
    result = idx.search("alpha beta gamma", matchingStrategy="frequency")
    assert_buckets(buckets(result["hits"]), [[0], [1, 2]])
    assert result["hits"][1]["_rankingScoreDetails"]["proximity"]["score"] == 1.0
    # a hard separator in the query also breaks the pair
    result = idx.search("alpha. gamma", matchingStrategy="all")
    assert_buckets(buckets(result["hits"]), [[0, 1, 2]])
    assert_buckets(idx.buckets("alpha gamma", matchingStrategy="all"), [[1], [0], [2]])


def test_proximity_precision_by_attribute(make_index: Callable[..., Idx]) -> None:
    docs = [
        {"id": 0, "a": "red x x x x x car", "b": ""},
        {"id": 1, "a": "red car", "b": ""},
        {"id": 2, "a": "red", "b": "car"},
    ]
    by_word = make_index(docs, {"rankingRules": ["words", "proximity"]})
    assert_buckets(by_word.buckets("red car", matchingStrategy="all"), [[1], [0, 2]])
    by_attribute = make_index(
        docs, {"rankingRules": ["words", "proximity"], "proximityPrecision": "byAttribute"}
    )
    assert_buckets(by_attribute.buckets("red car", matchingStrategy="all"), [[0, 1], [2]])
