"""`/keys` routes and API-key authorization on a real server (Meilisearch's tests/auth/api_keys.rs,
errors.rs and authorization.rs).

The secured server is shared by the session, so tests create their own keys and indexes with unique
names and never count every key.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import itertools
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import meilisearch
import pytest
from meilisearch.errors import MeilisearchApiError

from tests.conftest import MASTER_KEY, ServerProcess, wait_task

FUTURE = "2050-11-13T00:00:00Z"
INVALID_KEY = {
    "message": "The provided API key is invalid.",
    "code": "invalid_api_key",
    "type": "auth",
    "link": "https://docs.meilisearch.com/errors#invalid_api_key",
}
_names = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}{next(_names)}_{uuid.uuid4().hex[:8]}"


def tampered(token: str) -> str:
    """The token with the last character of its signature changed."""
    return token[:-1] + ("B" if token.endswith("A") else "A")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def error(code: str, message: str) -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": "invalid_request",
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


def at(client: httpx.Client, path: str) -> str:
    """An absolute URL on the client's server (for requests with other credentials)."""
    return str(client.base_url).rstrip("/") + path


def hmac_key(uid: str, master_key: str = MASTER_KEY) -> str:
    return hmac.new(master_key.encode(), uid.encode(), hashlib.sha256).hexdigest()


@pytest.fixture
def admin(secured_server: ServerProcess) -> Iterator[httpx.Client]:
    """A client holding the master key."""
    with httpx.Client(base_url=secured_server.url, timeout=30, headers=bearer(MASTER_KEY)) as client:
        yield client


@pytest.fixture
def anon(secured_server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=secured_server.url, timeout=30) as client:
        yield client


def create_key(admin: httpx.Client, **fields: Any) -> dict[str, Any]:
    payload = {"indexes": ["*"], "actions": ["*"], "expiresAt": None, **fields}
    r = admin.post("/keys", json=payload)
    assert r.status_code == 201, r.text
    created: dict[str, Any] = r.json()
    return created


def create_index(admin: httpx.Client, uid: str) -> None:
    r = admin.post("/indexes", json={"uid": uid})
    assert r.status_code == 202, r.text
    assert wait_task(admin, r.json()["taskUid"])["status"] == "succeeded"


# -- without a master key --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/keys"),
        ("POST", "/keys"),
        ("GET", "/keys/content"),
        ("PATCH", "/keys/content"),
        ("DELETE", "/keys/content"),
    ],
)
@pytest.mark.parametrize("headers", [{}, bearer("MASTER_KEY")])
def test_keys_routes_need_a_master_key(
    http: httpx.Client, method: str, path: str, headers: dict[str, str]
) -> None:
    r = http.request(method, path, json={} if method in ("POST", "PATCH") else None, headers=headers)
    assert r.status_code == 401
    assert r.json() == {
        "message": "Meilisearch is running without a master key. To access this API endpoint, you must have set "
        "a master key at launch.",
        "code": "missing_master_key",
        "type": "auth",
        "link": "https://docs.meilisearch.com/errors#missing_master_key",
    }


# -- lifecycle -------------------------------------------------------------------------------------


