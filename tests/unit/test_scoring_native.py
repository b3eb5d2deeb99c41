"""`_native.scoring.SortedWords.matches` (trie walk) must return exactly `typo.WordTable.matches`
(one DP table per word): same words, same typo counts, same order, same per-cost limit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine._native.scoring import SortedWords
from hanzo_engine._native.typo import WordTable

# A small alphabet makes shared prefixes, transpositions and near misses frequent.
WORD = st.text(alphabet="abcdeé", min_size=0, max_size=9)


@settings(max_examples=400, deadline=None)
@given(words=st.lists(WORD, max_size=80, unique=True), query=st.text(alphabet="abcdeé", min_size=1, max_size=9),
       max_typos=st.integers(0, 3), prefix=st.booleans(), limit=st.integers(1, 6))
def test_same_matches_as_the_full_scan(words: list[str], query: str, max_typos: int, prefix: bool,
                                       limit: int) -> None:
    words = sorted(words)
    expected = WordTable(words).matches(query, max_typos, prefix, limit)
    assert SortedWords(words).matches(query, max_typos, prefix, limit) == expected


def test_known_matches() -> None:
    words = sorted(["bonjour", "bonsoir", "bounjour", "bonjuor", "ponjour", "bonjourno", "b" * 70, "x"])
    table = SortedWords(words)
    # one typo: the first letter must match; swaps cost one
    assert table.matches("bonjour", 1, False) == [("bonjuor", 1), ("bounjour", 1)]
    # two typos: a different first letter costs one extra
    # prefix mode: the best prefix of the dictionary word counts (exact prefixes are the caller's)
    # (`bonjuor` starts with `bonjuo`: no typo, so not listed)
    assert table.matches("bonjuo", 1, True) == [("bonjour", 1), ("bonjourno", 1)]
    assert table.matches("bonjour", 2, False) == [("bonjourno", 2), ("bonjuor", 1), ("bonsoir", 2),
                                                  ("bounjour", 1), ("ponjour", 2)]
    assert table.matches("bonjour", 0, False) == []
    assert SortedWords([]).matches("a", 2, True) == []


def test_words_longer_than_the_dp_are_never_matched() -> None:
    long_word = "a" * 65
    assert SortedWords([long_word]).matches("a" * 64, 2, False) == []
    assert WordTable([long_word]).matches("a" * 64, 2, False) == []


# Words with digits among them, so that `skip_digits` has something to drop.
WORD_OR_NUMBER = st.one_of(WORD, st.text(alphabet="0123", min_size=1, max_size=5), st.text(alphabet="a1", max_size=4))


@settings(max_examples=400, deadline=None)
@given(words=st.lists(WORD_OR_NUMBER, max_size=80, unique=True),
       query=st.text(alphabet="abcdeé01", min_size=1, max_size=9), max_typos=st.integers(1, 3),
       prefix=st.booleans(), limit=st.integers(1, 8),
       keep=st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)),
       skip_digits=st.booleans())
def test_kept_matches_are_the_full_answer_filtered_in_order(words: list[str], query: str, max_typos: int,
                                                            prefix: bool, limit: int, keep: tuple[int, ...],
                                                            skip_digits: bool) -> None:
    """What the search's word derivation keeps (at most keep[d] words of d typos, numbers dropped when
    typos on numbers are off), done natively, is the plain answer filtered in order."""
    table = SortedWords(sorted(words))
    counts = [0] * (max_typos + 1)
    expected = []
    for word, typos in table.matches(query, max_typos, prefix, limit):
        if counts[typos] >= keep[typos] or (skip_digits and word.isdigit()):
            continue
        counts[typos] += 1
        expected.append((word, typos))
    assert table.matches(query, max_typos, prefix, limit, keep, skip_digits) == expected
