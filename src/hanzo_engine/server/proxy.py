"""Forward a request to the server's primary process over its Unix socket, streaming both ways.

A search worker answers the search routes itself and hands every other request to the primary process
(the one that runs the scheduler, the key store's writes and the instance routes), so that writes,
settings, keys, tasks, dumps and every route's behaviour are the single-process server's. Bodies are
streamed both ways, untouched: the primary decodes and compresses as it would for the client itself,
and `X-Hanzo-Wait-For-Task` holds the answer there as long as it asks.

The forwarding is plain HTTP/1.1 over keep-alive connections kept in a small pool: a general-purpose
client's per-request bookkeeping (header models, pool scans, response state machines) cost more CPU
than the forwarded write itself. A pooled connection is reused only while it is younger (idle) than
the primary's keep-alive timeout, so the primary never closes one under a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Final

import msgspec
from starlette.types import Message, Receive, Scope, Send

log = logging.getLogger("hanzo_engine.server.proxy")

# hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection; the rest pass through unchanged.
# `expect` too: the body is sent without waiting for a `100 Continue`.
_HOP_BY_HOP: Final = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"expect",
    }
)
# the worker's own uvicorn adds `date` and `server`: the primary's would be duplicates
_NOT_RETURNED: Final = _HOP_BY_HOP | {b"date", b"server"}

_UNREACHABLE: Final = msgspec.json.encode(
    {
        "message": "The server's writer process cannot be reached; retry in a moment.",
        "code": "internal",
        "type": "internal",
        "link": "https://docs.meilisearch.com/errors#internal",
    }
)

# below uvicorn's default keep-alive timeout (5 s), after which the primary closes an idle connection
_MAX_IDLE_SECONDS: Final = 3.0
_MAX_IDLE_CONNECTIONS: Final = 64
_CONNECT_TIMEOUT: Final = 10.0
_CONNECT_ATTEMPTS: Final = 3
_HEAD_LIMIT: Final = 1 << 20  # the primary's status line and headers
_READ_SIZE: Final = 1 << 16


class _Upstream:
    """One HTTP/1.1 connection to the primary."""

    __slots__ = ("idle_since", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def usable(self, now: float) -> bool:
        return (
            now - self.idle_since < _MAX_IDLE_SECONDS
            and not self.reader.at_eof()
            and not self.writer.is_closing()
        )

    def close(self) -> None:
        self.writer.close()


class _BadResponse(Exception):
    """The primary's answer is not HTTP/1.1 as uvicorn writes it."""


class _ClientGone(Exception):
    """The client disconnected before its whole body was received."""


def _target(scope: Scope) -> bytes:
    """The request target as the client sent it (the primary decodes it as for a direct request), with
    bytes a URL may not carry raw percent-encoded."""
    raw: bytes = scope.get("raw_path") or scope["path"].encode()
    if any(b <= 0x20 or b >= 0x7F for b in raw):
        raw = b"".join(b"%%%02X" % b if (b <= 0x20 or b >= 0x7F) else bytes((b,)) for b in raw)
    query: bytes = scope.get("query_string", b"")
    return raw + b"?" + query if query else raw


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, list[tuple[bytes, bytes]], bool]:
    """The status, headers (names lowercased) and HTTP version 1.1-ness of the next final response
    (informational ones skipped)."""
    while True:
        raw = await reader.readuntil(b"\r\n\r\n")
        lines = raw[:-4].split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise _BadResponse(lines[0][:100])
        status = int(parts[1])
        if 100 <= status < 200:
            continue
        headers = []
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                raise _BadResponse(line[:100])
            headers.append((name.strip().lower(), value.strip()))
        return status, headers, parts[0] == b"HTTP/1.1"


