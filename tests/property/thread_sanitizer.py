"""Build and run one of the C programs of `tests/property/native/` under ThreadSanitizer (Python itself
is not instrumented, so the native code's threads are checked from C). Skips where the machine has no
gcc or cannot run ThreadSanitizer; fails on any report or a non-zero exit."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NATIVE = Path(__file__).resolve().parent / "native"


def run_under_thread_sanitizer(tmp_path: Path, program: str, csources: Sequence[str]) -> str:
    """Compile `native/<program>.c` with the `csrc/` files `csources`, run it, and return its stdout."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    exe = tmp_path / program
    # not the ASan runtime the sanitizer run preloads into Python
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    csrc = ROOT / "csrc"
    build = subprocess.run(
        [gcc, "-O1", "-g", "-fsanitize=thread", f"-I{csrc}", f"-I{NATIVE}", "-o", str(exe),
         str(NATIVE / f"{program}.c"), *(str(csrc / name) for name in csources), "-lpthread"],
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
    return done.stdout
