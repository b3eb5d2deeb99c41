"""The filter error type and the text helpers that make its messages byte-identical to Meilisearch's.

Every positioned message has Meilisearch's two-part shape::

    <diagnostic line(s)>
    <start>:<end> <the whole original filter string>

`start` is the 1-based column of the offending fragment *within its line* (nom_locate's
`get_utf8_column`: characters since the last ``\\n`` before it, plus one) and ``end = start + number of
characters of the fragment``. Fragments quoted inside the diagnostic are escaped the way Rust's
``str::escape_debug`` does it, so ``'`` prints as ``\\'`` and a newline as ``\\n``.

Number formatting follows Rust too: `rust_f64_display` is ``format!("{}", f64)`` (shortest round-trip
digits, never an exponent) and `json_display` is serde_json's compact ``Display`` for a JSON value.
"""

from __future__ import annotations

import math
import unicodedata
from decimal import Decimal
from typing import Any

__all__ = [
    "RUST_WHITESPACE",
    "FilterError",
    "columns",
    "escape_debug",
    "json_display",
    "positioned",
    "rust_f64_display",
    "rust_trim",
]

# Rust's `char::is_whitespace` (the Unicode White_Space property). Python's `str.isspace` also accepts
# U+001C..U+001F, which Rust does not, so the set is spelled out.
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


class FilterError(ValueError):
    """A user error in a filter, carrying Meilisearch's exact message (position line included).

    The caller maps it to ``invalid_search_filter`` / ``invalid_document_filter`` /
    ``invalid_similar_filter``; when `feature` is set (``"containsFilter"``, ``"multimodal"``,
    ``"network"``) the filter used an experimental feature that is off and the code is
    ``feature_not_enabled`` instead.
    """

    def __init__(self, message: str, *, feature: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.feature = feature

    def __str__(self) -> str:
        return self.message


def rust_trim(text: str) -> str:
    """`str::trim` of Rust (White_Space on both ends)."""
    return text.strip(RUST_WHITESPACE)


def columns(source: str, start: int, end: int) -> tuple[int, int]:
    """1-based (start, end) columns of ``source[start:end]`` as nom_locate reports them."""
    line_start = source.rfind("\n", 0, start) + 1
    col = start - line_start + 1
    return col, col + (end - start)


def positioned(message: str, source: str, start: int, end: int) -> str:
    """`message` followed by Meilisearch's ``\\n<start>:<end> <filter>`` position line."""
    col, col_end = columns(source, start, end)
    return f"{message}\n{col}:{col_end} {source}"


_ESCAPES = {"\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", '"': '\\"', "'": "\\'"}


def _grapheme_extend(ch: str) -> bool:
    # Grapheme_Extend is essentially the non-spacing and enclosing marks (plus ZWNJ, which is a
    # format character and escaped anyway as non-printable).
    return unicodedata.category(ch) in ("Mn", "Me") or ch in "\uff9e\uff9f"


def escape_debug(text: str) -> str:
    """Rust's ``str::escape_debug``: quotes, backslash and control characters escaped.

    Non-printable characters (Unicode categories C* and Z* except the space, which is exactly
    Python's `str.isprintable` rule) become ``\\u{hex}``; a grapheme-extending mark is escaped only
    when it is the first character, as Rust does.
    """
    if text.isascii() and text.isprintable() and not any(c in text for c in "\\\"'"):
        return text
    out: list[str] = []
    for i, ch in enumerate(text):
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif (i == 0 and _grapheme_extend(ch)) or not ch.isprintable():
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return "".join(out)


def rust_f64_display(value: float) -> str:
    """``format!("{}", value)`` for a Rust f64: shortest round-trip digits, positional, no ``.0``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _ryu(value: float) -> str:
    """serde_json's float formatting (the `ryu` crate's pretty form)."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    # decimal exponent so that value = 0.d1d2d3... * 10**kk
    kk = len(int_part.lstrip("0")) if int_part.strip("0") else -(len(frac_part) - len(frac_part.lstrip("0")))
    if exp_text:
        kk += int(exp_text)
    digits = digits.rstrip("0") or "0"
    length = len(digits)
    if length <= kk <= 16:
        return f"{sign}{digits}{'0' * (kk - length)}.0"
    if 0 < kk <= 16:
        return f"{sign}{digits[:kk]}.{digits[kk:]}"
    if -5 < kk <= 0:
        return f"{sign}0.{'0' * -kk}{digits}"
    exponent = kk - 1
    if length == 1:
        return f"{sign}{digits}e{exponent}"
    return f"{sign}{digits[0]}.{digits[1:]}e{exponent}"


def _json_string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch < " ":
            out.append(
                {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, f"\\u{ord(ch):04x}")
            )
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def json_display(value: Any) -> str:
    """serde_json's compact ``Display`` of a decoded JSON value (object key order preserved)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        if -(2**63) <= value < 2**64:
            return str(value)
        return _ryu(float(value))  # serde_json falls back to f64 beyond u64/i64
    if isinstance(value, float):
        return _ryu(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json_string(str(k))}:{json_display(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(json_display(v) for v in value) + "]"
    return _json_string(str(value))
