"""Recursive-descent port of Meilisearch's nom filter grammar (``crates/filter-parser``).

Grammar (precedence low to high)::

    filter   = expr EOF
    expr     = and ("OR" and)*
    and      = not ("AND" not)*
    not      = "NOT" not | primary                       -- NOT NOT cancels (see `ast.negate`)
    primary  = "(" expr ")" | _geoRadius | _geoBoundingBox | _geoPolygon
             | value IN [..] | value NOT IN [..] | value op value | value IS [NOT] NULL|EMPTY
             | _vectors... [NOT] EXISTS | value [NOT] EXISTS | value value TO value
             | value [NOT] CONTAINS value | value [NOT] STARTS WITH value

Error semantics mirror nom exactly, because the messages and positions depend on them:

* a *recoverable* error (nom's ``Err::Error``) is returned as a `PErr` value and lets the caller try
  its next alternative; `primary` turns any of them into "Was expecting an operation ..." at its own
  input;
* a *failure* (nom's ``Err::Failure``, produced under ``cut``) is raised as `ParseFailure` and aborts
  the whole parse; everything after a committed keyword (``OR``, ``AND``, ``NOT``, ``(``, ``IN``, an
  operator, ``_geoRadius``...) is a failure.

`primary` parses the leading value once and then dispatches on what follows it, checking the
alternatives in nom's ``alt`` order, which yields the same result as nom re-parsing the value for each
alternative (the value parser is a pure function of its position).

Recursion budget: ``or``, ``and``, ``not`` and ``primary`` each check ``depth > MAX_PARSER_DEPTH`` on
entry and pass ``depth + 1`` down, exactly as Meilisearch (budget 200: 49 nested parentheses or 197
chained ``NOT`` are accepted, one more is "The filter exceeded the maximum depth limit"). Chained
``NOT`` are consumed in a loop and ``and`` is inlined in ``or`` (`expr`), so Python recursion is two
frames per parenthesis level (~100 at most) whatever the input.

Hot spots are inlined, with the same results as the code they stand for: `value` of an ASCII word is
one regex match, and `primary` reads a ``word op word`` comparison without calling `value`.

Before any of this, `parse_expression` tries the native whole-filter scanner
(`_native.filter_scan`, ASCII filters of the common shapes), then `parse_expression` and `primary`
try the regex fast paths of `_fast` (whole filter, parenthesised group, single clause); they only
accept inputs on which they agree with the general parser, spans included (`fast=False` turns them
all off: the tests compare both).

The grammar is kept whole in this one module (over 800 lines, most of it the `_Parser` class): its
alternatives, their order and their error semantics are read together, as nom's grammar files are; the
lexer, fast paths, AST, geo rules and messages are modules of their own.
"""

from __future__ import annotations

import re

from .._native.filter_scan import ChainScanner
from ._fast import FAST_DEPTH_UNITS, fast_chain, fast_clause, fast_group
from ._lexer import (
    KEYWORDS,
    MULTISPACE,
    RUST_WS,
    UnescapeError,
    error_word_end,
    unescape,
    unquote,
    word_end,
)
from .ast import (
    And,
    Comparison,
    Contains,
    Exists,
    Foreign,
    GeoBoundingBox,
    GeoPolygon,
    GeoRadius,
    In,
    IsEmpty,
    IsNotEmpty,
    IsNotNull,
    IsNull,
    Node,
    Not,
    NotContains,
    NotExists,
    NotIn,
    NotStartsWith,
    Or,
    Range,
    StartsWith,
    Token,
    VectorExists,
    negate,
)

__all__ = ["MAX_PARSER_DEPTH", "PErr", "ParseFailure", "parse_expression"]

MAX_PARSER_DEPTH = 200
# A fast-parsed group never needs more budget than FAST_DEPTH_UNITS, so it is only tried where that
# much is left (the general parser would then accept it too).
_FAST_GROUP_MAX_DEPTH = MAX_PARSER_DEPTH - FAST_DEPTH_UNITS

