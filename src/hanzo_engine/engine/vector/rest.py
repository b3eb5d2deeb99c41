"""The REST embedding client (Meilisearch's `rest.rs`), also behind the `openAi` and `ollama` presets.

One request embeds one text, or a batch when the `request` template repeats its `{{text}}` (then up to
`BATCH_SIZE` texts per request); the `response` template says where the embeddings are. `embed_many`
cuts a list of texts into such requests and sends up to `REQUEST_PARALLELISM` of them at once.

Failures follow Meilisearch's retry policy: up to 10 retries, then one last attempt. 401, 400 and other
4xx statuses give up at once; 5xx, network errors and unreadable bodies retry after `10^attempt` ms,
429 after `100 + 10^attempt` ms; each wait is capped (`MEILI_EXPERIMENTAL_REST_EMBEDDER_MAX_RETRY_DURATION_SECONDS`,
default 60 s), then multiplied by a random factor in [0.5, 1] so that clients do not retry in step. A
deadline (search time) bounds the waits and the request timeout (else
`MEILI_EXPERIMENTAL_REST_EMBEDDER_TIMEOUT_SECONDS`, default 30 s). Wrong embedding counts or dimensions
give up.

Errors carry a fault (`user`, `runtime`, `undecided`) and display as Meilisearch's `EmbedError`
(`runtime error: received internal error HTTP 500 from embedding server ...`); the callers wrap them in
their task or search messages.
"""

from __future__ import annotations

import contextvars
import http.client
import json
import os
import random
import socket
import ssl
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

from hanzo_engine.engine import net_guard
from hanzo_engine.engine.vector import request_stats
from hanzo_engine.engine.vector.json_template import (
    REPEAT_PLACEHOLDER,
    REQUEST_PLACEHOLDER,
    RESPONSE_PLACEHOLDER,
    ExtractionError,
    InjectableValue,
    TemplateError,
)

BATCH_SIZE: Final = 10  # texts per request when the request template repeats its text
REQUEST_PARALLELISM: Final = 40
MAX_ATTEMPTS: Final = 10  # retries before the last attempt
FAULTS: Final = {
    "user": "user error",
    "runtime": "runtime error",
    "bug": "coding error",
    "undecided": "error",
}

# who configured the REST path; changes the hints of authentication and bad-request errors
SOURCE_USER: Final = "user"
SOURCE_OPENAI: Final = "openAi"
SOURCE_OLLAMA: Final = "ollama"


class EmbedderError(Exception):
    """An embedding failure: `fault` is Meilisearch's `FaultSource`, `str()` its display."""

    def __init__(
        self, fault: str, message: str, *, status: int | None = None, body: str | None = None
    ) -> None:
        super().__init__(message)
        self.fault = fault
        self.message = message
        self.status = status
        self.body = body

    def __str__(self) -> str:
        return f"{FAULTS[self.fault]}: {self.message}"


def _info(body: str | None) -> str:
    return "" if body is None else f"\n  - server replied with `{body}`"


def status_error(status: int, body: str | None, source: str) -> tuple[EmbedderError, str]:
    """The error for an HTTP error status and its retry strategy (`give_up`, `retry`, `rate_limited`)."""
    if status == 401:
        who = {SOURCE_USER: "embedding", SOURCE_OPENAI: "OpenAI", SOURCE_OLLAMA: "Ollama"}[source]
        hint = "\n  - Hint: Check the `apiKey` parameter in the embedder configuration"
        if source == SOURCE_OPENAI:
            hint += ", and the `MEILI_OPENAI_API_KEY` and `OPENAI_API_KEY` environment variables"
        return EmbedderError(
            "user",
            f"could not authenticate against {who} server{_info(body)}{hint}",
            status=status,
            body=body,
        ), "give_up"
    if status == 429:
        return EmbedderError(
            "runtime", f"sent too many requests to embedding server{_info(body)}", status=status, body=body
        ), "rate_limited"
    if status == 400:
        hint = (
            "\n  - Hint: check that the `request` in the embedder configuration matches the remote server's API"
            if source == SOURCE_USER
            else ""
        )
        return EmbedderError(
            "user", f"sent a bad request to embedding server{hint}{_info(body)}", status=status, body=body
        ), "give_up"
    if 500 <= status <= 599:
        return EmbedderError(
            "runtime",
            f"received internal error HTTP {status} from embedding server{_info(body)}",
            status=status,
            body=body,
        ), "retry"
    message = f"received unexpected HTTP {status} from embedding server{_info(body)}"
    return EmbedderError("undecided", message, status=status, body=body), (
        "give_up" if 402 <= status <= 499 else "retry"
    )


