"""Diagnostics Meilisearch reports about indexes and batches: internal database sizes, human byte
sizes, the `progressTrace` durations and the `internalDatabaseSizes` changes of a batch
(Meilisearch's `IndexStats::new`, `ProcessingBatch::write_stats`, milli's `Progress`).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Final

from hanzo_engine.engine.index import Index, IndexReader
from hanzo_engine.engine.storage.keys import DB_DOCUMENTS, DB_EXTERNAL, DB_MAIN, EXTRA_DBS

_DB_NAMES: Final = (DB_MAIN, DB_DOCUMENTS, DB_EXTERNAL, *EXTRA_DBS)
_BINARY_UNITS: Final = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def camel_case(name: str) -> str:
    """`word-fid-docids` -> `wordFidDocids` (convert_case's `Case::Camel`)."""
    words = [w for w in re.split(r"[-_ ]+", name) if w]
    return words[0].lower() + "".join(w[:1].upper() + w[1:].lower() for w in words[1:]) if words else ""


_CAMEL_NAMES: Final = {name: camel_case(name.decode()) for name in _DB_NAMES}


def database_sizes(reader: IndexReader) -> dict[str, int]:
    """Bytes of every internal database of the index (pages in use), camelCase names, largest first,
    empty ones left out."""
    index = reader.index
    sizes: dict[str, int] = {}
    for name in _DB_NAMES:
        db = (
            index.db_main
            if name == DB_MAIN
            else index.db_documents
            if name == DB_DOCUMENTS
            else (index.db_external if name == DB_EXTERNAL else index.db(name))
        )
        st = reader.txn.stat(db)
        size = int((st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]) * st["psize"])
        if size:
            sizes[_CAMEL_NAMES[name]] = size
    return dict(sorted(sizes.items(), key=lambda item: -item[1]))


def index_database_sizes(index: Index) -> dict[str, int]:
    with index.read() as r:
        return database_sizes(r)


def human_size(n: int) -> str:
    """A byte count in binary units, at most 2 decimals, trailing zeros dropped: `0 B`, `1.5 KiB`,
    `9.77 KiB`, `10 MiB` (byte_unit's `get_appropriate_unit(Binary)` shown with `{:#.2}`)."""
    value = float(n)
    unit = _BINARY_UNITS[0]
    for candidate in _BINARY_UNITS[1:]:
        if abs(value) < 1024:
            break
        value /= 1024
        unit = candidate
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return f"{text} {unit}"


def size_changes(before: dict[str, int], after: dict[str, int]) -> dict[str, str]:
    """`internalDatabaseSizes` of a batch: each database whose size changed, as `<new> (<+|-><diff>)`,
    in the order of `before`'s databases then the new ones."""
    out: dict[str, str] = {}
    for name in [*before, *(n for n in after if n not in before)]:
        old, new = before.get(name, 0), after.get(name, 0)
        if old != new:
            out[name] = f"{human_size(new)} ({'+' if new > old else '-'}{human_size(abs(new - old))})"
    return out


def rust_duration(seconds: float) -> str:
    """A duration as Rust's `{:.2?}` prints it: `1.20s`, `12.35ms`, `368.00µs`, `50.00ns`."""
    nanos = max(0, round(seconds * 1e9))
    if nanos >= 1_000_000_000:
        unit, scale = "s", 1_000_000_000
    elif nanos >= 1_000_000:
        unit, scale = "ms", 1_000_000
    elif nanos >= 1_000:
        unit, scale = "µs", 1_000
    else:
        unit, scale = "ns", 1
    hundredths = (nanos * 100 + scale // 2) // scale  # the remainder rounded half up, as fmt_decimal
    return f"{hundredths // 100}.{hundredths % 100:02d}{unit}"


def format_trace(durations: dict[str, timedelta | float]) -> dict[str, Any]:
    return {
        name: rust_duration(d.total_seconds() if isinstance(d, timedelta) else d)
        for name, d in durations.items()
    }
