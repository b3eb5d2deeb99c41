"""Reader of `.dump` files (Meilisearch's dump v6 layout), as Meilisearch's `V6Reader`.

The archive is unpacked once into a temporary directory (next to the database, so nothing crosses
devices), with tarfile's `data` filter: no absolute paths, no links or devices, nothing outside the
directory. Every member is then read from disk lazily: documents and update files are iterated line by
line, so a dump of any size is imported in constant memory.

Tolerated, as Meilisearch does: a missing `instance_uid.uuid`, `experimental-features.json` or
`batches/queue.jsonl`, `webhooks.json` (older v6 dumps), member names written as `./name`, extra files. Dumps older than
V6 are refused with a message telling how to convert them.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from .format import (
    BATCHES_QUEUE,
    EXPERIMENTAL_FEATURES,
    INDEXES_DIR,
    INSTANCE_UID,
    KEYS,
    METADATA,
    NETWORK,
    TASKS_QUEUE,
    UPDATE_FILES_DIR,
    WEBHOOKS,
    DumpFormatError,
    check_metadata,
    parse_index_metadata,
    parse_instance_uid,
)

_decode = msgspec.json.decode


def _lines(path: Path) -> Iterator[bytes]:
    """Non-blank lines of a JSON-lines file, read incrementally."""
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                yield line


def _json_lines(path: Path, what: str) -> Iterator[Any]:
    for number, line in enumerate(_lines(path), start=1):
        try:
            yield _decode(line)
        except msgspec.DecodeError as exc:
            raise DumpFormatError(f"{what}, line {number}: {exc}") from None


@dataclass
class IndexDump:
    """One `indexes/<uid>/` directory of a dump."""

    directory: Path
    uid: str
    primary_key: str | None
    created_at: int
    updated_at: int

    def settings(self) -> dict[str, Any]:
        value = _decode((self.directory / "settings.json").read_bytes())
        if not isinstance(value, dict):
            raise DumpFormatError(f"index `{self.uid}`: settings.json is not an object")
        return value

    def document_lines(self) -> Iterator[bytes]:
        """The raw NDJSON lines of `documents.jsonl` (decode them as they are indexed)."""
        path = self.directory / "documents.jsonl"
        return _lines(path) if path.exists() else iter(())

    def documents_size(self) -> int:
        path = self.directory / "documents.jsonl"
        return path.stat().st_size if path.exists() else 0


class DumpReader:
    """An unpacked dump. Use as a context manager (the temporary directory is removed on exit)."""

    def __init__(self, dump_path: Path, *, workdir: Path | None = None) -> None:
        self.dump_path = dump_path
        self._tmp = Path(tempfile.mkdtemp(prefix=".dump-import-", dir=workdir))
        try:
            self._unpack()
            self.root = self._tmp
            self.metadata = check_metadata(self._read_json(METADATA, required=True))
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> DumpReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)

    def _unpack(self) -> None:
        try:
            # stream mode: one sequential pass over the compressed file, members written as they come
            with tarfile.open(self.dump_path, mode="r|*") as archive:
                archive.extractall(self._tmp, filter="data")
        except (tarfile.TarError, EOFError, OSError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise DumpFormatError(f"`{self.dump_path}` is not a readable dump archive: {exc}") from None

    def _read_json(self, name: str, *, required: bool = False) -> Any:
        path = self._tmp / name
        if not path.exists():
            if required:
                raise DumpFormatError(f"the dump has no `{name}`")
            return None
        try:
            return _decode(path.read_bytes())
        except msgspec.DecodeError as exc:
            raise DumpFormatError(f"`{name}`: {exc}") from None

    # -- top-level members --------------------------------------------------------------------------

    @property
    def version(self) -> str:
        return str(self.metadata["dumpVersion"])

    @property
    def db_version(self) -> str:
        return str(self.metadata.get("dbVersion", ""))

    @property
    def dump_date(self) -> str | None:
        date = self.metadata.get("dumpDate")
        return None if date is None else str(date)

    def instance_uid(self) -> str | None:
        path = self._tmp / INSTANCE_UID
        return parse_instance_uid(path.read_text(errors="replace")) if path.exists() else None

    def features(self) -> dict[str, Any] | None:
        value = self._read_json(EXPERIMENTAL_FEATURES)
        return value if isinstance(value, dict) else None

    def webhooks(self) -> dict[str, Any] | None:
        """`webhooks.json` (`{"webhooks": {uuid: {"url", "headers"}}}`), absent from older dumps."""
        value = self._read_json(WEBHOOKS)
        return value if isinstance(value, dict) else None

    def network(self) -> dict[str, Any] | None:
        """`network.json` (the `/network` topology), absent from dumps of instances without one."""
        value = self._read_json(NETWORK)
        return value if isinstance(value, dict) else None

    def keys(self) -> Iterator[dict[str, Any]]:
        path = self._tmp / KEYS
        return _json_lines(path, KEYS) if path.exists() else iter(())

    def batches(self) -> Iterator[dict[str, Any]]:
        path = self._tmp / BATCHES_QUEUE
        return _json_lines(path, BATCHES_QUEUE) if path.exists() else iter(())

    def tasks(self) -> Iterator[tuple[dict[str, Any], Path | None]]:
        """Each TaskDump line with the path of its payload (`tasks/update_files/<uid>.jsonl`) if any."""
        path = self._tmp / TASKS_QUEUE
        if not path.exists():
            return
        for task in _json_lines(path, TASKS_QUEUE):
            if not isinstance(task, dict) or "uid" not in task:
                raise DumpFormatError(f"{TASKS_QUEUE}: a line is not a task")
            payload = self._tmp / UPDATE_FILES_DIR / f"{task['uid']}.jsonl"
            yield task, payload if payload.exists() else None

    def indexes(self) -> Iterator[IndexDump]:
        """The dumped indexes, in uid order (the archive order is not meaningful)."""
        base = self._tmp / INDEXES_DIR
        if not base.is_dir():
            return
        for directory in sorted(p for p in base.iterdir() if p.is_dir()):
            metadata = _decode((directory / "metadata.json").read_bytes())
            uid, primary_key, created_at, updated_at = parse_index_metadata(metadata)
            yield IndexDump(directory, uid, primary_key, created_at, updated_at)
