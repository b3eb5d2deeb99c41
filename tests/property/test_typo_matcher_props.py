"""`_native.typo_matcher.SortedWords.matches` (the typo matcher: one trie walk over the sorted dictionary) must
return exactly `full_scan_matches` below (one whole DP table per word): same words, same typo counts, same
order, same per-cost limit.

The rule (Meilisearch's typo tolerance): distance = optimal-string-alignment Damerau-Levenshtein (a swap of
two adjacent characters is one typo); a differing first character costs one extra typo, so with a budget of
1 the first letter must match; in prefix mode (the last query word) the cost is the best over every prefix
of the dictionary word; only matches of at least one typo are listed (exact and plain-prefix ones are the
caller's); words or queries longer than the native DP's 64 characters never match.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine._native.typo_matcher import SortedWords

MAX_LEN = 64  # the native DP's bound


def _prefix_distances(q: str, w: str) -> list[int]:
    """The OSA distance of `q` to each prefix of `w`, shortest first (len(w) + 1 values)."""
    n = len(q)
    prev2 = prev = list(range(n + 1))
    out = [prev[n]]
    for j in range(1, len(w) + 1):
        cur = [j] + [0] * n
        for i in range(1, n + 1):
            cur[i] = min(prev[i] + 1, cur[i - 1] + 1, prev[i - 1] + (q[i - 1] != w[j - 1]))
            if i > 1 and j > 1 and q[i - 1] == w[j - 2] and q[i - 2] == w[j - 1]:
                cur[i] = min(cur[i], prev2[i - 2] + 1)
        out.append(cur[n])
        prev2, prev = prev, cur
    return out


def full_scan_matches(
    words: list[str], query: str, max_typos: int, prefix: bool, limit: int = 1000
) -> list[tuple[str, int]]:
    """(word, typos) for every word within `max_typos` of `query` (typos >= 1), at most `limit` per typo
    count, in the order of `words`."""
    if not query or max_typos <= 0 or len(query) > MAX_LEN:
        return []
    out: list[tuple[str, int]] = []
    per_cost = [0] * (max_typos + 1)
    for word in words:
        if len(word) > MAX_LEN:
            continue
        extra = 0 if word[:1] == query[:1] else 1
        distances = _prefix_distances(query, word)
        typos = (min(distances) if prefix else distances[-1]) + extra
        if 1 <= typos <= max_typos and per_cost[typos] < limit:
            per_cost[typos] += 1
            out.append((word, typos))
    return out


# A small alphabet makes shared prefixes, transpositions and near misses frequent.
WORD = st.text(alphabet="abcdeé", min_size=0, max_size=9)


@settings(max_examples=400, deadline=None)
@given(
    words=st.lists(WORD, max_size=80, unique=True),
    query=st.text(alphabet="abcdeé", min_size=1, max_size=9),
    max_typos=st.integers(0, 3),
    prefix=st.booleans(),
    limit=st.integers(1, 6),
)
def test_same_matches_as_the_full_scan(
    words: list[str], query: str, max_typos: int, prefix: bool, limit: int
) -> None:
    words = sorted(words)
    expected = full_scan_matches(words, query, max_typos, prefix, limit)
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
    assert table.matches("bonjour", 2, False) == [
        ("bonjourno", 2),
        ("bonjuor", 1),
        ("bonsoir", 2),
        ("bounjour", 1),
        ("ponjour", 2),
    ]
    assert table.matches("bonjour", 0, False) == []
    assert SortedWords([]).matches("a", 2, True) == []


def test_words_longer_than_the_dp_are_never_matched() -> None:
    long_word = "a" * 65
    assert SortedWords([long_word]).matches("a" * 64, 2, False) == []
    assert full_scan_matches([long_word], "a" * 64, 2, False) == []


# Words with digits among them, so that `skip_digits` has something to drop.
WORD_OR_NUMBER = st.one_of(
    WORD, st.text(alphabet="0123", min_size=1, max_size=5), st.text(alphabet="a1", max_size=4)
)


@settings(max_examples=400, deadline=None)
@given(
    words=st.lists(WORD_OR_NUMBER, max_size=80, unique=True),
    query=st.text(alphabet="abcdeé01", min_size=1, max_size=9),
    max_typos=st.integers(1, 3),
    prefix=st.booleans(),
    limit=st.integers(1, 8),
    keep=st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)),
    skip_digits=st.booleans(),
)
def test_kept_matches_are_the_full_answer_filtered_in_order(
    words: list[str],
    query: str,
    max_typos: int,
    prefix: bool,
    limit: int,
    keep: tuple[int, ...],
    skip_digits: bool,
) -> None:
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
