"""`_rankingScore`, `_rankingScoreDetails` and `rankingScoreThreshold` (milli `score_details.rs`,
`search/new/tests/cutoff.rs`, `bucket_sort.rs`).

Each relevancy rule yields (rank, max rank); `_rankingScore` folds them in rule order like the
digits of a mixed-radix number (`Rank::global_score`), so it is in [0, 1], 1 for a perfect match,
and never increases down the results when only relevancy rules rank. The threshold drops the hits
scoring below it and the estimated total counts only the hits it kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Idx

CUTOFF_DOCS = [
    {"id": 4, "text": "hella puppo kefir"},
    {"id": 3, "text": "hella puppy kefir"},
    {"id": 2, "text": "hello"},
    {"id": 1, "text": "hello puppy"},
    {"id": 0, "text": "hello puppy kefir"},
]


@pytest.fixture(scope="module")
def cutoff(make_index: Callable[..., Idx]) -> Idx:
    return make_index(CUTOFF_DOCS, {"searchableAttributes": ["text"], "rankingRules": ["words", "typo"]})


def test_scores_fold_rule_ranks(cutoff: Idx) -> None:
    result = cutoff.search("hello puppy kefir")
    assert [h["id"] for h in result["hits"]] == [0, 3, 4, 1, 2]
    # milli's snapshot: 1.0000 0.9167 0.8333 0.6667 for the first four
    assert [h["_rankingScore"] for h in result["hits"]][:4] == pytest.approx([1.0, 11 / 12, 10 / 12, 6 / 9])
    details = [h["_rankingScoreDetails"] for h in result["hits"]]
    assert details[0]["words"] == {"order": 0, "matchingWords": 3, "maxMatchingWords": 3, "score": 1.0}
    assert details[0]["typo"] == {"order": 1, "typoCount": 0, "maxTypoCount": 3, "score": 1.0}
    assert details[2]["typo"] == {"order": 1, "typoCount": 2, "maxTypoCount": 3, "score": 0.5}
    # the bucket without "kefir": the typo maximum is over its own remaining terms
    assert details[3]["words"] == {"order": 0, "matchingWords": 2, "maxMatchingWords": 3, "score": 2 / 3}
    assert details[3]["typo"] == {"order": 1, "typoCount": 0, "maxTypoCount": 2, "score": 1.0}
    assert details[4]["words"]["matchingWords"] == 1


def test_threshold(cutoff: Idx) -> None:
    result = cutoff.search("hello puppy kefir", rankingScoreThreshold=0.9)
    assert [h["id"] for h in result["hits"]] == [0, 3]
    assert result["estimatedTotalHits"] == 2
    result = cutoff.search("hello puppy kefir", rankingScoreThreshold=0.8)
    assert [h["id"] for h in result["hits"]] == [0, 3, 4]
    assert cutoff.search("hello puppy kefir", rankingScoreThreshold=0.0)["estimatedTotalHits"] == 5
    result = cutoff.search("hello puppy kefir", rankingScoreThreshold=1.0)
    assert [h["id"] for h in result["hits"]] == [0]
    # page mode counts exhaustively, without the hits below the threshold
    result = cutoff.search("hello puppy kefir", rankingScoreThreshold=0.8, hitsPerPage=1, page=1)
    assert result["totalHits"] == 3 and result["totalPages"] == 3
    assert [h["id"] for h in result["hits"]] == [0]


def test_threshold_without_showing_scores(cutoff: Idx) -> None:
    response = cutoff.client.post(
        f"/indexes/{cutoff.uid}/search", json={"q": "hello puppy kefir", "rankingScoreThreshold": 0.9}
    )
    assert [h["id"] for h in response.json()["hits"]] == [0, 3]
    assert "_rankingScore" not in response.json()["hits"][0]


DOCS = [
    {"id": 0, "title": "the quick brown fox", "body": "jumps over the lazy dog"},
    {"id": 1, "title": "quick brown", "body": "the fox"},
    {"id": 2, "title": "a fox", "body": "brown and quick"},
    {"id": 3, "title": "quack", "body": "brwn foxes"},
    {"id": 4, "title": "nothing", "body": "quick"},
]


@pytest.fixture(scope="module")
def default_rules(make_index: Callable[..., Idx]) -> Idx:
    return make_index(DOCS, {"searchableAttributes": ["title", "body"]})


@pytest.mark.parametrize(
    "q", ["quick brown fox", "quick", "brwn fox", "fox quick brown", '"quick brown" fox', "qu"]
)
def test_scores_are_in_unit_interval_and_decrease(default_rules: Idx, q: str) -> None:
    hits = default_rules.search(q)["hits"]
    assert hits
    scores = [h["_rankingScore"] for h in hits]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


SHAPES = {
    "words": ["order", "matchingWords", "maxMatchingWords", "score"],
    "typo": ["order", "typoCount", "maxTypoCount", "score"],
    "proximity": ["order", "score"],
    "attributeRank": ["order", "score"],
    "wordPosition": ["order", "score"],
}


def test_default_rules_detail_shapes(default_rules: Idx) -> None:
    hits = default_rules.search("quick brown fox")["hits"]
    for hit in hits:
        details: dict[str, Any] = hit["_rankingScoreDetails"]
        # exactly the default rules (the `sort` placeholder shows nothing without a sort); the BM25
        # tie-break is no rule, so it has no entry
        assert list(details) == ["words", "typo", "proximity", "attributeRank", "wordPosition", "exactness"]
        assert [d["order"] for d in details.values()] == list(range(6))
        for rule, keys in SHAPES.items():
            assert list(details[rule]) == keys, rule
        exactness = details["exactness"]
        if exactness["matchType"] == "noExactMatch":
            assert list(exactness) == ["order", "matchType", "matchingWords", "maxMatchingWords", "score"]
        else:
            assert list(exactness) == ["order", "matchType", "score"]
            assert exactness["score"] == {"exactMatch": 1.0, "matchesStart": 2 / 3}[exactness["matchType"]]
        assert all(0.0 <= d["score"] <= 1.0 for d in details.values())
    # doc 0 has every word in order, but after "the": no attribute starts with the query
    top = hits[0]
    assert top["id"] == 0
    assert top["_rankingScoreDetails"]["exactness"] == {
        "order": 5,
        "matchType": "noExactMatch",
        "matchingWords": 3,
        "maxMatchingWords": 3,
        "score": 4 / 12,
    }


def test_bm25_detail_only_when_bm25_is_a_rule(make_index: Callable[..., Idx]) -> None:
    docs = [{"id": 0, "t": "red car red"}, {"id": 1, "t": "red car"}, {"id": 2, "t": "blue car"}]
    idx = make_index(docs, {"rankingRules": ["words", "bm25", "exactness"]})
    hits = idx.search("red car", matchingStrategy="last")["hits"]
    assert len(hits) == 2  # `last` drops "car" last: "blue car" never matches
    for hit in hits:
        details = hit["_rankingScoreDetails"]
        assert list(details) == ["words", "bm25", "exactness"]
        assert list(details["bm25"]) == ["order", "value", "score"]
        assert details["bm25"]["order"] == 1
    without = make_index(docs, {"rankingRules": ["words", "exactness"]}).search(
        "red car", matchingStrategy="last"
    )
    assert [list(h["_rankingScoreDetails"]) for h in without["hits"]] == [["words", "exactness"]] * 2
    # "red car" matches a whole field exactly, so it comes first without the bm25 rule
    assert [h["id"] for h in without["hits"]] == [1, 0]


def test_ranking_score_of_a_small_case(make_index: Callable[..., Idx]) -> None:
    idx = make_index(
        [{"id": 0, "t": "red car"}, {"id": 1, "t": "car red"}],
        {"rankingRules": ["words", "proximity", "exactness"]},
    )
    hits = idx.search("red car", matchingStrategy="last")["hits"]
    # doc 1: words 2/2, proximity: "car" before "red" costs 1 of 3 -> 3/4, exactness: noExactMatch
    # (1/3) with 2 of 2 exact words (3/3) -> fold = ((2-1)*4 + 3 - 1)*3*3 + ... computed below
    expected = (((2 - 1) * 4 + 3 - 1) * 3 + 1 - 1) * 3 + 3
    assert hits[1]["_rankingScore"] == expected / (2 * 4 * 3 * 3)
    assert hits[1]["_rankingScoreDetails"]["exactness"]["score"] == 3 / 9
    assert hits[0]["_rankingScore"] == 1.0


def test_placeholder_scores(default_rules: Idx) -> None:
    hits = default_rules.search(None)["hits"]
    assert [h["id"] for h in hits] == [0, 1, 2, 3, 4]
    assert {h["_rankingScore"] for h in hits} == {1.0}
    assert all(h["_rankingScoreDetails"] == {} for h in hits)


def test_legacy_rules_detail_shapes(make_index: Callable[..., Idx]) -> None:
    idx = make_index(
        DOCS,
        {
            "searchableAttributes": ["title", "body"],
            "rankingRules": ["words", "typo", "proximity", "attribute", "sort", "exactness"],
        },
    )
    details = idx.search("quick brown fox")["hits"][0]["_rankingScoreDetails"]
    assert list(details) == ["words", "typo", "proximity", "attribute", "exactness"]
    assert list(details["attribute"]) == [
        "order",
        "attributeRankingOrderScore",
        "queryWordDistanceScore",
        "score",
    ]


def test_search_cutoff_skips_the_remaining_rules(make_index: Callable[..., Idx]) -> None:
    idx = make_index(
        CUTOFF_DOCS,
        {"searchableAttributes": ["text"], "rankingRules": ["words", "typo"], "searchCutoffMs": 0},
    )
    result = idx.search("hello puppy kefir")
    # the budget is spent before any bucket is sorted: the same hits, unsorted, marked `skipped`
    assert sorted(h["id"] for h in result["hits"]) == [0, 1, 2, 3, 4]
    assert result["estimatedTotalHits"] == 5
    for hit in result["hits"]:
        details = hit["_rankingScoreDetails"]
        assert "skipped" in details
        assert details["skipped"]["order"] == len(details) - 1
        assert hit["_rankingScore"] < 1.0
