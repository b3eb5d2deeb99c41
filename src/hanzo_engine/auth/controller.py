"""Who may do what: key management and per-request authentication (= `meilisearch_auth::AuthController`
and the `ActionPolicy` of Meilisearch's authentication extractor).

`AuthController.authenticate(token, action, index_uid)` decides one request and returns the
`AuthFilter` the route applies to what it reads; it raises the exact 403 otherwise:

1. the master key passes everything (filter: every index, no search rules);
2. on tenant-token routes (`search`, `chatCompletions`) a JWT-shaped token is decoded and verified
   (`tenant.decode_token`); any other token is an API key, found by recomputing every stored uid's
   HMAC and comparing in constant time;
3. the parent/API key must still exist;
4. with an index in the path: the tenant token's rules must cover it ("The provided tenant token
   cannot acces the index ..."), then the key's patterns ("The API key used to generate this tenant
   token cannot acces the index ..." for a token, "The API key cannot acces the index ..., authorized
   indexes are [...]" for a key);
5. last, the key must hold the action, be unexpired, and cover all indexes for a global action:
   "The provided API key is invalid." otherwise.
"""

from __future__ import annotations

import hmac
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from hanzo_engine.apitypes.deserr import InvalidValue
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.rustcompat.strings import debug_list

from .keys import Key, decode_hex_token, generate_key_value, key_digest, parse_uuid, patterns_authorize
from .store import KeyExists, KeyStore
from .tenant import (
    IndexSearchRules,
    SearchRules,
    TokenError,
    TokenExpired,
    decode_error,
    decode_token,
    fuse_filters,
)

# actions whose routes accept tenant tokens
TENANT_TOKEN_ACTIONS: Final = frozenset({"search", "chatCompletions"})

INVALID_API_KEY: Final = "The provided API key is invalid."


def invalid_api_key(message: str = INVALID_API_KEY) -> MeiliError:
    return MeiliError("invalid_api_key", message)


def api_key_not_found(key_or_uid: str) -> MeiliError:
    return MeiliError("api_key_not_found", f"API key `{key_or_uid}` not found.")


@dataclass(frozen=True)
class AuthFilter:
    """What the authenticated caller may see (= `meilisearch_auth::AuthFilter`).

    `key_indexes` are the patterns of the API key (`("*",)` for the master key or no master key);
    `search_rules` are those of a tenant token (None for anything else); `can_create_indexes` is
    whether the key may create indexes (`indexes.create` on any of its patterns).

    List routes (`GET /indexes`, `/tasks`, `/batches`, `/stats`) keep only what
    `is_index_authorized` accepts; when `all_indexes_authorized()` is false, tasks and batches that
    are not tied to exactly one index are left out as well (Meilisearch's rule).
    """

    key_indexes: tuple[str, ...] = ("*",)
    search_rules: SearchRules | None = None
    can_create_indexes: bool = True

    @property
    def is_tenant_token(self) -> bool:
        return self.search_rules is not None

    def all_indexes_authorized(self) -> bool:
        return "*" in self.key_indexes and (
            self.search_rules is None or self.search_rules.all_indexes_authorized()
        )

    def api_key_is_index_authorized(self, index_uid: str) -> bool:
        return patterns_authorize(self.key_indexes, index_uid)

    def tenant_token_is_index_authorized(self, index_uid: str) -> bool:
        return self.search_rules is None or self.search_rules.is_index_authorized(index_uid)

    def is_index_authorized(self, index_uid: str) -> bool:
        """Both the key and the tenant token (if any) cover `index_uid`."""
        return self.api_key_is_index_authorized(index_uid) and self.tenant_token_is_index_authorized(
            index_uid
        )

    def allow_index_creation(self, index_uid: str) -> bool:
        """Whether a write may create `index_uid` when it does not exist (else its task fails)."""
        return self.can_create_indexes and self.is_index_authorized(index_uid)

    def index_search_rules(self, index_uid: str) -> IndexSearchRules | None:
        """The tenant token's rules for `index_uid` (no filter for a plain key); None if not authorized."""
        if not self.is_index_authorized(index_uid):
            return None
        if self.search_rules is None:
            return IndexSearchRules()
        return self.search_rules.index_rules(index_uid)

    def search_filter(self, index_uid: str) -> Any:
        """The filter a search on `index_uid` must AND with the user's (JSON value), or None."""
        rules = self.index_search_rules(index_uid)
        return None if rules is None else rules.filter

    def fuse_filter(self, index_uid: str, user_filter: Any) -> Any:
        """The user's filter with the tenant token's rule filter for `index_uid` appended (AND)."""
        return fuse_filters(user_filter, self.search_filter(index_uid))


ALLOW_ALL: Final = AuthFilter()


