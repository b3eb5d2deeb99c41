"""The API key model (= `meilisearch-types::keys` and `index_uid_pattern`).

A key is a uid (any UUID; v4 when generated), an optional name and description, a list of actions,
a list of index uid patterns and an optional expiration date. Its secret value is never stored: it is
`lowercase_hex(HMAC-SHA256(master_key, uid as lowercase hyphenated text))`, so changing the master
key changes every key value while the uids stay.

Actions. `ACTIONS` is Meilisearch's `Action` enum in declaration order (the order of the
"expected one of" list). Wildcards expand as Meilisearch's auth store does: `*` is every action but
`*.get`; `*.get` is every read action (`keys.get` excluded on purpose, to prevent privilege
escalation); `documents.*` etc. expand to their family. Global actions (`GLOBAL_ACTIONS`: dumps,
snapshots, version, keys, metrics, experimental, export, network, chats, webhooks, tasks.compact,
dynamic search rules) act on the whole instance; they may only be named on a key whose `indexes`
holds `*`, and a key without `*` never gets them through a wildcard either.

Index patterns: `*` (every index), an exact index uid, or a uid prefix followed by `*`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final

from hanzo_engine.apitypes.deserr import (
    Field,
    InvalidValue,
    deserialize_object,
    did_you_mean,
    found_description,
)
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.index_uid import is_valid_index_uid
from hanzo_engine.apitypes.tasks import format_timestamp, parse_timestamp

# --------------------------------------------------------------------------------------------------
# Actions
# --------------------------------------------------------------------------------------------------

ACTIONS: Final[tuple[str, ...]] = (
    "*",
    "search",
    "documents.*",
    "documents.add",
    "documents.get",
    "documents.delete",
    "indexes.*",
    "indexes.create",
    "indexes.get",
    "indexes.update",
    "indexes.delete",
    "indexes.swap",
    "tasks.*",
    "tasks.cancel",
    "tasks.delete",
    "tasks.get",
    "settings.*",
    "settings.get",
    "settings.update",
    "stats.*",
    "stats.get",
    "metrics.*",
    "metrics.get",
    "dumps.*",
    "dumps.create",
    "snapshots.*",
    "snapshots.create",
    "version",
    "keys.create",
    "keys.get",
    "keys.update",
    "keys.delete",
    "experimental.get",
    "experimental.update",
    "export",
    "network.get",
    "network.update",
    "chatCompletions",
    "chats.*",
    "chats.get",
    "chats.delete",
    "chatsSettings.*",
    "chatsSettings.get",
    "chatsSettings.update",
    "*.get",
    "webhooks.get",
    "webhooks.update",
    "webhooks.delete",
    "webhooks.create",
    "webhooks.*",
    "indexes.compact",
    "fields.post",
    "tasks.compact",
    "dynamicSearchRules.get",
    "dynamicSearchRules.create",
    "dynamicSearchRules.update",
    "dynamicSearchRules.delete",
    "dynamicSearchRules.*",
)
_ACTION_SET: Final = frozenset(ACTIONS)

# family wildcards -> the concrete actions they grant
_FAMILIES: Final[dict[str, tuple[str, ...]]] = {
    "documents.*": ("documents.add", "documents.get", "documents.delete"),
    "indexes.*": (
        "indexes.create",
        "indexes.get",
        "indexes.update",
        "indexes.delete",
        "indexes.swap",
        "indexes.compact",
    ),
    "tasks.*": ("tasks.get", "tasks.delete", "tasks.cancel", "tasks.compact"),
    "settings.*": ("settings.get", "settings.update"),
    "stats.*": ("stats.get",),
    "metrics.*": ("metrics.get",),
    "dumps.*": ("dumps.create",),
    "snapshots.*": ("snapshots.create",),
    "chats.*": ("chats.get", "chats.delete"),
    "chatsSettings.*": ("chatsSettings.get", "chatsSettings.update"),
    "webhooks.*": ("webhooks.get", "webhooks.update", "webhooks.delete", "webhooks.create"),
    "dynamicSearchRules.*": (
        "dynamicSearchRules.get",
        "dynamicSearchRules.create",
        "dynamicSearchRules.update",
        "dynamicSearchRules.delete",
    ),
}
# what `*.get` grants
READ_ACTIONS: Final = frozenset(
    {
        "search",
        "documents.get",
        "indexes.get",
        "tasks.get",
        "settings.get",
        "stats.get",
        "metrics.get",
        "version",
        "experimental.get",
        "network.get",
        "chats.get",
        "chatsSettings.get",
        "webhooks.get",
        "fields.post",
        "export",
        "dynamicSearchRules.get",
    }
)
GLOBAL_ACTIONS: Final = frozenset(
    {
        "dumps.*",
        "dumps.create",
        "snapshots.*",
        "snapshots.create",
        "version",
        "keys.create",
        "keys.get",
        "keys.update",
        "keys.delete",
        "metrics.*",
        "metrics.get",
        "experimental.get",
        "experimental.update",
        "export",
        "network.get",
        "network.update",
        "chats.*",
        "chats.get",
        "chats.delete",
        "chatsSettings.*",
        "chatsSettings.get",
        "chatsSettings.update",
        "webhooks.get",
        "webhooks.update",
        "webhooks.delete",
        "webhooks.create",
        "webhooks.*",
        "tasks.compact",
        "dynamicSearchRules.get",
        "dynamicSearchRules.create",
        "dynamicSearchRules.update",
        "dynamicSearchRules.delete",
        "dynamicSearchRules.*",
    }
)


def expand_actions(actions: Iterable[str]) -> frozenset[str]:
    """Every action a key's `actions` list grants, wildcards expanded (a wildcard also grants itself)."""
    granted: set[str] = set()
    for action in actions:
        granted.add(action)
        if action == "*":
            granted.update(_ACTION_SET - {"*.get"})
        elif action == "*.get":
            granted.update(READ_ACTIONS)
        else:
            granted.update(_FAMILIES.get(action, ()))
    return frozenset(granted)


