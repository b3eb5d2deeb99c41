"""Where indexing time goes: buckets the samples of a `py-spy record --native -f raw` profile of an
indexing run (`benchmarks/indexing_runs.py` explains how to record one) into the indexing stages and
prints their shares as a markdown table.

    .venv/bin/python -m benchmarks.indexing_profile /tmp/inproc.txt [--src src]

A sample belongs to the stage of the deepest marker frame of its stack, and inside the per-document
indexer (`SearchIndexer.add`) and the flush to the step its deepest frames name.
`put_document`'s own lines are told apart by their source text (`--src`: the tree the profile ran).
Samples outside any stage (server start-up, idle threads, the benchmark's own corpus generation) are
counted apart and left out of the shares.
"""

from __future__ import annotations

import argparse
import collections
import functools
import re
from pathlib import Path

# (stage, markers): frames whose function name is one of the markers start the stage
TOP: list[tuple[str, tuple[str, ...]]] = [
    ("LMDB commit (write-out, fsync)", ("trans_commit",)),
    (
        "payload check at the route (parse, rewrite as NDJSON)",
        ("convert_to_ndjson", "_add_or_update.<locals>.persist"),
    ),
    ("flush: word-docids", ("apply_word_docids",)),
    ("flush: word-fid-docids", ("apply_word_fid_docids",)),
    ("facets", ("FacetIndexer.add", "FacetIndexer.remove")),
    ("facets: flush (bitmaps)", ("FacetIndexer.flush",)),
    ("search indexer per document", ("SearchIndexer.add",)),
    ("put_document", ("IndexWriter.put_document",)),
    ("payload parsing in the task (decode, ids, checks)", ("_add_documents",)),
    ("other batch work", ("_index_batch", "apply_batch")),
    ("other transaction end", ("IndexWriter.flush_metadata", "Index.write")),
]
# steps inside the per-document indexer, by the deepest marker
SEARCH_STEPS: list[tuple[str, tuple[str, ...]]] = [
    ("tokenizing", ("hz_tokenize",)),
    ("posting log (word ids, next-word keys)", ("hz_postings_mark", "add_batch", "index_queue")),
    (
        "forward entries (positions per word, encode, put)",
        ("hz_doc_add_tokens", "indexing__encode", "hz_doc_encode", "trans_put", "s_pack", "cursor_put_multi"),
    ),
    (
        "flatten + field selection",
        ("flatten", "_flatten_object", "_flatten_array", "_insert_value", "document_fields"),
    ),
]
# steps of the facet indexer per document
FACET_STEPS: list[tuple[str, tuple[str, ...]]] = [
    ("facets: cyclic GC passes", ("gc_collect_main",)),
    ("facets: value walk (extract_facets)", ("extract_facets",)),
    ("facets: change log", ("FacetIndexer._log",)),
    ("facets: forward entry (to_entry, encode, put)", ("FacetIndexer._write", "FieldValues.to_entry")),
]
# steps of the flush; `{}` is the database's stage name (sorting the log serves both databases)
FLUSH_STEPS: list[tuple[str, tuple[str, ...]]] = [
    ("flush: sort the (word, fid, docid) log", ("hz_postings_prepare",)),
    ("{}: LMDB get/put", ("trans_get", "trans_put", "trans_delete")),
    ("flush: roaring merge", ("indexing__merge", "hz_bitmap_merge")),
]
GIL_WAIT = ("pthread_cond_timedwait", "pthread_cond_wait")
IDLE = (
    "Condition.wait",
    "Event.wait",
    "Queue.get",
    "_queue_SimpleQueue_get",
    "time_sleep",
    "epoll_wait",
    "select",
)


def _name(frame: str) -> str:
    return frame.split(" (", 1)[0]


@functools.cache
def _source_line(src: Path, where: str) -> str:
    """The text of `file:line` (a py-spy frame's location, relative to the package root) under `src`."""
    m = re.fullmatch(r"(.+):(\d+)", where)
    if m is None:
        return ""
    path = src / m.group(1)
    try:
        return path.read_text().splitlines()[int(m.group(2)) - 1]
    except (OSError, IndexError):
        return ""


def _put_document_step(src: Path, frame: str) -> str:
    where = frame.partition(" (")[2].rstrip(")")
    text = _source_line(src, where)
    if any(k in text for k in ("db_external", "_allocate_docid", "docids", "U32.unpack")):
        return "docid assignment (external id lookup, allocate, map)"
    if any(k in text for k in ("_ordered", "_count_fields", "db_documents", "_encode", "_decode", "merge")):
        return "document storage (order fields, count, encode, put)"
    return "put_document other"


def stage(frames: list[str], src: Path) -> str | None:
    names = [_name(f) for f in frames]
    named = [n for n in names if not n.startswith("0x")]
    if named and named[-1] in GIL_WAIT and any(m in names for _, markers in TOP for m in markers):
        return "waiting for the GIL (another thread holds it)"
    for i in reversed(range(len(names))):
        name = names[i]
        for label, markers in TOP:
            if name not in markers:
                continue
            rest = names[i + 1 :]
            if label.startswith("flush"):
                for step, step_markers in FLUSH_STEPS:
                    if any(n in step_markers for n in rest):
                        return step.format(label)
                return f"{label}: keys + loop"
            if label == "facets":
                for step, step_markers in FACET_STEPS:
                    if any(n in step_markers for n in rest):
                        return step
                return "facets: other"
            if label == "search indexer per document":
                for step, step_markers in SEARCH_STEPS:
                    if any(n in step_markers for n in rest):
                        return f"index: {step}"
                return "index: other (calls, GIL hand-offs)"
            if label == "put_document":
                return _put_document_step(src, frames[i])
            return label
    return None


def buckets(profile: Path, src: Path) -> tuple[collections.Counter[str], int]:
    """Samples per stage, and the samples outside every stage."""
    counts: collections.Counter[str] = collections.Counter()
    outside = 0
    for line in profile.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        found = stage(frames, src)
        if found is None or any(_name(f) in IDLE for f in frames):
            outside += int(n)
        else:
            counts[found] += int(n)
    return counts, outside


def table(counts: collections.Counter[str]) -> str:
    total = sum(counts.values())
    rows = ["| stage | samples | share |", "|---|---:|---:|"]
    rows += [f"| {k} | {v} | {100 * v / total:.1f}% |" for k, v in counts.most_common()]
    rows.append(f"| **total** | {total} | 100% |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[1] / "src")
    args = parser.parse_args()
    counts, outside = buckets(args.profile, args.src)
    print(table(counts))
    print(f"\n({outside} samples outside indexing left out)")


if __name__ == "__main__":
    main()
