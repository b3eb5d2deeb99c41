"""Dump import and export stream their documents: the Python heap they need does not grow with the data.

A dump of 4,000 documents of ~10 KB each (~40 MB of NDJSON) is written by hand, imported with
`import_dump` and exported again with `export_dump`; tracemalloc's peak during each call must stay a
small fraction of the documents' size. Reading `documents.jsonl` whole, or joining the exported
documents before writing them, would hold the ~40 MB at once and fail. (LMDB's dirty pages and the
native indexer allocate outside the Python heap, which tracemalloc does not see: this guards the dump
layer, not the engine; `benchmarks/test_dump_speed.py` reports the whole process's memory.)
"""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import msgspec

from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.auth import KeyStore
from hanzo_engine.dump import DumpReader, DumpWriter
from hanzo_engine.dump.format import index_metadata
from hanzo_engine.scheduler.backups import export_dump, import_dump
from hanzo_engine.scheduler.scheduler import Scheduler

N_DOCS = 4_000
BLOB = 10_000  # bytes of unsearched text per document: the documents dominate the dump
T = TypeVar("T")


def documents(n: int = N_DOCS) -> Iterator[bytes]:
    for i in range(n):
        # random hex: it compresses about as well as real documents do (a very repetitive text would
        # make tarfile's gzip stream inflate each 10 KiB read into megabytes, a cost unrelated to the
        # dump's size)
        blob = random.Random(i).randbytes(BLOB // 2).hex()
        yield msgspec.json.encode({"id": i, "title": f"document {i}", "blob": blob}) + b"\n"


def peak_traced(call: Callable[[], T]) -> tuple[T, int]:
    """`call()` and the peak of the Python heap above what was allocated before it."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def write_dump(path: Path, n: int) -> int:
    """A v6 dump of one index `docs` holding `documents(n)`; returns the documents' size."""
    size = sum(len(line) for line in documents(n))
    with DumpWriter(
        path, instance_uid=None, db_version="1.20.0", dump_date_ns=1_700_000_000_000_000_000
    ) as w:
        w.write_keys([])
        # only the title is searchable: the blob is stored and dumped, not indexed (keeps the test fast)
        settings = complete_settings({"searchableAttributes": ["title"]})
        w.write_index("docs", index_metadata("docs", "id", 1, 2), settings, size, documents(n))
        w.finish()
    return size


def round_trip(tmp_path: Path, name: str, n: int) -> tuple[Path, int, int, int]:
    """Import a dump of `documents(n)` into a new data directory and export it again: (exported dump,
    documents' size, import peak, export peak)."""
    dump = tmp_path / f"{name}.dump"
    size = write_dump(dump, n)
    db = tmp_path / f"{name}.ms"
    sched = Scheduler(db)
    keys = KeyStore(db / "auth", create_defaults=False)
    try:
        imported, import_peak = peak_traced(lambda: import_dump(sched, keys, dump))
        assert imported.documents == n
        exported, export_peak = peak_traced(
            lambda: export_dump(sched, dump_dir=tmp_path / f"{name}-out", keys=[], instance_uid=None)
        )
        assert exported.documents == n
    finally:
        keys.close()
        sched.stop()
    return exported.path, size, import_peak, export_peak


def test_import_and_export_hold_a_bounded_part_of_the_documents(tmp_path: Path) -> None:
    # a first small round trip loads every lazily imported module (their code counts as heap too)
    round_trip(tmp_path, "warm-up", 10)
    exported, size, import_peak, export_peak = round_trip(tmp_path, "big", N_DOCS)
    assert size > 40_000_000

    assert import_peak < size / 5, f"import_dump held {import_peak:,} bytes for {size:,} bytes of documents"
    assert export_peak < size / 5, f"export_dump held {export_peak:,} bytes for {size:,} bytes of documents"
    # and the exported documents are the imported ones, byte for byte, in docid (= import) order
    with DumpReader(exported, workdir=tmp_path) as reader:
        (index,) = list(reader.indexes())
        assert index.settings()["searchableAttributes"] == ["title"]
        assert list(index.document_lines()) == list(documents())
