"""Tokenizer behaviour against charabia's own examples and Meilisearch's settings semantics."""

from __future__ import annotations

import unicodedata

import pytest
from tools import gentables

from hanzo_engine._native import tokenizer as native
from hanzo_engine.engine.tokenizer import (
    DEFAULT_SEPARATORS,
    HARD_SEPARATORS,
    Tokenizer,
    normalize,
)

CHARABIA_TEXT = "The quick (\"brown\") fox can't jump 32.3 feet, right? Brr, it's 29.3°F!"


def spans(text: str, tokenizer: Tokenizer | None = None) -> list[str]:
    """The original text of every token, from its byte span."""
    raw = text.encode()
    return [raw[t.start : t.end].decode() for t in (tokenizer or Tokenizer()).tokenize(text)]


def words(text: str, tokenizer: Tokenizer | None = None) -> list[str]:
    return (tokenizer or Tokenizer()).words(text)


class TestCharabiaLatinExample:
    def test_segments_like_charabia(self) -> None:
        # charabia's LatinSegmenter test: the segmented text, separators included.
        assert spans(CHARABIA_TEXT) == [
            "The",
            " ",
            "quick",
            " ",
            "(",
            '"',
            "brown",
            '"',
            ")",
            " ",
            "fox",
            " ",
            "can",
            "'",
            "t",
            " ",
            "jump",
            " ",
            "32",
            ".",
            "3",
            " ",
            "feet",
            ", ",
            "right",
            "?",
            " ",
            "Brr",
            ", ",
            "it",
            "'",
            "s",
            " ",
            "29",
            ".",
            "3°F",
            "!",
        ]

    def test_normalized_words(self) -> None:
        assert words(CHARABIA_TEXT) == [
            "the",
            "quick",
            "brown",
            "fox",
            "can",
            "t",
            "jump",
            "32",
            "3",
            "feet",
            "right",
            "brr",
            "it",
            "s",
            "29",
            "3°f",
        ]

    def test_separator_kinds(self) -> None:
        tokens = Tokenizer().tokenize(CHARABIA_TEXT)
        hard = [t.word for t in tokens if t.is_separator and t.hard]
        soft = {t.word for t in tokens if t.is_separator and not t.hard}
        # ". " and ", " are hard, a lone "." (as in 32.3) is soft, like charabia's context separators.
        assert hard == [", ", "?", ", ", "!"]
        assert soft == {" ", "(", '"', ")", "'", "."}

    def test_positions_follow_milli(self) -> None:
        positions = {t.word: t.position for t in Tokenizer().tokenize(CHARABIA_TEXT) if not t.is_separator}
        assert positions["the"] == 0
        assert positions["quick"] == 1
        assert positions["feet"] == 9
        assert positions["right"] == 17  # ", " is hard: +8
        assert positions["brr"] == 25  # "?" then " ": the soft space does not weaken the hard "?"
        assert positions["it"] == 33
        assert all(t.position == -1 for t in Tokenizer().tokenize(CHARABIA_TEXT) if t.is_separator)

    def test_camel_and_snake_case(self) -> None:
        # Meilisearch builds charabia without the camelCase feature; `_` and `-` are separators.
        assert words("camelCase kebab-case snake_case") == ["camelcase", "kebab", "case", "snake", "case"]


