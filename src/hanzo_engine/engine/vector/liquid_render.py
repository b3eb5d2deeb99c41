"""Rendering a parsed Liquid template: expressions, the variable context and the output nodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .liquid_filters import FILTERS
from .liquid_values import Empty, RenderError, compare, is_number, to_text, truthy


class Expr:
    """An expression: `("lit", value)`, `("var", name, [index exprs])` or `("range", a, b)`."""

    def __init__(self, kind: str, *args: Any) -> None:
        self.kind, self.args = kind, args

    def source(self) -> str:
        if self.kind == "lit":
            return repr(self.args[0])
        if self.kind == "range":
            return f"({self.args[0].source()}..{self.args[1].source()})"
        return str(self.args[0]) + "".join(f"[{i.source()}]" for i in self.args[1])


class LoopBreak(Exception):
    pass


class LoopContinue(Exception):
    pass


class Context:
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

    def evaluate(self, expr: Expr, strict: bool = True) -> Any:
        if expr.kind == "lit":
            return expr.args[0]
        if expr.kind == "range":
            start, stop = (self.evaluate(e, strict) for e in expr.args)
            if not (is_number(start) and is_number(stop)):
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

    def filtered(self, expr: Expr, filters: list[tuple[str, list[Expr], dict[str, Expr]]]) -> Any:
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
            return truthy(self.evaluate(cond[1], strict=False))
        return compare(cond[1], self.evaluate(cond[2], strict=False), self.evaluate(cond[3], strict=False))


def _index(value: Any, key: Any) -> tuple[bool, Any]:
    if isinstance(value, list):
        if is_number(key):
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
    if value is not None and not isinstance(value, Empty) and to_text(key) == "size":
        return True, len(to_text(value))
    return False, None


Node = Callable[[Context, list[str]], None]


def text_node(text: str) -> Node:
    def render(ctx: Context, out: list[str]) -> None:
        out.append(text)

    return render


def output_node(expr: Expr, filters: list[tuple[str, list[Expr], dict[str, Expr]]]) -> Node:
    def render(ctx: Context, out: list[str]) -> None:
        out.append(to_text(ctx.filtered(expr, filters)))

    return render


def render_all(nodes: list[Node], ctx: Context, out: list[str]) -> None:
    for node in nodes:
        node(ctx, out)


def loop_items(value: Any) -> list[Any]:
    """What `for` walks: nil is nothing, an object its `[key, value]` pairs, a scalar itself."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return [[k, v] for k, v in value.items()]
    return [value]
