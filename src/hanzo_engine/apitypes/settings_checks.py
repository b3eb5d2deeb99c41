"""Value checks of the settings parsers, with deserr's wording and one `invalid_settings_*` code each.

Every check takes the value, its path in the body (for the message) and the error code; it returns the
value (normalized where the setting wants it) or raises `MeiliError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from .chat_settings import CHAT_SETTING_CODE
from .deserr import Field, deserialize_object, did_you_mean, found_description
from .errors import MeiliError

USIZE_MAX: Final = 18_446_744_073_709_551_615


def setting_code(name: str) -> str:
    """`searchCutoffMs` -> `invalid_settings_search_cutoff_ms`."""
    if name == "chat":
        return CHAT_SETTING_CODE
    return "invalid_settings_" + re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _at(path: str) -> str:
    return f" at `{path}`" if path else ""


def type_error(path: str, expected: str, value: Any, code: str) -> MeiliError:
    return MeiliError(
        code, f"Invalid value type{_at(path)}: expected {expected}, but found {found_description(value)}"
    )


def invalid_value(path: str, message: str, code: str) -> MeiliError:
    return MeiliError(code, f"Invalid value{_at(path)}: {message}")


def unknown_value(path: str, value: str, choices: Iterable[str], code: str) -> MeiliError:
    names = list(choices)
    listed = ", ".join(f"`{c}`" for c in names)
    return MeiliError(
        code, f"Unknown value `{value}`{_at(path)}: {did_you_mean(value, names)}expected one of {listed}"
    )


def is_uint(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= USIZE_MAX


def parse_uint(value: Any, path: str, code: str, maximum: int = USIZE_MAX) -> int:
    if not is_uint(value):
        raise type_error(path, "a positive integer", value, code)
    if value > maximum:
        raise invalid_value(
            path,
            f"value: `{value}` is too large to be deserialized, maximum value authorized is `{maximum}`",
            code,
        )
    return int(value)


def parse_strings(value: Any, path: str, code: str) -> list[str]:
    if not isinstance(value, list):
        raise type_error(path, "an array", value, code)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise type_error(f"{path}[{i}]", "a string", item, code)
    return list(value)


def parse_string_set(value: Any, path: str, code: str) -> list[str]:
    """A `BTreeSet<String>`: sorted (code point order = UTF-8 byte order) and deduplicated."""
    return sorted(set(parse_strings(value, path, code)))


def parse_string(value: Any, path: str, code: str) -> str:
    if not isinstance(value, str):
        raise type_error(path, "a string", value, code)
    return value


def parse_boolean(value: Any, path: str, code: str) -> bool:
    if not isinstance(value, bool):
        raise type_error(path, "a boolean", value, code)
    return value


def parse_choice(value: Any, path: str, code: str, choices: tuple[str, ...]) -> str:
    text = parse_string(value, path, code)
    if text not in choices:
        raise unknown_value(path, text, choices, code)
    return text


def parse_object(value: Any, path: str, code: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise type_error(path, "an object", value, code)
    return value


def parse_fields(value: Any, path: str, code: str, fields: tuple[Field, ...]) -> dict[str, Any]:
    return deserialize_object(value, fields, unknown_code=code, path=path)
