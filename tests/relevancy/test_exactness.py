"""The `exactness` rule (milli `search/new/tests/exactness.rs`).

Documents with a field equal to the (remaining) query come first (`exactMatch`), then those with a
field starting with it (`matchesStart`), then by the number of query terms found as their exact
word (no typo, no prefix). It needs the query to have no hole: after the words rule dropped terms,
what remains is compared. `words` is inserted before it when missing or placed after it; the
rules after it only see the exact word of the terms it matched exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .conftest import Idx, assert_milli_order

QUERY = "the quick brown fox jumps over the lazy dog"
WORDS = QUERY.split()
SETTINGS = {"searchableAttributes": ["text"], "rankingRules": ["exactness"]}


def docs(texts: list[str]) -> list[dict[str, Any]]:
    return [{"id": i, "text": t} for i, t in enumerate(texts)]


def exactness(hit: dict[str, Any]) -> dict[str, Any]:
    detail: dict[str, Any] = hit["_rankingScoreDetails"]["exactness"]
    return detail


def test_simple_ordered(make_index: Callable[..., Idx]) -> None:
    idx = make_index(docs([""] + [" ".join(WORDS[:n]) for n in range(1, 10)]), SETTINGS)
    result = idx.search(QUERY)
    assert_milli_order(result["hits"], [9, 8, 7, 6, 5, 4, 3, 2, 1])
    details = {h["id"]: exactness(h) for h in result["hits"]}
    assert details[9] == {"order": 1, "matchType": "exactMatch", "score": 1.0}
    # 6 ("... jumps over") keeps 7 terms (the second "the" is in it) but has no 7th word
    assert details[6] == {
        "order": 1,
        "matchType": "noExactMatch",
        "matchingWords": 7,
        "maxMatchingWords": 7,
        "score": 8 / 24,
    }
    assert result["hits"][0]["_rankingScore"] == 1.0


def test_simple_reversed(make_index: Callable[..., Idx]) -> None:
    idx = make_index(docs([""] + [" ".join(WORDS[-n:]) for n in range(1, 10)]), SETTINGS)
    result = idx.search(QUERY)
    # docs without "the" are not returned (the first term is never dropped); 3 starts with "the"
    assert_milli_order(result["hits"], [9, 8, 3, 4, 5, 6, 7])
    types = {h["id"]: exactness(h)["matchType"] for h in result["hits"]}
    assert types == {
        9: "exactMatch",
        8: "noExactMatch",
        3: "matchesStart",
        4: "noExactMatch",
        5: "noExactMatch",
        6: "noExactMatch",
        7: "noExactMatch",
    }


def test_simple_random(make_index: Callable[..., Idx]) -> None:
    texts = [
        "",
        "over",
        "jump dog",
        "brown the lazy",
        "jump dog quick the",
        "fox the lazy dog brown",
        "jump fox quick lazy the dog",
        "the dog brown over jumps quick lazy",
        "the jumps dog quick over brown lazy fox",
    ]
    idx = make_index(docs(texts), SETTINGS)
    assert_milli_order(idx.search(QUERY)["hits"], [8, 7, 4, 6, 3, 5])


STARTS_WITH = [
    "what a lovely view from this balcony, I love it",
    "this balcony is overlooking the sea",
    "this balcony",
    "over looking the sea is a beautiful balcony",
    "a beautiful balcony is overlooking the sea",
    "overlooking the sea is a beautiful balcony, I love it",
    "overlooking the sea is a beautiful balcony",
    "overlooking",
]


def test_attribute_starts_with(make_index: Callable[..., Idx]) -> None:
    idx = make_index(docs(STARTS_WITH), SETTINGS)
    result = idx.search("this balcony")
    assert_milli_order(result["hits"], [2, 1, 0])
    assert [exactness(h)["matchType"] for h in result["hits"]] == [
        "exactMatch",
        "matchesStart",
        "noExactMatch",
    ]
    assert [exactness(h)["score"] for h in result["hits"]] == [1.0, 2 / 3, fold_no_exact(2, 2)]

    assert_milli_order(idx.search('"overlooking the sea" is a beautiful balcony')["hits"], [6, 5, 4, 1])
    # 3 has "over looking": the split word of "overlooking" (one typo, not exact)
    result = idx.search("overlooking the sea is a beautiful balcony")
    assert_milli_order(result["hits"], [6, 5, 4, 3, 1, 7])
    assert [exactness(h).get("matchingWords") for h in result["hits"]][2:4] == [7, 6]


def fold_no_exact(matching: int, maximum: int) -> float:
    # milli: Rank::global_score([NoExactMatch (1/3), ExactWords ((m + 1) / (M + 1))])
    return (matching + 1) / (3 * (maximum + 1))


def test_all_candidates_with_typo(make_index: Callable[..., Idx]) -> None:
    idx = make_index(docs(STARTS_WITH), SETTINGS)
    # "overlocking" is not an indexed word: no term 0 to compare, so no attribute can match
    result = idx.search("overlocking the sea is a beautiful balcony")
    assert_milli_order(result["hits"], [4, 5, 6, 1, 7])
    assert {exactness(h)["matchType"] for h in result["hits"]} == {"noExactMatch"}


TYPOS = [
    "",
    "the",
    "the quack",
    "the quack briwn",
    "the quack briwn fox",
    "the quack briwn fox jlmps",
    "the quack briwn fox jlmps over",
    "the quack briwn fox jlmps over the",
    "the quack briwn fox jlmps over the lazy",
    "the quack briwn fox jlmps over the lazy dog",
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
]
AFTER_WORDS = [19, 9, 18, 8, 17, 16, 6, 7, 15, 5, 14, 4, 13, 3, 12, 2, 1, 11]


def test_exactness_after_words(make_index: Callable[..., Idx]) -> None:
    idx = make_index(docs(TYPOS), {"searchableAttributes": ["text"], "rankingRules": ["words", "exactness"]})
    assert_milli_order(idx.search(QUERY)["hits"], AFTER_WORDS)
    # [exactness, words] is the same pipeline: words is inserted before exactness
    idx.settings({"rankingRules": ["exactness", "words"]})
    result = idx.search(QUERY)
    assert_milli_order(result["hits"], AFTER_WORDS)
    assert list(result["hits"][0]["_rankingScoreDetails"])[:2] == ["words", "exactness"]


def test_proximity_after_exactness(make_index: Callable[..., Idx]) -> None:
    texts = [
        "lazy jumps dog brown quick the over fox the",
        "the quick brown fox jumps over the very lazy dog",
        "the quick brown fox jumps over the lazy dog",
        "dog brown quick the over fox the lazy",
        "the quick brown fox over the very lazy dog",
        "the quick brown fox over the lazy dog",
        "brown quick the over fox",
        "the very quick brown fox over",
        "the quick brown fox over",
    ]
    rules = {"searchableAttributes": ["text"], "rankingRules": ["exactness", "words", "proximity"]}
    idx = make_index(docs(texts), rules)
    assert_milli_order(idx.search(QUERY)["hits"], [2, 1, 0, 4, 5, 8, 7, 3, 6])

    texts = [
        "lazy jumps dog brown quick the over fox the",
        "lazy jumps dog brown quick the over fox the. quack briwn jlmps",
        "lazy jumps dog brown quick the over fox the. quack briwn jlmps overt",
    ]
    idx = make_index(docs(texts), rules)
    assert_milli_order(idx.search(QUERY)["hits"], [0, 1, 2])


PREFIX = [
    "expraordinarily quick brown fox",
    "extraordinarily quick brown fox",
    "extra quick brown fox",
    "expraordinarily quack brown fox",
    "expraordinapily quick brown fox",
]


def test_exactness_then_typo_prefers_exact_words(make_index: Callable[..., Idx]) -> None:
    idx = make_index(
        docs(PREFIX), {"searchableAttributes": ["text"], "rankingRules": ["exactness", "words", "typo"]}
    )
    # "extra" is a prefix: "extra" itself is exact, "extraordinarily" a prefix, "expraor..." a typo
    assert_milli_order(idx.search("quick brown fox extra")["hits"], [2, 1, 0, 4, 3])


def test_typo_then_exactness(make_index: Callable[..., Idx]) -> None:
    idx = make_index(
        docs(PREFIX), {"searchableAttributes": ["text"], "rankingRules": ["words", "typo", "exactness"]}
    )
    result = idx.search("extraordinarily quick brown fox")
    assert_milli_order(result["hits"], [1, 0, 4, 3])
    assert [h["_rankingScoreDetails"]["typo"]["typoCount"] for h in result["hits"]] == [0, 1, 2, 2]
