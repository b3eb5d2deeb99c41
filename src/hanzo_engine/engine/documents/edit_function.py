"""A sandboxed interpreter for the Rhai subset that editing documents by function uses
(`POST /indexes/{uid}/documents/edit`, Meilisearch's `update_by_function.rs`).

Tokenizer, Pratt parser and tree-walking evaluator. What it runs: `let`/`const`, assignments (`=`, `+=`
...) to variables, map properties and array/map indexes, `if`/`else` and `switch` (also as expressions),
`while`, `loop`, `do ... while/until`, `for x in ...` (arrays, ranges, strings), `break`,
`continue`, `return`, `throw`, global `fn` definitions (pure: they see only their parameters),
blocks, arithmetic on i64 (checked, as Rhai) and f64, comparisons, `&&`/`||`/`!`, `in`, `??`, `?.`,
strings ("..." with escapes, backtick templates with `${expr}`), chars, arrays, object maps (`#{a: 1}`),
`()`, and the common methods of strings, arrays, maps and numbers (`to_upper`, `len`, `push`, ...).

Sandbox: every evaluation step costs one operation and building data costs one per element (one per
`BYTES_PER_OPERATION` bytes of string), against a budget of `MAX_OPERATIONS` per document, so no
script runs forever or allocates without bound; arrays and maps hold at most 10 000 entries, strings
at most `MAX_STRING_SIZE` bytes, expressions nest at most 100 deep, and a scope holds at most 1000
variables (Meilisearch's engine limits, the string size lowered for a Python process). Errors carry
Rhai's messages and ` (line L, position P)`.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, NoReturn

import numpy as np

MAX_OPERATIONS: Final = 1_000_000
MAX_EXPR_DEPTH: Final = 100
MAX_FUNCTIONS: Final = 30
MAX_CALL_LEVELS: Final = 48  # Rhai allows 1000; a tree-walking evaluator in Python stops well before
MAX_VARIABLES: Final = 1000
MAX_ARRAY_SIZE: Final = 10_000
MAX_MAP_SIZE: Final = 10_000
MAX_STRING_SIZE: Final = 16 * 1024 * 1024
BYTES_PER_OPERATION: Final = 64
I64_MIN: Final = -(1 << 63)
I64_MAX: Final = (1 << 63) - 1

Pos = tuple[int, int]
Node = tuple[Any, ...]


class ScriptError(Exception):
    """A compilation or runtime error, with Rhai's message (position included)."""

    def __init__(self, message: str, pos: Pos | None = None) -> None:
        self.bare = message
        super().__init__(message if pos is None else f"{message} (line {pos[0]}, position {pos[1]})")

    @property
    def message(self) -> str:
        return str(self)


class CompileError(ScriptError):
    pass


class RuntimeScriptError(ScriptError):
    pass


class Char(str):
    """A Rhai `char` (a one-character string of its own type)."""

    __slots__ = ()


# -------------------------------------------------------------------------------------------------
# Tokenizer
# -------------------------------------------------------------------------------------------------

KEYWORDS: Final = frozenset({"let", "const", "if", "else", "while", "loop", "for", "in", "break", "continue",
                             "return", "throw", "true", "false", "switch", "do", "until", "fn"})
RESERVED: Final = frozenset({"import", "export", "as", "private", "try", "catch",
                             "var", "static", "this", "is", "new", "use", "with", "match", "case", "public",
                             "protected", "super", "module", "package", "spawn", "thread", "go", "sync",
                             "async", "await", "yield", "goto", "exit", "default", "void", "null", "nil",
                             "Fn", "call", "curry", "eval", "is_def_fn", "is_shared"})
PUNCT: Final = sorted([
    "..=", "**=", "<<=", ">>=", "...", "==", "!=", "<=", ">=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=",
    "|=", "^=", "**", "<<", ">>", "..", "?.", "??", "#{", "::", "=>", "->", "?[",
    "+", "-", "*", "/", "%", "=", "<", ">", "!", "&", "|", "^", "(", ")", "{", "}", "[", "]", ",", ";",
    ".", ":", "?", "@", "$", "~",
], key=len, reverse=True)
DIGITS: Final = frozenset("0123456789")
IDENT_START: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
IDENT_CHARS: Final = IDENT_START | DIGITS
ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "`": "`", "0": "\0", "$": "$"}


@dataclass(slots=True)
class Token:
    kind: str  # "int" "float" "str" "char" "tmpl" "ident" "kw" "op" "eof"
    value: Any
    pos: Pos


def _lex_error(message: str, pos: Pos) -> NoReturn:
    raise CompileError(message, pos)


class Lexer:
    def __init__(self, src: str) -> None:
        self.src = src
        self.i = 0
        self.line = 1
        self.col = 1

    def _adv(self, n: int = 1) -> None:
        for _ in range(n):
            if self.src[self.i] == "\n":
                self.line += 1
                self.col = 1
            else:
                self.col += 1
            self.i += 1

    def _peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.src[j] if j < len(self.src) else ""

    def tokens(self) -> list[Token]:
        out: list[Token] = []
        while True:
            tok = self._next()
            out.append(tok)
            if tok.kind == "eof":
                return out

    def _skip_space(self) -> None:
        while self.i < len(self.src):
            c = self.src[self.i]
            if c.isspace():
                self._adv()
            elif c == "/" and self._peek(1) == "/":
                while self.i < len(self.src) and self.src[self.i] != "\n":
                    self._adv()
            elif c == "/" and self._peek(1) == "*":
                start = (self.line, self.col)
                depth = 0
                while True:
                    if self.i >= len(self.src):
                        _lex_error("Open '/*' comment is not closed with '*/'", start)  # Rhai: unterminated
                    if self.src.startswith("/*", self.i):
                        depth += 1
                        self._adv(2)
                    elif self.src.startswith("*/", self.i):
                        depth -= 1
                        self._adv(2)
                        if depth == 0:
                            break
                    else:
                        self._adv()
            else:
                return

    def _next(self) -> Token:
        self._skip_space()
        pos = (self.line, self.col)
        if self.i >= len(self.src):
            return Token("eof", None, pos)
        c = self.src[self.i]
        if c in DIGITS:
            return self._number(pos)
        if c in IDENT_START:
            j = self.i
            while j < len(self.src) and self.src[j] in IDENT_CHARS:
                j += 1
            word = self.src[self.i:j]
            self._adv(j - self.i)
            if word in KEYWORDS:
                return Token("kw", word, pos)
            if word in RESERVED:
                _lex_error(f"'{word}' is a reserved keyword", pos)
            return Token("ident", word, pos)
        if c == '"':
            return Token("str", self._string('"', pos), pos)
        if c == "'":
            text = self._string("'", pos)
            if len(text) != 1:
                _lex_error(f"Invalid character: '{text}'", pos)
            return Token("char", Char(text), pos)
        if c == "`":
            return Token("tmpl", self._template(pos), pos)
        for p in PUNCT:
            if self.src.startswith(p, self.i):
                self._adv(len(p))
                return Token("op", p, pos)
        _lex_error(f"Unexpected '{c}'", pos)

    def _number(self, pos: Pos) -> Token:
        src = self.src
        j = self.i
        if src[j] == "0" and j + 1 < len(src) and src[j + 1] in "xXoObB":
            base = {"x": 16, "o": 8, "b": 2}[src[j + 1].lower()]
            k = j + 2
            while k < len(src) and src[k] in IDENT_CHARS:
                k += 1
            text = src[j:k]
            self._adv(k - j)
            try:
                value = int(text[2:].replace("_", ""), base)
            except ValueError:
                _lex_error(f"Invalid number: '{text}'", pos)
            if value > I64_MAX:
                _lex_error(f"Invalid number: '{text}'", pos)
            return Token("int", value, pos)
        k = j
        while k < len(src) and (src[k] in DIGITS or src[k] == "_"):
            k += 1
        is_float = False
        if k + 1 < len(src) and src[k] == "." and src[k + 1] in DIGITS:
            is_float = True
            k += 1
            while k < len(src) and (src[k] in DIGITS or src[k] == "_"):
                k += 1
        if k < len(src) and src[k] in "eE":
            m = k + 1
            if m < len(src) and src[m] in "+-":
                m += 1
            if m < len(src) and src[m] in DIGITS:
                is_float = True
                k = m
                while k < len(src) and src[k] in DIGITS:
                    k += 1
        text = src[j:k]
        self._adv(k - j)
        if k < len(src) and src[k] in IDENT_START:
            _lex_error(f"Invalid number: '{text}{src[k]}'", pos)
        clean = text.replace("_", "")
        if is_float:
            return Token("float", float(clean), pos)
        value = int(clean)
        if value > I64_MAX:
            _lex_error(f"Invalid number: '{text}'", pos)
        return Token("int", value, pos)

    def _escape(self, pos: Pos) -> str:
        self._adv()  # the backslash
        c = self._peek()
        if c in ESCAPES:
            self._adv()
            return ESCAPES[c]
        if c in ("x", "u", "U"):
            width = {"x": 2, "u": 4, "U": 8}[c]
            self._adv()
            digits = self.src[self.i:self.i + width]
            try:
                code = int(digits, 16)
                ch = chr(code)
            except ValueError:
                _lex_error(f"Invalid escape sequence: '\\{c}{digits}'", pos)
            self._adv(len(digits))
            return ch
        _lex_error(f"Invalid escape sequence: '\\{c}'", pos)

    def _string(self, quote: str, pos: Pos) -> str:
        self._adv()
        out: list[str] = []
        while True:
            c = self._peek()
            if c == "":
                _lex_error("Open string is not terminated", pos)
            if c == quote:
                self._adv()
                return "".join(out)
            if c == "\\":
                out.append(self._escape(pos))
            elif c == "\n" and quote == '"':
                _lex_error("Open string is not terminated", pos)
            else:
                out.append(c)
                self._adv()

    def _template(self, pos: Pos) -> list[Any]:
        """Backtick string: literal parts (str) and interpolated expressions (token lists)."""
        self._adv()
        parts: list[Any] = []
        buf: list[str] = []
        while True:
            c = self._peek()
            if c == "":
                _lex_error("Open string is not terminated", pos)
            if c == "`":
                self._adv()
                if buf:
                    parts.append("".join(buf))
                return parts
            if c == "\\":
                out = self._escape(pos)
                buf.append(out)
            elif c == "$" and self._peek(1) == "{":
                if buf:
                    parts.append("".join(buf))
                    buf = []
                self._adv(2)
                toks: list[Token] = []
                depth = 0
                while True:
                    tok = self._next()
                    if tok.kind == "eof":
                        _lex_error("Open string is not terminated", pos)
                    if tok.kind == "op" and tok.value in ("{", "#{"):
                        depth += 1
                    elif tok.kind == "op" and tok.value == "}":
                        if depth == 0:
                            break
                        depth -= 1
                    toks.append(tok)
                toks.append(Token("eof", None, (self.line, self.col)))
                parts.append(toks)
            else:
                buf.append(c)
                self._adv()