# --------------------------------------------------------------------------------------------------
# Index uid patterns
# --------------------------------------------------------------------------------------------------


def index_pattern_error(invalid: str) -> str:
    return (
        f"`{invalid}` is not a valid index uid pattern. Index uid patterns can be an integer or a string "
        "containing only alphanumeric characters, hyphens (-), underscores (_), and optionally end with a "
        "star (*)."
    )


def validate_index_pattern(pattern: str) -> str:
    """`*`, a valid index uid, or a valid uid followed by `*`; InvalidValue otherwise.

    As Meilisearch, the message names the uid part that failed (a bad prefix is shown without its `*`).
    """
    if pattern == "*":
        return pattern
    prefix = pattern[:-1] if pattern.endswith("*") else pattern
    if not is_valid_index_uid(prefix):
        raise InvalidValue(index_pattern_error(prefix))
    return pattern


def pattern_matches(pattern: str, index_uid: str) -> bool:
    """`prefix*` matches uids starting with `prefix` (so `*` matches all); others match exactly."""
    if pattern.endswith("*"):
        return index_uid.startswith(pattern[:-1])
    return pattern == index_uid


def patterns_authorize(patterns: Iterable[str], index_uid: str) -> bool:
    return any(pattern_matches(p, index_uid) for p in patterns)


# --------------------------------------------------------------------------------------------------
# UUIDs, as the `uuid` crate parses them (messages included)
# --------------------------------------------------------------------------------------------------

_HEX: Final = frozenset("0123456789abcdefABCDEF")
_HYPHENATED_RE: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_GROUP_STARTS: Final = (0, 9, 14, 19, 24)


