"""Stop words and synonyms (milli `search/new/tests/stop_words.rs`, `typo.rs`, `proximity.rs`).

Stop words are not indexed and are dropped from queries, except the last token of the query
(a prefix); they keep their position in documents and queries, and their slot in phrases; a
query of stop words only is a placeholder search. Synonyms are one-way unless listed both ways,
may be multi-word on either side (a multi-word key is found through the ngram of the query words),
cost no typo and are never exact words.

milli's stop-word test lists `The` as a stop word and relies on its stop words being
case-sensitive (so `the` is still indexed); hanzo-engine's tokenizer compares stop words
normalized, so this port lists lowercase stop words only and keeps `the` searchable everywhere:
documents 3 and 6 then tie where milli returns 6 alone. The score details are milli's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Idx, assert_buckets, buckets

TITLES = [
    "Shazam!",
    "Captain Marvel",
    "Escape Room",
    "How to Train Your Dragon: The Hidden World",
    "Gläss",
    "How to Attempt to Train Your Dragon",
    "How to Train Your Dragon: the Hidden World",
]
LEGACY_RULES = ["words", "typo", "proximity", "attribute", "sort", "exactness"]


@pytest.fixture(scope="module")
def stop(make_index: Callable[..., Idx]) -> Idx:
    docs = [{"id": i, "title": t} for i, t in enumerate(TITLES)]
    return make_index(
        docs, {"searchableAttributes": ["title"], "stopWords": ["to", "xyz"], "rankingRules": LEGACY_RULES}
    )


def summary(hit: dict[str, Any]) -> tuple[Any, ...]:
    d = hit["_rankingScoreDetails"]
    exact = d["exactness"]
    return (
        (d["words"]["matchingWords"], d["words"]["maxMatchingWords"]),
        (d["typo"]["typoCount"], d["typo"]["maxTypoCount"]),
        d["proximity"]["score"],
        d["attribute"]["attributeRankingOrderScore"],
        d["attribute"]["queryWordDistanceScore"],
        exact["matchType"],
        exact.get("matchingWords"),
        exact.get("maxMatchingWords"),
    )


def test_stop_words_are_ignored_except_the_last_token(stop: Idx) -> None:
    # "xyz" and "to" are dropped; "the" is the last token, a prefix
    result = stop.search("xyz to the")
    assert_buckets(buckets(result["hits"]), [[3, 6]])
    assert summary(result["hits"][0]) == ((1, 1), (0, 1), 1.0, 1.0, 9 / 11, "noExactMatch", 1, 1)
    # "xyz" is the last token: kept as a prefix (matching nothing), so the words rule drops it
    result = stop.search("to the xyz")
    assert summary(result["hits"][0]) == ((1, 2), (0, 1), 1.0, 1.0, 9 / 11, "noExactMatch", 1, 1)
    # with a trailing space "xyz" is not the last token any more: ignored
    result = stop.search("to the xyz ")
    assert summary(result["hits"][0]) == ((1, 1), (0, 1), 1.0, 1.0, 9 / 11, "noExactMatch", 1, 1)
    # stop words keep their query position: "dragon" is at position 2, "the" at 1
    result = stop.search("to the dragon xyz")
    assert_buckets(buckets(result["hits"]), [[3, 6]])
    assert summary(result["hits"][0]) == ((2, 3), (0, 2), 3 / 4, 1.0, 17 / 21, "noExactMatch", 2, 2)


def test_stop_words_in_phrases(stop: Idx) -> None:
    result = stop.search('"how to train your dragon"')
    assert_buckets(buckets(result["hits"]), [[3, 6]])  # 5: "attempt" breaks the phrase
    assert summary(result["hits"][0]) == ((4, 4), (0, 0), 1.0, 1.0, 1.0, "matchesStart", None, None)
    # '"to"' is a phrase of stop words only: ignored; '"the' an unclosed phrase
    result = stop.search('how "to" train "the')
    assert_buckets(buckets(result["hits"]), [[3, 6]])
    assert summary(result["hits"][0]) == ((3, 3), (0, 2), 2 / 4, 1.0, 29 / 31, "noExactMatch", 3, 3)


def test_stop_words_only(stop: Idx) -> None:
    # a placeholder search: every document, no score details
    result = stop.search('"to"')
    assert [h["id"] for h in result["hits"]] == list(range(7))
    assert all(h["_rankingScoreDetails"] == {} for h in result["hits"])
    assert len(stop.ids("to xyz ")) == 7
    # as the last token a stop word is a prefix, and stop words are not indexed: nothing
    assert stop.ids("to") == []


SYNONYM_DOCS = [
    {"id": 0, "text": "the lazy dog"},
    {"id": 1, "text": "the lackadaisical dog"},
    {"id": 2, "text": "san francisco bay"},
    {"id": 3, "text": "sf bay"},
    {"id": 4, "text": "francisco san bay"},
    {"id": 5, "text": "a fast car"},
    {"id": 6, "text": "a quick car"},
]


@pytest.fixture(scope="module")
def syn(make_index: Callable[..., Idx]) -> Idx:
    return make_index(
        SYNONYM_DOCS,
        {
            "rankingRules": ["words", "typo", "exactness"],
            "synonyms": {
                "lackadaisical": ["lazy"],
                "sf": ["san francisco"],
                "san francisco": ["sf"],
                "fast": ["quick"],
                "quick": ["fast"],
            },
        },
    )


def test_one_way_synonyms(syn: Idx) -> None:
    assert sorted(syn.ids("lackadaisical dog", matchingStrategy="all")) == [0, 1]
    assert syn.ids("lazy dog", matchingStrategy="all") == [0]


def test_mutual_synonyms(syn: Idx) -> None:
    assert sorted(syn.ids("fast car", matchingStrategy="all")) == [5, 6]
    assert sorted(syn.ids("quick car", matchingStrategy="all")) == [5, 6]


def test_multi_word_synonyms(syn: Idx) -> None:
    # a multi-word synonym is a phrase: "francisco san" does not match it
    assert sorted(syn.ids("sf bay", matchingStrategy="all")) == [2, 3]
    # a multi-word key hangs on the 2-gram of the query words
    assert sorted(syn.ids("san francisco bay", matchingStrategy="all")) == [2, 3, 4]


def test_synonyms_cost_no_typo_and_are_not_exact(syn: Idx) -> None:
    result = syn.search("fast car", matchingStrategy="all")
    by_id = {h["id"]: h["_rankingScoreDetails"] for h in result["hits"]}
    assert by_id[5]["typo"]["typoCount"] == by_id[6]["typo"]["typoCount"] == 0
    assert by_id[5]["exactness"]["matchingWords"] == 2
    assert by_id[6]["exactness"]["matchingWords"] == 1
    assert [h["id"] for h in result["hits"]] == [5, 6]
