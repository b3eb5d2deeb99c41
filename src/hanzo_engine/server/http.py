"""HTTP plumbing shared by every route: JSON responses, bounded body reading, content decoding."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any, Final, Protocol, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.errors import MeiliError, index_not_found
from hanzo_engine.engine.index import Index, IndexClosed, IndexReader
from hanzo_engine.scheduler.store import TaskStore

T = TypeVar("T")


class IndexSource(Protocol):
    """Where searches find an index by uid and read the instance's stored state (the network, the
    dynamic search rules): the scheduler, or a search worker's read-only view."""

    @property
    def store(self) -> TaskStore: ...

    def index(self, uid: str) -> Index | None: ...


_encoder = msgspec.json.Encoder()


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return _encoder.encode(content)


_BINARY_UNITS: Final = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def human_size(limit: int) -> str:
    """The limit as byte_unit's `get_appropriate_unit(UnitType::Binary)` prints it.

    Meilisearch formats the limit in the largest binary unit not above it, the value being an f64 in
    Rust's shortest form: 100 MB (the default, 100_000_000 bytes) is "95.367431640625 MiB".
    """
    unit = 0
    while unit + 1 < len(_BINARY_UNITS) and limit >= 1024 ** (unit + 1):
        unit += 1
    value = limit / 1024**unit
    text = repr(value)
    if text.endswith(".0"):
        text = text[:-2]  # Rust prints integral f64 values without a fraction
    return f"{text} {_BINARY_UNITS[unit]}"


def payload_too_large(limit: int) -> MeiliError:
    return MeiliError(
        "payload_too_large",
        f"The provided payload reached the size limit. The maximum accepted payload size is {human_size(limit)}.",
    )


# actix answers a body its decoder cannot read with `PayloadError::Incomplete`, which Meilisearch maps to this.
INCOMPLETE_PAYLOAD: Final = "The provided payload is incomplete and cannot be parsed"


async def read_body(request: Request) -> bytes:
    """The request body, decompressed per Content-Encoding, refused past the payload size limit.

    The limit applies to the bytes received and to the decompressed payload alike. Encodings actix
    does not know are passed through untouched, as actix treats them as `identity`.
    """
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
    if not body:
        return body  # nothing reached the decoder: the route reports its missing payload
    if encoding == "gzip":
        return _inflate(body, 16 + zlib.MAX_WBITS, limit)
    if encoding == "deflate":
        return _inflate(body, zlib.MAX_WBITS, limit)
    if encoding == "br":
        return _unbrotli(body, limit)
    if encoding == "zstd":
        return _unzstd(body, limit)
    return body


def _unbrotli(body: bytes, limit: int) -> bytes:
    import brotli

    decomp = brotli.Decompressor()
    try:
        out = decomp.process(body, output_buffer_limit=limit + 1)
    except (brotli.error, TypeError):
        # older brotli bindings have no output limit: decode whole, then check the size
        try:
            out = brotli.decompress(body)
        except brotli.error:
            raise MeiliError("bad_request", INCOMPLETE_PAYLOAD) from None
    if len(out) > limit:
        raise payload_too_large(limit)
    if hasattr(decomp, "is_finished") and not decomp.is_finished():
        raise MeiliError("bad_request", INCOMPLETE_PAYLOAD)
    return bytes(out)


def _unzstd(body: bytes, limit: int) -> bytes:
    import zstandard

    try:
        reader = zstandard.ZstdDecompressor().decompressobj()
        out = reader.decompress(body)
    except zstandard.ZstdError:
        raise MeiliError("bad_request", INCOMPLETE_PAYLOAD) from None
    if len(out) > limit:
        raise payload_too_large(limit)
    if not reader.eof:
        raise MeiliError("bad_request", INCOMPLETE_PAYLOAD)
    return out


def _inflate(body: bytes, wbits: int, limit: int) -> bytes:
    """zlib-decode a whole body; a stream that is corrupt or ends early is an incomplete payload."""
    decomp = zlib.decompressobj(wbits)
    try:
        out = decomp.decompress(body, limit + 1)
    except zlib.error:
        raise MeiliError("bad_request", INCOMPLETE_PAYLOAD) from None
    if len(out) > limit or decomp.unconsumed_tail:
        raise payload_too_large(limit)
    if not decomp.eof:
        raise MeiliError("bad_request", INCOMPLETE_PAYLOAD)
    return out


def query_pairs(request: Request) -> list[tuple[str, str]]:
    return list(request.query_params.multi_items())


def read_index(scheduler: IndexSource, uid: str, read: Callable[[IndexReader], T]) -> T:
    """`read(reader)` in one read transaction of index `uid`; 404 `index_not_found` when it is absent.

    The index mapper may close an environment at any moment (the index was deleted, or its env was
    evicted to bound the open ones): the read then runs again on the env opened afresh, and answers
    404 when the index no longer exists.
    """
    for _ in range(3):
        index = scheduler.index(uid)
        if index is None:
            break
        try:
            with index.read() as reader:
                return read(reader)
        except IndexClosed:
            continue
    raise index_not_found(uid)
