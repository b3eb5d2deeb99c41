"""What happens to the data directory before the server serves: lock, restore, format version, dump import.

`prepare(options)` runs first in `create_app`, before any environment is opened:

1. **Lock.** The data directory's lock (`engine/storage/datadir.py`) is taken for the life of the
   process: a second server, or an admin command, refuses to touch a directory someone holds.
2. **Snapshot or dump**, with Meilisearch's rules (the database is "empty" when the directory is
   missing or has no entry): `--import-snapshot` unpacks the snapshot as the database;
   `--import-dump` is loaded once the scheduler and the keys store are open (`Startup.attach`). Either
   fails when a database exists, unless `--ignore-*-if-db-exists`, and when the file is missing, unless
   `--ignore-missing-*`. A failed import removes the half-built database, as Meilisearch does.
3. **Format version.** `<db>/VERSION` is checked (`engine/storage/datadir.py`): another format refuses
   to start with a clear error; an older one is upgraded in place only with `--upgrade-db`.
4. **Instance uid.** `<db>/instance-uid`, a UUID, created once; dumps carry it.

`Startup.start`/`stop` run in the app's lifespan: the `--schedule-snapshot` timer (a thread that
registers a `snapshotCreation` task every interval) and the release of the lock.
"""

from __future__ import annotations

import logging
import shutil
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from hanzo_engine.engine.storage.datadir import LOCK_FILE, DataDirError, DataDirLock, check_version

from .options import ConfigError, Options

if TYPE_CHECKING:
    from hanzo_engine.auth import KeyStore
    from hanzo_engine.scheduler.scheduler import Scheduler

log = logging.getLogger("hanzo_engine.startup")

INSTANCE_UID_FILE: Final = "instance-uid"


class StartupError(ConfigError):
    """The data directory cannot be used as asked (exits like a configuration error)."""


# -- data directory ---------------------------------------------------------------------------------------


def is_empty_db(db_path: Path) -> bool:
    """Meilisearch's `is_empty_db`: a missing directory, or one without any entry."""
    if not db_path.exists():
        return True
    try:
        return not any(db_path.iterdir())
    except NotADirectoryError:
        return False


def ensure_instance_uid(db_path: Path) -> str:
    path = db_path / INSTANCE_UID_FILE
    try:
        return str(uuid.UUID(path.read_text().strip()))
    except (OSError, ValueError):
        value = str(uuid.uuid4())
        path.write_text(value)
        return value


def _canonical(path: Path) -> Path:
    try:
        return path.resolve(strict=True)
    except OSError:
        return path


def _db_exists_error(db_path: Path) -> StartupError:
    # Rust's `{:?}` of a path: quoted
    return StartupError(f'database already exists at "{_canonical(db_path)}", try to delete it or rename it')


# -- the startup sequence -------------------------------------------------------------------------------


@dataclass
class Startup:
    """What `prepare` decided; `attach`, `start` and `stop` finish the job in `create_app`."""

    options: Options
    lock: DataDirLock
    dump_to_import: Path | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _timer: threading.Thread | None = None

    def attach(self, scheduler: Scheduler, key_store: KeyStore) -> None:
        """Give the scheduler the keys env (snapshots copy it) and import the planned dump."""
        if scheduler.auth_env is None:
            scheduler.auth_env = key_store.env
        if self.dump_to_import is None:
            return
        from hanzo_engine.dump import DumpFormatError
        from hanzo_engine.scheduler.backups import DumpImportError, import_dump

        try:
            import_dump(scheduler, key_store, self.dump_to_import)
        except (DumpFormatError, DumpImportError, OSError, ValueError) as exc:
            log.error("the dump import failed: %s", exc)
            scheduler.stop()
            key_store.close()
            self.lock.release()
            shutil.rmtree(self.options.db_path, ignore_errors=True)
            raise StartupError(f"importing the dump {self.dump_to_import} failed: {exc}") from None

    def start(self, scheduler: Scheduler) -> None:
        interval = self.options.schedule_snapshot
        if interval is None or interval <= 0:
            return

        def tick() -> None:
            while not self._stop.wait(interval):
                try:
                    scheduler.register("snapshotCreation", None, details=None, kind={})
                except Exception:  # the timer must survive a failed registration (disk full...)
                    log.exception("could not register the scheduled snapshot")

        self._timer = threading.Thread(target=tick, name="hanzo-snapshot-timer", daemon=True)
        self._timer.start()
        log.info("a snapshot will be taken every %d seconds", interval)

    def stop(self) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join(timeout=5)
        self.lock.release()


def prepare(options: Options) -> Startup:
    """Lock the data directory, restore a snapshot, plan a dump import and check the format version."""
    db_path = options.db_path
    existed = db_path.exists()
    empty = is_empty_db(db_path)
    try:
        lock = DataDirLock(db_path, "a hanzo-engine server").acquire()
    except DataDirError as exc:
        raise StartupError(str(exc)) from None
    startup = Startup(options, lock)
    try:
        if options.import_snapshot is not None:
            _import_snapshot(options, db_path, empty)
        elif options.import_dump is not None:
            path = options.import_dump
            if empty and path.exists():
                startup.dump_to_import = path
            elif not empty and not options.ignore_dump_if_db_exists:
                raise _db_exists_error(db_path)
            elif not path.exists() and not options.ignore_missing_dump:
                raise StartupError(f'dump doesn\'t exist at "{path}"')
        try:
            check_version(db_path, upgrade=options.upgrade_db)
        except DataDirError as exc:
            raise StartupError(str(exc)) from None
        ensure_instance_uid(db_path)
    except BaseException:
        lock.release()
        if empty:
            # leave an empty directory as it was found (a retry must still see an empty database)
            lock.path.unlink(missing_ok=True)
            if not existed:
                shutil.rmtree(db_path, ignore_errors=True)
        raise
    return startup


def _import_snapshot(options: Options, db_path: Path, empty: bool) -> None:
    from hanzo_engine.dump.snapshot import restore_snapshot

    path = options.import_snapshot
    assert path is not None
    if empty and path.exists():
        log.info("importing the snapshot %s", path)
        try:
            restore_snapshot(path, db_path)
        except Exception as exc:
            for child in db_path.iterdir():
                if child.name != LOCK_FILE:
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
            raise StartupError(f"importing the snapshot {path} failed: {exc}") from None
    elif not empty and not options.ignore_snapshot_if_db_exists:
        raise _db_exists_error(db_path)
    elif not path.exists() and not options.ignore_missing_snapshot:
        raise StartupError(f"snapshot doesn't exist at {path}")
