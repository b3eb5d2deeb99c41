"""Index uid -> index environment. The mapping lives in the tasks env; environments are opened lazily.

An index directory is `indexes/<uuid>/`. Renames and swaps only touch the mapping, never files.
Directories not named by the mapping (left by a crash between creating an env and committing the
mapping) are removed at start-up by `sweep_orphans`.
"""

from __future__ import annotations

import shutil
import threading
import uuid as uuidlib
from collections import OrderedDict
from pathlib import Path

from hanzo_engine.engine.index import Index

from .store import TaskStore


class IndexMapper:
    # Open environments kept at once; the least recently used one is closed past this (each reserves
    # address space, and Meilisearch bounds its open indexes the same way).
    MAX_OPEN = 100

    def __init__(self, store: TaskStore, indexes_dir: Path) -> None:
        self.store = store
        self.dir = indexes_dir
        self.dir.mkdir(parents=True, exist_ok=True)
        self._open: OrderedDict[str, Index] = OrderedDict()
        self._lock = threading.Lock()

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
        self._open[uuid] = index
        while len(self._open) > self.MAX_OPEN:
            _, evicted = self._open.popitem(last=False)
            evicted.close()
        return index

    def open_uuid(self, uuid: str) -> Index:
        with self._lock:
            index = self._open.get(uuid)
            if index is None:
                return self._remember(uuid, Index(self.dir / uuid))
            self._open.move_to_end(uuid)
            return index

    def create_uuid(self, uuid: str, *, primary_key: str | None, created_at: int) -> Index:
        with self._lock:
            index = self._open.get(uuid)
            if index is None:
                index = Index.create(self.dir / uuid, primary_key=primary_key, created_at=created_at)
                return self._remember(uuid, index)
            return index

    def get(self, uid: str) -> Index | None:
        """The open index named `uid`, or None when no such index exists."""
        uuid = self.uuid_of(uid)
        return None if uuid is None else self.open_uuid(uuid)

    def drop_uuid(self, uuid: str) -> None:
        with self._lock:
            index = self._open.pop(uuid, None)
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
            for index in self._open.values():
                index.close()
            self._open.clear()
