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

Positions follow serde_json's `SliceRead`: the line is 1 + the number of `\\n` before the position,
the column is the byte offset from the start of that line. Errors found on a byte just consumed
use the index after it (`error`), errors found by peeking use the index after the peeked byte
(`peek_error`).

Values that are not objects where a document is expected raise `NotAnObject` (Meilisearch's
"data are neither an object nor a list of objects").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

__all__ = [
    "INVALID_UNICODE",
    "JsonSyntaxError",
    "NotAnObject",
    "scan_json",
    "scan_ndjson",
    "scan_value_strict",
    "syntax_error_at",
]

# serde_json's ErrorCode texts.
EOF_LIST: Final = "EOF while parsing a list"
EOF_OBJECT: Final = "EOF while parsing an object"
EOF_STRING: Final = "EOF while parsing a string"
EOF_VALUE: Final = "EOF while parsing a value"
EXPECTED_COLON: Final = "expected `:`"
EXPECTED_LIST_COMMA_OR_END: Final = "expected `,` or `]`"
EXPECTED_OBJECT_COMMA_OR_END: Final = "expected `,` or `}`"
EXPECTED_IDENT: Final = "expected ident"
EXPECTED_VALUE: Final = "expected value"
INVALID_ESCAPE: Final = "invalid escape"
INVALID_NUMBER: Final = "invalid number"
NUMBER_OUT_OF_RANGE: Final = "number out of range"
INVALID_UNICODE: Final = "invalid unicode code point"
CONTROL_CHAR: Final = "control character (\\u0000-\\u001F) found while parsing a string"
KEY_MUST_BE_STRING: Final = "key must be a string"
LONE_SURROGATE: Final = "lone leading surrogate in hex escape"
TRAILING_COMMA: Final = "trailing comma"
TRAILING_CHARACTERS: Final = "trailing characters"
UNEXPECTED_END_OF_HEX: Final = "unexpected end of hex escape"
RECURSION_LIMIT: Final = "recursion limit exceeded"

_RECURSION_LIMIT: Final = 128

_WS: Final = re.compile(rb"[ \t\n\r]*")
# Bytes a string can hold without stopping the scan (serde_json's `skip_to_escape`).
_STR_PLAIN: Final = re.compile(rb'[^"\\\x00-\x1f]*')
_DIGITS: Final = re.compile(rb"[0-9]*")
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")

_QUOTE, _BACKSLASH = 0x22, 0x5C
_LBRACKET, _RBRACKET, _LBRACE, _RBRACE = 0x5B, 0x5D, 0x7B, 0x7D
_COMMA, _COLON, _MINUS, _DOT = 0x2C, 0x3A, 0x2D, 0x2E
_SIMPLE_ESCAPES: Final = frozenset(b'"\\/bfnrt')
# Bytes that may follow a number or literal in an NDJSON stream (`peek_end_of_value`).
_END_OF_VALUE: Final = frozenset(b' \n\t\r"[]{},:')
_LINE_REST: Final = re.compile(rb"[ \t\r]*")


class JsonSyntaxError(Exception):
    """A serde_json syntax error: `reason at line L column C`."""

    def __init__(self, reason: str, line: int, column: int) -> None:
        self.reason = reason
        self.line = line
        self.column = column
        super().__init__(f"{reason} at line {line} column {column}")


class NotAnObject(Exception):
    """A well-formed value that is not a JSON object where a document was expected."""


def syntax_error_at(body: bytes, reason: str, index: int) -> JsonSyntaxError:
    """The error `reason` at byte `index` of `body`, positioned as serde_json's `SliceRead`."""
    line_start = body.rfind(b"\n", 0, index) + 1
    line = body.count(b"\n", 0, line_start) + 1
    return JsonSyntaxError(reason, line, index - line_start)


def _is_digit(c: int) -> bool:
    return 0x30 <= c <= 0x39


