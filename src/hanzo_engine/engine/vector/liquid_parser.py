"""Parsing a Liquid template into render nodes: expressions, filters, conditions and tags."""

from __future__ import annotations

import re
from typing import Any, Final

from .liquid_filters import FILTERS
from .liquid_render import (
    Context,
    Expr,
    LoopBreak,
    LoopContinue,
    Node,
    loop_items,
    output_node,
    render_all,
    text_node,
)
from .liquid_values import BLANK, EMPTY, TemplateSyntaxError, equals

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

    def expr(self) -> Expr:
        kind, value = self.take()
        if kind == "str":
            return Expr("lit", value[1:-1])
        if kind == "num":
            return Expr("lit", float(value) if "." in value else int(value))
        if kind == "punct" and value == "(":
            start = self.expr()
            self.take("..")
            stop = self.expr()
            self.take(")")
            return Expr("range", start, stop)
        if kind != "id":
            raise TemplateSyntaxError(
                "Expected a value", [("token", value), ("expression", self.text.strip())]
            )
        if value in _LITERALS and not self.peek(".") and not self.peek("["):
            return Expr("lit", _LITERALS[value])
        indexes: list[Expr] = []
        while True:
            if self.peek("."):
                self.take()
                indexes.append(Expr("lit", self.take()[1]))
            elif self.peek("["):
                self.take()
                indexes.append(self.expr())
                self.take("]")
            else:
                return Expr("var", value, indexes)

    def filters(self) -> list[tuple[str, list[Expr], dict[str, Expr]]]:
        out = []
        while self.peek("|"):
            self.take()
            kind, name = self.take()
            if kind != "id" or name not in FILTERS:
                raise TemplateSyntaxError("Unknown filter", [("requested filter", name)])
            args: list[Expr] = []
            kwargs: dict[str, Expr] = {}
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


class TemplateParser:
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
                nodes.append(text_node(content))
            elif kind == "out":
                p = _Parser(content)
                expr = p.expr()
                filters = p.filters()
                p.end()
                nodes.append(output_node(expr, filters))
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

            def render_if(ctx: Context, out: list[str]) -> None:
                for i, (c, body) in enumerate(branches):
                    if c is None or (ctx.test(c) != (negate and i == 0)):
                        render_all(body, ctx, out)
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

            def render_capture(ctx: Context, out: list[str]) -> None:
                inner: list[str] = []
                render_all(body, ctx, inner)
                ctx.assigned[var] = "".join(inner)

            return render_capture
        if name in ("comment", "raw"):
            body, _, _ = self.block(("end" + name,))
            return (lambda ctx, out: render_all(body, ctx, out)) if name == "raw" else (lambda ctx, out: None)
        if name in ("break", "continue"):
            signal = LoopBreak if name == "break" else LoopContinue

            def render_jump(ctx: Context, out: list[str]) -> None:
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
        limit: Expr | None = None
        offset: Expr | None = None
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

        def render_for(ctx: Context, out: list[str]) -> None:
            items = loop_items(ctx.evaluate(iterable))
            start = int(ctx.evaluate(offset)) if offset is not None else 0
            items = items[start:]
            if limit is not None:
                items = items[: max(int(ctx.evaluate(limit)), 0)]
            if reversed_:
                items = items[::-1]
            if not items:
                render_all(otherwise, ctx, out)
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
                    render_all(body, ctx, out)
                except LoopContinue:
                    continue
                except LoopBreak:
                    break
                finally:
                    ctx.loops.pop()

        return render_for

    def _case(self, args: str) -> Node:
        p = _Parser(args)
        subject = p.expr()
        p.end()
        _, end, end_args = self.block(("when", "else", "endcase"))  # text before the first `when` is dropped
        branches: list[tuple[list[Expr] | None, list[Node]]] = []
        while end != "endcase":
            values: list[Expr] | None = None
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

        def render_case(ctx: Context, out: list[str]) -> None:
            value = ctx.evaluate(subject, strict=False)
            matched = False
            for values, body in branches:
                if values is None:
                    if not matched:
                        render_all(body, ctx, out)
                    return
                if any(equals(value, ctx.evaluate(v, strict=False)) for v in values):
                    matched = True
                    render_all(body, ctx, out)

        return render_case
