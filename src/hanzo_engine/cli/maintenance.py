"""`hanzo-engine admin --db-path DIR <command>`: offline maintenance of a data directory (meilitool's role).

Every command first takes the data directory's lock (`engine.storage.datadir.DataDirLock`): when a server (or
another admin command) holds the directory, the command refuses with the holder's pid and touches
nothing. It then checks the format VERSION, as meilitool reads the VERSION file first.

Commands:
- `clear-task-queue`: delete every task, batch and pending payload (task uids keep increasing);
- `export-a-dump [--dump-dir] [--skip-enqueued-tasks]`: write a v6 `.dump`, as `POST /dumps`;
- `export-documents --index-name X [--ignore-vectors] [--offset N]`: the documents as NDJSON on stdout;
- `index-compaction <index>`: replace the index's `data.mdb` by a compacted copy, report both sizes;
- `list-indexes`, `list-keys`: one JSON object per line;
- `import-documents --index-name X FILE`: load a JSON, NDJSON or CSV file through the same payload
  conversion and task pipeline as `POST /documents`, in chunks, with progress bars;
- `upgrade`: run the registered format upgrade steps, if any.

Messages and progress go to stderr; data (documents, listings) to stdout. The long commands (dump export,
document export and import, compaction) draw progress bars when stderr is a terminal (otherwise each bar
prints its label once) and always end with a summary line giving counts and the time taken.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Final

import click
import msgspec

from hanzo_engine.scheduler.progress import Progress

# Default size of the NDJSON chunks `import-documents` turns into tasks.
IMPORT_CHUNK_MB: Final = 64

_decode = msgspec.json.decode
_encode = msgspec.json.Encoder().encode


def _db_path(ctx: click.Context) -> Path:
    path: Path = ctx.obj["db_path"]
    return path.resolve()


@contextlib.contextmanager
def _locked(ctx: click.Context, command: str) -> Iterator[Path]:
    """The data directory, locked and version-checked for the duration of the command."""
    from hanzo_engine.engine.storage.datadir import DataDirError, DataDirLock, check_version

    db_path = _db_path(ctx)
    if not (db_path / "tasks" / "data.mdb").exists():
        raise click.ClickException(f"no hanzo-engine database at {db_path}")
    try:
        lock = DataDirLock(db_path, f"`hanzo-engine admin {command}`").acquire()
    except DataDirError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        try:
            check_version(db_path)
        except DataDirError as exc:
            raise click.ClickException(str(exc)) from None
        yield db_path
    finally:
        lock.release()


@contextlib.contextmanager
def _scheduler(db_path: Path, **kwargs: Any) -> Iterator[Any]:
    from hanzo_engine.scheduler.scheduler import Scheduler

    sched = Scheduler(db_path, **kwargs)
    try:
        yield sched
    finally:
        sched.stop()


@contextlib.contextmanager
def _key_store(db_path: Path) -> Iterator[Any]:
    from hanzo_engine.auth import KeyStore

    store = KeyStore(db_path / "auth", create_defaults=False)
    try:
        yield store
    finally:
        store.close()


def _say(message: str) -> None:
    click.echo(message, err=True)


class _BarProgress(Progress):
    """The scheduler's progress object drawn on stderr: a line per top-level step (`[2/6] dump the
    tasks`), a click progress bar per nested step (filled when the step ends)."""

    def __init__(self) -> None:
        super().__init__()
        self._bar: Any = None
        self._total = 0
        self._done = 0
        self._steps_seen = 0

    def start(self, name: str, total: int) -> None:
        super().start(name, total)
        self.close()
        self._steps_seen += 1
        _say(f"[{min(self._steps_seen, max(total, 1))}/{max(total, 1)}] {name}")

    def nested(self, name: str, total: int) -> None:
        super().nested(name, total)
        self.close()
        self._total = max(total, 1)
        self._bar = click.progressbar(length=self._total, label=name, file=sys.stderr)
        self._bar.__enter__()
        self._done = 0

    def advance(self, finished: int) -> None:
        super().advance(finished)
        if self._bar is not None and finished > self._done:
            self._bar.update(finished - self._done)
            self._done = finished

    def close(self) -> None:
        """End the nested step's bar: its step is over, so it is drawn full."""
        if self._bar is not None:
            if self._done < self._total:
                self._bar.update(self._total - self._done)
            self._bar.__exit__(None, None, None)
            self._bar = None


class _IndexingProgress(Progress):
    """Stands in for the scheduler's progress while `import-documents` runs the queue: the documents
    the running task has indexed so far move the bar, on top of the tasks already finished."""

    def __init__(self, bar: Any) -> None:
        super().__init__()
        self._bar = bar
        self._indexing = False
        self.base = 0  # documents of the finished tasks
        self._shown = 0

    def start(self, name: str, total: int) -> None:
        super().start(name, total)
        self._indexing = False

    def nested(self, name: str, total: int) -> None:
        super().nested(name, total)
        self._indexing = name == "indexing documents"

    def advance(self, finished: int) -> None:
        super().advance(finished)
        if self._indexing:
            self.show(self.base + finished)

    def show(self, documents: int) -> None:
        if documents > self._shown:
            self._bar.update(documents - self._shown)
            self._shown = documents


def _rate(count: int, seconds: float) -> str:
    return f"{seconds:.2f}s ({count / max(seconds, 1e-6):,.0f} documents/s)"


def _find_index(sched: Any, name: str) -> Any:
    index = sched.index(name)
    if index is None:
        raise click.ClickException(f"index `{name}` not found in {sched.db_path}")
    return index


# -- commands -----------------------------------------------------------------------------------------


@click.command("clear-task-queue")
@click.pass_context
def clear_task_queue(ctx: click.Context) -> None:
    """Empty the task queue: tasks, batches and the payloads of pending tasks."""
    from hanzo_engine.engine.storage.keys import KEY_APPLIED_BATCH

    with _locked(ctx, "clear-task-queue") as db_path, _scheduler(db_path) as sched:
        store = sched.store
        _say("Deleting tasks from the database...")
        with store.env.begin(write=True) as txn:
            tasks = int(txn.stat(store.db_tasks)["entries"])
            batches = int(txn.stat(store.db_batches)["entries"])
            for db in (store.db_tasks, store.db_bitmaps, store.db_batches):
                txn.drop(db, delete=False)
        # Batch uids restart after the last batch left: markers naming an old batch must go too.
        for _uid, index in sched.indexes():
            with index.env.begin(write=True) as txn:
                txn.delete(KEY_APPLIED_BATCH, db=index.db_main)
        _say(f"Successfully deleted {tasks} tasks and {batches} batches from the tasks database!")
        count = 0
        for path in sched.update_files.iterdir():
            path.unlink()
            count += 1
        _say(f"Successfully deleted {count} content files from disk!")


@click.command("export-a-dump")
@click.option(
    "--dump-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("dumps/"),
    show_default=True,
    help="Directory where the dump is written.",
)
@click.option(
    "--skip-enqueued-tasks", is_flag=True, help="Leave the enqueued tasks (and their payloads) out."
)
@click.pass_context
def export_a_dump(ctx: click.Context, dump_dir: Path, skip_enqueued_tasks: bool) -> None:
    """Write a dump (Meilisearch's v6 format) of the whole database."""
    from hanzo_engine.scheduler.backups import export_dump, key_lines, read_instance_uid

    with _locked(ctx, "export-a-dump") as db_path, _scheduler(db_path) as sched, _key_store(db_path) as keys:
        lines = key_lines(keys.keys.values())
        progress = _BarProgress()
        try:
            stats = export_dump(
                sched,
                dump_dir=dump_dir,
                keys=lines,
                instance_uid=read_instance_uid(db_path),
                skip_enqueued=skip_enqueued_tasks,
                progress=progress,
            )
        finally:
            progress.close()
    _say(
        f"Successfully dumped {stats.keys} keys, {stats.tasks} tasks ({stats.update_files} with their documents), "
        f"{stats.batches} batches, {stats.indexes} indexes and {stats.documents} documents in {stats.seconds:.2f}s"
    )
    _say(f"Dump exported at path {stats.path}")


@click.command("export-documents")
@click.option("--index-name", required=True, help="The index to export.")
@click.option("--ignore-vectors", is_flag=True, help="Leave the `_vectors` field out of the documents.")
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Number of documents to skip.")
@click.pass_context
def export_documents(ctx: click.Context, index_name: str, ignore_vectors: bool, offset: int) -> None:
    """Print the documents of an index as NDJSON on stdout."""
    out: IO[bytes] = sys.stdout.buffer
    started = time.monotonic()
    with _locked(ctx, "export-documents") as db_path, _scheduler(db_path) as sched:
        index = _find_index(sched, index_name)
        with index.env.begin() as txn, txn.cursor(db=index.db_documents) as cursor:
            total = int(txn.stat(index.db_documents)["entries"])
            if offset:
                _say(f"Skipping {offset} documents")
            exported = 0
            with click.progressbar(
                length=max(total - offset, 0), label=f"exporting `{index_name}`", file=sys.stderr
            ) as bar:
                for n, raw in enumerate(cursor.iternext(keys=False, values=True)):
                    if n < offset:
                        continue
                    if ignore_vectors:
                        document = _decode(raw)
                        if isinstance(document, dict) and "_vectors" in document:
                            del document["_vectors"]
                            raw = _encode(document)
                    out.write(raw)
                    out.write(b"\n")
                    exported += 1
                    if exported % 1024 == 0:
                        bar.update(1024)
                bar.update(exported % 1024)
        out.flush()
    _say(f"Exported {exported} documents of `{index_name}` in {_rate(exported, time.monotonic() - started)}")


@click.command("index-compaction")
@click.argument("index_name")
@click.pass_context
def index_compaction(ctx: click.Context, index_name: str) -> None:
    """Replace an index's data file by a compacted copy (reclaims the space of deleted documents).

    Needs free disk space for the copy (at most the index's size).
    """
    from hanzo_engine.dump.snapshot import compact_env_file

    with _locked(ctx, "index-compaction") as db_path:
        with _scheduler(db_path) as sched:
            index = _find_index(sched, index_name)
            data = index.path / "data.mdb"
            copy = index.path / "data.mdb.cpy"
            before = index.file_size()
            _say(f"Compacting the index `{index_name}`...")
            started = time.monotonic()
            after = _compact_with_bar(index.env, copy, before, compact_env_file)
        # every environment is closed now: the file can be swapped
        os.replace(copy, data)
    ratio = before / max(after, 1)
    click.echo(json.dumps({"index": index_name, "sizeBefore": before, "sizeAfter": after}))
    _say(f"Compaction successful. Took around {time.monotonic() - started:.2f}s")
    _say(f"The index went from {before} bytes to {after} bytes ({ratio:.2f}x reduction)")


def _compact_with_bar(env: Any, copy: Path, before: int, compact: Any) -> int:
    """Run `compact(env, copy)` in a thread while a bar follows the size of the copy being written
    (the original's size is the bar's length)."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["size"] = compact(env, copy)
        except BaseException as exc:  # re-raised in the calling thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="index-compaction", daemon=True)
    in_progress = copy.with_name(copy.name + ".tmp")
    shown = 0
    with click.progressbar(length=max(before, 1), label="writing the compacted copy", file=sys.stderr) as bar:
        worker.start()
        try:
            while worker.is_alive():
                worker.join(0.2)
                with contextlib.suppress(OSError):
                    written = min(in_progress.stat().st_size, before)
                    if written > shown:
                        bar.update(written - shown)
                        shown = written
        except (
            BaseException
        ):  # Ctrl-C: the copy is let finish (the environments close after it), then dropped
            worker.join()
            copy.unlink(missing_ok=True)
            raise
        if "error" not in outcome:
            bar.update(max(before - shown, 0))
    if "error" in outcome:
        copy.unlink(missing_ok=True)
        raise outcome["error"]
    size: int = outcome["size"]
    return size


@click.command("list-indexes")
@click.pass_context
def list_indexes(ctx: click.Context) -> None:
    """One JSON object per index: uid, primary key, documents, dates, data file size."""
    from hanzo_engine.apitypes.tasks import format_timestamp

    with _locked(ctx, "list-indexes") as db_path, _scheduler(db_path) as sched:
        for uid, index in sched.indexes():
            with index.read() as r:
                click.echo(
                    json.dumps(
                        {
                            "uid": uid,
                            "primaryKey": r.primary_key,
                            "numberOfDocuments": r.number_of_documents(),
                            "createdAt": format_timestamp(r.created_at),
                            "updatedAt": format_timestamp(r.updated_at),
                            "databaseSize": index.file_size(),
                        }
                    )
                )


@click.command("list-keys")
@click.option(
    "--master-key",
    default=None,
    envvar="MEILI_MASTER_KEY",
    help="Also print each key's value, derived from this master key.",
)
@click.pass_context
def list_keys(ctx: click.Context, master_key: str | None) -> None:
    """One JSON object per API key, most recently created first."""
    with _locked(ctx, "list-keys") as db_path, _key_store(db_path) as store:
        for key in store.list():
            if master_key is not None:
                view = key.view(master_key)
            else:
                view = key.view("")
                del view["key"]
            click.echo(json.dumps(view))


def _chunks(path: Path, chunk_bytes: int) -> Iterator[bytes]:
    """The file in pieces of about `chunk_bytes`, cut after a newline (NDJSON documents stay whole)."""
    with open(path, "rb") as f:
        while True:
            data = f.read(chunk_bytes)
            if not data:
                return
            rest = f.readline() if not data.endswith(b"\n") else b""
            yield data + rest


@click.command("import-documents")
@click.option(
    "--index-name", required=True, help="The index to load the documents into (created if missing)."
)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "ndjson", "csv"]),
    default=None,
    help="Payload format (default: from the file extension).",
)
@click.option("--primary-key", default=None, help="Primary key of the documents (inferred when absent).")
@click.option("--csv-delimiter", default=None, help="CSV field delimiter (one ASCII character).")
@click.option(
    "--update", is_flag=True, help="Update existing documents field by field instead of replacing them."
)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=1),
    default=IMPORT_CHUNK_MB,
    show_default=True,
    help="NDJSON files are cut into tasks of about this many megabytes.",
)
@click.pass_context
def import_documents(
    ctx: click.Context,
    index_name: str,
    file: Path,
    fmt: str | None,
    primary_key: str | None,
    csv_delimiter: str | None,
    update: bool,
    chunk_size: int,
) -> None:
    """Load a JSON, NDJSON or CSV file into an index through the task pipeline."""
    from hanzo_engine.apitypes.errors import MeiliError
    from hanzo_engine.apitypes.index_uid import validate_index_uid
    from hanzo_engine.engine.documents.payload import PayloadFormat, convert_to_ndjson, payload_format

    content_types = {"json": "application/json", "ndjson": "application/x-ndjson", "csv": "text/csv"}
    if fmt is None:
        suffix = file.suffix.lower().lstrip(".")
        fmt = {"jsonl": "ndjson", "ndjson": "ndjson", "json": "json", "csv": "csv"}.get(suffix)
        if fmt is None:
            raise click.UsageError(f"cannot tell the format of `{file.name}`: pass --format json|ndjson|csv")
    try:
        uid = validate_index_uid(index_name)
        payload, delimiter = payload_format(content_types[fmt], csv_delimiter)
    except MeiliError as err:
        raise click.ClickException(err.message) from None
    size = file.stat().st_size
    started = time.monotonic()
    with _locked(ctx, "import-documents") as db_path, _scheduler(db_path, max_batched_tasks=1) as sched:
        sched.recover()
        pieces = (
            _chunks(file, chunk_size << 20) if payload is PayloadFormat.NDJSON else iter([file.read_bytes()])
        )
        task_uids: list[int] = []
        received = 0
        with click.progressbar(length=size, label=f"reading {file.name}", file=sys.stderr) as bar:
            for piece in pieces:
                file_uuid, path = sched.new_update_file()
                try:
                    with open(path, "wb") as out:
                        count = convert_to_ndjson(piece, payload, out, delimiter)
                        out.flush()
                        os.fsync(out.fileno())
                except MeiliError as err:
                    path.unlink(missing_ok=True)
                    raise click.ClickException(f"{file}: {err.message}") from None
                kind = {
                    "method": "update" if update else "replace",
                    "primaryKey": primary_key,
                    "contentFile": file_uuid,
                    "contentSize": path.stat().st_size,
                    "documentsCount": count,
                    "allowIndexCreation": True,
                    "skipCreation": False,
                }
                task = sched.register(
                    "documentAdditionOrUpdate",
                    uid,
                    details={"receivedDocuments": count, "indexedDocuments": None},
                    kind=kind,
                )
                task_uids.append(task["taskUid"])
                received += count
                bar.update(len(piece))
        _say(f"{received} documents in {len(task_uids)} tasks; indexing...")
        outcome = _run_tasks(sched, task_uids, received, index_name)
    failures = [t for t in outcome if t["status"] != "succeeded"]
    indexed = sum((t.get("details") or {}).get("indexedDocuments") or 0 for t in outcome)
    _say(
        f"{indexed} documents indexed into `{index_name}` ({len(outcome) - len(failures)} of {len(outcome)} "
        f"tasks succeeded) in {_rate(indexed, time.monotonic() - started)}"
    )
    if failures:
        for t in failures:
            _say(f"task {t['uid']} {t['status']}: {(t.get('error') or {}).get('message')}")
        raise SystemExit(1)


def _run_tasks(sched: Any, task_uids: list[int], total: int, index_name: str) -> list[dict[str, Any]]:
    """Process the queue until `task_uids` are finished, drawing the indexed documents (within a task
    too, from the scheduler's progress)."""
    pending = set(task_uids)
    own_progress = sched.progress
    with click.progressbar(
        length=max(total, 1), label=f"indexing into `{index_name}`", file=sys.stderr
    ) as bar:
        drawn = _IndexingProgress(bar)
        sched.progress = drawn
        try:
            while pending and sched.tick():
                for uid in sorted(pending):
                    task = sched.store.get_task(uid)
                    if task is not None and task["status"] in ("succeeded", "failed", "canceled"):
                        pending.discard(uid)
                        drawn.base += int(task["kind"].get("documentsCount") or 0)
                        drawn.show(drawn.base)
        finally:
            sched.progress = own_progress
    return [t for t in (sched.get_task(uid) for uid in task_uids) if t is not None]


@click.command("upgrade")
@click.pass_context
def upgrade(ctx: click.Context) -> None:
    """Upgrade the database's on-disk format in place, when upgrade steps exist for it."""
    from hanzo_engine.engine.storage.datadir import (
        FORMAT_VERSION,
        DataDirError,
        DataDirLock,
        check_version,
        read_version,
    )

    db_path = _db_path(ctx)
    try:
        lock = DataDirLock(db_path, "`hanzo-engine admin upgrade`").acquire()
    except DataDirError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        before = read_version(db_path)
        check_version(db_path, upgrade=True)
    except DataDirError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        lock.release()
    if before == FORMAT_VERSION:
        _say(f"The database is already at format {FORMAT_VERSION}: nothing to do.")
    else:
        _say(f"The database was upgraded from format {before} to {FORMAT_VERSION}.")


COMMANDS: Final = (
    clear_task_queue,
    export_a_dump,
    export_documents,
    index_compaction,
    list_indexes,
    list_keys,
    import_documents,
    upgrade,
)


def register(group: click.Group) -> None:
    for command in COMMANDS:
        group.add_command(command)