class TestNormalization:
    @pytest.mark.parametrize(
        ("word", "expected"),
        [
            ("Éléphant", "elephant"),
            ("ÉLÉPHANT", "elephant"),
            ("E\u0301le\u0301phant", "elephant"),  # decomposed input folds the same way
            ("Ça", "ca"),
            ("naïve", "naive"),
            ("Ångström", "angstrom"),
            ("Œuvre", "oeuvre"),
            ("Æsir", "aesir"),
            ("Straße", "straße"),
            ("İstanbul", "istanbul"),
            ("ﬁnal", "final"),
            ("Ⅻ", "xii"),
            ("①", "1"),
            ("Ｈｅｌｌｏ", "hello"),  # fullwidth
            ("Αγαπητός", "αγαπητοσ"),  # charabia's Greek example: accents, case, final sigma
            ("ΣΟΦΟΣ", "σοφοσ"),
            ("Ёлка", "елка"),
            ("е\u0308лка", "елка"),
            ("Việt Nam", "viet nam"),
            ("can’t", "can't"),
            ("أحمد", "احمد"),
            ("الحمــــــد", "الحمد"),  # tatweel removed
            ("ｶﾀｶﾅ", normalize("かたかな")),  # halfwidth katakana -> hiragana
            ("カタカナ", "かたかな"),
            ("a\x01b\x7f", "ab"),  # control characters removed
            ("  padded\t", "padded"),
        ],
    )
    def test_examples(self, word: str, expected: str) -> None:
        assert normalize(word) == expected

    def test_cyrillic_short_i_keeps_its_breve(self) -> None:
        # charabia does not strip Cyrillic diacritics: й and и are different letters.
        assert normalize("й") != normalize("и")
        assert normalize("Й") == normalize("й") == normalize("и\u0306")

    def test_kana_voicing_is_kept(self) -> None:
        assert normalize("ガ") == normalize("が") == normalize("ｶﾞ")
        assert normalize("ガ") != normalize("カ")

    def test_thai_marks_stripped(self) -> None:
        assert normalize("น้ำ") == "นา"  # charabia: ำ decomposes, tone and nikhahit marks go

    def test_idempotent_on_examples(self) -> None:
        for word in ["Éléphant", "ガ", "й", "Ёлка", "½", "ﬃ", "Ǆ", "ΐ", "ᾷ", "ǅ", "Ⓐ", "㌀"]:
            once = normalize(word)
            assert normalize(once) == once

    def test_char_map(self) -> None:
        assert native.char_map("Éa") == [(2, 1), (1, 1)]
        assert Tokenizer.original_prefix_length("Éléphant", 3) == len("Élé".encode())
        assert Tokenizer.original_prefix_length("Éléphant", 0) == 0
        assert Tokenizer.original_prefix_length("ﬁne", 1) == 3  # a ligature is highlighted whole


class TestScripts:
    def test_cjk_one_token_per_character(self) -> None:
        text = "東京タワーで2020年に"
        assert spans(text) == ["東", "京", "タ", "ワー", "で", "2020", "年", "に"]
        tokens = Tokenizer().tokenize(text)
        assert [t.position for t in tokens] == list(range(8))
        assert [t.word for t in tokens][:4] == ["東", "京", "た", "わー"]

    def test_chinese_punctuation(self) -> None:
        tokens = Tokenizer().tokenize("生而自由，在尊严和权利上一律平等。")
        assert [t.word for t in tokens if not t.is_separator][:4] == ["生", "而", "自", "由"]
        assert any(t.is_separator and t.hard and t.word == "," for t in tokens)  # fullwidth comma, folded
        assert tokens[-1].is_separator and tokens[-1].hard

    def test_hangul_one_token_per_syllable(self) -> None:
        assert spans("한국어를 배워요") == ["한", "국", "어", "를", " ", "배", "워", "요"]

    def test_thai_clusters(self) -> None:
        clusters = spans("ภาษาไทยง่าย")
        assert "".join(clusters) == "ภาษาไทยง่าย"
        assert "ไท" in clusters  # a prefix vowel goes with the next consonant
        assert "ง่า" in clusters  # tone marks and post vowels stay with their consonant
        assert spans("ราคา 123 บาท") == ["รา", "คา", " ", "123", " ", "บา", "ท"]

    def test_arabic_article_is_split(self) -> None:
        # charabia's Arabic segmenter test sentence.
        text = "السلام عليكم، كيف حالكم؟ (أتمنى أن تكونوا بأفضل ٱلأحوال)"
        assert spans(text) == [
            "ال",
            "سلام",
            " ",
            "عليكم",
            "،",
            " ",
            "كيف",
            " ",
            "حالكم",
            "؟",
            " ",
            "(",
            "أتمنى",
            " ",
            "أن",
            " ",
            "تكونوا",
            " ",
            "بأفضل",
            " ",
            "ٱل",
            "أحوال",
            ")",
        ]
        assert words(text) == [
            "ال",
            "سلام",
            "عليكم",
            "كيف",
            "حالكم",
            "اتمني",
            "ان",
            "تكونوا",
            "بافضل",
            "ال",
            "احوال",
        ]

    def test_script_changes_split_words(self) -> None:
        assert spans("abcабв") == ["abc", "абв"]
        assert spans("abc3東") == ["abc3", "東"]
        assert spans("Windows10系统") == ["Windows10", "系", "统"]

    def test_numbers_stay_whole(self) -> None:
        assert words("1000000 3°F $100") == ["1000000", "3°f", "$100"]
        # "." and "," are separators in charabia: decimals and thousands are cut there.
        assert words("3.14 1,000") == ["3", "14", "1", "000"]


