"""Document templates (`documentTemplate`): the Liquid subset Meilisearch renders documents with.

A template sees two variables: `doc`, the document's top-level fields (without `_vectors`), and
`fields`, one `{name, value, is_searchable}` object per top-level field in the index's field order.
`Prompt.render` returns the text sent to the embedder, cut to `documentTemplateMaxBytes` UTF-8 bytes
on a character boundary (default 400).

Supported Liquid: `{{ expr | filter: args }}`; tags `if`/`elsif`/`else`, `unless`, `case`/`when`,
`for` (`limit:`, `offset:`, `reversed`, ranges, `forloop`, `break`, `continue`, `else`), `assign`,
`capture`, `comment`, `raw`, and `{%- -%}` / `{{- -}}` whitespace control; the usual stdlib filters
(`FILTERS`). As in liquid-rust, which Meilisearch uses:

- rendering is strict: `{{ doc.missing }}` (or a filter applied to it) is an error, "Unknown index",
  while a condition (`{% if doc.missing %}`) treats a missing value as nil;
- `nil` renders as nothing, an array as its items back to back, an object as keys and values back to
  back, a float as Rust prints an `f64` (`2.0` -> `2`, no exponent);
- arrays answer `first`, `last`, `size`; objects and strings answer `size`.

Errors display as liquid-rust's: `liquid: <message>` then `  with:` and `    key=value` lines.

The engine is split by stage: `liquid_values` (errors, display, comparisons), `liquid_filters`,
`liquid_parser` (template -> nodes) and `liquid_render` (nodes -> text); this module holds the prompt.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final

from .liquid_parser import TemplateParser
from .liquid_render import Context, LoopBreak, LoopContinue, render_all

DEFAULT_TEMPLATE: Final = (
    "{% for field in fields %}{% if field.is_searchable and field.value != nil %}"
    "{{ field.name }}: {{ field.value }}\n{% endif %}{% endfor %}"
)
DEFAULT_MAX_BYTES: Final = 400
VECTORS_FIELD: Final = "_vectors"


def truncate_utf8(text: str, max_bytes: int) -> str:
    """`text` cut to at most `max_bytes` UTF-8 bytes, on a character boundary."""
    raw = text.encode()
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode(errors="ignore")


def is_searchable(field: str, searchable: Sequence[str] | None) -> bool:
    """Whether a top-level field is searchable (`searchable` None or with `*`: every field)."""
    if searchable is None or "*" in searchable:
        return True
    return any(field == attr or field.startswith(attr + ".") for attr in searchable)


def _ordered_fields(document: dict[str, Any], field_order: Sequence[str] | None) -> Iterator[str]:
    names = [k for k in document if k != VECTORS_FIELD]
    if not field_order:
        yield from names
        return
    rank = {name: i for i, name in enumerate(field_order)}
    yield from sorted(names, key=lambda n: rank.get(n, len(rank)))  # stable: unknown names keep their order


class Prompt:
    """A parsed document template; TemplateSyntaxError when it does not parse."""

    def __init__(self, template: str = DEFAULT_TEMPLATE, max_bytes: int | None = DEFAULT_MAX_BYTES) -> None:
        self.template = template
        self.max_bytes = max_bytes
        self._nodes = TemplateParser(template).block(())[0]

    def render(
        self,
        document: dict[str, Any],
        searchable: Sequence[str] | None = None,
        field_order: Sequence[str] | None = None,
    ) -> str:
        """The text of `document` (RenderError when the template asks for what it lacks)."""
        names = list(_ordered_fields(document, field_order))
        doc = {name: document[name] for name in names}
        fields = [
            {"name": name, "value": doc[name], "is_searchable": is_searchable(name, searchable)}
            for name in names
        ]
        ctx = Context({"doc": doc, "fields": fields})
        out: list[str] = []
        try:
            render_all(self._nodes, ctx, out)
        except (LoopBreak, LoopContinue):
            pass  # `break` outside a loop ends the template, as Liquid
        text = "".join(out)
        return text if self.max_bytes is None else truncate_utf8(text, self.max_bytes)
