"""Regex fast paths for the common filter shapes; they must agree exactly with the general parser.

`fast_clause` recognises one "plain" clause at a position: ``f op v``, ``f [NOT] IN [v, ...]``,
``f lo TO hi``, ``f IS [NOT] NULL|EMPTY``, ``f [NOT] EXISTS``, ``f [NOT] CONTAINS v``,
``f [NOT] STARTS WITH v``, where every operand is an unquoted word
(not a keyword, not starting with ``_geo``) or a quoted string without backslashes, and whitespace is
ASCII. For those inputs the general parser's alternatives provably resolve the same way:

* ``_``-prefixed fields are only accepted for comparisons (a ``_vectors`` field would otherwise be
  tried as a vector filter before ``EXISTS``/``TO``; comparisons come before that in nom's order);
* a ``TO`` lower bound starting with ``EXISTS`` is rejected (nom tries ``EXISTS`` as a prefix tag
  first);
* a word directly followed by a non-ASCII character is rejected (Rust may count that character as part
  of the word).

Anything else returns None and the caller runs the general parser, which also produces every error.
`fast_chain` parses a whole filter made only of such clauses, geo clauses (handed to the general
parser's own geo rules), ``AND``/``OR``, parentheses (at most 8 levels) and leading ``NOT`` (at most 4
per operand), building the same tree as the grammar; those limits keep it far inside the recursion
budget, so it never has to reproduce the depth error. `fast_group` does the same for the inside of
one parenthesis, for the general parser. The unit and property tests check all three against the
general parser (`parse_expression(..., fast=False)`).

Speed notes (this is the hot path of every filtered search): the most common clause shapes are one
match of `_QUICK`, whose lookaheads make the keyword / `_geo` / non-ASCII checks in C; groups are read
with `Match.span` / `start` (`Match.regs` builds a tuple per group of the pattern, which costs more
than the match); parentheses use an explicit stack rather than recursion.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ._lexer import KEYWORDS, UnescapeError, unquote
from .ast import (
    And,
    Comparison,
    Contains,
    Exists,
    In,
    IsEmpty,
    IsNotEmpty,
    IsNotNull,
    IsNull,
    Node,
    NotContains,
    NotExists,
    NotIn,
    NotStartsWith,
    Or,
    Range,
    StartsWith,
    Token,
    negate,
)

__all__ = ["fast_chain", "fast_clause"]

# Possessive `++`: a word must never give characters back (nom's `take_while1` does not backtrack),
# otherwise `xIN [a]` would match as `x IN [a]`.
_DQ = r'"[^"\\]*(?:\\[\s\S][^"\\]*)*"'
_SQ = r"'[^'\\]*(?:\\[\s\S][^'\\]*)*'"
_V = rf"""({_DQ}|{_SQ}|[\w.\-]++)"""
_VN = rf"""(?:{_DQ}|{_SQ}|[\w.\-]++)"""
_WS = r"[ \t\r\n]"

# Group numbers: 1 field | 2 op, 3 value, 4 trailing ws | 5 NOT, 6 list body | 7 low, 8 high,
# 9 trailing ws | 10 IS NOT, 11 NULL/EMPTY | 12 NOT (EXISTS) | 13 NOT, 14 CONTAINS / STARTS WITH,
# 15 value, 16 trailing ws | chain only: 17 AND/OR connector
_CLAUSE_BODY = (
    rf"{_WS}*{_V}{_WS}*(?:"
    rf"(<=|>=|!=|<|>|=){_WS}*{_V}({_WS}*)"
    rf"|(NOT{_WS}+)?IN{_WS}*\[({_WS}*(?:{_VN}(?:{_WS}*,{_WS}*{_VN})*(?:{_WS}*,)?)?){_WS}*\]{_WS}*"
    rf"|{_V}{_WS}*TO{_WS}+{_V}({_WS}*)"
    rf"|IS{_WS}+(NOT{_WS}+)?(NULL|EMPTY)"
    rf"|(NOT{_WS}+)?EXISTS"
    rf"|(NOT{_WS}+)?(CONTAINS|STARTS WITH){_WS}*{_V}({_WS}*)"
    r")"
)
_CLAUSE = re.compile(_CLAUSE_BODY)
# The clause followed by an optional connector (``ws(word_exact("AND"|"OR"))``), one match per clause.
_CHAIN_CLAUSE = re.compile(_CLAUSE_BODY + rf"(?:{_WS}*(AND|OR)(?![\w.\-]){_WS}*)?")
_LIST_ITEM = re.compile(_VN)
# A closing parenthesis and the connector after it (group 1); none when a non-ASCII character follows
# the connector (Rust may take it as part of the word: the general parser decides).
_CLOSE = re.compile(rf"{_WS}*\)(?:{_WS}*(AND|OR)(?![\w.\-]|[^\x00-\x7f]){_WS}*)?")
# A connector (group 1) or nothing; never fails.
_CONNECTOR = re.compile(rf"(?:{_WS}*(AND|OR)(?![\w.\-]|[^\x00-\x7f]){_WS}*)?")
# The general parser's geo rules: (node, end) for the `_geo...` clause at a position, or None.
GeoRule = Callable[[str, int], "tuple[Node, int] | None"]
_SPACE_CHARS = frozenset(" \t\r\n")
# A NOT not followed by a non-ASCII character (which Rust may take as part of the word: the clause is
# then not a plain one and the general parser decides).
_NOT = re.compile(rf"{_WS}*NOT(?![\w.\-]|[^\x00-\x7f]){_WS}*")

# Building blocks of `_QUICK`, with the checks `_clause` makes in Python done by the regex. An operand
# is a quoted string without backslash (group: its content) or an unquoted word that is not a keyword
# and does not start with `_geo`; the last operand of a clause is not followed by a non-ASCII
# character, nor is the connector.
_KEYWORD = "(?:" + "|".join(sorted(KEYWORDS)) + r")(?![\w.\-])"
# (the lookahead class first: most words start with a lowercase letter, and it is far cheaper than
# trying every keyword)
_NOT_GEO = rf"(?!(?=[ACEINOSTW_])(?:{_KEYWORD}|_geo))"
_TAIL = rf"(?:{_WS}*(AND|OR)(?![\w.\-]|[^\x00-\x7f]){_WS}*)?"


def _operand_re(group: int, word_guard: str, content_guard: str = "", last: bool = False) -> str:
    """Two groups: the opening quote (`group`) and the content."""
    quoted = (
        rf"(?:(?<=\"){content_guard}[^\"\\]*(?:\\[\s\S][^\"\\]*)*"
        rf"|(?<='){content_guard}[^'\\]*(?:\\[\s\S][^'\\]*)*)"
    )
    unquoted = rf"{word_guard}{content_guard}[\w.\-]++"
    close = rf"(?({group})\{group}|(?![^\x00-\x7f]))" if last else rf"(?({group})\{group})"
    return rf"([\"'])?((?({group}){quoted}|{unquoted})){close}"


# One pattern for the most common clause shapes: comparison, `[NOT] EXISTS`, `IS [NOT] NULL|EMPTY`,
# `lo TO hi` (a low bound starting with EXISTS is left to the general parser: nom tries `EXISTS` as a
# prefix first) and `[NOT] IN [...]` (its items are checked in Python, as `_clause` does). Whenever an
# alternative matches here, the same alternative of `_CLAUSE_BODY` matches with the same spans (the
# shapes are told apart by what follows the field: an operator, a keyword, a value). Groups: 1, 2
# field | 3 operator, 4, 5 value | 6 NOT, 7 EXISTS | 8 IS NOT, 9 NULL/EMPTY | 10, 11 low, 12, 13 high
# | 14 NOT, 15 list body | 16 connector.
_QUICK_BODY = (
    rf"{_WS}*{_operand_re(1, _NOT_GEO)}{_WS}*(?:"
    rf"(<=|>=|!=|<|>|=){_WS}*{_operand_re(4, _NOT_GEO, last=True)}{_WS}*"
    rf"|(NOT{_WS}+)?(EXISTS)"
    rf"|IS{_WS}+(NOT{_WS}+)?(NULL|EMPTY)"
    rf"|{_operand_re(10, _NOT_GEO, '(?!EXISTS)')}{_WS}*TO{_WS}+{_operand_re(12, _NOT_GEO, last=True)}{_WS}*"
    rf"|(NOT{_WS}+)?IN{_WS}*\[({_WS}*(?:{_VN}(?:{_WS}*,{_WS}*{_VN})*(?:{_WS}*,)?)?){_WS}*\]{_WS}*"
    r")"
)
_QUICK = re.compile(_QUICK_BODY + _TAIL)
_QUICK_CLAUSE = re.compile(_QUICK_BODY)  # the clause alone (for `fast_clause`)


def _token(s: str, a: int, b: int) -> Token | None:
    """The token of the operand content `s[a:b]`; a backslash can only be in a quoted string's
    content (its quote at `a - 1`), decoded as the general parser does (`unquote`). None when an
    escape is invalid: the general parser gives the error."""
    val = s[a:b]
    if "\\" in val:
        try:
            val = unquote(val, s[a - 1])
        except UnescapeError:
            return None
    return Token(val, s, a, b)


def _quick_node(s: str, m: re.Match[str]) -> Node | None:
    """The node of a `_QUICK` match; None for a `_`-prefixed unquoted field outside a comparison
    (a `_vectors` filter maybe: the general parser decides). (`span` / `start` of the few groups
    needed: `Match.regs` builds a tuple for every group of the pattern.)"""
    start = m.start
    fs, fe = m.span(2)
    fid = _token(s, fs, fe)
    if fid is None:
        return None
    os_, oe = m.span(3)
    if os_ >= 0:
        vs, ve = m.span(5)
        value = _token(s, vs, ve)
        return None if value is None else Comparison(fid, s[os_:oe], value)
    if start(1) < 0 and s[fs] == "_":
        return None
    if start(7) >= 0:
        return NotExists(fid) if start(6) >= 0 else Exists(fid)
    if (kind := start(9)) >= 0:
        if s[kind] == "N":
            return IsNotNull(fid) if start(8) >= 0 else IsNull(fid)
        return IsNotEmpty(fid) if start(8) >= 0 else IsEmpty(fid)
    bs, be = m.span(15)
    if bs >= 0:
        values: list[Token] = []
        for item in _LIST_ITEM.finditer(s, bs, be):
            a, b = item.span()
            if s[a] == '"' or s[a] == "'":
                quoted = _token(s, a + 1, b - 1)
                if quoted is None:
                    return None
                values.append(quoted)
                continue
            word = s[a:b]
            if word in KEYWORDS or word.startswith("_geo"):
                return None
            values.append(Token(word, s, a, b))
        return NotIn(fid, values) if start(14) >= 0 else In(fid, values)
    ls, le = m.span(11)
    hs, he = m.span(13)
    low, high = _token(s, ls, le), _token(s, hs, he)
    return None if low is None or high is None else Range(fid, low, high)


def _operand(s: str, start: int, end: int) -> Token | None:
    """The token for a matched operand, or None if the general parser must decide."""
    first = s[start]
    if first == '"' or first == "'":
        return _token(s, start + 1, end - 1)
    word = s[start:end]
    if word in KEYWORDS or word.startswith("_geo"):
        return None
    return Token(word, s, start, end)


def _word_may_extend(s: str, start: int, end: int) -> bool:
    # An unquoted word immediately followed by a non-ASCII character might be longer for Rust.
    return end < len(s) and s[end] > "\x7f" and s[start] not in "\"'"


def fast_clause(s: str, i: int) -> tuple[Node, int] | None:
    """One plain clause at `i` and the position after it, or None (use the general parser)."""
    quick = _QUICK_CLAUSE.match(s, i)
    if quick is not None:
        node = _quick_node(s, quick)
        return None if node is None else (node, quick.end())
    m = _CLAUSE.match(s, i)
    if m is None:
        return None
    node = _clause(s, m.regs)
    return None if node is None else (node, m.end())


def _clause(s: str, regs: tuple[tuple[int, int], ...]) -> Node | None:
    fs, fe = regs[1]
    fid = _operand(s, fs, fe)
    if fid is None:
        return None
    if regs[2][0] >= 0:  # comparison
        vs, ve = regs[3]
        val = _operand(s, vs, ve)
        if val is None or _word_may_extend(s, vs, ve):
            return None
        return Comparison(fid, s[regs[2][0] : regs[2][1]], val)
    if s[fs] == "_":
        return None
    if regs[6][0] >= 0:  # [NOT] IN [..]
        values: list[Token] = []
        for item in _LIST_ITEM.finditer(s, regs[6][0], regs[6][1]):
            tok = _operand(s, item.start(), item.end())
            if tok is None:
                return None
            values.append(tok)
        return NotIn(fid, values) if regs[5][0] >= 0 else In(fid, values)
    if regs[7][0] >= 0:  # lo TO hi
        low = _operand(s, *regs[7])
        high = _operand(s, *regs[8])
        if low is None or high is None or low.raw.startswith("EXISTS"):
            return None
        if _word_may_extend(s, regs[8][0], regs[8][1]):
            return None
        return Range(fid, low, high)
    if regs[11][0] >= 0:  # IS [NOT] NULL|EMPTY
        negated = regs[10][0] >= 0
        if s[regs[11][0]] == "N":
            return IsNotNull(fid) if negated else IsNull(fid)
        return IsNotEmpty(fid) if negated else IsEmpty(fid)
    if regs[14][0] >= 0:  # [NOT] CONTAINS / STARTS WITH
        vs, ve = regs[15]
        val = _operand(s, vs, ve)
        if val is None or _word_may_extend(s, vs, ve):
            return None
        ks, ke = regs[14]
        keyword = Token(s[ks:ke], s, ks, ke)
        negated = regs[13][0] >= 0
        if ke - ks == 8:
            return NotContains(fid, val, keyword) if negated else Contains(fid, val, keyword)
        return NotStartsWith(fid, val, keyword) if negated else StartsWith(fid, val, keyword)
    return NotExists(fid) if regs[12][0] >= 0 else Exists(fid)


_MAX_FAST_LEVELS = 8  # parentheses levels; with <= 4 NOTs each, far below the 200-unit budget
_MAX_FAST_NOTS = 4


# Upper bound of the recursion budget a fast-parsed expression can use: per parenthesis level 4 units
# (or, and, not, primary) plus at most _MAX_FAST_NOTS, and one more level for the clause itself.
FAST_DEPTH_UNITS = (_MAX_FAST_LEVELS + 1) * (4 + _MAX_FAST_NOTS)


def fast_chain(s: str, geo: GeoRule | None = None) -> Node | None:
    """The whole filter if it is built only from plain clauses, geo clauses (parsed by `geo`, the
    general parser's rule), parentheses, NOT, AND and OR."""
    if "_vectors" in s or (geo is None and "_geo" in s):
        # never in the fast path (bar `_vectors = x`): do not waste a partial parse
        return None
    r = _fast_or(s, 0, 0, geo)
    if r is None or r[1] != len(s):
        return None
    return r[0]


def fast_group(s: str, pos: int, geo: GeoRule | None = None) -> tuple[Node, int] | None:
    """The expression inside a parenthesis opened just before `pos`, stopping before its ``)``."""
    return _fast_or(s, pos, 1, geo)


def _fast_or(s: str, pos: int, level: int, geo: GeoRule | None) -> tuple[Node, int] | None:
    """``or``-level chain from `pos`; stops before anything that is not an AND/OR connector.

    Parenthesised groups are handled with an explicit stack (what the enclosing group had parsed when
    the parenthesis opened), not by recursion: a group costs no call. The trees are the ones the
    recursive grammar builds; `level` counts the open parentheses against `_MAX_FAST_LEVELS`. A
    clause starting with `_geo` goes to `geo` (None: not a geo rule or an error, and the general
    parser decides); nothing but a connector may follow it directly (as in `and`: no spaces)."""
    n = len(s)
    groups: list[Node] = []
    ands: list[Node] = []
    stack: list[tuple[list[Node], list[Node], int]] = []
    quick_match = _QUICK.match
    plain = "\\" not in s  # no escape to decode: comparisons are built inline
    while True:
        c = s[pos : pos + 1]
        if c != "(" and c != "N" and c not in _SPACE_CHARS and (m := quick_match(s, pos)) is not None:
            # the hot case: a plain clause with neither NOT nor parenthesis before it
            os_, oe = m.span(3)
            if os_ >= 0 and plain:  # a comparison, inlined
                fs, fe = m.span(2)
                vs, ve = m.span(5)
                node: Node = Comparison(Token(s[fs:fe], s, fs, fe), s[os_:oe], Token(s[vs:ve], s, vs, ve))
            else:
                quick = _quick_node(s, m)
                if quick is None:
                    return None
                node = quick
            pos = m.end()
            conn_start = m.start(16)
        else:
            # leading NOTs (and, at the start or after a parenthesis, spaces)
            negations = 0
            p = pos
            while c == "N" or c in _SPACE_CHARS:
                while c and c in _SPACE_CHARS:
                    p += 1
                    c = s[p : p + 1]
                if c != "N":
                    break
                m = _NOT.match(s, p)
                if m is None:
                    break
                if negations == _MAX_FAST_NOTS:
                    return None
                negations += 1
                p = pos = m.end()
                c = s[p : p + 1]
            if c == "(":
                if level == _MAX_FAST_LEVELS:
                    return None
                stack.append((groups, ands, negations))
                groups, ands = [], []
                level += 1
                pos = p + 1
                continue
            m = quick_match(s, pos)
            if m is not None:
                quick = _quick_node(s, m)
                if quick is None:
                    return None
                node, pos, conn_start = quick, m.end(), m.start(16)
            elif geo is not None and s.startswith("_geo", p):
                rule = geo(s, p)
                if rule is None:
                    return None
                node, pos = rule
                m = _CONNECTOR.match(s, pos)
                assert m is not None  # the pattern matches the empty string
                pos, conn_start = m.end(), m.start(1)
            else:
                m = _CHAIN_CLAUSE.match(s, pos)
                if m is None:
                    return None
                regs = m.regs
                clause = _clause(s, regs)
                if clause is None:
                    return None
                node = clause
                pos = regs[0][1]
                conn_start, conn_end = regs[17]
                if conn_start >= 0 and conn_end < n and s[conn_end] > "\x7f":
                    return None
            while negations:
                node = negate(node)
                negations -= 1
        # after an operand: a connector, else the end of the chain or of the open parentheses
        ands.append(node)
        while conn_start < 0:
            groups.append(ands[0] if len(ands) == 1 else And(ands))
            node = groups[0] if len(groups) == 1 else Or(groups)
            if not stack:
                return node, pos
            m = _CLOSE.match(s, pos)
            if m is None:
                return None
            groups, ands, negations = stack.pop()
            level -= 1
            while negations:
                node = negate(node)
                negations -= 1
            ands.append(node)
            pos, conn_start = m.end(), m.start(1)
        if s[conn_start] == "O":
            groups.append(ands[0] if len(ands) == 1 else And(ands))
            ands = []