class TestSettings:
    def test_separator_tokens(self) -> None:
        assert "|" not in DEFAULT_SEPARATORS
        assert words("a|b") == ["a|b"]
        tokenizer = Tokenizer(separator_tokens=["|", "&&"])
        assert words("a|b&&c", tokenizer) == ["a", "b", "c"]
        assert "|" in tokenizer.separators

    def test_non_separator_tokens(self) -> None:
        tokenizer = Tokenizer(non_separator_tokens=[".", "-", "#"])
        assert words("3.14 e-mail C#", tokenizer) == ["3.14", "e-mail", "c#"]
        assert words("end. Next", tokenizer) == ["end", "next"]  # ". " is still a separator
        assert "-" not in tokenizer.separators

    def test_dictionary(self) -> None:
        # charabia's words_dict example.
        tokenizer = Tokenizer(dictionary=["J. R. R.", "Dr.", "J. K."])
        text = "J. R. R. Tolkien. J. K. Rowling. Dr. Seuss"
        assert spans(text, tokenizer) == [
            "J. R. R.",
            " ",
            "Tolkien",
            ". ",
            "J. K.",
            " ",
            "Rowling",
            ". ",
            "Dr.",
            " ",
            "Seuss",
        ]
        assert words(text, tokenizer) == ["j. r. r.", "tolkien", "j. k.", "rowling", "dr.", "seuss"]

    def test_dictionary_word_with_separators_inside(self) -> None:
        assert words("I love C++ and C#") == ["i", "love", "c", "and", "c"]
        tokenizer = Tokenizer(dictionary=["C++", "C#"])
        assert words("I love C++ and C#", tokenizer) == ["i", "love", "c++", "and", "c#"]
        assert words("c++", tokenizer) == ["c"]  # matched on the original text, case-sensitively

    def test_dictionary_entry_that_is_a_separator_stays_one(self) -> None:
        tokens = Tokenizer(dictionary=["&"]).tokenize("a&b")
        assert [(t.word, t.is_separator) for t in tokens] == [("a", False), ("&", True), ("b", False)]

    def test_longest_pattern_wins(self) -> None:
        tokenizer = Tokenizer(dictionary=["New York", "New York City"])
        assert words("I love New York City", tokenizer) == ["i", "love", "new york city"]

    def test_stop_words_flagged_and_positioned(self) -> None:
        tokenizer = Tokenizer(stop_words=["the", "A"])
        tokens = [t for t in tokenizer.tokenize("The cat ate a fish") if not t.is_separator]
        assert [(t.word, t.is_stop_word, t.position) for t in tokens] == [
            ("the", True, 0),
            ("cat", False, 1),
            ("ate", False, 2),
            ("a", True, 3),
            ("fish", False, 4),
        ]
        # milli does not index stop words but keeps counting positions over them.
        assert tokenizer.word_positions("The cat ate a fish") == [("cat", 1), ("ate", 2), ("fish", 4)]
        assert tokenizer.stop_words == frozenset({"the", "a"})
        assert tokenizer.is_stop_word("the")

    def test_from_settings(self) -> None:
        settings = {
            "separatorTokens": ["|"],
            "nonSeparatorTokens": ["-"],
            "dictionary": ["C++"],
            "stopWords": ["the"],
            "synonyms": {},
        }
        first = Tokenizer.from_settings(settings)
        assert Tokenizer.from_settings(dict(settings)) is first  # compiled once
        assert first == Tokenizer(
            separator_tokens=["|"], non_separator_tokens=["-"], dictionary=["C++"], stop_words=["the"]
        )
        assert words("the C++ a|b e-mail", first) == ["the", "c++", "a", "b", "e-mail"]
        assert Tokenizer.from_settings({}) == Tokenizer()
        assert Tokenizer.from_settings({"stopWords": None}).stop_words == frozenset()


