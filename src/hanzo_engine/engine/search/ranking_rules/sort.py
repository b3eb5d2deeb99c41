"""The sort rules in the ranking pipeline (milli's `sort.rs` and `geo_sort.rs`): custom
`field:asc|desc` rules and, where `sort` sits, the request's sort criteria. With facet structures
they are keyed by `sorting.Ordering.rule_key`; without (`ordering` None: a search with neither a
request sort nor custom rules known to it) by the stored document's values (`sort_value`).
A sort rule gives a score detail but no rank.

Native: none in `_native/bucket.pyx` (code 7 leaves an empty column); the native keys take the
column of `sorting.Ordering.rank_column` instead.
"""

from __future__ import annotations

from typing import Any

NATIVE_CODE = 7


def _lookup(document: Any, path: str) -> list[Any]:
    """The values at a dotted path, arrays flattened (milli's faceted values)."""
    values: list[Any] = [document]
    for part in path.split("."):
        nxt: list[Any] = []
        for v in values:
            for item in v if isinstance(v, list) else [v]:
                if isinstance(item, dict) and part in item:
                    nxt.append(item[part])
        values = nxt
    flat: list[Any] = []
    for v in values:
        flat.extend(v if isinstance(v, list) else [v])
    return flat


def sort_value(document: dict[str, Any], rule: str) -> tuple[tuple[Any, ...], Any]:
    """(sort key, score-details value) of a `field:asc|desc` rule, as milli's facet sort: numbers
    before strings in both directions, strings compared trimmed and lowercased (booleans as
    "true"/"false"), the smallest value ascending, the largest descending, missing values last."""
    name, _, direction = rule.rpartition(":")
    desc = direction == "desc"
    numbers: list[float] = []
    strings: list[str] = []
    for v in _lookup(document, name):
        if isinstance(v, bool):
            strings.append("true" if v else "false")
        elif isinstance(v, (int, float)):
            numbers.append(float(v))
        elif isinstance(v, str):
            strings.append(v.strip().lower())
    if numbers:
        n = max(numbers) if desc else min(numbers)
        return (0, -n if desc else n), n
    if strings:
        text = max(strings) if desc else min(strings)
        if desc:
            return (1, (*(-b for b in text.encode()), 1)), text
        return (1, text.encode()), text
    return (2,), None


def sort_detail(rule: str, order: int, value: Any, displayed: set[str] | None) -> dict[str, Any]:
    """The score detail of a sort rule; a field that is not displayed is redacted, as milli."""
    if displayed is not None and rule.rpartition(":")[0] not in displayed:
        return {f"<hidden-rule-{order}>": {"order": order, "value": "<hidden>"}}
    return {rule: {"order": order, "value": value}}