def parse_uuid(text: str) -> uuid.UUID:
    """`Uuid::parse_str`: simple (32 hex), hyphenated, `{braced}` or `urn:uuid:` form.

    Raises InvalidValue with the crate's diagnostic: first invalid character, then the simple-form
    length, the group count, and the first group of the wrong length.
    """
    body, offset, simple = text, 0, True
    if len(text) >= 2 and text[0] == "{" and text[-1] == "}":
        body, offset, simple = text[1:-1], 1, False
    elif text.startswith("urn:uuid:"):
        body, offset, simple = text[9:], 9, False
    if simple and len(body) == 32 and all(c in _HEX for c in body):
        return uuid.UUID(hex=body)
    if _HYPHENATED_RE.fullmatch(body) is not None and (simple or len(body) == 36):
        return uuid.UUID(hex=body.replace("-", ""))
    hyphens: list[int] = []
    for index, char in enumerate(body):
        if char == "-":
            hyphens.append(index)
        elif char not in _HEX:
            raise InvalidValue(f"invalid character: found `{char}` at {index + offset}")
    if not hyphens and simple:
        raise InvalidValue(
            f"invalid length: expected length 32 for simple format, found {len(text.encode())}"
        )
    if len(hyphens) != 4:
        raise InvalidValue(f"invalid group count: expected 5, found {len(hyphens) + 1}")
    expected = (8, 4, 4, 4, 12)
    # lengths as the crate computes them: from where each group should start, and the last one from
    # the whole input's length
    for group in range(4):
        if hyphens[group] != _GROUP_STARTS[group + 1] - 1:
            found = hyphens[group] - _GROUP_STARTS[group]
            raise InvalidValue(
                f"invalid group length in group {group}: expected {expected[group]}, found {found}"
            )
    raise InvalidValue(f"invalid group length in group 4: expected 12, found {len(text) - _GROUP_STARTS[4]}")


# --------------------------------------------------------------------------------------------------
# Expiration dates
# --------------------------------------------------------------------------------------------------

_NAIVE_RE: Final = re.compile(r"([+-]?\d{4})-(\d{2})-(\d{2})(?:([T ])(\d{2}):(\d{2}):(\d{2}))?", re.ASCII)


def expiration_error(text: str) -> str:
    # the trailing newline is part of Meilisearch's message
    return (
        f"`{text}` is not a valid date. It should follow the RFC 3339 format to represents a date or datetime "
        "in the future or specified as a null value. e.g. 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'.\n"
    )


def _parse_naive(text: str) -> int | None:
    """`YYYY-MM-DDTHH:MM:SS`, `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DD`, taken as UTC; ns or None."""
    m = _NAIVE_RE.fullmatch(text)
    if m is None:
        return None
    try:
        moment = datetime(
            int(m.group(1)),
            int(m.group(2)),
            int(m.group(3)),
            int(m.group(5) or 0),
            int(m.group(6) or 0),
            int(m.group(7) or 0),
            tzinfo=UTC,
        )
    except ValueError:
        return None  # out-of-range field, or a year Python's datetime cannot hold (never in the future)
    return int(moment.timestamp()) * 1_000_000_000


def parse_expiration(text: str, now_ns: int | None = None) -> int:
    """An `expiresAt` value in unix nanoseconds: RFC 3339 or a naive UTC form, strictly in the future."""
    try:
        ns: int | None = parse_timestamp(text)
    except ValueError:
        ns = _parse_naive(text)
    if ns is None or ns <= (time.time_ns() if now_ns is None else now_ns):
        raise InvalidValue(expiration_error(text))
    return ns


# --------------------------------------------------------------------------------------------------
# The key
# --------------------------------------------------------------------------------------------------


def generate_key_value(uid: uuid.UUID, master_key: str) -> str:
    """The key string: lowercase hex HMAC-SHA256 of the hyphenated lowercase uid under the master key."""
    return hmac.new(master_key.encode(), str(uid).encode(), hashlib.sha256).hexdigest()


def key_digest(uid: uuid.UUID, master_key: str) -> bytes:
    return hmac.new(master_key.encode(), str(uid).encode(), hashlib.sha256).digest()


_HEX_RE: Final = re.compile(r"(?:[0-9a-fA-F]{2})*")


def decode_hex_token(token: str) -> bytes | None:
    """A bearer token as the bytes it spells in hex (either case, as `hex::decode`); None otherwise."""
    if _HEX_RE.fullmatch(token) is None:
        return None
    return bytes.fromhex(token)


