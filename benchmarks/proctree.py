"""A server's process tree for the load and throughput benchmarks: how many HTTP worker processes to
ask for, and the CPU time and memory of the whole tree (a server with several workers is several
processes), read from /proc."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# /proc/<pid>/status and smaps_rollup fields summed by `memory`, by the name they are reported under
_STATUS_FIELDS = {
    "rss": "VmRSS",
    "anon": "RssAnon",
    "file": "RssFile",
    "shmem": "RssShmem",
    "peakRss": "VmHWM",
}
_ROLLUP_FIELDS = {"pss": "Pss"}


@functools.cache
def http_workers() -> int | None:
    """One HTTP worker per CPU when this build of the server has `--http-workers`, else None."""
    help_text = subprocess.run(
        [sys.executable, "-m", "hanzo_engine", "--help"], capture_output=True, text=True, timeout=120
    ).stdout
    return (os.cpu_count() or 1) if "--http-workers" in help_text else None


def http_workers_args() -> list[str]:
    """The server arguments asking for `http_workers()` processes (none without the flag)."""
    workers = http_workers()
    return ["--http-workers", str(workers)] if workers else []


def tree(root: int) -> list[int]:
    """`root` and its descendants (from the parent pid of every process in /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def cpu_seconds(root: int) -> float:
    """utime + stime + cutime + cstime over the tree: a reaped child's time stays counted in its parent."""
    ticks = 0
    for pid in tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += sum(int(x) for x in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def _field(text: str, key: str) -> int:
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def memory_bytes(root: int) -> dict[str, int]:
    """RSS (anonymous, file-backed, shared memory), peak RSS and PSS summed over the tree, in bytes, and
    its process count. PSS splits shared pages (LMDB maps, shared libraries) between their processes."""
    total = dict.fromkeys([*_STATUS_FIELDS, *_ROLLUP_FIELDS], 0)
    pids = tree(root)
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for name, key in _STATUS_FIELDS.items():
            total[name] += _field(status, key)
        for name, key in _ROLLUP_FIELDS.items():
            total[name] += _field(rollup, key)
    return {**total, "processes": len(pids)}


def memory(root: int) -> dict[str, Any]:
    """`memory_bytes` in MiB (one decimal), as `rssMiB`, `pssMiB`..."""
    return {
        k if k == "processes" else f"{k}MiB": v if k == "processes" else round(v / 2**20, 1)
        for k, v in memory_bytes(root).items()
    }


def settle(root: int, limit: float = 60.0) -> None:
    """Wait until the tree is idle (what a load left queued drained), at most `limit` seconds."""
    deadline = time.monotonic() + limit
    before = cpu_seconds(root)
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = cpu_seconds(root)
        if now - before < 0.03:
            return
        before = now
