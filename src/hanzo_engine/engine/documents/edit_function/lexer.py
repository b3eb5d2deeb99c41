"""The tokenizer of the Rhai subset: source text to `Token`s (numbers, strings, chars, backtick
templates, identifiers, keywords and punctuation), with Rhai's messages for malformed input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NoReturn

from .common import I64_MAX, Char, CompileError, Pos

KEYWORDS: Final = frozenset(
    {
        "let",
        "const",
        "if",
        "else",
        "while",
        "loop",
        "for",
        "in",
        "break",
        "continue",
        "return",
        "throw",
        "true",
        "false",
        "switch",
        "do",
        "until",
        "fn",
    }
)
RESERVED: Final = frozenset(
    {
        "import",
        "export",
        "as",
        "private",
        "try",
        "catch",
        "var",
        "static",
        "this",
        "is",
        "new",
        "use",
        "with",
        "match",
        "case",
        "public",
        "protected",
        "super",
        "module",
        "package",
        "spawn",
        "thread",
        "go",
        "sync",
        "async",
        "await",
        "yield",
        "goto",
        "exit",
        "default",
        "void",
        "null",
        "nil",
        "Fn",
        "call",
        "curry",
        "eval",
        "is_def_fn",
        "is_shared",
    }
)
PUNCT: Final = sorted(
    [
        "..=",
        "**=",
        "<<=",
        ">>=",
        "...",
        "==",
        "!=",
        "<=",
        ">=",
        "&&",
        "||",
        "+=",
        "-=",
        "*=",
        "/=",
        "%=",
        "&=",
        "|=",
        "^=",
        "**",
        "<<",
        ">>",
        "..",
        "?.",
        "??",
        "#{",
        "::",
        "=>",
        "->",
        "?[",
        "+",
        "-",
        "*",
        "/",
        "%",
        "=",
        "<",
        ">",
        "!",
        "&",
        "|",
        "^",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        ",",
        ";",
        ".",
        ":",
        "?",
        "@",
        "$",
        "~",
    ],
    key=len,
    reverse=True,
)
DIGITS: Final = frozenset("0123456789")
IDENT_START: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
IDENT_CHARS: Final = IDENT_START | DIGITS
ESCAPES: Final = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "`": "`",
    "0": "\0",
    "$": "$",
}


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
            word = self.src[self.i : j]
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
            digits = self.src[self.i : self.i + width]
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
