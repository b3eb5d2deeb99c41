"""The batch and index diagnostics helpers (`scheduler/stats.py`, `scheduler/progress.py`): Rust's
`{:.2?}` durations, byte_unit's binary sizes, milli's accumulated step durations."""

from __future__ import annotations

import time

import pytest

from hanzo_engine.scheduler.progress import Progress
from hanzo_engine.scheduler.stats import camel_case, human_size, rust_duration, size_changes


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0.00ns"),
        (50e-9, "50.00ns"),
        (368e-6, "368.00µs"),
        (0.012345, "12.35ms"),
        (0.0123449, "12.34ms"),
        (1.2, "1.20s"),
        (61.005, "61.01s"),
        (0.999999999, "1000.00ms"),
        (1e-6, "1.00µs"),
        (999e-9, "999.00ns"),
    ],
)
def test_rust_duration(seconds: float, text: str) -> None:
    assert rust_duration(seconds) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (10_000, "9.77 KiB"),
        (10 * 1024 * 1024, "10 MiB"),
        (5 * 1024**3 + 1, "5 GiB"),
    ],
)
def test_human_size(n: int, text: str) -> None:
    assert human_size(n) == text


def test_size_changes_keep_only_what_changed() -> None:
    before = {"documents": 4096, "wordDocids": 1024 * 1024, "main": 4096}
    after = {"documents": 8192, "wordDocids": 1024 * 1024, "main": 0, "facetDocs": 4096}
    assert size_changes(before, after) == {
        "documents": "8 KiB (+4 KiB)",
        "main": "0 B (-4 KiB)",
        "facetDocs": "4 KiB (+4 KiB)",
    }


def test_camel_case() -> None:
    assert [camel_case(n) for n in ("word-fid-docids", "documents", "facet_strings")] == [
        "wordFidDocids",
        "documents",
        "facetStrings",
    ]


def test_progress_trace_accumulates_step_paths() -> None:
    p = Progress()
    p.start("processing tasks", 2)
    p.nested("indexing documents", 10)
    time.sleep(0.002)
    p.start("processing tasks", 2)  # the next task: the nested step ends, the top one keeps running
    p.nested("indexing documents", 5)
    time.sleep(0.002)
    live = p.trace()
    assert list(live) == ["processing tasks > indexing documents", "processing tasks"]
    p.clear()
    trace = p.trace()
    assert list(trace) == ["processing tasks > indexing documents", "processing tasks"]
    assert p.view() is None
    # milli's order: a step's children before it; the nested step ran twice and accumulates
    assert trace["processing tasks > indexing documents"].endswith("ms")
    # a new batch starts a new trace
    p.start("processing tasks", 1)
    p.clear()
    assert list(p.trace()) == ["processing tasks"]
