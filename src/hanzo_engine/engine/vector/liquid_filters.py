"""The Liquid standard filters a document template may use (`{{ value | filter: args }}`)."""

from __future__ import annotations

import html
import math
import re
import urllib.parse
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from .liquid_values import equals, is_number, to_text, truthy


def _num(v: Any) -> int | float:
    if is_number(v):
        return int(v) if isinstance(v, int) else float(v)
    text = to_text(v).strip()
    try:
        return int(text)
    except ValueError:
        return float(text) if text else 0


def _truncate(v: Any, length: Any = 50, ellipsis: Any = "...") -> str:
    text, end = to_text(v), to_text(ellipsis)
    n = int(_num(length))
    return text if len(text) <= n else text[: max(n - len(end), 0)] + end


def _truncatewords(v: Any, words: Any = 15, ellipsis: Any = "...") -> str:
    parts = to_text(v).split()
    n = max(int(_num(words)), 1)
    return " ".join(parts) if len(parts) <= n else " ".join(parts[:n]) + to_text(ellipsis)


def _slice(v: Any, start: Any, length: Any = 1) -> Any:
    seq = v if isinstance(v, list) else to_text(v)
    s, n = int(_num(start)), int(_num(length))
    s = s + len(seq) if s < 0 else s
    return seq[max(s, 0) : max(s, 0) + n]


def _sequence(v: Any) -> list[Any]:
    return v if isinstance(v, list) else ([] if v is None else [v])


def _prop(item: Any, key: Any) -> Any:
    return item.get(to_text(key)) if isinstance(item, dict) else None


def _sort_key(item: Any) -> tuple[int, Any]:
    return (0, item) if is_number(item) else (1, to_text(item))


FILTERS: Final[dict[str, Callable[..., Any]]] = {
    "abs": lambda v: abs(_num(v)),
    "append": lambda v, s: to_text(v) + to_text(s),
    "at_least": lambda v, n: max(_num(v), _num(n)),
    "at_most": lambda v, n: min(_num(v), _num(n)),
    "capitalize": lambda v: to_text(v)[:1].upper() + to_text(v)[1:],
    "ceil": lambda v: math.ceil(_num(v)),
    "compact": lambda v: [x for x in _sequence(v) if x is not None],
    "concat": lambda v, other: _sequence(v) + _sequence(other),
    "default": lambda v, d, allow_false=False: (
        d if (v is None or (v is False and not allow_false) or v in ("", [], {})) else v
    ),
    "divided_by": lambda v, n: (
        _num(v) // _num(n) if isinstance(_num(v), int) and isinstance(_num(n), int) else _num(v) / _num(n)
    ),
    "downcase": lambda v: to_text(v).lower(),
    "escape": lambda v: html.escape(to_text(v)),
    "escape_once": lambda v: html.escape(html.unescape(to_text(v))),
    "first": lambda v: (v[0] if v else None) if isinstance(v, list) else to_text(v)[:1],
    "floor": lambda v: math.floor(_num(v)),
    "join": lambda v, sep=" ": to_text(sep).join(to_text(x) for x in _sequence(v)),
    "last": lambda v: (v[-1] if v else None) if isinstance(v, list) else to_text(v)[-1:],
    "lstrip": lambda v: to_text(v).lstrip(),
    "map": lambda v, key: [_prop(x, key) for x in _sequence(v)],
    "minus": lambda v, n: _num(v) - _num(n),
    "modulo": lambda v, n: _num(v) % _num(n),
    "newline_to_br": lambda v: to_text(v).replace("\n", "<br />\n"),
    "plus": lambda v, n: _num(v) + _num(n),
    "prepend": lambda v, s: to_text(s) + to_text(v),
    "remove": lambda v, s: to_text(v).replace(to_text(s), ""),
    "remove_first": lambda v, s: to_text(v).replace(to_text(s), "", 1),
    "replace": lambda v, a, b="": to_text(v).replace(to_text(a), to_text(b)),
    "replace_first": lambda v, a, b="": to_text(v).replace(to_text(a), to_text(b), 1),
    "reverse": lambda v: _sequence(v)[::-1],
    "round": lambda v, digits=0: (
        round(_num(v), int(_num(digits)))
        if int(_num(digits)) > 0
        else int(Decimal(str(_num(v))).quantize(Decimal(1), "ROUND_HALF_UP"))
    ),
    "rstrip": lambda v: to_text(v).rstrip(),
    "size": lambda v: len(v) if isinstance(v, (list, dict)) else len(to_text(v)),
    "slice": _slice,
    "sort": lambda v, key=None: sorted(_sequence(v), key=lambda x: _sort_key(_prop(x, key) if key else x)),
    "sort_natural": lambda v, key=None: sorted(
        _sequence(v), key=lambda x: to_text(_prop(x, key) if key else x).lower()
    ),
    "split": lambda v, sep: [
        p for p in (to_text(v).split(to_text(sep)) if to_text(sep) else list(to_text(v)))
    ],
    "strip": lambda v: to_text(v).strip(),
    "strip_html": lambda v: re.sub(r"<[^>]*>", "", to_text(v)),
    "strip_newlines": lambda v: to_text(v).replace("\r", "").replace("\n", ""),
    "times": lambda v, n: _num(v) * _num(n),
    "truncate": _truncate,
    "truncatewords": _truncatewords,
    "uniq": lambda v: [
        x for i, x in enumerate(_sequence(v)) if not any(equals(x, y) for y in _sequence(v)[:i])
    ],
    "upcase": lambda v: to_text(v).upper(),
    "url_decode": lambda v: urllib.parse.unquote_plus(to_text(v)),
    "url_encode": lambda v: urllib.parse.quote_plus(to_text(v)),
    "where": lambda v, key, value=True: [
        x for x in _sequence(v) if equals(_prop(x, key), value) or (value is True and truthy(_prop(x, key)))
    ],
}