def test_create_get_update_delete(admin: httpx.Client) -> None:
    uid = str(uuid.uuid4())
    key = create_key(
        admin,
        uid=uid,
        name="indexing-key",
        description="Indexing API key",
        indexes=["products"],
        actions=["search", "documents.add"],
        expiresAt=FUTURE,
    )
    assert list(key) == [
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
    assert key["key"] == hmac_key(uid)  # HMAC-SHA256 of the hyphenated uid under the master key
    assert (key["uid"], key["actions"], key["indexes"], key["expiresAt"]) == (
        uid,
        ["search", "documents.add"],
        ["products"],
        FUTURE,
    )
    assert key["createdAt"] == key["updatedAt"]

    for ref in (uid, key["key"]):
        r = admin.get(f"/keys/{ref}")
        assert r.status_code == 200
        assert r.json() == key

    listed = admin.get("/keys", params={"limit": 1000}).json()
    assert listed["results"][0] == key  # newest first
    assert listed["offset"] == 0 and listed["limit"] == 1000 and listed["total"] == len(listed["results"])
    page = admin.get("/keys", params={"offset": 1, "limit": 2}).json()
    assert page["results"] == listed["results"][1:3] and page["total"] == listed["total"]
    assert list(page) == ["results", "offset", "limit", "total"]

    time.sleep(0.01)
    r = admin.patch(f"/keys/{key['key']}", json={"name": "bob", "description": None})
    assert r.status_code == 200
    patched = r.json()
    assert (patched["name"], patched["description"]) == ("bob", None)
    assert patched["createdAt"] == key["createdAt"] and patched["updatedAt"] > key["updatedAt"]
    assert {k: v for k, v in patched.items() if k not in ("name", "description", "updatedAt")} == {
        k: v for k, v in key.items() if k not in ("name", "description", "updatedAt")
    }

    r = admin.delete(f"/keys/{uid}")
    assert r.status_code == 204
    assert r.content == b""
    r = admin.get(f"/keys/{uid}")
    assert r.status_code == 404
    assert r.json() == error("api_key_not_found", f"API key `{uid}` not found.")
    # the key value no longer authenticates
    r = httpx.get(at(admin, "/indexes/products/documents"), headers=bearer(key["key"]))
    assert r.status_code == 403


def test_default_keys_are_present(admin: httpx.Client) -> None:
    keys = {k["name"]: k for k in admin.get("/keys", params={"limit": 1000}).json()["results"]}
    expected = {
        "Default Search API Key": ("Use it to search from the frontend", ["search"]),
        "Default Admin API Key": (
            "Use it for anything that is not a search operation. Caution! Do not expose it on "
            "a public frontend",
            ["*"],
        ),
        "Default Read-Only Admin API Key": (
            "Use it to read information across the whole database. Caution! Do not "
            "expose this key on a public frontend",
            ["*.get", "keys.get"],
        ),
        "Default Chat API Key": (
            "Use it to chat and search from the frontend",
            ["chatCompletions", "search"],
        ),
    }
    for name, (description, actions) in expected.items():
        key = keys[name]
        assert (key["description"], key["actions"], key["indexes"], key["expiresAt"]) == (
            description,
            actions,
            ["*"],
            None,
        )
        assert key["key"] == hmac_key(key["uid"])
    search_key = keys["Default Search API Key"]["key"]
    assert httpx.get(at(admin, "/keys"), headers=bearer(search_key)).json() == INVALID_KEY
    read_only = keys["Default Read-Only Admin API Key"]["key"]
    assert httpx.get(at(admin, "/keys"), headers=bearer(read_only)).status_code == 200
    r = httpx.post(
        at(admin, "/keys"),
        headers=bearer(read_only),
        json={"indexes": ["*"], "actions": ["*"], "expiresAt": None},
    )
    assert r.status_code == 403


# -- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "code", "message"),
    [
        (
            {"description": "Indexing API key", "actions": ["documents.add"], "expiresAt": FUTURE},
            "missing_api_key_indexes",
            "Missing field `indexes`",
        ),
        ({"indexes": ["doggo"], "expiresAt": None}, "missing_api_key_actions", "Missing field `actions`"),
        ({"actions": ["*"], "indexes": ["doggo"]}, "missing_api_key_expires_at", "Missing field `expiresAt`"),
        (
            {"description": ["doggo"]},
            "invalid_api_key_description",
            'Invalid value type at `.description`: expected a string, but found an array: `["doggo"]`',
        ),
        (
            {"name": ["doggo"]},
            "invalid_api_key_name",
            'Invalid value type at `.name`: expected a string, but found an array: `["doggo"]`',
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
            {
                "uid": "aaaaabbbbbccc",
                "indexes": ["products"],
                "actions": ["documents.add"],
                "expiresAt": FUTURE,
            },
            "invalid_api_key_uid",
            "Invalid value at `.uid`: invalid length: expected length 32 for simple format, found 13",
        ),
        (
            {"actions": "doggo"},
            "invalid_api_key_actions",
            'Invalid value type at `.actions`: expected an array, but found a string: `"doggo"`',
        ),
        (
            {"indexes": "doggo"},
            "invalid_api_key_indexes",
            'Invalid value type at `.indexes`: expected an array, but found a string: `"doggo"`',
        ),
        (
            {"indexes": ["good doggo"]},
            "invalid_api_key_indexes",
            "Invalid value at `.indexes[0]`: `good doggo` is not a valid index uid pattern. Index uid patterns can be an "
            "integer or a string containing only alphanumeric characters, hyphens (-), underscores (_), and optionally "
            "end with a star (*).",
        ),
        (
            {"indexes": ["products"], "actions": ["documents.add"], "expiresAt": {"name": "products"}},
            "invalid_api_key_expires_at",
            'Invalid value type at `.expiresAt`: expected a string, but found an object: `{"name":"products"}`',
        ),
        (
            {"indexes": ["products"], "actions": ["documents.add"], "expiresAt": "2010-11-13T00:00:00Z"},
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
            {"indexes": ["products"], "actions": ["search", "dumps.create"], "expiresAt": None},
            "index_scoped_api_key_with_global_action",
            'cannot create index-scoped API key with global action `"dumps.create"`',
        ),
    ],
)
def test_create_errors(admin: httpx.Client, payload: dict[str, Any], code: str, message: str) -> None:
    r = admin.post("/keys", json=payload)
    assert r.status_code == 400
    assert r.json() == error(code, message)


