"""The auth guard, declared per route by the action it needs (Meilisearch's `GuardedData`).

This module knows the master key rules (no key: everything open but `/keys`; a key: `Bearer` required,
the master key passes everything). API keys and tenant tokens plug in through `app.state.key_resolver`
(an `auth.AuthController`): its `authenticate` raises Meilisearch's 403 (with the richer index-scope
messages) or returns the request's `AuthFilter`, stored as `request.state.auth_filter`. Routes read it
with `auth_filter(request)` to drop unauthorized indexes from lists and, on search routes, to AND the
tenant token's filter with the user's.
"""

from __future__ import annotations

import hmac
from typing import Protocol, runtime_checkable

from starlette.requests import Request

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.auth import ALLOW_ALL, AuthFilter


class KeyResolver(Protocol):
    def authorize(self, token: str, action: str, index_uid: str | None) -> bool: ...


@runtime_checkable
class FilteringResolver(Protocol):
    def authenticate(self, token: str, action: str, index_uid: str | None) -> AuthFilter: ...


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


def _visible_ascii(value: str) -> bool:
    # `HeaderValue::to_str` only accepts visible ASCII and tabs; anything else reads as "".
    return all(c == "\t" or " " <= c <= "~" for c in value)


def bearer_token(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None when there is no header.

    Parsed as Meilisearch does: the raw value split once on a space, the scheme must be exactly
    `Bearer` (else 401 `missing_authorization_header`) and is then followed by a token, kept as is
    (`Bearer` alone is 403 `invalid_api_key`, even without a master key).
    """
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, space, token = (header if _visible_ascii(header) else "").partition(" ")
    if scheme != "Bearer":
        raise MISSING_AUTH
    if not space:
        raise INVALID_KEY
    return token


def guard(request: Request, action: str | None, index_uid: str | None = None) -> None:
    """Raise the Meilisearch auth error when the request may not perform `action` (None = public)."""
    if action is None:
        return
    master_key: str | None = request.app.state.master_key
    token = bearer_token(request)
    if master_key is None:
        if action.startswith("keys."):
            raise MISSING_MASTER_KEY
        return
    if token is None:
        raise MISSING_AUTH
    if hmac.compare_digest(token.encode(), master_key.encode()):
        return
    resolver: KeyResolver | FilteringResolver | None = getattr(request.app.state, "key_resolver", None)
    if isinstance(resolver, FilteringResolver):
        request.state.auth_filter = resolver.authenticate(token, action, index_uid)
        return
    if token and resolver is not None and resolver.authorize(token, action, index_uid):
        return
    raise INVALID_KEY


def auth_filter(request: Request) -> AuthFilter:
    """What the request's caller may see: everything unless an API key or tenant token restricts it."""
    found: AuthFilter = getattr(request.state, "auth_filter", ALLOW_ALL)
    return found
