"""The index scheduler: registers tasks durably and runs them, one batch at a time, on one writer thread.

Life of a task:
1. `register` (any thread): the payload file is already fsynced under `update_files/`; the task record
   and its bitmaps are committed in one LMDB transaction (synced) before the caller answers `202`.
2. The writer thread picks a batch (`autobatcher.autobatch`), commits the tasks as `processing` with
   their batch uid (`_start_batch`), applies them (`processing.apply_batch`), then commits the outcome
   of every task and of the batch (`_finish_batch`), and only then deletes the payload files (on a
   thread of its own). While writes stream in, a small document batch first waits a few milliseconds
   for more (`_wait_for_more`), so that its fixed work is shared by several writes.

Crash safety: on start, batches whose tasks are still `processing` are run again with the same batch
uid. Index changes carry an `applied-batch` marker written in the same transaction as the documents, so
a batch whose index commit reached disk is not applied twice: its recorded outcomes are reused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import lmdb
from pyroaring import BitMap

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.tasks import FINISHED_STATUSES, TaskQuery
from hanzo_engine.engine.index import Index, now_ns
from hanzo_engine.engine.vector import request_stats

from . import processing, stats
from .autobatcher import autobatch
from .index_mapper import IndexMapper
from .progress import Progress
from .store import Batch, Task, TaskStore
from .views import accumulate_details, batch_view, summarized_task, task_view
from .webhooks import WebhookNotifier

log = logging.getLogger("hanzo_engine.scheduler")

# Batches that report the internal database sizes they changed (Meilisearch's index operations).
_INDEXING_TYPES = frozenset(
    {"documentAdditionOrUpdate", "documentDeletion", "documentEdition", "settingsUpdate"}
)
# How many enqueued tasks the autobatcher looks at in one go.
AUTOBATCH_WINDOW = 10_000
# While writes stream in (some arrived during the last batch), a document batch of fewer than
# BATCH_WAIT_TASKS tasks waits up to BATCH_WAIT seconds for more: a batch's fixed work (its commits, the
# stored bitmaps of the words its documents share) is then paid once for several small writes.
BATCH_WAIT: Final = 0.02
BATCH_WAIT_TASKS: Final = 8
_DOCUMENT_TASKS: Final = frozenset({"documentAdditionOrUpdate", "documentDeletion"})


class _FileRemover:
    """Deletes the payload files of finished tasks on a thread of its own: an unlink waits for the
    file system's journal, which the fsyncs of concurrent registrations keep busy, and the writer
    thread need not wait with it. A file left behind by a crash is removed at the next start
    (`Scheduler._recover`)."""

    def __init__(self) -> None:
        self._paths: queue.SimpleQueue[Path | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="hanzo-file-remover", daemon=True)
        self._thread.start()

    def remove(self, path: Path) -> None:
        self._paths.put(path)

    def close(self) -> None:
        """Returns once every file handed over is deleted."""
        self._paths.put(None)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while (path := self._paths.get()) is not None:
            _unlink(path)


class _Registration:
    """A task waiting for the group commit that stores it (`Scheduler._register_grouped`)."""

    __slots__ = ("done", "error", "lead", "task")

    def __init__(self, task: Task) -> None:
        self.task = task
        self.done = threading.Event()
        self.lead = False  # woken to lead the next commit rather than because its task is stored
        self.error: BaseException | None = None


@contextlib.contextmanager
def _full_collections_deferred() -> Any:
    """No full (generation 2) garbage collection while a batch is applied: the batch's documents are
    hundreds of thousands of live containers, each full collection would walk all of them and could free
    none. Young collections go on; the deferred full collection runs in due course after the batch."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], 1 << 30)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


