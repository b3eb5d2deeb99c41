"""HTTP plumbing shared by every route: JSON responses, bounded body reading, content decoding."""

from __future__ import annotations

import zlib
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.errors import MeiliError

_encoder = msgspec.json.Encoder()


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return _encoder.encode(content)


def human_size(limit: int) -> str:
    """Meilisearch prints the payload limit in decimal units (100 MB)."""
    for unit, factor in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if limit >= factor and limit % factor == 0:
            return f"{limit // factor} {unit}"
    return f"{limit} B"


def payload_too_large(limit: int) -> MeiliError:
    return MeiliError(
        "payload_too_large",
        f"The provided payload reached the size limit. The maximum accepted payload size is {human_size(limit)}.",
    )


async def read_body(request: Request) -> bytes:
    """The request body, decompressed per Content-Encoding, refused past the payload size limit."""
    limit: int = request.app.state.payload_limit
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise payload_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise payload_too_large(limit)
        chunks.append(chunk)
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return body
    return _decompress(body, encoding, limit)


def _decompress(body: bytes, encoding: str, limit: int) -> bytes:
    if encoding == "gzip":
        wbits = 16 + zlib.MAX_WBITS
    elif encoding == "deflate":
        wbits = zlib.MAX_WBITS
    else:
        raise MeiliError(
            "unsupported_media_type",
            f"The Content-Encoding `{encoding}` is not supported. Supported encodings are `gzip`, `deflate`.",
        )
    try:
        decomp = zlib.decompressobj(wbits)
        out = decomp.decompress(body, limit + 1)
        if len(out) > limit or decomp.unconsumed_tail:
            raise payload_too_large(limit)
        return out
    except zlib.error:
        # `deflate` is sometimes sent raw (without the zlib header); try that before giving up.
        if encoding == "deflate":
            try:
                out = zlib.decompressobj(-zlib.MAX_WBITS).decompress(body, limit + 1)
                if len(out) > limit:
                    raise payload_too_large(limit) from None
                return out
            except zlib.error:
                pass
        raise MeiliError(
            "malformed_payload", f"The payload could not be decoded as `{encoding}`."
        ) from None


def query_pairs(request: Request) -> list[tuple[str, str]]:
    return list(request.query_params.multi_items())
