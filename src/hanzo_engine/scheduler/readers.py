"""The read side of the scheduler, for the search workers of a multi-process server.

A worker process serves searches from the same LMDB environments the scheduler writes: the task store
(for the index uid -> environment mapping) and every index environment, all opened read-only. LMDB
readers see each commit as soon as it is made, whichever process made it, so a search on a worker
sees a task's effects once the task is `succeeded` (the index commit precedes the task's status).
"""

from __future__ import annotations

from pathlib import Path

from hanzo_engine.engine.index import Index

from .index_mapper import IndexMapper
from .store import TaskStore


class IndexReaders:
    """`index(uid)` as `Scheduler.index`, without any write."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.store = TaskStore(db_path / "tasks", readonly=True)
        self.mapper = IndexMapper(self.store, db_path / "indexes", readonly=True)

    def index(self, uid: str) -> Index | None:
        return self.mapper.get(uid)

    def close(self) -> None:
        self.mapper.close()
        self.store.close()