def _transport(err: OSError) -> str:
    """A network failure as ureq displays it."""
    if isinstance(err, net_guard.DeniedAddress):
        return f"bad uri: {err}"
    if isinstance(err, (socket.timeout, TimeoutError)):
        return "timeout: global"
    if err.errno is not None and err.strerror:
        return f"io: {err.strerror} (os error {err.errno})"
    return f"io: {err}"


def retry_delay(strategy: str, attempt: int) -> float:
    """Seconds to wait before retry `attempt` (0-based), before the cap and the random factor."""
    if strategy == "rate_limited":
        return float(100 + 10**attempt) / 1000
    return float(10**attempt) / 1000


def _env_seconds(name: str, default: int) -> float:
    raw = os.environ.get(name)
    try:
        return float(int(raw)) if raw is not None else float(default)
    except ValueError:
        return float(default)


def parse_request(template: Any) -> InjectableValue:
    """A `request` template (EmbedderError, fault `user`, with Meilisearch's message)."""
    try:
        return InjectableValue(template, REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER)
    except TemplateError as err:
        raise EmbedderError(
            "user",
            err.message("request", REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER)
            + "\n  - Note: this template is using a document template, and so expects to contain "
            'the placeholder "{{text}}" rather than "{{fragment}}"',
        ) from None


def parse_response(template: Any, request: InjectableValue) -> InjectableValue:
    """A `response` template, which must repeat its embedding exactly when `request` repeats its text."""
    try:
        response = InjectableValue(template, RESPONSE_PLACEHOLDER, REPEAT_PLACEHOLDER)
    except TemplateError as err:
        raise EmbedderError(
            "user", err.message("response", RESPONSE_PLACEHOLDER, REPEAT_PLACEHOLDER)
        ) from None
    if response.has_array_value and not request.has_array_value:
        raise EmbedderError(
            "user",
            "in `response`: `response` has multiple embeddings, but `request` has only one text to embed",
        )
    if request.has_array_value and not response.has_array_value:
        raise EmbedderError(
            "user",
            "in `response`: `response` has a single embedding, but `request` has multiple texts to embed",
        )
    return response


@dataclass
class RestOptions:
    url: str
    request: Any
    response: Any
    headers: dict[str, str] = field(default_factory=dict)
    api_key: str | None = None
    dimensions: int | None = None
    source: str = SOURCE_USER


