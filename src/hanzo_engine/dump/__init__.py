"""Dumps and snapshots (= Meilisearch's `dump` crate and its snapshot archive).

- `format`: the dump v6 vocabulary (member names, metadata, key lines, dump uids);
- `writer`: `DumpWriter`, a streaming `.dump` (tar.gz) writer;
- `reader`: `DumpReader`, which unpacks a `.dump` and iterates its members lazily;
- `snapshot`: compacted LMDB copies and the `.snapshot` archive.

This package knows the file formats only; the scheduler maps its task queue and indexes onto them
(`hanzo_engine.scheduler.backups`).
"""

from .format import DEFAULT_FEATURES, DUMP_VERSION, DumpFormatError, dump_uid
from .reader import DumpReader, IndexDump
from .writer import DumpWriter

__all__ = [
    "DEFAULT_FEATURES",
    "DUMP_VERSION",
    "DumpFormatError",
    "DumpReader",
    "DumpWriter",
    "IndexDump",
    "dump_uid",
]
