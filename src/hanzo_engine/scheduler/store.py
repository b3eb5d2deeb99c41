"""The durable task queue: tasks, batches, their secondary indexes and the index mapping, in one LMDB env.

Databases of the `tasks` environment:

- `all-tasks`    task uid (u32 BE) -> task record (msgspec JSON; see `new_task`)
- `all-batches`  batch uid (u32 BE) -> batch record
- `bitmaps`      `status:<s>`, `type:<t>`, `index:<uid>`, `canceledBy:<uid>`, `batch:<uid>` -> roaring
                 bitmap of task uids. Always written in the same transaction as the task records, so
                 they never disagree with them.
- `index-mapping` index uid -> index UUID (the directory name under `indexes/`)
- `meta`         counters: next task uid and next batch uid (uids are never reused)
- `webhooks`, `webhook-pending`  the API webhooks and the notifications not yet delivered (see
                 `webhooks.py`)
- `chat-workspaces`  chat workspace uid -> its settings, secrets included (see `chats.py`)
- `dynamic-search-rules`  rule uid -> dynamic search rule (see `dynamic_search_rules.py`)

Task records hold the public fields (camelCase, dates as unix nanoseconds) plus `kind`, the private
arguments the scheduler needs to run the task (content file, method, primary key, ...).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

import lmdb
import msgspec
from pyroaring import BitMap

from hanzo_engine.apitypes.tasks import TaskQuery, task_matches

DB_TASKS: Final = b"all-tasks"
DB_BATCHES: Final = b"all-batches"
DB_BITMAPS: Final = b"bitmaps"
DB_INDEX_MAPPING: Final = b"index-mapping"
DB_META: Final = b"meta"
DB_WEBHOOKS: Final = b"webhooks"
DB_WEBHOOK_PENDING: Final = b"webhook-pending"
DB_CHATS: Final = b"chat-workspaces"
DB_DSR: Final = b"dynamic-search-rules"

KEY_NEXT_TASK: Final = b"next-task-uid"

TASKS_MAP_SIZE: Final = 1 << 38

_U32 = struct.Struct(">I")
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode

Task = dict[str, Any]
Batch = dict[str, Any]


def _bitmap_keys(task: Task) -> list[bytes]:
    keys = [f"status:{task['status']}".encode(), f"type:{task['type']}".encode()]
    if task.get("indexUid") is not None:
        keys.append(f"index:{task['indexUid']}".encode())
    if task.get("canceledBy") is not None:
        keys.append(f"canceledBy:{task['canceledBy']}".encode())
    if task.get("batchUid") is not None:
        keys.append(f"batch:{task['batchUid']}".encode())
    return keys


class TaskStore:
    """All reads and writes of the tasks environment. Safe to use from several threads."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        """`readonly`: a search worker's view (the scheduler's process created every database)."""
        if not readonly:
            path.mkdir(parents=True, exist_ok=True)
        self.env = lmdb.open(
            str(path),
            map_size=TASKS_MAP_SIZE,
            max_dbs=16,
            subdir=True,
            max_readers=512,
            readonly=readonly,
            create=not readonly,
        )
        self._readonly = readonly
        self.db_tasks = self._open_db(DB_TASKS)
        self.db_batches = self._open_db(DB_BATCHES)
        self.db_bitmaps = self._open_db(DB_BITMAPS)
        self.db_mapping = self._open_db(DB_INDEX_MAPPING)
        self.db_meta = self._open_db(DB_META)
        self.db_webhooks = self._open_db(DB_WEBHOOKS)
        self.db_webhook_pending = self._open_db(DB_WEBHOOK_PENDING)
        self.db_chats = self._open_db(DB_CHATS)
        self.db_dsr = self._open_db(DB_DSR)

    def _open_db(self, name: bytes) -> Any:
        if not self._readonly:
            return self.env.open_db(name)
        try:
            return self.env.open_db(name, create=False)
        except lmdb.NotFoundError:
            return None  # a worker reads the mapping only; a database new to this version may not exist yet

    def close(self) -> None:
        self.env.close()

    # -- low level --------------------------------------------------------------------------------

    def _bitmap(self, txn: lmdb.Transaction, key: bytes) -> BitMap:
        raw = txn.get(key, db=self.db_bitmaps)
        return BitMap.deserialize(bytes(raw)) if raw is not None else BitMap()

    def _put_bitmap(self, txn: lmdb.Transaction, key: bytes, bitmap: BitMap) -> None:
        if bitmap:
            txn.put(key, bitmap.serialize(), db=self.db_bitmaps)
        else:
            txn.delete(key, db=self.db_bitmaps)

    def _counter(self, txn: lmdb.Transaction, key: bytes) -> int:
        raw = txn.get(key, db=self.db_meta)
        return _U32.unpack(raw)[0] if raw is not None else 0

    def _index_bits(self, txn: lmdb.Transaction, task: Task, add: bool) -> None:
        for key in _bitmap_keys(task):
            bm = self._bitmap(txn, key)
            if add:
                bm.add(task["uid"])
            else:
                bm.discard(task["uid"])
            self._put_bitmap(txn, key, bm)

    def put_task(self, txn: lmdb.Transaction, task: Task, previous: Task | None) -> None:
        """Write a task record and keep the bitmaps in step with it."""
        if previous is not None:
            old_keys, new_keys = set(_bitmap_keys(previous)), set(_bitmap_keys(task))
            for key in old_keys - new_keys:
                bm = self._bitmap(txn, key)
                bm.discard(task["uid"])
                self._put_bitmap(txn, key, bm)
            for key in new_keys - old_keys:
                bm = self._bitmap(txn, key)
                bm.add(task["uid"])
                self._put_bitmap(txn, key, bm)
        else:
            self._index_bits(txn, task, add=True)
        txn.put(_U32.pack(task["uid"]), _encode(task), db=self.db_tasks)

    def delete_task(self, txn: lmdb.Transaction, task: Task) -> None:
        self._index_bits(txn, task, add=False)
        txn.delete(_U32.pack(task["uid"]), db=self.db_tasks)

    def get_task_txn(self, txn: lmdb.Transaction, uid: int) -> Task | None:
        raw = txn.get(_U32.pack(uid), db=self.db_tasks)
        return _decode(raw) if raw is not None else None

    def get_batch_txn(self, txn: lmdb.Transaction, uid: int) -> Batch | None:
        raw = txn.get(_U32.pack(uid), db=self.db_batches)
        return _decode(raw) if raw is not None else None

    def put_batch(self, txn: lmdb.Transaction, batch: Batch) -> None:
        txn.put(_U32.pack(batch["uid"]), _encode(batch), db=self.db_batches)

    def delete_batch(self, txn: lmdb.Transaction, uid: int) -> None:
        txn.delete(_U32.pack(uid), db=self.db_batches)

    # -- registration -----------------------------------------------------------------------------

    def register(self, txn: lmdb.Transaction, task: Task) -> Task:
        """Give `task` the next uid and store it (the caller's write txn commits it durably)."""
        uid = self._counter(txn, KEY_NEXT_TASK)
        txn.put(KEY_NEXT_TASK, _U32.pack(uid + 1), db=self.db_meta)
        task["uid"] = uid
        self.put_task(txn, task, None)
        return task

    def next_batch_uid(self, txn: lmdb.Transaction) -> int:
        """Last stored batch uid + 1, as Meilisearch: an aborted (never stored) batch leaves no gap."""
        with txn.cursor(db=self.db_batches) as cursor:
            return _U32.unpack(cursor.key())[0] + 1 if cursor.last() else 0

    def peek_next_task_uid(self) -> int:
        with self.env.begin() as txn:
            return self._counter(txn, KEY_NEXT_TASK)

    # -- reads ------------------------------------------------------------------------------------

    def get_task(self, uid: int) -> Task | None:
        with self.env.begin() as txn:
            return self.get_task_txn(txn, uid)

    def get_batch(self, uid: int) -> Batch | None:
        with self.env.begin() as txn:
            return self.get_batch_txn(txn, uid)

    def bitmap(self, key: str) -> BitMap:
        with self.env.begin() as txn:
            return self._bitmap(txn, key.encode())

    def bitmap_txn(self, txn: lmdb.Transaction, key: str) -> BitMap:
        return self._bitmap(txn, key.encode())

    def all_task_uids(self, txn: lmdb.Transaction) -> BitMap:
        uids = BitMap()
        with txn.cursor(db=self.db_tasks) as cursor:
            for key in cursor.iternext(keys=True, values=False):
                uids.add(_U32.unpack(key)[0])
        return uids

    def _union(self, txn: lmdb.Transaction, prefix: str, values: Iterable[Any]) -> BitMap:
        out = BitMap()
        for value in values:
            out |= self._bitmap(txn, f"{prefix}:{value}".encode())
        return out

    def candidates(self, txn: lmdb.Transaction, q: TaskQuery) -> BitMap:
        """Task uids that satisfy the bitmap-indexed part of `q` (uids, statuses, types, indexes...)."""
        cand = self.all_task_uids(txn)
        if q.uids is not None:
            cand &= BitMap(u for u in q.uids if u < 2**32)
        if q.statuses is not None:
            cand &= self._union(txn, "status", q.statuses)
        if q.types is not None:
            cand &= self._union(txn, "type", q.types)
        if q.index_uids is not None:
            cand &= self._union(txn, "index", q.index_uids)
        if q.canceled_by is not None:
            cand &= self._union(txn, "canceledBy", q.canceled_by)
        if q.batch_uids is not None:
            cand &= self._union(txn, "batch", q.batch_uids)
        return cand

    def matching_tasks(self, txn: lmdb.Transaction, q: TaskQuery) -> BitMap:
        """Every task uid matching all of `q`'s filters (limit/from/reverse ignored)."""
        cand = self.candidates(txn, q)
        if not _has_date_filters(q):
            return cand
        out = BitMap()
        for uid in cand:
            task = self.get_task_txn(txn, uid)
            if task is not None and _matches(q, task):
                out.add(uid)
        return out

    def iter_tasks(self, txn: lmdb.Transaction, uids: Iterable[int]) -> Iterator[Task]:
        for uid in uids:
            task = self.get_task_txn(txn, uid)
            if task is not None:
                yield task

    def task_index_uids(self, txn: lmdb.Transaction) -> list[str]:
        """Every index uid that some task names (existing indexes or not)."""
        out: list[str] = []
        with txn.cursor(db=self.db_bitmaps) as cursor:
            if not cursor.set_range(b"index:"):
                return out
            for key in cursor.iternext(keys=True, values=False):
                kb = bytes(key)
                if not kb.startswith(b"index:"):
                    break
                out.append(kb[6:].decode())
        return out

    # -- index mapping ----------------------------------------------------------------------------

    def index_uuid(self, txn: lmdb.Transaction, uid: str) -> str | None:
        raw = txn.get(uid.encode(), db=self.db_mapping)
        return bytes(raw).decode() if raw is not None else None

    def set_index_uuid(self, txn: lmdb.Transaction, uid: str, uuid: str | None) -> None:
        if uuid is None:
            txn.delete(uid.encode(), db=self.db_mapping)
        else:
            txn.put(uid.encode(), uuid.encode(), db=self.db_mapping)

    def index_mapping(self, txn: lmdb.Transaction) -> dict[str, str]:
        with txn.cursor(db=self.db_mapping) as cursor:
            return {bytes(k).decode(): bytes(v).decode() for k, v in cursor}


def _has_date_filters(q: TaskQuery) -> bool:
    return any(
        v is not None
        for v in (
            q.before_enqueued_at,
            q.after_enqueued_at,
            q.before_started_at,
            q.after_started_at,
            q.before_finished_at,
            q.after_finished_at,
        )
    )


def _matches(q: TaskQuery, task: Task) -> bool:
    return task_matches(
        q,
        uid=task["uid"],
        batch_uid=task.get("batchUid"),
        index_uid=task.get("indexUid"),
        status=task["status"],
        type_=task["type"],
        canceled_by=task.get("canceledBy"),
        enqueued_at=task["enqueuedAt"],
        started_at=task.get("startedAt"),
        finished_at=task.get("finishedAt"),
    )
