"""Request validation with Meilisearch's exact messages (= `meilisearch-types::deserr` + the `deserr` crate).

Three layers, each raising `MeiliError` with the code and text Meilisearch would answer with:

1. `decode_json_body` checks the Content-Type the way actix-web's `JsonConfig` does (any `*/json` or
   `*/*+json` media type, parameters allowed), then decodes with msgspec. msgspec only decides *whether*
   the bytes are JSON; when they are not, `rustcompat.serde_json.value_error` re-reads them like `serde_json::from_slice`
   does to produce serde's message and line/column. The two parsers accept the same language except
   for serde's nesting limit (127 levels) and its handling of integers beyond 64 bits (turned into
   floats), which are reproduced after a successful msgspec decode.
2. `deserialize_object` walks a decoded object against a declarative `Field` list, in the order of
   the object's keys: the first problem found is the one reported (Meilisearch never accumulates).
3. `parse_query` does the same for query-string pairs, where every value is a string.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import msgspec

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.rustcompat.distance import damerau_levenshtein
from hanzo_engine.rustcompat.serde_json import long_int_f64, to_json, value_error

__all__ = [
    "MISSING",
    "Field",
    "InvalidValue",
    "QueryField",
    "check_json_content_type",
    "decode_json_body",
    "deserialize_object",
    "did_you_mean",
    "found_description",
    "invalid_parameter",
    "parse_bool_param",
    "parse_json",
    "parse_query",
    "parse_uint_param",
    "split_comma_list",
    "to_json",
    "unknown_parameter",
]

U32_MAX: Final = 4_294_967_295
U64_MAX: Final = 18_446_744_073_709_551_615
I64_MIN: Final = -9_223_372_036_854_775_808
I64_MAX: Final = 9_223_372_036_854_775_807


class _Missing:
    """Sentinel type: a field with this default is left out of the result when absent."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


class InvalidValue(ValueError):
    """Raised by a field validator/parser; its text becomes "Invalid value at `.x`: <text>"."""


# --------------------------------------------------------------------------------------------------
# Content type and body decoding
# --------------------------------------------------------------------------------------------------

_ACCEPTED_JSON: Final = "`application/json`"
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_MIME_RE: Final = re.compile(
    rf"({_TOKEN})/({_TOKEN})[ \t]*((?:;[ \t]*{_TOKEN}=(?:{_TOKEN}|\"(?:[^\"\\]|\\.)*\")[ \t]*)*);?[ \t]*"
)


def check_json_content_type(content_type: str | None) -> None:
    """Reject a request whose Content-Type is not JSON (415), as actix's `JsonConfig` does."""
    if content_type is None:
        raise MeiliError(
            "missing_content_type",
            f"A Content-Type header is missing. Accepted values for the Content-Type header are: {_ACCEPTED_JSON}",
        )
    m = _MIME_RE.fullmatch(content_type)
    if m is not None:
        subtype = m.group(2).lower()
        # actix accepts `<any>/json` and any `+json` structured-syntax suffix
        if subtype == "json" or subtype.endswith("+json"):
            return
    # actix's `HeaderValue::to_str` fails on non-visible ASCII and Meilisearch then prints "unknown"
    shown = content_type if all(c == "\t" or " " <= c <= "~" for c in content_type) else "unknown"
    raise MeiliError(
        "invalid_content_type",
        f"The Content-Type `{shown}` is invalid. Accepted values for the Content-Type header are: {_ACCEPTED_JSON}",
    )


def decode_json_body(body: bytes, content_type: str | None) -> Any:
    """Content-Type check, then `parse_json`: the full extractor of a Meilisearch JSON route."""
    check_json_content_type(content_type)
    return parse_json(body)


_DECODER: Final = msgspec.json.Decoder()
# 19 digits: the shortest integers that can fall outside i64/u64 (e.g. -9223372036854775809)
_BIG_INT_RE: Final = re.compile(rb"\d{19}")
# numbers near f64's limit, where serde_json's inexact scaling may overflow although msgspec's does not
_HUGE_NUMBER_RE: Final = re.compile(rb"[eE]\+?0*[1-9]\d\d|\d{300}")
_MAX_DEPTH: Final = 127  # serde_json's recursion limit is 128, checked before entering the 128th level


