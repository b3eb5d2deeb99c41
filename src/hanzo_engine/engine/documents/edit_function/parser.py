"""The Pratt parser of the Rhai subset: tokens to a tree of tuples (`Node`, tagged by its first item),
statements and global functions; `compile_script` is lexer + parser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from .common import MAX_EXPR_DEPTH, MAX_FUNCTIONS, CompileError, Node, Pos, _node_pos
from .lexer import Lexer, Token

BINARY: Final = {
    "??": (10, False),
    "||": (30, False),
    "|": (30, False),
    "^": (30, False),
    "&&": (60, False),
    "&": (60, False),
    "==": (90, False),
    "!=": (90, False),
    "<": (110, False),
    "<=": (110, False),
    ">": (110, False),
    ">=": (110, False),
    "in": (130, False),
    "..": (140, False),
    "..=": (140, False),
    "+": (150, False),
    "-": (150, False),
    "*": (180, False),
    "/": (180, False),
    "%": (180, False),
    "**": (190, True),
    "<<": (210, False),
    ">>": (210, False),
}
POSTFIX_BP: Final = 240
ASSIGN_OPS: Final = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "**=", "<<=", ">>=", "&=", "|=", "^="})


class Parser:
    def __init__(
        self,
        tokens: list[Token],
        depth: int = 0,
        loops: int = 0,
        functions: dict[tuple[str, int], Node] | None = None,
    ) -> None:
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
            raise CompileError(
                "Function definitions must be at global level and cannot be inside a block or "
                "another function",
                tok.pos,
            )
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
                raise CompileError(
                    f"Expecting ')' to close the parameters list of function '{name.value}'", param.pos
                )
            if param.value in params:
                raise CompileError(f"Duplicated parameter {param.value} for function {name.value}", param.pos)
            params.append(param.value)
            if self._is(","):
                self._take()
            elif not self._is(")"):
                raise CompileError(
                    f"Expecting ')' to close the parameters list of function '{name.value}'", self.tok.pos
                )
        self._take()
        key = (name.value, len(params))
        if key in self.functions:
            n = len(params)
            raise CompileError(
                f"Function {name.value} with "
                + (
                    "no parameters already exists"
                    if n == 0
                    else "1 parameter already exists"
                    if n == 1
                    else f"{n} parameters already exists"
                ),
                name.pos,
            )
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
                raise CompileError(
                    f"Expecting ')' to close the arguments list of this function call '{name}'", self.tok.pos
                )
            args.append(self._expr(0))
            if self._is(","):
                self._take()
            elif not self._is(")"):
                if self.tok.kind == "eof":
                    raise CompileError(
                        f"Expecting ')' to close the arguments list of this function call '{name}'",
                        self.tok.pos,
                    )
                raise CompileError(
                    f"Expecting ',' to separate the arguments to function call '{name}'", self.tok.pos
                )
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
                        raise CompileError(
                            "Expecting ',' to separate the items of this array literal", self.tok.pos
                        )
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
                        raise CompileError(
                            f"Expecting ':' to follow the property '{key.value}' in this object map literal",
                            self.tok.pos,
                        )
                    self._take()
                    entries.append((str(key.value), self._expr(0)))
                    if self._is(","):
                        self._take()
                    elif not self._is("}"):
                        if self.tok.kind == "eof":
                            raise CompileError("Expecting '}' to end this object map literal", self.tok.pos)
                        raise CompileError(
                            "Expecting ',' to separate the items of this object map literal", self.tok.pos
                        )
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
                    if (
                        pattern[0] == "bin"
                        and pattern[1] in ("..", "..=")
                        and all(p[0] == "lit" and type(p[1]) is int for p in pattern[2:4])
                    ):
                        end = pattern[3][1] + (1 if pattern[1] == "..=" else 0)
                        patterns.append(range(pattern[2][1], end))
                    elif pattern[0] == "lit":
                        patterns.append(pattern[1])
                    else:
                        raise CompileError(
                            "Expecting a constant value in this switch case",
                            _node_pos(pattern) or self.tok.pos,
                        )
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