class Scheduler:
    def __init__(
        self,
        db_path: Path,
        *,
        max_batched_tasks: int | None = None,
        batch_size_limit: int | None = None,
        on_batch_finished: Callable[[list[Task]], None] | None = None,
        max_indexing_memory: int | None = None,
        max_indexing_threads: int | None = None,
        dump_dir: Path = Path("dumps"),
        snapshot_dir: Path = Path("snapshots"),
        auth_env: lmdb.Environment | None = None,
    ) -> None:
        self.db_path = db_path
        # where `dumpCreation` / `snapshotCreation` tasks write, and the keys env a snapshot copies
        self.dump_dir = dump_dir
        self.snapshot_dir = snapshot_dir
        self.auth_env = auth_env
        db_path.mkdir(parents=True, exist_ok=True)
        self.update_files = db_path / "update_files"
        self.update_files.mkdir(exist_ok=True)
        self.store = TaskStore(db_path / "tasks")
        self.mapper = IndexMapper(
            self.store,
            db_path / "indexes",
            max_indexing_memory=max_indexing_memory,
            max_indexing_threads=max_indexing_threads,
        )
        self.max_batched_tasks = max_batched_tasks
        self.batch_size_limit = batch_size_limit
        self.on_batch_finished = on_batch_finished
        self._wake = threading.Condition()
        # group commit of registrations (`_register_grouped`): those waiting, and whether a thread leads
        self._group_lock = threading.Lock()
        self._group: list[_Registration] = []
        self._group_led = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        # uids of the tasks of the batch being processed, and whether a cancelation asked it to stop
        self._processing: frozenset[int] = frozenset()
        self._must_stop = threading.Event()
        self._idle = threading.Event()
        self.progress = Progress()
        self._current_batch: int | None = None
        # the task webhooks' notifier (`webhooks.WebhookNotifier`), when the server installs one
        self.webhooks: WebhookNotifier | None = None
        # deletes finished tasks' payload files while the writer thread runs (else they go inline)
        self._remover: _FileRemover | None = None
        # task uid -> what to call once its batch's outcome is committed (`when_finished`)
        self._finish_callbacks: dict[int, list[Callable[[], None]]] = {}
        self._finish_lock = threading.Lock()
        # the batch wait (`_wait_for_more`): seconds (0: never), tasks registered so far, and how many
        # arrived while the last batch ran (0 once the writer found nothing to do)
        self.batch_wait = BATCH_WAIT
        self._registered = 0
        self._arrived = 0

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        self._recover()
        if self.webhooks is not None:
            self.webhooks.start()
        self._remover = _FileRemover()
        self._thread = threading.Thread(target=self._run, name="hanzo-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._must_stop.set()
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._remover is not None:
            self._remover.close()
            self._remover = None
        if self.webhooks is not None:
            self.webhooks.stop()
        self.mapper.close()
        self.store.close()

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no task is enqueued or processing (for tests and the CLI)."""
        return self._idle.wait(timeout)

    # -- registration -----------------------------------------------------------------------------

    def new_update_file(self) -> tuple[str, Path]:
        uuid = IndexMapper.new_uuid()
        return uuid, self.update_files / uuid

    def register(
        self,
        type_: str,
        index_uid: str | None,
        *,
        details: dict[str, Any] | None,
        kind: dict[str, Any],
        custom_metadata: str | None = None,
    ) -> dict[str, Any]:
        """Durably enqueue a task; returns its summarized view (the 202 body)."""
        task: Task = {
            "uid": -1,
            "batchUid": None,
            "indexUid": index_uid,
            "status": "enqueued",
            "type": type_,
            "canceledBy": None,
            "details": details,
            "error": None,
            "enqueuedAt": now_ns(),
            "startedAt": None,
            "finishedAt": None,
            "kind": kind,
        }
        if custom_metadata is not None:
            task["customMetadata"] = custom_metadata
        if type_ in ("taskCancelation", "taskDeletion"):
            with self.store.env.begin(write=True) as txn:
                q: TaskQuery = kind.pop("query")
                matched = self.store.matching_tasks(txn, q)
                kind["tasks"] = list(matched)
                task["details"] = dict(details or {}, matchedTasks=len(matched))
                if type_ == "taskCancelation" and self._processing & set(matched):
                    self._must_stop.set()
                self.store.register(txn, task)
        else:
            self._register_grouped(task)
        self._idle.clear()
        with self._wake:
            self._registered += 1
            self._wake.notify_all()
        return summarized_task(task)

    # -- reads ------------------------------------------------------------------------------------

    def _register_grouped(self, task: Task) -> None:
        """Store `task` in a synced commit (group commit). Registrations arriving while one commits
        wait and then share the next commit: one thread at a time leads, committing every task waiting
        (its own among them) in one transaction, then hands the lead to the first task that arrived
        meanwhile. Each caller returns once the commit holding its task is on disk, as with a commit of
        its own; concurrent writers no longer queue one by one on LMDB's write lock, each with its sync."""
        mine = _Registration(task)
        with self._group_lock:
            self._group.append(mine)
            follow = self._group_led
            self._group_led = True
        if follow:
            mine.done.wait()
            if not mine.lead:
                if mine.error is not None:
                    raise mine.error  # the commit failed for the whole group
                return
        with self._group_lock:
            group, self._group = self._group, []
        error: BaseException | None = None
        try:
            with self.store.env.begin(write=True) as txn:
                for registration in group:
                    self.store.register(txn, registration.task)
        except BaseException as exc:
            error = exc
            raise
        finally:
            with self._group_lock:
                if self._group:
                    self._group[0].lead = True
                    self._group[0].done.set()
                else:
                    self._group_led = False
            for registration in group:
                if registration is not mine:
                    registration.error = error
                    registration.done.set()

    def when_finished(self, uid: int, callback: Callable[[], None]) -> Callable[[], None]:
        """Has `callback()` called (on the writer thread: it must be quick) once a batch finishing task
        `uid` is committed; returns the function that forgets it. A task finished before the call is
        not reported: callers read the task's status after registering."""
        with self._finish_lock:
            self._finish_callbacks.setdefault(uid, []).append(callback)

        def forget() -> None:
            with self._finish_lock:
                callbacks = self._finish_callbacks.get(uid)
                if callbacks is not None and callback in callbacks:
                    callbacks.remove(callback)
                    if not callbacks:
                        del self._finish_callbacks[uid]

        return forget

    def _report_finished(self, done: list[Task]) -> None:
        if not self._finish_callbacks:
            return
        with self._finish_lock:
            callbacks = [cb for task in done for cb in self._finish_callbacks.pop(task["uid"], ())]
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("a task-finished callback failed")

    def get_task(self, uid: int) -> dict[str, Any] | None:
        task = self.store.get_task(uid)
        return None if task is None else task_view(task)

    def get_batch(self, uid: int) -> dict[str, Any] | None:
        batch = self.store.get_batch(uid)
        return None if batch is None else self._batch_view(batch)

    def _batch_view(self, batch: Batch) -> dict[str, Any]:
        view = batch_view(batch)
        if batch["uid"] == self._current_batch and batch.get("finishedAt") is None:
            view["progress"] = self.progress.view()
            view["stats"]["progressTrace"] = self.progress.trace()  # live, as Meilisearch's
        return view

    def restrict_to_indexes(self, q: TaskQuery, authorized: Callable[[str], bool]) -> TaskQuery:
        """`q` narrowed to the tasks of indexes the caller may see (global tasks become invisible)."""
        with self.store.env.begin() as txn:
            allowed = {uid for uid in self.store.task_index_uids(txn) if authorized(uid)}
        if q.index_uids is not None:
            allowed &= q.index_uids
        return dataclasses.replace(q, index_uids=allowed)

    def list_tasks(self, q: TaskQuery) -> dict[str, Any]:
        with self.store.env.begin() as txn:
            matched = self.store.matching_tasks(txn, q)
            page, next_uid = _paginate(matched, q)
            results = [task_view(t) for t in self.store.iter_tasks(txn, page)]
        return {
            "results": results,
            "total": len(matched),
            "limit": q.limit,
            "from": page[0] if page else None,
            "next": next_uid,
        }

    def list_batches(self, q: TaskQuery) -> dict[str, Any]:
        """Batches holding at least one task that matches the filters (`uids` are task uids, as
        Meilisearch's `get_batch_ids`; `batchUids` select batches directly)."""
        with self.store.env.begin() as txn:
            unfiltered = q == TaskQuery(limit=q.limit, from_=q.from_, reverse=q.reverse)
            tasks = None if unfiltered else self.store.matching_tasks(txn, q)
            batch_uids = BitMap()
            with txn.cursor(db=self.store.db_batches) as cursor:
                for key in cursor.iternext(keys=True, values=False):
                    buid = int.from_bytes(key, "big")
                    if tasks is None or (self.store.bitmap_txn(txn, f"batch:{buid}") & tasks):
                        batch_uids.add(buid)
            page, next_uid = _paginate(batch_uids, q)
            results = []
            for buid in page:
                batch = self.store.get_batch_txn(txn, buid)
                if batch is not None:
                    results.append(self._batch_view(batch))
        return {
            "results": results,
            "total": len(batch_uids),
            "limit": q.limit,
            "from": page[0] if page else None,
            "next": next_uid,
        }

    def index(self, uid: str) -> Index | None:
        return self.mapper.get(uid)

    def indexes(self) -> list[tuple[str, Index]]:
        return [(uid, self.mapper.open_uuid(uuid)) for uid, uuid in sorted(self.mapper.mapping().items())]

    def is_indexing(self, index_uid: str) -> bool:
        with self.store.env.begin() as txn:
            processing_uids = self.store.bitmap_txn(txn, "status:processing")
            return bool(processing_uids & self.store.bitmap_txn(txn, f"index:{index_uid}"))

    def last_update(self) -> int | None:
        """finishedAt of the newest finished task, for GET /stats `lastUpdate`."""
        with self.store.env.begin() as txn:
            finished = self.store.bitmap_txn(txn, "status:succeeded") | self.store.bitmap_txn(
                txn, "status:failed"
            )
            if not finished:
                return None
            task = self.store.get_task_txn(txn, finished.max())
            return None if task is None else task.get("finishedAt")

    # -- the writer thread ------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._wake:
                if self._stopping:
                    return
            try:
                worked = self._tick()
            except Exception:  # a bug must not kill the writer thread; the batch is retried
                log.exception("batch processing failed")
                worked = False
            if not worked:
                with self._wake:
                    if self._stopping:
                        return
                    self._arrived = 0
                    if not self.store.bitmap("status:enqueued"):
                        self._idle.set()
                        self._wake.wait(timeout=1.0)

    def _enqueued_window(self) -> list[Task]:
        with self.store.env.begin() as txn:
            enqueued = self.store.bitmap_txn(txn, "status:enqueued")
            if not enqueued:
                return []
            special = BitMap()
            for type_ in ("taskCancelation", "taskDeletion", "snapshotCreation", "dumpCreation"):
                special |= self.store.bitmap_txn(txn, f"type:{type_}")
            special &= enqueued
            window = list(enqueued[:AUTOBATCH_WINDOW]) if len(enqueued) > AUTOBATCH_WINDOW else list(enqueued)
            uids = sorted(set(window) | set(special))
            return list(self.store.iter_tasks(txn, uids))

    def tick(self) -> bool:
        """Run the next batch synchronously; False when nothing was enqueued. For tests and the CLI
        (never call it while the writer thread runs)."""
        return self._tick()

    def recover(self) -> None:
        """Finish batches interrupted by a crash (what `start` does first)."""
        self._recover()

    def _tick(self) -> bool:
        enqueued = self._enqueued_window()
        choice = autobatch(enqueued, max_tasks=self.max_batched_tasks, max_bytes=self.batch_size_limit)
        if choice is None:
            return False
        if self._wait_for_more(choice.task_uids, enqueued):
            enqueued = self._enqueued_window()
            choice = autobatch(enqueued, max_tasks=self.max_batched_tasks, max_bytes=self.batch_size_limit)
            if choice is None:  # canceled or deleted meanwhile
                return False
        registered = self._registered
        started = self._start_batch(choice.task_uids, choice.strategy)
        if started is None:
            return True
        _crash_point("after-start-batch")
        self._run_batch(*started)
        self._arrived = self._registered - registered
        return True

    def _wait_for_more(self, chosen: Sequence[int], enqueued: list[Task]) -> bool:
        """On the writer thread, while writes stream in: waits up to `batch_wait` seconds for the
        registrations that would fill a small document batch up to BATCH_WAIT_TASKS tasks. Whether
        it waited. A client sending one write at a time (none arrives while its batch runs) never
        waits, nor does any other kind of batch."""
        if (
            self.batch_wait <= 0
            or self._arrived == 0
            or len(chosen) >= BATCH_WAIT_TASKS
            or threading.current_thread() is not self._thread
        ):
            return False
        first = next((t for t in enqueued if t["uid"] == chosen[0]), None)
        if first is None or first["type"] not in _DOCUMENT_TASKS:
            return False
        deadline = time.monotonic() + self.batch_wait
        with self._wake:
            target = self._registered + BATCH_WAIT_TASKS - len(chosen)
            while not self._stopping and self._registered < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(left)
        return True

    def _start_batch(self, task_uids: Sequence[int], strategy: str) -> tuple[Batch, list[Task]] | None:
        """Mark the tasks processing under a new batch; None when a cancelation registered since
        they were chosen must run first (it may name them)."""
        started = now_ns()
        with self.store.env.begin(write=True) as txn:
            cancelations = self.store.bitmap_txn(txn, "status:enqueued") & self.store.bitmap_txn(
                txn, "type:taskCancelation"
            )
            if cancelations and not any(uid in cancelations for uid in task_uids):
                return None
            batch_uid = self.store.next_batch_uid(txn)
            tasks = []
            for uid in task_uids:
                task = self.store.get_task_txn(txn, uid)
                if task is None or task["status"] != "enqueued":
                    continue
                new = dict(task, status="processing", batchUid=batch_uid, startedAt=started)
                self.store.put_task(txn, new, task)
                tasks.append(new)
            batch: Batch = {
                "uid": batch_uid,
                "progress": None,
                "details": {},
                "stats": {},
                "startedAt": started,
                "finishedAt": None,
                "batchStrategy": strategy,
                # private: the uuid an index created by this batch will get, stable across a re-run
                "pendingIndexUuid": IndexMapper.new_uuid(),
            }
            self._fill_batch_stats(batch, tasks)
            self.store.put_batch(txn, batch)
            # Claimed before the commit makes the tasks `processing`: a cancelation's write
            # transaction then either precedes this one (and the tasks stay enqueued) or sees them
            # here and stops the batch; claiming after the commit could miss it.
            self._claim(tasks)
        return batch, tasks

    def _claim(self, tasks: list[Task]) -> None:
        self._processing = frozenset(t["uid"] for t in tasks)
        self._must_stop.clear()

    def _run_batch(self, batch: Batch, tasks: list[Task]) -> None:
        if not tasks:
            return
        self._current_batch = batch["uid"]
        self.progress.start("processing tasks", len(tasks))
        sizes_before = self._database_sizes(tasks)
        embedder_requests = None
        try:
            with _full_collections_deferred(), request_stats.collecting() as embedder_requests:
                outcome = processing.apply_batch(self, batch, tasks, interrupted=self._must_stop.is_set)
        except processing.Interrupted:
            self._requeue(batch, tasks)
            return
        except Exception as exc:
            # A bug or a system failure (disk full...): the batch's tasks fail with an `internal`
            # error instead of staying `processing` forever; nothing of the batch was committed.
            log.exception("batch %s failed", batch["uid"])
            err = MeiliError("internal", f"An internal error occurred while processing the batch: {exc}.")
            outcome = processing.BatchOutcome({t["uid"]: processing.failed(t, err) for t in tasks})
        finally:
            self._processing = frozenset()
            self._current_batch = None
            self.progress.clear()
        _crash_point("after-apply-batch")
        outcome.stats = self._batch_diagnostics(tasks, outcome, sizes_before)
        requests = None if embedder_requests is None else embedder_requests.view()
        if requests is not None:
            outcome.stats["embedderRequests"] = requests
        self._finish_batch(batch, tasks, outcome)

    def _requeue(self, batch: Batch, tasks: list[Task]) -> None:
        """A cancelation interrupted this batch: put its tasks back so the cancelation cancels them."""
        with self.store.env.begin(write=True) as txn:
            for task in tasks:
                current = self.store.get_task_txn(txn, task["uid"])
                if current is not None:
                    self.store.put_task(
                        txn, dict(current, status="enqueued", batchUid=None, startedAt=None), current
                    )
            self.store.delete_batch(txn, batch["uid"])

    def _finish_batch(self, batch: Batch, tasks: list[Task], outcome: processing.BatchOutcome) -> None:
        finished = now_ns()
        done: list[Task] = []
        with self.store.env.begin(write=True) as txn:
            if outcome.on_tasks_txn is not None:
                done.extend(outcome.on_tasks_txn(txn, batch, finished))
            for task in tasks:
                current = self.store.get_task_txn(txn, task["uid"])
                if current is None:
                    continue
                result = outcome.results[task["uid"]]
                new = dict(
                    current,
                    status=result.status,
                    details=result.details,
                    error=result.error,
                    finishedAt=finished,
                )
                self.store.put_task(txn, new, current)
                done.append(new)
            for uid, uuid in outcome.mapping_changes.items():
                self.store.set_index_uuid(txn, uid, uuid)
            batch = dict(batch, finishedAt=finished)
            batch.pop("pendingIndexUuid", None)
            self._fill_batch_stats(batch, done)
            batch["stats"].update(outcome.stats)
            self.store.put_batch(txn, batch)
            if self.webhooks is not None:
                self.webhooks.record(txn, done)  # durable with the tasks' final status
        self._report_finished(done)
        if self.webhooks is not None:
            self.webhooks.notify()
        remove = _unlink if self._remover is None else self._remover.remove
        for task in done:
            content = task["kind"].get("contentFile")
            if content:
                remove(self.update_files / content)
        for uuid in outcome.dropped_index_uuids:
            self.mapper.drop_uuid(uuid)
        if self.on_batch_finished is not None:
            try:
                self.on_batch_finished(done)
            except Exception:
                log.exception("on_batch_finished hook failed")

    def _database_sizes(self, tasks: list[Task]) -> dict[str, int] | None:
        """The internal database sizes of the batch's index before it runs (None for other batches)."""
        uid = tasks[0].get("indexUid")
        if uid is None or tasks[0]["type"] not in _INDEXING_TYPES:
            return None
        try:
            index = self.index(uid)
            return None if index is None else stats.index_database_sizes(index)
        except Exception:  # diagnostics only: never fail a batch over them
            log.exception("reading the database sizes of `%s` failed", uid)
            return None

    def _batch_diagnostics(
        self, tasks: list[Task], outcome: processing.BatchOutcome, sizes_before: dict[str, int] | None
    ) -> dict[str, Any]:
        """The optional stats of a finished batch, in Meilisearch's order: `progressTrace`, then
        `writeChannelCongestion` for document indexing, `internalDatabaseSizes` when sizes changed."""
        out: dict[str, Any] = {"progressTrace": self.progress.trace()}
        if tasks[0]["type"] in ("documentAdditionOrUpdate", "documentEdition"):
            # writes are synchronous here: every write is an attempt and none blocks
            attempts = sum(
                int(
                    (r.details or {}).get("indexedDocuments") or (r.details or {}).get("editedDocuments") or 0
                )
                for r in outcome.results.values()
            )
            out["writeChannelCongestion"] = {
                "attempts": attempts,
                "blocking_attempts": 0,
                "blocking_ratio": 0.0 if attempts else None,
            }
        uid = tasks[0].get("indexUid")
        if uid is not None and tasks[0]["type"] in _INDEXING_TYPES:
            try:
                if uid in outcome.mapping_changes:  # created (or deleted) by this batch, not mapped yet
                    uuid = outcome.mapping_changes[uid]
                    index = None if uuid is None else self.mapper.open_uuid(uuid)
                else:
                    index = self.index(uid)
                if index is not None:
                    changes = stats.size_changes(sizes_before or {}, stats.index_database_sizes(index))
                    if changes:
                        out["internalDatabaseSizes"] = changes
            except Exception:  # diagnostics only
                log.exception("reading the database sizes of `%s` failed", uid)
        return out

    @staticmethod
    def _fill_batch_stats(batch: Batch, tasks: list[Task]) -> None:
        status: dict[str, int] = {}
        types: dict[str, int] = {}
        index_uids: dict[str, int] = {}
        details: dict[str, Any] = {}
        for t in tasks:
            status[t["status"]] = status.get(t["status"], 0) + 1
            types[t["type"]] = types.get(t["type"], 0) + 1
            if t.get("indexUid") is not None:
                index_uids[t["indexUid"]] = index_uids.get(t["indexUid"], 0) + 1
            accumulate_details(details, t.get("details"))
        batch["stats"] = {
            "totalNbTasks": len(tasks),
            "status": status,
            "types": types,
            "indexUids": index_uids,
        }
        batch["details"] = details

    # -- crash recovery ---------------------------------------------------------------------------

    def _recover(self) -> None:
        """Re-run batches that were processing when the process died; drop orphaned files."""
        with self.store.env.begin() as txn:
            processing_uids = list(self.store.bitmap_txn(txn, "status:processing"))
            stuck = list(self.store.iter_tasks(txn, processing_uids))
            live_files = {
                t["kind"].get("contentFile")
                for t in self.store.iter_tasks(txn, self.store.bitmap_txn(txn, "status:enqueued"))
            } | {t["kind"].get("contentFile") for t in stuck}
        by_batch: dict[int, list[Task]] = {}
        for task in stuck:
            by_batch.setdefault(task["batchUid"], []).append(task)
        keep: set[str] = set()
        for batch_uid in sorted(by_batch):
            batch = self.store.get_batch(batch_uid)
            if batch is None:
                continue
            keep.add(batch.get("pendingIndexUuid", ""))
        self.mapper.sweep_orphans(keep)
        for path in self.update_files.iterdir():
            if path.name not in live_files:
                _unlink(path)
        for batch_uid in sorted(by_batch):
            batch = self.store.get_batch(batch_uid)
            tasks = sorted(by_batch[batch_uid], key=lambda t: t["uid"])
            if batch is None:
                restarted = self._restart_orphan_tasks(tasks)
                if restarted is None:  # enqueued again, behind a cancelation
                    continue
                batch, tasks = restarted
            log.info("recovering batch %s (%d tasks) interrupted by a restart", batch["uid"], len(tasks))
            self._claim(tasks)
            self._run_batch(batch, tasks)

    def _restart_orphan_tasks(self, tasks: list[Task]) -> tuple[Batch, list[Task]] | None:
        with self.store.env.begin(write=True) as txn:
            for task in tasks:
                self.store.put_task(txn, dict(task, status="enqueued", batchUid=None), task)
        return self._start_batch([t["uid"] for t in tasks], "recovered after a restart")

    # -- helpers for processing -------------------------------------------------------------------

    def finished_status(self, status: str) -> bool:
        return status in FINISHED_STATUSES


def _crash_point(name: str) -> None:
    """Fault injection for the crash-recovery tests: die like `kill -9` at a named point.

    HANZO_CRASH_POINT=<name> makes the process exit abruptly the first time it reaches <name>.
    """
    if os.environ.get("HANZO_CRASH_POINT") == name:
        os._exit(137)


def _paginate(uids: Any, q: TaskQuery) -> tuple[list[int], int | None]:
    """Newest first (or oldest first with `reverse`), starting at `from` inclusive, `limit` long."""
    if q.reverse:
        ordered = [u for u in uids if q.from_ is None or u >= q.from_]
    else:
        ordered = [u for u in reversed(uids) if q.from_ is None or u <= q.from_]
    page = ordered[: q.limit]
    next_uid = ordered[q.limit] if len(ordered) > q.limit else None
    return page, next_uid


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