def test_unknown_action_lists_every_action(admin: httpx.Client) -> None:
    r = admin.post("/keys", json={"actions": ["doc.add"], "indexes": ["*"], "expiresAt": None})
    assert r.status_code == 400
    message = r.json()["message"]
    assert message.startswith(
        "Unknown value `doc.add` at `.actions[0]`: expected one of `*`, `search`, `documents.*`"
    )
    assert message.endswith(
        "`fields.post`, `tasks.compact`, `dynamicSearchRules.get`, `dynamicSearchRules.create`, "
        "`dynamicSearchRules.update`, `dynamicSearchRules.delete`, `dynamicSearchRules.*`"
    )


def test_duplicate_uid_is_409(admin: httpx.Client) -> None:
    uid = str(uuid.uuid4())
    create_key(admin, uid=uid)
    r = admin.post("/keys", json={"uid": uid, "indexes": ["*"], "actions": ["search"], "expiresAt": None})
    assert r.status_code == 409
    assert r.json() == error(
        "api_key_already_exists", f"`uid` field value `{uid}` is already an existing API key."
    )


def test_body_problems(admin: httpx.Client) -> None:
    r = admin.post("/keys", content=b"", headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["code"]) == (400, "missing_payload")
    r = admin.post("/keys", content=b"{", headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["code"]) == (400, "malformed_payload")
    r = admin.post("/keys", content=b"{}")
    assert (r.status_code, r.json()["code"]) == (415, "missing_content_type")


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
def test_patch_immutable_fields(admin: httpx.Client, field: str, code: str) -> None:
    # the body is checked before the key in the path is looked up
    r = admin.patch("/keys/doggo", json={field: "doggo"})
    assert r.status_code == 400
    assert r.json() == error(code, f"Immutable field `{field}`: expected one of `description`, `name`")


@pytest.mark.parametrize(
    ("payload", "code", "message"),
    [
        (
            {"description": ["doggo"]},
            "invalid_api_key_description",
            'Invalid value type at `.description`: expected a string, but found an array: `["doggo"]`',
        ),
        (
            {"name": 13},
            "invalid_api_key_name",
            "Invalid value type at `.name`: expected a string, but found a positive integer: `13`",
        ),
        ({"doggo": "bork"}, "bad_request", "Unknown field `doggo`: expected one of `description`, `name`"),
    ],
)
def test_patch_errors(admin: httpx.Client, payload: dict[str, Any], code: str, message: str) -> None:
    r = admin.patch("/keys/doggo", json=payload)
    assert r.status_code == 400
    assert r.json() == error(code, message)


