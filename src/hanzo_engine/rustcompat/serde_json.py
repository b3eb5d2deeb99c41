"""serde_json's reader, modelled byte for byte for its error messages, and its display of a `Value`.

`Reader` follows serde_json's `SliceRead` over a payload: `value` is `deserialize_any` into a `Value`
(128-level depth limit, checked numbers and escapes), `raw_value`/`ignore_value` read a `&RawValue`
(no depth limit, syntax only). An error is `<reason> at line <L> column <C>`: the line is 1 + the
number of `\\n` before the position, the column the byte offset from the start of that line; errors
found on a byte just consumed use the index after it (`error`), errors found by peeking the index
after the peeked byte (`peek_error`).

Numbers are read as serde_json does without `float_roundtrip`: up to 19-20 significant digits kept
(the others counted in the exponent), then `f64_from_parts`, whose inexact scaling decides when a
number is out of range (a few numbers near f64's limit that the correctly rounded parse accepts).

`value_error` is the message of `serde_json::from_slice::<Value>`; `to_json` is serde_json's compact
`Display` of a decoded value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Final

from .floats import ryu

__all__ = [
    "INVALID_UNICODE",
    "TRAILING_CHARACTERS",
    "JsonSyntaxError",
    "Reader",
    "long_int_f64",
    "syntax_error_at",
    "to_json",
    "value_error",
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
_HEX4: Final = re.compile(rb"[0-9A-Fa-f]{4}")
U64_MAX: Final = 18_446_744_073_709_551_615
_I32_MAX: Final = 2_147_483_647
_POW10: Final = [float(f"1e{k}") for k in range(309)]

_QUOTE, _BACKSLASH = 0x22, 0x5C
_LBRACKET, _RBRACKET, _LBRACE, _RBRACE = 0x5B, 0x5D, 0x7B, 0x7D
_COMMA, _COLON, _MINUS, _DOT = 0x2C, 0x3A, 0x2D, 0x2E
_SIMPLE_ESCAPES: Final = frozenset(b'"\\/bfnrt')


class JsonSyntaxError(Exception):
    """A serde_json syntax error: `reason at line L column C`."""

    def __init__(self, reason: str, line: int, column: int) -> None:
        self.reason = reason
        self.line = line
        self.column = column
        super().__init__(f"{reason} at line {line} column {column}")


def syntax_error_at(body: bytes, reason: str, index: int) -> JsonSyntaxError:
    """The error `reason` at byte `index` of `body`, positioned as serde_json's `SliceRead`."""
    line_start = body.rfind(b"\n", 0, index) + 1
    line = body.count(b"\n", 0, line_start) + 1
    return JsonSyntaxError(reason, line, index - line_start)


def _is_digit(c: int) -> bool:
    return 0x30 <= c <= 0x39


