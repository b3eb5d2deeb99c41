"""Liquid values for document templates: errors, `empty`/`blank`, display and comparisons (liquid-rust's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hanzo_engine.rustcompat.floats import f64_display as format_float


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


class Empty:
    """Liquid's `empty` (and, with `blank=True`, `blank`) for comparisons."""

    def __init__(self, blank: bool) -> None:
        self.blank = blank


EMPTY, BLANK = Empty(False), Empty(True)

# -- values -------------------------------------------------------------------------------------------


def to_text(value: Any) -> str:
    if value is None or isinstance(value, Empty):
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


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def equals(a: Any, b: Any) -> bool:
    if isinstance(b, Empty):
        a, b = b, a
    if isinstance(a, Empty):
        if isinstance(b, Empty):
            return True
        if a.blank and (b is None or b is False or (isinstance(b, str) and not b.strip())):
            return True
        return bool(b == "" or b == [] or b == {})
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equals(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equals(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def compare(op: str, a: Any, b: Any) -> bool:
    if op in ("==", "!=", "<>"):
        return equals(a, b) == (op == "==")
    if op == "contains":
        if isinstance(a, str):
            return to_text(b) in a
        if isinstance(a, list):
            return any(equals(item, b) for item in a)
        if isinstance(a, dict):
            return to_text(b) in a
        return False
    if not ((is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str))):
        return False
    return bool({"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op])


def truthy(value: Any) -> bool:
    return value is not None and value is not False
