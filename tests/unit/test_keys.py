"""API keys: model, validation messages, LMDB store and authentication (auth/keys, store, controller).

Expected strings come from Meilisearch's `tests/auth/api_keys.rs` and `tests/auth/errors.rs` snapshots.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hanzo_engine.apitypes.deserr import InvalidValue
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.auth import ACTIONS, GLOBAL_ACTIONS, AuthController, KeyStore, expand_actions
from hanzo_engine.auth.keys import (
    Key,
    generate_key_value,
    parse_create_key,
    parse_expiration,
    parse_patch_key,
    parse_uuid,
    pattern_matches,
)

MASTER = "MASTER_KEY"
FUTURE = "2050-11-13T00:00:00Z"
ALL_ACTIONS_TEXT = (
    "`*`, `search`, `documents.*`, `documents.add`, `documents.get`, `documents.delete`, `indexes.*`, "
    "`indexes.create`, `indexes.get`, `indexes.update`, `indexes.delete`, `indexes.swap`, `tasks.*`, "
    "`tasks.cancel`, `tasks.delete`, `tasks.get`, `settings.*`, `settings.get`, `settings.update`, `stats.*`, "
    "`stats.get`, `metrics.*`, `metrics.get`, `dumps.*`, `dumps.create`, `snapshots.*`, `snapshots.create`, "
    "`version`, `keys.create`, `keys.get`, `keys.update`, `keys.delete`, `experimental.get`, "
    "`experimental.update`, `export`, `network.get`, `network.update`, `chatCompletions`, `chats.*`, "
    "`chats.get`, `chats.delete`, `chatsSettings.*`, `chatsSettings.get`, `chatsSettings.update`, `*.get`, "
    "`webhooks.get`, `webhooks.update`, `webhooks.delete`, `webhooks.create`, `webhooks.*`, "
    "`indexes.compact`, `fields.post`, `tasks.compact`, `dynamicSearchRules.get`, `dynamicSearchRules.create`, "
    "`dynamicSearchRules.update`, `dynamicSearchRules.delete`, `dynamicSearchRules.*`"
)


def error_of(call: Any, *args: Any) -> tuple[str, str]:
    with pytest.raises(MeiliError) as info:
        call(*args)
    return info.value.code, info.value.message


# -- key values ------------------------------------------------------------------------------------


def test_key_values_match_meilisearch() -> None:
    # the values Meilisearch's snapshots show for these uids under the master key `MASTER_KEY`
    assert generate_key_value(uuid.UUID("4bc0887a-0e41-4f3b-935d-0c451dcee9c8"), MASTER) == (
        "d9e776b8412f1db6974c9a5556b961c3559440b6588216f4ea5d9ed49f7c8f3c"
    )
    assert generate_key_value(uuid.UUID(int=0), MASTER) == (
        "aeb94973e0b6e912d94165430bbe87dee91a7c4f891ce19050c3910ec96977e9"
    )


# -- uuids -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("doggo", "invalid character: found `o` at 1"),
        ("aaaaabbbbbccc", "invalid length: expected length 32 for simple format, found 13"),
        ("F9168C5E-CEB2-4faa-BGBF-329BF39FA1E4", "invalid character: found `G` at 20"),
        ("F9168C5E-CEB2F4faaFB6BFF329BF39FA1E4", "invalid group count: expected 5, found 2"),
        ("67e550-4105b1426f9247bb680e5fe0c", "invalid group count: expected 5, found 2"),
        ("F9168C5E-CEB2-4faa-B6BF1-02BF39FA1E4", "invalid group length in group 3: expected 4, found 5"),
        ("01020304-1112-2122-3132-41424344", "invalid group length in group 4: expected 12, found 8"),
        ("{00000000000000000000000000000000}", "invalid group count: expected 5, found 1"),
    ],
)
def test_uuid_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidValue) as info:
        parse_uuid(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "text",
    [
        "67e55044-10b1-426f-9247-bb680e5fe0c8",
        "67E5504410B1426F9247BB680E5FE0C8",
        "urn:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8",
        "{67e55044-10b1-426f-9247-bb680e5fe0c8}",
    ],
)
def test_uuid_forms(text: str) -> None:
    assert parse_uuid(text) == uuid.UUID("67e55044-10b1-426f-9247-bb680e5fe0c8")


# -- actions and patterns --------------------------------------------------------------------------


def test_action_wildcards() -> None:
    everything = expand_actions(["*"])
    assert "*.get" not in everything
    assert {"keys.get", "keys.create", "dumps.create", "tasks.compact", "search"} <= everything
    reads = expand_actions(["*.get"])
    assert "keys.get" not in reads  # no privilege escalation through the read wildcard
    assert {"search", "documents.get", "version", "fields.post", "export", "stats.get"} <= reads
    assert "documents.add" not in reads
    assert expand_actions(["documents.*"]) == {
        "documents.*",
        "documents.add",
        "documents.get",
        "documents.delete",
    }
    assert expand_actions(["tasks.*"]) >= {"tasks.get", "tasks.delete", "tasks.cancel", "tasks.compact"}
    assert expand_actions(["search"]) == {"search"}
    assert len(ACTIONS) == 58 and set(ACTIONS) >= GLOBAL_ACTIONS


@pytest.mark.parametrize(
    ("pattern", "uid", "matches"),
    [
        ("*", "anything", True),
        ("a*", "a1", True),
        ("a*", "b1", False),
        ("a*", "a", True),
        ("products", "products", True),
        ("products", "products_1", False),
        ("products_*", "products", False),
    ],
)
def test_pattern_matching(pattern: str, uid: str, matches: bool) -> None:
    assert pattern_matches(pattern, uid) is matches


def make_key(actions: tuple[str, ...], indexes: tuple[str, ...], expires_at: int | None = None) -> Key:
    now = time.time_ns()
    return Key(
        uid=uuid.uuid4(),
        actions=actions,
        indexes=indexes,
        expires_at=expires_at,
        created_at=now,
        updated_at=now,
    )


def test_grants() -> None:
    now = time.time_ns()
    scoped = make_key(("*",), ("products",))
    assert scoped.grants("documents.add", "products", now)
    assert not scoped.grants("documents.add", "sales", now)
    assert scoped.grants("tasks.get", None, now)  # index-less route: lists are filtered later
    # global actions need a key covering every index, even through `*`
    for action in ("dumps.create", "version", "keys.get", "tasks.compact", "metrics.get"):
        assert not scoped.grants(action, None, now)
        assert make_key(("*",), ("*",)).grants(action, None, now)
    assert not make_key(("*",), ()).grants("tasks.get", None, now)  # no pattern: nothing at all
    expired = make_key(("*",), ("*",), expires_at=now - 1)
    assert not expired.grants("search", "x", now)
    assert not make_key(("search",), ("*",)).grants("documents.get", "x", now)


# -- creation body ---------------------------------------------------------------------------------


def body(**fields: Any) -> dict[str, Any]:
    return {"indexes": ["products"], "actions": ["documents.add"], "expiresAt": FUTURE, **fields}


def test_create_key() -> None:
    key = parse_create_key(
        {
            "name": "indexing-key",
            "description": "Indexing API key",
            "uid": "4bc0887a-0e41-4f3b-935d-0c451dcee9c8",
            "indexes": ["products"],
            "actions": ["search", "documents.add"],
            "expiresAt": FUTURE,
        }
    )
    view = key.view(MASTER)
    assert list(view) == [
        "name",
        "description",
        "key",
        "uid",
        "actions",
        "indexes",
        "expiresAt",
        "createdAt",
        "updatedAt",
    ]
    assert view["key"] == "d9e776b8412f1db6974c9a5556b961c3559440b6588216f4ea5d9ed49f7c8f3c"
    assert view["expiresAt"] == FUTURE
    assert view["createdAt"] == view["updatedAt"]
    generated = parse_create_key({"indexes": ["*"], "actions": ["*"], "expiresAt": None})
    assert generated.uid.version == 4 and generated.expires_at is None and generated.name is None


@pytest.mark.parametrize(
    "text",
    [
        "2050-11-13T00:00:00Z",
        "2050-11-13T00:00:00",
        "2050-11-13 00:00:00",
        "2050-11-13",
        "2050-11-13T01:00:00+01:00",
    ],
)
def test_expiration_formats(text: str) -> None:
    assert parse_expiration(text) == parse_expiration("2050-11-13T00:00:00Z")


@pytest.mark.parametrize("text", ["2010-11-13T00:00:00Z", "doggo", "2050-13-01", "2050-11-13T25:00:00", ""])
def test_expiration_refused(text: str) -> None:
    with pytest.raises(InvalidValue) as info:
        parse_expiration(text)
    assert str(info.value) == (
        f"`{text}` is not a valid date. It should follow the RFC 3339 format to represents a date or datetime in "
        "the future or specified as a null value. e.g. 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'.\n"
    )


@pytest.mark.parametrize(
    ("payload", "code", "message"),
    [
        (
            {"description": "Indexing API key", "actions": ["documents.add"], "expiresAt": FUTURE},
            "missing_api_key_indexes",
            "Missing field `indexes`",
        ),
        ({"indexes": ["doggo"], "expiresAt": None}, "missing_api_key_actions", "Missing field `actions`"),
        (
            {"uid": str(uuid.UUID(int=0)), "actions": ["*"], "indexes": ["doggo"]},
            "missing_api_key_expires_at",
            "Missing field `expiresAt`",
        ),
        (
            {"description": ["doggo"]},
            "invalid_api_key_description",
            'Invalid value type at `.description`: expected a string, but found an array: `["doggo"]`',
        ),
        (
            {"name": {"name": "products"}},
            "invalid_api_key_name",
            'Invalid value type at `.name`: expected a string, but found an object: `{"name":"products"}`',
        ),
        (
            {"uid": ["doggo"]},
            "invalid_api_key_uid",
            'Invalid value type at `.uid`: expected a string, but found an array: `["doggo"]`',
        ),
        (
            {"uid": "doggo"},
            "invalid_api_key_uid",
            "Invalid value at `.uid`: invalid character: found `o` at 1",
        ),
        (
            body(uid="aaaaabbbbbccc"),
            "invalid_api_key_uid",
            "Invalid value at `.uid`: invalid length: expected length 32 for simple format, found 13",
        ),
        (
            {"actions": "doggo"},
            "invalid_api_key_actions",
            'Invalid value type at `.actions`: expected an array, but found a string: `"doggo"`',
        ),
        (
            {"actions": ["doggo"]},
            "invalid_api_key_actions",
            f"Unknown value `doggo` at `.actions[0]`: expected one of {ALL_ACTIONS_TEXT}",
        ),
        (
            body(actions=["search", 3]),
            "invalid_api_key_actions",
            "Invalid value type at `.actions[1]`: expected a string, but found a positive integer: `3`",
        ),
        (
            {"indexes": "doggo"},
            "invalid_api_key_indexes",
            'Invalid value type at `.indexes`: expected an array, but found a string: `"doggo"`',
        ),
        (
            {"indexes": ["good doggo"]},
            "invalid_api_key_indexes",
            "Invalid value at `.indexes[0]`: `good doggo` is not a valid index uid pattern. Index uid patterns can be "
            "an integer or a string containing only alphanumeric characters, hyphens (-), underscores (_), and "
            "optionally end with a star (*).",
        ),
        (
            body(indexes=["bad name*"]),
            "invalid_api_key_indexes",
            "Invalid value at `.indexes[0]`: `bad name` is not a valid index uid pattern. Index uid patterns can be "
            "an integer or a string containing only alphanumeric characters, hyphens (-), underscores (_), and "
            "optionally end with a star (*).",
        ),
        (
            body(expiresAt={"name": "products"}),
            "invalid_api_key_expires_at",
            'Invalid value type at `.expiresAt`: expected a string, but found an object: `{"name":"products"}`',
        ),
        (
            body(expiresAt="2010-11-13T00:00:00Z"),
            "invalid_api_key_expires_at",
            "Invalid value at `.expiresAt`: `2010-11-13T00:00:00Z` is not a valid date. It should follow the RFC 3339 "
            "format to represents a date or datetime in the future or specified as a null value. e.g. 'YYYY-MM-DD' or "
            "'YYYY-MM-DD HH:MM:SS'.\n",
        ),
        (
            {"expires_at": "doggo"},
            "bad_request",
            "Unknown field `expires_at`: did you mean `expiresAt`? expected one of `description`, `name`, `uid`, "
            "`actions`, `indexes`, `expiresAt`",
        ),
        (
            body(doggo="bork"),
            "bad_request",
            "Unknown field `doggo`: expected one of `description`, `name`, `uid`, `actions`, `indexes`, `expiresAt`",
        ),
        (
            body(actions=["search", "dumps.create"]),
            "index_scoped_api_key_with_global_action",
            'cannot create index-scoped API key with global action `"dumps.create"`',
        ),
        (
            body(indexes=["a*"], actions=["keys.get"]),
            "index_scoped_api_key_with_global_action",
            'cannot create index-scoped API key with global action `"keys.get"`',
        ),
    ],
)
def test_create_key_errors(payload: dict[str, Any], code: str, message: str) -> None:
    assert error_of(parse_create_key, payload) == (code, message)


def test_wildcards_and_all_index_keys_may_be_created() -> None:
    # `*` on an index-scoped key is allowed (its global part is never granted); global actions are fine with `*`
    assert parse_create_key(body(actions=["*", "tasks.*", "*.get"])).actions == ("*", "tasks.*", "*.get")
    assert parse_create_key(body(indexes=["*"], actions=["dumps.create", "version"])).indexes == ("*",)


@pytest.mark.parametrize(
    ("field", "code"),
    [
        ("uid", "immutable_api_key_uid"),
        ("actions", "immutable_api_key_actions"),
        ("indexes", "immutable_api_key_indexes"),
        ("expiresAt", "immutable_api_key_expires_at"),
        ("createdAt", "immutable_api_key_created_at"),
        ("updatedAt", "immutable_api_key_updated_at"),
        ("key", "immutable_api_key_key"),
    ],
)
def test_patch_immutable_fields(field: str, code: str) -> None:
    assert error_of(parse_patch_key, {field: "doggo"}) == (
        code,
        f"Immutable field `{field}`: expected one of `description`, `name`",
    )


def test_patch_body() -> None:
    assert parse_patch_key({"name": None}) == {"name": None}
    assert parse_patch_key({}) == {}
    assert error_of(parse_patch_key, {"name": 13}) == (
        "invalid_api_key_name",
        "Invalid value type at `.name`: expected a string, but found a positive integer: `13`",
    )
    assert error_of(parse_patch_key, {"doggo": "bork"}) == (
        "bad_request",
        "Unknown field `doggo`: expected one of `description`, `name`",
    )


# -- store -----------------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[KeyStore]:
    s = KeyStore(tmp_path / "auth")
    yield s
    s.close()


def test_default_keys(store: KeyStore) -> None:
    listed = [(k.name, k.actions, k.indexes, k.expires_at) for k in store.list()]
    assert listed == [
        ("Default Search API Key", ("search",), ("*",), None),
        ("Default Admin API Key", ("*",), ("*",), None),
        ("Default Read-Only Admin API Key", ("*.get", "keys.get"), ("*",), None),
        ("Default Chat API Key", ("chatCompletions", "search"), ("*",), None),
    ]
    descriptions = {k.name: k.description for k in store.list()}
    assert descriptions["Default Admin API Key"] == (
        "Use it for anything that is not a search operation. Caution! Do not expose it on a public frontend"
    )
    assert descriptions["Default Read-Only Admin API Key"] == (
        "Use it to read information across the whole database. Caution! Do not expose this key on a public "
        "frontend"
    )


def test_store_persists_and_does_not_recreate_defaults(tmp_path: Path) -> None:
    s = KeyStore(tmp_path / "auth")
    key = s.put_new(parse_create_key(body()))
    for default in [k for k in s.list() if k.uid != key.uid]:
        assert s.delete(default.uid)
    s.close()
    reopened = KeyStore(tmp_path / "auth")
    try:
        assert list(reopened.keys) == [key.uid]
        assert reopened.get(key.uid) == key
        assert not reopened.delete(uuid.uuid4())
    finally:
        reopened.close()
    # an empty store gets its default keys back on the next start, as Meilisearch's
    s = KeyStore(tmp_path / "auth")
    try:
        s.delete(key.uid)
    finally:
        s.close()
    again = KeyStore(tmp_path / "auth")
    try:
        assert len(again.keys) == 4
    finally:
        again.close()


# -- controller ------------------------------------------------------------------------------------


@pytest.fixture
def ctl(store: KeyStore) -> AuthController:
    return AuthController(store, MASTER)


def add(ctl: AuthController, **fields: Any) -> tuple[Key, str]:
    key = ctl.create_key(parse_create_key(body(**fields)))
    return key, ctl.key_value(key.uid)


def test_duplicate_uid(ctl: AuthController) -> None:
    uid = "4bc0887a-0e41-4f3b-935d-0c451dcee9c8"
    add(ctl, uid=uid)
    assert error_of(ctl.create_key, parse_create_key(body(uid=uid))) == (
        "api_key_already_exists",
        f"`uid` field value `{uid}` is already an existing API key.",
    )


def test_resolve_and_not_found(ctl: AuthController) -> None:
    key, value = add(ctl)
    assert ctl.resolve_uid(str(key.uid)) == key.uid
    assert ctl.resolve_uid(value) == key.uid
    assert ctl.resolve_uid(value.upper()) == key.uid  # hex in either case, as `hex::decode`
    missing = "d0552b41d0552b41536279a0ad88bd595327b96f01176a60c2243e906c52ac02375f9bc4"
    assert error_of(ctl.resolve_uid, missing) == ("api_key_not_found", f"API key `{missing}` not found.")
    assert error_of(ctl.get_key, uuid.UUID(int=1)) == (
        "api_key_not_found",
        "API key `00000000-0000-0000-0000-000000000001` not found.",
    )
    ctl.delete_key(key.uid)
    assert error_of(ctl.delete_key, key.uid)[0] == "api_key_not_found"


def test_update_key(ctl: AuthController) -> None:
    key, _ = add(ctl, name="bob")
    updated = ctl.update_key(key.uid, {"description": "Product API key"})
    assert (updated.name, updated.description) == ("bob", "Product API key")
    assert updated.created_at == key.created_at and updated.updated_at > key.updated_at
    cleared = ctl.update_key(key.uid, {"name": None})
    assert (cleared.name, cleared.description) == (None, "Product API key")


def test_authenticate_api_keys(ctl: AuthController) -> None:
    _, value = add(ctl, indexes=["sales", "prod*", "sales"], actions=["documents.*", "indexes.create"])
    flt = ctl.authenticate(value, "documents.get", "products")
    assert flt.key_indexes == ("sales", "prod*", "sales") and not flt.is_tenant_token
    assert flt.is_index_authorized("sales") and not flt.is_index_authorized("other")
    assert not flt.all_indexes_authorized()
    assert flt.allow_index_creation("prod_2") and not flt.allow_index_creation("other")
    assert ctl.authenticate(value, "documents.add", None).key_indexes  # index-less: allowed, lists filtered
    assert error_of(ctl.authenticate, value, "documents.get", "doggo") == (
        "invalid_api_key",
        'The API key cannot acces the index `doggo`, authorized indexes are ["prod*", "sales"].',
    )
    assert error_of(ctl.authenticate, value, "settings.get", "sales") == (
        "invalid_api_key",
        "The provided API key is invalid.",
    )
    for token in (
        "d4000bd7225f77d1eb22cc706ed36772bbc36767c016a27f76def7537b68600d",
        "kefir",
        "",
        "MASTER_KEY ",
    ):
        assert error_of(ctl.authenticate, token, "documents.get", "sales") == (
            "invalid_api_key",
            "The provided API key is invalid.",
        )
    assert ctl.authenticate(MASTER, "keys.delete", None).all_indexes_authorized()
    assert ctl.authorize(value, "documents.delete", "sales")
    assert not ctl.authorize(value, "documents.delete", "nope")


def test_global_routes_refuse_index_scoped_keys(ctl: AuthController) -> None:
    _, value = add(ctl, actions=["*"])
    for action in ("dumps.create", "version", "keys.get", "experimental.get", "tasks.compact"):
        assert error_of(ctl.authenticate, value, action, None) == (
            "invalid_api_key",
            "The provided API key is invalid.",
        )
    assert ctl.authorize(value, "search", "products")


def test_expired_and_deleted_keys(ctl: AuthController) -> None:
    _, value = add(
        ctl,
        indexes=["*"],
        actions=["*"],
        expiresAt=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2)),
    )
    assert ctl.authorize(value, "search", "x")
    time.sleep(2.1)
    assert error_of(ctl.authenticate, value, "search", "x") == (
        "invalid_api_key",
        "The provided API key is invalid.",
    )
    other, other_value = add(ctl, indexes=["*"], actions=["*"])
    ctl.delete_key(other.uid)
    assert not ctl.authorize(other_value, "documents.get", "x")


def test_default_keys_authenticate(ctl: AuthController) -> None:
    values = {k.name: ctl.key_value(k.uid) for k in ctl.list_keys()}
    assert ctl.authorize(values["Default Search API Key"], "search", "movies")
    assert not ctl.authorize(values["Default Search API Key"], "keys.get", None)
    assert ctl.authorize(values["Default Read-Only Admin API Key"], "keys.get", None)
    assert not ctl.authorize(values["Default Read-Only Admin API Key"], "keys.create", None)
    assert not ctl.authorize(values["Default Read-Only Admin API Key"], "documents.add", "movies")
    assert ctl.authorize(values["Default Admin API Key"], "keys.create", None)
    assert ctl.authorize(values["Default Chat API Key"], "chatCompletions", None)


def test_changing_the_master_key_changes_every_value(store: KeyStore) -> None:
    first = AuthController(store, MASTER)
    key, value = add(first)
    second = AuthController(store, "ANOTHER_MASTER_KEY")
    assert not second.authorize(value, "documents.add", "products")
    assert second.authorize(second.key_value(key.uid), "documents.add", "products")


def test_without_master_key(store: KeyStore) -> None:
    ctl = AuthController(store, None)
    assert ctl.authenticate("anything", "documents.add", "x").all_indexes_authorized()
    assert error_of(ctl.authenticate, "anything", "keys.get", None)[0] == "missing_master_key"
    assert ctl.uid_from_key(generate_key_value(next(iter(store.keys)), MASTER)) is None
