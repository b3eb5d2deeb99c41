"""Webhook routes (= Meilisearch's `routes/webhooks.rs`): list, create, get, update, delete.

A webhook is `{"uuid", "isEditable", "url", "headers"}`; Authorization header values are redacted on
every answer (`Bearer ` kept, then Meilisearch's `hide_secret`). The webhook of `--task-webhook-url`
is listed first with the nil uuid and `isEditable: false`, and cannot be changed through the API. At most
20 webhooks (the CLI one not counted) and 200 headers each; a `null` header value in a PATCH removes it.

Webhooks live in the tasks environment (`scheduler/webhooks.py`), so every process sees the same list;
creation checks the limit and inserts in one write transaction. The delivery is the scheduler's.
"""

from __future__ import annotations

import re
import uuid as uuid_mod
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import Field, decode_json_body, deserialize_object
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.settings import mask_api_key
from hanzo_engine.engine import net_guard
from hanzo_engine.scheduler import webhooks as store_hooks
from hanzo_engine.scheduler.scheduler import Scheduler
from hanzo_engine.scheduler.webhooks import MAX_HEADERS, MAX_WEBHOOKS, NIL_UUID, Webhook, WebhookNotifier

from ..app_state import state
from ..http import JSONResponse, read_body
from ..options import Options
from ..urls import url_error

_FIELDS: Final = (
    Field("url", "string_or_null", "invalid_webhook_url"),
    Field("headers", "object", "invalid_webhook_headers", nullable=True),
)
_IMMUTABLE: Final = {"uuid": "immutable_webhook_uuid", "isEditable": "immutable_webhook_is_editable"}
_UNSET: Final = object()


def install(scheduler: Scheduler, options: Options) -> None:
    """Set the process's outgoing-request policy and give `scheduler` its webhook notifier (its sender
    starts with the scheduler, so only in the process that runs it)."""
    net_guard.configure(options.experimental_allowed_ip_networks)
    cli = store_hooks.cli_webhook(options.task_webhook_url, options.task_webhook_authorization_header)
    scheduler.webhooks = WebhookNotifier(scheduler.store, cli)


# -- errors (messages of Meilisearch's `WebhooksError`) ---------------------------------------------


def _missing_url(uuid: str) -> MeiliError:
    return MeiliError("invalid_webhook_url", f"The URL for the webhook `{uuid}` is missing.")


def _too_many_headers(uuid: str) -> MeiliError:
    return MeiliError(
        "invalid_webhook_headers",
        f"Too many headers for the webhook `{uuid}`. Please limit the number of headers to {MAX_HEADERS}. "
        "Hint: To remove an already defined header set its value to `null`",
    )


def _immutable(uuid: str) -> MeiliError:
    return MeiliError(
        "immutable_webhook",
        f"Webhook `{uuid}` is immutable. The webhook defined from the command line cannot be modified using "
        "the API.",
    )


def _not_found(uuid: str) -> MeiliError:
    return MeiliError("webhook_not_found", f"Webhook `{uuid}` not found.")


TOO_MANY_WEBHOOKS: Final = (
    f"Defining too many webhooks would crush the server. Please limit the number of webhooks to {MAX_WEBHOOKS}. "
    f"You may use a third-party proxy server to dispatch events to more than {MAX_WEBHOOKS} endpoints."
)


# -- uuids, as the `uuid` crate parses and reports them ---------------------------------------------

_HEX: Final = frozenset("0123456789abcdef")