def parse_json(body: bytes) -> Any:
    """Decode a JSON body; 400 `missing_payload` when empty, 400 `malformed_payload` when broken."""
    if not body:
        raise MeiliError("missing_payload", "A json payload is missing.")
    try:
        value = _DECODER.decode(body)
    except (msgspec.DecodeError, ValueError, RecursionError):
        message = value_error(body)
        if message is None:
            # msgspec refused something serde accepts (e.g. `0e99999999999`): the stdlib agrees with serde
            return _serde_numbers(json.loads(body))
        raise _malformed(message) from None
    too_deep = body.count(b"[") + body.count(b"{") > _MAX_DEPTH and _depth(value) > _MAX_DEPTH
    if too_deep or _HUGE_NUMBER_RE.search(body) is not None:
        message = value_error(body)
        if message is not None or too_deep:
            raise _malformed(message or "recursion limit exceeded")
    if _BIG_INT_RE.search(body) is not None:
        try:
            value = _serde_numbers(value)
        except OverflowError:
            raise _malformed(value_error(body) or "number out of range") from None
    return value


def _malformed(serde_message: str) -> MeiliError:
    return MeiliError("malformed_payload", f"The json payload provided is malformed. `{serde_message}`.")


def _depth(value: Any) -> int:
    """Deepest container nesting of a decoded value (iterative: payloads can be deep)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def _serde_numbers(value: Any) -> Any:
    """serde_json keeps integers outside u64/i64 as f64; do the same (OverflowError when infinite)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if I64_MIN <= value <= U64_MAX else long_int_f64(value)
    if isinstance(value, list):
        return [_serde_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: _serde_numbers(v) for k, v in value.items()}
    if isinstance(value, float) and math.isinf(value):
        raise OverflowError
    return value


# --------------------------------------------------------------------------------------------------
# JSON value descriptions (deserr's `JsonError` wording)
# --------------------------------------------------------------------------------------------------

# deserr's ValueKind, ranked as in `value_kinds_description_json`
_NULL, _BOOL, _INT, _NEG_INT, _FLOAT, _STR, _SEQ, _MAP = range(8)
_KIND_TEXT: Final = (
    "null",
    "a boolean",
    "a positive integer",
    "a negative integer",
    "a number",
    "a string",
    "an array",
    "an object",
)


def _kind(value: Any) -> int:
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return _BOOL
    if isinstance(value, int):
        if 0 <= value <= U64_MAX:
            return _INT
        return _NEG_INT if I64_MIN <= value < 0 else _FLOAT
    if isinstance(value, float):
        return _FLOAT
    if isinstance(value, str):
        return _STR
    if isinstance(value, list):
        return _SEQ
    return _MAP


def _kinds_text(kinds: Iterable[int]) -> str:
    """Sorted, deduplicated kinds joined as deserr does ("null, a boolean, or a number")."""
    ordered = sorted(set(kinds))
    parts: list[str] = []
    while ordered:
        if ordered[:3] == [_INT, _NEG_INT, _FLOAT] or (
            len(ordered) >= 2 and ordered[0] in (_INT, _NEG_INT) and ordered[1] == _FLOAT
        ):
            parts.append("a number")
            ordered = ordered[3 if ordered[1] == _NEG_INT else 2 :]
        elif ordered[:2] == [_INT, _NEG_INT]:
            parts.append("an integer")
            ordered = ordered[2:]
        else:
            parts.append(_KIND_TEXT[ordered.pop(0)])
    if not parts:
        return "a different value"
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return f"{parts[0]} or {parts[1]}"
    return ", ".join(parts[:-1]) + ", or " + parts[-1]


def found_description(value: Any) -> str:
    """deserr's "found ..." part: `null`, or "a string: `\"x\"`"."""
    kind = _kind(value)
    return "null" if kind == _NULL else f"{_KIND_TEXT[kind]}: `{to_json(value)}`"


