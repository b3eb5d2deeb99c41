"""A byte-exact model of how Meilisearch's serde_json reads document payloads, for error messages.

The fast path of `payload.py` validates payloads with msgspec. When msgspec rejects a payload (or
accepts something Meilisearch would read differently), this module re-reads it the way Meilisearch
does, to find the same error at the same place and give serde_json's message,
`<reason> at line <L> column <C>`:

* a JSON payload that starts with `[` is read as a sequence of raw values (serde_json's
  `ignore_value`: no depth limit, numbers and `\\u` escapes only checked for syntax); each element
  is checked to be an object right after it is read, and whatever follows the closing `]` is
  ignored, as in Meilisearch's `read_json`;
* any other JSON payload is read once as "a sequence" (which fails on the first scalar or object),
  then again as one object with the full `Value` parser (128-level depth limit, checked numbers and
  escapes) followed by a trailing-characters check;
* an NDJSON payload is a stream of whitespace-separated raw values (serde_json's
  `StreamDeserializer`), so several objects on one line or one object over several lines are fine.

The reading itself, positions and messages included, is `rustcompat.serde_json.Reader`.

Values that are not objects where a document is expected raise `NotAnObject` (Meilisearch's
"data are neither an object nor a list of objects").
"""

from __future__ import annotations

import re
from typing import Final

from hanzo_engine.rustcompat.serde_json import EOF_VALUE, TRAILING_CHARACTERS, JsonSyntaxError, Reader

# `JsonSyntaxError` is what the scanners raise for a syntax error.
__all__ = ["JsonSyntaxError", "NotAnObject", "scan_json", "scan_ndjson", "scan_value_strict"]

_LBRACKET, _LBRACE, _QUOTE = 0x5B, 0x7B, 0x22
# Bytes that may follow a number or literal in an NDJSON stream (`peek_end_of_value`).
_END_OF_VALUE: Final = frozenset(b' \n\t\r"[]{},:')
_LINE_REST: Final = re.compile(rb"[ \t\r]*")


class NotAnObject(Exception):
    """A well-formed value that is not a JSON object where a document was expected."""


def scan_json(body: bytes, resume_at: int | None = None) -> list[tuple[int, int]]:
    """Byte spans of the documents of a JSON payload, read as Meilisearch's `read_json`.

    Raises `JsonSyntaxError` for the first syntax error and `NotAnObject` when the payload (or an
    element of the top-level array) is a valid value but not an object. With `resume_at`, the
    payload is a top-level array whose elements before that offset were already read (and found
    to be objects): reading resumes there, right after an element, and only later spans are
    returned.
    """
    reader = Reader(body)
    spans: list[tuple[int, int]] = []

    def element() -> None:
        start, end = reader.raw_value()
        # Meilisearch turns each raw element into a map before reading the next one.
        if body[start] != _LBRACE:
            raise NotAnObject
        spans.append((start, end))

    if resume_at is not None:
        reader.i = resume_at
        reader.seq_items(element, first=False)
        return spans
    c = reader.ws()
    if c < 0:
        raise reader.peek_error(EOF_VALUE)
    if c == _LBRACKET:
        reader.i += 1
        reader.seq_items(element)
        # Meilisearch never checks what follows the array's closing bracket.
        return spans
    if c != _LBRACE:
        # Read as a sequence, a scalar is parsed (its syntax errors win) and then rejected.
        reader.scalar(c)
        raise NotAnObject
    # Not a sequence: Meilisearch reads the whole payload again as a single object.
    reader.ws()
    start = reader.i
    reader.value()
    end = reader.i
    if reader.ws() >= 0:
        raise reader.peek_error(TRAILING_CHARACTERS)
    return [(start, end)]


def scan_ndjson(
    body: bytes, start: int = 0, stop_at_line_end: bool = False
) -> tuple[list[tuple[int, int]], int]:
    """Byte spans of NDJSON documents (serde_json's `StreamDeserializer`), and where reading stopped.

    Values may be separated by any JSON whitespace, including none after an object or array.
    `start` must be between two values. With `stop_at_line_end`, reading stops after the first
    value that ends its line (only spaces, tabs or `\r` before the `\n`), returning the offset of
    the next line, so a line-by-line reader can take over again.
    """
    reader = Reader(body, start)
    spans: list[tuple[int, int]] = []
    while True:
        c = reader.ws()
        if c < 0:
            return spans, reader.n
        begin, end = reader.raw_value()
        if c not in (_LBRACKET, _LBRACE, _QUOTE):
            # A number or literal must be followed by a delimiter, else its end is ambiguous.
            after = reader.peek()
            if after >= 0 and after not in _END_OF_VALUE:
                raise reader.peek_error(TRAILING_CHARACTERS)
        if c != _LBRACE:
            raise NotAnObject
        spans.append((begin, end))
        if stop_at_line_end:
            m = _LINE_REST.match(body, end)
            rest = m.end() if m else end
            if rest >= reader.n:
                return spans, reader.n
            if body[rest] == 0x0A:
                return spans, rest + 1


def scan_value_strict(body: bytes, start: int, end: int) -> None:
    """Re-read `body[start:end]` with the full `Value` parser to explain why a decoder refused it.

    Positions are reported in `body`'s coordinates. Returns normally when the full parser also
    accepts the span.
    """
    reader = Reader(body, start, end)
    reader.value()
