"""The limits, positions, errors and `char` type shared by the lexer, the parser and the interpreter."""

from __future__ import annotations

from typing import Any, Final

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


def _node_pos(node: Node) -> Pos | None:
    """Where a node starts (its position is its last tuple of two ints)."""
    for part in reversed(node):
        if isinstance(part, tuple) and len(part) == 2 and all(type(x) is int for x in part):
            return part
    return None
