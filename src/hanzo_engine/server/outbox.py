"""The leader's durable queue of forwarded writes (`sharding.Forwarder`): a write is answered `202` only
once its forward is on disk, so a restart (even `kill -9`) of the leader loses none of them.

Layout: `<db>/network-outbox/<n>.log` segments, each a sequence of records

    kind (1 byte: J job, D done) | header length (u32) | body length (u64) | crc32 of header+body (u32)
    | header (JSON) | body

A job record holds one forwarded write: task uid, method, path and query, headers, network version, the
origin name and, per target remote, its url and write key at the time and where its body is in the
record's body (remotes may get different bodies). A done record (`{"job": offset, "remote": name}`,
appended to the job's own segment) says that remote answered. Appending a job costs one `fdatasync`
(the segment file already exists, its directory entry is durable); done records are not synced: a lost
one only means the write is sent once more. A torn record at the end of a segment (a crash mid-append:
that request was never answered) is cut off when the outbox is opened.

A segment is deleted once all its jobs are done; the current one is emptied instead, and a new one is
started past `SEGMENT_BYTES`.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

log = logging.getLogger("hanzo_engine.server.outbox")

DIRECTORY: Final = "network-outbox"
SEGMENT_BYTES: Final = 64 << 20
_HEAD: Final = struct.Struct(">cIQI")
_MAX_HEADER: Final = 64 << 20


@dataclass
class Entry:
    """One remote's share of a stored job: what to send it, and where its body is."""

    task_uid: int
    method: str
    path: str
    headers: dict[str, str]
    network_version: str
    origin_name: str
    remote: dict[str, Any]  # `url` and `writeApiKey` when the write was taken
    segment: int
    job: int  # offset of the job record in its segment
    body_at: int
    body_len: int


def _segment_number(path: Path) -> int | None:
    stem, dot, ext = path.name.partition(".")
    return int(stem) if dot and ext == "log" and stem.isdigit() else None


