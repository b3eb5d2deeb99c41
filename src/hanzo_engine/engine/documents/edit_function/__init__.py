"""A sandboxed interpreter for the Rhai subset that editing documents by function uses
(`POST /indexes/{uid}/documents/edit`, Meilisearch's `update_by_function.rs`).

Tokenizer, Pratt parser and tree-walking evaluator. What it runs: `let`/`const`, assignments (`=`, `+=`
...) to variables, map properties and array/map indexes, `if`/`else` and `switch` (also as expressions),
`while`, `loop`, `do ... while/until`, `for x in ...` (arrays, ranges, strings), `break`,
`continue`, `return`, `throw`, global `fn` definitions (pure: they see only their parameters),
blocks, arithmetic on i64 (checked, as Rhai) and f64, comparisons, `&&`/`||`/`!`, `in`, `??`, `?.`,
strings ("..." with escapes, backtick templates with `${expr}`), chars, arrays, object maps (`#{a: 1}`),
`()`, and the common methods of strings, arrays, maps and numbers (`to_upper`, `len`, `push`, ...).

Sandbox: every evaluation step costs one operation and building data costs one per element (one per
`BYTES_PER_OPERATION` bytes of string), against a budget of `MAX_OPERATIONS` per document, so no
script runs forever or allocates without bound; arrays and maps hold at most 10 000 entries, strings
at most `MAX_STRING_SIZE` bytes, expressions nest at most 100 deep, and a scope holds at most 1000
variables (Meilisearch's engine limits, the string size lowered for a Python process). Errors carry
Rhai's messages and ` (line L, position P)`.
"""

from __future__ import annotations

from .common import (
    BYTES_PER_OPERATION,
    MAX_ARRAY_SIZE,
    MAX_CALL_LEVELS,
    MAX_EXPR_DEPTH,
    MAX_FUNCTIONS,
    MAX_MAP_SIZE,
    MAX_OPERATIONS,
    MAX_STRING_SIZE,
    MAX_VARIABLES,
    Char,
    CompileError,
    RuntimeScriptError,
    ScriptError,
)
from .interpreter import Interpreter, run_on_document
from .lexer import Lexer, Token
from .parser import Parser, Program, compile_script
from .values import from_json, to_debug, to_display, to_json, type_name

__all__ = [
    "BYTES_PER_OPERATION",
    "MAX_ARRAY_SIZE",
    "MAX_CALL_LEVELS",
    "MAX_EXPR_DEPTH",
    "MAX_FUNCTIONS",
    "MAX_MAP_SIZE",
    "MAX_OPERATIONS",
    "MAX_STRING_SIZE",
    "MAX_VARIABLES",
    "Char",
    "CompileError",
    "Interpreter",
    "Lexer",
    "Parser",
    "Program",
    "RuntimeScriptError",
    "ScriptError",
    "Token",
    "compile_script",
    "from_json",
    "run_on_document",
    "to_debug",
    "to_display",
    "to_json",
    "type_name",
]
