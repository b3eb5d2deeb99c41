"""Snapshots: a consistent binary copy of a data directory, as one `.snapshot` file (tar.gz).

A snapshot holds, relative to the data directory: `VERSION`, `instance-uid`, `tasks/data.mdb`,
`auth/data.mdb`, `indexes/<uuid>/data.mdb` and the `update_files/` payloads of enqueued tasks.
Restoring it (`--import-snapshot`) unpacks it as the new data directory.

Consistency: each LMDB environment is copied by `compaction.compact_env_file` (the dense rebuild that
index compaction uses), which reads one read transaction, so readers (searches) and writers keep going
while it runs. Environments are copied one after the other: the caller (the scheduler's writer thread)
guarantees no index changes in between, so the set is consistent too.

Why the rebuild rather than LMDB's faster `mdb_env_copy2(MDB_CP_COMPACT)`: the copy is a small part of
a snapshot, compression is most of it, and a denser file compresses sooner and smaller, so the whole
snapshot is faster and smaller. A restored snapshot is compact too.

The archive is staged under `<snapshot_dir>/.tmp-*`, compressed to `<name>.snapshot.tmp`, made
read-only (0o444, as Meilisearch) and renamed into place, so a reader never sees a partial snapshot.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Final

import lmdb

# The dense rebuild (index compaction's, and the snapshots' copy); re-exported for `admin index-compaction`.
from .compaction import compact_env_file as compact_env_file

SNAPSHOT_SUFFIX: Final = ".snapshot"
COMPRESS_LEVEL: Final = 6


def snapshot_path(snapshot_dir: Path, db_path: Path) -> Path:
    """`<snapshot_dir>/<db dir name>.snapshot`, Meilisearch's snapshot name."""
    return snapshot_dir / f"{db_path.resolve().name}{SNAPSHOT_SUFFIX}"


def staging_dir(snapshot_dir: Path) -> Path:
    snapshot_dir.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".tmp-snapshot-", dir=snapshot_dir))


def copy_env(env: lmdb.Environment, dest_dir: Path) -> int:
    """Copy `env` compacted into `dest_dir/data.mdb` (one read transaction); returns the copy's size."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    return compact_env_file(env, dest_dir / "data.mdb")


def archive_directory(staging: Path, target: Path) -> Path:
    """tar.gz every entry of `staging` (names relative to it) into `target`, atomically, read-only."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    try:
        with tarfile.open(tmp, mode="w:gz", compresslevel=COMPRESS_LEVEL, format=tarfile.GNU_FORMAT) as tar:
            for entry in sorted(staging.iterdir()):
                tar.add(entry, arcname=entry.name)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def restore_snapshot(snapshot: Path, db_path: Path) -> None:
    """Unpack `snapshot` as the data directory `db_path` (which must not hold a database)."""
    db_path.mkdir(parents=True, exist_ok=True)
    with tarfile.open(snapshot, mode="r|*") as archive:
        archive.extractall(db_path, filter="data")
    # The archive's files are read-only copies; the database must be writable.
    for root, dirs, files in os.walk(db_path):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
