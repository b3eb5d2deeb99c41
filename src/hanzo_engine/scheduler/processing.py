"""Apply one batch: what each task type does, and what it reports.

`apply_batch` runs on the writer thread and returns a `BatchOutcome`; the scheduler commits the
outcome in the tasks env. Index batches apply all their tasks in ONE write transaction of the index env,
together with the `applied-batch` marker that makes a re-run after a crash reuse the recorded outcome.

A task that fails on user input (bad id, missing primary key, ...) fails alone: its payload is validated
completely before any write, so the other tasks of the batch still apply.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import lmdb

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.settings import SettingsPatch, apply_patch, complete_settings
from hanzo_engine.engine.chat import check_chat_template
from hanzo_engine.engine.documents.geojson import GEOJSON_FIELD
from hanzo_engine.engine.documents.payload import read_document_fields, read_documents
from hanzo_engine.engine.documents.primary_key import extract_document_id, infer_primary_key
from hanzo_engine.engine.index import Index, IndexWriter
from hanzo_engine.engine.update.facets import GEO_FIELD, check_geo
from hanzo_engine.engine.update.settings_hook import reindex_for_settings
from hanzo_engine.engine.vector.documents import (
    VECTORS,
    Prepared,
    check_embedders,
    prepare_documents,
    write_vectors,
)

from .sharding import owned_documents
from .store import Batch, Task
from .views import failed_details

if TYPE_CHECKING:
    from .scheduler import Scheduler

# How often (in documents) a long batch checks whether a cancelation asked it to stop.
INTERRUPT_CHECK_EVERY = 1024
# A payload up to this size (its update file) stays decoded between the check and the write passes of a
# document addition instead of being read and decoded again (decoded, about 2.5 times the file).
HOLD_PAYLOAD_BYTES = 8 << 20


class Interrupted(Exception):
    """A cancelation task asked the running batch to stop; nothing of it was committed."""


class TaskAborted(MeiliError):
    """A task that writes as it goes failed: its batch's write transaction is aborted (a task that
    raises it runs alone in its batch, as an edition by function does)."""


@dataclass
class TaskResult:
    status: str
    details: dict[str, Any] | None
    error: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "details": self.details, "error": self.error}


@dataclass
class BatchOutcome:
    results: dict[int, TaskResult]
    mapping_changes: dict[str, str | None] = field(default_factory=dict)
    dropped_index_uuids: list[str] = field(default_factory=list)
    # extra work in the tasks env's finishing transaction (cancelation, task deletion)
    on_tasks_txn: Callable[[lmdb.Transaction, Batch, int], list[Task]] | None = None
    # the batch's optional stats (`progressTrace`, ...), filled by the scheduler
    stats: dict[str, Any] = field(default_factory=dict)


def succeeded(details: dict[str, Any] | None) -> TaskResult:
    return TaskResult("succeeded", details)


def failed(task: Task, err: MeiliError) -> TaskResult:
    return TaskResult("failed", failed_details(task.get("details")), err.to_json())


def apply_batch(
    sched: Scheduler, batch: Batch, tasks: list[Task], *, interrupted: Callable[[], bool]
) -> BatchOutcome:
    kind = tasks[0]["type"]
    if kind == "taskCancelation":
        return _cancel_tasks(sched, tasks)
    if kind == "taskDeletion":
        return _delete_tasks(sched, tasks)
    if kind == "indexSwap":
        return _swap_indexes(sched, tasks[0])
    if kind == "indexCompaction":
        return _compact_index(sched, batch, tasks[0])
    if kind in ("dumpCreation", "snapshotCreation"):
        from . import backups  # imported here: backups imports this module

        outcome: BatchOutcome = backups.apply(sched, batch, tasks, interrupted)
        return outcome
    if kind == "networkTopologyChange":
        from .sharding import apply_topology_change

        return apply_topology_change(sched, tasks[0])
    if kind in ("dsrUpdate", "dsrClear"):
        from . import dynamic_search_rules

        return dynamic_search_rules.apply(sched, tasks)
    if kind in ("upgradeDatabase", "export", "indexCompaction"):
        err = MeiliError("feature_not_enabled", f"`{kind}` tasks are not supported by this build yet.")
        return BatchOutcome({t["uid"]: failed(t, err) for t in tasks})
    return _index_batch(sched, batch, tasks, interrupted)


# -- index batches --------------------------------------------------------------------------------


def _index_batch(
    sched: Scheduler, batch: Batch, tasks: list[Task], interrupted: Callable[[], bool]
) -> BatchOutcome:
    uid: str = tasks[0]["indexUid"]
    first = tasks[0]
    existing_uuid = sched.mapper.uuid_of(uid)

    if first["type"] == "indexCreation":
        if existing_uuid is not None:
            return BatchOutcome(
                {
                    first["uid"]: failed(
                        first, MeiliError("index_already_exists", f"Index `{uid}` already exists.")
                    )
                }
            )
        uuid = batch["pendingIndexUuid"]
        sched.mapper.create_uuid(
            uuid, primary_key=first["kind"].get("primaryKey"), created_at=first["enqueuedAt"]
        )
        return BatchOutcome({first["uid"]: succeeded(first["details"])}, mapping_changes={uid: uuid})

    if existing_uuid is None:
        creatable = first["type"] in ("documentAdditionOrUpdate", "settingsUpdate") and first["kind"].get(
            "allowIndexCreation", True
        )
        if not creatable:
            err = MeiliError("index_not_found", f"Index `{uid}` not found.")
            return BatchOutcome({t["uid"]: failed(t, err) for t in tasks})
        uuid = batch["pendingIndexUuid"]
        index = sched.mapper.create_uuid(uuid, primary_key=None, created_at=first["enqueuedAt"])
        mapping: dict[str, str | None] = {uid: uuid}
    else:
        uuid = existing_uuid
        index = sched.mapper.open_uuid(uuid)
        mapping = {}

    if tasks[-1]["type"] == "indexDeletion":
        # The work before the deletion is reported (it succeeds) but never written: the index goes.
        deletion = tasks[-1]
        with index.read() as r:
            count = r.number_of_documents()
        before = {t["uid"]: succeeded(t["details"]) for t in tasks[:-1]}
        before[deletion["uid"]] = succeeded({"deletedDocuments": count})
        return BatchOutcome(before, mapping_changes={uid: None}, dropped_index_uuids=[uuid])
    if first["type"] == "indexUpdate":
        return _update_index(sched, index, uid, uuid, first)

    with index.read() as r:
        marker = r.applied_batch()
    if marker is not None and marker.get("batchUid") == batch["uid"]:
        # The index commit of this batch reached disk before a crash: reuse what it recorded.
        recorded = {int(k): TaskResult(**v) for k, v in marker["results"].items()}
        return BatchOutcome(recorded, mapping_changes=mapping)

    results: dict[int, TaskResult] = {}
    try:
        with index.write() as w:
            w.interrupted = interrupted
            for done, task in enumerate(tasks):
                sched.progress.start("processing tasks", len(tasks))
                sched.progress.advance(done)
                try:
                    results[task["uid"]] = _apply_index_task(sched, w, uid, task)
                except TaskAborted:
                    raise
                except MeiliError as err:
                    # Per-document errors (ids, primary key) carry no `Index `x`: ` prefix in Meilisearch.
                    results[task["uid"]] = failed(task, err)
            w.touch()
            w.set_applied_batch(
                {"batchUid": batch["uid"], "results": {str(k): v.to_json() for k, v in results.items()}}
            )
    except TaskAborted as aborted:
        # the write transaction was aborted: the batch's tasks fail, nothing of them was written
        return BatchOutcome({t["uid"]: failed(t, aborted) for t in tasks}, mapping_changes=mapping)
    return BatchOutcome(results, mapping_changes=mapping)


def _apply_index_task(sched: Scheduler, w: IndexWriter, uid: str, task: Task) -> TaskResult:
    kind = task["kind"]
    if task["type"] == "documentAdditionOrUpdate":
        return _add_documents(sched, w, task, uid)
    if task["type"] == "documentDeletion":
        op = kind["op"]
        if op == "ids":
            deleted = w.delete_documents(kind["ids"])
            return succeeded(dict(task["details"], deletedDocuments=deleted))
        if op == "clear":
            return succeeded(dict(task["details"], deletedDocuments=w.clear_documents()))
        if op == "filter":
            return succeeded(
                dict(task["details"], deletedDocuments=_delete_by_filter(w, uid, kind["filter"]))
            )
        raise MeiliError("feature_not_enabled", f"Unknown document deletion `{op}`.")
    if task["type"] == "settingsUpdate":
        return _update_settings(w, uid, task)
    if task["type"] == "documentEdition":
        from .edit_documents import edit_documents  # imported here: it imports this module

        return edit_documents(sched, w, uid, task)
    raise MeiliError("feature_not_enabled", f"`{task['type']}` tasks are not supported by this build yet.")


def _update_settings(w: IndexWriter, uid: str, task: Task) -> TaskResult:
    """Merge the task's patch into the stored settings; the new settings are stored only after the
    indexer rebuilt what depends on them, so a failing task leaves them unchanged."""
    old = complete_settings(w.settings())
    try:
        new = apply_patch(old, SettingsPatch.from_json(task["kind"]["settings"]))
    except MeiliError as err:
        # milli's settings errors name the index
        raise MeiliError(err.code, f"Index `{uid}`: {err.message}") from None
    check_embedders(new, uid)
    check_chat_template(new, uid)
    reindex_for_settings(w, old, new, uid)
    w.set_settings(new)
    return succeeded(task["details"])


def _delete_by_filter(w: IndexWriter, uid: str, value: Any) -> int:
    """Delete the documents the filter selects in the batch's current state; filter errors name the
    index, as milli's."""
    from hanzo_engine.engine.search.filter import FilterContext, FilterOperatorError
    from hanzo_engine.filter_parser import FilterError, parse_filter_value

    try:
        node = parse_filter_value(value)
        selected: Any = (
            FilterContext(w, complete_settings(w.settings())).evaluate(node) if node is not None else []
        )
    except (FilterError, FilterOperatorError) as err:
        raise MeiliError("invalid_document_filter", f"Index `{uid}`: {err.message}") from None
    pk = w.primary_key
    externals = []
    for docid in selected:
        document = w.document_by_internal_id(docid)
        if document is not None and pk is not None:
            externals.append(extract_document_id(document, pk))
    return w.delete_documents(externals)


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: decoding a payload makes tens of thousands of containers per
    MiB, none in a cycle, and every young collection walks those alive (10-15% of the CPU of a large
    addition over HTTP). Reference counting still frees them; a cycle made meanwhile (by this thread or
    another) waits for the first collection after. The collector's state before is restored."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _add_documents(sched: Scheduler, w: IndexWriter, task: Task, uid: str = "") -> TaskResult:
    settings = w.settings()
    # With embedders, the embeddings are prepared for the whole payload before the first write; they
    # call out over HTTP, whose clients do make cycles: the collector stays on for them.
    if settings.get("embedders"):
        return _apply_addition(sched, w, task, uid, settings, whole=True)
    with cyclic_gc_paused():
        return _apply_addition(sched, w, task, uid, settings, whole=False)


