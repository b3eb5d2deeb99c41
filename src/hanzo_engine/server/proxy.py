"""Forward a request to the server's primary process over its Unix socket, streaming both ways.

A search worker answers the search routes itself and hands every other request to the primary process
(the one that runs the scheduler, the key store's writes and the instance routes), so that writes,
settings, keys, tasks, dumps and every route's behaviour are the single-process server's. Bodies are
streamed both ways, untouched: the primary decodes and compresses as it would for the client itself,
and `X-Hanzo-Wait-For-Task` holds the answer there as long as it asks.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Final

import httpx
import msgspec
from starlette.types import Message, Receive, Scope, Send

log = logging.getLogger("hanzo_engine.server.proxy")

# hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection; the rest pass through unchanged
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
    }
)

_UNREACHABLE: Final = msgspec.json.encode(
    {
        "message": "The server's writer process cannot be reached; retry in a moment.",
        "code": "internal",
        "type": "internal",
        "link": "https://docs.meilisearch.com/errors#internal",
    }
)


_PRIMARY: Final = httpx.URL("http://primary/")


def _target(scope: Scope) -> bytes:
    """The request target as the client sent it (the primary decodes it as for a direct request), with
    bytes a URL may not carry raw percent-encoded."""
    raw: bytes = scope.get("raw_path") or scope["path"].encode()
    if any(b <= 0x20 or b >= 0x7F for b in raw):
        raw = b"".join(b"%%%02X" % b if (b <= 0x20 or b >= 0x7F) else bytes((b,)) for b in raw)
    query: bytes = scope.get("query_string", b"")
    return raw + b"?" + query if query else raw


class PrimaryProxy:
    """An ASGI app that forwards each HTTP request to the primary process's Unix socket."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # no read timeout: a held write (`X-Hanzo-Wait-For-Task`) or a log stream lasts as it must
            self._client = httpx.AsyncClient(
                transport=httpx.AsyncHTTPTransport(uds=self.socket_path, retries=2),
                timeout=httpx.Timeout(None, connect=10.0),
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
            )
            # forward the client's headers only: httpx's defaults would ask the primary for a compressed
            # body the client never accepted (and name httpx as the user agent)
            for name in ("accept", "accept-encoding", "user-agent"):
                del self._client.headers[name]
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        headers = [(k, v) for k, v in scope["headers"] if k not in _HOP_BY_HOP]
        # a body is announced by its length or as chunked; httpx frames it the same way
        has_body = any(k in (b"content-length", b"transfer-encoding") for k, _ in scope["headers"])
        url = _PRIMARY.copy_with(raw_path=_target(scope))

        async def body() -> AsyncIterator[bytes]:
            while True:
                message: Message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                if chunk:
                    yield chunk
                if not message.get("more_body", False):
                    return

        client = self._http()
        request = client.build_request(
            scope["method"], url, headers=headers, content=body() if has_body else None
        )
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            log.warning("the primary process did not answer a forwarded request: %s", exc)
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
            return
        try:
            # the worker's own uvicorn adds `date` and `server`: the primary's would be duplicates
            out_headers = [
                (k.lower(), v)
                for k, v in response.headers.raw
                if k.lower() not in _HOP_BY_HOP and k.lower() not in (b"date", b"server")
            ]
            await send(
                {"type": "http.response.start", "status": response.status_code, "headers": out_headers}
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()
