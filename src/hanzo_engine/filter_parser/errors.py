"""The filter error type and the text helpers that make its messages byte-identical to Meilisearch's.

Every positioned message has Meilisearch's two-part shape::

    <diagnostic line(s)>
    <start>:<end> <the whole original filter string>

`start` is the 1-based column of the offending fragment *within its line* (nom_locate's
`get_utf8_column`: characters since the last ``\\n`` before it, plus one) and ``end = start + number of
characters of the fragment``. Fragments quoted inside the diagnostic are escaped the way Rust's
``str::escape_debug`` does it, so ``'`` prints as ``\\'`` and a newline as ``\\n``.

Number formatting follows Rust too: `rust_f64_display` is ``format!("{}", f64)`` (shortest round-trip
digits, never an exponent) and `json_display` is serde_json's compact ``Display`` for a JSON value.
These and the escaping are `rustcompat`'s, under the names the filter modules use.
"""

from __future__ import annotations

from hanzo_engine.rustcompat.floats import f64_display as rust_f64_display
from hanzo_engine.rustcompat.serde_json import to_json as json_display
from hanzo_engine.rustcompat.strings import RUST_WHITESPACE, escape_debug
from hanzo_engine.rustcompat.strings import trim as rust_trim

__all__ = [
    "RUST_WHITESPACE",
    "FilterError",
    "columns",
    "escape_debug",
    "json_display",
    "positioned",
    "rust_f64_display",
    "rust_trim",
]


class FilterError(ValueError):
    """A user error in a filter, carrying Meilisearch's exact message (position line included).

    The caller maps it to ``invalid_search_filter`` / ``invalid_document_filter`` /
    ``invalid_similar_filter``; when `feature` is set (``"containsFilter"``, ``"multimodal"``,
    ``"network"``) the filter used an experimental feature that is off and the code is
    ``feature_not_enabled`` instead.
    """

    def __init__(self, message: str, *, feature: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.feature = feature

    def __str__(self) -> str:
        return self.message


def columns(source: str, start: int, end: int) -> tuple[int, int]:
    """1-based (start, end) columns of ``source[start:end]`` as nom_locate reports them."""
    line_start = source.rfind("\n", 0, start) + 1
    col = start - line_start + 1
    return col, col + (end - start)


def positioned(message: str, source: str, start: int, end: int) -> str:
    """`message` followed by Meilisearch's ``\\n<start>:<end> <filter>`` position line."""
    col, col_end = columns(source, start, end)
    return f"{message}\n{col}:{col_end} {source}"