class PrimaryProxy:
    """An ASGI app that forwards each HTTP request to the primary process's Unix socket."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self._idle: list[_Upstream] = []

    async def _connect(self) -> _Upstream:
        now = time.monotonic()
        while self._idle:
            upstream = self._idle.pop()  # the most recently used: the least likely to be stale
            if upstream.usable(now):
                return upstream
            upstream.close()
        for attempt in range(_CONNECT_ATTEMPTS):
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_unix_connection(self.socket_path, limit=_HEAD_LIMIT), _CONNECT_TIMEOUT
                )
                return _Upstream(reader, writer)
            except (OSError, TimeoutError):
                if attempt == _CONNECT_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def _release(self, upstream: _Upstream) -> None:
        upstream.idle_since = time.monotonic()
        self._idle.append(upstream)
        if len(self._idle) > _MAX_IDLE_CONNECTIONS:
            self._idle.pop(0).close()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for upstream in idle:
            upstream.close()
            with contextlib.suppress(OSError):
                await upstream.writer.wait_closed()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        method: str = scope["method"]
        head = [b"%s %s HTTP/1.1\r\nhost: primary\r\n" % (method.encode(), _target(scope))]
        length: int | None = None
        chunked = False
        for name, value in scope["headers"]:
            if name == b"transfer-encoding":
                chunked = True
            elif name not in _HOP_BY_HOP:
                if name == b"content-length":
                    length = int(value) if value.isdigit() else None
                head.append(b"%s: %s\r\n" % (name, value))
        # a body is announced by its length or as chunked, and forwarded framed the same way
        chunked = chunked and length is None
        if chunked:
            head.append(b"transfer-encoding: chunked\r\n")
        head.append(b"\r\n")

        try:
            upstream = await self._connect()
        except (OSError, TimeoutError) as exc:
            log.warning("the primary process did not answer a forwarded request: %s", exc)
            await _unreachable(send)
            return
        reusable = False
        try:
            try:
                upstream.writer.write(b"".join(head))
                if length is not None or chunked:
                    await _forward_body(upstream.writer, receive, chunked)
                status, headers, http11 = await _read_head(upstream.reader)
            except _ClientGone:
                return
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, _BadResponse) as exc:
                log.warning("the primary process did not answer a forwarded request: %s", exc)
                await _unreachable(send)
                return
            out_headers = [(k, v) for k, v in headers if k not in _NOT_RETURNED]
            await send({"type": "http.response.start", "status": status, "headers": out_headers})
            reusable = await _forward_response(upstream.reader, headers, method, status, send) and http11
            await send({"type": "http.response.body", "body": b""})
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            # cut or garbled mid-body: the client's connection is dropped as the primary's was
            raise ConnectionError(f"the primary process cut a forwarded answer: {exc}") from None
        finally:
            if reusable:
                self._release(upstream)
            else:
                upstream.close()


async def _unreachable(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(_UNREACHABLE)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _UNREACHABLE})


async def _forward_body(writer: asyncio.StreamWriter, receive: Receive, chunked: bool) -> None:
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk: bytes = message.get("body", b"")
        if chunk:
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            await writer.drain()
        if not message.get("more_body", False):
            break
    if chunked:
        writer.write(b"0\r\n\r\n")
    await writer.drain()


async def _forward_response(
    reader: asyncio.StreamReader, headers: list[tuple[bytes, bytes]], method: str, status: int, send: Send
) -> bool:
    """Stream the answer's body to the client, de-chunked; True when the connection can serve another
    request."""
    keep_alive = not any(k == b"connection" and b"close" in v.lower() for k, v in headers)
    if method == "HEAD" or status in (204, 304):
        return keep_alive
    framing = dict(headers)
    if b"chunked" in framing.get(b"transfer-encoding", b"").lower():
        while size := int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16):
            chunk = await reader.readexactly(size + 2)
            await send({"type": "http.response.body", "body": chunk[:-2], "more_body": True})
        while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
            pass
        return keep_alive
    declared = framing.get(b"content-length")
    if declared is None:  # delimited by the end of the connection
        while chunk := await reader.read(_READ_SIZE):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        return False
    remaining = int(declared)
    while remaining > 0:
        chunk = await reader.read(min(remaining, _READ_SIZE))
        if not chunk:
            raise asyncio.IncompleteReadError(b"", remaining)
        remaining -= len(chunk)
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    return keep_alive
