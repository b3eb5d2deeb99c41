"""The streaming client of an OpenAI-compatible chat-completions endpoint (what async-openai does for
Meilisearch): where to send the request, with which headers, and how its SSE answer and its failures read.

`stream_chunks` yields each decoded `data:` chunk until `[DONE]`; any failure raises `LlmError` carrying
the error event Meilisearch streams to its client for it (`{"event_id", "type": "error", "error": {...}}`):
the provider's own error for an HTTP error status (OpenAI's `{"error": {...}}` or Mistral's flat shape),
`transport_error` for a connection that fails or times out, `stream_ended` for a stream cut before
`[DONE]`, `json_deserialize_error` for a chunk that is not JSON, `reqwest_error` for an error answer whose
body cannot be read. Destinations go through the outgoing-request IP policy (`net_guard`): checked once
before a conversation (a refused address is an error event before any round), and on every connection the
client opens (`GuardedBackend`: each resolved address checked, the connection made to a checked address,
so a DNS answer cannot change between the check and the connection).
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import AsyncGenerator
from typing import Any, Final

import anyio
import httpcore
import httpx
from starlette.concurrency import run_in_threadpool

from hanzo_engine.engine import net_guard

OPENAI_BASE: Final = "https://api.openai.com/v1/"
MISTRAL_BASE: Final = "https://api.mistral.ai/v1/"
CONNECT_TIMEOUT: Final = 10.0
READ_TIMEOUT: Final = 120.0  # longest wait for the next bytes of a streamed answer
# overrides READ_TIMEOUT (seconds), for deployments whose models think longer, and for tests
READ_TIMEOUT_ENV: Final = "HANZO_CHAT_LLM_READ_TIMEOUT"
# OpenAI models that predate the `developer` role: they get the system prompt as `system`
_OLD_OPENAI_MODELS: Final = ("gpt-3.5", "gpt-4", "gpt-4.1", "gpt-4.5", "gpt-4o", "chatgpt-4o")


def error_event(
    type_: str, message: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """Meilisearch's `StreamErrorEvent`."""
    return {
        "event_id": str(uuid.uuid4()),
        "type": "error",
        "error": {"type": type_, "code": code, "message": message, "param": param, "event_id": None},
    }


class LlmError(Exception):
    """The LLM call failed; `event` is the SSE error event to stream."""

    def __init__(self, event: dict[str, Any]) -> None:
        super().__init__(event["error"]["message"])
        self.event = event


def system_role(source: str, model: str) -> str:
    """`developer` for OpenAI's current models, `system` for older ones and every other source."""
    if source not in ("openAi", "azureOpenAi"):
        return "system"
    old = any(model == name or model.startswith(name + "-") for name in _OLD_OPENAI_MODELS)
    return "system" if old else "developer"


