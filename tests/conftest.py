"""Shared fixtures: a real hanzo-engine server process on a free port with a temporary data dir."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

MASTER_KEY = "a-master-key-of-32-bytes-for-tests"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ServerProcess:
    db_path: Path
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ServerProcess:
        self.port = free_port()
        self.log_path = self.db_path.parent / f"server-{self.port}.log"
        cmd = [
            sys.executable,
            "-m",
            "hanzo_engine",
            "--db-path",
            str(self.db_path),
            "--http-addr",
            f"127.0.0.1:{self.port}",
            "--no-analytics",
            *self.extra_args,
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEILI_")}
        # a test server never waits minutes on an embedding service (a fuzzed embedder may point at
        # api.openai.com, unreachable here): no wait between retries, short requests
        env.update(
            {
                "MEILI_EXPERIMENTAL_REST_EMBEDDER_MAX_RETRY_DURATION_SECONDS": "0",
                "MEILI_EXPERIMENTAL_REST_EMBEDDER_TIMEOUT_SECONDS": "5",
            }
        )
        env.update(self.env)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(self.db_path.parent)
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=0.5).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"server did not become healthy:\n{self.output()}")

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self.proc = None


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One open (no master key) server shared by the tests that do not care about isolation."""
    srv = ServerProcess(tmp_path_factory.mktemp("srv") / "data.ms").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def secured_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("secured") / "data.ms", extra_args=["--master-key", MASTER_KEY]
    ).start()
    yield srv
    srv.stop()


@pytest.fixture
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


@pytest.fixture
def client(server: ServerProcess) -> Any:
    import meilisearch

    return meilisearch.Client(server.url)


_counter = [0]


@pytest.fixture
def index_uid(request: pytest.FixtureRequest) -> str:
    """A fresh index uid per test, so tests sharing the session server never collide."""
    _counter[0] += 1
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:60]
    return f"{name}_{_counter[0]}"


def wait_task(http: httpx.Client, uid: int, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task: dict[str, Any] = http.get(f"/tasks/{uid}").json()
        if task["status"] in ("succeeded", "failed", "canceled"):
            return task
        time.sleep(0.01)
    raise TimeoutError(f"task {uid} did not finish")
