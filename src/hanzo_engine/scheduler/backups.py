"""Dumps and snapshots of a database: what `dumpCreation` and `snapshotCreation` tasks do, the dump
import of `--import-dump`, and the exports of the admin CLI.

Dump export (`export_dump`), as Meilisearch's `process_dump_creation`: keys, then every task in one read
transaction of the tasks env (the running dump task written as succeeded, the payloads of enqueued
document tasks added under `tasks/update_files/`), batches, then each index in its own read transaction
(metadata, full settings with secrets, every document), then the runtime features (`<db>/experimental-
features.json`, persisted by the `/experimental-features` route), the API webhooks (`webhooks.json`) and the network
(`network.json`). It runs on the
writer thread, so no index changes while it reads: the dump is a consistent state of the database.
Documents stream from LMDB into the archive (`DumpWriter.add_stream`): their total size is summed in a
first pass over the same read transaction, then the bytes are copied; nothing is held in memory.

Dump import (`import_dump`), as Meilisearch's `import_dump`: instance uid, keys (replacing the defaults,
uids kept), the API webhooks, the network (without its `self` and `leader`), the enabled experimental features, each index (settings first, then documents streamed in write transactions of
`IMPORT_CHUNK` documents, so indexing memory stays bounded; their `_vectors` go to the vector store, as
user-provided embeddings with their `regenerate`, nothing is embedded), batches, and last the tasks with their
uids, statuses and dates; enqueued tasks get their payloads back and run once the server starts.

Snapshot (`create_snapshot`): compacted copies of the tasks env, of every index env and of the auth env
(`dump.snapshot`), taken with read transactions while searches go on, plus the payloads of the enqueued
tasks of the copied queue. In the copy, the snapshot tasks being processed are recorded as succeeded,
so restoring a snapshot does not take another one.
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
import time
import uuid as uuidlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec

from hanzo_engine import MEILISEARCH_COMPAT_VERSION
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.settings import (
    SETTING_NAMES,
    SettingsPatch,
    apply_patch,
    complete_settings,
    parse_setting_value,
    parse_settings_patch,
)
from hanzo_engine.auth import Key, KeyStore
from hanzo_engine.dump import DEFAULT_FEATURES, DumpReader, DumpWriter, IndexDump
from hanzo_engine.dump import snapshot as snap
from hanzo_engine.dump.format import (
    NETWORK,
    WEBHOOKS,
    DumpFormatError,
    dump_uid,
    index_metadata,
    key_line,
    key_record,
)
from hanzo_engine.engine.documents.primary_key import extract_document_id, infer_primary_key
from hanzo_engine.engine.index import Index, IndexReader, now_ns
from hanzo_engine.engine.update.settings_hook import reindex_for_settings
from hanzo_engine.engine.vector.documents import import_vectors

from . import chats, network, webhooks
from .dump_records import RecordError, batch_line, batch_record, task_line, task_record
from .store import KEY_NEXT_TASK, Batch, Task

if TYPE_CHECKING:
    from .progress import Progress
    from .scheduler import Scheduler

log = logging.getLogger("hanzo_engine.dump")

INSTANCE_UID_FILE: Final = "instance-uid"
VERSION_FILE: Final = "VERSION"
# the runtime experimental features the server persists (`server.features`): {name: bool}
FEATURES_FILE: Final = "experimental-features.json"
# Documents per write transaction when importing a dump (bounds the indexer's pending postings).
IMPORT_CHUNK: Final = 20_000
# Dump document chunks handed to the archive (bytes), and how often a long loop checks for a cancelation.
STREAM_CHUNK: Final = 1 << 20
CHECK_EVERY: Final = 1024
LOG_EVERY: Final = 100_000

_U32 = struct.Struct(">I")
_decode = msgspec.json.decode


class DumpImportError(Exception):
    """The dump could not be imported (malformed member, invalid document...)."""


def read_instance_uid(db_path: Path) -> str | None:
    try:
        text = (db_path / INSTANCE_UID_FILE).read_text().strip()
        return str(uuidlib.UUID(text))
    except (OSError, ValueError):
        return None


def read_features(db_path: Path) -> dict[str, bool]:
    """The runtime features of the database (defaults for what was never changed)."""
    try:
        stored = _decode((db_path / FEATURES_FILE).read_bytes())
    except (OSError, msgspec.DecodeError):
        stored = {}
    features = dict(DEFAULT_FEATURES)
    if isinstance(stored, dict):
        features.update({k: v for k, v in stored.items() if k in DEFAULT_FEATURES and isinstance(v, bool)})
    return features


def write_features(db_path: Path, features: dict[str, Any]) -> None:
    """Persist the features a dump enables (false ones are the defaults and are not written, so a
    `--experimental-legacy-search-default` flag still applies)."""
    enabled = {k: True for k, v in features.items() if k in DEFAULT_FEATURES and v is True}
    if enabled:
        (db_path / FEATURES_FILE).write_bytes(msgspec.json.encode(enabled))


def key_lines(keys: Iterable[Key]) -> list[dict[str, Any]]:
    """Keys as `keys.jsonl` lines, in uid order (the order Meilisearch's auth store iterates)."""
    return [key_line(k.to_record()) for k in sorted(keys, key=lambda k: k.uid.bytes)]


def _never() -> bool:
    return False


# -- export ---------------------------------------------------------------------------------------


@dataclass
class DumpStats:
    dump_uid: str
    path: Path
    keys: int = 0
    tasks: int = 0
    update_files: int = 0
    batches: int = 0
    indexes: int = 0
    documents: int = 0
    seconds: float = 0.0
    per_index: dict[str, int] = field(default_factory=dict)


def _interrupt(interrupted: Callable[[], bool]) -> None:
    if interrupted():
        from .processing import Interrupted

        raise Interrupted


def export_dump(
    sched: Scheduler,
    *,
    dump_dir: Path,
    keys: list[dict[str, Any]],
    instance_uid: str | None,
    own_task: Task | None = None,
    own_batch_uid: int | None = None,
    skip_enqueued: bool = False,
    progress: Progress | None = None,
    interrupted: Callable[[], bool] = _never,
) -> DumpStats:
    """Write `<dump_dir>/<dumpUid>.dump` from the database of `sched` (see the module docstring).

    `keys` are `keys.jsonl` lines. `own_task`/`own_batch_uid` are the running dump task and its batch,
    written as finished. `skip_enqueued` leaves enqueued tasks out (`admin export-a-dump`).
    """
    started = now_ns()
    clock = time.monotonic()
    uid = dump_uid(started)
    stats = DumpStats(uid, dump_dir / f"{uid}.dump")
    steps = (
        "dump the api keys",
        "dump the tasks",
        "dump the batches",
        "dump the indexes",
        "dump the experimental features",
        "compress the dump",
    )

    def step(i: int) -> None:
        if progress is not None:
            progress.start(steps[i], len(steps))
            progress.advance(i)

    log.info("creating dump %s in %s", uid, dump_dir)
    with DumpWriter(
        stats.path, instance_uid=instance_uid, db_version=MEILISEARCH_COMPAT_VERSION, dump_date_ns=started
    ) as writer:
        step(0)
        stats.keys = writer.write_keys(keys)
        step(1)
        store = sched.store
        with store.env.begin() as txn:
            payloads: list[tuple[int, Path]] = []
            enqueued_range: dict[int, tuple[int, int]] = {}

            def task_lines() -> Iterator[dict[str, Any]]:
                with txn.cursor(db=store.db_tasks) as cursor:
                    for n, raw in enumerate(cursor.iternext(keys=False, values=True)):
                        if n % CHECK_EVERY == 0:
                            _interrupt(interrupted)
                        task: Task = _decode(raw)
                        if skip_enqueued and task["status"] == "enqueued":
                            continue
                        if own_task is not None and task["uid"] == own_task["uid"]:
                            # the dump records itself as done (Meilisearch does the same)
                            task = dict(
                                task, status="succeeded", finishedAt=now_ns(), details={"dumpUid": uid}
                            )
                        content = (task.get("kind") or {}).get("contentFile")
                        if content and task["status"] == "enqueued":
                            payloads.append((task["uid"], sched.update_files / content))
                        if task.get("batchUid") is not None:
                            lo, hi = enqueued_range.get(
                                task["batchUid"], (task["enqueuedAt"], task["enqueuedAt"])
                            )
                            enqueued_range[task["batchUid"]] = (
                                min(lo, task["enqueuedAt"]),
                                max(hi, task["enqueuedAt"]),
                            )
                        yield task_line(task)

            stats.tasks = writer.add_lines("tasks/queue.jsonl", task_lines())
            for task_uid, path in payloads:
                _interrupt(interrupted)
                writer.write_update_file(task_uid, path)
            stats.update_files = len(payloads)
            log.info("dump %s: %d keys, %d tasks (%d payloads)", uid, stats.keys, stats.tasks, len(payloads))

            step(2)

            def batch_lines() -> Iterator[dict[str, Any]]:
                with txn.cursor(db=store.db_batches) as cursor:
                    for raw in cursor.iternext(keys=False, values=True):
                        batch: Batch = _decode(raw)
                        if batch["uid"] == own_batch_uid:
                            total = (batch.get("stats") or {}).get("totalNbTasks", 1)
                            stats_ = dict(batch.get("stats") or {}, status={"succeeded": total})
                            batch = dict(batch, finishedAt=now_ns(), stats=stats_, details={"dumpUid": uid})
                        yield batch_line(batch, enqueued_range.get(batch["uid"]))

            stats.batches = writer.add_lines("batches/queue.jsonl", batch_lines())
            mapping = store.index_mapping(txn)

        step(3)
        for index_uid, index_uuid in sorted(mapping.items()):
            count = _export_index(
                writer, sched.mapper.open_uuid(index_uuid), index_uid, progress, interrupted
            )
            stats.per_index[index_uid] = count
            stats.documents += count
            stats.indexes += 1
            log.info("dump %s: index `%s`, %d documents", uid, index_uid, count)
        step(4)
        writer.write_features(read_features(sched.db_path))
        writer.add_json(WEBHOOKS, webhooks.dump_view(store))
        for member, workspace in chats.dump_members(store):
            writer.add_json(member, workspace)
        writer.add_json(NETWORK, network.dump_view(store))
        step(5)
        _interrupt(interrupted)
        writer.finish()
    stats.seconds = time.monotonic() - clock
    log.info(
        "dump %s written to %s: %d indexes, %d documents in %.2fs (%.0f documents/s)",
        uid,
        stats.path,
        stats.indexes,
        stats.documents,
        stats.seconds,
        stats.documents / max(stats.seconds, 1e-9),
    )
    return stats


def _export_index(
    writer: DumpWriter,
    index: Index,
    uid: str,
    progress: Progress | None,
    interrupted: Callable[[], bool],
) -> int:
    """Write one index; returns its number of documents."""
    # buffers=True: the size pass reads the values' lengths without copying them
    with index.env.begin(buffers=True) as txn:
        reader = IndexReader(index, txn)
        metadata = index_metadata(uid, reader.primary_key, reader.created_at, reader.updated_at)
        settings = complete_settings(reader.settings())
        total = reader.number_of_documents()
        size = 0
        with txn.cursor(db=index.db_documents) as cursor:
            for value in cursor.iternext(keys=False, values=True):
                size += len(value) + 1
        if progress is not None:
            progress.nested(f"dump the documents of `{uid}`", total)

        def chunks() -> Iterator[bytes]:
            parts: list[bytes] = []
            pending = 0
            with txn.cursor(db=index.db_documents) as cursor:
                for n, value in enumerate(cursor.iternext(keys=False, values=True)):
                    if n % CHECK_EVERY == 0:
                        _interrupt(interrupted)
                        if progress is not None:
                            progress.advance(n)
                    parts.append(bytes(value))
                    parts.append(b"\n")
                    pending += len(value) + 1
                    if pending >= STREAM_CHUNK:
                        yield b"".join(parts)
                        parts, pending = [], 0
            if parts:
                yield b"".join(parts)

        writer.write_index(uid, metadata, settings, size, chunks())
        return total


# -- import ---------------------------------------------------------------------------------------


@dataclass
class ImportStats:
    keys: int = 0
    indexes: int = 0
    documents: int = 0
    batches: int = 0
    tasks: int = 0
    requeued: int = 0
    seconds: float = 0.0


def import_dump(sched: Scheduler, key_store: KeyStore, dump_path: Path) -> ImportStats:
    """Load `dump_path` into the (empty) database of `sched`, before the scheduler starts."""
    clock = time.monotonic()
    stats = ImportStats()
    with DumpReader(dump_path, workdir=sched.db_path) as reader:
        log.info(
            "importing a dump of Meilisearch %s (dump version %s, dumped at %s)",
            reader.db_version or "?",
            reader.version,
            reader.dump_date or "?",
        )
        instance_uid = reader.instance_uid()
        if instance_uid is not None:
            (sched.db_path / INSTANCE_UID_FILE).write_text(instance_uid)
        key_store.delete_all()
        for line in reader.keys():
            key_store.put(Key.from_record(key_record(line)))
            stats.keys += 1
        webhooks.import_dump_view(sched.store, reader.webhooks())
        chats.import_dump_dir(sched.store, reader.root)
        network.import_dump_view(sched.store, reader.network())
        features = reader.features() or {}
        write_features(sched.db_path, features)
        unknown = sorted(name for name, on in features.items() if on is True and name not in DEFAULT_FEATURES)
        if unknown:
            log.warning("the dump enables experimental features unknown to hanzo-engine: %s", unknown)
        for index_dump in reader.indexes():
            stats.documents += _import_index(sched, index_dump)
            stats.indexes += 1
        stats.batches = _import_batches(sched, reader.batches())
        stats.tasks, stats.requeued = _import_tasks(sched, reader.tasks())
    stats.seconds = time.monotonic() - clock
    log.info(
        "dump imported: %d keys, %d indexes, %d documents, %d batches, %d tasks (%d to process) in %.2fs",
        stats.keys,
        stats.indexes,
        stats.documents,
        stats.batches,
        stats.tasks,
        stats.requeued,
        stats.seconds,
    )
    return stats


def settings_patch(index_uid: str, settings: dict[str, Any]) -> SettingsPatch:
    """A dump's settings as a patch. Settings this build does not know are skipped with a warning, and so
    is a value it refuses (a newer Meilisearch may allow more), rather than failing the whole import."""
    known = {k: v for k, v in settings.items() if k in SETTING_NAMES}
    unknown = sorted(set(settings) - set(known))
    if unknown:
        log.warning("index `%s`: settings %s are not supported and were not imported", index_uid, unknown)
    try:
        return parse_settings_patch(known)
    except MeiliError:
        values: dict[str, Any] = {}
        for name, value in known.items():
            try:
                values.update(parse_setting_value(name, value).values)
            except MeiliError as err:
                log.warning("index `%s`: setting `%s` was not imported: %s", index_uid, name, err.message)
        return SettingsPatch(values)


def _import_index(sched: Scheduler, dump: IndexDump) -> int:
    log.info("importing index `%s`", dump.uid)
    uuid = sched.mapper.new_uuid()
    index = sched.mapper.create_uuid(uuid, primary_key=dump.primary_key, created_at=dump.created_at)
    patch = settings_patch(dump.uid, dump.settings())
    with index.write() as w:
        old = complete_settings(w.settings())
        try:
            new = apply_patch(old, patch)
        except MeiliError as err:
            raise DumpImportError(f"index `{dump.uid}`: {err.message}") from None
        reindex_for_settings(w, old, new)
        w.set_settings(new)
    primary_key = dump.primary_key
    count = 0
    clock = time.monotonic()
    lines = dump.document_lines()
    while True:
        with index.write() as w:
            if primary_key is not None and w.primary_key != primary_key:
                w.set_primary_key(primary_key)
            in_chunk = 0
            for line in lines:
                document = _decode(line)
                if not isinstance(document, dict):
                    raise DumpImportError(f"index `{dump.uid}`: document {count + 1} is not an object")
                try:
                    if primary_key is None:
                        primary_key = infer_primary_key(document)
                        w.set_primary_key(primary_key)
                    ext_id = extract_document_id(document, primary_key)
                    w.put_document(ext_id, document, merge=False)
                    import_vectors(w, ext_id, document, new)
                except MeiliError as err:
                    raise DumpImportError(
                        f"index `{dump.uid}`, document {count + 1}: {err.message}"
                    ) from None
                count += 1
                in_chunk += 1
                if count % LOG_EVERY == 0:
                    log.info(
                        "index `%s`: %d documents imported (%.0f documents/s)",
                        dump.uid,
                        count,
                        count / max(time.monotonic() - clock, 1e-9),
                    )
                if in_chunk >= IMPORT_CHUNK:
                    break
            w.touch(dump.updated_at)
        if in_chunk < IMPORT_CHUNK:
            break
    with sched.store.env.begin(write=True) as txn:
        sched.store.set_index_uuid(txn, dump.uid, uuid)
    log.info("index `%s`: %d documents imported", dump.uid, count)
    return count


def _import_batches(sched: Scheduler, lines: Iterable[dict[str, Any]]) -> int:
    count = 0
    txn = sched.store.env.begin(write=True)
    try:
        for line in lines:
            try:
                sched.store.put_batch(txn, batch_record(line))
            except RecordError as exc:
                raise DumpImportError(f"batches/queue.jsonl: {exc}") from None
            count += 1
        txn.commit()
    except BaseException:
        txn.abort()
        raise
    return count


def _copy_payload(sched: Scheduler, source: Path) -> tuple[str, int]:
    """Copy an update file of the dump into `update_files/` (documents one per line, as ours)."""
    file_uuid, target = sched.new_update_file()
    with open(source, "rb") as src, open(target, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
        out.flush()
        os.fsync(out.fileno())
    return file_uuid, target.stat().st_size


def _import_tasks(sched: Scheduler, tasks: Iterator[tuple[dict[str, Any], Path | None]]) -> tuple[int, int]:
    """Register every dumped task with its uid; returns (tasks, tasks left to process)."""
    store = sched.store
    count = requeued = 0
    next_uid = store.peek_next_task_uid()
    txn = store.env.begin(write=True)
    try:
        for line, payload in tasks:
            try:
                task = task_record(line)
            except RecordError as exc:
                raise DumpImportError(f"task {line.get('uid')}: {exc}") from None
            if task["status"] == "processing":
                # Meilisearch never stores `processing`; a dump of a live queue may hold it: run it again
                task.update(status="enqueued", batchUid=None, startedAt=None)
            if task["status"] == "enqueued":
                requeued += 1
                if task["type"] == "documentAdditionOrUpdate":
                    kind = task["kind"]
                    if payload is None and kind["documentsCount"] > 0:
                        raise DumpImportError(f"task {task['uid']}: its documents are missing from the dump")
                    if payload is None:
                        file_uuid, target = sched.new_update_file()
                        target.touch()
                        size = 0
                    else:
                        file_uuid, size = _copy_payload(sched, payload)
                    kind.update(contentFile=file_uuid, contentSize=size)
            store.put_task(txn, task, None)
            next_uid = max(next_uid, task["uid"] + 1)
            count += 1
            if count % LOG_EVERY == 0:
                log.info("%d tasks imported", count)
        txn.put(KEY_NEXT_TASK, _U32.pack(next_uid), db=store.db_meta)
        txn.commit()
    except BaseException:
        txn.abort()
        raise
    return count, requeued


# -- snapshot -------------------------------------------------------------------------------------


@dataclass
class SnapshotStats:
    path: Path
    environments: int = 0
    update_files: int = 0
    bytes: int = 0
    seconds: float = 0.0


def create_snapshot(
    sched: Scheduler,
    *,
    snapshot_tasks: list[Task],
    batch_uid: int | None,
    interrupted: Callable[[], bool] = _never,
) -> SnapshotStats:
    """Write `<snapshot_dir>/<db name>.snapshot` (see the module docstring)."""
    from .store import TaskStore

    clock = time.monotonic()
    target = snap.snapshot_path(sched.snapshot_dir, sched.db_path)
    stats = SnapshotStats(target)
    staging = snap.staging_dir(sched.snapshot_dir)
    log.info("creating snapshot %s", target)
    try:
        for name in (VERSION_FILE, INSTANCE_UID_FILE, FEATURES_FILE):
            if (sched.db_path / name).exists():
                shutil.copy2(sched.db_path / name, staging / name)
        sched.progress.start("snapshot the tasks", 3)
        snap.copy_env(sched.store.env, staging / "tasks")
        stats.environments += 1
        copy = TaskStore(staging / "tasks")
        try:
            _finish_in_copy(copy, snapshot_tasks, batch_uid)
            with copy.env.begin() as txn:
                mapping = copy.index_mapping(txn)
                contents = [
                    t["kind"].get("contentFile")
                    for t in copy.iter_tasks(txn, copy.bitmap_txn(txn, "status:enqueued"))
                ]
        finally:
            copy.close()
        (staging / "update_files").mkdir()
        for content in filter(None, contents):
            _link_or_copy(sched.update_files / content, staging / "update_files" / content)
            stats.update_files += 1
        sched.progress.start("snapshot the indexes", 3)
        sched.progress.advance(1)
        sched.progress.nested("snapshot the indexes", len(mapping))
        for n, index_uuid in enumerate(sorted(mapping.values())):
            _interrupt(interrupted)
            sched.progress.advance(n)
            snap.copy_env(sched.mapper.open_uuid(index_uuid).env, staging / "indexes" / index_uuid)
            stats.environments += 1
        if sched.auth_env is not None:
            snap.copy_env(sched.auth_env, staging / "auth")
            stats.environments += 1
        else:
            log.warning(
                "snapshot %s: the keys store is not attached to the scheduler; keys are not included", target
            )
        sched.progress.start("compress the snapshot", 3)
        sched.progress.advance(2)
        _interrupt(interrupted)
        snap.archive_directory(staging, target)
    finally:
        snap.remove_tree(staging)
    stats.bytes = target.stat().st_size
    stats.seconds = time.monotonic() - clock
    log.info(
        "snapshot %s written: %d environments, %d payloads, %d bytes in %.2fs",
        target,
        stats.environments,
        stats.update_files,
        stats.bytes,
        stats.seconds,
    )
    return stats


def _finish_in_copy(copy: Any, tasks: list[Task], batch_uid: int | None) -> None:
    """Record the running snapshot tasks (and their batch) as succeeded in the copied queue."""
    now = now_ns()
    with copy.env.begin(write=True) as txn:
        for task in tasks:
            current = copy.get_task_txn(txn, task["uid"])
            if current is not None:
                copy.put_task(txn, dict(current, status="succeeded", finishedAt=now), current)
        if batch_uid is not None:
            batch = copy.get_batch_txn(txn, batch_uid)
            if batch is not None:
                total = (batch.get("stats") or {}).get("totalNbTasks", len(tasks))
                batch = dict(
                    batch, finishedAt=now, stats=dict(batch.get("stats") or {}, status={"succeeded": total})
                )
                batch.pop("pendingIndexUuid", None)
                copy.put_batch(txn, batch)


def _link_or_copy(source: Path, target: Path) -> None:
    # payload files never change once written: a hard link is a free, exact copy
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


# -- the tasks --------------------------------------------------------------------------------------


def _io_error(exc: OSError) -> MeiliError:
    import errno

    reason = f"{exc.strerror or exc} (os error {exc.errno})" if exc.errno else str(exc)
    if exc.errno == errno.ENOSPC:
        return MeiliError("no_space_left_on_device", reason)
    return MeiliError("io_error", reason)


def apply(sched: Scheduler, batch: Batch, tasks: list[Task], interrupted: Callable[[], bool]) -> Any:
    """Run a `dumpCreation` batch (one task) or a `snapshotCreation` batch (all of them at once)."""
    from .processing import BatchOutcome, Interrupted, failed, succeeded

    kind = tasks[0]["type"]
    try:
        if kind == "dumpCreation":
            task = tasks[0]
            dump_keys = list((task.get("kind") or {}).get("keys") or [])
            instance_uid = (task.get("kind") or {}).get("instanceUid") or read_instance_uid(sched.db_path)
            stats = export_dump(
                sched,
                dump_dir=sched.dump_dir,
                keys=dump_keys,
                instance_uid=instance_uid,
                own_task=task,
                own_batch_uid=batch["uid"],
                progress=sched.progress,
                interrupted=interrupted,
            )
            return BatchOutcome({task["uid"]: succeeded({"dumpUid": stats.dump_uid})})
        create_snapshot(sched, snapshot_tasks=tasks, batch_uid=batch["uid"], interrupted=interrupted)
        return BatchOutcome({t["uid"]: succeeded(t.get("details")) for t in tasks})
    except Interrupted:
        raise
    except OSError as exc:
        log.exception("%s failed", kind)
        err = _io_error(exc)
    except (DumpFormatError, ValueError) as exc:
        log.exception("%s failed", kind)
        err = MeiliError("dump_process_failed" if kind == "dumpCreation" else "internal", str(exc))
    return BatchOutcome({t["uid"]: failed(t, err) for t in tasks})