_ASCII_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
# An unquoted value made of ASCII word characters and the multispace after it (the common case of
# `value`; a non-ASCII character right after it sends the value to the general code).
_ASCII_WORD_WS = re.compile(r"([a-zA-Z0-9_.\-]+)[ \t\r\n]*")
# `_ws_float`'s number when it is well formed (an exponent marker must have digits).
_FLOAT = r"[ \t\r\n]*([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+|(?![eE])))[ \t\r\n]*"
_WS_FLOAT = re.compile(_FLOAT)
# The arguments of a well-formed `_geoRadius`, from its parenthesis (what `_geo_radius` reads).
_RADIUS_ARGS = re.compile(rf"\({_FLOAT},{_FLOAT},{_FLOAT}(?:,{_FLOAT})?\)")
# The same after ASCII spaces (which `value` skips with the rest of Rust's whitespace).
_SPACED_ASCII_WORD_WS = re.compile(r"[ \t\r\n]*([a-zA-Z0-9_.\-]+)[ \t\r\n]*")


class PErr:
    """A positioned parse error: `kind` plus the fragment ``source[start:end]`` it points at."""

    __slots__ = ("arg", "end", "kind", "start")

    def __init__(self, kind: str, start: int, end: int, arg: object = None) -> None:
        self.kind = kind
        self.start = start
        self.end = end
        self.arg = arg


class ParseFailure(Exception):
    """nom's ``Err::Failure``: aborts the parse with `error`."""

    def __init__(self, error: PErr) -> None:
        super().__init__(error.kind)
        self.error = error


class _GeoErr(Exception):
    def __init__(self, pos: int) -> None:
        super().__init__(pos)
        self.pos = pos