@dataclass
class AuthController:
    """Key management and request authentication over a `KeyStore`.

    Without a master key, keys exist (the defaults) but no key value can be derived, so none
    authenticates; the server then leaves every route but `/keys` open.
    """

    store: KeyStore
    master_key: str | None
    _digests: tuple[Mapping[uuid.UUID, Key], list[tuple[uuid.UUID, bytes]]] | None = field(
        default=None, init=False, repr=False
    )

    # -- key values --------------------------------------------------------------------------------

    def key_value(self, uid: uuid.UUID) -> str:
        """The key string of `uid` (derivable for any uid once a master key is set)."""
        if self.master_key is None:
            raise RuntimeError("key values need a master key")
        return generate_key_value(uid, self.master_key)

    def _key_digests(self) -> list[tuple[uuid.UUID, bytes]]:
        # recomputed only when the store's snapshot changed
        keys = self.store.keys
        cached = self._digests
        if cached is None or cached[0] is not keys:
            assert self.master_key is not None
            digests = [(uid, key_digest(uid, self.master_key)) for uid in keys]
            cached = (keys, digests)
            self._digests = cached
        return cached[1]

    def uid_from_key(self, token: str) -> uuid.UUID | None:
        """The uid whose key value is `token` (hex, either case), compared in constant time."""
        if self.master_key is None:
            return None
        raw = decode_hex_token(token)
        if raw is None:
            return None
        found: uuid.UUID | None = None
        for uid, digest in self._key_digests():
            # no early exit: the time taken does not depend on which key matched
            if hmac.compare_digest(raw, digest) and found is None:
                found = uid
        return found

    # -- management --------------------------------------------------------------------------------

    def view(self, key: Key) -> dict[str, Any]:
        assert self.master_key is not None
        return key.view(self.master_key)

    def resolve_uid(self, key_or_uid: str) -> uuid.UUID:
        """A `/keys/{key_or_uid}` path segment: a UUID, else a key value; 404 `api_key_not_found`."""
        try:
            return parse_uuid(key_or_uid)
        except InvalidValue:
            pass
        uid = self.uid_from_key(key_or_uid)
        if uid is None:
            raise api_key_not_found(key_or_uid)
        return uid

    def get_key(self, uid: uuid.UUID) -> Key:
        key = self.store.get(uid)
        if key is None:
            raise api_key_not_found(str(uid))
        return key

    def list_keys(self) -> list[Key]:
        return self.store.list()

    def create_key(self, key: Key) -> Key:
        try:
            return self.store.put_new(key)
        except KeyExists:
            raise MeiliError(
                "api_key_already_exists", f"`uid` field value `{key.uid}` is already an existing API key."
            ) from None

    def update_key(self, uid: uuid.UUID, patch: dict[str, Any]) -> Key:
        return self.store.put(self.get_key(uid).with_patch(patch, time.time_ns()))

    def delete_key(self, uid: uuid.UUID) -> None:
        if not self.store.delete(uid):
            raise api_key_not_found(str(uid))

    # -- authentication ----------------------------------------------------------------------------

    def authenticate(self, token: str, action: str, index_uid: str | None) -> AuthFilter:
        """The AuthFilter of a request bearing `token` for `action` on `index_uid` (see module doc)."""
        if self.master_key is None:
            if action.startswith("keys."):
                raise MeiliError(
                    "missing_master_key",
                    "Meilisearch is running without a master key. To access this API endpoint, you must have "
                    "set a master key at launch.",
                )
            return ALLOW_ALL
        if hmac.compare_digest(token.encode(), self.master_key.encode()):
            return ALLOW_ALL
        uid: uuid.UUID | None = None
        search_rules: SearchRules | None = None
        if action in TENANT_TOKEN_ACTIONS:
            try:
                claims = decode_token(token, self.key_value)
            except TokenError as exc:
                raise decode_error(exc) from None
            except TokenExpired as exc:
                raise invalid_api_key(str(exc)) from None
            if claims is not None:
                uid, search_rules = claims.api_key_uid, claims.search_rules
        if uid is None:
            uid = self.uid_from_key(token)
        key = self.store.get(uid) if uid is not None else None
        if key is None:
            raise invalid_api_key()
        now = time.time_ns()
        if index_uid is not None:
            if search_rules is not None and not search_rules.is_index_authorized(index_uid):
                raise invalid_api_key(
                    f"The provided tenant token cannot acces the index `{index_uid}`, allowed indexes are "
                    f"{debug_list(search_rules.allowed())}."
                )
            if not key.authorizes_index(index_uid):
                if search_rules is not None:
                    # the parent key's patterns are not the token holder's business
                    raise invalid_api_key(
                        f"The API key used to generate this tenant token cannot acces the index `{index_uid}`."
                    )
                raise invalid_api_key(
                    f"The API key cannot acces the index `{index_uid}`, authorized indexes are "
                    f"{debug_list(sorted(set(key.indexes)))}."
                )
        if not key.grants(action, index_uid, now):
            raise invalid_api_key()
        return AuthFilter(
            key_indexes=key.indexes,
            search_rules=search_rules,
            can_create_indexes=key.grants("indexes.create", None, now),
        )

    def authorize(self, token: str, action: str, index_uid: str | None) -> bool:
        """`authenticate` as a yes/no answer (the `KeyResolver` protocol)."""
        try:
            self.authenticate(token, action, index_uid)
        except MeiliError:
            return False
        return True
