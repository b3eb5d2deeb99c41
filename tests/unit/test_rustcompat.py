"""`rustcompat`: Rust's `{:?}` of a string, `escape_debug`, f64 text, serde_json, string distances.

The expected strings are what `format!("{:?}", s)` / `s.escape_debug()` print in Rust.
"""

from __future__ import annotations

import pytest

from hanzo_engine.rustcompat.distance import damerau_levenshtein, osa_distance
from hanzo_engine.rustcompat.floats import f64_display, parse_f64, ryu
from hanzo_engine.rustcompat.serde_json import to_json, value_error
from hanzo_engine.rustcompat.strings import debug_list, debug_str, escape_debug, trim


@pytest.mark.parametrize(
    ("text", "debug"),
    [
        ("plain", '"plain"'),
        ("", '""'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("it's", '"it\'s"'),  # a single quote is not escaped in a string's Debug
        ("a\nb\rc\td", '"a\\nb\\rc\\td"'),
        ("nul\0", '"nul\\0"'),
        ("\x01\x1b\x7f", '"\\u{1}\\u{1b}\\u{7f}"'),  # other control characters
        ("\x85", '"\\u{85}"'),  # C1 control
        ("no\u00a0break", '"no\\u{a0}break"'),  # Zs other than the space
        ("zero\u200bwidth", '"zero\\u{200b}width"'),  # Cf
        ("line\u2028sep", '"line\\u{2028}sep"'),  # Zl
        ("e\u0301", '"e\\u{301}"'),  # a combining mark, escaped wherever it stands
        ("\u0301e", '"\\u{301}e"'),
        ("\u09be", '"\\u{9be}"'),  # Other_Grapheme_Extend (Mc)
        ("\u200c", '"\\u{200c}"'),  # ZWNJ
        ("\ufeff", '"\\u{feff}"'),  # BOM (Cf)
        ("\ue000", '"\\u{e000}"'),  # private use
        ("\U000e0061", '"\\u{e0061}"'),  # a tag character
        ("é 日本 😀", '"é 日本 😀"'),  # printable non-ASCII as is
    ],
)
def test_debug_str_is_rusts_debug_of_a_str(text: str, debug: str) -> None:
    assert debug_str(text) == debug


def test_debug_list_is_rusts_debug_of_a_vec_of_strings() -> None:
    assert debug_list([]) == "[]"
    assert debug_list(["a", 'b"', "c\n"]) == '["a", "b\\"", "c\\n"]'


def test_escape_debug_escapes_quotes_and_only_a_leading_mark() -> None:
    assert escape_debug("a'b\"c\\d\ne\tf") == "a\\'b\\\"c\\\\d\\ne\\tf"
    assert escape_debug("\u0301x\u200b") == "\\u{301}x\\u{200b}"
    assert escape_debug("x\u0301") == "x\u0301"
    assert escape_debug("plain") == "plain"


def test_trim_is_rusts_whitespace() -> None:
    assert trim("\u3000 a \x85\n") == "a"
    assert trim("\x1ca\x1f") == "\x1ca\x1f"  # Python's strip would remove these, Rust's trim keeps them


def test_f64_text() -> None:
    assert [f64_display(v) for v in (100.0, 95.5, -0.0, 1e21, 1.5e-7, float("nan"), float("-inf"))] == [
        "100",
        "95.5",
        "-0",
        "1000000000000000000000",
        "0.00000015",
        "NaN",
        "-inf",
    ]
    assert [ryu(v) for v in (1e16, 1e15, 0.00001, 1e-6, 1.5e-7, 123.456, -2.0, -0.0)] == [
        "1e16",
        "1000000000000000.0",
        "0.00001",
        "1e-6",
        "1.5e-7",
        "123.456",
        "-2.0",
        "-0.0",
    ]
    assert [parse_f64(s) for s in ("1.", ".5", "+1e3", "-2E-1")] == [1.0, 0.5, 1000.0, -0.2]
    assert [parse_f64(s) for s in (" 1", "1_0", "", "e5", "1e", "\u0663", "0x10")] == [None] * 7


def test_serde_json_display_and_errors() -> None:
    assert (
        to_json({"z": [1, 2.5, None, True], "a": 'q"\n\x01'})
        == '{"z":[1,2.5,null,true],"a":"q\\"\\n\\u0001"}'
    )
    assert to_json(2**64) == "1.8446744073709552e19"
    assert value_error(b'{"a": 1}') is None
    assert value_error(b'"\\uZZZZ"') == "invalid escape at line 1 column 7"
    assert value_error(b"[1,]") == "trailing comma at line 1 column 4"
    assert value_error(b"1e99999999999") == "number out of range at line 1 column 12"
    assert value_error(b"0e99999999999") is None


def test_distances() -> None:
    assert damerau_levenshtein("ca", "abc") == 2
    assert damerau_levenshtein("", "abc") == 3
    assert osa_distance("_vectors", "_vetcors") == 1
    assert osa_distance("kitten", "sitting") == 3
    assert osa_distance("a", "abcdef") == 3  # capped at limit + 1