# -------------------------------------------------------------------------------------------------
# Parser
# -------------------------------------------------------------------------------------------------

BINARY: Final = {
    "??": (10, False), "||": (30, False), "|": (30, False), "^": (30, False), "&&": (60, False), "&": (60, False),
    "==": (90, False), "!=": (90, False), "<": (110, False), "<=": (110, False), ">": (110, False),
    ">=": (110, False), "in": (130, False), "..": (140, False), "..=": (140, False), "+": (150, False),
    "-": (150, False), "*": (180, False), "/": (180, False), "%": (180, False), "**": (190, True),
    "<<": (210, False), ">>": (210, False),
}
POSTFIX_BP: Final = 240
ASSIGN_OPS: Final = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "**=", "<<=", ">>=", "&=", "|=", "^="})


class Parser:
    def __init__(self, tokens: list[Token], depth: int = 0, loops: int = 0,
                 functions: dict[tuple[str, int], Node] | None = None) -> None:
        self.toks = tokens
        self.k = 0
        self.depth = depth
        self.loops = loops  # how many loops enclose the current statement
        self.functions: dict[tuple[str, int], Node] = {} if functions is None else functions
        self.in_function = False

    @property
    def tok(self) -> Token:
        return self.toks[self.k]

    def _take(self) -> Token:
        tok = self.toks[self.k]
        if tok.kind != "eof":
            self.k += 1
        return tok

    def _is(self, value: str, kind: str = "op") -> bool:
        return self.tok.kind == kind and self.tok.value == value

    def _expect(self, value: str, why: str) -> Token:
        if not self._is(value):
            if self.tok.kind == "eof":
                raise CompileError("Script is incomplete", self.tok.pos)
            raise CompileError(f"Expecting '{value}' {why}", self.tok.pos)
        return self._take()

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_EXPR_DEPTH:
            raise CompileError("Expression exceeds maximum complexity", self.tok.pos)

    # -- statements -------------------------------------------------------------------------------

    def program(self) -> Node:
        stmts = self._statements(top=True)
        return ("block", stmts, (1, 1))

    def _statements(self, top: bool) -> list[Node]:
        stmts: list[Node] = []
        while True:
            while self._is(";"):
                self._take()
            if self.tok.kind == "eof":
                if not top:
                    raise CompileError("Expecting '}' to terminate this block", self.tok.pos)
                return stmts
            if not top and self._is("}"):
                return stmts
            stmt, needs_semicolon = self._statement()
            stmts.append(stmt)
            if self._is(";"):
                self._take()
            elif self.tok.kind == "eof" or (not top and self._is("}")):
                continue
            elif needs_semicolon:
                raise CompileError("Expecting ';' to terminate this statement", self.tok.pos)

    def _function(self, tok: Token) -> Node:
        """`fn name(a, b) { ... }` at global level; functions see only their parameters."""
        if self.depth > 1 or self.in_function:
            raise CompileError("Function definitions must be at global level and cannot be inside a block or "
                               "another function", tok.pos)
        self._take()
        name = self._take()
        if name.kind != "ident":
            raise CompileError("Expecting function name in function declaration", name.pos)
        if not self._is("("):
            raise CompileError(f"Expecting parameters for function {name.value}", self.tok.pos)
        self._take()
        params: list[str] = []
        while not self._is(")"):
            param = self._take()
            if param.kind != "ident":
                raise CompileError(f"Expecting ')' to close the parameters list of function '{name.value}'",
                                   param.pos)
            if param.value in params:
                raise CompileError(f"Duplicated parameter {param.value} for function {name.value}", param.pos)
            params.append(param.value)
            if self._is(","):
                self._take()
            elif not self._is(")"):
                raise CompileError(f"Expecting ')' to close the parameters list of function '{name.value}'",
                                   self.tok.pos)
        self._take()
        key = (name.value, len(params))
        if key in self.functions:
            n = len(params)
            raise CompileError(f"Function {name.value} with " + ("no parameters already exists" if n == 0 else
                               "1 parameter already exists" if n == 1 else f"{n} parameters already exists"),
                               name.pos)
        if len(self.functions) >= MAX_FUNCTIONS:
            raise CompileError("Number of functions defined exceeds maximum limit", name.pos)
        loops, self.loops, self.in_function = self.loops, 0, True
        try:
            body = self._block()
        finally:
            self.loops, self.in_function = loops, False
        self.functions[key] = ("fn", name.value, params, body, name.pos)
        return ("lit", None, tok.pos)

    def _statement(self) -> tuple[Node, bool]:
        tok = self.tok
        self._enter()
        try:
            if tok.kind == "kw" and tok.value == "fn":
                return ("expr", self._function(tok)), False
            if tok.kind == "kw":
                if tok.value in ("let", "const"):
                    self._take()
                    name = self._take()
                    if name.kind != "ident":
                        raise CompileError("Expecting name of a variable", name.pos)
                    value: Node = ("lit", None, name.pos)
                    if self._is("="):
                        self._take()
                        value = self._expr(0)
                    return ("let", name.value, value, tok.value == "const", name.pos), True
                if tok.value == "while":
                    self._take()
                    cond = self._expr(0)
                    return ("while", cond, self._loop_body(), tok.pos), False
                if tok.value == "loop":
                    self._take()
                    return ("while", None, self._loop_body(), tok.pos), False
                if tok.value == "do":
                    self._take()
                    body = self._loop_body()
                    if not (self._is("while", "kw") or self._is("until", "kw")):
                        raise CompileError("Expecting 'while' or 'until' for the do statement", self.tok.pos)
                    until = self._take().value == "until"
                    return ("do", body, self._expr(0), until, tok.pos), True
                if tok.value == "for":
                    return self._for(), False
                if tok.value in ("break", "continue"):
                    if not self.loops:
                        raise CompileError("Break statement should only be used inside a loop", tok.pos)
                    self._take()
                    return (tok.value, tok.pos), True
                if tok.value in ("return", "throw"):
                    self._take()
                    value = ("lit", None, tok.pos)
                    if not (self._is(";") or self._is("}") or self.tok.kind == "eof"):
                        value = self._expr(0)
                    return (tok.value, value, tok.pos), True
            expr = self._expr(0)
            if self.tok.kind == "op" and self.tok.value in ASSIGN_OPS:
                op = self._take()
                if expr[0] not in ("var", "prop", "index"):
                    raise CompileError("Expression cannot be assigned to", op.pos)
                rhs = self._expr(0)
                return ("assign", expr, op.value, rhs, op.pos), True
            return ("expr", expr), expr[0] not in ("if", "block", "switch")
        finally:
            self.depth -= 1

    def _for(self) -> Node:
        tok = self._take()
        paren = self._is("(")
        if paren:
            self._take()
        name = self._take()
        if name.kind != "ident":
            raise CompileError("Expecting name of a variable", name.pos)
        counter = None
        if self._is(","):
            self._take()
            c = self._take()
            if c.kind != "ident":
                raise CompileError("Expecting name of a variable", c.pos)
            counter = c.value
        if paren:
            self._expect(")", "to close the parameters list")
        if not self._is("in", "kw"):
            raise CompileError("Expecting 'in' after the iteration variable", self.tok.pos)
        self._take()
        source = self._expr(0)
        return ("for", name.value, counter, source, self._loop_body(), tok.pos)

    def _loop_body(self) -> Node:
        self.loops += 1
        try:
            return self._block()
        finally:
            self.loops -= 1

    def _block(self) -> Node:
        start = self._expect("{", "to start a statement block")
        self._enter()
        stmts = self._statements(top=False)
        self._expect("}", "to terminate this block")
        self.depth -= 1
        return ("block", stmts, start.pos)

    # -- expressions ------------------------------------------------------------------------------

    def _expr(self, min_bp: int) -> Node:
        self._enter()
        try:
            left = self._prefix()
            while True:
                tok = self.tok
                if tok.kind == "op" and tok.value in (".", "?."):
                    self._take()
                    name = self._take()
                    if name.kind not in ("ident",) and not (name.kind == "kw" and name.value in ("in",)):
                        raise CompileError("Expecting name of a property", name.pos)
                    if self._is("("):
                        args = self._args(name.value)
                        left = ("method", left, name.value, args, name.pos, tok.value == "?.")
                    else:
                        left = ("prop", left, name.value, name.pos, tok.value == "?.")
                    continue
                if tok.kind == "op" and tok.value in ("[", "?["):
                    self._take()
                    idx = self._expr(0)
                    self._expect("]", "for a matching [ in this index expression")
                    left = ("index", left, idx, tok.pos, tok.value == "?[")
                    continue
                op = tok.value if tok.kind == "op" or (tok.kind == "kw" and tok.value == "in") else None
                if op is None or op not in BINARY:
                    return left
                bp, right_assoc = BINARY[op]
                if bp < min_bp or (bp == min_bp and not right_assoc):
                    return left
                self._take()
                right = self._expr(bp if right_assoc else bp + 1)
                if op in ("&&", "||", "??"):
                    left = (op, left, right, tok.pos)
                else:
                    left = ("bin", op, left, right, tok.pos)
        finally:
            self.depth -= 1

    def _args(self, name: str) -> list[Node]:
        self._expect("(", "to start arguments list of function call")
        args: list[Node] = []
        while not self._is(")"):
            if self.tok.kind == "eof":
                raise CompileError(f"Expecting ')' to close the arguments list of this function call '{name}'",
                                   self.tok.pos)
            args.append(self._expr(0))
            if self._is(","):
                self._take()
            elif not self._is(")"):
                if self.tok.kind == "eof":
                    raise CompileError(
                        f"Expecting ')' to close the arguments list of this function call '{name}'", self.tok.pos)
                raise CompileError(f"Expecting ',' to separate the arguments to function call '{name}'",
                                   self.tok.pos)
        self._take()
        return args

    def _prefix(self) -> Node:
        tok = self._take()
        kind, value, pos = tok.kind, tok.value, tok.pos
        if kind in ("int", "float", "str", "char"):
            return ("lit", value, pos)
        if kind == "tmpl":
            parts: list[Node] = []
            for part in value:
                if isinstance(part, str):
                    parts.append(("lit", part, pos))
                else:
                    sub = Parser(part, self.depth)
                    if sub.tok.kind == "eof":
                        raise CompileError("Expecting a string interpolation expression", pos)
                    parts.append(sub._expr(0))
                    if sub.tok.kind != "eof":
                        raise CompileError("Expecting '}' to end the string interpolation", sub.tok.pos)
            return ("tmpl", parts, pos)
        if kind == "kw":
            if value in ("true", "false"):
                return ("lit", value == "true", pos)
            if value == "if":
                return self._if(pos)
            if value == "switch":
                return self._switch(pos)
        if kind == "ident":
            if self._is("("):
                return ("call", value, self._args(value), pos)
            return ("var", value, pos)
        if kind == "op":
            if value == "(":
                if self._is(")"):
                    self._take()
                    return ("lit", None, pos)
                inner = self._expr(0)
                if not self._is(")"):
                    raise CompileError("Expecting ')' for a matching ( in this expression", self.tok.pos)
                self._take()
                return inner
            if value in ("-", "+", "!"):
                operand = self._expr(170)
                if value == "-" and operand[0] == "lit" and type(operand[1]) in (int, float):
                    return ("lit", -operand[1], pos)
                return ("unary", value, operand, pos)
            if value == "[":
                items: list[Node] = []
                while not self._is("]"):
                    if self.tok.kind == "eof":
                        raise CompileError("Expecting ']' to end this array literal", self.tok.pos)
                    items.append(self._expr(0))
                    if self._is(","):
                        self._take()
                    elif not self._is("]"):
                        if self.tok.kind == "eof":
                            raise CompileError("Expecting ']' to end this array literal", self.tok.pos)
                        raise CompileError("Expecting ',' to separate the items of this array literal",
                                           self.tok.pos)
                self._take()
                return ("array", items, pos)
            if value == "#{":
                entries: list[tuple[str, Node]] = []
                while not self._is("}"):
                    if self.tok.kind == "eof":
                        raise CompileError("Expecting '}' to end this object map literal", self.tok.pos)
                    key = self._take()
                    if key.kind not in ("ident", "str", "kw"):
                        raise CompileError("Expecting name of a property", key.pos)
                    if not self._is(":"):
                        raise CompileError(f"Expecting ':' to follow the property '{key.value}' in this object "
                                           "map literal", self.tok.pos)
                    self._take()
                    entries.append((str(key.value), self._expr(0)))
                    if self._is(","):
                        self._take()
                    elif not self._is("}"):
                        if self.tok.kind == "eof":
                            raise CompileError("Expecting '}' to end this object map literal", self.tok.pos)
                        raise CompileError("Expecting ',' to separate the items of this object map literal",
                                           self.tok.pos)
                self._take()
                return ("map", entries, pos)
            if value == "{":
                self.k -= 1
                return self._block()
        if kind == "eof":
            raise CompileError("Script is incomplete", pos)
        shown = value if kind in ("op", "kw", "ident") else str(value)
        raise CompileError(f"Unexpected '{shown}'", pos)

    def _switch(self, pos: Pos) -> Node:
        """`switch value { 1 | 2 => arm, 3..10 if cond => { ... }, _ => default }` (constant cases)."""
        value = self._expr(0)
        self._expect("{", "to start a switch block")
        cases: list[tuple[list[Any], Node | None, Node]] = []
        default: Node | None = None
        while not self._is("}"):
            if self.tok.kind == "eof":
                raise CompileError("Expecting '}' to end this switch block", self.tok.pos)
            if default is not None:
                raise CompileError("Default switch case must be the last", self.tok.pos)
            patterns: list[Any] | None = None
            if self.tok.kind == "ident" and self.tok.value == "_":
                self._take()
            else:
                patterns = []
                while True:
                    pattern = self._expr(31)  # above `|`, which separates the values of one case
                    if pattern[0] == "bin" and pattern[1] in ("..", "..=") and all(
                            p[0] == "lit" and type(p[1]) is int for p in pattern[2:4]):
                        end = pattern[3][1] + (1 if pattern[1] == "..=" else 0)
                        patterns.append(range(pattern[2][1], end))
                    elif pattern[0] == "lit":
                        patterns.append(pattern[1])
                    else:
                        raise CompileError("Expecting a constant value in this switch case", _node_pos(pattern)
                                           or self.tok.pos)
                    if not self._is("|"):
                        break
                    self._take()
            condition = None
            if self._is("if", "kw"):
                if patterns is None:
                    raise CompileError("This switch case cannot have a condition", self.tok.pos)
                self._take()
                condition = self._expr(0)
            if not self._is("=>"):
                raise CompileError("Expecting '=>' in this switch case", self.tok.pos)
            self._take()
            arm = self._block() if self._is("{") else self._expr(0)
            if patterns is None:
                default = arm
            else:
                cases.append((patterns, condition, arm))
            if self._is(","):
                self._take()
            elif not self._is("}") and arm[0] != "block":
                raise CompileError("Expecting ',' to separate the items in this switch block", self.tok.pos)
        self._take()
        return ("switch", value, cases, default, pos)

    def _if(self, pos: Pos) -> Node:
        cond = self._expr(0)
        then = self._block()
        other: Node | None = None
        if self._is("else", "kw"):
            self._take()
            if self._is("if", "kw"):
                tok = self._take()
                other = ("block", [("expr", self._if(tok.pos))], tok.pos)
            else:
                other = self._block()
        return ("if", cond, then, other, pos)


