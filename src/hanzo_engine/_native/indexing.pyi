"""Full-text indexing hot path (native). See indexing.pyx, csrc/postings.h and csrc/bitmap_merge.h."""

from collections.abc import Callable, Iterable

from hanzo_engine._native.tokenizer import TokenizerConfig

MAX_POSITION: int

Fields = list[tuple[int, list[str]]]

def analyze(
    cfg: TokenizerConfig, fields: Fields
) -> tuple[dict[int, int], dict[str, list[int]], list[tuple[int, list[str]]]]: ...
def document_fields(flat: dict[str, object], fid_of: dict[str, int], names: list[str]) -> Fields: ...
def merge_bitmap(stored: bytes | None, added: Iterable[int], removed: Iterable[int]) -> bytes: ...

class PostingAccumulator:
    def add(self, cfg: TokenizerConfig, docid: int, fields: Fields) -> bytes: ...
    def add_batch(
        self, cfg: TokenizerConfig, docs: list[tuple[int, Fields]], threads: int = 1
    ) -> list[bytes]: ...
    def remove(self, docid: int, forward: bytes) -> None: ...
    def clear(self) -> None: ...
    def apply_word_docids(
        self,
        get: Callable[[bytes], bytes | memoryview | None],
        put: Callable[[bytes, bytes], object],
        delete: Callable[[bytes], object],
    ) -> tuple[list[bytes], list[bytes]]: ...
    def apply_word_fid_docids(
        self,
        get: Callable[[bytes], bytes | memoryview | None],
        put: Callable[[bytes, bytes], object],
        delete: Callable[[bytes], object],
    ) -> None: ...
    def field_stats_changes(self) -> list[tuple[int, int, int]]: ...
    @property
    def memory_usage(self) -> int: ...

def next_word_bits(word: bytes) -> int: ...
