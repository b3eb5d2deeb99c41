"""Opening an index's LMDB environment, and the disk space a data file takes.

A writer opens its index with `MDB_WRITEMAP` (Meilisearch's `--experimental-reduce-indexing-memory-usage`,
which hanzo-engine always applies): without it, every page a write transaction touches is a private
`malloc`ed copy until the commit, so a large task holds hundreds of MiB of anonymous memory outside
`--max-indexing-memory`, and LMDB keeps those pages on its own free list for the life of the
environment. With it, dirty pages live in the file's shared mapping: page cache the kernel can write
back and reclaim. Durability is unchanged: a commit still `msync`s the written pages, then the meta
page, before it returns (`map_async` stays off), and pages of a transaction that never committed are
free pages of the file, as without the flag, so a `kill -9` mid-transaction loses only that
transaction.

The cost: LMDB stretches the file to the map size when it opens it with the flag. The file is sparse
(unwritten pages take no disk space), so sizes must count the blocks actually written (`file_bytes`),
not the file's length; copies of a data directory must keep holes (`cp` and `tar -S` do). A file
system that refuses the stretch gets the environment opened without the flag.

A page written into a hole the file system cannot allocate (disk full) is a SIGBUS that kills the
process, where a `write()` would have failed with ENOSPC: `check_free_space` fails a write transaction
up front (`no_space_left_on_device`) when the disk is nearly full, so a full disk fails batches
instead of crashing the server at each restart.

Search worker processes open the environment read-only, without the flag (it is per process).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Final

import lmdb

from hanzo_engine.apitypes.errors import MeiliError

__all__ = ["MIN_FREE_BYTES", "check_free_space", "file_bytes", "open_index_env"]

# The free disk space a write transaction of a writemap environment needs to begin.
MIN_FREE_BYTES: Final = 64 << 20

log = logging.getLogger("hanzo_engine.storage")


def open_index_env(path: Path, *, map_size: int, readonly: bool) -> lmdb.Environment:
    """The environment of the index at `path` (created unless `readonly`)."""

    def open_env(writemap: bool) -> lmdb.Environment:
        return lmdb.open(
            str(path),
            map_size=map_size,
            max_dbs=16,
            subdir=True,
            readahead=False,
            max_readers=512,
            lock=True,
            readonly=readonly,
            create=not readonly,
            writemap=writemap,
        )

    if readonly:
        return open_env(writemap=False)
    try:
        return open_env(writemap=True)
    except lmdb.Error as err:
        # e.g. a file system without sparse files refusing to stretch the file to the map size
        log.warning("opening %s with a writable memory map failed (%s): opened without", path, err)
        return open_env(writemap=False)


def file_bytes(path: str | os.PathLike[str]) -> int:
    """The disk space of the file at `path`: its length, or the blocks it holds when it is sparse (an
    index's data file stretched to its map size); 0 when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return 0
    allocated = st.st_blocks * 512 if hasattr(st, "st_blocks") else st.st_size
    return min(st.st_size, allocated)


def check_free_space(env: lmdb.Environment, path: Path) -> None:
    """`no_space_left_on_device` when a write transaction of `env` (at `path`) would start with less
    than `MIN_FREE_BYTES` of free disk space; nothing for an environment written without the flag."""
    if not env.flags()["writemap"]:
        return
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    if free < MIN_FREE_BYTES:
        raise MeiliError(
            "no_space_left_on_device",
            f"No space left on device (os error 28): {free} bytes free, an index write needs at least "
            f"{MIN_FREE_BYTES >> 20} MiB.",
        )