@pytest.mark.parametrize(("method", "body"), [("GET", None), ("PATCH", {}), ("DELETE", None)])
def test_not_found(admin: httpx.Client, method: str, body: Any) -> None:
    missing = "d0552b41d0552b41536279a0ad88bd595327b96f01176a60c2243e906c52ac02375f9bc4"
    r = admin.request(method, f"/keys/{missing}", json=body)
    assert r.status_code == 404
    assert r.json() == error("api_key_not_found", f"API key `{missing}` not found.")
    uid = str(uuid.uuid4())
    r = admin.request(method, f"/keys/{uid.upper()}", json=body)
    assert r.json() == error("api_key_not_found", f"API key `{uid}` not found.")


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        (
            "offset=doggo",
            "invalid_api_key_offset",
            "Invalid value in parameter `offset`: could not parse `doggo` as a positive integer",
        ),
        (
            "limit=doggo",
            "invalid_api_key_limit",
            "Invalid value in parameter `limit`: could not parse `doggo` as a positive integer",
        ),
        ("doggo=no_limit", "bad_request", "Unknown parameter `doggo`: expected one of `offset`, `limit`"),
    ],
)
def test_list_errors(admin: httpx.Client, query: str, code: str, message: str) -> None:
    r = admin.get(f"/keys?{query}")
    assert r.status_code == 400
    assert r.json() == error(code, message)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_keys_routes_need_auth(anon: httpx.Client, method: str) -> None:
    r = anon.request(method, "/keys")
    assert r.status_code == 401
    assert r.json()["code"] == "missing_authorization_header"
    r = anon.request(
        method, "/keys", headers=bearer("d4000bd7225f77d1eb22cc706ed36772bbc36767c016a27f76def7537b68600d")
    )
    assert r.status_code == 403
    assert r.json() == INVALID_KEY


# -- authorization with API keys -------------------------------------------------------------------


def test_index_patterns(admin: httpx.Client) -> None:
    base = unique("pat")
    a1, b1 = f"{base}a1", f"{base}b1"
    for uid in (a1, b1):
        create_index(admin, uid)
    key = create_key(admin, indexes=[f"{base}a*"], actions=["indexes.get", "documents.*"])["key"]
    with httpx.Client(base_url=at(admin, ""), headers=bearer(key), timeout=30) as client:
        r = client.get(f"/indexes/{a1}")
        assert r.status_code == 200 and r.json()["uid"] == a1
        r = client.get(f"/indexes/{b1}")
        assert r.status_code == 403
        assert r.json() == {
            **INVALID_KEY,
            "message": f'The API key cannot acces the index `{b1}`, authorized indexes are ["{base}a*"].',
        }
        assert client.post(f"/indexes/{a1}/documents", json=[{"id": 1}]).status_code == 202
        assert client.post(f"/indexes/{b1}/documents", json=[{"id": 1}]).status_code == 403
        # holding the index but not the action
        assert client.get(f"/indexes/{a1}/settings").json() == INVALID_KEY


def test_index_list_shows_only_authorized_indexes(admin: httpx.Client) -> None:
    base = unique("lst")
    for uid in (f"{base}a1", f"{base}b1"):
        create_index(admin, uid)
    key = create_key(admin, indexes=[f"{base}a*"], actions=["indexes.get"])["key"]
    r = httpx.get(at(admin, "/indexes"), params={"limit": 1000}, headers=bearer(key))
    assert r.status_code == 200
    assert [i["uid"] for i in r.json()["results"]] == [f"{base}a1"]
    assert r.json()["total"] == 1


def test_actions_and_wildcards(admin: httpx.Client) -> None:
    index = unique("act")
    create_index(admin, index)
    cases = [
        (["indexes.get"], True),
        (["indexes.*"], True),
        (["*"], True),
        (["*.get"], True),
        (["documents.get"], False),
        (["indexes.create", "indexes.update"], False),
    ]
    for actions, allowed in cases:
        key = create_key(admin, actions=actions)["key"]
        r = httpx.get(at(admin, f"/indexes/{index}"), headers=bearer(key))
        assert (r.status_code == 200) is allowed, actions
        if not allowed:
            assert r.json() == INVALID_KEY


