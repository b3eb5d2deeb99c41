"""The filter AST: tokens that remember where they came from, and one dataclass per construct.

Equality compares *values only*: a token equals another when their decoded `value` is the same,
whatever quoting, escaping or position produced it, so ``parse(to_string(ast)) == ast`` holds and two
spellings of the same filter compare equal. (Meilisearch compares the raw fragment; comparing the
decoded value is the stronger, spelling-independent notion the round-trip tests need.)

Negation is normalised the way Meilisearch's parser does it (a ``NOT`` applied to a ``NOT`` cancels):
``x NOT IN [..]`` and ``NOT x IN [..]`` both give `NotIn`, ``NOT x NOT EXISTS`` gives `Exists`, and
`Not` only ever wraps a node that has no dedicated negative form (`Or`, `And`, `Comparison`,
`Range`, the geo filters, `VectorExists`). `negate` is that rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import TypeAlias

from .errors import FilterError, columns, positioned

__all__ = [
    "And",
    "Comparison",
    "Contains",
    "Exists",
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
    "negate",
]


class Token:
    """A value or field name: its decoded `value` and the slice ``source[start:end]`` it came from.

    For a quoted value the slice is the text between the quotes (as Meilisearch's spans are).
    """

    __slots__ = ("end", "source", "start", "value")

    def __init__(self, value: str, source: str, start: int, end: int) -> None:
        self.value = value
        self.source = source
        self.start = start
        self.end = end

    @classmethod
    def synthetic(cls, value: str) -> Token:
        """A token that is its own source (for nodes built by hand rather than parsed)."""
        return cls(value, value, 0, len(value))

    @property
    def raw(self) -> str:
        """The original text of the token, before unquoting and unescaping."""
        return self.source[self.start : self.end]

    @property
    def span(self) -> tuple[int, int]:
        """1-based (start, end) columns, as printed in Meilisearch's error position line."""
        return columns(self.source, self.start, self.end)

    def error(self, message: str, *, feature: str | None = None) -> FilterError:
        """A `FilterError` whose position line points at this token (``as_external_error``)."""
        return FilterError(positioned(message, self.source, self.start, self.end), feature=feature)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Token) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Token({self.value!r})"


@dataclass(slots=True)
class Or:
    children: list[Node]


@dataclass(slots=True)
class And:
    children: list[Node]


@dataclass(slots=True)
class Not:
    child: Node


@dataclass(slots=True)
class Comparison:
    """``field op value`` with op one of ``= != > >= < <=``."""

    field: Token
    op: str
    value: Token


@dataclass(slots=True)
class Range:
    """``field low TO high`` (inclusive on both ends)."""

    field: Token
    low: Token
    high: Token


@dataclass(slots=True)
class In:
    field: Token
    values: list[Token]


@dataclass(slots=True)
class NotIn:
    field: Token
    values: list[Token]


@dataclass(slots=True)
class Exists:
    field: Token


@dataclass(slots=True)
class NotExists:
    field: Token


@dataclass(slots=True)
class IsNull:
    field: Token


@dataclass(slots=True)
class IsNotNull:
    field: Token


@dataclass(slots=True)
class IsEmpty:
    field: Token


@dataclass(slots=True)
class IsNotEmpty:
    field: Token


@dataclass(slots=True)
class Contains:
    """``field CONTAINS value``; `keyword` is the ``CONTAINS`` token, for the feature-gate error."""

    field: Token
    value: Token
    keyword: Token = dc_field(compare=False)


@dataclass(slots=True)
class NotContains:
    field: Token
    value: Token
    keyword: Token = dc_field(compare=False)


@dataclass(slots=True)
class StartsWith:
    field: Token
    value: Token
    keyword: Token = dc_field(compare=False)


@dataclass(slots=True)
class NotStartsWith:
    field: Token
    value: Token
    keyword: Token = dc_field(compare=False)


@dataclass(slots=True)
class GeoRadius:
    """``_geoRadius(lat, lng, meters[, resolution])``; the tokens hold the numbers as written."""

    lat: Token
    lng: Token
    meters: Token
    resolution: Token | None = None


@dataclass(slots=True)
class GeoBoundingBox:
    """``_geoBoundingBox([lat, lng], [lat, lng])``: top-right (north-east) then bottom-left."""

    top_right: tuple[Token, Token]
    bottom_left: tuple[Token, Token]


@dataclass(slots=True)
class GeoPolygon:
    """``_geoPolygon([lat, lng], ...)`` with at least three points."""

    points: list[tuple[Token, Token]]


@dataclass(slots=True)
class VectorExists:
    """``_vectors[.embedder[.fragments.name|.userProvided|.documentTemplate|.regenerate]] EXISTS``.

    `kind` is ``"none"``, ``"fragment"`` (then `fragment` is set), ``"userProvided"``,
    ``"documentTemplate"`` or ``"regenerate"``; `fid` is the ``_vectors`` token.
    """

    fid: Token = dc_field(compare=False)
    embedder: Token | None
    kind: str = "none"
    fragment: Token | None = None


@dataclass(slots=True)
class Foreign:
    """``_foreign(field, filter)``: the documents whose `field` holds the id of a document that
    `filter` selects in the index the `foreignKeys` setting names for `field`.

    `text_start` is where the clause starts in the source: Meilisearch's position lines for errors
    inside the clause print the filter from there on (the columns still count from the start)."""

    field: Token
    filter: Node
    text_start: int = dc_field(default=0, compare=False)

    def error(self, token: Token, message: str, *, feature: str | None = None) -> FilterError:
        """A `FilterError` pointing at `token` (inside the clause), printed as Meilisearch prints it."""
        col, col_end = columns(token.source, token.start, token.end)
        return FilterError(f"{message}\n{col}:{col_end} {token.source[self.text_start :]}", feature=feature)

    def clause_message(self, message: str) -> str:
        """An error message positioned in the whole filter, re-printed as the clause's position line."""
        source = self.field.source
        if self.text_start and message.endswith(" " + source):
            return message[: len(message) - len(source)] + source[self.text_start :]
        return message


Node: TypeAlias = (
    Or
    | And
    | Not
    | Comparison
    | Range
    | In
    | NotIn
    | Exists
    | NotExists
    | IsNull
    | IsNotNull
    | IsEmpty
    | IsNotEmpty
    | Contains
    | NotContains
    | StartsWith
    | NotStartsWith
    | GeoRadius
    | GeoBoundingBox
    | GeoPolygon
    | VectorExists
    | Foreign
)


def negate(node: Node) -> Node:
    """The negation of `node`, cancelling a double negation as Meilisearch's ``NOT`` does."""
    match node:
        case Not(child=child):
            return child
        case In(field=f, values=values):
            return NotIn(f, values)
        case NotIn(field=f, values=values):
            return In(f, values)
        case Exists(field=f):
            return NotExists(f)
        case NotExists(field=f):
            return Exists(f)
        case IsNull(field=f):
            return IsNotNull(f)
        case IsNotNull(field=f):
            return IsNull(f)
        case IsEmpty(field=f):
            return IsNotEmpty(f)
        case IsNotEmpty(field=f):
            return IsEmpty(f)
        case Contains(field=f, value=v, keyword=k):
            return NotContains(f, v, k)
        case NotContains(field=f, value=v, keyword=k):
            return Contains(f, v, k)
        case StartsWith(field=f, value=v, keyword=k):
            return NotStartsWith(f, v, k)
        case NotStartsWith(field=f, value=v, keyword=k):
            return StartsWith(f, v, k)
    return Not(node)
