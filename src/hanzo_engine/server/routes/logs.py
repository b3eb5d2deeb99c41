"""`/logs/stderr` and `/logs/stream` (the `logsRoute` experimental feature).

`/logs/stderr` filters the stderr handler with a tracing-style target (`info`,
`hanzo_engine.scheduler=debug,uvicorn=off`, targets being logger-name prefixes); `/logs/stream` streams
records (human or JSON lines; `profile` mode is answered as JSON lines) to one client at a time until it
disconnects or `DELETE /logs/stream`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from hanzo_engine.apitypes.deserr import Field, InvalidValue, decode_json_body, deserialize_object
from hanzo_engine.apitypes.errors import MeiliError

from ..features import feature_not_enabled, runtime_features
from ..http import read_body

LOGS_LINK: Final = "https://github.com/orgs/meilisearch/discussions/721"
TRACE: Final = 5
_LEVELS: Final = {
    "trace": TRACE,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "off": logging.CRITICAL + 1,
}
_LEVEL_ERROR: Final = (
    'error parsing level filter: expected one of "off", "error", "warn", "info", "debug", '
    '"trace", or a number 0-5'
)
_NUMERIC_LEVELS: Final = ("off", "error", "warn", "info", "debug", "trace")


class LogTargets(logging.Filter):
    """A tracing `Targets` filter: per logger-name prefix a minimum level (longest prefix wins)."""

    def __init__(self, default: int, targets: list[tuple[str, int]]) -> None:
        super().__init__()
        self.default = default
        self.targets = sorted(targets, key=lambda t: -len(t[0]))

    @classmethod
    def parse(cls, text: str) -> LogTargets:
        default = logging.CRITICAL + 1  # tracing: a target list without a bare level enables nothing else
        targets: list[tuple[str, int]] = []
        for directive in (d.strip() for d in text.split(",")):
            if not directive:
                continue
            name, sep, level_text = directive.partition("=")
            bare = None if sep else _level(name)
            if bare is not None:
                default = bare
                continue
            level = TRACE if not sep else _level(level_text)
            if level is None:
                raise InvalidValue(_LEVEL_ERROR)
            if not name or any(c.isspace() for c in name):
                raise InvalidValue("invalid filter directive")
            targets.append((name, level))
        return cls(default, targets)

    def level_for(self, name: str) -> int:
        for prefix, level in self.targets:
            if name == prefix or name.startswith(prefix + "."):
                return level
        return self.default

    def min_level(self) -> int:
        return min([self.default, *(level for _p, level in self.targets)])

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.level_for(record.name)


def _level(text: str) -> int | None:
    text = text.strip().lower()
    if text.isdigit() and int(text) <= 5:
        return _LEVELS[_NUMERIC_LEVELS[int(text)]]
    return _LEVELS.get("warn" if text == "warning" else text)


def _parse_targets(text: str) -> LogTargets:
    return LogTargets.parse(text)


def _targets(value: str | LogTargets) -> LogTargets:
    """The body's `target`: parsed by its validator, or the default text (defaults skip validators)."""
    return value if isinstance(value, LogTargets) else LogTargets.parse(value)


_STDERR_BODY: Final = (Field("target", "string", "bad_request", default="info", validate=_parse_targets),)
_STREAM_BODY: Final = (
    Field("target", "string", "bad_request", default="info", validate=_parse_targets),
    Field("mode", "string", "bad_request", default="human", choices=("human", "json", "profile")),
    Field("profileMemory", "boolean", "bad_request", default=False),
)


def _stderr_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if getattr(h, "_hanzo_engine", False)]


def _targets_of(handler: logging.Handler) -> list[LogTargets]:
    return [f for f in handler.filters if isinstance(f, LogTargets)]


async def logs_stderr(request: Request) -> Response:
    body = deserialize_object(
        decode_json_body(await read_body(request), request.headers.get("content-type")), _STDERR_BODY
    )
    if not runtime_features(request).enabled("logsRoute"):
        raise feature_not_enabled("Modifying logs through the `/logs/*` routes", "logs route", LOGS_LINK)
    targets = _targets(body["target"])
    for handler in _stderr_handlers():
        for old in _targets_of(handler):
            handler.removeFilter(old)
        handler.addFilter(targets)
    _log_stream(request).refresh_root_level()
    return Response(status_code=204)