def _uuid_error(text: str) -> str:
    """The `uuid` crate's message for a string `Uuid::parse_str` refuses."""
    raw = text.encode()
    if len(raw) == 0 or len(raw) > 45:
        return f"invalid length: found {len(raw)}"
    fmt = "any"
    if raw.startswith(b"{") and raw.endswith(b"}") and len(raw) >= 2:
        start, end, fmt = 1, len(raw) - 3, "braced"
    elif raw.startswith(b"urn:uuid:"):
        start, end, fmt = len("urn:uuid:"), len(raw) - len("urn:uuid:"), "urn"
    else:
        start, end = 0, len(raw)
    hyphens, groups = 0, [0, 0, 0, 0]
    index = start
    for char in raw[start : max(end, start)].decode(errors="replace"):
        byte = chr(ord(char) & 0xFF).lower()
        if byte == "-":
            fmt = "hyphenated" if fmt == "any" else fmt
            if hyphens < 4:
                groups[hyphens] = index - start
            hyphens += 1
        elif byte not in _HEX:
            return f"invalid character: found `{char}` at {index}"
        index += len(char.encode())
    if fmt == "any":
        return f"invalid length: found {len(raw)}"
    if hyphens != 4:
        return f"invalid group count: expected 5, found {hyphens + 1}"
    starts = (0, 9, 14, 19, 24)
    for i in range(4):
        if groups[i] != starts[i + 1] - 1:
            return f"invalid group length in group {i}: expected {(8, 4, 4, 4, 12)[i]}, found {groups[i] - starts[i]}"
    return f"invalid group length in group 4: expected 12, found {len(raw) - starts[4]}"


def parse_uuid(text: str) -> str:
    """The uuid in `text` (simple, hyphenated, braced or URN form) as lowercase hyphenated; 400
    `invalid_webhook_uuid` with the `uuid` crate's message otherwise."""
    raw = text.encode()
    body: bytes | None = None
    if len(raw) == 32 and all(chr(b).lower() in _HEX for b in raw):
        body = raw
    else:
        inner = raw
        if len(raw) == 38 and raw.startswith(b"{") and raw.endswith(b"}"):
            inner = raw[1:-1]
        elif len(raw) == 45 and raw.startswith(b"urn:uuid:"):
            inner = raw[9:]
        if len(inner) == 36 and all(
            (inner[i] == ord("-")) if i in (8, 13, 18, 23) else chr(inner[i]).lower() in _HEX
            for i in range(36)
        ):
            body = inner.replace(b"-", b"")
    if body is None:
        raise MeiliError("invalid_webhook_uuid", f"Invalid UUID: {_uuid_error(text)}")
    return str(uuid_mod.UUID(hex=body.decode()))


# -- validation of a webhook (Meilisearch's `check_changed`) -----------------------------------------

_HEADER_NAME: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def _check(uuid: str, webhook: Webhook) -> None:
    if uuid == NIL_UUID:
        raise _immutable(uuid)
    if not webhook["url"]:
        raise _missing_url(uuid)
    if len(webhook["headers"]) > MAX_HEADERS:
        raise _too_many_headers(uuid)
    for name, value in webhook["headers"].items():
        if _HEADER_NAME.fullmatch(name) is None or len(name) >= 1 << 16:
            raise MeiliError(
                "invalid_webhook_headers", f"Invalid header name `{name}`: invalid HTTP header name"
            )
        if any((b < 32 and b != 9) or b == 127 for b in value.encode()):
            raise MeiliError(
                "invalid_webhook_headers", f"Invalid header value `{name}`: failed to parse header value"
            )
    error = url_error(webhook["url"])
    if error is not None:
        raise MeiliError("invalid_webhook_url", f"Invalid URL `{webhook['url']}`: {error}")


async def _settings(request: Request) -> dict[str, Any]:
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    settings = deserialize_object(body, _FIELDS, unknown_code="bad_request", immutable=_IMMUTABLE)
    headers = settings.get("headers")
    if isinstance(headers, dict):
        for name, value in headers.items():
            deserialize_object(
                {name: value}, (Field(name, "string_or_null", "invalid_webhook_headers"),), path=".headers"
            )
    return settings


# -- views -----------------------------------------------------------------------------------------


def redact(value: str) -> str:
    """Meilisearch's `redact_authorization_header` for one value."""
    if value.startswith("Bearer "):
        return "Bearer " + mask_api_key(value[len("Bearer ") :])
    return mask_api_key(value)


