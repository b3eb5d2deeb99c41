"""What happens to the data directory before the server serves: lock, restore, format version, dump import.

`prepare(options)` runs first in `create_app`, before any environment is opened:

1. **Lock.** `<db>/hanzo-engine.lock` is `flock`ed exclusively for the life of the process and holds the
   holder's pid. A second server, or an admin command (`hanzo-engine admin ...`, which takes the same
   lock), refuses to touch a directory someone holds. The kernel drops the lock when its process dies,
   so a `kill -9` never leaves a stale lock behind.
2. **Snapshot or dump**, with Meilisearch's rules (the database is "empty" when the directory is
   missing or has no entry): `--import-snapshot` unpacks the snapshot as the database;
   `--import-dump` is loaded once the scheduler and the keys store are open (`Startup.attach`). Either
   fails when a database exists, unless `--ignore-*-if-db-exists`, and when the file is missing, unless
   `--ignore-missing-*`. A failed import removes the half-built database, as Meilisearch does.
3. **Format version.** `<db>/VERSION` holds `hanzo-engine-db <n>`, written when the database is created.
   A different format refuses to start with a clear error (a Meilisearch data directory, which holds
   `X.Y.Z`, is recognized and pointed to dumps); an older format is upgraded only by the registered
   upgrade steps with `--upgrade-db` (there are none yet: format 1 is the first). A directory written
   by hanzo-engine before VERSION files existed (a `tasks` env but no VERSION) is adopted as format 1.
4. **Instance uid.** `<db>/instance-uid`, a UUID, created once; dumps carry it.

`Startup.start`/`stop` run in the app's lifespan: the `--schedule-snapshot` timer (a thread that
registers a `snapshotCreation` task every interval) and the release of the lock.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .options import ConfigError, Options

if TYPE_CHECKING:
    from hanzo_engine.auth import KeyStore
    from hanzo_engine.scheduler.scheduler import Scheduler

log = logging.getLogger("hanzo_engine.startup")

FORMAT_NAME: Final = "hanzo-engine-db"
FORMAT_VERSION: Final = 1
VERSION_FILE: Final = "VERSION"
LOCK_FILE: Final = "hanzo-engine.lock"
INSTANCE_UID_FILE: Final = "instance-uid"
# format n -> the step upgrading a database from format n to n + 1, in place
UPGRADES: Final[dict[int, Callable[[Path], None]]] = {}

_HANZO_VERSION = re.compile(rf"{FORMAT_NAME} (\d+)")
_MEILI_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


class StartupError(ConfigError):
    """The data directory cannot be used as asked (exits like a configuration error)."""


class DataDirLocked(StartupError):
    """Another process holds the data directory."""


# -- lock ---------------------------------------------------------------------------------------------


class DataDirLock:
    """An exclusive `flock` on `<db>/hanzo-engine.lock`, whose content names the holder."""

    def __init__(self, db_path: Path, owner: str) -> None:
        self.path = db_path / LOCK_FILE
        self.owner = owner
        self._fd: int | None = None

    def acquire(self) -> DataDirLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise DataDirLocked(
                f"the data directory {self.path.parent} is in use by {holder}; stop it before using the "
                "directory (or choose another --db-path)"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{self.owner} (pid {os.getpid()})\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


# -- format version -------------------------------------------------------------------------------------


def is_empty_db(db_path: Path) -> bool:
    """Meilisearch's `is_empty_db`: a missing directory, or one without any entry."""
    if not db_path.exists():
        return True
    try:
        return not any(db_path.iterdir())
    except NotADirectoryError:
        return False


def write_version(db_path: Path, version: int = FORMAT_VERSION) -> None:
    tmp = db_path / f".{VERSION_FILE}.tmp"
    tmp.write_text(f"{FORMAT_NAME} {version}\n")
    os.replace(tmp, db_path / VERSION_FILE)


def read_version(db_path: Path) -> int | None:
    """The format version of `db_path`, None when it has no VERSION file; StartupError when the file
    is not hanzo-engine's."""
    try:
        text = (db_path / VERSION_FILE).read_text(errors="replace").strip()
    except FileNotFoundError:
        return None
    match = _HANZO_VERSION.fullmatch(text)
    if match is not None:
        return int(match.group(1))
    if _MEILI_VERSION.fullmatch(text):
        raise StartupError(
            f"The database at {db_path} was created by Meilisearch v{text}: hanzo-engine cannot open "
            "Meilisearch's on-disk format. Create a dump with Meilisearch (`POST /dumps`) and start "
            "hanzo-engine with `--import-dump <file>` on an empty --db-path."
        )
    raise StartupError(
        f"Version file is corrupted and thus hanzo-engine is unable to determine the version of the "
        f"database at {db_path}. Expected `{FORMAT_NAME} <n>`, found `{text}`."
    )


def check_version(db_path: Path, *, upgrade: bool = False) -> int:
    """Refuse a database of another format (see the module docstring); returns the format version.

    A database without VERSION file is given one: it is new, or it predates VERSION files (format 1).
    """
    version = read_version(db_path)
    if version is None:
        if (db_path / "tasks" / "data.mdb").exists():
            log.info("the database at %s has no VERSION file: adopting it as format %d", db_path, FORMAT_VERSION)
        write_version(db_path)
        return FORMAT_VERSION
    if version > FORMAT_VERSION:
        raise StartupError(
            f"Database format version {version} is higher than the format of this hanzo-engine "
            f"({FORMAT_VERSION}). Downgrade is not supported: use the hanzo-engine that wrote the database, "
            "or create a dump with it and import the dump here with `--import-dump`."
        )
    if version < FORMAT_VERSION:
        missing = [v for v in range(version, FORMAT_VERSION) if v not in UPGRADES]
        if not upgrade or missing:
            how = ("Start with `--upgrade-db` to upgrade it in place (make a snapshot first)." if not missing else
                   "No in-place upgrade exists from this format: create a dump with the hanzo-engine that wrote "
                   "the database and import it here with `--import-dump`.")
            raise StartupError(
                f"Your database format version ({version}) is incompatible with this hanzo-engine "
                f"(format {FORMAT_VERSION}). {how}"
            )
        for step in range(version, FORMAT_VERSION):
            log.info("upgrading the database at %s from format %d to %d", db_path, step, step + 1)
            UPGRADES[step](db_path)
            write_version(db_path, step + 1)
    return FORMAT_VERSION


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
    lock = DataDirLock(db_path, "a hanzo-engine server").acquire()
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
        check_version(db_path, upgrade=options.upgrade_db)
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