class Outbox:
    """Append-only storage of forwards (see the module doc); thread-safe."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._pending: dict[int, int] = {}  # segment -> (job, remote) pairs not done
        self._current = 0
        self._file: Any = None
        self._size = 0

    def _path(self, segment: int) -> Path:
        return self.directory / f"{segment:08d}.log"

    def load(self) -> list[tuple[str, Entry]]:
        """The pending `(remote, entry)` pairs, in storage order; opens the outbox for appending (a node
        that never forwarded anything has no outbox directory)."""
        if not self.directory.is_dir():
            return []
        segments = sorted(n for p in self.directory.iterdir() if (n := _segment_number(p)) is not None)
        out: list[tuple[str, Entry]] = []
        with self._lock:
            for segment in segments:
                pending = self._read_segment(segment)
                if pending:
                    self._pending[segment] = len(pending)
                    out.extend(pending)
                elif segment != segments[-1]:
                    self._path(segment).unlink(missing_ok=True)
                else:
                    os.truncate(self._path(segment), 0)
            self._current = segments[-1] if segments else 0
            self._pending.setdefault(self._current, 0)
            self._open_current(new=not segments)
        return out

    def _create(self) -> None:
        """The first forward of this node: the directory and its first segment, durably."""
        self.directory.mkdir(parents=True, exist_ok=True)
        _fsync_dir(self.directory.parent)
        self._current = 0
        self._pending[0] = 0
        self._open_current(new=True)

    def _open_current(self, new: bool) -> None:
        path = self._path(self._current)
        self._file = open(path, "ab", buffering=0)  # kept open for appends
        self._size = self._file.tell()
        if new:  # the name of a new segment must survive a crash before any job in it counts as stored
            os.fsync(self._file.fileno())
            _fsync_dir(self.directory)

    def _read_segment(self, segment: int) -> list[tuple[str, Entry]]:
        path = self._path(segment)
        jobs: dict[int, dict[str, Entry]] = {}
        with open(path, "rb") as f:
            end = os.fstat(f.fileno()).st_size
            offset = 0
            while offset < end:
                record = _read_record(f, offset, end)
                if record is None:
                    log.warning("network outbox %s: cutting a torn record at byte %d", path, offset)
                    f.close()
                    os.truncate(path, offset)
                    break
                kind, header, body_at, size = record
                if kind == b"J":
                    jobs[offset] = {
                        name: _entry(header, name, target, segment, offset, body_at)
                        for name, target in header["targets"].items()
                    }
                elif kind == b"D":
                    jobs.get(header["job"], {}).pop(header["remote"], None)
                offset += size
        return [(name, entry) for targets in jobs.values() for name, entry in targets.items()]

    def append(
        self,
        task_uid: int,
        method: str,
        path: str,
        headers: dict[str, str],
        network_version: str,
        origin_name: str,
        targets: dict[str, tuple[dict[str, Any], bytes]],
    ) -> dict[str, Entry]:
        """Store one job (one `fdatasync`); its entry per remote of `targets` (`name: (remote, body)`)."""
        bodies: list[bytes] = []
        where: dict[
            int, list[int]
        ] = {}  # id(body) -> [offset, length]: a body shared by remotes is stored once
        stored: dict[str, Any] = {}
        offset = 0
        for name, (remote, body) in targets.items():
            place = where.get(id(body))
            if place is None:
                place = where[id(body)] = [offset, len(body)]
                bodies.append(body)
                offset += len(body)
            stored[name] = {"url": remote.get("url"), "writeApiKey": remote.get("writeApiKey"), "body": place}
        header = {
            "task": task_uid,
            "method": method,
            "path": path,
            "headers": headers,
            "networkVersion": network_version,
            "origin": origin_name,
            "targets": stored,
        }
        with self._lock:
            if self._file is None:
                self._create()
            if self._size >= SEGMENT_BYTES and self._pending.get(self._current):
                self._file.close()
                self._current += 1
                self._pending[self._current] = 0
                self._open_current(new=True)
            start = self._size
            raw = json.dumps(header, separators=(",", ":")).encode()
            try:
                body_at = self._write(b"J", raw, bodies)
                os.fdatasync(self._file.fileno())
            except BaseException:
                os.ftruncate(self._file.fileno(), start)
                self._size = start
                raise
            self._pending[self._current] += len(targets)
            return {
                name: _entry(header, name, target, self._current, start, body_at)
                for name, target in stored.items()
            }

    def _write(self, kind: bytes, header: bytes, bodies: list[bytes]) -> int:
        """Append a record; the file offset of its body."""
        crc = zlib.crc32(header)
        length = 0
        for body in bodies:
            crc = zlib.crc32(body, crc)
            length += len(body)
        for data in (_HEAD.pack(kind, len(header), length, crc) + header, *bodies):
            view = memoryview(data)
            while view:  # an unbuffered file may write part of it
                view = view[self._file.write(view) :]
        body_at = self._size + _HEAD.size + len(header)
        self._size = body_at + length
        return body_at

    def body(self, entry: Entry) -> bytes:
        with open(self._path(entry.segment), "rb") as f:
            return os.pread(f.fileno(), entry.body_len, entry.body_at) if entry.body_len else b""

    def done(self, name: str, entry: Entry) -> None:
        """`name` answered `entry`: never send it again (unless this record is lost with the page cache)."""
        raw = json.dumps({"job": entry.job, "remote": name}, separators=(",", ":")).encode()
        with self._lock:
            left = self._pending.get(entry.segment, 0) - 1
            self._pending[entry.segment] = max(left, 0)
            if entry.segment == self._current:
                if left <= 0:  # every job of the current segment done: start it over
                    os.ftruncate(self._file.fileno(), 0)
                    self._size = 0
                else:
                    self._write(b"D", raw, [])
                return
            if left <= 0:
                self._path(entry.segment).unlink(missing_ok=True)
                del self._pending[entry.segment]
                return
            with open(self._path(entry.segment), "ab") as f:
                f.write(_HEAD.pack(b"D", len(raw), 0, zlib.crc32(raw)) + raw)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _entry(
    header: dict[str, Any], name: str, target: dict[str, Any], segment: int, job: int, body_at: int
) -> Entry:
    at, length = target["body"]
    return Entry(
        header["task"],
        header["method"],
        header["path"],
        header["headers"],
        header["networkVersion"],
        header["origin"],
        {"url": target["url"], "writeApiKey": target["writeApiKey"]},
        segment,
        job,
        body_at + at,
        length,
    )


def _read_record(f: Any, offset: int, end: int) -> tuple[bytes, dict[str, Any], int, int] | None:
    """`(kind, header, body offset, record size)` of the record at `offset`; None when torn or corrupt."""
    if offset + _HEAD.size > end:
        return None
    kind, header_len, body_len, crc = _HEAD.unpack(os.pread(f.fileno(), _HEAD.size, offset))
    size = _HEAD.size + header_len + body_len
    if kind not in (b"J", b"D") or header_len > _MAX_HEADER or offset + size > end:
        return None
    raw = os.pread(f.fileno(), header_len, offset + _HEAD.size)
    check = zlib.crc32(raw)
    body_at = offset + _HEAD.size + header_len
    at = body_at
    while at < body_at + body_len:
        chunk = os.pread(f.fileno(), min(1 << 20, body_at + body_len - at), at)
        if not chunk:
            return None
        check = zlib.crc32(chunk, check)
        at += len(chunk)
    if check != crc:
        return None
    try:
        header = json.loads(raw)
    except ValueError:
        return None
    return kind, header, body_at, size
