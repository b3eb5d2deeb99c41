"""Meilisearch's filter language: parse, print, inspect; errors byte-identical to Meilisearch's.

Standard library only, plus the layer below it: the whole-filter fast path is `_native.filter_scan`,
which is given this package's AST classes (it imports nothing from above). No other import from
`hanzo_engine`.

Typical use by the engine::

    node = parse_filter_value(body["filter"])          # None when there is no filter
    check_features(node, FilterFeatures(contains_filter=...))
    for name, token in fields(node):                    # filterability, with positions
        if not filterable(name):
            raise token.error(not_filterable_message(name, patterns))
    ... evaluate; geo_radius_params(node) etc. give milli's evaluation-time geo errors

Every user error is a `FilterError` whose ``message`` is Meilisearch's text including the trailing
``\\n<start>:<end> <filter>`` line.
"""

from .api import (
    MAX_FILTER_CONDITIONS,
    FilterFeatures,
    check_condition_depth,
    check_features,
    fields,
    not_filterable_message,
    parse_filter,
    parse_filter_value,
    reject_foreign,
    token_at_depth,
    uses_contains,
    uses_field,
    uses_foreign,
    uses_vectors,
)
from .ast import (
    And,
    Comparison,
    Contains,
    Exists,
    Foreign,
    GeoBoundingBox,
    GeoPolygon,
    GeoRadius,
    In,
    IsEmpty,
    IsNotEmpty,
    IsNotNull,
    IsNull,
    Node,
    Not,
    NotContains,
    NotExists,
    NotIn,
    NotStartsWith,
    Or,
    Range,
    StartsWith,
    Token,
    VectorExists,
    negate,
)
from .errors import FilterError
from .geo import (
    DEFAULT_RESOLUTION,
    finite_float,
    geo_bounding_box_params,
    geo_polygon_coords,
    geo_radius_params,
    parse_finite_float,
    rust_parse_f64,
)
from .parser import MAX_PARSER_DEPTH
from .printer import quote, to_string

__all__ = [
    "DEFAULT_RESOLUTION",
    "MAX_FILTER_CONDITIONS",
    "MAX_PARSER_DEPTH",
    "And",
    "Comparison",
    "Contains",
    "Exists",
    "FilterError",
    "FilterFeatures",
    "Foreign",
    "GeoBoundingBox",
    "GeoPolygon",
    "GeoRadius",
    "In",
    "IsEmpty",
    "IsNotEmpty",
    "IsNotNull",
    "IsNull",
    "Node",
    "Not",
    "NotContains",
    "NotExists",
    "NotIn",
    "NotStartsWith",
    "Or",
    "Range",
    "StartsWith",
    "Token",
    "VectorExists",
    "check_condition_depth",
    "check_features",
    "fields",
    "finite_float",
    "geo_bounding_box_params",
    "geo_polygon_coords",
    "geo_radius_params",
    "negate",
    "not_filterable_message",
    "parse_filter",
    "parse_filter_value",
    "parse_finite_float",
    "quote",
    "reject_foreign",
    "rust_parse_f64",
    "to_string",
    "token_at_depth",
    "uses_contains",
    "uses_field",
    "uses_foreign",
    "uses_vectors",
]
