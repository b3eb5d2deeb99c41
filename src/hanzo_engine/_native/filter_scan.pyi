"""The filter parser's whole-filter fast path (native)."""

from collections.abc import Callable
from typing import Any

class ChainScanner:
    def __init__(
        self,
        *,
        token: Callable[..., Any],
        comparison: Callable[..., Any],
        range_: Callable[..., Any],
        in_: Callable[..., Any],
        not_in: Callable[..., Any],
        exists: Callable[..., Any],
        not_exists: Callable[..., Any],
        is_null: Callable[..., Any],
        is_not_null: Callable[..., Any],
        is_empty: Callable[..., Any],
        is_not_empty: Callable[..., Any],
        contains: Callable[..., Any],
        not_contains: Callable[..., Any],
        starts_with: Callable[..., Any],
        not_starts_with: Callable[..., Any],
        and_: Callable[..., Any],
        or_: Callable[..., Any],
        negate: Callable[[Any], Any],
        unquote: Callable[[str, str], str],
        unquote_error: type[Exception],
        keywords: frozenset[str],
        geo_rule: Callable[[str, int], tuple[Any, int] | None],
    ) -> None: ...
    def parse(self, s: str) -> Any | None: ...