class _Parser:
    __slots__ = ("fast", "n", "s", "vectors")

    def __init__(self, source: str, fast: bool = True) -> None:
        self.s = source
        self.n = len(source)
        self.fast = fast
        self.vectors = "_vectors" in source  # else no clause can be a vector filter

    # -- small helpers -------------------------------------------------------------------------

    def _ms(self, i: int) -> int:
        s, n = self.s, self.n
        while i < n and s[i] in MULTISPACE:
            i += 1
        return i

    def _ms1(self, i: int) -> int:
        """Position after >= 1 multispace characters, or -1 (nom's `multispace1`)."""
        j = self._ms(i)
        return j if j > i else -1

    def _is_word(self, i: int, kw: str) -> bool:
        """Whether the value-component word at `i` is exactly `kw` (nom's `word_exact`)."""
        s = self.s
        if not s.startswith(kw, i):
            return False
        k = i + len(kw)
        if k == self.n:
            return True
        c = s[k]
        if c < "\x80":
            return c not in _ASCII_WORD_CHARS
        return word_end(s, i) == k

    def _after_keyword(self, i: int, kw: str) -> int:
        """`_kw` without its leading spaces (the caller saw the keyword's first letter at `i`): the
        position after the keyword and its spaces, or -1."""
        s, n = self.s, self.n
        if not s.startswith(kw, i):
            return -1
        k = i + len(kw)
        if k < n:
            c = s[k]
            if c < "\x80":
                if c in _ASCII_WORD_CHARS:
                    return -1
            elif word_end(s, i) != k:
                return -1
            while k < n and s[k] in MULTISPACE:
                k += 1
        return k

    def _kw(self, i: int, kw: str) -> int:
        """``ws(word_exact(kw))``: position after the keyword and its trailing spaces, or -1."""
        s = self.s
        if not s.startswith(kw, i):
            if i >= self.n or s[i] not in MULTISPACE:
                return -1
            i = self._ms(i)
        return self._after_keyword(i, kw)

    # -- values --------------------------------------------------------------------------------

    def value(self, i: int) -> tuple[Token, int] | PErr:
        """``value = WS* (word | 'quoted' | "quoted") multispace*`` with the reserved-geo checks."""
        s, n = self.s, self.n
        j = i
        while j < n and s[j] in RUST_WS:
            j += 1
        c = s[j] if j < n else ""
        if c == "_":
            self._reserved_geo_value(j)
        m = _ASCII_WORD_WS.match(s, j)
        if m is not None:
            close, end = m.end(1), m.end()
            if close == n or s[close] < "\x80":  # else Rust may count what follows as part of the word
                val = s[j:close]
                if val in KEYWORDS:
                    return PErr("expected_value", j, error_word_end(s, j), True)
                # no backslash can be in a word: nothing to unescape
                return Token(val, s, j, close), end
        quote = ""
        if c == "'" or c == '"':
            start = j + 1
            close, _ = self._quoted_by(start, c)
            if close >= n:
                raise ParseFailure(PErr("missing_closing", j, n, c))
            val = s[start:close]
            quote = c
            end = close + 1
        else:
            we = word_end(s, j)
            if we == j or s[j:we] in KEYWORDS:
                return PErr("expected_value", j, error_word_end(s, j), we != j)
            start, close, end = j, we, we
            val = s[j:we]
        while end < n and s[end] in MULTISPACE:
            end += 1
        if "\\" in val:
            try:
                # a quoted value's escaped quotes, then the escapes (`unquote`, which the fast paths use)
                val = unquote(val, quote) if quote else unescape(val)
            except UnescapeError as exc:
                if exc.kind == "parse_int":
                    return PErr("invalid_escaped_number", start, close)
                if exc.kind == "invalid_char":
                    return PErr("malformed_value", start, close)
                # Meilisearch returns nom's `Incomplete` here, which makes its parser panic; we abort
                # the parse with a "Malformed value" error on the value instead.
                raise ParseFailure(PErr("malformed_value", start, close)) from None
        return Token(val, s, start, close), end

    def _reserved_geo_value(self, j: int) -> None:
        s, n = self.s, self.n
        if s.startswith("_geoPoint", j):
            raise ParseFailure(PErr("reserved_geo", j, n, "_geoPoint"))
        if s.startswith("_geoDistance", j):
            raise ParseFailure(PErr("reserved_geo", j, n, "_geoDistance"))
        word = s[j : word_end(s, j)]
        if word == "_geo":
            raise ParseFailure(PErr("reserved_geo", j, n, "_geo"))
        if word == "_geoRadius":
            raise ParseFailure(PErr("misused_geo_radius", j, n))
        if word == "_geoBoundingBox":
            raise ParseFailure(PErr("misused_geo_bounding_box", j, n))

    def _quoted_by(self, start: int, quote: str) -> tuple[int, bool]:
        """Index of the closing quote (or n) and whether an escaped quote was seen."""
        s, n = self.s, self.n
        close = s.find(quote, start)
        if close < 0:
            close = n
        if s.find("\\", start, close) < 0:
            return close, False
        escaped = False
        k = start
        while k < n:
            ch = s[k]
            if ch == quote:
                return k, escaped
            if ch == "\\":
                if k + 1 >= n:
                    raise ParseFailure(PErr("malformed_value", start, n))
                escaped |= s[k + 1] == quote
                k += 2
                continue
            k += 1
        return n, escaped

    def _dotted_part(self, i: int) -> tuple[Token, int] | None:
        """``parse_dotted_value_part``; None on any error, `ParseFailure` never escapes."""
        try:
            return self._dotted_part_strict(i)
        except ParseFailure:
            return None

    def _dotted_part_strict(self, i: int) -> tuple[Token, int] | None:
        s, n = self.s, self.n
        c = s[i] if i < n else ""
        if c == "'" or c == '"':
            close, escaped = self._quoted_by(i + 1, c)
            if close >= n:
                raise ParseFailure(PErr("char", close, n, c))
            start, end = i + 1, close + 1
            val = s[start:close]
            if escaped:
                val = val.replace("\\" + c, c)
        else:
            close = word_end(s, i)
            dot = s.find(".", i, close)
            if dot >= 0:
                close = dot
            if close == i:
                return None
            start, end, val = i, close, s[i:close]
        if "\\" in val:
            try:
                val = unescape(val)
            except UnescapeError:
                return None
        return Token(val, s, start, close), end

    def _dotted_cut(self, i: int, kind: str) -> tuple[Token, int]:
        try:
            r = self._dotted_part_strict(i)
        except ParseFailure as exc:
            if exc.error.kind == "char":
                raise ParseFailure(PErr("vector_invalid_quotes", i, self.n)) from None
            r = None
        if r is None:
            raise ParseFailure(PErr(kind, i, self.n))
        return r

    # -- expressions ---------------------------------------------------------------------------

    def expr(self, i: int, depth: int) -> tuple[Node, int] | PErr:
        """``or = and ("OR" and)*`` with ``and = not ("AND" not)*`` inlined (one call per
        parenthesis level, not one per ``OR`` operand). Depths and errors are the two rules': `or`
        checks `depth`, every `and` checks `depth + 2` (its own entry and its `not`'s), an ``AND`` or
        ``OR`` commits (`cut`). `not_` is only called when a ``NOT`` may follow."""
        n = self.n
        if depth > MAX_PARSER_DEPTH:
            return PErr("depth", i, n)
        s = self.s
        primary = self.primary
        d = depth + 2
        ors: list[Node] | None = None
        while True:
            # -- and: its first operand --
            if d > MAX_PARSER_DEPTH:
                r: tuple[Node, int] | PErr = PErr("depth", i, n)
            elif s.startswith("NOT", i) or s[i : i + 1] in MULTISPACE:
                r = self.not_(i, d)
            else:
                r = primary(i, d + 1)
            if isinstance(r, PErr):
                if ors is None:
                    return r
                raise ParseFailure(r)
            node, i = r
            ands: list[Node] | None = None
            while True:
                c = s[i : i + 1]
                if c == "A":
                    j = self._after_keyword(i, "AND")
                elif c and c in MULTISPACE:
                    j = self._kw(i, "AND")
                else:
                    break
                if j < 0:
                    break
                r = self.not_(j, d) if s.startswith("NOT", j) else primary(j, d + 1)
                if isinstance(r, PErr):
                    raise ParseFailure(r)
                if ands is None:
                    ands = [node]
                child, i = r
                ands.append(child)
            if ands is not None:
                node = And(ands)
            # -- or: the next `and`, if any --
            if ors is not None:
                ors.append(node)
            c = s[i : i + 1]
            if c == "O":
                j = self._after_keyword(i, "OR")
            elif c and c in MULTISPACE:
                j = self._kw(i, "OR")
            else:
                break
            if j < 0:
                break
            if ors is None:
                ors = [node]
            i = j
        return (Or(ors) if ors is not None else node), i

    def not_(self, i: int, depth: int) -> tuple[Node, int] | PErr:
        """``not = "NOT" not | primary``, iteratively: each ``NOT`` costs one unit of budget and
        everything after a ``NOT`` is under `cut`. An even number of ``NOT`` cancels out."""
        negations = 0
        s = self.s
        while True:
            if depth > MAX_PARSER_DEPTH:
                err = PErr("depth", i, self.n)
                if negations:
                    raise ParseFailure(err)
                return err
            c = s[i : i + 1]
            if c == "N":
                j = self._after_keyword(i, "NOT")
            elif c and c in MULTISPACE:
                j = self._kw(i, "NOT")
            else:
                break
            if j < 0:
                break
            negations += 1
            i = j
            depth += 1
        r = self.primary(i, depth + 1)
        if isinstance(r, PErr):
            if negations:
                raise ParseFailure(r)
            return r
        if negations & 1:
            node, end = r
            return negate(node), end
        return r

    def primary(self, i: int, depth: int) -> tuple[Node, int] | PErr:
        s, n = self.s, self.n
        if depth > MAX_PARSER_DEPTH:
            return PErr("depth", i, n)
        j = i
        while j < n and s[j] in MULTISPACE:
            j += 1
        c = s[j : j + 1]
        if c == "(":
            if self.fast and depth < _FAST_GROUP_MAX_DEPTH:
                # the group's content alone through the fast path; only a well-formed group that is
                # closed right after it is taken, anything else is parsed again below
                quick = fast_group(s, j + 1, _geo_rule)
                if quick is not None:
                    node, k = quick
                    while k < n and s[k] in MULTISPACE:
                        k += 1
                    if k < n and s[k] == ")":
                        return node, self._ms(k + 1)
            k = j + 1
            while k < n and s[k] in MULTISPACE:
                k += 1
            r = self.expr(k, depth + 1)
            if isinstance(r, PErr):
                raise ParseFailure(r)
            node, k = r
            while k < n and s[k] in MULTISPACE:
                k += 1
            if k < n and s[k] == ")":
                k += 1
                while k < n and s[k] in MULTISPACE:
                    k += 1
                return node, k
            raise ParseFailure(PErr("missing_closing", i, n, ")"))
        if c == "_":
            we = word_end(s, j)
            word = s[j:we]
            if word == "_geoRadius":
                return self._geo_radius(we)
            if word == "_geoBoundingBox":
                return self._geo_bounding_box(we)
            if word == "_geoPolygon":
                return self._geo_polygon(we)
            if word == "_foreign" and s.startswith("(", we):
                return self._foreign(i, we, depth)
        if self.fast:
            quick = fast_clause(s, i)
            if quick is not None:
                return quick
        elif c != "_":
            # `value` inlined for an ASCII word (what `value(i)` returns, see there), and a comparison
            # right after it: the only alternatives before it, `IN` and `NOT IN`, start with a letter
            m = _ASCII_WORD_WS.match(s, j)
            if m is not None:
                close, e = m.end(1), m.end()
                if close == n or s[close] < "\x80":
                    word = s[j:close]
                    if word not in KEYWORDS:
                        fid = Token(word, s, j, close)
                        c = s[e : e + 1]
                        if c and c in "<>=":
                            op = c + "=" if c != "=" and s.startswith("=", e + 1) else c
                        elif c == "!" and s.startswith("=", e + 1):
                            op = "!="
                        else:
                            after = self._after_value(i, (fid, e))
                            return PErr("invalid_primary", i, n) if after is None else after
                        k = e + len(op)
                        m = _SPACED_ASCII_WORD_WS.match(s, k)
                        if m is not None:  # `value(k)` inlined, as above
                            vs, close = m.span(1)
                            if (close == n or s[close] < "\x80") and s[vs] != "_":
                                word = s[vs:close]
                                if word not in KEYWORDS:
                                    return Comparison(fid, op, Token(word, s, vs, close)), m.end()
                        rhs = self.value(k)
                        if isinstance(rhs, PErr):
                            raise ParseFailure(rhs)
                        return Comparison(fid, op, rhs[0]), rhs[1]
        v1 = self.value(i)
        if isinstance(v1, PErr):
            # `parse_error_reserved_keyword`: a keyword where a field was expected is final.
            if v1.kind == "expected_value" and v1.arg:
                raise ParseFailure(v1)
            return PErr("invalid_primary", i, n)
        after = self._after_value(i, v1)
        if after is None and v1[0].raw == "_foreign" and v1[0].start == j:
            # `_foreign` not followed by `(`: nom's `parse_foreign` committed on the word
            raise ParseFailure(PErr("foreign", v1[0].end, n, i))
        return PErr("invalid_primary", i, n) if after is None else after

    # -- _foreign ------------------------------------------------------------------------------

    def _foreign(self, i: int, k: int, depth: int) -> tuple[Node, int]:
        """``_foreign(value, expr)`` from its parenthesis at `k` (`i`: the clause's start). Any error
        inside is a failure of kind ``foreign`` at the inner error's fragment (nom's ``map_cut``)."""
        s, n = self.s, self.n
        try:
            k = self._ms(k + 1)
            fid = self.value(k)
            if isinstance(fid, PErr):
                raise ParseFailure(fid)
            token, k = fid
            k = self._ms(k)
            if not s.startswith(",", k):
                raise ParseFailure(PErr("expected_value", k, n))
            r = self.expr(self._ms(k + 1), depth)
            if isinstance(r, PErr):
                raise ParseFailure(r)
            inner, k = r
            k = self._ms(k)
            if not s.startswith(")", k):
                raise ParseFailure(PErr("expected_value", k, n))
        except ParseFailure as failure:
            raise ParseFailure(PErr("foreign", failure.error.start, failure.error.end, i)) from None
        return Foreign(token, inner, i), self._ms(k + 1)

    def _after_value(self, i: int, v1: tuple[Token, int]) -> tuple[Node, int] | None:
        """The value-led alternatives of `primary`, in nom's `alt` order."""
        s, n = self.s, self.n
        fid, e = v1
        c = s[e] if e < n else ""
        if c == "I":  # value IN [..]
            k = self._kw(e, "IN")
            if k >= 0:
                return self._in_body(fid, k, False)
        not_at_e = c == "N" and self._is_word(e, "NOT")
        if not_at_e:  # value NOT IN [..]
            k = self._kw(e + 3, "IN")
            if k >= 0:
                return self._in_body(fid, k, True)
        if c and c in "<>!=":
            op = s[e : e + 2] if s.startswith(("<=", ">=", "!="), e) else c
            if op != "!":
                r = self.value(e + len(op))
                if isinstance(r, PErr):
                    raise ParseFailure(r)
                val, end = r
                return Comparison(fid, op, val), end
        if c == "I" and s.startswith("IS", e):
            k = self._ms1(e + 2)
            if k >= 0:
                if s.startswith("NULL", k):
                    return IsNull(fid), k + 4
                if s.startswith("EMPTY", k):
                    return IsEmpty(fid), k + 5
                if s.startswith("NOT", k):
                    k2 = self._ms1(k + 3)
                    if k2 >= 0:
                        if s.startswith("NULL", k2):
                            return IsNotNull(fid), k2 + 4
                        if s.startswith("EMPTY", k2):
                            return IsNotEmpty(fid), k2 + 5
        if self.vectors:
            vec = self._vectors(i)
            if vec is not None:
                return vec
        if s.startswith("EXISTS", e):
            return Exists(fid), e + 6
        not_ms = self._ms1(e + 3) if c == "N" and s.startswith("NOT", e) else -1
        if not_ms >= 0 and s.startswith("EXISTS", not_ms):
            return NotExists(fid), not_ms + 6
        r2 = self.value(e)  # value value TO value
        if not isinstance(r2, PErr):
            low, e2 = r2
            if s.startswith("TO", e2):
                k = self._ms1(e2 + 2)
                if k >= 0:
                    r3 = self.value(k)
                    if isinstance(r3, PErr):
                        raise ParseFailure(r3)
                    high, e3 = r3
                    return Range(fid, low, high), e3
        if s.startswith("CONTAINS", e):
            val, end = self._cut_value(e + 8)
            return Contains(fid, val, Token("CONTAINS", s, e, e + 8)), end
        if not_ms >= 0 and s.startswith("CONTAINS", not_ms):
            val, end = self._cut_value(not_ms + 8)
            return NotContains(fid, val, Token("CONTAINS", s, not_ms, not_ms + 8)), end
        if s.startswith("STARTS WITH", e):
            val, end = self._cut_value(e + 11)
            return StartsWith(fid, val, Token("STARTS WITH", s, e, e + 11)), end
        if not_ms >= 0 and s.startswith("STARTS WITH", not_ms):
            val, end = self._cut_value(not_ms + 11)
            return NotStartsWith(fid, val, Token("STARTS WITH", s, not_ms, not_ms + 11)), end
        return None

    def _cut_value(self, i: int) -> tuple[Token, int]:
        r = self.value(i)
        if isinstance(r, PErr):
            raise ParseFailure(r)
        return r

    def _in_body(self, fid: Token, k: int, negated: bool) -> tuple[Node, int]:
        """After ``IN`` and its spaces: ``"[" value ("," value)* ","? "]"``, all under `cut`."""
        s, n = self.s, self.n
        if k >= n or s[k] != "[":
            raise ParseFailure(PErr("in_opening_bracket", k, n))
        k += 1
        values: list[Token] = []
        ms = MULTISPACE
        r = self.value(k)
        if not isinstance(r, PErr):
            tok, k = r
            values.append(tok)
            while True:
                j = k
                while j < n and s[j] in ms:
                    j += 1
                if j >= n or s[j] != ",":
                    break
                r = self.value(j + 1)
                if isinstance(r, PErr):
                    break
                tok, k = r
                values.append(tok)
            j = k
            while j < n and s[j] in ms:
                j += 1
            if j < n and s[j] == ",":
                k = self._ms(j + 1)
        j = k
        while j < n and s[j] in ms:
            j += 1
        if j < n and s[j] == "]":
            end = j + 1
            while end < n and s[end] in ms:
                end += 1
            return (NotIn(fid, values) if negated else In(fid, values)), end
        if k >= n:
            raise ParseFailure(PErr("in_closing_bracket", k, n))
        raise ParseFailure(PErr("in_expected_value", k, n))

    # -- _vectors ------------------------------------------------------------------------------

    def _vectors(self, i: int) -> tuple[Node, int] | None:
        """``_vectors[.embedder[.suffix]] (EXISTS | NOT EXISTS)``; None when it is not a vector filter."""
        s, n = self.s, self.n
        j = self._ms(i)
        if not s.startswith("_vectors", j):
            return None
        k = j + 8
        fid = Token("_vectors", s, j, k)
        embedder: Token | None = None
        kind = "none"
        fragment: Token | None = None
        pos = self._ms1(k)
        if pos < 0:
            if k >= n or s[k] != ".":
                return None
            k += 1
            # From here on this can only be a vector filter: every error is final.
            if k < n and s[k] == " ":
                raise ParseFailure(PErr("vector_missing_embedder", k, k + 1))
            embedder, k = self._dotted_cut(k, "vector_invalid_embedder")
            if s.startswith(".fragments", k):
                k += 10
                if k >= n or s[k] != ".":
                    raise ParseFailure(PErr("vector_missing_fragment", k, n))
                fragment, k = self._dotted_cut(k + 1, "vector_invalid_fragment")
                kind = "fragment"
            else:
                for suffix in ("userProvided", "documentTemplate", "regenerate"):
                    if s.startswith("." + suffix, k):
                        kind = suffix
                        k += 1 + len(suffix)
                        break
            if k < n and s[k] == ".":
                part = self._dotted_part(k + 1)
                previous = None if kind == "none" else ("fragments" if kind == "fragment" else kind)
                if part is None:
                    raise ParseFailure(PErr("vector_unknown_suffix", k, k + 1, (previous, ".")))
                tok = part[0]
                raise ParseFailure(PErr("vector_unknown_suffix", tok.start, tok.end, (previous, tok.value)))
            pos = self._ms1(k)
            if pos < 0:
                raise ParseFailure(PErr("vector_leftover", k, n))
        node = VectorExists(fid, embedder, kind, fragment)
        if s.startswith("EXISTS", pos):
            return node, pos + 6
        if s.startswith("NOT", pos):
            q = self._ms1(pos + 3)
            if q >= 0 and s.startswith("EXISTS", q):
                return Not(node), q + 6
        raise ParseFailure(PErr("vector_operation", pos, n))

    # -- geo -----------------------------------------------------------------------------------

    def _ws_float(self, i: int) -> tuple[Token, int] | int:
        """``ws(recognize_float)``: (token, end) or the position of a recoverable error."""
        s, n = self.s, self.n
        m = _WS_FLOAT.match(s, i)
        if m is not None:  # a well-formed number: what the loop below finds, in one match
            start, end = m.span(1)
            return Token(s[start:end], s, start, end), m.end()
        i = self._ms(i)
        j = i
        if j < n and s[j] in "+-":
            j += 1
        k = j
        while k < n and "0" <= s[k] <= "9":
            k += 1
        if k > j:
            if k < n and s[k] == ".":
                k += 1
                while k < n and "0" <= s[k] <= "9":
                    k += 1
        elif j < n and s[j] == ".":
            k = j + 1
            while k < n and "0" <= s[k] <= "9":
                k += 1
            if k == j + 1:
                return j + 1
        else:
            return j
        if k < n and s[k] in "eE":
            x = k + 1
            if x < n and s[x] in "+-":
                x += 1
            y = x
            while y < n and "0" <= s[y] <= "9":
                y += 1
            if y == x:
                raise _GeoErr(x)  # `cut(digit1)` in the exponent: a failure
            k = y
        return Token(s[i:k], s, i, k), self._ms(k)

    def _float_list(self, i: int) -> tuple[list[Token], int] | int:
        """``separated_list1(tag(","), ws(recognize_float))``."""
        r = self._ws_float(i)
        if isinstance(r, int):
            return r
        items = [r[0]]
        k = r[1]
        s, n = self.s, self.n
        while k < n and s[k] == ",":
            r = self._ws_float(k + 1)
            if isinstance(r, int):
                break
            items.append(r[0])
            k = r[1]
        return items, k

    def _bracket(self, i: int) -> tuple[list[Token], int] | int:
        """``ws(delimited(char('['), float_list, char(']')))``."""
        s, n = self.s, self.n
        i = self._ms(i)
        if i >= n or s[i] != "[":
            return i
        r = self._float_list(i + 1)
        if isinstance(r, int):
            return r
        items, k = r
        if k >= n or s[k] != "]":
            return k
        return items, self._ms(k + 1)

    def _pair_list(self, i: int) -> tuple[list[list[Token]], int] | int:
        r = self._bracket(i)
        if isinstance(r, int):
            return r
        groups = [r[0]]
        k = r[1]
        s, n = self.s, self.n
        while k < n and s[k] == ",":
            r = self._bracket(k + 1)
            if isinstance(r, int):
                break
            groups.append(r[0])
            k = r[1]
        return groups, k

    def _geo_radius(self, k: int) -> tuple[Node, int]:
        s, n = self.s, self.n
        try:
            if k >= n or s[k] != "(":
                raise _GeoErr(k)
            r = self._float_list(k + 1)
            if isinstance(r, int):
                raise _GeoErr(r)
            args, k = r
            if k >= n or s[k] != ")":
                raise _GeoErr(k)
        except _GeoErr as exc:
            raise ParseFailure(PErr("geo_radius", exc.pos, n)) from None
        k += 1
        if not 3 <= len(args) <= 4:
            raise ParseFailure(PErr("geo_radius_argument_count", k, n, len(args)))
        return GeoRadius(args[0], args[1], args[2], args[3] if len(args) == 4 else None), k

    def _geo_pairs(self, k: int, kind: str, trailing_comma: bool) -> tuple[list[list[Token]], int]:
        s, n = self.s, self.n
        try:
            if k >= n or s[k] != "(":
                raise _GeoErr(k)
            r = self._pair_list(k + 1)
            if isinstance(r, int):
                raise _GeoErr(r)
            groups, k = r
            if trailing_comma:
                j = self._ms(k)
                if j < n and s[j] == ",":
                    k = self._ms(j + 1)
            if k >= n or s[k] != ")":
                raise _GeoErr(k)
        except _GeoErr as exc:
            raise ParseFailure(PErr(kind, exc.pos, n)) from None
        return groups, k + 1

    @staticmethod
    def _check_pairs(groups: list[list[Token]]) -> None:
        for group in groups:
            if len(group) != 2:
                first = group[0]
                raise ParseFailure(PErr("geo_coordinates_not_pair", first.start, first.end, len(group)))

    def _geo_bounding_box(self, k: int) -> tuple[Node, int]:
        groups, k = self._geo_pairs(k, "geo_bounding_box", False)
        if len(groups) != 2:
            raise ParseFailure(PErr("geo_bounding_box", k, self.n))
        self._check_pairs(groups)
        return GeoBoundingBox((groups[0][0], groups[0][1]), (groups[1][0], groups[1][1])), k

    def _geo_polygon(self, k: int) -> tuple[Node, int]:
        groups, k = self._geo_pairs(k, "geo_polygon", True)
        if len(groups) < 3:
            last = groups[-1][-1]
            raise ParseFailure(PErr("geo_polygon_not_enough_points", last.start, last.end, len(groups)))
        self._check_pairs(groups)
        return GeoPolygon([(g[0], g[1]) for g in groups]), k


