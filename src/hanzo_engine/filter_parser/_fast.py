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
`fast_chain` parses a whole filter made only of such clauses, ``AND``/``OR``, parentheses (at most 8
levels) and leading ``NOT`` (at most 4 per operand), building the same tree as the grammar; those
limits keep it far inside the recursion budget, so it never has to reproduce the depth error.
`fast_group` does the same for the inside of one parenthesis, for the general parser. The unit and
property tests check all three against the general parser (`parse_expression(..., fast=False)`).
"""

from __future__ import annotations

import re

from ._lexer import KEYWORDS
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
_V = r"""("[^"\\]*"|'[^'\\]*'|[\w.\-]++)"""
_VN = r"""(?:"[^"\\]*"|'[^'\\]*'|[\w.\-]++)"""
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
# After `)`: ws, then an optional connector (group 1); never fails.
_CONNECTOR = re.compile(rf"{_WS}*(?:(AND|OR)(?![\w.\-]){_WS}*)?")
_SPACE_CHARS = frozenset(" \t\r\n")
_NOT = re.compile(rf"{_WS}*(NOT)(?![\w.\-]){_WS}*")


def _operand(s: str, start: int, end: int) -> Token | None:
    """The token for a matched operand, or None if the general parser must decide."""
    first = s[start]
    if first == '"' or first == "'":
        return Token(s[start + 1 : end - 1], s, start + 1, end - 1)
    word = s[start:end]
    if word in KEYWORDS or word.startswith("_geo"):
        return None
    return Token(word, s, start, end)


def _word_may_extend(s: str, start: int, end: int) -> bool:
    # An unquoted word immediately followed by a non-ASCII character might be longer for Rust.
    return end < len(s) and s[end] > "\x7f" and s[start] not in "\"'"


def fast_clause(s: str, i: int) -> tuple[Node, int] | None:
    """One plain clause at `i` and the position after it, or None (use the general parser)."""
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


def fast_chain(s: str) -> Node | None:
    """The whole filter if it is built only from plain clauses, parentheses, NOT, AND and OR."""
    if "_geo" in s or "_vectors" in s:
        return None  # never in the fast path (bar `_vectors = x`): do not waste a partial parse
    r = _fast_or(s, 0, 0)
    if r is None or r[1] != len(s):
        return None
    return r[0]


def fast_group(s: str, pos: int) -> tuple[Node, int] | None:
    """The expression inside a parenthesis opened just before `pos`, stopping before its ``)``."""
    return _fast_or(s, pos, 1)


def _fast_or(s: str, pos: int, level: int) -> tuple[Node, int] | None:
    """``or``-level chain from `pos`; stops before anything that is not an AND/OR connector."""
    n = len(s)
    groups: list[Node] = []
    ands: list[Node] = []
    chain_match = _CHAIN_CLAUSE.match
    keywords = KEYWORDS
    while True:
        # leading NOTs and parentheses (after a connector the input is already past the spaces)
        negations = 0
        p = pos
        c = s[p : p + 1]
        while c == "N" or c in _SPACE_CHARS:
            while c and c in _SPACE_CHARS:
                p += 1
                c = s[p : p + 1]
            if c != "N":
                break
            m = _NOT.match(s, p)
            if m is None:
                break
            if negations == _MAX_FAST_NOTS or (m.end(1) < n and s[m.end(1)] > "\x7f"):
                return None
            negations += 1
            p = pos = m.end()
            c = s[p : p + 1]
        if p < n and s[p] == "(":
            if level == _MAX_FAST_LEVELS:
                return None
            r = _fast_or(s, p + 1, level + 1)
            if r is None:
                return None
            node, pos = r
            while pos < n and s[pos] in " \t\r\n":
                pos += 1
            if pos >= n or s[pos] != ")":
                return None
            conn = _CONNECTOR.match(s, pos + 1)
            assert conn is not None  # the pattern matches the empty string
            pos, conn_start, conn_end = conn.end(), conn.start(1), conn.end(1)
        else:
            m = chain_match(s, pos)
            if m is None:
                return None
            regs = m.regs
            op_start, op_end = regs[2]
            if op_start >= 0:
                # comparison, inlined: the hot case
                fs, fe = regs[1]
                vs, ve = regs[3]
                first = s[fs]
                if first == '"' or first == "'":
                    fid = Token(s[fs + 1 : fe - 1], s, fs + 1, fe - 1)
                else:
                    word = s[fs:fe]
                    if word in keywords or word.startswith("_geo"):
                        return None
                    fid = Token(word, s, fs, fe)
                first = s[vs]
                if first == '"' or first == "'":
                    val = Token(s[vs + 1 : ve - 1], s, vs + 1, ve - 1)
                else:
                    word = s[vs:ve]
                    if word in keywords or word.startswith("_geo") or (ve < n and s[ve] > "\x7f"):
                        return None
                    val = Token(word, s, vs, ve)
                node = Comparison(fid, s[op_start:op_end], val)
            else:
                clause = _clause(s, regs)
                if clause is None:
                    return None
                node = clause
            pos = regs[0][1]
            conn_start, conn_end = regs[17]
        while negations:
            node = negate(node)
            negations -= 1
        ands.append(node)
        if conn_start < 0:
            break
        if conn_end < n and s[conn_end] > "\x7f":
            return None
        if s[conn_start] == "O":
            groups.append(ands[0] if len(ands) == 1 else And(ands))
            ands = []
    groups.append(ands[0] if len(ands) == 1 else And(ands))
    return (groups[0] if len(groups) == 1 else Or(groups)), pos
