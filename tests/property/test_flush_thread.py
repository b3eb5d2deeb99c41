"""The flush of a new table on a thread of its own (csrc/bitmap_merge.c hz_flush): the same items as
the flush computed in the caller, for both tables and chunk sizes from 1 key, under ThreadSanitizer (a C
program, tests/property/native/flush_race.c: Python itself is not instrumented)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_flush_thread_hands_its_chunks_over_without_a_race(tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    exe = tmp_path / "flush_race"
    # not the ASan runtime the sanitizer run preloads into Python
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    csrc = ROOT / "csrc"
    sources = ("index_batch.c", "postings.c", "tokenizer.c", "bitmap_merge.c")
    build = subprocess.run(
        [gcc, "-O1", "-g", "-fsanitize=thread", f"-I{csrc}", "-o", str(exe),
         str(Path(__file__).parent / "native" / "flush_race.c"), *(str(csrc / n) for n in sources), "-lpthread"],
        capture_output=True,
        text=True,
        env=env,
    )  # fmt: skip
    if build.returncode != 0:
        pytest.skip(f"no ThreadSanitizer build: {build.stderr[-500:]}")
    done = subprocess.run(
        [str(exe)],
        capture_output=True,
        text=True,
        env={**env, "TSAN_OPTIONS": "exitcode=66"},
        timeout=600,
    )
    if "FATAL: ThreadSanitizer" in done.stderr:  # e.g. a memory layout it does not support
        pytest.skip(f"ThreadSanitizer cannot run here: {done.stderr[-500:]}")
    assert "WARNING: ThreadSanitizer" not in done.stderr, done.stderr
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