class TestOffsetsAndPositions:
    def test_byte_offsets(self) -> None:
        text = "Éléphant café 東京"
        tokens = Tokenizer().tokenize(text)
        assert [(t.start, t.length) for t in tokens] == [(0, 10), (10, 1), (11, 5), (16, 1), (17, 3), (20, 3)]

    def test_newline_is_a_soft_separator(self) -> None:
        # In charabia's current list "\n" is not a context (hard) separator.
        assert Tokenizer().word_positions("one\ntwo") == [("one", 0), ("two", 1)]
        assert Tokenizer().word_positions("one.\ntwo; three") == [("one", 0), ("two", 1), ("three", 9)]

    def test_leading_separators_do_not_count(self) -> None:
        assert Tokenizer().word_positions("... Hello!  World") == [("hello", 0), ("world", 8)]

    def test_max_positions(self) -> None:
        text = " ".join(f"w{i}" for i in range(100))
        assert [p for _, p in Tokenizer().word_positions(text, 10)] == list(range(10))
        many = "x " * 70000
        assert len(Tokenizer().word_positions(many)) == native.MAX_POSITIONS
        assert len(Tokenizer().tokenize("x " * 70)) == 140  # tokenize is never capped

    def test_long_words_take_a_position_but_are_not_indexed(self) -> None:
        long_word = "a" * 251
        assert Tokenizer().word_positions(f"x {long_word} y") == [("x", 0), ("y", 2)]
        assert Tokenizer().word_positions(f"x {'b' * 250} y")[1] == ("b" * 250, 1)

    def test_empty_words_take_no_position(self) -> None:
        assert Tokenizer().word_positions("a \x01 b") == [("a", 0), ("b", 1)]

    def test_empty_and_separator_only(self) -> None:
        assert Tokenizer().tokenize("") == []
        assert Tokenizer().word_positions(" .,;!? ") == []
        assert all(t.is_separator for t in Tokenizer().tokenize(" .,;!? "))

    def test_surrogates_do_not_crash(self) -> None:
        text = "a\udc80b c"
        tokens = Tokenizer().tokenize(text)
        raw = text.encode("utf-8", "surrogatepass")
        assert [raw[t.start : t.end] for t in tokens] == [b"a\xed\xb2\x80b", b" ", b"c"]

    def test_nul_is_a_hard_separator(self) -> None:
        assert Tokenizer().word_positions("a\x00b") == [("a", 0), ("b", 8)]


class TestModuleFunctions:
    def test_tokenize_signature(self) -> None:
        tokens = native.tokenize("a|b", separators=["|"], non_separators=[" "], dictionary=["x y"])
        assert [t.word for t in tokens] == ["a", "|", "b"]
        assert native.word_positions("a-b", non_separators=["-"]) == [("a-b", 0)]

    def test_token_value_semantics(self) -> None:
        first, second = native.tokenize("hello"), native.tokenize("hello")
        assert first == second and hash(first[0]) == hash(second[0])
        assert "hello" in repr(first[0])

    def test_default_separator_lists(self) -> None:
        assert {" ", ". ", ", ", ".", ",", "-", "_", "'", "’", "+", "`", "\t", "\n", "\x00"} <= set(
            DEFAULT_SEPARATORS
        )
        assert not {"$", "<", "=", "|", "~", "^", "°"} & set(DEFAULT_SEPARATORS)
        assert {". ", ", ", "!", "?", ";", "。", "…"} <= HARD_SEPARATORS
        assert not {".", ",", ":", "\n", " "} & HARD_SEPARATORS


def test_generated_tables_are_current() -> None:
    if unicodedata.unidata_version != native.UNICODE_VERSION:
        pytest.skip(
            f"tables are for Unicode {native.UNICODE_VERSION}, this Python has {unicodedata.unidata_version}"
        )
    assert gentables.HEADER_FILE.read_text() == gentables.header(), "run python tools/gentables.py"
