"""Typo tolerance and the `typo` ranking rule (milli `search/new/tests/typo.rs`).

Properties: words of 5+ characters allow 1 typo, of 9+ allow 2 (missing, extra, replaced and
swapped letters); a typo on the first letter counts as 2; phrases allow none; `disableOnWords`,
`disableOnAttributes` (exact match only in those fields, prefixes still work), `disableOnNumbers`
and `enabled: false` turn typos off; ngrams of 9+ characters allow one typo, 3-grams none; the
typo rule buckets by the total cost, where a split word costs 1 and a 2-gram 2; synonyms cost 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import MILLI_SETTINGS, Idx, assert_buckets, assert_milli_order, milli_test_set

TEXTS: list[tuple[str, str]] = [
    ("text", "the quick brown fox jumps over the lazy dog"),
    ("text", "the quick brown foxes jump over the lazy dog"),
    ("text", "the quick brown fax sends a letter to the dog"),
    ("text", "the quickest brownest fox jumps over the laziest dog"),
    ("text", "a fox doesn't quack, that crown goes to the duck."),
    ("text", "the quicker browner fox jumped over the lazier dog"),
    ("text", "the extravagant fox skyrocketed over the languorous dog"),
    ("text", "the quick brown fox jumps over the lazy"),
    ("text", "the quick brown fox jumps over the"),
    ("text", "the quick brown fox jumps over"),
    ("text", "the quick brown fox jumps"),
    ("text", "the quick brown fox"),
    ("text", "the quick brown"),
    ("text", "the quick"),
    ("text", "netwolk interconections sunflawar"),
    ("text", "network interconnections sunflawer"),
    ("text", "network interconnection sunflower"),
    ("text", "network interconnection sun flower"),
    ("text", "network interconnection sunflowering"),
    ("text", "network interconnection sun flowering"),
    ("text", "network interconnection sunflowar"),
    ("text", "the fast brownish fox jumps over the lackadaisical dog"),
    ("text", "the quick brown fox jumps over the lackadaisical dog"),
    ("text", "the quivk brown fox jumps over the lazy dog"),
    ("tolerant_text", "the quick brown fox jumps over the lazy dog"),
    ("tolerant_text", "the quivk brown fox jumps over the lazy dog"),
]
DOCS = [{"id": i, attr: text} for i, (attr, text) in enumerate(TEXTS)]
QUERY = "the quick brown fox jumps over the lazy dog"
BASE = {"searchableAttributes": ["text"], "rankingRules": ["words"]}


@pytest.fixture(scope="module")
def index(make_index: Callable[..., Idx]) -> Idx:
    return make_index(DOCS, BASE)


def typo_detail(hit: dict[str, Any]) -> tuple[int, int]:
    d = hit["_rankingScoreDetails"]["typo"]
    return d["typoCount"], d["maxTypoCount"]


def test_default_typo_budgets(index: Idx) -> None:
    assert sorted(index.ids(QUERY, matchingStrategy="all")) == [0, 23]  # quivk: one typo on "quick"
    # replaced letter (quack -> quick); "quivk" would be 2 typos from "quack"
    assert index.ids("the quack brown fox jumps over the lazy dog", matchingStrategy="all") == [0]
    # missing letter (quicest), extra letter (jummps); 7- and 6-letter words
    assert index.ids("the quicest brownest fox jummps over the laziest dog", matchingStrategy="all") == [3]


def test_short_words_and_first_letter(index: Idx) -> None:
    # "lazu" (4 letters) allows no typo; "luzy" too
    assert index.ids("the quick brown fox jumps over the lazu dog", matchingStrategy="all") == []
    # one-typo budget: the first letter must match ("wuick" finds nothing)
    assert index.ids("wuick", matchingStrategy="all") == []
    # a swap is one typo; "quivk" is two away from "qiuck"
    assert sorted(index.ids("qiuck ", matchingStrategy="all")) == [0, 1, 2, 7, 8, 9, 10, 11, 12, 13, 22]


def test_phrases_allow_no_typo(index: Idx) -> None:
    assert index.ids('the "quick brewn" fox jumps over the lazy dog', matchingStrategy="all") == []


def test_typos_disabled(make_index: Callable[..., Idx]) -> None:
    idx = make_index(DOCS, {**BASE, "typoTolerance": {"enabled": False}})
    assert idx.ids(QUERY, matchingStrategy="all") == [0]


def test_disable_on_words(make_index: Callable[..., Idx]) -> None:
    idx = make_index(DOCS, {**BASE, "typoTolerance": {"disableOnWords": ["quick", "quack", "sunflower"]}})
    assert idx.ids(QUERY, matchingStrategy="all") == [0]  # no quivk
    assert idx.ids("the quack brown fox jumps over the lazy dog", matchingStrategy="all") == []
    # other words keep their typos
    assert idx.ids("the quicest brownest fox jummps over the laziest dog", matchingStrategy="all") == [3]
    # an exact word still matches as a prefix and as a split word, never with a typo (sunflowar)
    assert sorted(idx.ids("network interconnection sunflower", matchingStrategy="all")) == [16, 17, 18]


def test_disable_on_attributes(make_index: Callable[..., Idx]) -> None:
    idx = make_index(
        DOCS,
        {
            "searchableAttributes": ["text", "tolerant_text"],
            "rankingRules": ["words"],
            "typoTolerance": {"disableOnAttributes": ["text"], "disableOnWords": ["quivk"]},
        },
    )
    # an exact query matches both kinds of fields; the typo "quivk" only in the tolerant one
    assert sorted(idx.ids(QUERY, matchingStrategy="all")) == [0, 24, 25]
    assert sorted(idx.ids("the quidk brown fox jumps over the lazy dog", matchingStrategy="all")) == [24, 25]
    # "quivk" is an exact word: no typo, found as itself in both fields
    assert sorted(idx.ids("the quivk brown fox jumps over the lazy dog", matchingStrategy="all")) == [23, 25]
    assert idx.ids("the quicest brownest fox jummps over the laziest dog", matchingStrategy="all") == []


def test_prefix_search_on_exact_attribute(make_index: Callable[..., Idx]) -> None:
    docs = [{"id": i, "title": "Hello many", "content": "Goodbye many"} for i in range(20)]
    idx = make_index(
        docs,
        {
            "searchableAttributes": ["title", "content"],
            "rankingRules": ["words"],
            "typoTolerance": {"disableOnAttributes": ["title"], "disableOnNumbers": True},
        },
    )
    assert len(idx.ids("ma")) == 20
    assert len(idx.ids("hel")) == 20  # prefixes work in exact attributes


def test_disable_on_numbers(make_index: Callable[..., Idx]) -> None:
    docs = [
        {"id": 0, "n": "123456"},
        {"id": 1, "n": "123457"},
        {"id": 2, "n": "abcdef"},
        {"id": 3, "n": "abcdeg"},
    ]
    on = make_index(docs, {"rankingRules": ["words"], "typoTolerance": {"disableOnNumbers": True}})
    assert on.ids("123456 ") == [0]
    assert sorted(on.ids("abcdef ")) == [2, 3]  # words keep their typos
    off = make_index(docs, {"rankingRules": ["words"]})
    assert sorted(off.ids("123456 ")) == [0, 1]


def test_ngram_typos(index: Idx) -> None:
    # "extra lagant" -> 2-gram "extralagant" (11 letters: 2 - 1 = 1 typo) -> "extravagant"
    assert index.ids("the extra lagant fox skyrocketed over the languorous dog", matchingStrategy="all") == [
        6
    ]
    # a 3-gram allows no typo
    assert (
        index.ids("the ex tra lagant fox skyrocketed over the languorous dog", matchingStrategy="all") == []
    )


EXPECTED_LAST = [0, 23, 7, 8, 9, 22, 10, 11, 1, 2, 12, 13, 4, 3, 5, 6, 21]


def test_typo_rule_without_words_rule(make_index: Callable[..., Idx]) -> None:
    # milli inserts the words rule before typo: both settings give the same order
    idx = make_index(DOCS, {"searchableAttributes": ["text"], "rankingRules": ["typo"]})
    result = idx.search(QUERY)
    assert_milli_order(result["hits"], EXPECTED_LAST)
    assert all(list(h["_rankingScoreDetails"])[:2] == ["words", "typo"] for h in result["hits"])
    idx.settings({"rankingRules": ["words", "typo"]})
    assert_milli_order(idx.search(QUERY)["hits"], EXPECTED_LAST)


def test_typo_bucketing(make_index: Callable[..., Idx]) -> None:
    idx = make_index(DOCS, BASE)
    # words alone: one bucket
    assert_buckets(
        idx.buckets("network interconnection sunflower", matchingStrategy="all"), [[14, 15, 16, 17, 18, 20]]
    )
    idx.settings({"rankingRules": ["typo"]})
    result = idx.search("network interconnection sunflower", matchingStrategy="all")
    assert_milli_order(result["hits"], [16, 18, 17, 20, 15, 14])
    # milli: 0, 0, 1 (the split word "sun flower"), 1, 2, 5 out of 1 + 2 + 2
    assert [typo_detail(h) for h in result["hits"]] == [(0, 5), (0, 5), (1, 5), (1, 5), (2, 5), (5, 5)]

    result = idx.search("network interconnection sun flower", matchingStrategy="all")
    assert_milli_order(result["hits"], [17, 19, 16, 18, 20, 15])
    # the 2-gram "sunflower" costs 2; with its own typo budget of 1 the path maximum is 1 + 2 + 3
    assert [typo_detail(h) for h in result["hits"]] == [(0, 6), (0, 6), (2, 6), (2, 6), (3, 6), (4, 6)]


def test_typo_synonyms(make_index: Callable[..., Idx]) -> None:
    idx = make_index(
        DOCS,
        {
            "searchableAttributes": ["text"],
            "rankingRules": ["typo"],
            "synonyms": {"lackadaisical": ["lazy"], "fast brownish": ["quick brown"]},
        },
    )
    result = idx.search("the quick brown fox jumps over the lackadaisical dog", matchingStrategy="all")
    assert_milli_order(result["hits"], [0, 22, 23])
    assert [typo_detail(h)[0] for h in result["hits"]] == [0, 0, 1]  # a synonym costs nothing
    # the multi-word synonym hangs on the 2-gram "fastbrownish", which costs 2 typos
    result = idx.search("the fast brownish fox jumps over the lackadaisical dog", matchingStrategy="all")
    assert_milli_order(result["hits"], [21, 0, 22])
    assert [typo_detail(h)[0] for h in result["hits"]] == [0, 2, 2]


def test_typo_scores(make_index: Callable[..., Idx]) -> None:
    # score = (max + 1 - typos) / (max + 1); every word term may also be split: "the" counts 1;
    # with `all` there is no words rule, so typo is rule 0
    index = make_index(DOCS, {"searchableAttributes": ["text"], "rankingRules": ["words", "typo"]})
    result = index.search("the quack", matchingStrategy="all", attributesToRetrieve=["id"])
    details = {h["id"]: h["_rankingScoreDetails"]["typo"] for h in result["hits"]}
    assert details[4] == {"order": 0, "typoCount": 0, "maxTypoCount": 2, "score": 1.0}
    assert details[13] == {"order": 0, "typoCount": 1, "maxTypoCount": 2, "score": 2 / 3}
    assert result["hits"][0]["id"] == 4


def test_typo_settings_on_milli_test_set(make_index: Callable[..., Idx]) -> None:
    """milli `tests/search/typo_tolerance.rs`."""
    idx = make_index(milli_test_set(), {**MILLI_SETTINGS, "rankingRules": ["typo"]})
    assert len(idx.ids("zeal")) == 1
    assert idx.ids("zean") == []  # 4 letters: no typo by default
    assert len(idx.ids("zealand")) == 1
    assert idx.ids("zealemd") == []  # 2 typos on a 7-letter word
    assert len(idx.ids("antebelum")) == 1  # antebel(l)um, in "description"
    idx.settings({"typoTolerance": {"minWordSizeForTypos": {"oneTypo": 4}}})
    assert len(idx.ids("zean")) == 1
    idx.settings({"typoTolerance": {"minWordSizeForTypos": {"oneTypo": 5, "twoTypos": 7}}})
    assert len(idx.ids("zealemd")) == 1
    idx.settings({"typoTolerance": {"disableOnAttributes": ["description"]}})
    assert idx.ids("antebelum") == []


def test_disabled_word_typo(make_index: Callable[..., Idx]) -> None:
    idx = make_index(
        [{"id": 1, "data": "zealand"}, {"id": 2, "data": "zearand"}], {"rankingRules": ["words"]}
    )
    assert sorted(idx.ids("zealand")) == [1, 2]
    idx.settings({"typoTolerance": {"disableOnWords": ["zealand"]}})
    assert idx.ids("zealand") == [1]


def test_first_letter_typo_counts_two(make_index: Callable[..., Idx]) -> None:
    docs = [
        {"id": 0, "t": "interconnection"},
        {"id": 1, "t": "nterconnection"},
        {"id": 2, "t": "xnterconnection"},
        {"id": 3, "t": "xnterconection"},
        {"id": 4, "t": "intreconnection"},
    ]
    idx = make_index(docs, {"rankingRules": ["words", "typo"]})
    result = idx.search("interconnection ")
    # 15 letters: 2 typos; a wrong first letter (missing or replaced) is 2 by itself, so 3 is out
    assert [h["id"] for h in result["hits"]][:1] == [0]
    counts = {h["id"]: h["_rankingScoreDetails"]["typo"]["typoCount"] for h in result["hits"]}
    assert counts == {0: 0, 4: 1, 1: 2, 2: 2}