class Reader:
    """Cursor over the payload with serde_json's position and error conventions."""

    __slots__ = ("body", "depth", "i", "n", "utf8_valid", "whole_hex_escapes")

    def __init__(
        self, body: bytes, start: int = 0, end: int | None = None, *, whole_hex_escapes: bool = False
    ) -> None:
        self.body = body
        self.whole_hex_escapes = whole_hex_escapes
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
        """serde_json's `parse_integer` and what follows it (full parse), after an optional `-`."""
        if self.i >= self.n:
            raise self.error(EOF_VALUE)
        c = self.body[self.i]
        self.i += 1
        significand, exponent = 0, 0
        if c == 0x30:
            if _is_digit(self.peek()):
                raise self.peek_error(INVALID_NUMBER)
        elif 0x31 <= c <= 0x39:
            significand = c - 0x30
            while _is_digit(d := self.peek()):
                self.i += 1
                d -= 0x30
                if exponent or significand * 10 + d > U64_MAX:
                    exponent += 1  # the digits past u64 are only counted (`parse_long_integer`)
                else:
                    significand = significand * 10 + d
        else:
            raise self.error(INVALID_NUMBER)
        c = self.peek()
        if c == _DOT:
            self.i += 1
            seen, overflow = False, False
            while _is_digit(d := self.peek()):
                self.i += 1
                seen = True
                d -= 0x30
                if overflow or significand * 10 + d > U64_MAX:
                    overflow = True  # `parse_decimal_overflow`: the other digits are dropped
                else:
                    significand = significand * 10 + d
                    exponent -= 1
            if not seen:
                raise self.peek_error(EOF_VALUE if self.i >= self.n else INVALID_NUMBER)
            c = self.peek()
        if c in (0x65, 0x45):  # e E
            self.i += 1
            positive = True
            if self.peek() in (0x2B, _MINUS):
                positive = self.peek() == 0x2B
                self.i += 1
            if self.i >= self.n:
                raise self.error(EOF_VALUE)
            exp = self.body[self.i] - 0x30
            self.i += 1
            if not 0 <= exp <= 9:
                raise self.error(INVALID_NUMBER)
            while _is_digit(d := self.peek()):
                self.i += 1
                if exp * 10 + d - 0x30 > _I32_MAX:  # `parse_exponent_overflow`
                    if significand != 0 and positive:
                        raise self.error(NUMBER_OUT_OF_RANGE)
                    self._digits()
                    return
                exp = exp * 10 + d - 0x30
            exponent = exponent + exp if positive else exponent - exp
        self._check_range(significand, max(-_I32_MAX - 1, min(_I32_MAX, exponent)))

    def _check_range(self, significand: int, exponent: int) -> None:
        """serde_json's `f64_from_parts` without `float_roundtrip`: an overflow is an error."""
        f = float(significand)
        while True:
            if abs(exponent) < len(_POW10):
                if exponent >= 0 and math.isinf(f * _POW10[exponent]):
                    raise self.error(NUMBER_OUT_OF_RANGE)
                return
            if f == 0.0:
                return
            if exponent >= 0:
                raise self.error(NUMBER_OUT_OF_RANGE)
            f /= 1e308
            exponent += 308

    # -- strings -----------------------------------------------------------------------------

    def _hex4(self) -> int:
        """serde_json's `decode_hex_escape`: a bad digit is reported right after it, or with
        `whole_hex_escapes` after the four (the positions Meilisearch gives for document payloads
        and for other request bodies respectively)."""
        if self.i + 4 > self.n:
            self.i = self.n
            raise self.error(EOF_STRING)
        chunk = self.body[self.i : self.i + 4]
        if _HEX4.fullmatch(chunk) is not None:
            self.i += 4
            return int(chunk, 16)
        if self.whole_hex_escapes:
            self.i += 4
        else:
            self.i += next(k for k, c in enumerate(chunk) if c not in _HEX) + 1
        raise self.error(INVALID_ESCAPE)

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
            if c in (_LBRACKET, _LBRACE):
                if enclosing >= 0:
                    stack.append(enclosing)
                    enclosing = -1
                self.i += 1
                frame = c
            else:
                self.scalar(c, raw=True)

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
                self._expect(_QUOTE, KEY_MUST_BE_STRING)
                self.string(validate=False)
                self._expect(_COLON, EXPECTED_COLON)
            enclosing = frame

    def _expect(self, byte: int, mismatch: str) -> None:
        """Consume `byte` after whitespace, inside an object: `mismatch` on another byte, EOF_OBJECT at
        the end (both peek errors)."""
        c = self.ws()
        if c == byte:
            self.i += 1
        else:
            raise self.peek_error(mismatch if c >= 0 else EOF_OBJECT)

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
            self.seq_items(self.value)
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

    def scalar(self, c: int, raw: bool = False) -> None:
        """A non-container value starting with byte `c` (also `peek_invalid_type`'s parsing); `raw`:
        as `ignore_value` reads it (numbers and escapes checked for syntax only)."""
        if c == 0x6E:  # n
            self.i += 1
            self.parse_ident(b"ull")
        elif c == 0x74:  # t
            self.i += 1
            self.parse_ident(b"rue")
        elif c == 0x66:  # f
            self.i += 1
            self.parse_ident(b"alse")
        elif c == _MINUS or _is_digit(c):
            if c == _MINUS:
                self.i += 1
            if raw:
                self.ignore_integer()
            else:
                self.parse_number()
        elif c == _QUOTE:
            self.i += 1
            self.string(validate=not raw)
        else:
            raise self.peek_error(EXPECTED_VALUE)

    def seq_items(self, read_item: Callable[[], None], first: bool = True) -> None:
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
            self._expect(_COLON, EXPECTED_COLON)
            self.value()


def long_int_f64(value: int) -> float:
    """serde_json's f64 for a long integer: the leading digits that fit a u64, times 10^(other digits).

    Not always the correctly rounded value, which is the point: the same float serde_json produces.
    """
    if value.bit_length() > 1100:  # > 10^330: beyond f64 whatever the digits
        raise OverflowError
    digits = str(abs(value))
    significand, rest = 0, 0
    for i, char in enumerate(digits):
        if significand * 10 + int(char) > U64_MAX:
            rest = len(digits) - i
            break
        significand = significand * 10 + int(char)
    f = float(significand) * (_POW10[rest] if rest < len(_POW10) else math.inf)
    if math.isinf(f):
        raise OverflowError
    return -f if value < 0 else f


def value_error(body: bytes) -> str | None:
    """The message of `serde_json::from_slice::<Value>(body)`'s error; None when it parses."""
    reader = Reader(body, whole_hex_escapes=True)
    try:
        reader.value()
        if reader.ws() >= 0:
            raise reader.peek_error(TRAILING_CHARACTERS)
    except JsonSyntaxError as err:
        return str(err)
    return None


def _string(text: str) -> str:
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


def to_json(value: Any) -> str:
    """serde_json's compact `Display` of a decoded JSON value (object key order kept; an integer
    beyond i64/u64 is an f64 there, a non-finite float `null`)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        if -(2**63) <= value <= U64_MAX:
            return str(value)
        return ryu(float(value))
    if isinstance(value, float):
        return ryu(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_string(str(k))}:{to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    return _string(str(value))
