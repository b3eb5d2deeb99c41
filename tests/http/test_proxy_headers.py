"""A search worker forwards requests to the primary with the client's headers only: a client that sent
no Accept-Encoding must not get a body compressed on the primary (httpx would otherwise add its own
`Accept-Encoding: gzip, deflate`, `Accept` and `User-Agent`)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse

from hanzo_engine.server.proxy import PrimaryProxy


async def _echo(scope: Any, receive: Any, send: Any) -> None:
    """A stand-in primary: answers with the headers it received."""
    if scope["type"] != "http":
        return
    request = Request(scope, receive)
    await JSONResponse({k: v for k, v in request.headers.items()})(scope, receive, send)


@pytest.fixture
def primary_socket(tmp_path: Path) -> Iterator[str]:
    path = str(tmp_path / "primary.sock")
    server = uvicorn.Server(uvicorn.Config(_echo, uds=path, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    yield path
    server.should_exit = True
    thread.join(timeout=10)


def _forward(socket_path: str, headers: list[tuple[bytes, bytes]]) -> tuple[dict[str, str], dict[str, str]]:
    """Send one GET through a PrimaryProxy; the response headers and the headers the primary saw."""
    messages: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    async def run() -> None:
        proxy = PrimaryProxy(socket_path)
        scope = {
            "type": "http",
            "method": "GET",
            "path": "/tasks",
            "raw_path": b"/tasks",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1:7700"), *headers],
        }
        try:
            await proxy(scope, receive, send)
        finally:
            await proxy.aclose()

    asyncio.run(run())
    start = messages[0]
    assert start["status"] == 200
    response_headers = {k.decode(): v.decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in messages[1:])
    return response_headers, json.loads(body)


def test_no_default_headers_are_added(primary_socket: str) -> None:
    _, seen = _forward(primary_socket, [(b"authorization", b"Bearer k")])
    assert "accept-encoding" not in seen
    assert "accept" not in seen
    assert "user-agent" not in seen
    assert seen["authorization"] == "Bearer k"


def test_client_headers_pass_through(primary_socket: str) -> None:
    client = [
        (b"accept-encoding", b"br"),
        (b"accept", b"application/json"),
        (b"user-agent", b"Meilisearch JS"),
    ]
    _, seen = _forward(primary_socket, client)
    assert seen["accept-encoding"] == "br"
    assert seen["accept"] == "application/json"
    assert seen["user-agent"] == "Meilisearch JS"
