"""The tree-walking evaluator: scope, statements, places, expressions and function calls, every step
charged against the operation budget; `run_on_document` runs a program on one document."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from .common import (
    BYTES_PER_OPERATION,
    I64_MAX,
    MAX_ARRAY_SIZE,
    MAX_CALL_LEVELS,
    MAX_MAP_SIZE,
    MAX_OPERATIONS,
    MAX_STRING_SIZE,
    MAX_VARIABLES,
    Char,
    Node,
    Pos,
    RuntimeScriptError,
    _node_pos,
)
from .methods import Methods
from .parser import Program
from .values import (
    MUTATING,
    _Break,
    _check_int,
    _compare,
    _Continue,
    _equal,
    _fail,
    _is_num,
    _not_found,
    _Return,
    _same,
    _shift,
    from_json,
    to_display,
    to_json,
    type_name,
)


class Interpreter(Methods):
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
            _fail(
                f"Data type incorrect: {type_name(v)} (expecting bool)",
                node[-1] if isinstance(node[-1], tuple) else None,
            )
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
                _fail(
                    f"No writable property '{target[2]}' - a setter is not registered for type "
                    f"'{type_name(container)}' to handle '{type_name(value)}'",
                    target[3],
                )
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
            self.store(target[1], container[:i] + value + container[i + 1 :], pos)
        else:
            _fail(
                f"Indexer unavailable: {type_name(container)} [{type_name(key)}] = {type_name(value)}",
                target[3],
            )

    def _array_index(self, arr: list[Any], key: Any, pos: Pos) -> int:
        if not isinstance(key, int) or isinstance(key, bool):
            _fail(f"Indexer unavailable: array [{type_name(key)}]", pos)
        i = key + len(arr) if key < 0 else key
        if not 0 <= i < len(arr):
            n = len(arr)
            _fail(
                f"Array index {key} out of bounds: "
                + (
                    "array is empty"
                    if n == 0
                    else "only 1 element in array"
                    if n == 1
                    else f"only {n} elements in array"
                ),
                pos,
            )
        return i

    def _string_index(self, s: str, key: Any, pos: Pos) -> int:
        if not isinstance(key, int) or isinstance(key, bool):
            _fail(f"Indexer unavailable: string [{type_name(key)}]", pos)
        i = key + len(s) if key < 0 else key
        if not 0 <= i < len(s):
            n = len(s)
            _fail(
                f"String index {key} out of bounds: "
                + (
                    "string is empty"
                    if n == 0
                    else "only 1 character in string"
                    if n == 1
                    else f"only {n} characters in string"
                ),
                pos,
            )
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
                if any(
                    value in p if isinstance(p, range) else _same(value, p)
                    for p in patterns
                    if (not isinstance(p, range) or (type(value) is int))
                ) and (condition is None or self.truth(self.eval(condition), condition)):
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
                    _fail(
                        f"Division by zero: {a} / {b}"
                        if op == "/"
                        else f"Modulo division by zero or overflow: {a} % {b}",
                        pos,
                    )
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                if op == "/":
                    return _check_int(q, f"Division overflow: {a} / {b}", pos)
                return _check_int(
                    a - b * q if q <= I64_MAX else I64_MAX + 1,
                    f"Modulo division by zero or overflow: {a} % {b}",
                    pos,
                )
            if op == "**":
                if b < 0:
                    _fail(f"Integer raised to a negative power: {a} ** {b}", pos)
                if abs(a) > 1 and b > 63:
                    _fail(f"Exponential overflow: {a} ** {b}", pos)
                return _check_int(a**b, f"Exponential overflow: {a} ** {b}", pos)
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
                return (
                    x / y
                    if y != 0
                    else (
                        math.nan
                        if x == 0 or math.isnan(x)
                        else math.copysign(math.inf, x) * (math.copysign(1.0, y))
                    )
                )
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
        self.names, self.values, self.consts = (
            list(params),
            [self.copy(a, pos) for a in args],
            [False] * len(args),
        )
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


def run_on_document(
    program: Program,
    document: dict[str, Any],
    context: dict[str, Any] | None,
    max_operations: int = MAX_OPERATIONS,
) -> Any:
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