def _apply_addition(
    sched: Scheduler, w: IndexWriter, task: Task, uid: str, settings: dict[str, Any], *, whole: bool
) -> TaskResult:
    kind = task["kind"]
    path = sched.update_files / kind["contentFile"]
    current_pk = w.primary_key
    requested_pk = kind.get("primaryKey")
    if current_pk is not None and requested_pk is not None and requested_pk != current_pk:
        raise MeiliError(
            "index_primary_key_already_exists", f"Index already has a primary key: `{current_pk}`."
        )
    pk = current_pk or requested_pk
    merge = kind["method"] == "update"
    # The payload is read a chunk at a time, twice: every document is checked before the first write
    # (a bad one leaves the index untouched), then written; a task never holds it all decoded (unless
    # `whole`).
    held: list[tuple[str, dict[str, Any]]] = []
    # a small payload is kept as the check pass prepared it
    keep = not whole and kind.get("contentSize", HOLD_PAYLOAD_BYTES + 1) <= HOLD_PAYLOAD_BYTES
    kept: list[Prepared] = []
    geo_error: MeiliError | None = None
    vectors_error: MeiliError | None = None
    total = 0

    def owned(documents: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        ids = [extract_document_id(doc, pk) for doc in documents] if pk is not None else []
        ids, documents = owned_documents(
            sched.store, ids, documents
        )  # a sharded network: this node's shards only
        return list(zip(ids, documents, strict=False))

    # A check pass whose documents are dropped reads only the fields it checks (of a flat primary key).
    light = not whole and not keep and pk is not None and "." not in pk
    checked = (
        read_document_fields(path, (pk, GEO_FIELD, GEOJSON_FIELD, VECTORS)) if light else read_documents(path)
    )
    for documents in checked:
        if pk is None:
            pk = infer_primary_key(documents[0])
        try:
            pairs = owned(documents)  # id errors first, in document order
        except MeiliError as err:
            if light and err.code == "missing_document_id":
                for whole_documents in read_documents(path):
                    owned(whole_documents)  # raises it again, quoting the whole document
            raise
        total += len(pairs)
        if geo_error is None:  # then `_geo`: the task fails on the first bad one
            try:
                check_geo(settings, pairs, uid)
            except MeiliError as err:
                geo_error = err
        if whole:
            held += pairs
        elif vectors_error is None:  # then `_vectors`, validated (and normalized) for every document
            try:
                ready = prepare_documents(w, uid, settings, pairs, merge=merge)
            except MeiliError as err:
                vectors_error = err
            else:
                if keep:
                    kept += ready
    if geo_error is not None:
        raise geo_error
    if vectors_error is not None:
        raise vectors_error
    prepared: Iterable[Prepared] = (
        prepare_documents(w, uid, settings, held, merge=merge)
        if whole
        else kept
        if keep
        else (
            item
            for documents in read_documents(path)
            for item in prepare_documents(w, uid, settings, owned(documents), merge=merge)
        )
    )
    if pk is not None and pk != current_pk:
        w.set_primary_key(pk)
    skip_creation = bool(kind.get("skipCreation"))
    indexed = 0
    sched.progress.nested("indexing documents", total)
    for i, (ext_id, doc, vectors) in enumerate(prepared):
        if i % INTERRUPT_CHECK_EVERY == 0:
            if w.interrupted():
                raise Interrupted
            sched.progress.advance(i)
        if skip_creation and w.internal_id(ext_id) is None:
            continue
        w.put_document(ext_id, doc, merge=merge)
        write_vectors(w, ext_id, vectors)
        indexed += 1
    return succeeded(dict(task["details"], indexedDocuments=indexed))


def _update_index(sched: Scheduler, index: Index, uid: str, uuid: str, task: Task) -> BatchOutcome:
    kind = task["kind"]
    mapping: dict[str, str | None] = {}
    new_uid = kind.get("newUid")
    if new_uid is not None and new_uid != uid:
        if sched.mapper.uuid_of(new_uid) is not None:
            return BatchOutcome(
                {
                    task["uid"]: failed(
                        task, MeiliError("index_already_exists", f"Index `{new_uid}` already exists.")
                    )
                }
            )
        mapping = {uid: None, new_uid: uuid}
    if "primaryKey" in kind and kind["primaryKey"] is not None:
        with index.write() as w:
            current = w.primary_key
            if current != kind["primaryKey"]:
                if w.number_of_documents() > 0:
                    # An index update is an indexing-core operation: its errors name the index.
                    err = MeiliError(
                        "index_primary_key_already_exists",
                        f"Index `{uid}`: Index already has a primary key: `{current}`.",
                    )
                    return BatchOutcome({task["uid"]: failed(task, err)})
                w.set_primary_key(kind["primaryKey"])
            w.touch()
    else:
        with index.write() as w:
            w.touch()
    return BatchOutcome({task["uid"]: succeeded(task["details"])}, mapping_changes=mapping)


def _swap_indexes(sched: Scheduler, task: Task) -> BatchOutcome:
    mapping = sched.mapper.mapping()
    seen: set[str] = set()
    missing: set[str] = set()
    changes: dict[str, str | None] = {}
    for swap in task["kind"]["swaps"]:
        for name in swap["indexes"]:
            if name in seen:
                return BatchOutcome(
                    {
                        task["uid"]: failed(
                            task,
                            MeiliError(
                                "invalid_swap_duplicate_index_found",
                                f"Indexes must be declared only once during a swap. `{name}` was specified several times.",
                            ),
                        )
                    }
                )
            seen.add(name)
    for swap in task["kind"]["swaps"]:
        a, b = swap["indexes"]
        # With `rename`, the second index is the new name: it must not exist, the first must.
        missing.update(n for n in (a, b) if n not in mapping and not (swap.get("rename") and n == b))
    if missing:
        names = sorted(missing)
        msg = (
            f"Index `{names[0]}` not found."
            if len(names) == 1
            else "Indexes " + ", ".join(f"`{m}`" for m in names) + " not found."
        )
        return BatchOutcome({task["uid"]: failed(task, MeiliError("index_not_found", msg))})
    for swap in task["kind"]["swaps"]:
        a, b = swap["indexes"]
        if swap.get("rename"):
            if b in mapping:
                return BatchOutcome(
                    {
                        task["uid"]: failed(
                            task, MeiliError("index_already_exists", f"Index `{b}` already exists.")
                        )
                    }
                )
            changes[a] = None
            changes[b] = mapping[a]
        else:
            changes[a], changes[b] = mapping[b], mapping[a]
    return BatchOutcome({task["uid"]: succeeded(task["details"])}, mapping_changes=changes)


# -- task cancelation and deletion ----------------------------------------------------------------
# Both work inside the scheduler's finishing transaction of the tasks env (`on_tasks_txn`), which runs
# before the results are written, so the counters they fill in are committed with the tasks they touch.


def _cancel_tasks(sched: Scheduler, tasks: list[Task]) -> BatchOutcome:
    store = sched.store
    outcome = BatchOutcome({})

    def in_txn(txn: lmdb.Transaction, batch: Batch, now: int) -> list[Task]:
        changed: list[Task] = []
        for cancel in tasks:
            canceled = 0
            for uid in cancel["kind"]["tasks"]:
                target = store.get_task_txn(txn, uid)
                if target is None or target["status"] != "enqueued":
                    continue
                new = dict(
                    target,
                    status="canceled",
                    canceledBy=cancel["uid"],
                    batchUid=batch["uid"],
                    startedAt=batch["startedAt"],
                    finishedAt=now,
                    details=failed_details(target.get("details")),
                )
                store.put_task(txn, new, target)
                changed.append(new)
                canceled += 1
            outcome.results[cancel["uid"]] = succeeded(dict(cancel["details"], canceledTasks=canceled))
        return changed

    outcome.on_tasks_txn = in_txn
    return outcome


def _delete_tasks(sched: Scheduler, tasks: list[Task]) -> BatchOutcome:
    store = sched.store
    outcome = BatchOutcome({})

    def in_txn(txn: lmdb.Transaction, batch: Batch, now: int) -> list[Task]:
        own = {t["uid"] for t in tasks}
        touched_batches: set[int] = set()
        for deletion in tasks:
            deleted = 0
            for uid in deletion["kind"]["tasks"]:
                if uid in own:
                    continue
                target = store.get_task_txn(txn, uid)
                if target is None or target["status"] not in ("succeeded", "failed", "canceled"):
                    continue
                store.delete_task(txn, target)
                if target.get("batchUid") is not None:
                    touched_batches.add(target["batchUid"])
                deleted += 1
            outcome.results[deletion["uid"]] = succeeded(dict(deletion["details"], deletedTasks=deleted))
        for buid in touched_batches:
            if buid != batch["uid"] and not store.bitmap_txn(txn, f"batch:{buid}"):
                store.delete_batch(txn, buid)
        return []

    outcome.on_tasks_txn = in_txn
    return outcome


# -- index compaction -----------------------------------------------------------------------------

# byte_unit's `get_appropriate_unit(UnitType::Both)`: the largest decimal or binary unit not above the size
_BYTE_UNITS = (
    ("EiB", 1 << 60),
    ("EB", 10**18),
    ("PiB", 1 << 50),
    ("PB", 10**15),
    ("TiB", 1 << 40),
    ("TB", 10**12),
    ("GiB", 1 << 30),
    ("GB", 10**9),
    ("MiB", 1 << 20),
    ("MB", 10**6),
    ("KiB", 1 << 10),
    ("KB", 10**3),
)


def _byte_size(size: int) -> str:
    from hanzo_engine.apitypes.search import rust_f64_display

    for unit, factor in _BYTE_UNITS:
        if size >= factor:
            return f"{rust_f64_display(size / factor)} {unit}"
    return f"{size} B"


def _compact_index(sched: Scheduler, batch: Batch, task: Task) -> BatchOutcome:
    """Rebuild the index's LMDB environment densely (`dump.compaction`: every database appended in key
    order into a new file) in a new directory and point the index uid at it; the old directory is dropped
    once the mapping is committed.

    The copy runs on the writer thread, so no write happens meanwhile; searches read the old environment
    until the mapping changes, then retry on the new one (`read_index`). The new directory is the batch's
    `pendingIndexUuid`: a re-run after a crash overwrites its own partial copy, and `sweep_orphans`
    removes whichever directory the committed mapping does not name.
    """
    import shutil

    from hanzo_engine.dump.compaction import compact_env_file

    uid: str = task["indexUid"]
    uuid = sched.mapper.uuid_of(uid)
    if uuid is None:
        return BatchOutcome(
            {task["uid"]: failed(task, MeiliError("index_not_found", f"Index `{uid}` not found."))}
        )
    index = sched.mapper.open_uuid(uuid)
    target = sched.mapper.dir / batch["pendingIndexUuid"]
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    before = index.file_size()
    after = compact_env_file(index.env, target / "data.mdb")
    details = dict(
        task.get("details") or {}, preCompactionSize=_byte_size(before), postCompactionSize=_byte_size(after)
    )
    return BatchOutcome(
        {task["uid"]: succeeded(details)},
        mapping_changes={uid: batch["pendingIndexUuid"]},
        dropped_index_uuids=[uuid],
    )
