"""Compaction of an LMDB environment by rebuilding it: every database copied, in key order, into a new file.

Why not LMDB's own compacting copy (`mdb_env_copy2(MDB_CP_COMPACT)`): it drops free pages and renumbers
the rest, but copies every B-tree page as it is, so the half-empty leaves that deletions leave behind
stay half empty. Rebuilding writes each database with `MDB_APPEND` from a cursor walk in key order: an
appended key fills the rightmost leaf, and a full leaf is split by starting a new page rather than
halving the old one, so the leaves (nearly all of the pages) come out full — denser than an index built
by inserts, and much smaller than LMDB's compacting copy of an index after many deletions.

Invariants of the copy:
- consistency: the whole copy reads ONE read transaction of the source, so it is a committed state even
  while other threads write (callers that need the copy to match an index's state, as compaction, run
  it where no write happens);
- fidelity: every named database keeps its name, its flags (`dupsort`, `integerkey`, `reverse_key`,
  `dupfixed`, `integerdup`: they select LMDB's comparators, so they must be set before the first put)
  and every key/value pair; keys of the main database that are not databases are copied as they are;
  the copy keeps the source's map size;
- crash safety: the copy is built in `<target>.tmp` (same directory, so the rename cannot cross file
  systems), fsynced, renamed onto `target`, and the directory entry fsynced. A crash leaves either no
  `target` or a complete one; a stale `.tmp` is deleted before the next attempt reuses the name (LMDB
  would otherwise open it and append to its content).

Memory: the destination commits every `COMMIT_BYTES` of copied data, so its dirty pages stay bounded
(LMDB would spill them past 512 MiB, but there is no reason to let them grow that far).

Limitation: on a `dupsort` database py-lmdb maps `append=True` to `MDB_APPENDDUP`, which appends the
duplicates densely but inserts each new key by search (half-full leaves on split). No database of
ours is `dupsort` today; the copy stays correct there, only less dense.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import lmdb

# Destination write transactions commit after this many bytes of keys and values.
COMMIT_BYTES: Final = 64 << 20


def compact_env_file(env: lmdb.Environment, target: Path, *, commit_bytes: int = COMMIT_BYTES) -> int:
    """Write a densely rebuilt copy of `env` to the file `target` (atomically); returns its size.

    `target` is a plain data file (open it with `subdir=False`, or rename it to `<dir>/data.mdb`).
    """
    tmp = target.with_name(target.name + ".tmp")
    tmp.unlink(missing_ok=True)
    try:
        _rebuild(env, tmp, commit_bytes)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)
    return target.stat().st_size


def _rebuild(env: lmdb.Environment, path: Path, commit_bytes: int) -> None:
    with env.begin(write=False, buffers=True) as src:
        named, plain = _databases(env, src)
        dest = lmdb.open(
            str(path),
            subdir=False,
            map_size=env.info()["map_size"],
            max_dbs=max(len(named), 1),
            # a private file until the rename: no lock file, and one fsync at the end instead of one
            # per commit
            lock=False,
            sync=False,
            metasync=False,
            readahead=False,
        )
        try:
            with dest.begin(write=True) as txn:
                dest_dbs = [(src_db, dest.open_db(name, txn=txn, **src_db.flags())) for name, src_db in named]
                main = dest.open_db(None)
                for key, value in plain:
                    txn.put(key, value, db=main)
            for src_db, dest_db in dest_dbs:
                _copy_db(src, src_db, dest, dest_db, commit_bytes)
            dest.sync(True)
        finally:
            dest.close()


def _databases(
    env: lmdb.Environment, src: lmdb.Transaction[Any]
) -> tuple[list[tuple[bytes, Any]], list[tuple[bytes, bytes]]]:
    """The named databases of `env` (name, handle opened in `src`) and the main database's other pairs.

    The main database holds one record per named database; any other key is plain data. LMDB tells
    them apart by opening: a record that is not a database refuses with `MDB_INCOMPATIBLE`.
    """
    named: list[tuple[bytes, Any]] = []
    plain: list[tuple[bytes, bytes]] = []
    for key, value in src.cursor(db=env.open_db(None)):
        name, data = bytes(key), bytes(value)
        try:
            named.append((name, env.open_db(name, txn=src, create=False)))
        except lmdb.IncompatibleError:
            plain.append((name, data))
    return named, plain


def _copy_db(
    src: lmdb.Transaction[Any], src_db: Any, dest: lmdb.Environment, dest_db: Any, commit_bytes: int
) -> None:
    """Append every pair of `src_db`, in its key (and duplicate) order, to the empty `dest_db`."""
    source = iter(src.cursor(db=src_db))
    while True:
        # one pair read ahead: the end of the database is found without opening an empty transaction
        first = next(source, None)
        if first is None:
            return
        with dest.begin(write=True, db=dest_db) as txn:
            consumed, added = txn.cursor(db=dest_db).putmulti(
                _chunk(itertools.chain((first,), source), commit_bytes), append=True
            )
        if added != consumed:
            # APPEND refuses a key not above the last one: only a comparator mismatch could cause it
            raise lmdb.Error(f"compaction: {consumed - added} out-of-order records in a database copy")


def _chunk(pairs: Iterator[tuple[Any, Any]], budget: int) -> Iterator[tuple[Any, Any]]:
    """The pairs of `pairs` up to (and including) the one that reaches `budget` bytes."""
    used = 0
    for key, value in pairs:
        yield key, value
        used += len(key) + len(value)
        if used >= budget:
            return


def _fsync_dir(path: Path) -> None:
    """Persist a rename: the directory entry lives in the directory's own blocks."""
    with contextlib.suppress(OSError):  # some file systems refuse fsync on a directory
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
