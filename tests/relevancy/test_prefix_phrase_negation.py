"""Prefix search on the last word, `"phrases"` and the `-` negative operator (docs/api-contract.md §3.4; milli
`tests/search/phrase_search.rs`, `search/new/tests/words_tms.rs`, `query_term/parse_query.rs`).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import MILLI_SETTINGS, Idx, milli_test_set

DOCS = [
    {"id": 0, "text": "the quick brown fox"},
    {"id": 1, "text": "quickly brown foxes"},
    {"id": 2, "text": "brown quick"},
    {"id": 3, "text": "the quick. brown fox"},
    {"id": 4, "text": "a lazy dog"},
    {"id": 5, "text": "dog-cat friendship"},
]


@pytest.fixture(scope="module")
def index(make_index: Callable[..., Idx]) -> Idx:
    return make_index(DOCS, {"rankingRules": ["words", "typo", "proximity", "exactness"]})


def test_last_word_is_a_prefix(index: Idx) -> None:
    assert sorted(index.ids("quic")) == [0, 1, 2, 3]
    # a separator after the word ends it: no prefix, and "quic" (4 letters) allows no typo
    assert index.ids("quic ") == []
    assert index.ids("quic.") == []
    # only the last word: "quic" is not a prefix here, so `last` drops "brown" and finds nothing
    assert index.ids("quic brown") == []
    assert sorted(index.ids("brown quic")) == [0, 1, 2, 3]


def test_prefix_costs_no_typo_and_is_not_exact(index: Idx) -> None:
    result = index.search("fox")
    assert sorted(h["id"] for h in result["hits"]) == [0, 1, 3]
    by_id = {h["id"]: h["_rankingScoreDetails"] for h in result["hits"]}
    assert by_id[1]["typo"]["typoCount"] == 0  # "foxes" through the prefix
    assert by_id[1]["exactness"]["matchingWords"] == 0
    assert by_id[0]["exactness"]["matchingWords"] == 1
    assert [h["id"] for h in result["hits"]][-1] == 1


def test_prefix_search_disabled(make_index: Callable[..., Idx]) -> None:
    idx = make_index(DOCS, {"prefixSearch": "disabled", "rankingRules": ["words"]})
    assert idx.ids("quic") == []
    assert sorted(idx.ids("quick")) == [0, 2, 3]


def test_phrase_needs_consecutive_words(index: Idx) -> None:
    assert sorted(index.ids('"quick brown"')) == [0]
    # across a hard separator the words are not consecutive
    assert 3 not in index.ids('"quick brown"')
    # phrases are exact: no prefix, no typo
    assert index.ids('"quick brow"') == []
    assert index.ids('"quikc brown"') == []
    # an unclosed quote runs to the end of the query
    assert sorted(index.ids('"quick brown fox')) == [0]
    # a phrase of one word is that word, exactly
    assert sorted(index.ids('"fox"')) == [0, 3]


def test_phrase_with_stop_words(make_index: Callable[..., Idx]) -> None:
    idx = make_index(
        milli_test_set(), {**MILLI_SETTINGS, "stopWords": ["a", "an", "the", "of"], "rankingRules": []}
    )
    # stop words keep their slot: "the use of force" is "* use * force"
    assert idx.ids('"the use of force"', matchingStrategy="all") == ["H"]
    idx.settings({"rankingRules": ["proximity", "attribute", "exactness"]})
    assert idx.ids('"the use of force"', matchingStrategy="all") == ["H"]


def test_negative_words(index: Idx) -> None:
    assert sorted(index.ids("brown -fox")) == [1, 2]
    assert sorted(index.ids("brown -fox -foxes")) == [2]
    # the negated word is exact: no prefix, no typo
    assert sorted(index.ids("brown -fo")) == [0, 1, 2, 3]
    assert sorted(index.ids("brown -foxs")) == [0, 1, 2, 3]
    # only negative terms: every other document (a placeholder search)
    result = index.search("-brown")
    assert sorted(h["id"] for h in result["hits"]) == [4, 5]
    assert result["estimatedTotalHits"] == 2


def test_negative_phrases(index: Idx) -> None:
    # "fox" is not the last token (the closing quote is): no prefix, so no "foxes"
    assert sorted(index.ids('fox -"quick brown"')) == [3]
    assert sorted(index.ids('-"quick brown" fox')) == [1, 3]
    assert sorted(index.ids('brown -"brown quick"')) == [0, 1, 3]


def test_dash_is_negation_only_after_whitespace(index: Idx) -> None:
    # "dog-cat": the dash is a separator inside a word
    assert index.ids("dog-cat", matchingStrategy="all") == [5]
    # a lone dash is ignored
    assert sorted(index.ids("lazy - dog")) == [4]
    assert sorted(index.ids("dog -cat")) == [4]
