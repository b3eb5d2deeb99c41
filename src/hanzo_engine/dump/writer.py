"""Streaming writer of `.dump` files (Meilisearch's dump v6 layout, a gzip-compressed tar).

Layout written (paths inside the archive; `dump.format` names them):

    metadata.json                       {"dumpVersion": "V6", "dbVersion", "dumpDate"}
    instance_uid.uuid                   hyphenated UUID, when the instance has one
    keys.jsonl                          one API key per line
    experimental-features.json          the runtime feature map
    webhooks.json                       {"webhooks": {uuid: {"url", "headers"}}}, the API webhooks
    tasks/queue.jsonl                   one TaskDump per line
    tasks/update_files/<uid>.jsonl      NDJSON payload of each still-enqueued document task
    batches/queue.jsonl                 one Batch per line
    indexes/<uid>/metadata.json         {"uid", "primaryKey", "createdAt", "updatedAt"}
    indexes/<uid>/settings.json         the full settings object
    indexes/<uid>/documents.jsonl       one document per line

Streaming: Meilisearch builds the dump in a temporary directory and tars it afterwards; this writer
appends each member to the compressed archive as it is produced, so neither memory nor a second copy
on disk ever holds the whole dump. A tar header carries the member's size before its bytes, so:

- documents are written with `add_stream(name, size, chunks)`: the caller knows the size beforehand
  (the engine sums the stored documents' lengths in the same read transaction, then streams them);
- members of unknown size (task and batch queues) are spooled (`add_lines`): kept in memory up to
  `SPOOL_MEMORY` bytes, then in an anonymous temporary file, and copied into the archive once complete;
- payload files already on disk are copied with `add_file`.

The archive is written to `<final name>.tmp` and renamed into place by `finish`, so a crash or an
abort never leaves a truncated `.dump` behind.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Final

import msgspec

from .format import (
    EXPERIMENTAL_FEATURES,
    INDEXES_DIR,
    INSTANCE_UID,
    KEYS,
    METADATA,
    UPDATE_FILES_DIR,
    dump_metadata,
    index_member,
    update_file_member,
)

# Queues bigger than this are spooled to a temporary file instead of memory.
SPOOL_MEMORY: Final = 16 << 20
# flate2's `Compression::default()`, what Meilisearch uses; Python's gzip default (9) is far slower.
COMPRESS_LEVEL: Final = 6
_COPY_CHUNK: Final = 1 << 20

_encode = msgspec.json.Encoder().encode


class _ChunkReader(io.RawIOBase):
    """A read-only file over an iterator of byte chunks (what `TarFile.addfile` copies from)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._buffer = b""
        self.produced = 0

    def readable(self) -> bool:
        return True

    def readinto(self, out: Any) -> int:
        """Fill `out` completely unless the chunks run out (tarfile treats a short read as the end)."""
        view = memoryview(out).cast("B")
        filled = 0
        while filled < len(view):
            if not self._buffer:
                try:
                    self._buffer = next(self._chunks)
                except StopIteration:
                    break
                continue
            n = min(len(view) - filled, len(self._buffer))
            view[filled : filled + n] = self._buffer[:n]
            self._buffer = self._buffer[n:]
            filled += n
        self.produced += filled
        return filled


