"""Unions of many posting bitmaps, shared by the searches of one index between two writes.

A one- or two-letter prefix expands to up to 1,000 words: every search of it reads and merges their
bitmaps again (word docids per typo level, first-word keys per field). The union only depends on
the committed state, which LMDB names by the id of the last write transaction a read transaction
sees (`Transaction.id()`), and on the derivations and fields asked for, which make the key. Entries
are frozen; callers get copies (a copy costs a fraction of the merge), so nothing they do reaches
another search.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Final

from pyroaring import BitMap, FrozenBitMap

from hanzo_engine.engine.index import IndexReader

MIN_PARTS: Final = 32  # fewer bitmap lookups and merges cost less than hashing a cache key
MAX_BYTES: Final = 64 << 20  # per index, of bitmap containers; least recently used out first

_LOCK = threading.Lock()


class UnionCache:
    def __init__(self) -> None:
        self.txn_id = -1
        self.entries: OrderedDict[Hashable, tuple[FrozenBitMap, int]] = OrderedDict()
        self.size = 0  # bytes of the entries' containers


def _bytes(bitmap: FrozenBitMap) -> int:
    stats = bitmap.get_statistics()
    return (
        stats["n_bytes_array_containers"]
        + stats["n_bytes_run_containers"]
        + stats["n_bytes_bitset_containers"]
        + 64
    )


def cached_union(reader: IndexReader, key: Hashable, parts: int, compute: Callable[[], BitMap]) -> BitMap:
    """`compute()` (the union of `parts` bitmaps), from the index's cache when an earlier search of
    the same committed state made it under `key`."""
    txn_id = reader.state_id
    if parts < MIN_PARTS or txn_id is None:
        return compute()
    with _LOCK:
        cache: UnionCache = reader.index.__dict__.setdefault("_union_cache", UnionCache())
        if cache.txn_id != txn_id:
            if txn_id < cache.txn_id:  # an older snapshot (a long read): do not evict the newer state
                return compute()
            cache.txn_id = txn_id
            cache.entries.clear()
            cache.size = 0
        found = cache.entries.get(key)
        if found is not None:
            cache.entries.move_to_end(key)
            return BitMap(found[0])
    computed = compute()
    value = FrozenBitMap(computed)
    size = _bytes(value)
    with _LOCK:
        if cache.txn_id == txn_id and key not in cache.entries and size <= MAX_BYTES:
            cache.entries[key] = (value, size)
            cache.size += size
            while cache.size > MAX_BYTES:
                cache.size -= cache.entries.popitem(last=False)[1][1]
    return computed