def _geo_rule(source: str, j: int) -> tuple[Node, int] | None:
    """What `primary` makes of a `_geoRadius` / `_geoBoundingBox` / `_geoPolygon` clause starting at
    `j` (after its spaces), for the fast paths; None when it is no such clause or an error (the
    general parser then parses the filter again and reports it)."""
    we = word_end(source, j)
    word = source[j:we]
    if word == "_geoRadius" and (m := _RADIUS_ARGS.match(source, we)) is not None:
        lat, lng, meters = (Token(source[a:b], source, a, b) for a, b in (m.span(1), m.span(2), m.span(3)))
        a, b = m.span(4)
        return GeoRadius(lat, lng, meters, Token(source[a:b], source, a, b) if a >= 0 else None), m.end()
    p = _Parser(source)
    try:
        if word == "_geoRadius":
            return p._geo_radius(we)
        if word == "_geoBoundingBox":
            return p._geo_bounding_box(we)
        if word == "_geoPolygon":
            return p._geo_polygon(we)
    except ParseFailure:
        return None
    return None


# The native whole-filter fast path, over this package's AST (it imports nothing from above it).
_SCANNER = ChainScanner(
    token=Token,
    comparison=Comparison,
    range_=Range,
    in_=In,
    not_in=NotIn,
    exists=Exists,
    not_exists=NotExists,
    is_null=IsNull,
    is_not_null=IsNotNull,
    is_empty=IsEmpty,
    is_not_empty=IsNotEmpty,
    contains=Contains,
    not_contains=NotContains,
    starts_with=StartsWith,
    not_starts_with=NotStartsWith,
    and_=And,
    or_=Or,
    negate=negate,
    unquote=unquote,
    unquote_error=UnescapeError,
    keywords=KEYWORDS,
    geo_rule=_geo_rule,
)
scan_expression = _SCANNER.parse


def parse_expression(source: str, *, fast: bool = True) -> Node:
    """Parse a non-blank filter string; raises `ParseFailure` carrying Meilisearch's error.

    `fast=False` disables the fast paths (the tests compare both).
    """
    if fast:
        node: Node | None = scan_expression(source)
        if node is None:
            node = fast_chain(source, _geo_rule)
        if node is not None:
            return node
    p = _Parser(source, fast)
    r = p.expr(0, 0)
    if isinstance(r, PErr):
        raise ParseFailure(r)
    node, end = r
    if end != p.n:
        raise ParseFailure(PErr("expected_eof", end, p.n))
    return node
