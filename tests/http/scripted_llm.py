"""A scripted OpenAI-compatible chat-completions server for the chat tests (loopback, Starlette + uvicorn
in a thread).

Each `POST .../chat/completions` takes the next `Reply` of the script (a plain text answer when the script
is empty) and records the request (`requests`: path, headers, JSON body). A reply streams its chunks as
OpenAI does (`data: <json>` events, `data: [DONE]` unless `done=False`), after `delay` seconds per chunk;
`status`/`body` make it an HTTP error instead; each recorded request holds `received_at` and, once its
reply is sent, `finished_at` (`time.monotonic()`); `hang` keeps the connection open without sending anything
until the client goes away, which sets `aborted`. `POST /embed` is a REST embedder (`embed`), for hybrid
chat searches.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.conftest import free_port

MODEL = "gpt-test"


@dataclass
class Reply:
    chunks: list[Any] = field(default_factory=list)  # dicts (JSON) or raw strings sent as `data:` lines
    status: int = 200
    body: Any = None  # the JSON body of an error answer
    delay: float = 0.0
    done: bool = True
    hang: bool = False


def chunk(delta: dict[str, Any], finish: str | None = None, *, cid: str = "chatcmpl-1") -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": MODEL,
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def usage() -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": MODEL,
        "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def text_reply(*parts: str, delay: float = 0.0) -> Reply:
    """An answer streamed in `parts`, finished with `stop`, then the usage chunk."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": p}) for p in parts]
    chunks += [chunk({}, "stop"), usage()]
    return Reply(chunks, delay=delay)


def tool_reply(*calls: tuple[str, dict[str, Any]], pieces: int = 3) -> Reply:
    """The LLM asks for `_meiliSearchInIndex` calls `(call id, arguments)`, each argument string streamed in
    `pieces` fragments, and finishes with `tool_calls`."""
    chunks: list[Any] = [chunk({"role": "assistant", "content": None})]
    for i, (call_id, arguments) in enumerate(calls):
        text = json.dumps(arguments)
        size = max(1, -(-len(text) // pieces))
        fragments = [text[j : j + size] for j in range(0, len(text), size)]
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "_meiliSearchInIndex", "arguments": ""},
                        }
                    ]
                }
            )
        )
        chunks += [chunk({"tool_calls": [{"index": i, "function": {"arguments": f}}]}) for f in fragments]
    chunks += [chunk({}, "tool_calls"), usage()]
    return Reply(chunks)


def embed(text: Any) -> list[float]:
    """A deterministic 3-dimensional embedding: how much of the text is vowels, digits, other."""
    value = str(text).lower()
    vowels = sum(c in "aeiouy" for c in value)
    digits = sum(c.isdigit() for c in value)
    return [vowels + 1.0, digits + 1.0, len(value) - vowels - digits + 1.0]


class ScriptedLlm:
    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.embedded: list[Any] = []  # the texts sent to `/embed`
        self.aborted = threading.Event()
        self.port = free_port()
        self._lock = threading.Lock()
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"])])
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="off",
            ws="none",
            access_log=False,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedLlm:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the scripted LLM did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    def play(self, *replies: Reply) -> None:
        with self._lock:
            self.script = list(replies)
            self.requests = []
            self.aborted.clear()

    async def _handle(self, request: Request) -> Response:
        received_at = time.monotonic()
        body = json.loads(await request.body())
        if request.url.path == "/embed":
            # a REST embedder for hybrid chat searches: `{"data": <vector of the text>}`
            with self._lock:
                self.embedded.append(body)
            return Response(json.dumps({"data": embed(body)}), media_type="application/json")
        record: dict[str, Any] = {
            "path": request.url.path,
            "query": request.url.query,
            "headers": dict(request.headers),
            "body": body,
            "received_at": received_at,
        }
        with self._lock:
            self.requests.append(record)
            reply = self.script.pop(0) if self.script else text_reply("ok")
        if reply.status != 200:
            return Response(json.dumps(reply.body), status_code=reply.status, media_type="application/json")

        async def events() -> AsyncIterator[bytes]:
            if reply.hang:
                # the wait ends when the client goes away: noticed here, or by Starlette cancelling us
                try:
                    deadline = time.monotonic() + 60
                    while time.monotonic() < deadline and not await request.is_disconnected():
                        await asyncio.sleep(0.05)
                finally:
                    self.aborted.set()
                return
            for item in reply.chunks:
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                data = item if isinstance(item, str) else json.dumps(item)
                yield f"data: {data}\n\n".encode()
            if reply.done:
                yield b"data: [DONE]\n\n"
            record["finished_at"] = time.monotonic()

        return StreamingResponse(events(), media_type="text/event-stream")