def endpoint(settings: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The URL and headers of a chat-completions request under a workspace's settings."""
    api_key = settings.get("apiKey")
    if api_key is None:
        api_key = os.environ.get("OPENAI_API_KEY", "")
    source = settings["source"]
    if source == "azureOpenAi":
        base = str(settings.get("baseUrl") or "")
        url = (
            f"{base}/openai/deployments/{settings.get('deploymentId')}/chat/completions"
            f"?api-version={settings.get('apiVersion')}"
        )
        return url, {"api-key": api_key}
    base = settings.get("baseUrl") or (MISTRAL_BASE if source == "mistral" else OPENAI_BASE)
    # no key at all (a local vLLM): no Authorization header, as a `Bearer ` value with nothing after it is
    # not a valid header value
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    headers["OpenAI-Beta"] = "assistants=v2"
    if settings.get("orgId"):
        headers["OpenAI-Organization"] = settings["orgId"]
    if settings.get("projectId"):
        headers["OpenAI-Project"] = settings["projectId"]
    return f"{base}/chat/completions", headers  # plain concatenation, as async-openai


def _provider_error(status: int, body: bytes, source: str) -> dict[str, Any]:
    """The error event of an error answer: the provider's fields, or `reqwest_error` when unreadable."""
    try:
        payload = json.loads(body)
        inner = payload if source == "mistral" else payload["error"]
        message = inner["message"]
        if not isinstance(message, str):
            raise TypeError("message")
        type_ = inner.get("type")
        if source == "mistral" and not isinstance(type_, str):
            raise TypeError("type")
        code, param = inner.get("code"), inner.get("param")
        return error_event(
            type_ if isinstance(type_, str) else "unknown",
            message,
            None if code is None else str(code),
            None if param is None else str(param),
        )
    except (ValueError, KeyError, TypeError):
        return error_event("reqwest_error", f"error decoding response body: HTTP status {status}")


async def check_destination(url: str) -> None:
    """LlmError unless the IP policy lets the server reach `url`'s host (checked once per conversation)."""
    try:
        await run_in_threadpool(net_guard.check_url, url)
    except net_guard.DeniedAddress:
        raise LlmError(
            error_event(
                "internal_reqwest_error",
                f"error sending request for url ({url}): "
                "Rejected URI (the destination address is not allowed: see "
                "`--experimental-allowed-ip-networks`)",
                "internal",
            )
        ) from None
    except OSError as exc:
        raise LlmError(
            error_event("transport_error", f"error sending request for url ({url}): {exc}")
        ) from None


async def stream_chunks(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], body: dict[str, Any], source: str
) -> AsyncGenerator[dict[str, Any], None]:
    """POST `body` to `url` and yield each streamed chunk (see the module docstring for the failures)."""
    try:
        async with client.stream(
            "POST", url, json=body, headers={**headers, "Accept": "text/event-stream"}
        ) as resp:
            content_type = resp.headers.get("content-type", "")
            if resp.status_code != 200 or not content_type.startswith("text/event-stream"):
                raise LlmError(_provider_error(resp.status_code, await resp.aread(), source))
            data: list[str] = []
            async for line in resp.aiter_lines():
                if line:
                    if line.startswith("data:"):
                        value = line[5:]
                        data.append(value[1:] if value.startswith(" ") else value)
                    continue
                if not data:
                    continue
                message, data = "\n".join(data), []
                if message == "[DONE]":
                    return
                try:
                    chunk = json.loads(message)
                except ValueError as exc:
                    raise LlmError(
                        error_event(
                            "json_deserialize_error",
                            f"failed to deserialize api response: {exc} content:{message}",
                            "internal",
                        )
                    ) from None
                if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
                    raise LlmError(
                        error_event(
                            "json_deserialize_error",
                            f"failed to deserialize api response: content:{message}",
                            "internal",
                        )
                    )
                yield chunk
            raise LlmError(error_event("stream_ended", "Stream ended"))
    except net_guard.DeniedAddress:
        raise LlmError(
            error_event(
                "internal_reqwest_error",
                f"error sending request for url ({url}): "
                "Rejected URI (the destination address is not allowed: see "
                "`--experimental-allowed-ip-networks`)",
                "internal",
            )
        ) from None
    except httpx.TimeoutException as exc:
        raise LlmError(
            error_event(
                "transport_error",
                f"error sending request for url ({url}): operation timed out ({type(exc).__name__})",
            )
        ) from None
    except httpx.HTTPError as exc:
        raise LlmError(
            error_event("transport_error", f"error sending request for url ({url}): {exc}")
        ) from None


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with `net_guard`'s policy applied to every TCP connection."""

    def __init__(self, policy: net_guard.IpPolicy | None = None) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._policy = policy

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        policy = self._policy if self._policy is not None else net_guard.current()
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from None
        addresses = [str(info[4][0]) for info in infos]
        for address in addresses:
            policy.check(address)
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except httpcore.ConnectError as exc:
                error = exc
        raise error if error is not None else httpcore.ConnectError(f"no address found for {host}")

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.AsyncNetworkStream:
        return await self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def new_client() -> httpx.AsyncClient:
    """A client for one conversation: no environment proxies, bounded connect and read waits."""
    try:
        read = float(os.environ.get(READ_TIMEOUT_ENV, READ_TIMEOUT))
    except ValueError:
        read = READ_TIMEOUT
    transport = httpx.AsyncHTTPTransport(trust_env=False)
    # httpx builds its connection pool without a way to pass a network backend: the pool is replaced by
    # an equal one whose connections go through the IP policy
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(), max_connections=10, network_backend=GuardedBackend()
    )
    return httpx.AsyncClient(
        transport=transport,
        timeout=httpx.Timeout(read, connect=CONNECT_TIMEOUT),
        trust_env=False,
        follow_redirects=False,
    )