def test_global_routes_refuse_index_scoped_keys(admin: httpx.Client) -> None:
    scoped = create_key(admin, indexes=["products"], actions=["*"])["key"]
    unscoped = create_key(admin, indexes=["*"], actions=["*"])["key"]
    r = httpx.get(at(admin, "/version"), headers=bearer(scoped))
    assert (r.status_code, r.json()) == (403, INVALID_KEY)
    assert httpx.get(at(admin, "/version"), headers=bearer(unscoped)).status_code == 200
    assert httpx.get(at(admin, "/keys"), headers=bearer(scoped)).json() == INVALID_KEY
    assert httpx.get(at(admin, "/keys"), headers=bearer(unscoped)).status_code == 200


def test_expired_key(admin: httpx.Client) -> None:
    expires = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=2)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    key = create_key(admin, expiresAt=expires)["key"]
    assert httpx.get(at(admin, "/version"), headers=bearer(key)).status_code == 200
    time.sleep(2.5)
    for path in ("/version", "/indexes", "/tasks", "/indexes/products/documents", "/keys"):
        r = httpx.get(at(admin, path), headers=bearer(key))
        assert (r.status_code, r.json()) == (403, INVALID_KEY), path


def test_tenant_tokens_are_refused_outside_search(admin: httpx.Client) -> None:
    created = create_key(admin, actions=["*"])
    client = meilisearch.Client(at(admin, ""), created["key"])
    token = client.generate_tenant_token(created["uid"], ["*"])
    for path in ("/indexes", "/indexes/products/documents", "/tasks"):
        r = httpx.get(at(admin, path), headers=bearer(token))
        assert (r.status_code, r.json()) == (403, INVALID_KEY), path


def test_sdk_tenant_token_on_the_search_route(admin: httpx.Client) -> None:
    base = unique("tt")
    sales, other = f"{base}sales", f"{base}other"
    for uid in (sales, other):
        create_index(admin, uid)
    created = create_key(admin, indexes=[f"{base}*"], actions=["search"])
    client = meilisearch.Client(at(admin, ""), created["key"])
    expires = datetime.datetime.now(tz=datetime.UTC) + datetime.timedelta(hours=1)
    token = client.generate_tenant_token(created["uid"], [sales], expires_at=expires)
    r = httpx.post(at(admin, f"/indexes/{sales}/search"), json={"q": ""}, headers=bearer(token))
    assert r.status_code == 200, r.text
    r = httpx.post(at(admin, f"/indexes/{other}/search"), json={"q": ""}, headers=bearer(token))
    assert r.status_code == 403
    assert r.json() == {
        **INVALID_KEY,
        "message": f"The provided tenant token cannot acces the index `{other}`, "
        f'allowed indexes are ["{sales}"].',
    }
    wide = client.generate_tenant_token(created["uid"], ["*"])
    r = httpx.post(at(admin, "/indexes/elsewhere/search"), json={"q": ""}, headers=bearer(wide))
    assert r.status_code == 403
    assert (
        r.json()["message"]
        == "The API key used to generate this tenant token cannot acces the index `elsewhere`."
    )
    r = httpx.post(at(admin, f"/indexes/{sales}/search"), json={"q": ""}, headers=bearer(tampered(token)))
    assert (r.status_code, r.json()["message"]) == (403, "Could not decode tenant token, InvalidSignature.")


# -- the official SDK ------------------------------------------------------------------------------


def test_sdk_key_management(tmp_path: Path) -> None:
    # a server of its own: the SDK cannot parse whole-second dates (`2050-11-13T00:00:00Z`), which other
    # tests' keys on the shared server carry, and Meilisearch writes them the same way
    srv = ServerProcess(tmp_path / "data.ms", extra_args=["--master-key", MASTER_KEY]).start()
    try:
        sdk_round_trip(meilisearch.Client(srv.url, MASTER_KEY))
    finally:
        srv.stop()


