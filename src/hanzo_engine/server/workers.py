"""Serving HTTP from several processes: one primary process and `--http-workers - 1` search workers.

Python runs one thread of Python code at a time per process, so one process serves from one core. The
server therefore runs N processes over the same LMDB environments (LMDB readers work across processes):

- the **primary** (the process the user started) is the whole single-process server: the scheduler and
  its writer thread, the key store, the instance routes, the dump and snapshot timers. It listens on the
  public address and on a Unix socket private to the instance;
- each **search worker** (`hanzo_engine.cli.worker`) listens on the same public address (`SO_REUSEPORT`:
  the kernel spreads new connections over the processes) and answers the search routes itself (search,
  multi-search, facet search, similar) from read-only environments; every other request is forwarded,
  streamed, to the primary's Unix socket (`server.proxy`), so writes, settings, keys, tasks and every
  other route behave exactly as with one process.

What holds across the processes:
- an acknowledged write was committed by the primary, the one scheduler, before its `202`;
- a search sees a task's effects as soon as the task is `succeeded`: the index commit precedes the task
  status, and an LMDB reader sees every commit made before it began, whichever process made it;
- API keys and experimental features are re-read by a worker as soon as their storage changed (the
  auth env's last transaction id, the features file's stamp), so a deleted key is refused everywhere
  from the next request on;
- the search queue's capacity counts the waiting searches of every process (`shared_counts`), and
  `/metrics` sums the HTTP metrics each worker publishes in the runtime directory;
- a worker that dies is started again; a worker exits when the primary dies (`PR_SET_PDEATHSIG`), so
  a `kill -9` of the primary leaves no process holding the port.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

log = logging.getLogger("hanzo_engine.server.workers")

WORKER_ENV: Final = "HANZO_WORKER_SPEC"
PRIMARY_SOCKET: Final = "primary.sock"
SEARCH_COUNTS: Final = "search-queue"
FEATURES_CHANGES: Final = "features-changes"  # `SharedGeneration` of the experimental features
METRICS_PREFIX: Final = "metrics-"
# a worker that dies this soon after starting is restarted only after a pause (a crash loop must not
# eat the CPU the other processes serve with)
_QUICK_DEATH_SECONDS: Final = 5.0
_RESTART_PAUSE_SECONDS: Final = 2.0


RUNTIME_PREFIX: Final = "hanzo-engine-"
PID_FILE: Final = "primary.pid"


def make_runtime_dir() -> Path:
    """A private directory for the instance's Unix socket and shared counters (short path: Unix socket
    paths are limited to ~100 bytes). The directories that primaries killed by a signal left behind
    are removed first."""
    _sweep_runtime_dirs(Path(tempfile.gettempdir()))
    path = Path(tempfile.mkdtemp(prefix=RUNTIME_PREFIX))
    (path / PID_FILE).write_text(str(os.getpid()))
    return path


def _sweep_runtime_dirs(parent: Path) -> None:
    for path in parent.glob(f"{RUNTIME_PREFIX}*"):
        try:
            pid = int((path / PID_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours, or being created
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:
            pass  # another user's live server


def ensure_port_free(host: str, port: int) -> None:
    """OSError (EADDRINUSE) when another program listens on `host:port`. `SO_REUSEPORT` would let a
    second server of the same user bind the port beside the first and split its connections: the
    primary probes with a socket without it first, as a single-process server would bind."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))


def listening_socket(host: str, port: int, *, backlog: int = 2048) -> socket.socket:
    """A TCP socket bound with `SO_REUSEPORT`, so that every process of the server binds its own and the
    kernel balances the new connections between them (the primary checks `ensure_port_free` first)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(False)
    return sock


def unix_socket(path: Path, *, backlog: int = 2048) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path.unlink(missing_ok=True)
    sock.bind(str(path))
    os.chmod(path, 0o600)
    sock.listen(backlog)
    return sock


class WorkerPool:
    """The search worker processes of one primary: started, watched and restarted, stopped."""

    def __init__(self, count: int, cli_values: Mapping[str, Any], runtime_dir: Path) -> None:
        self.count = count
        self.cli_values = dict(cli_values)
        self.runtime_dir = runtime_dir
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._started_at: dict[int, float] = {}
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.restarts = 0

    def _spawn(self, slot: int) -> None:
        spec = {
            "slot": slot,
            "cli": self.cli_values,
            "cwd": os.getcwd(),
            "runtime_dir": str(self.runtime_dir),
            "primary_pid": os.getpid(),
        }
        env = dict(os.environ)
        env[WORKER_ENV] = json.dumps(spec)
        proc = subprocess.Popen([sys.executable, "-m", "hanzo_engine.cli.worker"], env=env, close_fds=True)
        with self._lock:
            self._procs[slot] = proc
            self._started_at[slot] = time.monotonic()
        log.info("search worker started", extra={"worker": slot, "pid": proc.pid})

    def start(self) -> None:
        # Spawned by the watcher thread, which lives as long as the pool: a worker's PR_SET_PDEATHSIG
        # fires when the thread that started it ends.
        self._thread = threading.Thread(target=self._watch, name="hanzo-workers", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        for slot in range(1, self.count):
            self._spawn(slot)
        while not self._stopping.wait(0.2):
            with self._lock:
                dead = [(slot, proc) for slot, proc in self._procs.items() if proc.poll() is not None]
            for slot, proc in dead:
                if self._stopping.is_set():
                    return
                lived = time.monotonic() - self._started_at[slot]
                log.warning(
                    "search worker exited; starting it again",
                    extra={"worker": slot, "pid": proc.pid, "returncode": proc.returncode},
                )
                self.restarts += 1
                if lived < _QUICK_DEATH_SECONDS and self._stopping.wait(_RESTART_PAUSE_SECONDS):
                    return
                self._spawn(slot)
        self._terminate()

    def signal_all(self, signum: int) -> list[int]:
        """Send `signum` to every live worker; the slots of those signalled."""
        with self._lock:
            live = [(slot, proc) for slot, proc in self._procs.items() if proc.poll() is None]
        sent = []
        for slot, proc in live:
            try:
                proc.send_signal(signum)
                sent.append(slot)
            except ProcessLookupError:
                pass
        return sent

    def pids(self) -> list[int]:
        with self._lock:
            return [proc.pid for proc in self._procs.values() if proc.poll() is None]

    def _terminate(self) -> None:
        with self._lock:
            procs = list(self._procs.values())
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=20)
        shutil.rmtree(self.runtime_dir, ignore_errors=True)
