"""The facet change log of one write transaction (native). See facet_log.pyx."""

from collections.abc import Callable
from typing import Any

WALK_IT: int
ADDED: int
ADDED_FLUSH_DUE: int

class FacetLog:
    def __init__(
        self,
        normalize: Callable[[str], str],
        select: Callable[[str], int],
        fid_of: dict[str, int],
        new_fid: Callable[[str], int],
        match: int,
        no_match: int,
        txn: Any,
        docs_db: Any,
        max_pending: int,
    ) -> None: ...
    def take_doc(self, docid: int) -> bytes | None: ...
    def __len__(self) -> int: ...
    def log(self, docid: int, forward: dict[int, list[Any]], add: bool) -> None: ...
    def add_document(self, docid: int, document: dict[str, Any]) -> int: ...
    def clear(self) -> None: ...
    def flush(
        self,
        txn: Any,
        dbs: tuple[Any, Any, Any],
        decode_bitmap: Callable[[bytes], Any],
        encode_bitmap: Callable[[Any], bytes],
        bitmap_type: type,
        array_type: type,
    ) -> None: ...
