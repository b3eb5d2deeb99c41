"""Dump and dump-import throughput (documents/s) and peak memory on the generated corpus.

A data directory is built by a first child process (the corpus goes through the task pipeline in chunks
of 10,000 documents; its speed is reported, not asserted). Then, each in a fresh child process:

- **dump**: `hanzo-engine admin export-a-dump` (the same `export_dump` as `POST /dumps`): documents
  streamed from LMDB into the gzip tar;
- **import**: `import_dump` into an empty data directory (what `--import-dump` runs): unpack, settings,
  documents indexed in write transactions of 20,000;
- **baseline**: a child that only imports the same modules, so the memory the work itself needs is
  `peak - baseline`.

Peak memory is `resource.getrusage(RUSAGE_SELF).ru_maxrss` of each child (KiB on Linux). Linux carries
`ru_maxrss` over `fork`/`exec` from the parent, which is why the corpus is never loaded in the pytest
process itself: every child starts from the same small parent, and the baseline child shows that floor.
`VmHWM` (/proc/self/status, the high-water mark of the child's own address space) is reported beside it.
Full runs use 100,000 documents, smoke mode (HANZO_BENCH_SCALE=smoke) 2,000. Results are printed and
written to `benchmarks/results/dump_speed.json` (full runs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from hanzo_engine.auth import KeyStore
from hanzo_engine.scheduler.scheduler import Scheduler
from hanzo_engine.server.startup import write_version

SMOKE = os.environ.get("HANZO_BENCH_SCALE", "full") == "smoke"
N_DOCS = 2_000 if SMOKE else 100_000
CHUNK = 10_000
RESULTS_FILE = Path(__file__).resolve().parent / "results" / "dump_speed.json"

CHILD_PRELUDE = """
import json, resource, sys, time
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
def report(**values):
    print(json.dumps({**values, "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "vmhwm_kib": status("VmHWM"), "rss_anon_kib": status("RssAnon")}))
"""

DUMP = CHILD_PRELUDE + """
db, out = Path(sys.argv[1]), Path(sys.argv[2])
sched = Scheduler(db)
start = time.perf_counter()
stats = export_dump(sched, dump_dir=out, keys=[], instance_uid=None)
elapsed = time.perf_counter() - start
sched.stop()
report(seconds=elapsed, documents=stats.documents, path=str(stats.path), bytes=stats.path.stat().st_size)
"""

IMPORT = CHILD_PRELUDE + """
db, dump = Path(sys.argv[1]), Path(sys.argv[2])
sched = Scheduler(db)
keys = KeyStore(db / "auth", create_defaults=False)
start = time.perf_counter()
stats = import_dump(sched, keys, dump)
elapsed = time.perf_counter() - start
keys.close()
sched.stop()
report(seconds=elapsed, documents=stats.documents)
"""

BASELINE = CHILD_PRELUDE + "report()\n"

BUILD = CHILD_PRELUDE + """
import msgspec
from benchmarks.corpus import generate
from benchmarks.test_dump_speed import build
db, n = Path(sys.argv[1]), int(sys.argv[2])
docs = generate(n)
corpus_bytes = sum(len(msgspec.json.encode(d)) + 1 for d in docs)
start = time.perf_counter()
build(db, docs)
report(seconds=time.perf_counter() - start, corpus_bytes=corpus_bytes)
"""


def child(script: str, *args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=False,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def build(db: Path, docs: list[dict[str, Any]]) -> None:
    sched = Scheduler(db)
    try:
        for i in range(0, len(docs), CHUNK):
            chunk = docs[i : i + CHUNK]
            file_uuid, path = sched.new_update_file()
            path.write_bytes(b"".join(msgspec.json.encode(d) + b"\n" for d in chunk))
            sched.register("documentAdditionOrUpdate", "movies",
                           details={"receivedDocuments": len(chunk), "indexedDocuments": None},
                           kind={"method": "replace", "primaryKey": "id", "contentFile": file_uuid,
                                 "contentSize": path.stat().st_size, "documentsCount": len(chunk),
                                 "allowIndexCreation": True})
        while sched.tick():
            pass
    finally:
        sched.stop()
    KeyStore(db / "auth").close()
    write_version(db)


def test_dump_and_import_throughput(tmp_path: Path) -> None:
    source = tmp_path / "source.ms"
    built = child(BUILD, str(source), str(N_DOCS))
    corpus_bytes = built["corpus_bytes"]
    build_seconds = built["seconds"]

    baseline = child(BASELINE)
    dump = child(DUMP, str(source), str(tmp_path / "dumps"))
    assert dump["documents"] == N_DOCS
    imported = child(IMPORT, str(tmp_path / "target.ms"), dump["path"])
    assert imported["documents"] == N_DOCS

    results = {
        "documents": N_DOCS,
        "corpus_bytes": corpus_bytes,
        "dump_bytes": dump["bytes"],
        "build_docs_per_s": N_DOCS / build_seconds,
        "dump_docs_per_s": N_DOCS / dump["seconds"],
        "import_docs_per_s": N_DOCS / imported["seconds"],
        "dump_seconds": dump["seconds"],
        "import_seconds": imported["seconds"],
        "baseline_maxrss_mib": baseline["maxrss_kib"] / 1024,
        "dump_maxrss_mib": dump["maxrss_kib"] / 1024,
        "import_maxrss_mib": imported["maxrss_kib"] / 1024,
        "baseline_vmhwm_mib": (baseline["vmhwm_kib"] or 0) / 1024,
        "dump_vmhwm_mib": (dump["vmhwm_kib"] or 0) / 1024,
        "import_vmhwm_mib": (imported["vmhwm_kib"] or 0) / 1024,
        # heap at the end (the rest of the RSS is LMDB's memory map: page cache, not the process's memory)
        "dump_rss_anon_mib": (dump["rss_anon_kib"] or 0) / 1024,
        "import_rss_anon_mib": (imported["rss_anon_kib"] or 0) / 1024,
    }
    print(f"\n[dump-speed] {N_DOCS:,} documents ({corpus_bytes / 2**20:.1f} MiB of JSON, dump "
          f"{dump['bytes'] / 2**20:.1f} MiB): dump {results['dump_docs_per_s']:,.0f} docs/s, "
          f"import {results['import_docs_per_s']:,.0f} docs/s (indexing through tasks "
          f"{results['build_docs_per_s']:,.0f} docs/s); peak RSS (ru_maxrss / VmHWM) dump "
          f"{results['dump_maxrss_mib']:.0f}/{results['dump_vmhwm_mib']:.0f} MiB, import "
          f"{results['import_maxrss_mib']:.0f}/{results['import_vmhwm_mib']:.0f} MiB, baseline "
          f"{results['baseline_maxrss_mib']:.0f}/{results['baseline_vmhwm_mib']:.0f} MiB; heap at the end "
          f"dump {results['dump_rss_anon_mib']:.0f} MiB, import {results['import_rss_anon_mib']:.0f} MiB")
    if not SMOKE:
        RESULTS_FILE.parent.mkdir(exist_ok=True)
        RESULTS_FILE.write_text(json.dumps(results, indent=2) + "\n")
