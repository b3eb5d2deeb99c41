"""Character classes and value decoding shared by the parser (ports of Meilisearch's `value.rs` rules).

* A *word* is a run of `is_value_component` characters: Rust's `char::is_alphanumeric` plus
  ``_ - .``. Python's ``\\w`` is `str.isalnum` plus ``_``; Rust's Alphabetic property additionally
  covers the "Other_Alphabetic" marks (Indic vowel signs, anusvara, visarga, ...) and the circled /
  squared Latin letters, which the slow path of `word_end` adds back. The approximation is: spacing
  marks (Mc) and vowel-sign-like non-spacing marks (Mn) count as letters; viramas, nuktas and
  generic combining diacritics do not, as in Rust.
* An *error word* (the fragment quoted in "Was expecting a value ...") runs until Rust whitespace or
  one of ``( ) = < > !``.
* `unescape` is the `unescaper` crate's algorithm, applied to every value after the quote-specific
  ``\\'`` / ``\\"`` replacement: ``\\b \\f \\n \\r \\t \\v \\' \\" \\\\ \\/``, ``\\uXXXX``, ``\\u{X..}``, ``\\xXX``
  and 1-3 digit octal escapes; anything else is an error of one of three kinds.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .errors import RUST_WHITESPACE

__all__ = [
    "KEYWORDS",
    "MULTISPACE",
    "RUST_WS",
    "UnescapeError",
    "error_word_end",
    "skip_multispace",
    "unescape",
    "unquote",
    "word_end",
]

# nom's `multispace0/1`: ASCII space, tab, CR and LF only (not Rust's full whitespace).
MULTISPACE = frozenset(" \t\r\n")
RUST_WS = frozenset(RUST_WHITESPACE)

KEYWORDS = frozenset(
    {
        "AND",
        "OR",
        "IN",
        "NOT",
        "TO",
        "EXISTS",
        "IS",
        "NULL",
        "EMPTY",
        "CONTAINS",
        "STARTS",
        "WITH",
        "_geoRadius",
        "_geoBoundingBox",
    }
)

_WORD_RE = re.compile(r"[\w.\-]+")
_ERROR_WORD_RE = re.compile("[^" + re.escape(RUST_WHITESPACE) + r"()=<>!]*")
_HEX_RE = re.compile(r"\+?[0-9a-fA-F]+")
_SIMPLE_ESCAPES = {
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "'": "'",
    '"': '"',
    "\\": "\\",
    "/": "/",
}

# Other_Alphabetic symbols: circled, parenthesized-free squared and negative circled/squared letters.
_ALPHABETIC_SYMBOL_RANGES = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))


@lru_cache(maxsize=4096)
def _extra_alphanumeric(ch: str) -> bool:
    """Characters Rust's `is_alphanumeric` accepts but Python's `isalnum` rejects (approximation)."""
    cat = unicodedata.category(ch)
    if cat == "Mc":
        return True
    if cat == "Mn":
        name = unicodedata.name(ch, "")
        return any(part in name for part in ("VOWEL SIGN", "ANUSVARA", "VISARGA", "CANDRABINDU"))
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _ALPHABETIC_SYMBOL_RANGES)


def word_end(text: str, start: int) -> int:
    """End of the run of value-component characters starting at `start` (== start if none)."""
    m = _WORD_RE.match(text, start)
    end = m.end() if m else start
    n = len(text)
    while end < n and text[end] > "\x7f" and _extra_alphanumeric(text[end]):
        m = _WORD_RE.match(text, end + 1)
        end = m.end() if m else end + 1
    return end


def error_word_end(text: str, start: int) -> int:
    """End of nom's `take_till(is_syntax_component)` from `start`."""
    m = _ERROR_WORD_RE.match(text, start)
    return m.end() if m else start


def skip_multispace(text: str, pos: int, n: int) -> int:
    while pos < n and text[pos] in MULTISPACE:
        pos += 1
    return pos


class UnescapeError(Exception):
    """`kind` is ``"incomplete"``, ``"parse_int"`` or ``"invalid_char"`` (the crate's three errors)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def _radix16(digits: str, limit: int) -> int:
    # Rust's `from_str_radix`: an optional '+' then hex digits, nothing else (no spaces or '_').
    if not _HEX_RE.fullmatch(digits):
        raise UnescapeError("parse_int")
    value = int(digits, 16)
    if value > limit:
        raise UnescapeError("parse_int")
    return value


def unquote(content: str, quote: str) -> str:
    """A quoted value's content decoded as the parser does: escaped quotes first (inside the content
    every quote is escaped), then `unescape` if a backslash is left; raises `UnescapeError`."""
    if quote in content:
        content = content.replace("\\" + quote, quote)
    return unescape(content) if "\\" in content else content


def unescape(value: str) -> str:
    """Decode backslash escapes as the `unescaper` crate does; raises `UnescapeError`."""
    out: list[str] = []
    i = 0
    n = len(value)
    while i < n:
        ch = value[i]
        if ch != "\\":
            nxt = value.find("\\", i)
            if nxt < 0:
                out.append(value[i:])
                break
            out.append(value[i:nxt])
            i = nxt
            continue
        if i + 1 >= n:
            raise UnescapeError("incomplete")
        ch = value[i + 1]
        i += 2
        simple = _SIMPLE_ESCAPES.get(ch)
        if simple is not None:
            out.append(simple)
        elif ch == "u":
            if i >= n:
                raise UnescapeError("incomplete")
            if value[i] == "{":
                close = value.find("}", i + 1)
                if close < 0:
                    digits, i = value[i + 1 :], n
                else:
                    digits, i = value[i + 1 : close], close + 1
            else:
                if i + 4 > n:
                    raise UnescapeError("incomplete")
                digits, i = value[i : i + 4], i + 4
            cp = _radix16(digits, 0xFFFFFFFF)
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise UnescapeError("invalid_char")
            out.append(chr(cp))
        elif ch == "x":
            if i + 2 > n:
                raise UnescapeError("incomplete")
            out.append(chr(_radix16(value[i : i + 2], 0xFF)))
            i += 2
        elif ch in "01234567":
            octal = ch
            extra = 2 if ch in "0123" else 1
            while extra and i < n and value[i] in "01234567":
                octal += value[i]
                i += 1
                extra -= 1
            out.append(chr(int(octal, 8)))
        else:
            raise UnescapeError("invalid_char")
    return "".join(out)
