"""Index uid -> index environment. The mapping lives in the tasks env; environments are opened lazily.

An index directory is `indexes/<uuid>/`. Renames and swaps only touch the mapping, never files.
Directories not named by the mapping (left by a crash between creating an env and committing the
mapping) are removed at start-up by `sweep_orphans`.
"""

from __future__ import annotations

import shutil
import threading
import uuid as uuidlib
import weakref
from collections import OrderedDict
from pathlib import Path

import lmdb

from hanzo_engine.engine.index import Index

from .store import TaskStore


class IndexMapper:
    """Invariant: at most ONE open `Index` per directory in the process (LMDB forbids opening an
    environment twice: its locks would deadlock). `_open` keeps the most recently used indexes
    alive; `_live` (weak) finds any index still referenced elsewhere, e.g. by a running batch or a
    search, after it left `_open` — an evicted environment is never closed explicitly, it closes
    itself when its last user lets go of it."""

    # Indexes kept open without a user (each reserves address space for its memory map).
    MAX_OPEN = 100

    def __init__(
        self,
        store: TaskStore,
        indexes_dir: Path,
        *,
        max_indexing_memory: int | None = None,
        max_indexing_threads: int | None = None,
        readonly: bool = False,
    ) -> None:
        self.store = store
        # `--max-indexing-memory`: every index this mapper hands out bounds its indexing with it
        self.max_indexing_memory = max_indexing_memory
        self.max_indexing_threads = max_indexing_threads
        self.dir = indexes_dir
        # a search worker's mapper: environments opened read-only, closed once the mapping drops them
        self.readonly = readonly
        if not readonly:
            self.dir.mkdir(parents=True, exist_ok=True)
        self._open: OrderedDict[str, Index] = OrderedDict()
        self._live: weakref.WeakValueDictionary[str, Index] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()
        self._mapping_txn = -1  # the tasks env's last transaction when unmapped envs were last closed

    @staticmethod
    def new_uuid() -> str:
        return str(uuidlib.uuid4())

    def uuid_of(self, uid: str) -> str | None:
        with self.store.env.begin() as txn:
            return self.store.index_uuid(txn, uid)

    def mapping(self) -> dict[str, str]:
        with self.store.env.begin() as txn:
            return self.store.index_mapping(txn)

    def _remember(self, uuid: str, index: Index) -> Index:
        index.max_indexing_memory = self.max_indexing_memory
        index.max_indexing_threads = self.max_indexing_threads
        self._open[uuid] = index
        self._open.move_to_end(uuid)
        self._live[uuid] = index
        while len(self._open) > self.MAX_OPEN:
            self._open.popitem(last=False)  # closed by refcounting once nobody uses it
        return index

    def open_uuid(self, uuid: str) -> Index:
        with self._lock:
            index = self._open.get(uuid) or self._live.get(uuid)
            if index is None:
                index = Index(self.dir / uuid, readonly=self.readonly)
            return self._remember(uuid, index)

    def _close_unmapped(self) -> None:
        """A worker's envs of indexes deleted, compacted or swapped away (the writer removed or will
        remove their files) are closed once the tasks env changed: a search on one retries on the env
        the mapping names now (`read_index`)."""
        txn_id = self.store.env.info()["last_txnid"]
        if txn_id == self._mapping_txn:
            return
        self._mapping_txn = txn_id
        mapped = set(self.mapping().values())
        with self._lock:
            stale = [(uuid, index) for uuid, index in self._live.items() if uuid not in mapped]
            for uuid, _ in stale:
                self._open.pop(uuid, None)
                self._live.pop(uuid, None)
        for _, index in stale:
            index.close()

    def create_uuid(self, uuid: str, *, primary_key: str | None, created_at: int) -> Index:
        with self._lock:
            index = self._open.get(uuid) or self._live.get(uuid)
            if index is None:
                index = Index.create(self.dir / uuid, primary_key=primary_key, created_at=created_at)
            return self._remember(uuid, index)

    def get(self, uid: str) -> Index | None:
        """The open index named `uid`, or None when no such index exists."""
        if self.readonly:
            self._close_unmapped()
        uuid = self.uuid_of(uid)
        if uuid is None:
            return None
        if not self.readonly:
            return self.open_uuid(uuid)
        try:
            return self.open_uuid(uuid)
        except lmdb.Error:  # deleted by the writer between the mapping read and the open
            return None

    def drop_uuid(self, uuid: str) -> None:
        with self._lock:
            index = self._open.pop(uuid, None) or self._live.pop(uuid, None)
        if index is not None:
            index.delete_files()
        else:
            shutil.rmtree(self.dir / uuid, ignore_errors=True)

    def sweep_orphans(self, keep: set[str]) -> list[str]:
        known = set(self.mapping().values()) | keep
        removed = []
        for child in self.dir.iterdir():
            if child.is_dir() and child.name not in known:
                shutil.rmtree(child, ignore_errors=True)
                removed.append(child.name)
        return removed

    def close(self) -> None:
        with self._lock:
            for index in list(self._live.values()):
                index.close()
            self._open.clear()
            self._live.clear()