@dataclass(frozen=True)
class Program:
    """A compiled script: its statements and its functions by (name, number of parameters)."""

    ast: Node
    source: str
    functions: dict[tuple[str, int], Node]


def compile_script(source: str) -> Program:
    """Parse `source`; CompileError with Rhai's message on a syntax error."""
    try:
        parser = Parser(Lexer(source).tokens())
        ast = parser.program()
        return Program(ast, source, parser.functions)
    except RecursionError:
        raise CompileError("Expression exceeds maximum complexity", (1, 1)) from None


# -------------------------------------------------------------------------------------------------
# Values
# -------------------------------------------------------------------------------------------------


def type_name(v: Any) -> str:
    if v is None:
        return "()"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "i64"
    if isinstance(v, float):
        return "f64"
    if isinstance(v, Char):
        return "char"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, range):
        return "range"
    return type(v).__name__


_MAX_NATURAL: Final = struct.unpack("f", struct.pack("f", 1e13))[0]  # Rhai's f32 display bounds
_MIN_NATURAL: Final = struct.unpack("f", struct.pack("f", 1e-13))[0]


def _fmt_float(f: float) -> str:
    """Rhai's float display: `0.0`, Rust's `{:e}` outside [1e-13, 1e13], else Rust's shortest positional
    form with `.0` for a whole number."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    magnitude = abs(f)
    if magnitude == 0:
        return "0.0"
    if magnitude > _MAX_NATURAL or magnitude < _MIN_NATURAL:
        return str(np.format_float_scientific(f, trim="-", exp_digits=1)).replace("e+", "e")
    text = str(np.format_float_positional(f, trim="-"))
    return text if "." in text else f"{text}.0"


def to_display(v: Any) -> str:
    """Rhai's `to_string` of a value (what string concatenation and interpolation use)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _fmt_float(v)
    if isinstance(v, str):
        return str(v)
    return to_debug(v)


