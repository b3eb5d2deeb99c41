"""Property tests of the native tokenizer: spans, order, positions, and normalization against the
Python reference model that generated its tables."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from tools import gentables

from hanzo_engine._native import tokenizer as native
from hanzo_engine.engine.tokenizer import Tokenizer

# Characters the tokenizer treats specially, so random text hits every branch often.
SPECIAL = (
    " .,;:!?'’\"()-_\n\t\x00\x01+`"  # separators, controls
    "AaÉéeÇçŒœÆæßİıĳǅ\u0301\u0308\u0306"  # Latin, marks
    "ΑαΣσςΆЁёЙйИи"  # Greek, Cyrillic
    "東京年タワーがカ\u3099ｶﾞ。、「」々"  # CJK
    "한국어\u1100\u1161\u11a8ㄱ"  # Hangul (syllables, conjoining and compatibility jamo)
    "ภาษาไทยง่ายน้ำเ"  # Thai
    "0123456789½①ﬁＡ"  # digits and compatibility characters
)
interesting = st.text(alphabet=st.sampled_from(SPECIAL), max_size=60)
any_text = st.one_of(
    st.text(max_size=80),
    interesting,
    st.lists(
        st.sampled_from(
            ["Hello", "world", "32.3", "C++", "J. R. R.", "東京", "ガ", "ไทย", " ", ". ", ", ", "\u0301", "é"]
        ),
        max_size=12,
    ).map("".join),
)

pattern = st.text(alphabet=st.sampled_from("ab.- |+東é"), min_size=1, max_size=3)
tokenizers = st.builds(
    lambda seps, non_seps, dictionary, stop: Tokenizer(
        separator_tokens=seps, non_separator_tokens=non_seps, dictionary=dictionary, stop_words=stop
    ),
    st.lists(pattern, max_size=3),
    st.lists(pattern, max_size=3),
    st.lists(pattern, max_size=3),
    st.lists(st.sampled_from(["a", "the", "東", "É"]), max_size=2),
)
DEFAULT = Tokenizer()


def check_spans(text: str, tokenizer: Tokenizer) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    end = 0
    for token in tokenizer.tokenize(text):
        assert token.length > 0
        assert end <= token.start and token.end <= len(raw)  # ordered, disjoint, inside the text
        raw[: token.start].decode()  # both ends on UTF-8 boundaries
        raw[token.start : token.end].decode()
        end = token.end


@settings(max_examples=400, deadline=None)
@given(any_text)
def test_spans_lie_within_the_text_on_boundaries(text: str) -> None:
    check_spans(text, DEFAULT)


@settings(max_examples=200, deadline=None)
@given(any_text, tokenizers)
def test_spans_with_random_settings(text: str, tokenizer: Tokenizer) -> None:
    check_spans(text, tokenizer)
    words = [t for t in tokenizer.tokenize(text) if not t.is_separator]
    assert all(t.word and native.normalize(t.word) == t.word for t in words)


@settings(max_examples=400, deadline=None)
@given(any_text)
def test_words_are_their_span_normalized_and_gaps_normalize_to_nothing(text: str) -> None:
    raw = text.encode()
    end = 0
    for token in DEFAULT.tokenize(text):
        original = raw[token.start : token.end].decode()
        if not token.is_separator:
            assert token.word == native.normalize(original) != ""
        # What lies between tokens is only what normalized to nothing (controls, lone marks).
        assert native.normalize(raw[end : token.start].decode()) == ""
        end = token.end
    assert native.normalize(raw[end:].decode()) == ""


@settings(max_examples=500, deadline=None)
@given(any_text)
def test_normalization_is_idempotent_and_matches_the_reference(text: str) -> None:
    once = native.normalize(text)
    assert native.normalize(once) == once
    assert once == gentables.reference_normalize(text)


@settings(max_examples=300, deadline=None)
@given(any_text, st.integers(0, 40))
def test_positions_and_index_mode_agree(text: str, max_positions: int) -> None:
    tokenizer = Tokenizer(stop_words=["the", "a"])
    words = [t for t in tokenizer.tokenize(text) if not t.is_separator]
    positions = [t.position for t in words]
    assert all(later - earlier in (1, 8) for earlier, later in itertools.pairwise(positions))
    assert not positions or positions[0] == 0
    expected = [
        (t.word, t.position)
        for t in words
        if not t.is_stop_word and len(t.word.encode()) <= native.MAX_WORD_BYTES
    ]
    assert tokenizer.word_positions(text) == expected
    assert tokenizer.word_positions(text, max_positions) == [(w, p) for w, p in expected if p < max_positions]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200))
def test_never_crashes_on_arbitrary_unicode(text: str) -> None:
    tokens = DEFAULT.tokenize(text + "\x00" + text)
    assert DEFAULT.tokenize(text + "\x00" + text) == tokens
    DEFAULT.word_positions(text)
    native.char_map(text)