class RestEmbedder:
    """A configured REST embedder; EmbedderError (fault `user`) when its templates are malformed."""

    def __init__(self, options: RestOptions) -> None:
        self.options = options
        self.request = parse_request(options.request)
        self.response = parse_response(options.response, self.request)
        self.timeout = _env_seconds("MEILI_EXPERIMENTAL_REST_EMBEDDER_TIMEOUT_SECONDS", 30)
        self.max_retry = _env_seconds("MEILI_EXPERIMENTAL_REST_EMBEDDER_MAX_RETRY_DURATION_SECONDS", 60)

    @property
    def batch_size(self) -> int:
        return BATCH_SIZE if self.request.has_array_value else 1

    # -- one request ------------------------------------------------------------------------------

    def _post(self, body: bytes, timeout: float) -> tuple[int, bytes]:
        """POSTs `body` to the configured URL (no proxy, no redirect); OSError on network failure."""
        url = urllib.parse.urlsplit(self.options.url)
        conn: http.client.HTTPConnection
        if url.scheme == "https":
            conn = http.client.HTTPSConnection(
                url.hostname or "", url.port, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=timeout)
        net_guard.guard(conn)  # loopback/private destinations only with `--experimental-allowed-ip-networks`
        headers = {"Content-Type": "application/json"}
        if self.options.api_key:
            headers["Authorization"] = f"Bearer {self.options.api_key}"
        headers.update(self.options.headers)
        target = (url.path or "/") + (f"?{url.query}" if url.query else "")
        try:
            conn.request("POST", target, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        except http.client.HTTPException as err:
            raise OSError(str(err) or type(err).__name__) from None
        finally:
            conn.close()

    def _attempt(
        self, body: bytes, count: int, dimensions: int | None, timeout: float
    ) -> tuple[list[list[float]] | None, EmbedderError | None, str]:
        """One try: (embeddings, None, "") or (None, error, retry strategy)."""
        try:
            status, raw = self._post(body, timeout)
        except OSError as err:
            return (
                None,
                EmbedderError("runtime", f"could not reach embedding server:\n  - {_transport(err)}"),
                "retry",
            )
        if not 200 <= status <= 299:
            error, strategy = status_error(status, raw.decode(errors="replace"), self.options.source)
            return None, error, strategy
        try:
            value = json.loads(raw)
        except ValueError as err:
            return (
                None,
                EmbedderError("runtime", f"error deserializing the response body as JSON:\n  - {err}"),
                "retry",
            )
        try:
            embeddings = self.response.extract(value)
        except ExtractionError as err:
            message = err.message("response", RESPONSE_PLACEHOLDER, "an array of numbers")
            return (
                None,
                EmbedderError("runtime", f"error extracting embeddings from the response:\n  - {message}"),
                "give_up",
            )
        if len(embeddings) != count:
            return (
                None,
                EmbedderError(
                    "runtime",
                    f"expected a response containing {count} embeddings, got only {len(embeddings)}",
                ),
                "give_up",
            )
        if dimensions is not None:
            for embedding in embeddings:
                if len(embedding) != dimensions:
                    return (
                        None,
                        EmbedderError(
                            "runtime",
                            f"was expecting embeddings of dimension `{dimensions}`, "
                            f"got embeddings of dimensions `{len(embedding)}`",
                        ),
                        "give_up",
                    )
        return embeddings, None, ""

    def embed(
        self, texts: list[str], dimensions: int | None, deadline: float | None = None
    ) -> list[list[float]]:
        """The embeddings of `texts` (one request, with retries); `deadline` is a `time.monotonic()` value."""
        if not texts:
            return []
        body = json.dumps(
            self.request.inject(list(texts)), ensure_ascii=False, separators=(",", ":")
        ).encode()
        attempt = 0
        while True:
            timeout = self.timeout
            if deadline is not None:
                timeout = max(min(timeout, deadline - time.monotonic()), 0.001)
            embeddings, error, strategy = self._attempt(body, len(texts), dimensions, timeout)
            request_stats.record(None if error is None else str(error))  # the batch's `embedderRequests`
            if embeddings is not None:
                return embeddings
            assert error is not None
            if strategy == "give_up" or attempt >= MAX_ATTEMPTS:
                raise error
            wait = min(retry_delay(strategy, attempt), self.max_retry)
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise error
                wait = min(wait, left)
            time.sleep(wait * random.uniform(0.5, 1.0))
            attempt += 1

    # -- many texts -------------------------------------------------------------------------------

    def embed_many(self, texts: list[str], dimensions: int | None) -> list[list[float]]:
        """The embeddings of `texts`, in order, in requests of `batch_size` texts sent concurrently;
        the error of the first failing request (in text order) is raised."""
        size = self.batch_size
        chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
        if len(chunks) <= 1:
            return self.embed(chunks[0], dimensions) if chunks else []
        out: list[list[float]] = []
        with ThreadPoolExecutor(max_workers=min(REQUEST_PARALLELISM, len(chunks))) as pool:
            # each request thread runs in a copy of this context: the batch's request counters follow
            futures = [
                pool.submit(contextvars.copy_context().run, self.embed, chunk, dimensions) for chunk in chunks
            ]
            try:
                for future in futures:
                    out.extend(future.result())
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
        return out

    def infer_dimensions(self) -> int:
        """The dimensions of the embeddings the service returns, from a test embedding of `test`."""
        try:
            return len(self.embed(["test"], None)[0])
        except EmbedderError as err:
            raise EmbedderError(
                "runtime", f"could not determine model dimensions:\n  - test embedding failed with {err}"
            ) from None