def view(uuid: str, webhook: Webhook) -> dict[str, Any]:
    headers = {
        name: redact(value) if name.lower() == "authorization" else value
        for name, value in sorted(webhook["headers"].items())
    }
    return {"uuid": uuid, "isEditable": uuid != NIL_UUID, "url": webhook["url"], "headers": headers}


def _all(request: Request) -> dict[str, Webhook]:
    st = state(request)
    store = st.scheduler.store
    cli = store_hooks.cli_webhook(st.options.task_webhook_url, st.options.task_webhook_authorization_header)
    out: dict[str, Webhook] = {NIL_UUID: cli} if cli is not None else {}
    with store.env.begin() as txn:
        out.update(store_hooks.runtime_webhooks(store, txn))
    return out


# -- routes ----------------------------------------------------------------------------------------


async def list_webhooks(request: Request) -> Response:
    return JSONResponse({"results": [view(uuid, hook) for uuid, hook in _all(request).items()]})


async def create_webhook(request: Request) -> Response:
    settings = await _settings(request)
    uuid = str(uuid_mod.uuid4())
    headers = settings.get("headers")
    if isinstance(headers, dict) and len(headers) > MAX_HEADERS:
        raise _too_many_headers(uuid)
    store = state(request).scheduler.store

    def create() -> Webhook:
        with store.env.begin(write=True) as txn:
            if len(store_hooks.runtime_webhooks(store, txn)) >= MAX_WEBHOOKS:
                raise MeiliError("invalid_webhooks", TOO_MANY_WEBHOOKS)
            url = settings.get("url")
            if url is None:
                raise _missing_url(uuid)
            webhook = {"url": url, "headers": {k: v or "" for k, v in (headers or {}).items()}}
            _check(uuid, webhook)
            store_hooks.put_webhook(store, txn, uuid, webhook)
            return webhook

    return JSONResponse(view(uuid, await run_in_threadpool(create)), status_code=201)


async def get_webhook(request: Request) -> Response:
    uuid = parse_uuid(request.path_params["uuid"])
    hook = _all(request).get(uuid)
    if hook is None:
        raise _not_found(uuid)
    return JSONResponse(view(uuid, hook))


async def update_webhook(request: Request) -> Response:
    settings = await _settings(request)
    uuid = parse_uuid(request.path_params["uuid"])
    if uuid == NIL_UUID:
        raise _immutable(uuid)
    store = state(request).scheduler.store

    def update() -> Webhook:
        with store.env.begin(write=True) as txn:
            old = store_hooks.runtime_webhooks(store, txn).get(uuid)
            if old is None:
                raise _not_found(uuid)
            url = settings.get("url", _UNSET)
            if url is None:
                raise _missing_url(uuid)
            headers = dict(old["headers"])
            if "headers" in settings:
                if settings["headers"] is None:
                    headers.clear()
                else:
                    for name, value in settings["headers"].items():
                        if value is None:
                            headers.pop(name, None)
                        else:
                            headers[name] = value
            if len(headers) > MAX_HEADERS:
                raise _too_many_headers(uuid)
            webhook = {"url": old["url"] if url is _UNSET else url, "headers": headers}
            _check(uuid, webhook)
            store_hooks.put_webhook(store, txn, uuid, webhook)
            return webhook

    return JSONResponse(view(uuid, await run_in_threadpool(update)))


async def delete_webhook(request: Request) -> Response:
    uuid = parse_uuid(request.path_params["uuid"])
    if uuid == NIL_UUID:
        raise _immutable(uuid)
    store = state(request).scheduler.store

    def delete() -> None:
        with store.env.begin(write=True) as txn:
            if not store_hooks.delete_webhook(store, txn, uuid):
                raise _not_found(uuid)

    await run_in_threadpool(delete)
    return Response(status_code=204)
