"""The next-word key bits (`hz_next_word_bits`) depend on a word's first two bytes only, so the
expansions of a prefix of two bytes or more share one key and those of a one-byte prefix at most 8:
the adjacency tier of a query whose last word is a prefix reads that few keys (`native_prefilter.Prefilter.adjacent`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hanzo_engine._native.indexing import next_word_bits


@given(
    prefix=st.binary(min_size=2, max_size=4), tails=st.lists(st.binary(max_size=8), min_size=1, max_size=20)
)
def test_words_sharing_two_bytes_share_their_bits(prefix: bytes, tails: list[bytes]) -> None:
    assert len({next_word_bits(prefix + tail) for tail in tails} | {next_word_bits(prefix)}) == 1


@given(first=st.binary(min_size=1, max_size=1), words=st.lists(st.binary(max_size=8), max_size=300))
def test_a_one_byte_prefix_spans_at_most_eight_keys(first: bytes, words: list[bytes]) -> None:
    bits = {next_word_bits(first + w) for w in words} | {next_word_bits(first)}
    assert len(bits) <= 8 and all(0 <= b < 64 for b in bits)


def test_letters_spread_over_the_keys() -> None:
    # two-letter prefixes of lower-case words use most of the 64 keys (the keys stay selective)
    letters = "abcdefghijklmnopqrstuvwxyz"
    assert len({next_word_bits(f"{a}{b}".encode()) for a in letters for b in letters}) == 64
