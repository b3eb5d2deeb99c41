"""Authorization matrix: every route of `ROUTES` under every kind of credential (issue 5).

Each registered route gets one minimal valid request (placeholder index uid, document id, task uid and
key uid) sent to the shared secured server with, in turn: no header, a wrong key, the master key, a key
holding exactly the route's action, a key holding another action, the action's family wildcard
(`documents.*`), `*`, `*.get`, a key whose index pattern matches the request's index and one whose
patterns do not, an expired key, and a tenant token. The expected outcome comes from the contract
(docs/api-contract.md §0.1, §0.2): 401 `missing_authorization_header`, 403 `invalid_api_key` with Meilisearch's exact
message, or an answer that is no auth error at all (whatever the route then says, never a 5xx).

The route list is read from `ROUTES` at collection time, so a new route is walked without editing this
file; `test_route_actions_follow_the_contract` makes sure its declared action is the contract's.
Keys are created once per module (one per distinct actions/indexes pair).
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import httpx
import pytest

from hanzo_engine.auth import ACTIONS, encode_token, expand_actions
from hanzo_engine.auth.keys import GLOBAL_ACTIONS
from hanzo_engine.server import app as _app  # noqa: F401  (importing the app registers every route)
from hanzo_engine.server.route_table import ROUTES, RouteSpec
from tests.conftest import MASTER_KEY, ServerProcess, wait_task

BASE: Final = "authmatrix"
INDEX: Final = f"{BASE}_idx"  # the placeholder index of every index route
INDEX2: Final = f"{BASE}_idx2"  # the second index of a swap
MATCHING: Final = (f"{BASE}_*",)
NOT_MATCHING: Final = (f"{BASE}x_*", "elsewhere")
DOCUMENT_ID: Final = "1"
TASK_UID: Final = "0"
KEY_UID: Final = "00000000-0000-4000-8000-000000000000"  # no such key: key routes answer 404
WRONG_KEY: Final = "d4000bd7225f77d1eb22cc706ed36772bbc36767c016a27f76def7537b68600d"
EXPIRES_IN: Final = 2.0  # seconds between the expired key's creation and its expiry

MISSING_AUTH: Final = {
    "message": "The Authorization header is missing. It must use the bearer authorization method.",
    "code": "missing_authorization_header",
    "type": "auth",
    "link": "https://docs.meilisearch.com/errors#missing_authorization_header",
}
INVALID_KEY_MESSAGE: Final = "The provided API key is invalid."
AUTH_CODES: Final = frozenset({"missing_authorization_header", "invalid_api_key", "missing_master_key"})


def invalid_key(message: str = INVALID_KEY_MESSAGE) -> dict[str, str]:
    return {
        "message": message,
        "code": "invalid_api_key",
        "type": "auth",
        "link": "https://docs.meilisearch.com/errors#invalid_api_key",
    }


# -------------------------------------------------------------------------------------------------
# The route -> action table of docs/api-contract.md §1
# -------------------------------------------------------------------------------------------------

_CONTRACT_ACTIONS: Final[dict[tuple[str, str], str | None]] = {
    ("GET", "/"): None,
    ("GET", "/health"): None,
    ("GET", "/version"): "version",
    ("GET", "/dashboard/{asset:path}"): None,  # the dashboard's static files, public like `/`
    ("GET", "/stats"): "stats.get",
    ("GET", "/indexes/{index_uid}/stats"): "stats.get",
    ("GET", "/metrics"): "metrics.get",
    ("POST", "/logs/stream"): "metrics.get",
    ("DELETE", "/logs/stream"): "metrics.get",
    ("POST", "/logs/stderr"): "metrics.get",
    ("GET", "/experimental-features"): "experimental.get",
    ("PATCH", "/experimental-features"): "experimental.update",
    ("GET", "/indexes"): "indexes.get",
    ("POST", "/indexes"): "indexes.create",
    ("GET", "/indexes/{index_uid}"): "indexes.get",
    ("PATCH", "/indexes/{index_uid}"): "indexes.update",
    ("DELETE", "/indexes/{index_uid}"): "indexes.delete",
    ("POST", "/swap-indexes"): "indexes.swap",
    ("POST", "/indexes/{index_uid}/compact"): "indexes.compact",
    ("POST", "/indexes/{index_uid}/fields"): "fields.post",
    ("POST", "/indexes/{index_uid}/documents"): "documents.add",
    ("PUT", "/indexes/{index_uid}/documents"): "documents.add",
    ("GET", "/indexes/{index_uid}/documents"): "documents.get",
    ("POST", "/indexes/{index_uid}/documents/fetch"): "documents.get",
    ("GET", "/indexes/{index_uid}/documents/{document_id}"): "documents.get",
    ("DELETE", "/indexes/{index_uid}/documents/{document_id}"): "documents.delete",
    ("POST", "/indexes/{index_uid}/documents/delete-batch"): "documents.delete",
    ("POST", "/indexes/{index_uid}/documents/delete"): "documents.delete",
    ("DELETE", "/indexes/{index_uid}/documents"): "documents.delete",
    ("POST", "/indexes/{index_uid}/documents/edit"): "documents.*",
    ("POST", "/indexes/{index_uid}/search"): "search",
    ("GET", "/indexes/{index_uid}/search"): "search",
    ("POST", "/multi-search"): "search",
    ("POST", "/indexes/{index_uid}/facet-search"): "search",
    ("POST", "/indexes/{index_uid}/similar"): "search",
    ("GET", "/indexes/{index_uid}/similar"): "search",
    ("GET", "/tasks"): "tasks.get",
    ("GET", "/tasks/{task_uid}"): "tasks.get",
    ("POST", "/tasks/cancel"): "tasks.cancel",
    ("DELETE", "/tasks"): "tasks.delete",
    ("GET", "/tasks/{task_uid}/documents"): "tasks.get",
    ("POST", "/tasks/compact"): "tasks.compact",
    ("GET", "/batches"): "tasks.get",
    ("GET", "/batches/{batch_uid}"): "tasks.get",
    ("POST", "/dumps"): "dumps.create",
    ("POST", "/snapshots"): "snapshots.create",
    ("GET", "/keys"): "keys.get",
    ("POST", "/keys"): "keys.create",
    ("GET", "/keys/{key_or_uid}"): "keys.get",
    ("PATCH", "/keys/{key_or_uid}"): "keys.update",
    ("DELETE", "/keys/{key_or_uid}"): "keys.delete",
    ("POST", "/export"): "export",
    ("GET", "/network"): "network.get",
    ("PATCH", "/network"): "network.update",
    ("POST", "/network/control"): "network.update",
    ("GET", "/webhooks"): "webhooks.get",
    ("POST", "/webhooks"): "webhooks.create",
    ("GET", "/webhooks/{uuid}"): "webhooks.get",
    ("PATCH", "/webhooks/{uuid}"): "webhooks.update",
    ("DELETE", "/webhooks/{uuid}"): "webhooks.delete",
    ("POST", "/dynamic-search-rules"): "dynamicSearchRules.get",
    ("DELETE", "/dynamic-search-rules"): "dynamicSearchRules.delete",
    ("GET", "/dynamic-search-rules/{rule_uid}"): "dynamicSearchRules.get",
    ("PATCH", "/dynamic-search-rules/{rule_uid}"): "dynamicSearchRules.update",
    ("DELETE", "/dynamic-search-rules/{rule_uid}"): "dynamicSearchRules.delete",
    ("GET", "/chats"): "chats.get",
    ("GET", "/chats/{workspace}"): "chats.get",
    ("DELETE", "/chats/{workspace}"): "chats.delete",
    ("GET", "/chats/{workspace}/settings"): "chatsSettings.get",
    ("PATCH", "/chats/{workspace}/settings"): "chatsSettings.update",
    ("DELETE", "/chats/{workspace}/settings"): "chatsSettings.update",
    ("POST", "/chats/{workspace}/chat/completions"): "chatCompletions",
    # needs `documents.get` as well (`_SECOND_ACTIONS`)
    ("POST", "/render-template"): "settings.get",
}
# routes needing a second action besides their declared one (Meilisearch's `DoubleActionPolicy`): the keys
# of their "exact" and "family" cases hold the second action too
_SECOND_ACTIONS: Final[dict[tuple[str, str], str]] = {("POST", "/render-template"): "documents.get"}


def contract_action(method: str, path: str) -> str | None:
    """The action docs/api-contract.md §1 gives `method path` (settings routes by rule); KeyError when §1 has no such route."""
    if path.startswith("/indexes/{index_uid}/settings"):
        return "settings.get" if method == "GET" else "settings.update"
    return _CONTRACT_ACTIONS[(method, path)]


# -------------------------------------------------------------------------------------------------
# One minimal valid request per route
# -------------------------------------------------------------------------------------------------

NO_BODY: Final = object()
# bodies of routes whose body is not `{}` (other POST/PUT/PATCH routes get `{}`, GET/DELETE none)
_BODIES: Final[dict[tuple[str, str], Any]] = {
    ("POST", "/keys"): {"actions": ["search"], "indexes": ["*"], "expiresAt": None},
    ("PATCH", "/keys/{key_or_uid}"): {"name": "matrix"},
    ("POST", "/indexes"): {"uid": INDEX},
    ("PATCH", "/indexes/{index_uid}"): {"primaryKey": "id"},
    ("POST", "/swap-indexes"): [{"indexes": [INDEX, INDEX2]}],
    ("POST", "/indexes/{index_uid}/documents"): [{"id": 1}],
    ("PUT", "/indexes/{index_uid}/documents"): [{"id": 1}],
    ("POST", "/indexes/{index_uid}/documents/delete-batch"): [1],
    ("POST", "/indexes/{index_uid}/documents/delete"): {"filter": "id = 1"},
    ("POST", "/multi-search"): {"queries": [{"indexUid": INDEX}]},
    ("POST", "/indexes/{index_uid}/facet-search"): {"facetName": "genre"},
    ("POST", "/indexes/{index_uid}/similar"): {"id": 1, "embedder": "default"},
    ("POST", "/logs/stderr"): {"target": "info"},
    # an invalid `mode`: were the `logsRoute` feature on, a valid body would open an endless stream
    ("POST", "/logs/stream"): {"mode": "matrix"},
    ("POST", "/dumps"): NO_BODY,
    ("POST", "/snapshots"): NO_BODY,
    ("POST", "/indexes/{index_uid}/compact"): NO_BODY,
    ("POST", "/tasks/compact"): NO_BODY,
    ("POST", "/render-template"): {"template": {"kind": "inlineDocumentTemplate", "inline": "{{ doc.a }}"}},
}
_PARAMS: Final[dict[tuple[str, str], dict[str, str]]] = {
    # a task uid that does not exist: the cancelation / deletion touches nothing
    ("POST", "/tasks/cancel"): {"uids": "999999"},
    ("DELETE", "/tasks"): {"uids": "999999"},
    ("GET", "/indexes/{index_uid}/similar"): {"id": "1"},
}
_PATH_PARAMS: Final = {
    "{index_uid}": INDEX,
    "{document_id}": DOCUMENT_ID,
    "{task_uid}": TASK_UID,
    "{batch_uid}": TASK_UID,
    "{key_or_uid}": KEY_UID,
    "{uuid}": KEY_UID,
    "{asset:path}": "dashboard.js",
    "{workspace}": f"{BASE}_chat",
    "{rule_uid}": f"{BASE}_rule",
}
# routes naming their index in the body, and how a scoped key outside it is refused
_BODY_INDEX_MESSAGES: Final = {
    ("POST", "/indexes"): INVALID_KEY_MESSAGE,
    ("POST", "/swap-indexes"): INVALID_KEY_MESSAGE,
    ("POST", "/multi-search"): f"Inside `.queries[0]`: {INVALID_KEY_MESSAGE}",
}


@dataclass(frozen=True)
class Probe:
    method: str
    path: str
    params: dict[str, str]
    body: bytes | None
    index_in_path: bool
    index_in_body: bool

    @property
    def targets_index(self) -> bool:
        return self.index_in_path or self.index_in_body


def probe(spec: RouteSpec) -> Probe:
    key = (spec.method, spec.path)
    path = spec.path
    for placeholder, param in _PATH_PARAMS.items():
        path = path.replace(placeholder, param)
    if "{" in path:
        raise AssertionError(f"no placeholder value for a path parameter of {spec.path}")
    value: Any
    if key in _BODIES:
        value = _BODIES[key]
    elif spec.method in ("POST", "PUT", "PATCH"):
        # a settings sub-route takes the bare value; `null` resets it, valid for every setting
        value = None if spec.path.startswith("/indexes/{index_uid}/settings/") else {}
    else:
        value = NO_BODY
    body = None if value is NO_BODY else json.dumps(value).encode()
    return Probe(
        spec.method, path, _PARAMS.get(key, {}), body, "{index_uid}" in spec.path, key in _BODY_INDEX_MESSAGES
    )


# -------------------------------------------------------------------------------------------------
# Credentials and expectations
# -------------------------------------------------------------------------------------------------


def other_action(action: str) -> str:
    """A concrete action that does not grant `action`, from the same family when there is one."""
    concrete = [a for a in ACTIONS if "*" not in a and a != action and action not in expand_actions([a])]
    family = action.split(".")[0]
    same = [a for a in concrete if a.split(".")[0] == family]
    return (same or concrete)[0]


def family_wildcards(action: str) -> list[str]:
    """The `x.*` wildcards granting `action` (`*` and `*.get` are cases of their own)."""
    return [a for a in ACTIONS if a.endswith(".*") and a != action and action in expand_actions([a])]


OK: Final = "ok"  # the request passes auth: no 401/403, no auth error code, no 5xx
Expectation = str | tuple[int, dict[str, str]]


@dataclass(frozen=True)
class Case:
    name: str
    # (actions, indexes) of the key to use; None for the cases that are not plain keys
    key: tuple[tuple[str, ...], tuple[str, ...]] | None
    expect: Expectation


def cases(spec: RouteSpec) -> list[Case]:
    """The credentials tried on `spec`, each with the contract's answer."""
    pr = probe(spec)
    out = [
        Case("no_header", None, (401, MISSING_AUTH) if spec.action else OK),
        Case("wrong_key", None, (403, invalid_key()) if spec.action else OK),
        Case("master_key", None, OK),
    ]
    action = spec.action
    if action is None:
        return [*out, Case("tenant_token", None, OK)]
    every = ("*",)
    second = _SECOND_ACTIONS.get((spec.method, spec.path))
    also: tuple[str, ...] = () if second is None else (second,)
    out.append(Case(f"exact[{action}]", ((action, *also), every), OK))
    other = other_action(action)
    out.append(Case(f"other_action[{other}]", ((other,), every), (403, invalid_key())))
    out.extend(Case(f"family[{fam}]", ((fam, *also), every), OK) for fam in family_wildcards(action))
    out.append(Case("wildcard[*]", (("*",), every), OK))
    reads = action in expand_actions(["*.get"])
    out.append(Case("wildcard[*.get]", (("*.get",), every), OK if reads else (403, invalid_key())))
    if pr.targets_index and action not in GLOBAL_ACTIONS:
        out.append(Case("index_pattern_match", ((action,), MATCHING), OK))
        if pr.index_in_path:
            listed = ", ".join(f'"{p}"' for p in sorted(NOT_MATCHING))
            message = f"The API key cannot acces the index `{INDEX}`, authorized indexes are [{listed}]."
        else:
            message = _BODY_INDEX_MESSAGES[(spec.method, spec.path)]
        out.append(Case("index_pattern_mismatch", ((action,), NOT_MATCHING), (403, invalid_key(message))))
    out.append(Case("expired_key", None, (403, invalid_key())))
    # tenant tokens are accepted where Meilisearch accepts them: searches and chat completions
    out.append(
        Case("tenant_token", None, OK if action in ("search", "chatCompletions") else (403, invalid_key()))
    )
    return out


