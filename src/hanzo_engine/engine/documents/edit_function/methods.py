"""The methods of values (strings, arrays, maps, numbers), mixed into the interpreter."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .common import I64_MAX, I64_MIN, MAX_ARRAY_SIZE, MAX_STRING_SIZE, Char, Node, Pos
from .values import (
    _MISSING,
    _check_int,
    _equal,
    _fail,
    _fmt_float,
    _is_num,
    _not_found,
    _sort_key,
    to_debug,
    to_display,
    type_name,
)


class Methods:
    """`obj.name(args)` for the built-in types; `Interpreter` provides the budget and places."""

    if TYPE_CHECKING:

        def tick(self, pos: Pos | None, n: int = 1) -> None: ...
        def charge(self, v: Any, pos: Pos) -> Any: ...
        def copy(self, v: Any, pos: Pos) -> Any: ...
        def contains(self, container: Any, item: Any, pos: Pos) -> bool: ...
        def store(self, target: Node, value: Any, pos: Pos) -> None: ...

    def method(
        self, obj: Any, name: str, args: list[Any], pos: Pos, place: Node | None, property_get: bool = False
    ) -> Any:
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
                return s[max(0, a0 if a0 >= 0 else len(s) + a0) :]
            if name in ("truncate", "crop") and isinstance(a0, int) and not isinstance(a0, bool):
                write_back(s[: max(a0, 0)] if name == "truncate" else s[max(0, a0) :])
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
            if (
                name == "sub_string"
                and isinstance(a0, int)
                and isinstance(a1, int)
                and not isinstance(a0, bool)
            ):
                start = max(0, a0 if a0 >= 0 else len(s) + a0)
                return s[start : start + max(a1, 0)]
            if name == "pad" and isinstance(a0, int) and isinstance(a1, str) and not isinstance(a0, bool):
                if a0 > MAX_STRING_SIZE:
                    _fail("Length of string too large", pos)
                if len(s) < a0 and a1:
                    padded = (s + a1 * ((a0 - len(s)) // len(a1) + 1))[:a0]
                    write_back(padded)
                return None
            if (
                name == "index_of"
                and isinstance(a0, str)
                and isinstance(a1, int)
                and not isinstance(a1, bool)
            ):
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
                del arr[max(a0, 0) :]
                return None
            if name == "extract" and isinstance(a0, int) and not isinstance(a0, bool):
                return self.charge(self.copy(arr[max(0, a0 if a0 >= 0 else len(arr) + a0) :], pos), pos)
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
                return self.charge(self.copy(arr[start : start + max(a1, 0)], pos), pos)
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
