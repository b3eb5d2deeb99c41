"""Document templates (`documentTemplate`): the Liquid subset Meilisearch renders documents with.

A template sees two variables: `doc`, the document's top-level fields (without `_vectors`), and
`fields`, one `{name, value, is_searchable}` object per top-level field in the index's field order.
`Prompt.render` returns the text sent to the embedder, cut to `documentTemplateMaxBytes` UTF-8 bytes
on a character boundary (default 400).

Supported Liquid: `{{ expr | filter: args }}`; tags `if`/`elsif`/`else`, `unless`, `case`/`when`,
`for` (`limit:`, `offset:`, `reversed`, ranges, `forloop`, `break`, `continue`, `else`), `assign`,
`capture`, `comment`, `raw`, and `{%- -%}` / `{{- -}}` whitespace control; the usual stdlib filters
(`FILTERS`). As in liquid-rust, which Meilisearch uses:

- rendering is strict: `{{ doc.missing }}` (or a filter applied to it) is an error, "Unknown index",
  while a condition (`{% if doc.missing %}`) treats a missing value as nil;
- `nil` renders as nothing, an array as its items back to back, an object as keys and values back to
  back, a float as Rust prints an `f64` (`2.0` -> `2`, no exponent);
- arrays answer `first`, `last`, `size`; objects and strings answer `size`.

Errors display as liquid-rust's: `liquid: <message>` then `  with:` and `    key=value` lines.
"""

from __future__ import annotations

import html
import math
import re
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any, Final

from hanzo_engine.rustcompat.floats import f64_display as format_float

DEFAULT_TEMPLATE: Final = (
    "{% for field in fields %}{% if field.is_searchable and field.value != nil %}"
    "{{ field.name }}: {{ field.value }}\n{% endif %}{% endfor %}"
)
DEFAULT_MAX_BYTES: Final = 400
VECTORS_FIELD: Final = "_vectors"


