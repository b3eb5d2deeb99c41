"""The `words` ranking rule and `matchingStrategy` (milli `search/new/tests/words_tms.rs`).

Properties: `last` drops terms from the end while documents lack them, never a phrase; duplicate
words do not change a document's words bucket; an unclosed quote still makes a phrase; `all`
removes nothing (and has no `words` rule: no `words` score detail); `frequency` drops the most
frequent terms first, terms of equal frequency together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Idx, assert_buckets, assert_milli_order, buckets

TEXTS = [
    "",
    "the",
    "the quick",
    "the quick brown",
    "the quick brown fox",
    "the quick brown fox jumps",
    "the quick brown fox jumps over",
    "the quick brown fox jumps over the",
    "the quick brown fox jumps over the lazy",
    "the quick brown fox jumps over the lazy dog",
    "the brown quick fox jumps over the lazy dog",
    "the quick brown fox talks to the lazy and slow dog",
    "the quick brown fox talks to the lazy dog",
    "the mighty and quick brown fox jumps over the lazy dog",
    "the great quick brown fox jumps over the lazy dog",
    "this quick brown and very scary fox jumps over the lazy dog",
    "this quick brown and scary fox jumps over the lazy dog",
    "the quick brown fox jumps over the really lazy dog",
    "the brown quick fox jumps over the really lazy dog",
    "the brown quick fox immediately jumps over the really lazy dog",
    "the brown quick fox immediately jumps over the really lazy blue dog",
    "the quick brown. quick brown fox. brown fox jumps. fox jumps over. over the lazy. the lazy dog.",
    "the, quick, brown, fox, jumps, over, the, lazy, dog",
]
QUERY = "the quick brown fox jumps over the lazy dog"
FULL = [9, 10, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22]


@pytest.fixture(scope="module")
def words_index(make_index: Callable[..., Idx]) -> Idx:
    return make_index(
        [{"id": i, "text": t} for i, t in enumerate(TEXTS)],
        {"searchableAttributes": ["text"], "rankingRules": ["words"]},
    )


@pytest.fixture(scope="module")
def proximity_index(make_index: Callable[..., Idx]) -> Idx:
    return make_index(
        [{"id": i, "text": t} for i, t in enumerate(TEXTS)],
        {"searchableAttributes": ["text"], "rankingRules": ["words", "proximity"]},
    )


def words_detail(hit: dict[str, Any]) -> tuple[int, int]:
    d = hit["_rankingScoreDetails"]["words"]
    return d["matchingWords"], d["maxMatchingWords"]


def test_last_drops_terms_from_the_end(words_index: Idx) -> None:
    # milli: [9, 10, 13..22, 8, 6, 7, 5, 4, 11, 12, 3] (its limit was 20); 6 and 7 tie because
    # "the" appears twice in the query
    result = words_index.search(QUERY)
    assert_buckets(buckets(result["hits"]), [FULL, [8], [6, 7], [5], [4, 11, 12], [3], [2], [1]])
    by_id = {h["id"]: words_detail(h) for h in result["hits"]}
    assert by_id[9] == (9, 9)
    assert by_id[8] == (8, 9)
    assert by_id[6] == by_id[7] == (7, 9)
    assert by_id[4] == (4, 9)
    assert by_id[1] == (1, 9)
    assert result["estimatedTotalHits"] == 22


def test_last_never_drops_the_first_term(words_index: Idx) -> None:
    assert words_index.ids("extravagant the quick brown fox jumps over the lazy dog") == []


def test_phrases_are_never_dropped(words_index: Idx) -> None:
    # milli also returns 21 ("the quick brown. quick brown fox."): it resolves phrases by pairwise
    # adjacency, so the three pairs found in different places make a phrase; the phrase is not in it.
    result = words_index.search('"the quick brown fox" jumps over the lazy dog')
    assert_buckets(buckets(result["hits"]), [[9, 17], [8], [6, 7], [5], [4, 11, 12]])
    # the words of a phrase count as matching words (milli's `words_in_phrases_count`)
    assert words_detail(result["hits"][0]) == (9, 9)
    assert {words_detail(h) for h in result["hits"] if h["id"] in (4, 11, 12)} == {(4, 9)}

    result = words_index.search('"the quick brown fox" jumps over the "lazy" dog')
    assert_buckets(buckets(result["hits"]), [[9, 17], [8], [11, 12]])
    assert [words_detail(h) for h in result["hits"]][-1] == (5, 9)


def test_whole_query_phrase_and_unclosed_quote(words_index: Idx) -> None:
    for q in (f'"{QUERY}"', f'"{QUERY}'):
        result = words_index.search(q)
        assert [h["id"] for h in result["hits"]] == [9]
        assert words_detail(result["hits"][0]) == (9, 9)


def test_words_then_proximity(proximity_index: Idx) -> None:
    # 7 beats 6: "the" is close to its neighbours
    assert_milli_order(
        proximity_index.search(QUERY, limit=20)["hits"],
        [9, 21, 14, 17, 13, 10, 18, 16, 19, 15, 20, 22, 8, 7, 6, 5, 4, 11, 12, 3],
    )
    # 10 beats 9: "brown quick" is in the query's order
    assert_milli_order(
        proximity_index.search("the brown quick fox jumps over the lazy dog", limit=20)["hits"],
        [10, 18, 19, 9, 20, 21, 14, 17, 13, 15, 16, 22, 8, 7, 6, 5, 4, 11, 12, 3],
    )


def test_words_then_proximity_with_phrases(proximity_index: Idx) -> None:
    # the proximity of a phrase's first and last words to the next and previous terms counts
    assert_milli_order(
        proximity_index.search('the "quick brown" fox jumps over the lazy dog')["hits"],
        [9, 21, 14, 17, 13, 16, 15, 8, 7, 6, 5, 4, 11, 12, 3],
    )
    assert_milli_order(
        proximity_index.search('the "quick brown" "fox jumps" over the lazy dog')["hits"],
        [9, 21, 14, 17, 13, 16, 15, 8, 7, 6, 5],
    )


def test_all_removes_nothing(proximity_index: Idx) -> None:
    result = proximity_index.search(QUERY, matchingStrategy="all")
    assert_milli_order(result["hits"], [9, 21, 14, 17, 13, 10, 18, 16, 19, 15, 20, 22])
    # with `all` milli has no words rule: no words detail, proximity is rule 0
    assert all("words" not in h["_rankingScoreDetails"] for h in result["hits"])
    assert all(h["_rankingScoreDetails"]["proximity"]["order"] == 0 for h in result["hits"])
    assert proximity_index.ids("extravagant", matchingStrategy="all") == []


FREQUENCY_DOCS = [
    {"id": 0, "text": "common rare"},
    {"id": 1, "text": "common"},
    {"id": 2, "text": "common middle"},
    {"id": 3, "text": "middle rare"},
    {"id": 4, "text": "common middle rare"},
    {"id": 5, "text": "rare"},
    {"id": 6, "text": "other"},
]


@pytest.fixture(scope="module")
def frequency_index(make_index: Callable[..., Idx]) -> Idx:
    return make_index(FREQUENCY_DOCS, {"searchableAttributes": ["text"], "rankingRules": ["words"]})


def test_frequency_drops_the_most_frequent_terms_first(frequency_index: Idx) -> None:
    # common: 4 docs, rare: 4 docs, middle: 3 docs. Removal order: {common, rare} (equal
    # frequencies go together), then {middle} is the last group and is never removed.
    result = frequency_index.search("common middle rare", matchingStrategy="frequency")
    assert_buckets(buckets(result["hits"]), [[4], [2, 3]])
    assert [words_detail(h) for h in result["hits"]] == [(2, 2), (1, 2), (1, 2)]
    # `last` drops "rare" then "middle": 0 and 1 come back, 3 and 5 do not (no "common")
    result = frequency_index.search("common middle rare ", matchingStrategy="last")
    assert_buckets(buckets(result["hits"]), [[4], [2], [0, 1]])
    assert [words_detail(h) for h in result["hits"]] == [(3, 3), (2, 3), (1, 3), (1, 3)]


def test_frequency_drops_missing_terms_first(frequency_index: Idx) -> None:
    # a term no document has counts as the most frequent one: it goes first, then "rare"
    result = frequency_index.search("middle rare zzz", matchingStrategy="frequency")
    assert_buckets(buckets(result["hits"]), [[3, 4], [2]])
    assert words_detail(result["hits"][0]) == (2, 3)
    # `all` needs every term
    assert frequency_index.ids("middle rare zzz", matchingStrategy="all") == []
    assert sorted(frequency_index.ids("middle rare", matchingStrategy="all")) == [3, 4]


def test_single_term_has_one_bucket(frequency_index: Idx) -> None:
    result = frequency_index.search("middle")
    assert sorted(h["id"] for h in result["hits"]) == [2, 3, 4]
    assert {words_detail(h) for h in result["hits"]} == {(1, 1)}
