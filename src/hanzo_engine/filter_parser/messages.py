"""Meilisearch's filter-parser diagnostics (``crates/filter-parser/src/error.rs``), word for word.

`render` turns a positioned parse error into the final message: the diagnostic line (which quotes
the offending fragment through Rust's ``escape_debug``) followed by the ``<start>:<end> <filter>``
position line.
"""

from __future__ import annotations

from hanzo_engine.rustcompat.distance import osa_distance

from .errors import columns, escape_debug, positioned, rust_trim

__all__ = ["INVALID_PRIMARY_OPERATIONS", "diagnostic", "render"]

INVALID_PRIMARY_OPERATIONS = (
    "Was expecting an operation `=`, `!=`, `>=`, `>`, `<=`, `<`, `IN`, `NOT IN`, `TO`, `EXISTS`, "
    "`NOT EXISTS`, `IS NULL`, `IS NOT NULL`, `IS EMPTY`, `IS NOT EMPTY`, `CONTAINS`, `NOT CONTAINS`, "
    "`STARTS WITH`, `NOT STARTS WITH`, `_geoRadius`, `_geoBoundingBox` or `_geoPolygon`"
)

_FIXED = {
    "geo_radius": "The `_geoRadius` filter must be in the form: "
    "`_geoRadius(latitude, longitude, radius, optionalResolution)`.",
    "geo_bounding_box": "The `_geoBoundingBox` filter expects two pairs of arguments: "
    "`_geoBoundingBox([latitude, longitude], [latitude, longitude])`.",
    "geo_polygon": "The `_geoPolygon` filter doesn't match the expected format: "
    "`_geoPolygon([latitude, longitude], [latitude, longitude])`.",
    "misused_geo_radius": "The `_geoRadius` filter is an operation and can't be used as a value.",
    "misused_geo_bounding_box": "The `_geoBoundingBox` filter is an operation and can't be used as a value.",
    "vector_leftover": "The vector filter has leftover tokens.",
    "vector_invalid_fragment": "The vector filter's fragment name is invalid.",
    "vector_missing_fragment": "The vector filter is missing a fragment name.",
    "vector_missing_embedder": "Was expecting embedder name but found nothing.",
    "vector_invalid_embedder": "The vector filter's embedder name is invalid.",
    "vector_operation": "Was expecting an operation like `EXISTS` or `NOT EXISTS` after the vector filter.",
    "vector_invalid_quotes": "The quotes in one of the values are inconsistent.",
    "in_opening_bracket": "Expected `[` after `IN` keyword.",
    "in_closing_bracket": "Expected matching `]` after the list of field names given to `IN[`",
    "non_finite_float": "Non finite floats are not supported",
    "depth": "The filter exceeded the maximum depth limit. "
    "Try rewriting the filter so that it contains fewer nested conditions.",
}

_VECTOR_SUFFIXES = ("fragments", "userProvided", "documentTemplate", "regenerate")


def _unknown_suffix(previous: str | None, value: str) -> str:
    if value == ".":
        return (
            "Was expecting one of `.fragments`, `.userProvided`, `.documentTemplate`, `.regenerate` "
            "or nothing, but instead found a point without a valid value."
        )
    if previous is not None:
        return (
            "Vector filter can only accept one of `fragments`, `userProvided`, `documentTemplate` or "
            f"`regenerate`, but found both `{previous}` and `{value}`."
        )
    if value in _VECTOR_SUFFIXES:
        return "Was expecting this part to be unquoted."
    base = (
        "Was expecting one of `fragments`, `userProvided`, `documentTemplate`, `regenerate` or nothing, "
        f"but instead found `{value}`."
    )
    for key in _VECTOR_SUFFIXES:
        if osa_distance(value, key) <= 2:
            return f"{base} Did you mean `{key}`?"
    return base


def diagnostic(kind: str, fragment: str, arg: object = None) -> str:
    """The first part of the message for an error of `kind` pointing at `fragment`."""
    fixed = _FIXED.get(kind)
    if fixed is not None:
        return fixed
    esc = escape_debug(fragment)
    if kind == "expected_value":
        if not rust_trim(fragment):
            return "Was expecting a value but instead got nothing."
        if arg:
            return (
                f"Was expecting a value but instead got `{esc}`, which is a reserved keyword. "
                f"To use `{esc}` as a field name or a value, surround it by quotes."
            )
        return f"Was expecting a value but instead got `{esc}`."
    if kind == "invalid_primary":
        text = "but instead got nothing." if not rust_trim(fragment) else f"at `{esc}`."
        return f"{INVALID_PRIMARY_OPERATIONS} {text}"
    if kind == "expected_eof":
        return (
            f"Found unexpected characters at the end of the filter: `{esc}`. "
            "You probably forgot an `OR` or an `AND` rule."
        )
    if kind == "missing_closing":
        return f"Expression `{esc}` is missing the following closing delimiter: `{arg}`."
    if kind == "malformed_value":
        return f"Malformed value: `{esc}`."
    if kind == "invalid_escaped_number":
        return f"Found an invalid escaped sequence number: `{esc}`."
    if kind == "in_expected_value":
        return f"Expected only comma-separated field names inside `IN[..]` but instead found `{esc}`."
    if kind == "reserved_geo":
        return (
            f"`{escape_debug(str(arg))}` is a reserved keyword and thus can't be used as a filter "
            "expression. Use the `_geoRadius(latitude, longitude, distance)` or "
            "`_geoBoundingBox([latitude, longitude], [latitude, longitude])` built-in rules to filter "
            "on `_geo` coordinates."
        )
    if kind == "reserved_keyword":
        return (
            f"`{arg}` is a reserved keyword and thus cannot be used as a field name unless it is put "
            f"inside quotes. Use \"{arg}\" or '{arg}' instead."
        )
    if kind == "geo_radius_argument_count":
        return f"Was expecting 3 or 4 arguments for `_geoRadius`, but instead found {arg}."
    if kind == "geo_polygon_not_enough_points":
        return f"The `_geoPolygon` filter expects at least 3 points but only {arg} were specified"
    if kind == "geo_coordinates_not_pair":
        return f"Was expecting 2 coordinates but instead found {arg}."
    if kind == "foreign":
        return (
            "Was expecting a field name and an condition inside `_foreign(..)` filter but instead found "
            f"`{esc}`."
        )
    if kind == "vector_unknown_suffix":
        assert isinstance(arg, tuple)
        return _unknown_suffix(arg[0], arg[1])
    raise AssertionError(f"unknown filter error kind {kind!r}")


def render(kind: str, source: str, start: int, end: int, arg: object = None) -> str:
    """The full Meilisearch message: diagnostic, newline, position line."""
    if kind == "foreign":
        # the position line prints the filter from the `_foreign` clause on (`arg`), as Meilisearch does
        assert isinstance(arg, int)
        col, col_end = columns(source, start, end)
        return f"{diagnostic(kind, source[start:end])}\n{col}:{col_end} {source[arg:]}"
    return positioned(diagnostic(kind, source[start:end], arg), source, start, end)