def _human_line(record: logging.LogRecord) -> str:
    when = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    level = "WARN" if record.levelno == logging.WARNING else record.levelname
    return f"{when} {level:>5} {record.name}: {record.getMessage()}\n"


def _json_line(record: logging.LogRecord) -> str:
    when = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    level = "WARN" if record.levelno == logging.WARNING else record.levelname
    return (
        json.dumps(
            {
                "timestamp": when,
                "level": level,
                "fields": {"message": record.getMessage()},
                "target": record.name,
            }
        )
        + "\n"
    )


class _StreamHandler(logging.Handler):
    """Hands formatted records to the streaming response's queue, from any thread (drops when full)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None], as_json: bool
    ) -> None:
        super().__init__(level=TRACE)
        self.loop = loop
        self.queue = queue
        self.as_json = as_json

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = _json_line(record) if self.as_json else _human_line(record)
            self.loop.call_soon_threadsafe(self._put, line)
        except Exception:  # a closed loop or a bad record must never break the caller's logging
            self.handleError(record)

    def _put(self, line: str) -> None:
        if not self.queue.full():
            self.queue.put_nowait(line)


class _LogStream:
    """The one running `/logs/stream` (Meilisearch allows a single one at a time), and the root
    logger's level: records below it are never created, so it follows the lowest level the stderr
    filter and the stream need, and goes back up when they no longer do."""

    def __init__(self) -> None:
        self.handler: _StreamHandler | None = None
        self.base_level = logging.getLogger().level  # the `--log-level` the server started with

    def refresh_root_level(self) -> None:
        levels = [t.min_level() for h in _stderr_handlers() for t in _targets_of(h)] or [self.base_level]
        if self.handler is not None:
            levels += [t.min_level() for t in _targets_of(self.handler)]
        logging.getLogger().setLevel(max(TRACE, min(levels)))

    def stop(self) -> None:
        handler, self.handler = self.handler, None
        if handler is not None:
            logging.getLogger().removeHandler(handler)
            handler.loop.call_soon_threadsafe(handler.queue.put_nowait, None)
            self.refresh_root_level()


def _log_stream(request: Request) -> _LogStream:
    stream: _LogStream | None = getattr(request.app.state, "log_stream", None)
    if stream is None:
        stream = request.app.state.log_stream = _LogStream()
    return stream


async def logs_stream(request: Request) -> Response:
    body = deserialize_object(
        decode_json_body(await read_body(request), request.headers.get("content-type")), _STREAM_BODY
    )
    if not runtime_features(request).enabled("logsRoute"):
        raise feature_not_enabled("Modifying logs through the `/logs/*` routes", "logs route", LOGS_LINK)
    stream = _log_stream(request)
    if stream.handler is not None:
        raise MeiliError("bad_request", "The `/logs/stream` route is currently in use by someone else.")
    queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=10_000)
    handler = _StreamHandler(asyncio.get_running_loop(), queue, as_json=body["mode"] != "human")
    targets = _targets(body["target"])
    handler.addFilter(targets)
    stream.handler = handler
    logging.getLogger().addHandler(handler)
    stream.refresh_root_level()

    async def lines() -> AsyncIterator[str]:
        try:
            yield ""  # sends the headers now: the gzip middleware holds them until a first body chunk
            while (line := await queue.get()) is not None:
                yield line
        finally:
            if stream.handler is handler:
                stream.stop()

    return StreamingResponse(lines(), media_type="text/plain")


async def delete_logs_stream(request: Request) -> Response:
    if not runtime_features(request).enabled("logsRoute"):
        raise feature_not_enabled("Modifying logs through the `/logs/*` routes", "logs route", LOGS_LINK)
    _log_stream(request).stop()
    return Response(status_code=204)
