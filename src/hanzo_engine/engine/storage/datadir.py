"""The data directory around the environments: its format version and its lock.

- **Lock.** `<db>/hanzo-engine.lock` is `flock`ed exclusively for the life of the process and holds the
  holder's name and pid. A second server, or an admin command (`hanzo-engine admin ...`, which takes
  the same lock), refuses to touch a directory someone holds. The kernel drops the lock when its
  process dies, so a `kill -9` never leaves a stale lock behind.
- **Format version.** `<db>/VERSION` holds `hanzo-engine-db <n>`, written when the database is created.
  A different format is refused with a clear error (a Meilisearch data directory, which holds `X.Y.Z`,
  is recognized and pointed to dumps); an older format is upgraded only by the registered upgrade
  steps (`UPGRADES`, none yet: format 1 is the first), and only when asked. A directory written before
  VERSION files existed (a `tasks` env but no VERSION) is adopted as format 1.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Final

log = logging.getLogger("hanzo_engine.startup")

FORMAT_NAME: Final = "hanzo-engine-db"
FORMAT_VERSION: Final = 1
VERSION_FILE: Final = "VERSION"
LOCK_FILE: Final = "hanzo-engine.lock"
# format n -> the step upgrading a database from format n to n + 1, in place
UPGRADES: Final[dict[int, Callable[[Path], None]]] = {}

_HANZO_VERSION = re.compile(rf"{FORMAT_NAME} (\d+)")
_MEILI_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


class DataDirError(ValueError):
    """The data directory cannot be used as asked; the message says why and what to do."""


class DataDirLocked(DataDirError):
    """Another process holds the data directory."""


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


def write_version(db_path: Path, version: int = FORMAT_VERSION) -> None:
    tmp = db_path / f".{VERSION_FILE}.tmp"
    tmp.write_text(f"{FORMAT_NAME} {version}\n")
    os.replace(tmp, db_path / VERSION_FILE)


def read_version(db_path: Path) -> int | None:
    """The format version of `db_path`, None when it has no VERSION file; DataDirError when the file
    is not hanzo-engine's."""
    try:
        text = (db_path / VERSION_FILE).read_text(errors="replace").strip()
    except FileNotFoundError:
        return None
    match = _HANZO_VERSION.fullmatch(text)
    if match is not None:
        return int(match.group(1))
    if _MEILI_VERSION.fullmatch(text):
        raise DataDirError(
            f"The database at {db_path} was created by Meilisearch v{text}: hanzo-engine cannot open "
            "Meilisearch's on-disk format. Create a dump with Meilisearch (`POST /dumps`) and start "
            "hanzo-engine with `--import-dump <file>` on an empty --db-path."
        )
    raise DataDirError(
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
            log.info(
                "the database at %s has no VERSION file: adopting it as format %d", db_path, FORMAT_VERSION
            )
        write_version(db_path)
        return FORMAT_VERSION
    if version > FORMAT_VERSION:
        raise DataDirError(
            f"Database format version {version} is higher than the format of this hanzo-engine "
            f"({FORMAT_VERSION}). Downgrade is not supported: use the hanzo-engine that wrote the database, "
            "or create a dump with it and import the dump here with `--import-dump`."
        )
    if version < FORMAT_VERSION:
        missing = [v for v in range(version, FORMAT_VERSION) if v not in UPGRADES]
        if not upgrade or missing:
            how = (
                "Start with `--upgrade-db` to upgrade it in place (make a snapshot first)."
                if not missing
                else "No in-place upgrade exists from this format: create a dump with the hanzo-engine that wrote "
                "the database and import it here with `--import-dump`."
            )
            raise DataDirError(
                f"Your database format version ({version}) is incompatible with this hanzo-engine "
                f"(format {FORMAT_VERSION}). {how}"
            )
        for step in range(version, FORMAT_VERSION):
            log.info("upgrading the database at %s from format %d to %d", db_path, step, step + 1)
            UPGRADES[step](db_path)
            write_version(db_path, step + 1)
    return FORMAT_VERSION
