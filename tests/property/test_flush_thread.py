"""The flush of a new table on a thread of its own (csrc/bitmap_merge.c hz_flush): the same items as
the flush computed in the caller, for both tables and chunk sizes from 1 key, under ThreadSanitizer (a C
program, tests/property/native/flush_race.c: Python itself is not instrumented)."""

from __future__ import annotations

from pathlib import Path

from tests.property.thread_sanitizer import run_under_thread_sanitizer


def test_the_flush_thread_hands_its_chunks_over_without_a_race(tmp_path: Path) -> None:
    run_under_thread_sanitizer(
        tmp_path, "flush_race", ("index_batch.c", "postings.c", "tokenizer.c", "bitmap_merge.c")
    )
