"""Dump and dump-import throughput (documents/s) and peak memory on the 1M benchmark corpus; compaction sizes.

Documents: full runs use the 1,000,000-document benchmark corpus of `benchmarks/test_search_speed.py`
(`benchmarks.corpus.corpus_files`: `benchmarks/realistic_corpus.py`, cached under `HANZO_BENCH_CACHE`;
without `wordfreq`, our own `benchmarks.corpus.generate`). Smoke mode (HANZO_BENCH_SCALE=smoke) indexes
2,000 documents of `generate`.
`HANZO_DUMP_BENCH_DOCS` overrides the number of documents (the first N of the corpus).

A data directory is built by a first child process: the corpus streamed from its NDJSON file through the
task pipeline, one task of 10,000 documents at a time (its speed is reported, not asserted). Then, each
in a fresh child process:

- **dump**: `export_dump` (what `POST /dumps` and `hanzo-engine admin export-a-dump` run): documents
  streamed from LMDB into the gzip tar;
- **import**: `import_dump` into an empty data directory (what `--import-dump` runs): unpack, settings,
  documents indexed in write transactions of 20,000;
- **baseline**: a child that only imports the same modules;
- **compaction**: on the built data directory, 90% of the documents deleted through `documentDeletion`
  tasks (every id not divisible by 10), then `hanzo-engine admin index-compaction`; the data file's size
  after indexing, after the deletions (LMDB never shrinks its file; copy-on-write even grows it) and after
  compaction (LMDB's compacting copy: free pages dropped, but the half-empty leaves are copied as they are).

Memory, per child: `ru_maxrss` (KiB on Linux; Linux carries it over `fork`/`exec` from the parent, which
is why the corpus is never loaded in the pytest process: every child starts from the same small parent,
and the baseline child shows that floor), and the peaks of `VmRSS` and `RssAnon` sampled every 20 ms by
a thread of the child. The resident set counts the pages of LMDB's memory map the work touched, which
grows with the index but is page cache the kernel may reclaim; `RssAnon` is the process's own memory:
Python heap and buffers (what would grow if the dump or the import did not stream), plus the dirty pages
of LMDB write transactions, which LMDB keeps allocated for reuse while the environment is open and which
grow with the number of index pages one import transaction touches (so with the index, up to LMDB's
dirty-page limit of 512 MiB, after which it spills to the file). `tests/unit/test_dump_streaming.py`
checks the Python-heap part alone.

Results are printed and written to `benchmarks/results/dump_speed.json` (full runs without the override
only, so neither `./dev test` nor a trial at another size overwrites a full run's numbers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.corpus import SEED, corpus_files, generate

SMOKE = os.environ.get("HANZO_BENCH_SCALE", "full") == "smoke"
OVERRIDE = os.environ.get("HANZO_DUMP_BENCH_DOCS")
N_DOCS = int(OVERRIDE or (2_000 if SMOKE else 1_000_000))
# test_search_speed's full corpus (its size and query count are the cache key): a smaller N takes its start.
CORPUS_DOCS = 1_000_000
CORPUS_QUERIES = 1_000
CHUNK = 10_000  # documents per `documentAdditionOrUpdate` task when building
DELETE_CHUNK = 100_000  # ids per `documentDeletion` task
KEEP_EVERY = 10  # the compaction phase keeps the documents whose id is divisible by this
INDEX = "movies"
ROOT = Path(__file__).resolve().parents[1]
RESULTS_FILE = Path(__file__).resolve().parent / "results" / "dump_speed.json"

CHILD_PRELUDE = """
import json, resource, sys, threading, time
from pathlib import Path
from hanzo_engine.auth import KeyStore
from hanzo_engine.scheduler.scheduler import Scheduler
from hanzo_engine.scheduler.backups import export_dump, import_dump
def status(field):
    try:
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
PEAK = {"VmRSS": 0, "RssAnon": 0}
def sample():
    for field in PEAK:
        PEAK[field] = max(PEAK[field], status(field) or 0)
def sampler():
    while True:
        sample()
        time.sleep(0.02)
threading.Thread(target=sampler, daemon=True).start()
def report(**values):
    sample()
    print(json.dumps({**values, "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "peak_rss_kib": PEAK["VmRSS"], "peak_anon_kib": PEAK["RssAnon"],
                      "end_anon_kib": status("RssAnon")}))
"""

DUMP = (
    CHILD_PRELUDE
    + """
db, out = Path(sys.argv[1]), Path(sys.argv[2])
sched = Scheduler(db)
start = time.perf_counter()
stats = export_dump(sched, dump_dir=out, keys=[], instance_uid=None)
elapsed = time.perf_counter() - start
sched.stop()
report(seconds=elapsed, documents=stats.documents, path=str(stats.path), bytes=stats.path.stat().st_size)
"""
)

IMPORT = (
    CHILD_PRELUDE
    + """