def sdk_round_trip(client: meilisearch.Client) -> None:
    created = client.create_key(
        {
            "name": "sdk",
            "description": "from the SDK",
            "actions": ["search"],
            "indexes": ["movies_*"],
            "expiresAt": None,
        }
    )
    assert created.key == hmac_key(created.uid)
    assert (created.name, created.actions, created.indexes, created.expires_at) == (
        "sdk",
        ["search"],
        ["movies_*"],
        None,
    )
    assert client.get_key(created.uid).key == created.key
    assert client.get_key(created.key).uid == created.uid
    listed = client.get_keys({"limit": 1000})
    assert created.uid in {k.uid for k in listed.results}
    assert listed.total == len(listed.results)
    updated = client.update_key(created.key, {"name": "renamed"})
    assert (updated.name, updated.description) == ("renamed", "from the SDK")
    assert client.delete_key(created.uid) == 204
    with pytest.raises(MeilisearchApiError) as info:
        client.get_key(created.uid)
    assert info.value.code == "api_key_not_found"


# -- persistence and master key changes ------------------------------------------------------------


def test_keys_survive_restarts_and_follow_the_master_key(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms", extra_args=["--master-key", "FIRST_MASTER_KEY"]).start()
    try:
        r = httpx.post(
            f"{srv.url}/keys",
            headers=bearer("FIRST_MASTER_KEY"),
            json={
                "uid": "4bc0887a-0e41-4f3b-935d-0c451dcee9c8",
                "indexes": ["*"],
                "actions": ["*"],
                "expiresAt": None,
            },
        )
        assert r.status_code == 201
        old_value = r.json()["key"]
        assert old_value == hmac_key("4bc0887a-0e41-4f3b-935d-0c451dcee9c8", "FIRST_MASTER_KEY")
    finally:
        srv.stop()
    srv = ServerProcess(tmp_path / "data.ms", extra_args=["--master-key", "MASTER_KEY"]).start()
    try:
        r = httpx.get(f"{srv.url}/keys/4bc0887a-0e41-4f3b-935d-0c451dcee9c8", headers=bearer("MASTER_KEY"))
        assert r.status_code == 200
        # Meilisearch's own value for this uid under `MASTER_KEY`
        assert r.json()["key"] == "d9e776b8412f1db6974c9a5556b961c3559440b6588216f4ea5d9ed49f7c8f3c"
        assert httpx.get(f"{srv.url}/version", headers=bearer(old_value)).json() == INVALID_KEY
        assert httpx.get(f"{srv.url}/version", headers=bearer(r.json()["key"])).status_code == 200
        names = [
            k["name"] for k in httpx.get(f"{srv.url}/keys", headers=bearer("MASTER_KEY")).json()["results"]
        ]
        assert names.count("Default Admin API Key") == 1 and len(names) == 5
    finally:
        srv.stop()


def test_restricted_key_sees_only_its_indexes_tasks_batches_and_stats(
    admin: httpx.Client, anon: httpx.Client
) -> None:
    mine, other = unique("visible"), unique("hidden")
    create_index(admin, mine)
    create_index(admin, other)
    key = create_key(
        admin,
        actions=["tasks.get", "stats.get", "indexes.get", "indexes.create"],
        indexes=[f"{mine}*"],
        expiresAt=None,
    )
    headers = bearer(key["key"])
    tasks = anon.get("/tasks", params={"limit": 1000}, headers=headers).json()
    assert {t["indexUid"] for t in tasks["results"]} == {mine}
    assert tasks["total"] == len(tasks["results"])
    hidden_task = admin.get("/tasks", params={"indexUids": other}).json()["results"][0]
    assert anon.get(f"/tasks/{hidden_task['uid']}", headers=headers).status_code == 404
    batches = anon.get("/batches", params={"limit": 1000}, headers=headers).json()["results"]
    assert all(set(b["stats"]["indexUids"]) == {mine} for b in batches)
    stats = anon.get("/stats", headers=headers).json()
    assert list(stats["indexes"]) == [mine]
    refused = anon.post("/indexes", json={"uid": other + "x"}, headers=headers)
    assert refused.status_code == 403
    assert refused.json()["code"] == "invalid_api_key"
