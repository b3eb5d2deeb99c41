"""`python -m hanzo_engine.cli.worker`: one search worker process, started by the primary server process.

Its options are the primary's (the command-line values it passed in `HANZO_WORKER_SPEC`, the same
environment and working directory), resolved by the same `load_options`. See `hanzo_engine.server.workers`.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from hanzo_engine.server.options import ConfigError, load_options

from . import _LEVELS, configure_logging

_PR_SET_PDEATHSIG = 1


def _die_with_primary(primary_pid: int) -> None:
    """Exit when the primary dies, even by `kill -9`: the kernel sends SIGTERM (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != primary_pid:  # it died before the request above took effect
        sys.exit(0)


def _watch_primary(primary_pid: int) -> None:
    """Where PR_SET_PDEATHSIG is missing: notice the primary's death by polling (a daemon thread)."""
    while os.getppid() == primary_pid:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)


def main() -> None:
    from hanzo_engine.server.workers import WORKER_ENV, listening_socket

    spec: dict[str, Any] = json.loads(os.environ[WORKER_ENV])
    _die_with_primary(spec["primary_pid"])
    try:
        opts = load_options(spec["cli"], os.environ, cwd=Path(spec["cwd"]))
    except ConfigError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    configure_logging(opts)
    # the proxy's client logs every forwarded request at INFO: the primary logs them already
    logging.getLogger("httpx").setLevel(logging.WARNING)

    import uvicorn

    from hanzo_engine.server.worker_app import create_worker_app

    app = create_worker_app(opts, Path(spec["runtime_dir"]), int(spec["slot"]))
    host, port = opts.host_port
    sock = listening_socket(host, port)
    config = uvicorn.Config(
        app, log_level=_LEVELS[opts.log_level][1], access_log=False, lifespan="on", log_config=None
    )
    threading.Thread(
        target=_watch_primary, args=(spec["primary_pid"],), name="hanzo-primary-watch", daemon=True
    ).start()
    gc.freeze()
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