class DumpWriter:
    """Appends the members of a v6 dump to `<path>.tmp`; `finish()` renames it to `path`.

    Use as a context manager: leaving the block with an exception removes the partial file.
    """

    def __init__(self, path: Path, *, instance_uid: str | None, db_version: str, dump_date_ns: int) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp_path = path.with_name(path.name + ".tmp")
        self._raw: IO[bytes] = open(self._tmp_path, "wb")
        self._gz = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=COMPRESS_LEVEL, mtime=0)
        # GNU long names, which every tar reader (tar-rs included) understands
        self._tar = tarfile.open(fileobj=self._gz, mode="w|", format=tarfile.GNU_FORMAT)
        self._mtime = int(time.time())
        self._dirs: set[str] = set()
        self.bytes_in = 0  # uncompressed member bytes, for the progress logs
        self.add_bytes(METADATA, _encode(dump_metadata(db_version, dump_date_ns)))
        if instance_uid is not None:
            self.add_bytes(INSTANCE_UID, instance_uid.encode())
        # Meilisearch's reader lists `indexes/` unconditionally: it must exist even with no index
        self._parents(f"{INDEXES_DIR}/")
        self._parents(f"{UPDATE_FILES_DIR}/")

    def __enter__(self) -> DumpWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()

    # -- members ----------------------------------------------------------------------------------

    def _info(self, name: str, size: int, *, directory: bool = False) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.size = 0 if directory else size
        info.mtime = self._mtime
        info.mode = 0o755 if directory else 0o644
        info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
        return info

    def _parents(self, name: str) -> None:
        # Directory entries first, as `tar` and Meilisearch's `append_dir_all` write them.
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            directory = "/".join(parts[:i])
            if directory not in self._dirs:
                self._dirs.add(directory)
                self._tar.addfile(self._info(directory, 0, directory=True))

    def add_bytes(self, name: str, data: bytes) -> None:
        self._parents(name)
        self._tar.addfile(self._info(name, len(data)), io.BytesIO(data))
        self.bytes_in += len(data)

    def add_stream(self, name: str, size: int, chunks: Iterable[bytes]) -> None:
        """Append a member of known `size` from `chunks`; ValueError if they do not add up to it."""
        self._parents(name)
        reader = _ChunkReader(chunks)
        self._tar.addfile(self._info(name, size), reader)
        if reader.produced != size or reader.read(1):
            raise ValueError(f"`{name}`: expected {size} bytes, the source changed while it was read")
        self.bytes_in += size

    def add_file(self, name: str, source: Path) -> None:
        with open(source, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.add_stream(name, size, iter(lambda: f.read(_COPY_CHUNK), b""))

    def add_lines(self, name: str, values: Iterable[Any]) -> int:
        """Append one JSON value per line; returns how many. The member is spooled (size unknown)."""
        count = 0
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY) as spool:
            for value in values:
                spool.write(_encode(value))
                spool.write(b"\n")
                count += 1
            size = spool.tell()
            spool.seek(0)
            self.add_stream(name, size, iter(lambda: spool.read(_COPY_CHUNK), b""))
        return count

    def add_json(self, name: str, value: Any) -> None:
        self.add_bytes(name, _encode(value))

    # -- v6 members by role -------------------------------------------------------------------------

    def write_keys(self, keys: Iterable[dict[str, Any]]) -> int:
        return self.add_lines(KEYS, keys)

    def write_features(self, features: dict[str, Any]) -> None:
        self.add_json(EXPERIMENTAL_FEATURES, features)

    def write_update_file(self, task_uid: int, source: Path) -> None:
        self.add_file(update_file_member(task_uid), source)

    def write_index(
        self,
        uid: str,
        metadata: dict[str, Any],
        settings: dict[str, Any],
        documents_size: int,
        documents: Iterable[bytes],
    ) -> None:
        """One index: `documents` yields NDJSON bytes (one document and its newline per chunk or more)
        adding up to `documents_size`."""
        self.add_json(index_member(uid, "metadata.json"), metadata)
        self.add_json(index_member(uid, "settings.json"), settings)
        self.add_stream(index_member(uid, "documents.jsonl"), documents_size, documents)

    # -- end ----------------------------------------------------------------------------------------

    def finish(self) -> Path:
        """Close the archive, make it durable and move it to its final name."""
        self._tar.close()
        self._gz.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()
        os.replace(self._tmp_path, self.path)
        _fsync_dir(self.path.parent)
        return self.path

    def abort(self) -> None:
        for closeable in (self._tar, self._gz, self._raw):
            try:
                closeable.close()
            except Exception:  # a half-written stream may refuse to close cleanly; the file goes anyway
                pass
        self._tmp_path.unlink(missing_ok=True)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