@dataclass(frozen=True)
class Key:
    """A stored API key. Times are unix nanoseconds (UTC); `granted` caches the expanded actions."""

    uid: uuid.UUID
    actions: tuple[str, ...]
    indexes: tuple[str, ...]
    expires_at: int | None
    created_at: int
    updated_at: int
    name: str | None = None
    description: str | None = None
    granted: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "granted", expand_actions(self.actions))

    @property
    def all_indexes(self) -> bool:
        return "*" in self.indexes

    def is_expired(self, now_ns: int) -> bool:
        return self.expires_at is not None and now_ns >= self.expires_at

    def authorizes_index(self, index_uid: str) -> bool:
        return patterns_authorize(self.indexes, index_uid)

    def grants(self, action: str, index_uid: str | None, now_ns: int) -> bool:
        """Whether the key, unexpired, may perform `action` on `index_uid` (None: on some index or globally).

        Global actions need a key covering every index. A route without an index is allowed as soon as
        the key holds the action on at least one pattern (lists are filtered afterwards).
        """
        if self.is_expired(now_ns) or action not in self.granted:
            return False
        if self.all_indexes:
            return True
        if action in GLOBAL_ACTIONS:
            return False
        if index_uid is None:
            return bool(self.indexes)
        return self.authorizes_index(index_uid)

    def with_patch(self, patch: dict[str, Any], now_ns: int) -> Key:
        """Apply a validated PATCH body (`name`/`description`, None clears) and bump `updated_at`."""
        changes: dict[str, Any] = {"updated_at": now_ns}
        if "name" in patch:
            changes["name"] = patch["name"]
        if "description" in patch:
            changes["description"] = patch["description"]
        return replace(self, **changes)

    def view(self, master_key: str) -> dict[str, Any]:
        """The key as the API shows it, in Meilisearch's field order."""
        return {
            "name": self.name,
            "description": self.description,
            "key": generate_key_value(self.uid, master_key),
            "uid": str(self.uid),
            "actions": list(self.actions),
            "indexes": list(self.indexes),
            "expiresAt": format_timestamp(self.expires_at) if self.expires_at is not None else None,
            "createdAt": format_timestamp(self.created_at),
            "updatedAt": format_timestamp(self.updated_at),
        }

    def to_record(self) -> dict[str, Any]:
        return {
            "uid": str(self.uid),
            "name": self.name,
            "description": self.description,
            "actions": list(self.actions),
            "indexes": list(self.indexes),
            "expiresAt": self.expires_at,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Key:
        return cls(
            uid=uuid.UUID(record["uid"]),
            name=record.get("name"),
            description=record.get("description"),
            actions=tuple(record["actions"]),
            indexes=tuple(record["indexes"]),
            expires_at=record.get("expiresAt"),
            created_at=record["createdAt"],
            updated_at=record["updatedAt"],
        )


# (name, description, actions) of the keys created with a new auth store, oldest first: listed newest
# first they come out as Meilisearch lists them (search, admin, read-only admin, chat).
DEFAULT_KEYS: Final[tuple[tuple[str, str, tuple[str, ...]], ...]] = (
    ("Default Chat API Key", "Use it to chat and search from the frontend", ("chatCompletions", "search")),
    (
        "Default Read-Only Admin API Key",
        "Use it to read information across the whole database. Caution! Do not expose this key on a public "
        "frontend",
        ("*.get", "keys.get"),
    ),
    (
        "Default Admin API Key",
        "Use it for anything that is not a search operation. Caution! Do not expose it on a public frontend",
        ("*",),
    ),
    ("Default Search API Key", "Use it to search from the frontend", ("search",)),
)


def default_keys(now_ns: int) -> list[Key]:
    """Fresh default keys with strictly increasing creation times (their listing order depends on it)."""
    return [
        Key(
            uid=uuid.uuid4(),
            name=name,
            description=description,
            actions=actions,
            indexes=("*",),
            expires_at=None,
            created_at=now_ns + i,
            updated_at=now_ns + i,
        )
        for i, (name, description, actions) in enumerate(DEFAULT_KEYS)
    ]


# --------------------------------------------------------------------------------------------------
# Request bodies
# --------------------------------------------------------------------------------------------------


def _one_of(accepted: Iterable[str]) -> str:
    return ", ".join(f"`{name}`" for name in accepted)


def _validate_actions(actions: list[Any]) -> list[str]:
    for i, action in enumerate(actions):
        path = f".actions[{i}]"
        if not isinstance(action, str):
            raise MeiliError(
                "invalid_api_key_actions",
                f"Invalid value type at `{path}`: expected a string, but found {found_description(action)}",
            )
        if action not in _ACTION_SET:
            raise MeiliError(
                "invalid_api_key_actions",
                f"Unknown value `{action}` at `{path}`: {did_you_mean(action, ACTIONS)}expected one of {_one_of(ACTIONS)}",
            )
    return actions


def _validate_indexes(indexes: list[Any]) -> list[str]:
    for i, pattern in enumerate(indexes):
        path = f".indexes[{i}]"
        if not isinstance(pattern, str):
            raise MeiliError(
                "invalid_api_key_indexes",
                f"Invalid value type at `{path}`: expected a string, but found {found_description(pattern)}",
            )
        try:
            validate_index_pattern(pattern)
        except InvalidValue as exc:
            raise MeiliError("invalid_api_key_indexes", f"Invalid value at `{path}`: {exc}") from None
    return indexes


def _validate_uid(text: str) -> uuid.UUID:
    return parse_uuid(text)


CREATE_KEY: Final = (
    Field("description", "string", "invalid_api_key_description", nullable=True, default=None),
    Field("name", "string", "invalid_api_key_name", nullable=True, default=None),
    Field("uid", "string", "invalid_api_key_uid", validate=_validate_uid),
    Field(
        "actions",
        "array",
        "invalid_api_key_actions",
        required=True,
        missing_code="missing_api_key_actions",
        validate=_validate_actions,
    ),
    Field(
        "indexes",
        "array",
        "invalid_api_key_indexes",
        required=True,
        missing_code="missing_api_key_indexes",
        validate=_validate_indexes,
    ),
    Field(
        "expiresAt",
        "string",
        "invalid_api_key_expires_at",
        required=True,
        nullable=True,
        missing_code="missing_api_key_expires_at",
        validate=parse_expiration,
    ),
)
PATCH_KEY: Final = (
    Field("description", "string", "invalid_api_key_description", nullable=True),
    Field("name", "string", "invalid_api_key_name", nullable=True),
)
IMMUTABLE_KEY_FIELDS: Final = {
    "uid": "immutable_api_key_uid",
    "actions": "immutable_api_key_actions",
    "indexes": "immutable_api_key_indexes",
    "expiresAt": "immutable_api_key_expires_at",
    "createdAt": "immutable_api_key_created_at",
    "updatedAt": "immutable_api_key_updated_at",
    "key": "immutable_api_key_key",
}


def global_action_error(action: str) -> MeiliError:
    return MeiliError(
        "index_scoped_api_key_with_global_action",
        f'cannot create index-scoped API key with global action `"{action}"`',
    )


def parse_create_key(body: Any, now_ns: int | None = None) -> Key:
    """Validate a `POST /keys` body into a new Key (uid generated when absent).

    Field problems come first, in the payload's key order, then missing fields; last, a key whose
    indexes do not include `*` may not name a global action.
    """
    fields = deserialize_object(body, CREATE_KEY)
    indexes = tuple(fields["indexes"])
    if "*" not in indexes:
        for action in fields["actions"]:
            if action in GLOBAL_ACTIONS:
                raise global_action_error(action)
    now = time.time_ns() if now_ns is None else now_ns
    return Key(
        uid=fields["uid"] if "uid" in fields else uuid.uuid4(),
        name=fields["name"],
        description=fields["description"],
        actions=tuple(fields["actions"]),
        indexes=indexes,
        expires_at=fields["expiresAt"],
        created_at=now,
        updated_at=now,
    )


def parse_patch_key(body: Any) -> dict[str, Any]:
    """Validate a `PATCH /keys/{key}` body: only `name` and `description` (absent = unchanged)."""
    return deserialize_object(body, PATCH_KEY, immutable=IMMUTABLE_KEY_FIELDS)