class _Reader:
    """Cursor over the payload with serde_json's position and error conventions."""

    __slots__ = ("body", "depth", "i", "n", "utf8_valid")

    def __init__(self, body: bytes, start: int = 0, end: int | None = None) -> None:
        self.body = body
        self.n = len(body) if end is None else end
        self.i = start
        self.depth = _RECURSION_LIMIT
        try:
            # Strings and raw values are UTF-8-checked one by one only when the whole is not.
            str(memoryview(body)[start : self.n], "utf-8")
            self.utf8_valid = True
        except UnicodeDecodeError:
            self.utf8_valid = False

    # -- positions ---------------------------------------------------------------------------

    def error(self, reason: str) -> JsonSyntaxError:
        return syntax_error_at(self.body, reason, self.i)

    def peek_error(self, reason: str) -> JsonSyntaxError:
        return syntax_error_at(self.body, reason, min(self.n, self.i + 1))

    def ws(self) -> int:
        """Skip JSON whitespace; the next byte, or -1 at the end."""
        m = _WS.match(self.body, self.i, self.n)
        self.i = m.end() if m else self.i
        return self.body[self.i] if self.i < self.n else -1

    def peek(self) -> int:
        return self.body[self.i] if self.i < self.n else -1

    # -- literals and numbers ----------------------------------------------------------------

    def parse_ident(self, rest: bytes) -> None:
        for expected in rest:
            if self.i >= self.n:
                raise self.error(EOF_VALUE)
            got = self.body[self.i]
            self.i += 1
            if got != expected:
                raise self.error(EXPECTED_IDENT)

    def _digits(self) -> int:
        m = _DIGITS.match(self.body, self.i, self.n)
        count = m.end() - self.i if m else 0
        self.i += count
        return count

    def ignore_integer(self) -> None:
        """serde_json's `ignore_integer` (raw values): syntax only, EOF reads as a NUL byte."""
        c = self.peek()
        if c >= 0:
            self.i += 1
        if c == 0x30:
            if _is_digit(self.peek()):
                raise self.peek_error(INVALID_NUMBER)
        elif 0x31 <= c <= 0x39:
            self._digits()
        else:
            raise self.error(INVALID_NUMBER)
        c = self.peek()
        if c == _DOT:
            self.i += 1
            if not self._digits():
                raise self.peek_error(INVALID_NUMBER)
            c = self.peek()
        if c in (0x65, 0x45):  # e E
            self._ignore_exponent()

    def _ignore_exponent(self) -> None:
        self.i += 1
        if self.peek() in (0x2B, _MINUS):
            self.i += 1
        c = self.peek()
        if c >= 0:
            self.i += 1
        if not _is_digit(c):
            raise self.error(INVALID_NUMBER)
        self._digits()

    def parse_number(self) -> None:
        """serde_json's `parse_integer` and friends (full parse), after an optional `-`."""
        start = self.i
        if self.i >= self.n:
            raise self.error(EOF_VALUE)
        c = self.body[self.i]
        self.i += 1
        if c == 0x30:
            if _is_digit(self.peek()):
                raise self.peek_error(INVALID_NUMBER)
        elif 0x31 <= c <= 0x39:
            self._digits()
        else:
            raise self.error(INVALID_NUMBER)
        is_float = False
        if self.peek() == _DOT:
            is_float = True
            self.i += 1
            if not self._digits():
                raise self.peek_error(EOF_VALUE if self.i >= self.n else INVALID_NUMBER)
        if self.peek() in (0x65, 0x45):
            is_float = True
            self.i += 1
            if self.peek() in (0x2B, _MINUS):
                self.i += 1
            if self.i >= self.n:
                raise self.error(EOF_VALUE)
            c = self.body[self.i]
            self.i += 1
            if not _is_digit(c):
                raise self.error(INVALID_NUMBER)
            self._digits()
        # Integers that overflow u64 and all decimals become f64; an infinite one is out of range.
        if (is_float or self.i - start > 19) and float(self.body[start : self.i]) in (
            float("inf"),
            float("-inf"),
        ):
            raise self.error(NUMBER_OUT_OF_RANGE)

    # -- strings -----------------------------------------------------------------------------

    def _hex4(self) -> int:
        """serde_json's `decode_hex_escape`."""
        if self.i + 4 > self.n:
            self.i = self.n
            raise self.error(EOF_STRING)
        value = 0
        for _ in range(4):
            c = self.body[self.i]
            self.i += 1
            if c not in _HEX:
                raise self.error(INVALID_ESCAPE)
            value = value * 16 + int(chr(c), 16)
        return value

    def _next_or_eof(self) -> int:
        if self.i >= self.n:
            raise self.error(EOF_STRING)
        c = self.body[self.i]
        self.i += 1
        return c

    def _escape(self, validate: bool) -> None:
        """One escape after its backslash: `parse_escape` (validate) or `ignore_escape`."""
        c = self._next_or_eof()
        if c in _SIMPLE_ESCAPES:
            return
        if c != 0x75:  # u
            raise self.error(INVALID_ESCAPE)
        code = self._hex4()
        if not validate:
            return
        if 0xDC00 <= code <= 0xDFFF:
            raise self.error(LONE_SURROGATE)
        if 0xD800 <= code <= 0xDBFF:
            for expected in (_BACKSLASH, 0x75):
                if self.i >= self.n:
                    raise self.error(EOF_STRING)
                got = self.body[self.i]
                self.i += 1
                if got != expected:
                    raise self.error(UNEXPECTED_END_OF_HEX)
            low = self._hex4()
            if not 0xDC00 <= low <= 0xDFFF:
                raise self.error(LONE_SURROGATE)

    def string(self, validate: bool) -> None:
        """A string body after its opening quote.

        `validate=True` is serde_json's `parse_str` (surrogates and UTF-8 checked, the position of
        a control character is after it); `False` is `ignore_str` (raw values).
        """
        start = self.i
        while True:
            m = _STR_PLAIN.match(self.body, self.i, self.n)
            self.i = m.end() if m else self.i
            if self.i >= self.n:
                raise self.error(EOF_STRING)
            c = self.body[self.i]
            if c == _QUOTE:
                self.i += 1
                if validate and not self.utf8_valid:
                    try:
                        self.body[start : self.i - 1].decode("utf-8")
                    except UnicodeDecodeError:
                        raise self.error(INVALID_UNICODE) from None
                return
            if c == _BACKSLASH:
                self.i += 1
                self._escape(validate)
                continue
            if validate:
                self.i += 1
            raise self.error(CONTROL_CHAR)

    # -- raw values (serde_json `ignore_value`) ----------------------------------------------

    def ignore_value(self) -> None:
        """Skip one value the way `ignore_value` does: iteratively, with no depth limit."""
        stack: list[int] = []
        enclosing = -1
        while True:
            c = self.ws()
            if c < 0:
                raise self.peek_error(EOF_VALUE)
            frame = -1
            if c == 0x6E:  # n
                self.i += 1
                self.parse_ident(b"ull")
            elif c == 0x74:  # t
                self.i += 1
                self.parse_ident(b"rue")
            elif c == 0x66:  # f
                self.i += 1
                self.parse_ident(b"alse")
            elif c == _MINUS:
                self.i += 1
                self.ignore_integer()
            elif _is_digit(c):
                self.ignore_integer()
            elif c == _QUOTE:
                self.i += 1
                self.string(validate=False)
            elif c in (_LBRACKET, _LBRACE):
                if enclosing >= 0:
                    stack.append(enclosing)
                    enclosing = -1
                self.i += 1
                frame = c
            else:
                raise self.peek_error(EXPECTED_VALUE)

            if frame >= 0:
                accept_comma = False
            elif enclosing >= 0:
                frame, enclosing, accept_comma = enclosing, -1, True
            elif stack:
                frame, accept_comma = stack.pop(), True
            else:
                return

            while True:
                c = self.ws()
                if c == _COMMA and accept_comma:
                    self.i += 1
                    break
                if (c == _RBRACKET and frame == _LBRACKET) or (c == _RBRACE and frame == _LBRACE):
                    self.i += 1
                    if not stack:
                        return
                    frame, accept_comma = stack.pop(), True
                    continue
                if c >= 0:
                    if accept_comma:
                        raise self.peek_error(
                            EXPECTED_LIST_COMMA_OR_END if frame == _LBRACKET else EXPECTED_OBJECT_COMMA_OR_END
                        )
                    break
                raise self.peek_error(EOF_LIST if frame == _LBRACKET else EOF_OBJECT)

            if frame == _LBRACE:
                c = self.ws()
                if c == _QUOTE:
                    self.i += 1
                elif c >= 0:
                    raise self.peek_error(KEY_MUST_BE_STRING)
                else:
                    raise self.peek_error(EOF_OBJECT)
                self.string(validate=False)
                c = self.ws()
                if c == _COLON:
                    self.i += 1
                elif c >= 0:
                    raise self.peek_error(EXPECTED_COLON)
                else:
                    raise self.peek_error(EOF_OBJECT)
            enclosing = frame

    def raw_value(self) -> tuple[int, int]:
        """A `&RawValue`: skip one value, then check its bytes are UTF-8 (`end_raw_buffering`)."""
        self.ws()
        start = self.i
        self.ignore_value()
        if not self.utf8_valid:
            try:
                self.body[start : self.i].decode("utf-8")
            except UnicodeDecodeError:
                raise self.error(INVALID_UNICODE) from None
        return start, self.i

    # -- full values (serde_json `deserialize_any` into `Value`) -----------------------------

    def _enter(self) -> None:
        self.depth -= 1
        if self.depth == 0:
            raise self.peek_error(RECURSION_LIMIT)

    def value(self) -> None:
        c = self.ws()
        if c < 0:
            raise self.peek_error(EOF_VALUE)
        if c == _LBRACKET:
            self._enter()
            self.i += 1
            self._seq_items(self.value)
            self.i += 1
            self.depth += 1
        elif c == _LBRACE:
            self._enter()
            self.i += 1
            self._map_entries()
            self.i += 1
            self.depth += 1
        else:
            self.scalar(c)

    def scalar(self, c: int) -> None:
        """A non-container value starting with byte `c` (also `peek_invalid_type`'s parsing)."""
        if c == 0x6E:
            self.i += 1
            self.parse_ident(b"ull")
        elif c == 0x74:
            self.i += 1
            self.parse_ident(b"rue")
        elif c == 0x66:
            self.i += 1
            self.parse_ident(b"alse")
        elif c == _MINUS:
            self.i += 1
            self.parse_number()
        elif _is_digit(c):
            self.parse_number()
        elif c == _QUOTE:
            self.i += 1
            self.string(validate=True)
        else:
            raise self.peek_error(EXPECTED_VALUE)

    def _seq_items(self, read_item: Callable[[], None], first: bool = True) -> None:
        """serde_json's `SeqAccess`: items up to (not including) the closing `]`.

        `first=False` resumes after an item that was already read.
        """
        while True:
            c = self.ws()
            if c < 0:
                raise self.peek_error(EOF_LIST)
            if c == _RBRACKET:
                return
            if first:
                first = False
            elif c == _COMMA:
                self.i += 1
                c = self.ws()
                if c == _RBRACKET:
                    raise self.peek_error(TRAILING_COMMA)
                if c < 0:
                    raise self.peek_error(EOF_VALUE)
            else:
                raise self.peek_error(EXPECTED_LIST_COMMA_OR_END)
            read_item()

    def _map_entries(self) -> None:
        """serde_json's `MapAccess` into a `Map<String, Value>`, up to the closing `}`."""
        first = True
        while True:
            c = self.ws()
            if c == _RBRACE:
                return
            if c == _COMMA and not first:
                self.i += 1
                c = self.ws()
            elif c >= 0:
                if not first:
                    raise self.peek_error(EXPECTED_OBJECT_COMMA_OR_END)
                first = False
            else:
                raise self.peek_error(EOF_OBJECT)
            if c == _QUOTE:
                self.i += 1
                self.string(validate=True)
            elif c == _RBRACE:
                raise self.peek_error(TRAILING_COMMA)
            elif c >= 0:
                raise self.peek_error(KEY_MUST_BE_STRING)
            else:
                raise self.peek_error(EOF_VALUE)
            c = self.ws()
            if c == _COLON:
                self.i += 1
            elif c >= 0:
                raise self.peek_error(EXPECTED_COLON)
            else:
                raise self.peek_error(EOF_OBJECT)
            self.value()


def scan_json(body: bytes, resume_at: int | None = None) -> list[tuple[int, int]]:
    """Byte spans of the documents of a JSON payload, read as Meilisearch's `read_json`.

    Raises `JsonSyntaxError` for the first syntax error and `NotAnObject` when the payload (or an
    element of the top-level array) is a valid value but not an object. With `resume_at`, the
    payload is a top-level array whose elements before that offset were already read (and found
    to be objects): reading resumes there, right after an element, and only later spans are
    returned.
    """
    reader = _Reader(body)
    spans: list[tuple[int, int]] = []

    def element() -> None:
        start, end = reader.raw_value()
        # Meilisearch turns each raw element into a map before reading the next one.
        if body[start] != _LBRACE:
            raise NotAnObject
        spans.append((start, end))

    if resume_at is not None:
        reader.i = resume_at
        reader._seq_items(element, first=False)
        return spans
    c = reader.ws()
    if c < 0:
        raise reader.peek_error(EOF_VALUE)
    if c == _LBRACKET:
        reader.i += 1
        reader._seq_items(element)
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
    reader = _Reader(body, start)
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
    reader = _Reader(body, start, end)
    reader.value()
