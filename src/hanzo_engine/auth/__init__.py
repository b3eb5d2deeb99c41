"""API keys and tenant tokens (= Meilisearch's `meilisearch-auth` crate).

- `keys`: the key model, actions and their wildcards, index patterns, request validation;
- `store`: the keys' LMDB environment (`<db_path>/auth`) with the default keys;
- `tenant`: tenant tokens (JWT HS256/384/512), search rules and filter fusion;
- `controller`: `AuthController` (key management, `authenticate`/`authorize`) and `AuthFilter`,
  what a request may see.
"""

from __future__ import annotations

from pathlib import Path

from .controller import ALLOW_ALL, TENANT_TOKEN_ACTIONS, AuthController, AuthFilter
from .keys import ACTIONS, GLOBAL_ACTIONS, Key, expand_actions, generate_key_value
from .store import KeyStore
from .tenant import IndexSearchRules, SearchRules, encode_token, fuse_filters

__all__ = [
    "ACTIONS",
    "ALLOW_ALL",
    "GLOBAL_ACTIONS",
    "TENANT_TOKEN_ACTIONS",
    "AuthController",
    "AuthFilter",
    "IndexSearchRules",
    "Key",
    "KeyStore",
    "SearchRules",
    "encode_token",
    "expand_actions",
    "fuse_filters",
    "generate_key_value",
    "open_auth",
]


def open_auth(db_path: Path, master_key: str | None) -> AuthController:
    """The AuthController of a database directory (its keys live in `<db_path>/auth`)."""
    return AuthController(KeyStore(db_path / "auth"), master_key)
