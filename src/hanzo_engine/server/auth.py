"""The auth guard, declared per route by the action it needs (Meilisearch's `GuardedData`).

This module knows the master key rules (no key: everything open but `/keys`; a key: `Bearer` required,
the master key passes everything). API keys and tenant tokens plug in through `KeyResolver` (auth/).
"""

from __future__ import annotations

import hmac
from typing import Protocol

from starlette.requests import Request

from hanzo_engine.apitypes.errors import MeiliError


class KeyResolver(Protocol):
    def authorize(self, token: str, action: str, index_uid: str | None) -> bool: ...


MISSING_AUTH = MeiliError(
    "missing_authorization_header",
    "The Authorization header is missing. It must use the bearer authorization method.",
)
INVALID_KEY = MeiliError("invalid_api_key", "The provided API key is invalid.")
MISSING_MASTER_KEY = MeiliError(
    "missing_master_key",
    "Meilisearch is running without a master key. To access this API endpoint, you must have set a master "
    "key at launch.",
)


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme != "Bearer":
        raise MISSING_AUTH
    return token.strip()


def guard(request: Request, action: str | None, index_uid: str | None = None) -> None:
    """Raise the Meilisearch auth error when the request may not perform `action` (None = public)."""
    if action is None:
        return
    master_key: str | None = request.app.state.master_key
    token = bearer_token(request) if request.headers.get("authorization") is not None else None
    if master_key is None:
        if action.startswith("keys."):
            raise MISSING_MASTER_KEY
        return
    if token is None:
        raise MISSING_AUTH
    if token and hmac.compare_digest(token.encode(), master_key.encode()):
        return
    resolver: KeyResolver | None = getattr(request.app.state, "key_resolver", None)
    if token and resolver is not None and resolver.authorize(token, action, index_uid):
        return
    raise INVALID_KEY
