"""Document field handling: flattening, field names for stats, and field selection.

`flatten` reproduces Meilisearch's `flatten-serde-json` crate: nested object keys are joined with
dots, arrays are walked (nested arrays included) and their scalar elements merged into the array's
own key, objects inside arrays contribute their keys under the array's key, and values that land on
an existing key turn it into a list (in encounter order). Every key path seen during the walk exists
in the result; a path that received no scalar (`{}`, `[]`, or an object-only parent) maps to `[]`.
A flattened value is therefore never an object, and it is a list only when several values merged
(a one-element array `[x]` flattens to `x`).

`field_names` is what Meilisearch counts in an index's `fieldDistribution`: the document's
*top-level* field names (milli's `iter_top_level_fields`), without `_vectors`. Nested names such as
`a.b` are not counted; they exist only in the fields-ids map used for indexing.

`select_fields` is Meilisearch's `permissive_json_pointer::select_values`, used for the `fields`
browse parameter and `attributesToRetrieve`: selectors are dot paths, the result keeps the
document's nesting and key order, and unknown selectors are ignored. `*` selects everything.
A selector reaching below an object or array keeps that container even when nothing inside it
matched (`{}` / `[]`, Meilisearch PR #3997), except objects inside arrays, which are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from hanzo_engine.engine.attribute_patterns import contained_in

__all__ = ["field_names", "flatten", "select_fields"]

VECTORS_FIELD: Final = "_vectors"


_CONTAINERS: Final = frozenset({dict, list})


def flatten(document: dict[str, Any]) -> dict[str, Any]:
    """The flattened form of `document` (see the module docstring for the exact rules)."""
    out: dict[str, Any] = {}
    # Most documents hold only scalars and arrays of scalars: their keys cannot collide, an array of
    # two or more scalars flattens to a copy of itself, of one to its element, and an empty one to []
    # (after every other key, as the general walk adds the keys that received no value).
    empty: list[str] | None = None
    for key, value in document.items():
        kind = type(value)
        if kind is dict:
            break
        if kind is list:
            if not value:
                if empty is None:
                    empty = []
                empty.append(key)
                continue
            if not _CONTAINERS.isdisjoint(map(type, value)):
                break
            out[key] = value[0] if len(value) == 1 else list(value)
        else:
            out[key] = value
    else:
        if empty is not None:
            for key in empty:
                out[key] = []
        return out
    out = {}
    all_keys: list[str] = []
    _flatten_object(out, None, document, all_keys)
    for key in all_keys:
        if key not in out:
            out[key] = []
    return out


def _flatten_object(out: dict[str, Any], base: str | None, obj: dict[str, Any], all_keys: list[str]) -> None:
    for key, value in obj.items():
        path = key if base is None else f"{base}.{key}"
        all_keys.append(path)
        if type(value) is list:
            _flatten_array(out, path, value, all_keys)
        elif type(value) is dict:
            _flatten_object(out, path, value, all_keys)
        else:
            _insert_value(out, path, value)


def _flatten_array(out: dict[str, Any], path: str, array: list[Any], all_keys: list[str]) -> None:
    for value in array:
        if type(value) is dict:
            _flatten_object(out, path, value, all_keys)
        elif type(value) is list:
            _flatten_array(out, path, value, all_keys)
        else:
            _insert_value(out, path, value)


def _insert_value(out: dict[str, Any], key: str, value: Any) -> None:
    # Only this function stores under a key, and it never stores a list as a value, so a list
    # found here is always a collision list built below (never the user's own list object).
    if key in out:
        existing = out[key]
        if type(existing) is list:
            existing.append(value)
        else:
            out[key] = [existing, value]
    else:
        out[key] = value


def field_names(document: dict[str, Any]) -> list[str]:
    """Field names `document` contributes to `fieldDistribution`: top-level names but `_vectors`."""
    return [name for name in document if name != VECTORS_FIELD]


def select_fields(document: dict[str, Any], fields: Sequence[str] | None) -> dict[str, Any]:
    """The part of `document` named by `fields` (dot paths), or all of it for None or `*`.

    Values are shared with `document`, not copied.
    """
    if fields is None or "*" in fields:
        return document
    return _select_in_object(document, set(fields))


def _trim_start_matches(text: str, prefix: str) -> str:
    # Rust's `str::trim_start_matches`: strips `prefix` repeatedly; kept for exact parity.
    if not prefix:
        return text
    while text.startswith(prefix):
        text = text[len(prefix) :]
    return text


def _select_in_object(obj: dict[str, Any], selectors: set[str]) -> dict[str, Any]:
    selected: dict[str, Any] = {}
    for key, value in obj.items():
        if key in selectors:
            selected[key] = value
            if "." not in key:
                # A plain key selects the whole value; nothing below it needs looking at.
                selectors.discard(key)
                continue
        # `a.b.c` under key `a` becomes `b.c` (Rust drops one byte after the key: the dot).
        sub_selectors = {
            rest[1:]
            for selector in selectors
            if contained_in(selector, key)
            for rest in (_trim_start_matches(selector, key),)
            if rest and rest[0].isascii()
        }
        if not sub_selectors:
            continue
        # the container is kept even when nothing inside matched
        if type(value) is dict:
            selected[key] = _select_in_object(value, sub_selectors)
        elif type(value) is list:
            selected[key] = _select_in_array(value, sub_selectors)
    return selected


def _select_in_array(array: Iterable[Any], selectors: set[str]) -> list[Any]:
    # Scalars have no sub-fields and go; objects that kept nothing go; nested arrays always stay.
    items: list[Any] = []
    for value in array:
        if type(value) is dict:
            nested = _select_in_object(value, set(selectors))
            if nested:
                items.append(nested)
        elif type(value) is list:
            items.append(_select_in_array(value, selectors))
    return items