db, dump = Path(sys.argv[1]), Path(sys.argv[2])
sched = Scheduler(db)
keys = KeyStore(db / "auth", create_defaults=False)
start = time.perf_counter()
stats = import_dump(sched, keys, dump)
elapsed = time.perf_counter() - start
with sched.index(sys.argv[3]).read() as r:
    stored = r.number_of_documents()
keys.close()
sched.stop()
report(seconds=elapsed, documents=stats.documents, stored=stored)
"""
)

BASELINE = CHILD_PRELUDE + "report()\n"

BUILD = (
    CHILD_PRELUDE
    + """
from benchmarks.test_dump_speed import build
db, source, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
start = time.perf_counter()
corpus_bytes = build(db, Path(source), n)
report(seconds=time.perf_counter() - start, corpus_bytes=corpus_bytes)
"""
)

DELETE = (
    CHILD_PRELUDE
    + """
from benchmarks.test_dump_speed import delete_most
db, n = Path(sys.argv[1]), int(sys.argv[2])
start = time.perf_counter()
deleted, remaining, size_before, size_after = delete_most(db, n)
report(seconds=time.perf_counter() - start, deleted=deleted, remaining=remaining, size_before=size_before,
       size_after=size_after)
"""
)

CLI = "from hanzo_engine.cli import main; main()"


def child(script: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def corpus_source(tmp_path: Path) -> tuple[Path, str]:
    """The NDJSON file the build streams from (its first N_DOCS lines), and a name for the report."""
    files = None if SMOKE else corpus_files(max(N_DOCS, CORPUS_DOCS), CORPUS_QUERIES, SEED)
    if files is not None:
        return files[0], "benchmarks/realistic_corpus.py (wordfreq)"
    path = tmp_path / "corpus.ndjson"
    path.write_bytes(b"".join(msgspec.json.encode(d) + b"\n" for d in generate(N_DOCS, SEED)))
    return path, "benchmarks.corpus.generate" + ("" if SMOKE else " (no wordfreq)")


def build(db: Path, source: Path, n_docs: int) -> int:
    """Index the first `n_docs` lines of `source` into index `movies` of a new data directory, one task
    per CHUNK documents, as a server leaves it (VERSION, default keys). Returns the corpus's size as
    compact NDJSON (what the update files and the dump hold)."""
    from hanzo_engine.auth import KeyStore
    from hanzo_engine.engine.storage.datadir import write_version
    from hanzo_engine.scheduler.scheduler import Scheduler

    decode, encode = msgspec.json.Decoder().decode, msgspec.json.Encoder().encode
    corpus_bytes = 0
    sched = Scheduler(db)
    try:
        with open(source, "rb") as f:
            seen = 0
            while seen < n_docs:
                lines = [line for _, line in zip(range(min(CHUNK, n_docs - seen)), f, strict=False)]
                if not lines:
                    break
                seen += len(lines)
                # the cached corpus is `json.dumps` output: re-encoded compact, as a payload is normalized
                payload = b"".join(encode(decode(line)) + b"\n" for line in lines)
                corpus_bytes += len(payload)
                file_uuid, path = sched.new_update_file()
                path.write_bytes(payload)
                sched.register(
                    "documentAdditionOrUpdate",
                    INDEX,
                    details={"receivedDocuments": len(lines), "indexedDocuments": None},
                    kind={
                        "method": "replace",
                        "primaryKey": "id",
                        "contentFile": file_uuid,
                        "contentSize": len(payload),
                        "documentsCount": len(lines),
                        "allowIndexCreation": True,
                    },
                )
                # one task at a time: the build's memory stays that of one chunk
                while sched.tick():
                    pass
        assert seen == n_docs, f"{source} has only {seen} documents"
    finally:
        sched.stop()
    KeyStore(db / "auth").close()
    write_version(db)
    return corpus_bytes


def delete_most(db: Path, n_docs: int) -> tuple[int, int, int, int]:
    """Delete every document whose id is not divisible by KEEP_EVERY, in DELETE_CHUNK-id tasks; returns
    (deleted, remaining, data file size before, data file size after)."""
    from hanzo_engine.scheduler.scheduler import Scheduler

    sched = Scheduler(db)
    try:
        index = sched.index(INDEX)
        assert index is not None
        size_before = index.file_size()
        doomed = [str(i) for i in range(n_docs) if i % KEEP_EVERY]
        for i in range(0, len(doomed), DELETE_CHUNK):
            ids = doomed[i : i + DELETE_CHUNK]
            sched.register(
                "documentDeletion",
                INDEX,
                details={"providedIds": len(ids), "deletedDocuments": None, "originalFilter": None},
                kind={"op": "ids", "ids": ids},
            )
            while sched.tick():
                pass
        with index.read() as r:
            remaining = r.number_of_documents()
            assert r.get_document(str(KEEP_EVERY)) is not None and r.get_document("1") is None
        size_after = index.file_size()
    finally:
        sched.stop()
    return len(doomed), remaining, size_before, size_after


def compact(db: Path) -> dict[str, Any]:
    """`hanzo-engine admin index-compaction movies`: {"sizeBefore", "sizeAfter"} in bytes, and its time."""
    done = subprocess.run(
        [sys.executable, "-c", CLI, "admin", "--db-path", str(db), "index-compaction", INDEX],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    took = [line for line in done.stderr.splitlines() if "Took around" in line]
    result["seconds"] = float(took[0].split("around ")[1].rstrip("s")) if took else None
    return result


def mib(kib: int | None) -> float:
    return (kib or 0) / 1024


def test_dump_import_and_compaction(tmp_path: Path) -> None:
    source_file, source_name = corpus_source(tmp_path)
    source = tmp_path / "source.ms"
    built = child(BUILD, str(source), str(source_file), str(N_DOCS))
    corpus_bytes = built["corpus_bytes"]

    baseline = child(BASELINE)
    dump = child(DUMP, str(source), str(tmp_path / "dumps"))
    assert dump["documents"] == N_DOCS
    imported = child(IMPORT, str(tmp_path / "target.ms"), dump["path"], INDEX)
    assert imported["documents"] == imported["stored"] == N_DOCS
    Path(dump["path"]).unlink()  # 1M documents: the dump and the imported copy need not stay on disk
    subprocess.run(["rm", "-rf", str(tmp_path / "target.ms")], check=True)

    deleted = child(DELETE, str(source), str(N_DOCS))
    kept = len(range(0, N_DOCS, KEEP_EVERY))
    assert (deleted["deleted"], deleted["remaining"]) == (N_DOCS - kept, kept)
    compacted = compact(source)
    assert compacted["sizeBefore"] == deleted["size_after"]
    assert compacted["sizeAfter"] < compacted["sizeBefore"]

    results = {
        "documents": N_DOCS,
        "corpus": source_name,
        "corpus_bytes": corpus_bytes,
        "dump_bytes": dump["bytes"],
        "build_docs_per_s": N_DOCS / built["seconds"],
        "dump_docs_per_s": N_DOCS / dump["seconds"],
        "import_docs_per_s": N_DOCS / imported["seconds"],
        "build_seconds": built["seconds"],
        "dump_seconds": dump["seconds"],
        "import_seconds": imported["seconds"],
        "baseline_maxrss_mib": mib(baseline["maxrss_kib"]),
        "dump_maxrss_mib": mib(dump["maxrss_kib"]),
        "import_maxrss_mib": mib(imported["maxrss_kib"]),
        "baseline_peak_anon_mib": mib(baseline["peak_anon_kib"]),
        "dump_peak_anon_mib": mib(dump["peak_anon_kib"]),
        "import_peak_anon_mib": mib(imported["peak_anon_kib"]),
        "build_peak_anon_mib": mib(built["peak_anon_kib"]),
        "dump_end_anon_mib": mib(dump["end_anon_kib"]),
        "import_end_anon_mib": mib(imported["end_anon_kib"]),
        "compaction": {
            "documents_deleted": deleted["deleted"],
            "documents_kept": deleted["remaining"],
            "delete_seconds": deleted["seconds"],
            "delete_docs_per_s": deleted["deleted"] / deleted["seconds"],
            "data_file_bytes_after_indexing": deleted["size_before"],
            "data_file_bytes_after_deleting": deleted["size_after"],
            "data_file_bytes_after_compaction": compacted["sizeAfter"],
            "compaction_seconds": compacted["seconds"],
        },
    }
    print(
        f"\n[dump-speed] {N_DOCS:,} documents of {source_name} ({corpus_bytes / 2**20:.1f} MiB of JSON, dump "
        f"{dump['bytes'] / 2**20:.1f} MiB): dump {results['dump_docs_per_s']:,.0f} docs/s "
        f"({dump['seconds']:.1f} s), import {results['import_docs_per_s']:,.0f} docs/s "
        f"({imported['seconds']:.1f} s); indexing through tasks {results['build_docs_per_s']:,.0f} docs/s\n"
        f"[dump-speed] peak memory, ru_maxrss / peak RssAnon: dump {results['dump_maxrss_mib']:.0f} / "
        f"{results['dump_peak_anon_mib']:.0f} MiB, import {results['import_maxrss_mib']:.0f} / "
        f"{results['import_peak_anon_mib']:.0f} MiB, baseline {results['baseline_maxrss_mib']:.0f} / "
        f"{results['baseline_peak_anon_mib']:.0f} MiB\n"
        f"[dump-speed] compaction: {deleted['deleted']:,} of {N_DOCS:,} documents deleted "
        f"({results['compaction']['delete_docs_per_s']:,.0f} docs/s), data file {deleted['size_before'] / 2**20:.1f} "
        f"MiB after indexing, {deleted['size_after'] / 2**20:.1f} MiB after deleting, "
        f"{compacted['sizeAfter'] / 2**20:.1f} MiB after compaction "
        f"({deleted['size_after'] / compacted['sizeAfter']:.1f}x smaller)"
    )
    if not SMOKE and not OVERRIDE:
        RESULTS_FILE.parent.mkdir(exist_ok=True)
        RESULTS_FILE.write_text(json.dumps(results, indent=2) + "\n")