def serde_unexpected(value: Any, *, null: str = "null") -> str:
    """serde's `Unexpected` rendering of a JSON value, as in its "invalid type: ..." messages. `null`
    is how the deserializer names a JSON null (`unit value` when it reaches serde as `()`)."""
    if value is None:
        return null
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{to_json(value)}`"
    if isinstance(value, str):
        return f"string {json.dumps(value, ensure_ascii=False)}"
    return "sequence" if isinstance(value, list) else "map"


def did_you_mean(received: str, accepted: Sequence[str]) -> str:
    """deserr's suggestion: "did you mean `x`? " when a name is within the typo budget, else ""."""
    size = len(received.encode())
    if size <= 3:
        return ""
    budget = 1 if size <= 7 else 2 if size <= 12 else 3 if size <= 17 else 4 if size <= 24 else 5
    best: tuple[int, str] | None = None
    for name in accepted:
        distance = damerau_levenshtein(received, name)
        if distance <= budget and (best is None or distance < best[0]):
            best = (distance, name)
    return "" if best is None else f"did you mean `{best[1]}`? "


def _one_of(accepted: Sequence[str]) -> str:
    return ", ".join(f"`{name}`" for name in accepted)


# --------------------------------------------------------------------------------------------------
# JSON objects
# --------------------------------------------------------------------------------------------------

Kind = Literal[
    "string",
    "string_or_null",
    "boolean",
    "u32",
    "u64",
    "usize",
    "integer",
    "number",
    "string_array",
    "string_or_integer_array",
    "array",
    "object",
    "any",
]


@dataclass(frozen=True, slots=True)
class Field:
    """One accepted key of a JSON object.

    `code` is used for every problem with the value; `missing_code` when a `required` field is absent.
    `nullable` accepts `null` (kept as None, like Rust's `Option<T>`); `choices` makes a string an enum
    ("Unknown value ..."); `validate` post-processes the typed value and may raise `InvalidValue`;
    `fields` makes an `object` a nested struct, whose unknown keys use `unknown_code` (default `code`).
    Absent optional fields get `default` (called when callable, for fresh lists/dicts), or are left out
    of the result when it is `MISSING`, so callers can tell "absent" from "null".
    """

    name: str
    kind: Kind
    code: str
    required: bool = False
    missing_code: str = "bad_request"
    default: Any = MISSING
    nullable: bool = False
    choices: tuple[str, ...] | None = None
    validate: Callable[[Any], Any] | None = None
    fields: tuple[Field, ...] | None = None
    unknown_code: str | None = None


def _at(path: str, article: str) -> str:
    return f" {article} `{path}`" if path else ""


def _wrong_type(path: str, accepted: Iterable[int], value: Any, code: str) -> MeiliError:
    return MeiliError(
        code,
        f"Invalid value type{_at(path, 'at')}: expected {_kinds_text(accepted)}, but found {found_description(value)}",
    )


def _invalid(path: str, message: str, code: str) -> MeiliError:
    return MeiliError(code, f"Invalid value{_at(path, 'at')}: {message}")


def _unsigned(value: Any, path: str, code: str, maximum: int) -> int:
    if _kind(value) != _INT:
        raise _wrong_type(path, (_INT,), value, code)
    if value > maximum:
        raise _invalid(
            path,
            f"value: `{value}` is too large to be deserialized, maximum value authorized is `{maximum}`",
            code,
        )
    return int(value)


def _typed(field: Field, value: Any, path: str) -> Any:
    kind, code = field.kind, field.code
    if value is None and (field.nullable or kind in ("string_or_null", "any")):
        return None
    if kind in ("string", "string_or_null"):
        if not isinstance(value, str):
            raise _wrong_type(path, (_STR,), value, code)
        if field.choices is not None and value not in field.choices:
            suggestion = did_you_mean(value, field.choices)
            raise MeiliError(
                code,
                f"Unknown value `{value}`{_at(path, 'at')}: {suggestion}expected one of {_one_of(field.choices)}",
            )
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _wrong_type(path, (_BOOL,), value, code)
        return value
    if kind == "u32":
        return _unsigned(value, path, code, U32_MAX)
    if kind in ("u64", "usize"):
        return _unsigned(value, path, code, U64_MAX)
    if kind == "integer":
        if _kind(value) not in (_INT, _NEG_INT):
            raise _wrong_type(path, (_INT, _NEG_INT), value, code)
        if value > I64_MAX:
            raise _invalid(
                path,
                f"value: `{value}` is too large to be deserialized, maximum value authorized is `{I64_MAX}`",
                code,
            )
        return int(value)
    if kind == "number":
        if _kind(value) not in (_INT, _NEG_INT, _FLOAT):
            raise _wrong_type(path, (_FLOAT, _INT, _NEG_INT), value, code)
        return float(value)
    if kind in ("string_array", "string_or_integer_array", "array"):
        if not isinstance(value, list):
            raise _wrong_type(path, (_SEQ,), value, code)
        if kind == "string_array":
            for i, item in enumerate(value):
                if not isinstance(item, str):
                    raise _wrong_type(f"{path}[{i}]", (_STR,), item, code)
        elif kind == "string_or_integer_array":
            for i, item in enumerate(value):
                if _kind(item) not in (_STR, _INT, _NEG_INT):
                    raise _wrong_type(f"{path}[{i}]", (_STR, _INT, _NEG_INT), item, code)
        return value
    if kind == "object":
        if not isinstance(value, dict):
            raise _wrong_type(path, (_MAP,), value, code)
        if field.fields is not None:
            return deserialize_object(value, field.fields, unknown_code=field.unknown_code or code, path=path)
        return value
    return value  # "any"


def deserialize_object(
    value: Any,
    fields: Sequence[Field],
    *,
    unknown_code: str = "bad_request",
    path: str = "",
    immutable: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Validate a decoded JSON object against `fields` and return `{name: typed value}`.

    Keys are visited in the payload's order and the first error is raised; then required fields are
    checked in declaration order. `unknown_code` is the code for a non-object value and for unknown
    keys. `immutable` maps read-only field names to their code ("Immutable field `uid`: ...").
    """
    if not isinstance(value, dict):
        raise _wrong_type(path, (_MAP,), value, unknown_code)
    by_name = {f.name: f for f in fields}
    out: dict[str, Any] = {}
    for key, item in value.items():
        field = by_name.get(key)
        child = f"{path}.{key}"
        if field is None:
            accepted = list(by_name)
            if immutable is not None and key in immutable:
                raise MeiliError(
                    immutable[key], f"Immutable field `{key}`: expected one of {_one_of(accepted)}"
                )
            raise MeiliError(
                unknown_code,
                f"Unknown field `{key}`{_at(path, 'inside')}: {did_you_mean(key, accepted)}expected one of {_one_of(accepted)}",
            )
        typed = _typed(field, item, child)
        if field.validate is not None and typed is not None:
            try:
                typed = field.validate(typed)
            except InvalidValue as exc:
                raise _invalid(child, str(exc), field.code) from None
        out[key] = typed
    for field in fields:
        if field.name in out:
            continue
        if field.required:
            raise MeiliError(field.missing_code, f"Missing field `{field.name}`{_at(path, 'inside')}")
        if field.default is not MISSING:
            out[field.name] = field.default() if callable(field.default) else field.default
    return out


# --------------------------------------------------------------------------------------------------
# Query strings
# --------------------------------------------------------------------------------------------------

QueryKind = Literal["string", "u32", "usize", "bool", "csv"]
_UINT_RE: Final = re.compile(r"\+?[0-9]+")


@dataclass(frozen=True, slots=True)
class QueryField:
    """One accepted query parameter: `csv` splits on commas and drops empty items (serde_cs)."""

    name: str
    kind: QueryKind
    code: str
    default: Any = MISSING
    choices: tuple[str, ...] | None = None
    parse: Callable[[str], Any] | None = None


def invalid_parameter(location: str, message: str, code: str) -> MeiliError:
    """The query-string "Invalid value in parameter `x`: <message>" (`x` may be indexed: `uids[1]`)."""
    return MeiliError(code, f"Invalid value in parameter `{location}`: {message}")


def unknown_parameter(name: str, accepted: Sequence[str]) -> MeiliError:
    return MeiliError(
        "bad_request",
        f"Unknown parameter `{name}`: {did_you_mean(name, accepted)}expected one of {_one_of(accepted)}",
    )


def parse_uint_param(text: str, maximum: int = U64_MAX) -> int | None:
    """Rust's `str::parse::<u32/usize>`: optional `+`, ASCII digits only, no overflow; None otherwise."""
    if _UINT_RE.fullmatch(text) is None:
        return None
    number = int(text)
    return number if number <= maximum else None


def parse_bool_param(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text)


def split_comma_list(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


def _dedupe(params: Iterable[tuple[str, str]]) -> dict[str, str]:
    # serde_urlencoded into an insertion-ordered map: a repeated key keeps its first slot, last value
    out: dict[str, str] = {}
    for key, val in params:
        out[key] = val
    return out


def parse_query(
    params: Iterable[tuple[str, str]], fields: Sequence[QueryField], *, allow_unknown: bool = False
) -> dict[str, Any]:
    """Validate decoded query pairs against `fields`; first problem (in parameter order) wins."""
    by_name = {f.name: f for f in fields}
    out: dict[str, Any] = {}
    for key, text in _dedupe(params).items():
        field = by_name.get(key)
        if field is None:
            if allow_unknown:
                continue
            raise unknown_parameter(key, list(by_name))
        out[key] = _query_value(field, text)
    for field in fields:
        if field.name not in out and field.default is not MISSING:
            out[field.name] = field.default() if callable(field.default) else field.default
    return out


def _query_value(field: QueryField, text: str) -> Any:
    name, code = field.name, field.code
    if field.parse is not None:
        try:
            return field.parse(text)
        except InvalidValue as exc:
            raise invalid_parameter(name, str(exc), code) from None
    if field.kind in ("u32", "usize"):
        number = parse_uint_param(text, U32_MAX if field.kind == "u32" else U64_MAX)
        if number is None:
            raise invalid_parameter(name, f"could not parse `{text}` as a positive integer", code)
        return number
    if field.kind == "bool":
        flag = parse_bool_param(text)
        if flag is None:
            raise invalid_parameter(
                name, f"could not parse `{text}` as a boolean, expected either `true` or `false`", code
            )
        return flag
    if field.kind == "csv":
        return split_comma_list(text)
    if field.choices is not None and text not in field.choices:
        raise MeiliError(
            code,
            f"Unknown value `{text}` for parameter `{name}`: {did_you_mean(text, field.choices)}"
            f"expected one of {_one_of(field.choices)}",
        )
    return text