MATRIX: Final = [(spec, case) for spec in ROUTES for case in cases(spec)]


@dataclass
class Credentials:
    admin: httpx.Client  # holds the master key
    anon: httpx.Client  # holds no credentials: each request brings its own
    keys: dict[tuple[tuple[str, ...], tuple[str, ...]], str]
    expired: str
    tenant_token: str

    def token(self, case: Case) -> str | None:
        if case.name == "no_header":
            return None
        if case.name == "wrong_key":
            return WRONG_KEY
        if case.name == "master_key":
            return MASTER_KEY
        if case.name == "expired_key":
            return self.expired
        if case.name == "tenant_token":
            return self.tenant_token
        assert case.key is not None
        return self.keys[case.key]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def create_key(
    admin: httpx.Client, actions: tuple[str, ...], indexes: tuple[str, ...], expires_at: str | None = None
) -> dict[str, Any]:
    r = admin.post(
        "/keys", json={"actions": list(actions), "indexes": list(indexes), "expiresAt": expires_at}
    )
    assert r.status_code == 201, r.text
    created: dict[str, Any] = r.json()
    return created


@pytest.fixture(scope="module")
def creds(secured_server: ServerProcess) -> Iterator[Credentials]:
    with httpx.Client(base_url=secured_server.url, timeout=30, headers=bearer(MASTER_KEY)) as admin:
        expiry = time.time() + EXPIRES_IN
        stamp = datetime.datetime.fromtimestamp(expiry, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        expired = create_key(admin, ("*",), ("*",), stamp)["key"]
        # it worked while it was valid: the refusals below are the expiry's doing
        assert admin.get("/version", headers=bearer(expired)).status_code == 200
        keys = {}
        for _, case in MATRIX:
            if case.key is not None and case.key not in keys:
                keys[case.key] = create_key(admin, *case.key)["key"]
        parent = create_key(admin, ("*",), ("*",))
        token = encode_token(
            {"apiKeyUid": parent["uid"], "searchRules": ["*"], "exp": int(time.time()) + 3600}, parent["key"]
        )
        time.sleep(max(0.0, expiry + 0.2 - time.time()))
        with httpx.Client(base_url=secured_server.url, timeout=30) as anon:
            yield Credentials(admin, anon, keys, expired, token)


def send(client: httpx.Client, pr: Probe, token: str | None) -> httpx.Response:
    headers = {"content-type": "application/json"} if pr.body is not None else {}
    if token is not None:
        headers.update(bearer(token))
    return client.request(pr.method, pr.path, params=pr.params, content=pr.body, headers=headers)


def _ids(item: tuple[RouteSpec, Case]) -> str:
    spec, case = item
    return f"{spec.method} {spec.path} :: {case.name}"


@pytest.mark.parametrize("item", MATRIX, ids=[_ids(i) for i in MATRIX])
def test_matrix(creds: Credentials, item: tuple[RouteSpec, Case]) -> None:
    spec, case = item
    pr = probe(spec)
    r = send(creds.anon, pr, creds.token(case))
    if case.expect == OK:
        assert r.status_code < 500, r.text
        assert r.status_code not in (401, 403), r.text
        if r.headers.get("content-type", "").startswith("application/json") and r.content:
            body = r.json()
            assert not (isinstance(body, dict) and body.get("code") in AUTH_CODES), r.text
    else:
        assert isinstance(case.expect, tuple)
        status, error = case.expect
        assert (r.status_code, r.json()) == (status, error)
        assert r.headers["content-type"] == "application/json"


# -------------------------------------------------------------------------------------------------
# The table itself, and what status codes cannot show
# -------------------------------------------------------------------------------------------------


def test_route_actions_follow_the_contract() -> None:
    assert ROUTES
    for spec in ROUTES:
        assert spec.action is None or spec.action in ACTIONS, spec
        assert spec.action == contract_action(spec.method, spec.path), (spec.method, spec.path)
    public = {(s.method, s.path) for s in ROUTES if s.action is None}
    assert public == {("GET", "/"), ("GET", "/health"), ("GET", "/dashboard/{asset:path}")}


def test_every_route_is_walked_with_every_credential() -> None:
    walked: dict[tuple[str, str], set[str]] = {}
    for spec, case in MATRIX:
        walked.setdefault((spec.method, spec.path), set()).add(case.name.split("[")[0])
    assert set(walked) == {(s.method, s.path) for s in ROUTES}
    for spec in ROUTES:
        names = walked[(spec.method, spec.path)]
        assert {"no_header", "wrong_key", "master_key", "tenant_token"} <= names
        if spec.action is not None:
            assert {"exact", "other_action", "wildcard", "expired_key"} <= names
            if probe(spec).targets_index:
                assert {"index_pattern_match", "index_pattern_mismatch"} <= names


def _task_status(admin: httpx.Client, response: httpx.Response) -> str:
    assert response.status_code == 202, response.text
    task = wait_task(admin, response.json()["taskUid"])
    return f"{task['status']}:{(task['error'] or {}).get('code')}"


@pytest.mark.parametrize(
    ("write", "suffix"),
    [
        (lambda c, uid: c.post(f"/indexes/{uid}/documents", json=[{"id": 1}]), "docs"),
        (
            lambda c, uid: c.patch(f"/indexes/{uid}/settings", json={"searchableAttributes": ["title"]}),
            "settings",
        ),
    ],
    ids=["documents", "settings"],
)
def test_writes_create_an_index_only_for_keys_that_may_create_indexes(
    creds: Credentials, write: Callable[[httpx.Client, str], httpx.Response], suffix: str
) -> None:
    # docs/api-contract.md §1.4: a write to a missing index creates it only when the caller holds `indexes.create`
    actions = ("documents.add", "settings.update")
    without = create_key(creds.admin, actions, (f"{BASE}cr_*",))["key"]
    with_create = create_key(creds.admin, (*actions, "indexes.create"), (f"{BASE}cr_*",))["key"]
    base_url = str(creds.admin.base_url)
    with httpx.Client(base_url=base_url, headers=bearer(without), timeout=30) as client:
        status = _task_status(creds.admin, write(client, f"{BASE}cr_no_{suffix}"))
    assert status == "failed:index_not_found"
    assert creds.admin.get(f"/indexes/{BASE}cr_no_{suffix}").status_code == 404
    with httpx.Client(base_url=base_url, headers=bearer(with_create), timeout=30) as client:
        status = _task_status(creds.admin, write(client, f"{BASE}cr_yes_{suffix}"))
    assert status == "succeeded:None"


def test_swap_needs_both_indexes_in_the_key_scope(creds: Credentials) -> None:
    key = create_key(creds.admin, ("indexes.swap",), (f"{BASE}sw_*",))["key"]
    for pair in ([f"{BASE}sw_a", "outside"], ["outside", f"{BASE}sw_a"]):
        r = httpx.post(
            str(creds.admin.base_url) + "/swap-indexes", json=[{"indexes": pair}], headers=bearer(key)
        )
        assert (r.status_code, r.json()) == (403, invalid_key()), pair
    r = httpx.post(
        str(creds.admin.base_url) + "/swap-indexes",
        json=[{"indexes": [f"{BASE}sw_a", f"{BASE}sw_b"]}],
        headers=bearer(key),
    )
    assert r.status_code == 202, r.text
