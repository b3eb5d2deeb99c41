"""The `wordPosition` rule (milli `search/new/tests/attribute_position.rs`).

Per query term, the cost of the distance between its position in the query and its closest
(bucketed: exact below 16, then 24, 32, 64, ...) position in a field: 0, 1, 2 up to 4, 3 up to 7,
4 up to 11, 5 up to 16, 6 up to 24, 7 up to 64, 8 up to 256, 9 up to 1024, else 10; an ngram counts
its words at consecutive positions. rank = 10 x terms + 1 - cost.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import Idx, assert_buckets, assert_milli_order, buckets

A35 = " ".join(["a"] * 35)
A45 = " ".join(["a"] * 45)
TEXTS = {
    0: {"text": "do you know about the quick and talented brown fox"},
    1: {"text": "do you know about the quick brown fox"},
    2: {"text": "the quick and talented brown fox"},
    3: {"text": "fox brown quick the"},
    4: {"text": "the quick brown fox"},
    5: {"text": " ".join(["a"] * 1390) + " the quick brown fox"},
    6: {"text": "quick " + " ".join(["a"] * 168) + " brown"},
    7: {"text": f"{A35} {A45} {A45} {A45} quickbrown"},
    8: {"text": f"{A35} {A45} {A45} {A45} quick brown"},
    9: {"text": f"{A35} {A45} {A45} {A45} quickbrown"},
    10: {"text": "quick brown", "text2": "brown quick"},
    11: {"text": "quickbrown"},
    12: {"text": "quick brown"},
    13: {"text": "quickbrown"},
}
# milli's snapshot (attribute_position_different_fields): (id, position rank / 21) in order
MILLI = [
    (10, 21),
    (12, 21),
    (11, 20),
    (13, 20),
    (3, 19),
    (4, 19),
    (2, 18),
    (0, 15),
    (1, 15),
    (6, 13),
    (8, 5),
    (7, 4),
    (9, 4),
    (5, 1),
]


@pytest.fixture(scope="module")
def index(make_index: Callable[..., Idx]) -> Idx:
    docs = [{"id": i, **fields} for i, fields in sorted(TEXTS.items())]
    return make_index(
        docs, {"searchableAttributes": ["text", "text2", "other"], "rankingRules": ["wordPosition"]}
    )


def test_word_position(index: Idx) -> None:
    result = index.search("quick brown", matchingStrategy="all")
    assert_milli_order(result["hits"], [i for i, _ in MILLI])
    ranks = dict(MILLI)
    for hit in result["hits"]:
        assert hit["_rankingScoreDetails"]["wordPosition"] == {"order": 0, "score": ranks[hit["id"]] / 21}


def test_repeated_words(index: Idx) -> None:
    # five times "a": each query position finds an "a" at the same document position, except in
    # 6 ("quick a a ..."), where the first "a" is one position late
    result = index.search("a a a a a", matchingStrategy="all")
    assert_buckets(buckets(result["hits"]), [[5, 7, 8, 9], [6]])
    assert [h["_rankingScoreDetails"]["wordPosition"]["score"] for h in result["hits"]][-1] == 50 / 51


def test_legacy_attribute_includes_word_position(make_index: Callable[..., Idx]) -> None:
    docs = [{"id": i, **fields} for i, fields in sorted(TEXTS.items())]
    idx = make_index(
        docs, {"searchableAttributes": ["text", "text2", "other"], "rankingRules": ["attribute"]}
    )
    result = idx.search("quick brown", matchingStrategy="all")
    assert_milli_order(result["hits"], [i for i, _ in MILLI])
    # all in the first field: attributeRank ties, wordPosition orders
    assert {h["_rankingScoreDetails"]["attribute"]["attributeRankingOrderScore"] for h in result["hits"]} == {
        1.0
    }


def test_position_is_relative_to_the_query_position(make_index: Callable[..., Idx]) -> None:
    docs = [{"id": 0, "t": "red apple"}, {"id": 1, "t": "apple red"}, {"id": 2, "t": "x x x x x x red apple"}]
    idx = make_index(docs, {"rankingRules": ["wordPosition"]})
    # "red" at query position 0, "apple" at 1: doc 0 is exact, doc 1 costs 1 + 1, doc 2 3 + 3
    result = idx.search("red apple", matchingStrategy="all")
    assert [h["id"] for h in result["hits"]] == [0, 1, 2]
    assert [h["_rankingScoreDetails"]["wordPosition"]["score"] for h in result["hits"]] == [
        1.0,
        19 / 21,
        15 / 21,
    ]