def to_debug(v: Any) -> str:
    if v is None:
        return "()"
    if isinstance(v, Char):
        return repr(str(v))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(to_debug(x) for x in v) + "]"
    if isinstance(v, dict):
        return "#{" + ", ".join(f"{to_debug(k)}: {to_debug(x)}" for k, x in v.items()) + "}"
    if isinstance(v, range):
        return f"{v.start}..{v.stop}"
    return to_display(v)


def from_json(v: Any) -> Any:
    """A JSON value as a script value (null is `()`; integers beyond i64 become floats)."""
    if isinstance(v, dict):
        return {k: from_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_json(x) for x in v]
    if isinstance(v, int) and not isinstance(v, bool) and not I64_MIN <= v <= I64_MAX:
        return float(v)
    return v


def to_json(v: Any) -> Any:
    """A script value as JSON, as serde serializes a Rhai `Dynamic` (maps with their keys sorted, as
    Rhai's `BTreeMap`; `()` and non-finite floats are null; ranges and chars as Rhai prints them)."""
    if v is None:
        return None
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: to_json(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [to_json(x) for x in v]
    if isinstance(v, Char):
        return str(v)
    if isinstance(v, range):
        return {"start": v.start, "end": v.stop}
    return v


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Return(Exception):
    def __init__(self, value: Any = None) -> None:
        self.value = value


def _fail(message: str, pos: Pos | None) -> NoReturn:
    raise RuntimeScriptError(message, pos)


def _signature_type(v: Any) -> str:
    return "&str | ImmutableString | String" if isinstance(v, str) and not isinstance(v, Char) else type_name(v)


def _not_found(name: str, args: list[Any], pos: Pos) -> NoReturn:
    _fail(f"Function not found: {name} ({', '.join(_signature_type(a) for a in args)})", pos)


def _shift(x: int, y: int, left: bool) -> int:
    """Rhai's checked `<<` / `>>` on i64: a negative count shifts the other way, a count of 64 or more
    gives 0 to the left and the sign to the right."""
    if y < 0:
        return _shift(x, min(-y, I64_MAX), not left)
    if left:
        return 0 if y >= 64 else ((x << y) + (1 << 63)) % (1 << 64) - (1 << 63)
    return x >> min(y, 63)


def _check_int(v: int, what: str, pos: Pos) -> int:
    if not I64_MIN <= v <= I64_MAX:
        _fail(what, pos)
    return v


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


# -------------------------------------------------------------------------------------------------
# Evaluator
# -------------------------------------------------------------------------------------------------


class Interpreter:
    """Runs a program over one scope; `ops` counts against `max_operations`."""

    def __init__(self, max_operations: int = MAX_OPERATIONS) -> None:
        self.max_operations = max_operations
        self.ops = 0
        self.names: list[str] = []
        self.values: list[Any] = []
        self.consts: list[bool] = []
        self.functions: dict[tuple[str, int], Node] = {}
        self.calls = 0

    # -- budget -----------------------------------------------------------------------------------

    def tick(self, pos: Pos | None, n: int = 1) -> None:
        self.ops += n
        if self.ops > self.max_operations:
            _fail("Too many operations", pos)

    def charge(self, v: Any, pos: Pos) -> Any:
        """Pay for a value just built; refuse one over the size limits."""
        if isinstance(v, str):
            if len(v) > MAX_STRING_SIZE:
                _fail("Length of string too large", pos)
            self.tick(pos, len(v) // BYTES_PER_OPERATION)
        elif isinstance(v, list):
            if len(v) > MAX_ARRAY_SIZE:
                _fail("Size of array too large", pos)
            self.tick(pos, len(v))
        elif isinstance(v, dict):
            if len(v) > MAX_MAP_SIZE:
                _fail("Size of object map too large", pos)
            self.tick(pos, len(v))
        return v

    def copy(self, v: Any, pos: Pos) -> Any:
        """Rhai values are copied when stored: a deep copy of arrays and maps, paid per element."""
        if isinstance(v, list):
            self.tick(pos, len(v))
            return [self.copy(x, pos) if isinstance(x, list | dict) else x for x in v]
        if isinstance(v, dict):
            self.tick(pos, len(v))
            return {k: self.copy(x, pos) if isinstance(x, list | dict) else x for k, x in v.items()}
        return v

    # -- scope ------------------------------------------------------------------------------------

    def push(self, name: str, value: Any, const: bool, pos: Pos) -> None:
        if len(self.names) >= MAX_VARIABLES:
            _fail("Too many variables defined", pos)
        self.names.append(name)
        self.values.append(value)
        self.consts.append(const)

    def _slot(self, name: str, pos: Pos) -> int:
        names = self.names
        for i in range(len(names) - 1, -1, -1):
            if names[i] == name:
                return i
        _fail(f"Variable not found: {name}", pos)

    def get(self, name: str) -> Any:
        i = self._slot(name, (0, 0))
        return self.values[i]

    # -- statements -------------------------------------------------------------------------------

    def run(self, program: Program) -> None:
        self.functions = program.functions
        try:
            self.block(program.ast, new_scope=False)
        except _Return:
            pass
        except (_Break, _Continue):
            _fail("Break statement should only be used inside a loop", None)
        except RecursionError:
            _fail("Stack overflow", None)

    def block(self, node: Node, new_scope: bool = True) -> Any:
        mark = len(self.names)
        result = None
        try:
            for stmt in node[1]:
                result = self.stmt(stmt)
        finally:
            if new_scope:
                del self.names[mark:], self.values[mark:], self.consts[mark:]
        return result

    def stmt(self, s: Node) -> Any:
        tag = s[0]
        if tag == "expr":
            return self.eval(s[1])
        self.tick(s[-1])
        if tag == "assign":
            self.assign(s[1], s[2], s[3], s[4])
            return None
        if tag == "let":
            value = self.eval(s[2])
            self.push(s[1], self.copy(value, s[4]), s[3], s[4])
            return None
        if tag == "while":
            cond, body, pos = s[1], s[2], s[3]
            while True:
                self.tick(pos)
                if cond is not None and not self.truth(self.eval(cond), cond):
                    return None
                try:
                    self.block(body)
                except _Break:
                    return None
                except _Continue:
                    continue
        if tag == "do":
            body, cond, until, pos = s[1], s[2], s[3], s[4]
            while True:
                self.tick(pos)
                try:
                    self.block(body)
                except _Break:
                    return None
                except _Continue:
                    pass
                if self.truth(self.eval(cond), cond) == until:
                    return None
        if tag == "for":
            return self.for_loop(s)
        if tag == "break":
            raise _Break
        if tag == "continue":
            raise _Continue
        if tag == "return":
            raise _Return(self.eval(s[1]))
        if tag == "throw":
            value = self.eval(s[1])
            text = to_display(value)
            _fail(f"Runtime error: {text}" if text else "Runtime error", s[2])
        raise AssertionError(tag)

    def for_loop(self, s: Node) -> None:
        _, name, counter, source_node, body, pos = s
        source = self.eval(source_node)
        items: Iterator[Any]
        if isinstance(source, list):
            items = iter(list(source))
        elif isinstance(source, range):
            items = iter(source)
        elif isinstance(source, str):
            items = (Char(c) for c in source)
        else:  # object maps are not iterable in Rhai (`map.keys()` is)
            _fail("For loop expects iterable type", _node_pos(source_node) or pos)
        mark = len(self.names)
        self.push(name, None, False, pos)
        if counter is not None:
            self.push(counter, 0, False, pos)
        try:
            for i, item in enumerate(items):
                self.tick(pos)
                self.values[mark] = self.copy(item, pos)
                if counter is not None:
                    self.values[mark + 1] = i
                try:
                    self.block(body)
                except _Break:
                    break
                except _Continue:
                    continue
        finally:
            del self.names[mark:], self.values[mark:], self.consts[mark:]

    def truth(self, v: Any, node: Node) -> bool:
        if not isinstance(v, bool):
            _fail(f"Data type incorrect: {type_name(v)} (expecting bool)", node[-1]
                  if isinstance(node[-1], tuple) else None)
        return v

    # -- places -----------------------------------------------------------------------------------

    def _root_const(self, target: Node) -> str | None:
        while target[0] in ("prop", "index"):
            target = target[1]
        if target[0] == "var":
            i = self._slot(target[1], target[2])
            return target[1] if self.consts[i] else None
        return None

    def assign(self, target: Node, op: str, rhs_node: Node, pos: Pos) -> None:
        const = self._root_const(target)
        if const is not None:
            _fail(f"Cannot modify constant {const}", pos)
        rhs = self.eval(rhs_node)
        if op != "=":
            rhs = self.binary(op[:-1], self.eval(target), rhs, pos)
        self.store(target, self.copy(rhs, pos), pos)

    def store(self, target: Node, value: Any, pos: Pos) -> None:
        tag = target[0]
        if tag == "var":
            self.values[self._slot(target[1], target[2])] = value
            return
        container = self.eval(target[1])
        if tag == "prop":
            if not isinstance(container, dict):
                _fail(f"No writable property '{target[2]}' - a setter is not registered for type "
                      f"'{type_name(container)}' to handle '{type_name(value)}'", target[3])
            if target[2] not in container and len(container) >= MAX_MAP_SIZE:
                _fail("Size of object map too large", pos)
            container[target[2]] = value
            return
        key = self.eval(target[2])
        if isinstance(container, list):
            container[self._array_index(container, key, target[3])] = value
        elif isinstance(container, dict):
            if not isinstance(key, str):
                _fail(f"Indexer unavailable: map [{type_name(key)}] = {type_name(value)}", target[3])
            if key not in container and len(container) >= MAX_MAP_SIZE:
                _fail("Size of object map too large", pos)
            container[str(key)] = value
        elif isinstance(container, str) and target[1][0] in ("var", "prop", "index"):
            if not isinstance(value, str) or len(value) != 1:
                _fail(f"Data type incorrect: {type_name(value)} (expecting char)", pos)
            i = self._string_index(container, key, target[3])
            self.store(target[1], container[:i] + value + container[i + 1:], pos)
        else:
            _fail(f"Indexer unavailable: {type_name(container)} [{type_name(key)}] = {type_name(value)}", target[3])

    def _array_index(self, arr: list[Any], key: Any, pos: Pos) -> int:
        if not isinstance(key, int) or isinstance(key, bool):
            _fail(f"Indexer unavailable: array [{type_name(key)}]", pos)
        i = key + len(arr) if key < 0 else key
        if not 0 <= i < len(arr):
            n = len(arr)
            _fail(f"Array index {key} out of bounds: " + ("array is empty" if n == 0 else "only 1 element in array"
                  if n == 1 else f"only {n} elements in array"), pos)
        return i

    def _string_index(self, s: str, key: Any, pos: Pos) -> int:
        if not isinstance(key, int) or isinstance(key, bool):
            _fail(f"Indexer unavailable: string [{type_name(key)}]", pos)
        i = key + len(s) if key < 0 else key
        if not 0 <= i < len(s):
            n = len(s)
            _fail(f"String index {key} out of bounds: " + ("string is empty" if n == 0 else
                  "only 1 character in string" if n == 1 else f"only {n} characters in string"), pos)
        return i

    # -- expressions ------------------------------------------------------------------------------

    def eval(self, node: Node) -> Any:
        tag = node[0]
        self.ops += 1
        if self.ops > self.max_operations:
            _fail("Too many operations", _node_pos(node))
        if tag == "lit":
            return node[1]
        if tag == "var":
            return self.values[self._slot(node[1], node[2])]
        if tag == "prop":
            obj = self.eval(node[1])
            if obj is None and node[4]:
                return None
            if isinstance(obj, dict):
                return obj.get(node[2])
            return self.method(obj, node[2], [], node[3], None, property_get=True)
        if tag == "index":
            obj = self.eval(node[1])
            if obj is None and node[4]:
                return None
            key = self.eval(node[2])
            return self.index(obj, key, node[3])
        if tag == "bin":
            left = self.eval(node[2])
            right = self.eval(node[3])
            return self.binary(node[1], left, right, node[4])
        if tag == "&&" or tag == "||":
            left = self.truth(self.eval(node[1]), node[1])
            if (tag == "&&") != left:
                return left
            return self.truth(self.eval(node[2]), node[2])
        if tag == "??":
            left = self.eval(node[1])
            return self.eval(node[2]) if left is None else left
        if tag == "unary":
            return self.unary(node[1], self.eval(node[2]), node[3])
        if tag == "tmpl":
            out = "".join(to_display(self.eval(p)) for p in node[1])
            return self.charge(out, node[2])
        if tag == "array":
            return self.charge([self.copy(self.eval(e), node[2]) for e in node[1]], node[2])
        if tag == "map":
            return self.charge({k: self.copy(self.eval(e), node[2]) for k, e in node[1]}, node[2])
        if tag == "if":
            if self.truth(self.eval(node[1]), node[1]):
                return self.block(node[2])
            return None if node[3] is None else self.block(node[3])
        if tag == "block":
            return self.block(node)
        if tag == "switch":
            value = self.eval(node[1])
            for patterns, condition, arm in node[2]:
                if any(value in p if isinstance(p, range) else _same(value, p) for p in patterns if (
                        not isinstance(p, range) or (type(value) is int))) and (
                        condition is None or self.truth(self.eval(condition), condition)):
                    return self.eval(arm)
            return None if node[3] is None else self.eval(node[3])
        if tag == "call":
            args = [self.eval(a) for a in node[2]]
            defined = self.functions.get((node[1], len(args)))
            if defined is not None:
                return self.call_script_function(defined, args, node[3])
            return self.function(node[1], args, node[3])
        if tag == "method":
            return self.method_call(node)
        raise AssertionError(tag)

    def index(self, obj: Any, key: Any, pos: Pos) -> Any:
        if isinstance(obj, list):
            return obj[self._array_index(obj, key, pos)]
        if isinstance(obj, dict):
            if not isinstance(key, str):
                _fail(f"Indexer unavailable: map [{type_name(key)}]", pos)
            return obj.get(key)
        if isinstance(obj, str):
            return Char(obj[self._string_index(obj, key, pos)])
        if _is_num(obj) and isinstance(obj, int) and isinstance(key, int) and not isinstance(key, bool):
            if not 0 <= key < 64:
                _fail(f"Bit-field index {key} out of bounds: only 64 bits in bit-field", pos)
            return bool((obj >> key) & 1)
        _fail(f"Indexer unavailable: {type_name(obj)} [{type_name(key)}]", pos)

    def unary(self, op: str, v: Any, pos: Pos) -> Any:
        if op == "!":
            if not isinstance(v, bool):
                _not_found("!", [v], pos)
            return not v
        if not _is_num(v):
            _not_found(op, [v], pos)
        if op == "-":
            return _check_int(-v, f"Negation overflow: -{v}", pos) if isinstance(v, int) else -v
        return v

    def binary(self, op: str, a: Any, b: Any, pos: Pos) -> Any:
        if op == "==":
            return _equal(a, b)
        if op == "!=":
            return not _equal(a, b)
        if op in ("<", "<=", ">", ">="):
            ordered = _compare(a, b)
            if ordered is None:
                if a is not None and type_name(a) == type_name(b):
                    _not_found(op, [a, b], pos)  # same type, no ordering (arrays, maps)
                return False  # different types never compare
            return {"<": ordered < 0, "<=": ordered <= 0, ">": ordered > 0, ">=": ordered >= 0}[op]
        if op == "in":
            return self.contains(b, a, pos)
        if op in ("..", "..="):
            if not (isinstance(a, int) and isinstance(b, int)) or isinstance(a, bool) or isinstance(b, bool):
                _not_found(op, [a, b], pos)
            return range(a, b + 1 if op == "..=" else b)
        if _is_num(a) and _is_num(b):
            return self.arith(op, a, b, pos)
        if op == "+":
            if isinstance(a, str) or isinstance(b, str):
                # a string appends (or prepends) anything, as its display text (Rhai's `add_append`)
                return self.charge(to_display(a) + to_display(b), pos)
            if isinstance(a, list) and isinstance(b, list):
                return self.charge(self.copy(a, pos) + self.copy(b, pos), pos)
            if isinstance(a, dict) and isinstance(b, dict):
                return self.charge({**self.copy(a, pos), **self.copy(b, pos)}, pos)
        if op in ("&", "|", "^") and isinstance(a, bool) and isinstance(b, bool):
            return {"&": a and b, "|": a or b, "^": a != b}[op]
        if op == "-" and isinstance(a, str) and isinstance(b, str):
            return a.replace(b, "")
        _not_found(op, [a, b], pos)

    def arith(self, op: str, a: Any, b: Any, pos: Pos) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            if op == "+":
                return _check_int(a + b, f"Addition overflow: {a} + {b}", pos)
            if op == "-":
                return _check_int(a - b, f"Subtraction overflow: {a} - {b}", pos)
            if op == "*":
                return _check_int(a * b, f"Multiplication overflow: {a} * {b}", pos)
            if op in ("/", "%"):
                if b == 0:
                    _fail(f"Division by zero: {a} / {b}" if op == "/" else
                          f"Modulo division by zero or overflow: {a} % {b}", pos)
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                if op == "/":
                    return _check_int(q, f"Division overflow: {a} / {b}", pos)
                return _check_int(a - b * q if q <= I64_MAX else I64_MAX + 1,
                                  f"Modulo division by zero or overflow: {a} % {b}", pos)
            if op == "**":
                if b < 0:
                    _fail(f"Integer raised to a negative power: {a} ** {b}", pos)
                if abs(a) > 1 and b > 63:
                    _fail(f"Exponential overflow: {a} ** {b}", pos)
                return _check_int(a ** b, f"Exponential overflow: {a} ** {b}", pos)
            if op in ("<<", ">>"):
                return _shift(a, b, op == "<<")
            if op in ("&", "|", "^"):
                return {"&": a & b, "|": a | b, "^": a ^ b}[op]
            _not_found(op, [a, b], pos)
        x, y = float(a), float(b)
        try:
            if op == "+":
                return x + y
            if op == "-":
                return x - y
            if op == "*":
                return x * y
            if op == "/":
                return x / y if y != 0 else (math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * (
                    math.copysign(1.0, y)))
            if op == "%":
                return math.fmod(x, y) if y != 0 else math.nan
            if op == "**":
                return math.pow(x, y)
        except (OverflowError, ValueError):
            return math.inf if op != "**" or x > 0 else math.nan
        _not_found(op, [a, b], pos)

    def contains(self, container: Any, item: Any, pos: Pos) -> bool:
        if isinstance(container, list):
            self.tick(pos, len(container))
            return any(_equal(x, item) for x in container)
        if isinstance(container, dict):
            if not isinstance(item, str):
                _not_found("contains", [container, item], pos)
            return item in container
        if isinstance(container, str):
            if not isinstance(item, str):
                _not_found("contains", [container, item], pos)
            return item in container
        if isinstance(container, range):
            return isinstance(item, int) and item in container
        _not_found("contains", [container, item], pos)

    # -- functions and methods --------------------------------------------------------------------

    def call_script_function(self, fn: Node, args: list[Any], pos: Pos) -> Any:
        """A script function: a scope of its own holding only its parameters (copies of the arguments);
        its value is what it returns, or its body's last value."""
        _, name, params, body, _ = fn
        if self.calls >= MAX_CALL_LEVELS:
            _fail("Stack overflow", pos)
        saved = self.names, self.values, self.consts
        self.names, self.values, self.consts = list(params), [self.copy(a, pos) for a in args], [False] * len(args)
        self.calls += 1
        try:
            return self.block(body, new_scope=False)
        except _Return as ret:
            return ret.value
        except RuntimeScriptError as err:
            if err.bare in ("Too many operations", "Stack overflow") or err.bare.endswith(" too large"):
                raise RuntimeScriptError(err.bare, pos) from None  # system errors pass through, at the call
            raise RuntimeScriptError(f"{err}\nin call to function '{name}'", pos) from None
        finally:
            self.calls -= 1
            self.names, self.values, self.consts = saved

    def function(self, name: str, args: list[Any], pos: Pos) -> Any:
        if name in ("print", "debug") and len(args) <= 1:
            return None
        if name == "type_of" and len(args) == 1:
            return type_name(args[0])
        if name == "parse_int" and len(args) in (1, 2) and isinstance(args[0], str):
            radix = args[1] if len(args) == 2 else 10
            try:
                return _check_int(int(args[0].strip(), radix), "overflow", pos)
            except (ValueError, TypeError):
                _fail(f"Error parsing integer number '{args[0]}': invalid digit found in string", pos)
        if name == "parse_float" and len(args) == 1 and isinstance(args[0], str):
            try:
                return float(args[0].strip())
            except ValueError:
                _fail(f"Error parsing floating-point number '{args[0]}': invalid float literal", pos)
        if name == "is_def_var" and len(args) == 1 and isinstance(args[0], str):
            return args[0] in self.names
        if name == "range" and len(args) in (2, 3) and all(isinstance(a, int) for a in args):
            return range(*args) if len(args) == 2 else range(args[0], args[1], args[2] or 1)
        if args:
            return self.method(args[0], name, args[1:], pos, None)
        _not_found(name, args, pos)

    def method_call(self, node: Node) -> Any:
        _, target, name, arg_nodes, pos, safe = node
        obj = self.eval(target)
        if obj is None and safe:
            return None
        args = [self.eval(a) for a in arg_nodes]
        place = target if target[0] in ("var", "prop", "index") else None
        if place is not None and name in MUTATING:
            const = self._root_const(place)
            if const is not None:
                _fail(f"Non-pure method '{name}' cannot be called on constant", pos)
        return self.method(obj, name, args, pos, place)

    def method(self, obj: Any, name: str, args: list[Any], pos: Pos, place: Node | None,
               property_get: bool = False) -> Any:
        n = len(args)
        if isinstance(obj, str):
            return self.string_method(obj, name, args, pos, place)
        if isinstance(obj, list):
            return self.array_method(obj, name, args, pos)
        if isinstance(obj, dict):
            if name == "len" and n == 0:
                return len(obj)
            if name == "is_empty" and n == 0:
                return not obj
            if name == "keys" and n == 0:
                return self.charge(list(obj), pos)
            if name == "values" and n == 0:
                return self.charge([self.copy(v, pos) for v in obj.values()], pos)
            if name == "contains" and n == 1 and isinstance(args[0], str):
                return args[0] in obj
            if name == "remove" and n == 1 and isinstance(args[0], str):
                return obj.pop(args[0], None)
            if name == "clear" and n == 0:
                obj.clear()
                return None
            if name == "get" and n == 1 and isinstance(args[0], str):
                return obj.get(args[0])
            if name == "set" and n == 2 and isinstance(args[0], str):
                obj[args[0]] = self.copy(args[1], pos)
                return None
            if name == "mixin" and n == 1 and isinstance(args[0], dict):
                obj.update(self.copy(args[0], pos))
                self.charge(obj, pos)
                return None
        if name == "to_string" and n == 0:
            return self.charge(to_display(obj), pos)
        if name == "to_debug" and n == 0:
            return self.charge(to_debug(obj), pos)
        if _is_num(obj):
            r = self.number_method(obj, name, args, pos)
            if r is not _MISSING:
                return r
        if property_get:
            _fail(f"Unknown property '{name}' - a getter is not registered for type '{type_name(obj)}'", pos)
        _not_found(name, [obj, *args], pos)

    def number_method(self, x: Any, name: str, args: list[Any], pos: Pos) -> Any:
        if args:
            if name in ("min", "max") and len(args) == 1 and _is_num(args[0]):
                return min(x, args[0]) if name == "min" else max(x, args[0])
            if name == "round" and len(args) == 1 and isinstance(args[0], int) and isinstance(x, float):
                return round(x, args[0])
            return _MISSING
        if name == "abs":
            return _check_int(abs(x), f"Negation overflow: -{x}", pos) if isinstance(x, int) else abs(x)
        if name == "sign":
            return (x > 0) - (x < 0)
        if name == "is_zero":
            return x == 0
        if name in ("is_odd", "is_even") and isinstance(x, int):
            return (x % 2 == 1) == (name == "is_odd")
        if name == "to_float":
            return float(x)
        if name == "to_int":
            if isinstance(x, float):
                if not math.isfinite(x) or not I64_MIN <= x <= I64_MAX:
                    _fail(f"Integer overflow: to_int({_fmt_float(x)})", pos)
                return int(x)
            return x
        if isinstance(x, float) or name in ("floor", "ceiling", "round", "sqrt"):
            f = float(x)
            try:
                if name == "floor":
                    return float(math.floor(f))
                if name == "ceiling":
                    return float(math.ceil(f))
                if name == "round":
                    return float(math.floor(f + 0.5)) if f >= 0 else -float(math.floor(-f + 0.5))
                if name == "int":
                    return float(math.trunc(f))
                if name == "fraction":
                    return f - math.trunc(f)
                if name == "sqrt":
                    return math.sqrt(f) if f >= 0 else math.nan
            except (OverflowError, ValueError):
                return f
            if name == "is_nan":
                return math.isnan(f)
            if name == "is_infinite":
                return math.isinf(f)
            if name == "is_finite":
                return math.isfinite(f)
        return _MISSING

    def string_method(self, s: str, name: str, args: list[Any], pos: Pos, place: Node | None) -> Any:
        n = len(args)
        a0 = args[0] if args else None

        def write_back(new: str) -> None:
            if place is not None:
                self.store(place, self.charge(new, pos), pos)

        if n == 0:
            if name == "len":
                return len(s)
            if name == "is_empty":
                return not s
            if name == "to_upper":
                return Char(s.upper()) if isinstance(s, Char) else self.charge(s.upper(), pos)
            if name == "to_lower":
                return Char(s.lower()) if isinstance(s, Char) else self.charge(s.lower(), pos)
            if name in ("make_upper", "make_lower"):
                write_back(s.upper() if name == "make_upper" else s.lower())
                return None
            if name == "trim":
                write_back(s.strip())
                return None
            if name == "to_string":
                return str(s)
            if name == "to_debug":
                return to_debug(s)
            if name == "to_chars":
                return self.charge([Char(c) for c in s], pos)
            if name == "bytes":
                return len(s.encode())
            if name == "clear":
                write_back("")
                return None
            if name == "pop":
                if not s:
                    return None
                write_back(s[:-1])
                return Char(s[-1])
            if name == "split":
                return self.charge(s.split(), pos)
            if name == "to_int" and isinstance(s, Char):
                return ord(s)
        if n == 1:
            if name == "contains" and isinstance(a0, str):
                return a0 in s
            if name == "starts_with" and isinstance(a0, str):
                return s.startswith(a0)
            if name == "ends_with" and isinstance(a0, str):
                return s.endswith(a0)
            if name == "index_of" and isinstance(a0, str):
                return s.find(a0)
            if name == "split" and isinstance(a0, str):
                return self.charge(s.split(a0) if a0 else [Char(c) for c in s], pos)
            if name == "split" and isinstance(a0, int) and not isinstance(a0, bool):
                i = max(0, min(len(s), a0 if a0 >= 0 else len(s) + a0))
                return [s[:i], s[i:]]
            if name == "sub_string" and isinstance(a0, int) and not isinstance(a0, bool):
                return s[max(0, a0 if a0 >= 0 else len(s) + a0):]
            if name in ("truncate", "crop") and isinstance(a0, int) and not isinstance(a0, bool):
                write_back(s[:max(a0, 0)] if name == "truncate" else s[max(0, a0):])
                return None
            if name == "remove" and isinstance(a0, str):
                write_back(s.replace(a0, ""))
                return None
            if name in ("append", "push") and isinstance(a0, str):
                write_back(s + a0)
                return None
            if name == "get" and isinstance(a0, int) and not isinstance(a0, bool):
                i = a0 + len(s) if a0 < 0 else a0
                return Char(s[i]) if 0 <= i < len(s) else None
        if n == 2:
            a1 = args[1]
            if name == "replace" and isinstance(a0, str) and isinstance(a1, str):
                self.charge(s, pos)
                write_back(s.replace(a0, a1) if a0 else s)
                return None
            if name == "sub_string" and isinstance(a0, int) and isinstance(a1, int) and not isinstance(a0, bool):
                start = max(0, a0 if a0 >= 0 else len(s) + a0)
                return s[start:start + max(a1, 0)]
            if name == "pad" and isinstance(a0, int) and isinstance(a1, str) and not isinstance(a0, bool):
                if a0 > MAX_STRING_SIZE:
                    _fail("Length of string too large", pos)
                if len(s) < a0 and a1:
                    padded = (s + a1 * ((a0 - len(s)) // len(a1) + 1))[:a0]
                    write_back(padded)
                return None
            if name == "index_of" and isinstance(a0, str) and isinstance(a1, int) and not isinstance(a1, bool):
                return s.find(a0, max(a1, 0))
        _not_found(name, [s, *args], pos)

    def array_method(self, arr: list[Any], name: str, args: list[Any], pos: Pos) -> Any:
        n = len(args)
        a0 = args[0] if args else None
        if n == 0:
            if name == "len":
                return len(arr)
            if name == "is_empty":
                return not arr
            if name == "pop":
                return arr.pop() if arr else None
            if name == "shift":
                return arr.pop(0) if arr else None
            if name == "clear":
                arr.clear()
                return None
            if name == "reverse":
                arr.reverse()
                return None
            if name == "sort":
                try:
                    self.tick(pos, len(arr))
                    arr.sort(key=_sort_key)
                except TypeError:
                    _fail("Cannot sort an array of mixed types", pos)
                return None
            if name in ("first", "last"):
                return (arr[0] if name == "first" else arr[-1]) if arr else None
        if n == 1:
            if name in ("push", "append", "+="):
                if name == "append" and isinstance(a0, list):
                    if len(arr) + len(a0) > MAX_ARRAY_SIZE:
                        _fail("Size of array too large", pos)
                    arr.extend(self.copy(a0, pos))
                    return None
                if len(arr) >= MAX_ARRAY_SIZE:
                    _fail("Size of array too large", pos)
                arr.append(self.copy(a0, pos))
                return None
            if name == "contains":
                return self.contains(arr, a0, pos)
            if name == "index_of":
                self.tick(pos, len(arr))
                return next((i for i, x in enumerate(arr) if _equal(x, a0)), -1)
            if name == "remove" and isinstance(a0, int) and not isinstance(a0, bool):
                i = a0 + len(arr) if a0 < 0 else a0
                return arr.pop(i) if 0 <= i < len(arr) else None
            if name == "get" and isinstance(a0, int) and not isinstance(a0, bool):
                i = a0 + len(arr) if a0 < 0 else a0
                return arr[i] if 0 <= i < len(arr) else None
            if name == "truncate" and isinstance(a0, int) and not isinstance(a0, bool):
                del arr[max(a0, 0):]
                return None
            if name == "extract" and isinstance(a0, int) and not isinstance(a0, bool):
                return self.charge(self.copy(arr[max(0, a0 if a0 >= 0 else len(arr) + a0):], pos), pos)
            if name == "join" and isinstance(a0, str):
                return self.charge(a0.join(to_display(x) for x in arr), pos)
        if n == 2:
            a1 = args[1]
            if name == "insert" and isinstance(a0, int) and not isinstance(a0, bool):
                if len(arr) >= MAX_ARRAY_SIZE:
                    _fail("Size of array too large", pos)
                arr.insert(a0 if a0 >= 0 else max(0, len(arr) + a0), self.copy(a1, pos))
                return None
            if name == "extract" and isinstance(a0, int) and isinstance(a1, int):
                start = max(0, a0 if a0 >= 0 else len(arr) + a0)
                return self.charge(self.copy(arr[start:start + max(a1, 0)], pos), pos)
            if name == "pad" and isinstance(a0, int) and not isinstance(a0, bool):
                if a0 > MAX_ARRAY_SIZE:
                    _fail("Size of array too large", pos)
                while len(arr) < a0:
                    self.tick(pos)
                    arr.append(self.copy(a1, pos))
                return None
        if name == "to_string" and n == 0:
            return self.charge(to_display(arr), pos)
        _not_found(name, [arr, *args], pos)


_MISSING: Final = object()
MUTATING: Final = frozenset({"push", "append", "pop", "shift", "insert", "remove", "clear", "reverse", "sort",
                             "truncate", "pad", "set", "mixin", "make_upper", "make_lower", "trim", "replace",
                             "crop"})


def _node_pos(node: Node) -> Pos | None:
    """Where a node starts (its position is its last tuple of two ints)."""
    for part in reversed(node):
        if isinstance(part, tuple) and len(part) == 2 and all(type(x) is int for x in part):
            return part
    return None


def _sort_key(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise TypeError
    return (0, v) if _is_num(v) else (1, v)


def _same(a: Any, b: Any) -> bool:
    """A switch case matches a value of its own type only (Rhai hashes the case constants)."""
    return type_name(a) == type_name(b) and _equal(a, b)


def _equal(a: Any, b: Any) -> bool:
    if _is_num(a) and _is_num(b):
        return bool(a == b)
    if isinstance(a, str) and isinstance(b, str):  # string and char compare by their text
        return str(a) == str(b)
    if type_name(a) != type_name(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _compare(a: Any, b: Any) -> int | None:
    if (_is_num(a) and _is_num(b)) or (isinstance(a, str) and isinstance(b, str)
                                     and type_name(a) == type_name(b)):
        return int((a > b) - (a < b))
    if isinstance(a, bool) and isinstance(b, bool):
        return int(a) - int(b)
    return None


# -------------------------------------------------------------------------------------------------
# Entry point
# -------------------------------------------------------------------------------------------------


def run_on_document(program: Program, document: dict[str, Any], context: dict[str, Any] | None,
                    max_operations: int = MAX_OPERATIONS) -> Any:
    """Run `program` with `doc` = `document` (and the constant `context` when given); the final value of
    `doc` as JSON (`None` when the script set it to `()`). RuntimeScriptError on a runtime error."""
    it = Interpreter(max_operations)
    if context is not None:
        it.push("context", from_json(context), True, (0, 0))
    it.push("doc", from_json(document), False, (0, 0))
    it.run(program)
    # the latest `doc` of the top-level scope (a top-level `let doc` shadows the document's)
    last = len(it.names) - 1 - it.names[::-1].index("doc")
    return to_json(it.values[last])
