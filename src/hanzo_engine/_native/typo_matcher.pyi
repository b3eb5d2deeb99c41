"""Native helpers for search (typo matching over the sorted dictionary, walked as a trie)."""

from collections.abc import Sequence

class SortedWords:
    words: tuple[str, ...]
    def __init__(self, words: Sequence[str]) -> None: ...
    def __len__(self) -> int: ...
    def matches(
        self,
        query: str,
        max_typos: int,
        prefix: bool,
        limit: int = 1000,
        keep: tuple[int, ...] | None = None,
        skip_digits: bool = False,
    ) -> list[tuple[str, int]]: ...
