"""Rust's text primitives that show in messages: whitespace, `{:?}` of a string, `escape_debug`.

`debug_str` is `format!("{:?}", s)` for a `str`: in double quotes, `\\0 \\t \\r \\n \\\\ \\"` escaped
by name, every grapheme-extending character and every non-printable one as `\\u{hex}`, the rest
as is (a single quote stays). `escape_debug` is `str::escape_debug`: the same, without the quotes,
with `'` escaped too and a grapheme-extending character escaped only in first position.

Non-printable is Rust's `core::unicode::printable` rule: categories Cc, Cf, Cs, Co, Cn, Zl, Zp and
Zs except the space, which is exactly Python's `str.isprintable`. Grapheme_Extend is Mn, Me and
the Other_Grapheme_Extend code points below.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Final

__all__ = ["RUST_WHITESPACE", "debug_list", "debug_str", "escape_debug", "is_grapheme_extended", "trim"]

# Rust's `char::is_whitespace` (Unicode White_Space), which `str::trim` strips; Python's `str.strip`
# also strips \x1c-\x1f, which Rust keeps.
RUST_WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

# PropList.txt's Other_Grapheme_Extend (with Mn and Me: Grapheme_Extend)
_OTHER_GRAPHEME_EXTEND: Final = frozenset(
    [
        0x09BE,
        0x09D7,
        0x0B3E,
        0x0B57,
        0x0BBE,
        0x0BD7,
        0x0CC2,
        0x0CD5,
        0x0CD6,
        0x0D3E,
        0x0D57,
        0x0DCF,
        0x0DDF,
        0x1B35,
        0x200C,
        0x302E,
        0x302F,
        0xFF9E,
        0xFF9F,
        0x1133E,
        0x11357,
        0x114B0,
        0x114BD,
        0x115AF,
        0x11930,
        0x1D165,
        *range(0x1D16E, 0x1D173),
        *range(0xE0020, 0xE0080),
    ]
)
_NAMED: Final = {"\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", '"': '\\"'}
_NAMED_WITH_QUOTE: Final = {**_NAMED, "'": "\\'"}


def trim(text: str) -> str:
    """`str::trim`."""
    return text.strip(RUST_WHITESPACE)


def is_grapheme_extended(ch: str) -> bool:
    """`char::is_grapheme_extended`."""
    return unicodedata.category(ch) in ("Mn", "Me") or ord(ch) in _OTHER_GRAPHEME_EXTEND


def _escaped(text: str, named: dict[str, str], extend_anywhere: bool) -> str:
    out: list[str] = []
    for i, ch in enumerate(text):
        esc = named.get(ch)
        if esc is not None:
            out.append(esc)
        elif not ch.isprintable() or ((extend_anywhere or i == 0) and is_grapheme_extended(ch)):
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return "".join(out)


def debug_str(text: str) -> str:
    """`format!("{:?}", text)`."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return '"' + _escaped(text, _NAMED, True) + '"'


def debug_list(items: Sequence[str]) -> str:
    """`format!("{:?}", items)` for a `Vec<String>`: `["a", "b"]`."""
    return "[" + ", ".join(map(debug_str, items)) + "]"


def escape_debug(text: str) -> str:
    """`text.escape_debug().to_string()`."""
    if text.isascii() and text.isprintable() and not any(c in text for c in "\\\"'"):
        return text
    return _escaped(text, _NAMED_WITH_QUOTE, False)