class LiquidError(Exception):
    """A Liquid parse or render error; `str()` is liquid-rust's display."""

    def __init__(self, message: str, context: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.context = list(context)

    def __str__(self) -> str:
        lines = [f"liquid: {self.message}\n"]
        if self.context:
            lines.append("  with:\n")
            lines.extend(f"    {key}={value}\n" for key, value in self.context)
        return "".join(lines)


class TemplateSyntaxError(LiquidError):
    pass


class RenderError(LiquidError):
    pass


class _Empty:
    """Liquid's `empty` (and, with `blank=True`, `blank`) for comparisons."""

    def __init__(self, blank: bool) -> None:
        self.blank = blank


EMPTY, BLANK = _Empty(False), _Empty(True)

# -- values -------------------------------------------------------------------------------------------


def to_text(value: Any) -> str:
    if value is None or isinstance(value, _Empty):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, list):
        return "".join(to_text(v) for v in value)
    if isinstance(value, dict):
        return "".join(str(k) + to_text(v) for k, v in value.items())
    return str(value)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _equals(a: Any, b: Any) -> bool:
    if isinstance(b, _Empty):
        a, b = b, a
    if isinstance(a, _Empty):
        if isinstance(b, _Empty):
            return True
        if a.blank and (b is None or b is False or (isinstance(b, str) and not b.strip())):
            return True
        return bool(b == "" or b == [] or b == {})
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equals(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equals(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def _compare(op: str, a: Any, b: Any) -> bool:
    if op in ("==", "!=", "<>"):
        return _equals(a, b) == (op == "==")
    if op == "contains":
        if isinstance(a, str):
            return to_text(b) in a
        if isinstance(a, list):
            return any(_equals(item, b) for item in a)
        if isinstance(a, dict):
            return to_text(b) in a
        return False
    if not ((_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str))):
        return False
    return bool({"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op])


def _truthy(value: Any) -> bool:
    return value is not None and value is not False


# -- expressions --------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:(?P<str>'[^']*'|"[^"]*")|(?P<num>-?\d+\.\d+|-?\d+)|(?P<range>\.\.)
    |(?P<cmp>==|!=|<>|<=|>=|<|>)|(?P<id>[A-Za-z_][\w-]*\??)|(?P<punct>[.\[\]()|:,=]))""",
    re.X,
)
_LITERALS: Final[dict[str, Any]] = {
    "true": True,
    "false": False,
    "nil": None,
    "null": None,
    "empty": EMPTY,
    "blank": BLANK,
}


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise TemplateSyntaxError("Unexpected character", [("text", text[pos:].strip())])
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Expr:
    """An expression: `("lit", value)`, `("var", name, [index exprs])` or `("range", a, b)`."""

    def __init__(self, kind: str, *args: Any) -> None:
        self.kind, self.args = kind, args

    def source(self) -> str:
        if self.kind == "lit":
            return repr(self.args[0])
        if self.kind == "range":
            return f"({self.args[0].source()}..{self.args[1].source()})"
        return str(self.args[0]) + "".join(f"[{i.source()}]" for i in self.args[1])


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.pos = 0

    def peek(self, value: str | None = None) -> tuple[str, str] | None:
        if self.pos >= len(self.toks):
            return None
        tok = self.toks[self.pos]
        return tok if value is None or tok[1] == value else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            raise TemplateSyntaxError(
                f"Expected `{value}`" if value else "Unexpected end of expression",
                [("expression", self.text.strip())],
            )
        self.pos += 1
        return tok

    def done(self) -> bool:
        return self.pos >= len(self.toks)

    def end(self) -> None:
        if not self.done():
            raise TemplateSyntaxError(
                "Unexpected token", [("token", self.toks[self.pos][1]), ("expression", self.text.strip())]
            )

    def expr(self) -> _Expr:
        kind, value = self.take()
        if kind == "str":
            return _Expr("lit", value[1:-1])
        if kind == "num":
            return _Expr("lit", float(value) if "." in value else int(value))
        if kind == "punct" and value == "(":
            start = self.expr()
            self.take("..")
            stop = self.expr()
            self.take(")")
            return _Expr("range", start, stop)
        if kind != "id":
            raise TemplateSyntaxError(
                "Expected a value", [("token", value), ("expression", self.text.strip())]
            )
        if value in _LITERALS and not self.peek(".") and not self.peek("["):
            return _Expr("lit", _LITERALS[value])
        indexes: list[_Expr] = []
        while True:
            if self.peek("."):
                self.take()
                indexes.append(_Expr("lit", self.take()[1]))
            elif self.peek("["):
                self.take()
                indexes.append(self.expr())
                self.take("]")
            else:
                return _Expr("var", value, indexes)

    def filters(self) -> list[tuple[str, list[_Expr], dict[str, _Expr]]]:
        out = []
        while self.peek("|"):
            self.take()
            kind, name = self.take()
            if kind != "id" or name not in FILTERS:
                raise TemplateSyntaxError("Unknown filter", [("requested filter", name)])
            args: list[_Expr] = []
            kwargs: dict[str, _Expr] = {}
            if self.peek(":"):
                self.take()
                while True:
                    tok = self.peek()
                    if (
                        tok is not None
                        and tok[0] == "id"
                        and self.pos + 1 < len(self.toks)
                        and self.toks[self.pos + 1][1] == ":"
                    ):
                        self.pos += 2
                        kwargs[tok[1]] = self.expr()
                    else:
                        args.append(self.expr())
                    if not self.peek(","):
                        break
                    self.take()
            out.append((name, args, kwargs))
        return out

    def condition(self) -> tuple[Any, ...]:
        left = self.expr()
        tok = self.peek()
        if tok is not None and (tok[0] == "cmp" or tok[1] == "contains"):
            self.take()
            node: tuple[Any, ...] = ("cmp", tok[1], left, self.expr())
        else:
            node = ("exists", left)
        tok = self.peek()
        if tok is not None and tok[1] in ("and", "or"):
            self.take()
            return (tok[1], node, self.condition())  # Liquid groups from the right
        return node


# -- rendering ----------------------------------------------------------------------------------------


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Context:
    def __init__(self, roots: dict[str, Any]) -> None:
        self.roots = roots
        self.assigned: dict[str, Any] = {}
        self.loops: list[dict[str, Any]] = []

    def root(self, name: str, strict: bool) -> tuple[bool, Any]:
        for frame in reversed(self.loops):
            if name in frame:
                return True, frame[name]
        for scope in (self.assigned, self.roots):
            if name in scope:
                return True, scope[name]
        if strict:
            names = ", ".join([*self.roots, *self.assigned])
            raise RenderError(
                "Unknown variable", [("requested variable", name), ("available variables", names)]
            )
        return False, None

    def evaluate(self, expr: _Expr, strict: bool = True) -> Any:
        if expr.kind == "lit":
            return expr.args[0]
        if expr.kind == "range":
            start, stop = (self.evaluate(e, strict) for e in expr.args)
            if not (_is_number(start) and _is_number(stop)):
                raise RenderError("Invalid range", [("range", expr.source())])
            return list(range(int(start), int(stop) + 1))
        name, indexes = expr.args
        found, value = self.root(name, strict)
        if not found:
            return None
        path = [name]
        for index_expr in indexes:
            key = self.evaluate(index_expr, strict)
            ok, child = _index(value, key)
            if not ok:
                if not strict:
                    return None
                if isinstance(value, list):
                    available = f"0..{len(value)}"
                elif isinstance(value, dict):
                    available = ", ".join(str(k) for k in value)
                else:
                    available = "[]"
                raise RenderError(
                    "Unknown index",
                    [
                        ("variable", ".".join(path)),
                        ("requested index", to_text(key)),
                        ("available indexes", available),
                    ],
                )
            path.append(to_text(key))
            value = child
        return value

    def filtered(self, expr: _Expr, filters: list[tuple[str, list[_Expr], dict[str, _Expr]]]) -> Any:
        value = self.evaluate(expr)
        for name, args, kwargs in filters:
            values = [self.evaluate(a) for a in args]
            named = {k: self.evaluate(v) for k, v in kwargs.items()}
            try:
                value = FILTERS[name](value, *values, **named)
            except (TypeError, ValueError, ZeroDivisionError, IndexError) as err:
                raise RenderError("Invalid argument", [("filter", name), ("cause", str(err))]) from None
        return value

    def test(self, cond: tuple[Any, ...]) -> bool:
        if cond[0] == "and":
            return self.test(cond[1]) and self.test(cond[2])
        if cond[0] == "or":
            return self.test(cond[1]) or self.test(cond[2])
        if cond[0] == "exists":
            return _truthy(self.evaluate(cond[1], strict=False))
        return _compare(cond[1], self.evaluate(cond[2], strict=False), self.evaluate(cond[3], strict=False))


def _index(value: Any, key: Any) -> tuple[bool, Any]:
    if isinstance(value, list):
        if _is_number(key):
            i = int(key)
            i = i + len(value) if i < 0 else i
            return (True, value[i]) if 0 <= i < len(value) else (False, None)
        special = {"first": value[:1], "last": value[-1:], "size": [len(value)]}.get(to_text(key))
        return (True, special[0]) if special else (False, None)
    if isinstance(value, dict):
        name = to_text(key)
        if name in value:
            return True, value[name]
        return (True, len(value)) if name == "size" else (False, None)
    if value is not None and not isinstance(value, _Empty) and to_text(key) == "size":
        return True, len(to_text(value))
    return False, None


Node = Callable[[_Context, list[str]], None]


def _text_node(text: str) -> Node:
    def render(ctx: _Context, out: list[str]) -> None:
        out.append(text)

    return render


def _output_node(expr: _Expr, filters: list[tuple[str, list[_Expr], dict[str, _Expr]]]) -> Node:
    def render(ctx: _Context, out: list[str]) -> None:
        out.append(to_text(ctx.filtered(expr, filters)))

    return render


def _render_all(nodes: list[Node], ctx: _Context, out: list[str]) -> None:
    for node in nodes:
        node(ctx, out)


# -- template parsing ---------------------------------------------------------------------------------

_TAG = re.compile(r"\{\{(-?)(.*?)(-?)\}\}|\{%(-?)(.*?)(-?)%\}", re.S)
_RAW_END = re.compile(r"\{%-?\s*endraw\s*-?%\}")
_COMMENT_END = re.compile(r"\{%-?\s*endcomment\s*-?%\}")


def _lex(text: str) -> list[tuple[str, str]]:
    """Text, `out` and `tag` tokens, whitespace control applied to the neighbouring text."""
    items: list[list[Any]] = []  # [kind, content, strip_left, strip_right]
    pos = 0
    while pos < len(text):
        m = _TAG.search(text, pos)
        opener = min((i for i in (text.find("{{", pos), text.find("{%", pos)) if i >= 0), default=-1)
        if m is None or (opener >= 0 and opener < m.start()):
            if opener >= 0:
                raise TemplateSyntaxError("Unclosed tag", [("text", text[opener : opener + 40])])
            items.append(["text", text[pos:], False, False])
            break
        if m.start() > pos:
            items.append(["text", text[pos : m.start()], False, False])
        if m.group(2) is not None:
            items.append(["out", m.group(2), bool(m.group(1)), bool(m.group(3))])
            pos = m.end()
            continue
        body = m.group(5).strip()
        name = body.split(None, 1)[0] if body else ""
        items.append(["tag", body, bool(m.group(4)), bool(m.group(6))])
        pos = m.end()
        if name in ("raw", "comment"):
            end = (_RAW_END if name == "raw" else _COMMENT_END).search(text, pos)
            if end is None:
                raise TemplateSyntaxError(f"Unclosed block `{name}`")
            if name == "raw":
                items.append(["text", text[pos : end.start()], False, False])
            items.append(["tag", "end" + name, False, False])
            pos = end.end()
    for i, item in enumerate(items):
        if item[0] == "text":
            continue
        if item[2] and i > 0 and items[i - 1][0] == "text":
            items[i - 1][1] = items[i - 1][1].rstrip()
        if item[3] and i + 1 < len(items) and items[i + 1][0] == "text":
            items[i + 1][1] = items[i + 1][1].lstrip()
    return [(kind, content) for kind, content, _, _ in items]


class _TemplateParser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def block(self, ends: tuple[str, ...]) -> tuple[list[Node], str, str]:
        """Nodes up to one of the `ends` tags; returns (nodes, end tag name, end tag arguments)."""
        nodes: list[Node] = []
        while self.pos < len(self.items):
            kind, content = self.items[self.pos]
            self.pos += 1
            if kind == "text":
                nodes.append(_text_node(content))
            elif kind == "out":
                p = _Parser(content)
                expr = p.expr()
                filters = p.filters()
                p.end()
                nodes.append(_output_node(expr, filters))
            else:
                name, args = ([*content.split(None, 1), ""])[:2] if content else ("", "")
                if name in ends:
                    return nodes, name, args.strip()
                if not name or name.startswith("#"):
                    continue  # an inline comment
                nodes.append(self.tag(name, args.strip()))
        if ends:
            raise TemplateSyntaxError("Unclosed block", [("expected", " or ".join(f"`{e}`" for e in ends))])
        return nodes, "", ""

    def tag(self, name: str, args: str) -> Node:
        if name in ("if", "unless"):
            branches: list[tuple[tuple[Any, ...] | None, list[Node]]] = []
            cond: tuple[Any, ...] | None = self._condition(args)
            negate = name == "unless"
            while True:
                body, end, end_args = self.block(("elsif", "else", "end" + name))
                branches.append((cond, body))
                if end == "elsif":
                    cond = self._condition(end_args)
                elif end == "else":
                    cond = None
                else:
                    break

            def render_if(ctx: _Context, out: list[str]) -> None:
                for i, (c, body) in enumerate(branches):
                    if c is None or (ctx.test(c) != (negate and i == 0)):
                        _render_all(body, ctx, out)
                        return

            return render_if
        if name == "for":
            return self._for(args)
        if name == "case":
            return self._case(args)
        if name == "assign":
            target, eq, rest = args.partition("=")
            if not eq or not re.fullmatch(r"[A-Za-z_][\w-]*", target.strip()):
                raise TemplateSyntaxError("Invalid assignment", [("tag", f"assign {args}")])
            p = _Parser(rest)
            expr, filters = p.expr(), p.filters()
            p.end()
            var = target.strip()
            return lambda ctx, out: ctx.assigned.__setitem__(var, ctx.filtered(expr, filters))
        if name == "capture":
            var = args.strip()
            body, _, _ = self.block(("endcapture",))

            def render_capture(ctx: _Context, out: list[str]) -> None:
                inner: list[str] = []
                _render_all(body, ctx, inner)
                ctx.assigned[var] = "".join(inner)

            return render_capture
        if name in ("comment", "raw"):
            body, _, _ = self.block(("end" + name,))
            return (
                (lambda ctx, out: _render_all(body, ctx, out)) if name == "raw" else (lambda ctx, out: None)
            )
        if name in ("break", "continue"):
            signal = _Break if name == "break" else _Continue

            def render_jump(ctx: _Context, out: list[str]) -> None:
                raise signal

            return render_jump
        raise TemplateSyntaxError("Unknown tag", [("requested tag", name)])

    @staticmethod
    def _condition(args: str) -> tuple[Any, ...]:
        p = _Parser(args)
        cond = p.condition()
        p.end()
        return cond

    def _for(self, args: str) -> Node:
        p = _Parser(args)
        kind, var = p.take()
        if kind != "id":
            raise TemplateSyntaxError("Expected a loop variable", [("tag", f"for {args}")])
        p.take("in")
        iterable = p.expr()
        limit: _Expr | None = None
        offset: _Expr | None = None
        reversed_ = False
        while not p.done():
            _, word = p.take()
            if word == "reversed":
                reversed_ = True
            elif word in ("limit", "offset"):
                p.take(":")
                if word == "limit":
                    limit = p.expr()
                else:
                    offset = p.expr()
            else:
                raise TemplateSyntaxError("Unexpected token", [("token", word), ("tag", f"for {args}")])
        body, end, _ = self.block(("else", "endfor"))
        otherwise: list[Node] = self.block(("endfor",))[0] if end == "else" else []

        def render_for(ctx: _Context, out: list[str]) -> None:
            items = _iterable(ctx.evaluate(iterable))
            start = int(ctx.evaluate(offset)) if offset is not None else 0
            items = items[start:]
            if limit is not None:
                items = items[: max(int(ctx.evaluate(limit)), 0)]
            if reversed_:
                items = items[::-1]
            if not items:
                _render_all(otherwise, ctx, out)
                return
            n = len(items)
            for i, item in enumerate(items):
                ctx.loops.append(
                    {
                        var: item,
                        "forloop": {
                            "index": i + 1,
                            "index0": i,
                            "rindex": n - i,
                            "rindex0": n - i - 1,
                            "first": i == 0,
                            "last": i == n - 1,
                            "length": n,
                        },
                    }
                )
                try:
                    _render_all(body, ctx, out)
                except _Continue:
                    continue
                except _Break:
                    break
                finally:
                    ctx.loops.pop()

        return render_for

    def _case(self, args: str) -> Node:
        p = _Parser(args)
        subject = p.expr()
        p.end()
        _, end, end_args = self.block(("when", "else", "endcase"))  # text before the first `when` is dropped
        branches: list[tuple[list[_Expr] | None, list[Node]]] = []
        while end != "endcase":
            values: list[_Expr] | None = None
            if end == "when":
                q = _Parser(end_args)
                values = [q.expr()]
                while q.peek(",") or q.peek("or"):
                    q.take()
                    values.append(q.expr())
                q.end()
            body, next_end, next_args = self.block(("when", "else", "endcase"))
            branches.append((values, body))
            end, end_args = next_end, next_args

        def render_case(ctx: _Context, out: list[str]) -> None:
            value = ctx.evaluate(subject, strict=False)
            matched = False
            for values, body in branches:
                if values is None:
                    if not matched:
                        _render_all(body, ctx, out)
                    return
                if any(_equals(value, ctx.evaluate(v, strict=False)) for v in values):
                    matched = True
                    _render_all(body, ctx, out)

        return render_case


def _iterable(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return [[k, v] for k, v in value.items()]
    return [value]


# -- filters ------------------------------------------------------------------------------------------


def _num(v: Any) -> int | float:
    if _is_number(v):
        return int(v) if isinstance(v, int) else float(v)
    text = to_text(v).strip()
    try:
        return int(text)
    except ValueError:
        return float(text) if text else 0


def _truncate(v: Any, length: Any = 50, ellipsis: Any = "...") -> str:
    text, end = to_text(v), to_text(ellipsis)
    n = int(_num(length))
    return text if len(text) <= n else text[: max(n - len(end), 0)] + end


def _truncatewords(v: Any, words: Any = 15, ellipsis: Any = "...") -> str:
    parts = to_text(v).split()
    n = max(int(_num(words)), 1)
    return " ".join(parts) if len(parts) <= n else " ".join(parts[:n]) + to_text(ellipsis)


def _slice(v: Any, start: Any, length: Any = 1) -> Any:
    seq = v if isinstance(v, list) else to_text(v)
    s, n = int(_num(start)), int(_num(length))
    s = s + len(seq) if s < 0 else s
    return seq[max(s, 0) : max(s, 0) + n]


def _sequence(v: Any) -> list[Any]:
    return v if isinstance(v, list) else ([] if v is None else [v])


def _prop(item: Any, key: Any) -> Any:
    return item.get(to_text(key)) if isinstance(item, dict) else None


def _sort_key(item: Any) -> tuple[int, Any]:
    return (0, item) if _is_number(item) else (1, to_text(item))


FILTERS: Final[dict[str, Callable[..., Any]]] = {
    "abs": lambda v: abs(_num(v)),
    "append": lambda v, s: to_text(v) + to_text(s),
    "at_least": lambda v, n: max(_num(v), _num(n)),
    "at_most": lambda v, n: min(_num(v), _num(n)),
    "capitalize": lambda v: to_text(v)[:1].upper() + to_text(v)[1:],
    "ceil": lambda v: math.ceil(_num(v)),
    "compact": lambda v: [x for x in _sequence(v) if x is not None],
    "concat": lambda v, other: _sequence(v) + _sequence(other),
    "default": lambda v, d, allow_false=False: (
        d if (v is None or (v is False and not allow_false) or v in ("", [], {})) else v
    ),
    "divided_by": lambda v, n: (
        _num(v) // _num(n) if isinstance(_num(v), int) and isinstance(_num(n), int) else _num(v) / _num(n)
    ),
    "downcase": lambda v: to_text(v).lower(),
    "escape": lambda v: html.escape(to_text(v)),
    "escape_once": lambda v: html.escape(html.unescape(to_text(v))),
    "first": lambda v: (v[0] if v else None) if isinstance(v, list) else to_text(v)[:1],
    "floor": lambda v: math.floor(_num(v)),
    "join": lambda v, sep=" ": to_text(sep).join(to_text(x) for x in _sequence(v)),
    "last": lambda v: (v[-1] if v else None) if isinstance(v, list) else to_text(v)[-1:],
    "lstrip": lambda v: to_text(v).lstrip(),
    "map": lambda v, key: [_prop(x, key) for x in _sequence(v)],
    "minus": lambda v, n: _num(v) - _num(n),
    "modulo": lambda v, n: _num(v) % _num(n),
    "newline_to_br": lambda v: to_text(v).replace("\n", "<br />\n"),
    "plus": lambda v, n: _num(v) + _num(n),
    "prepend": lambda v, s: to_text(s) + to_text(v),
    "remove": lambda v, s: to_text(v).replace(to_text(s), ""),
    "remove_first": lambda v, s: to_text(v).replace(to_text(s), "", 1),
    "replace": lambda v, a, b="": to_text(v).replace(to_text(a), to_text(b)),
    "replace_first": lambda v, a, b="": to_text(v).replace(to_text(a), to_text(b), 1),
    "reverse": lambda v: _sequence(v)[::-1],
    "round": lambda v, digits=0: (
        round(_num(v), int(_num(digits)))
        if int(_num(digits)) > 0
        else int(Decimal(str(_num(v))).quantize(Decimal(1), "ROUND_HALF_UP"))
    ),
    "rstrip": lambda v: to_text(v).rstrip(),
    "size": lambda v: len(v) if isinstance(v, (list, dict)) else len(to_text(v)),
    "slice": _slice,
    "sort": lambda v, key=None: sorted(_sequence(v), key=lambda x: _sort_key(_prop(x, key) if key else x)),
    "sort_natural": lambda v, key=None: sorted(
        _sequence(v), key=lambda x: to_text(_prop(x, key) if key else x).lower()
    ),
    "split": lambda v, sep: [
        p for p in (to_text(v).split(to_text(sep)) if to_text(sep) else list(to_text(v)))
    ],
    "strip": lambda v: to_text(v).strip(),
    "strip_html": lambda v: re.sub(r"<[^>]*>", "", to_text(v)),
    "strip_newlines": lambda v: to_text(v).replace("\r", "").replace("\n", ""),
    "times": lambda v, n: _num(v) * _num(n),
    "truncate": _truncate,
    "truncatewords": _truncatewords,
    "uniq": lambda v: [
        x for i, x in enumerate(_sequence(v)) if not any(_equals(x, y) for y in _sequence(v)[:i])
    ],
    "upcase": lambda v: to_text(v).upper(),
    "url_decode": lambda v: urllib.parse.unquote_plus(to_text(v)),
    "url_encode": lambda v: urllib.parse.quote_plus(to_text(v)),
    "where": lambda v, key, value=True: [
        x for x in _sequence(v) if _equals(_prop(x, key), value) or (value is True and _truthy(_prop(x, key)))
    ],
}


# -- prompts ------------------------------------------------------------------------------------------


def truncate_utf8(text: str, max_bytes: int) -> str:
    """`text` cut to at most `max_bytes` UTF-8 bytes, on a character boundary."""
    raw = text.encode()
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode(errors="ignore")


def is_searchable(field: str, searchable: Sequence[str] | None) -> bool:
    """Whether a top-level field is searchable (`searchable` None or with `*`: every field)."""
    if searchable is None or "*" in searchable:
        return True
    return any(field == attr or field.startswith(attr + ".") for attr in searchable)


def _ordered_fields(document: dict[str, Any], field_order: Sequence[str] | None) -> Iterator[str]:
    names = [k for k in document if k != VECTORS_FIELD]
    if not field_order:
        yield from names
        return
    rank = {name: i for i, name in enumerate(field_order)}
    yield from sorted(names, key=lambda n: rank.get(n, len(rank)))  # stable: unknown names keep their order


class Prompt:
    """A parsed document template; TemplateSyntaxError when it does not parse."""

    def __init__(self, template: str = DEFAULT_TEMPLATE, max_bytes: int | None = DEFAULT_MAX_BYTES) -> None:
        self.template = template
        self.max_bytes = max_bytes
        self._nodes = _TemplateParser(template).block(())[0]

    def render(
        self,
        document: dict[str, Any],
        searchable: Sequence[str] | None = None,
        field_order: Sequence[str] | None = None,
    ) -> str:
        """The text of `document` (RenderError when the template asks for what it lacks)."""
        names = list(_ordered_fields(document, field_order))
        doc = {name: document[name] for name in names}
        fields = [
            {"name": name, "value": doc[name], "is_searchable": is_searchable(name, searchable)}
            for name in names
        ]
        ctx = _Context({"doc": doc, "fields": fields})
        out: list[str] = []
        try:
            _render_all(self._nodes, ctx, out)
        except (_Break, _Continue):
            pass  # `break` outside a loop ends the template, as Liquid
        text = "".join(out)
        return text if self.max_bytes is None else truncate_utf8(text, self.max_bytes)
