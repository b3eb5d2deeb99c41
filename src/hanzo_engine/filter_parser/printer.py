"""Print an AST back as a canonical filter string (``parse_filter(to_string(ast)) == ast``).

Canonical form: every field and value double-quoted (so keywords, spaces and ``_geo*`` names need no
special care), ``\\`` and ``"`` escaped with a backslash, operators surrounded by single spaces, geo
numbers printed as written. Parentheses appear only where the tree needs them: an `Or` inside an
`Or` (the parser flattens ``a OR b OR c``, so a nested one must have been parenthesised), an `Or` or
`And` inside an `And`, and any `Or`/`And` under a ``NOT``.
"""

from __future__ import annotations

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
)

__all__ = ["quote", "to_string"]


def quote(text: str) -> str:
    """A double-quoted filter literal whose parsed value is exactly `text`."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _q(token: Token) -> str:
    return quote(token.value)


def _wrapped(node: Node) -> str:
    text = to_string(node)
    return f"({text})" if isinstance(node, Or | And) else text


def _vector(node: VectorExists) -> str:
    parts = ["_vectors"]
    if node.embedder is not None:
        parts.append("." + _q(node.embedder))
        if node.kind == "fragment" and node.fragment is not None:
            parts.append(".fragments." + _q(node.fragment))
        elif node.kind != "none":
            parts.append("." + node.kind)
    return "".join(parts) + " EXISTS"


def to_string(node: Node) -> str:
    """The canonical filter string for `node`."""
    match node:
        case Or(children=children):
            return " OR ".join(f"({to_string(c)})" if isinstance(c, Or) else to_string(c) for c in children)
        case And(children=children):
            return " AND ".join(_wrapped(c) for c in children)
        case Not(child=child):
            return "NOT " + _wrapped(child)
        case Comparison(field=f, op=op, value=v):
            return f"{_q(f)} {op} {_q(v)}"
        case Range(field=f, low=lo, high=hi):
            return f"{_q(f)} {_q(lo)} TO {_q(hi)}"
        case In(field=f, values=vals):
            return f"{_q(f)} IN [{', '.join(_q(v) for v in vals)}]"
        case NotIn(field=f, values=vals):
            return f"{_q(f)} NOT IN [{', '.join(_q(v) for v in vals)}]"
        case Exists(field=f):
            return f"{_q(f)} EXISTS"
        case NotExists(field=f):
            return f"{_q(f)} NOT EXISTS"
        case IsNull(field=f):
            return f"{_q(f)} IS NULL"
        case IsNotNull(field=f):
            return f"{_q(f)} IS NOT NULL"
        case IsEmpty(field=f):
            return f"{_q(f)} IS EMPTY"
        case IsNotEmpty(field=f):
            return f"{_q(f)} IS NOT EMPTY"
        case Contains(field=f, value=v):
            return f"{_q(f)} CONTAINS {_q(v)}"
        case NotContains(field=f, value=v):
            return f"{_q(f)} NOT CONTAINS {_q(v)}"
        case StartsWith(field=f, value=v):
            return f"{_q(f)} STARTS WITH {_q(v)}"
        case NotStartsWith(field=f, value=v):
            return f"{_q(f)} NOT STARTS WITH {_q(v)}"
        case GeoRadius(lat=lat, lng=lng, meters=m, resolution=res):
            args = [lat.value, lng.value, m.value] + ([res.value] if res is not None else [])
            return f"_geoRadius({', '.join(args)})"
        case GeoBoundingBox(top_right=tr, bottom_left=bl):
            return f"_geoBoundingBox([{tr[0].value}, {tr[1].value}], [{bl[0].value}, {bl[1].value}])"
        case GeoPolygon(points=points):
            return "_geoPolygon(" + ", ".join(f"[{a.value}, {b.value}]" for a, b in points) + ")"
        case VectorExists():
            return _vector(node)
        case Foreign(field=f, filter=inner):
            return f"_foreign({_q(f)}, {to_string(inner)})"
    raise TypeError(f"not a filter node: {node!r}")
