"""Raw forward entries kept in memory between searches, following the index's writes.

A keyed bucket reads the forward entry of every document it ranks (about 115 per search of the
realistic corpus): one LMDB get each, ~1.1 µs at random places of the map (the B-tree's pages are cold
in the CPU's caches and TLB). Here a chunk's entries are one numpy gather from an array indexed by
docid (~10 µs for 115, where a dict lookup per document took ~45). An entry stays valid across commits
that do not change it: every flush records which docids' forward entries it changed
(`indexer.forward_delta`), and the first search of a later state drops those (everything, when that
delta was not recorded). A search of an older state than the cache's reads LMDB directly; writers never
use the cache; neither do documents past MAX_SLOTS (the slot arrays stay within a third of the budget).
"""

from __future__ import annotations

import threading
from typing import Final

import numpy as np
from pyroaring import BitMap

from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.update.indexer import forward_changes, forward_version
from hanzo_engine.engine.update.indexer import forward_entries as read_entries

MAX_BYTES: Final = 64 << 20  # per index and process: entries, their objects, and the slot arrays
ENTRY_OVERHEAD: Final = 64  # bytes object header and reference of an entry
SLOT_BYTES: Final = 9  # per docid slot: a reference and a presence flag
MAX_SLOTS: Final = 1 << 21  # documents with a higher internal id are read from LMDB each time

_LOCK = threading.Lock()


class ForwardCache:
    """The entries of one index as of the committed state `state` (an LMDB transaction id), which
    holds forward version `version`; -1: nothing yet. Entries sit in an object array indexed by docid,
    so that a chunk's lookups are one numpy gather instead of a dict lookup per document."""

    __slots__ = ("entries", "present", "size", "state", "version")

    def __init__(self) -> None:
        self.state = -1
        self.version = -1
        self.entries: np.ndarray = np.empty(0, dtype=object)
        self.present: np.ndarray = np.zeros(0, dtype=np.bool_)
        self.size = 0

    def clear(self) -> None:
        self.entries[:] = None
        self.present[:] = False
        self.size = SLOT_BYTES * len(self.present)

    def reserve(self, top: int) -> bool:
        """Room for docids up to `top`; False past MAX_SLOTS."""
        if top < len(self.present):
            return True
        if top >= MAX_SLOTS:
            return False
        n = min(MAX_SLOTS, max(1024, 1 << top.bit_length()))
        entries = np.empty(n, dtype=object)
        entries[: len(self.entries)] = self.entries
        present = np.zeros(n, dtype=np.bool_)
        present[: len(self.present)] = self.present
        self.size += SLOT_BYTES * (n - len(self.present))
        self.entries, self.present = entries, present
        return True

    def follow(self, reader: IndexReader, state: int) -> bool:
        """Brings the cache to the state `reader` sees (called under `_LOCK`); False when `reader`
        sees an older state than the cache holds."""
        if state == self.state:
            return True
        if state < self.state:
            return False
        version = forward_version(reader)
        if version != self.version:
            changed = forward_changes(reader, self.version, version) if 0 <= self.version < version else None
            if changed is None:
                self.clear()
            else:
                for docid in changed:
                    if docid < len(self.present) and self.present[docid]:
                        self.size -= len(self.entries[docid]) + ENTRY_OVERHEAD
                        self.entries[docid] = None
                        self.present[docid] = False
            self.version = version
        self.state = state
        return True

    def keep(self, docids: list[int], found: list[bytes | None]) -> None:
        """Adds what a search read (called under `_LOCK`, at the cache's state); past the budget,
        everything goes."""
        entries, present = self.entries, self.present
        for docid, entry in zip(docids, found, strict=True):
            if entry is not None and not present[docid]:
                entries[docid] = entry
                present[docid] = True
                self.size += len(entry) + ENTRY_OVERHEAD
        if self.size > MAX_BYTES:
            self.clear()


def forward_entries(reader: IndexReader, docids: BitMap | list[int]) -> list[bytes | None]:
    """The raw forward entries of `docids`, in order, as `indexer.forward_entries` reads them."""
    state = reader.state_id
    if state is None or not len(docids):
        return read_entries(reader, docids)
    if isinstance(docids, BitMap):
        ids = np.frombuffer(docids.to_array(), dtype=np.uint32)
        top = int(ids[-1])
    else:
        ids = np.array(docids, dtype=np.int64)
        top = int(ids.max())
    with _LOCK:
        cache: ForwardCache | None = reader.index.__dict__.get("_forward_cache")
        if cache is None:
            cache = reader.index.__dict__["_forward_cache"] = ForwardCache()
        if cache.follow(reader, state) and cache.reserve(top):
            hit = cache.present[ids]
            found: list[bytes | None] | None = cache.entries[ids].tolist()
        else:
            found = None
    if found is None:
        return read_entries(reader, docids)
    if not hit.all():
        at = np.flatnonzero(~hit)
        missing = ids[at].tolist()
        read = read_entries(reader, missing)
        for i, entry in zip(at.tolist(), read, strict=True):
            found[i] = entry
        with _LOCK:
            if cache.state == state:
                cache.keep(missing, read)
    return found
