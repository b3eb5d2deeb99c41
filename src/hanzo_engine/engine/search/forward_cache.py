"""Raw forward entries kept in memory between searches, following the index's writes.

A keyed bucket reads the forward entry of every document it ranks (about 115 per search of the
realistic corpus): one LMDB get each, ~1.1 µs at random places of the map (the B-tree's pages are cold
in the CPU's caches and TLB), against ~0.1 µs from a dict. An entry stays valid across commits that do
not change it: every flush records which docids' forward entries it changed (`indexer.forward_delta`),
and the first search of a later state drops those (everything, when that delta was not recorded).
A search of an older state than the cache's reads LMDB directly; writers never use the cache.
"""

from __future__ import annotations

import threading
from typing import Final

from pyroaring import BitMap

from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.update.indexer import (
    DICTIONARY_DELTAS,
    forward_delta,
    forward_version,
)
from hanzo_engine.engine.update.indexer import forward_entries as read_entries

MAX_BYTES: Final = 64 << 20  # per index and process, counting each entry's dict slot and object
ENTRY_OVERHEAD: Final = 100  # bytes object header and dict slot of an entry

_LOCK = threading.Lock()


class ForwardCache:
    """The entries of one index as of the committed state `state` (an LMDB transaction id), which
    holds forward version `version`; -1: nothing yet."""

    __slots__ = ("entries", "size", "state", "version")

    def __init__(self) -> None:
        self.state = -1
        self.version = -1
        self.entries: dict[int, bytes] = {}
        self.size = 0

    def clear(self) -> None:
        self.entries.clear()
        self.size = 0

    def follow(self, reader: IndexReader, state: int) -> bool:
        """Brings the cache to the state `reader` sees (called under `_LOCK`); False when `reader`
        sees an older state than the cache holds."""
        if state == self.state:
            return True
        if state < self.state:
            return False
        version = forward_version(reader)
        if version != self.version:
            changed: set[int] | None = None
            if 0 <= self.version < version and version - self.version <= DICTIONARY_DELTAS:
                changed = set()
                for v in range(self.version + 1, version + 1):
                    delta = forward_delta(reader, v)
                    if delta is None:
                        changed = None
                        break
                    changed.update(delta)
            if changed is None:
                self.clear()
            else:
                entries = self.entries
                for docid in changed:
                    gone = entries.pop(docid, None)
                    if gone is not None:
                        self.size -= len(gone) + ENTRY_OVERHEAD
            self.version = version
        self.state = state
        return True

    def keep(self, docids: list[int], found: list[bytes | None]) -> None:
        """Adds what a search read (called under `_LOCK`, at the cache's state); past the budget, the
        older half of the entries goes."""
        entries = self.entries
        for docid, entry in zip(docids, found, strict=True):
            if entry is not None and docid not in entries:
                entries[docid] = entry
                self.size += len(entry) + ENTRY_OVERHEAD
        if self.size > MAX_BYTES:
            kept = list(entries.items())[len(entries) // 2 :]
            entries.clear()
            entries.update(kept)
            self.size = sum(len(entry) + ENTRY_OVERHEAD for _, entry in kept)


def forward_entries(reader: IndexReader, docids: BitMap | list[int]) -> list[bytes | None]:
    """The raw forward entries of `docids`, in order, as `indexer.forward_entries` reads them."""
    state = reader.state_id
    if state is None:
        return read_entries(reader, docids)
    with _LOCK:
        cache: ForwardCache = reader.index.__dict__.setdefault("_forward_cache", ForwardCache())
        found = list(map(cache.entries.get, docids)) if cache.follow(reader, state) else None
    if found is None:
        return read_entries(reader, docids)
    if None in found:
        missing = [docid for docid, entry in zip(docids, found, strict=True) if entry is None]
        read = read_entries(reader, missing)
        at = iter(read)
        found = [entry if entry is not None else next(at) for entry in found]
        with _LOCK:
            if cache.state == state:
                cache.keep(missing, read)
    return found
