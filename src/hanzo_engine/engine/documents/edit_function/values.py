"""Script values: Rhai's type names, display and debug forms, JSON conversion, equality and order, and
the helpers the interpreter and the methods raise errors with."""

from __future__ import annotations

import math
import struct
from typing import Any, Final, NoReturn

import numpy as np

from hanzo_engine.rustcompat.strings import debug_str

from .common import I64_MAX, I64_MIN, Char, Pos, RuntimeScriptError


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
        return debug_str(v)  # Rhai prints a string with Rust's `{:?}`
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
    return (
        "&str | ImmutableString | String" if isinstance(v, str) and not isinstance(v, Char) else type_name(v)
    )


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


_MISSING: Final = object()
MUTATING: Final = frozenset(
    {
        "push",
        "append",
        "pop",
        "shift",
        "insert",
        "remove",
        "clear",
        "reverse",
        "sort",
        "truncate",
        "pad",
        "set",
        "mixin",
        "make_upper",
        "make_lower",
        "trim",
        "replace",
        "crop",
    }
)


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
    if (_is_num(a) and _is_num(b)) or (
        isinstance(a, str) and isinstance(b, str) and type_name(a) == type_name(b)
    ):
        return int((a > b) - (a < b))
    if isinstance(a, bool) and isinstance(b, bool):
        return int(a) - int(b)
    return None
