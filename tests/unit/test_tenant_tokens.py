"""Tenant tokens: JWT encoding/decoding, expiry, signatures, search-rule resolution and the guard.

Messages are those of Meilisearch's `tests/auth/errors.rs::invalid_tenant_token` snapshots.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import meilisearch
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.auth import AuthController, KeyStore, SearchRules, encode_token, fuse_filters
from hanzo_engine.auth.keys import Key, parse_create_key
from hanzo_engine.auth.tenant import (
    IndexSearchRules,
    TokenError,
    b64url_encode,
    decode_token,
    parse_claims,
    split_token,
)
from hanzo_engine.server.auth import auth_filter, guard
from hanzo_engine.server.errors import safe

MASTER = "MASTER_KEY"
NIL = str(uuid.UUID(int=0))


@pytest.fixture
def ctl(tmp_path: Path) -> Iterator[AuthController]:
    store = KeyStore(tmp_path / "auth")
    yield AuthController(store, MASTER)
    store.close()


def add(ctl: AuthController, indexes: list[str], actions: list[str], **extra: Any) -> tuple[Key, str]:
    key = ctl.create_key(
        parse_create_key({"indexes": indexes, "actions": actions, "expiresAt": None, **extra})
    )
    return key, ctl.key_value(key.uid)


def error_of(ctl: AuthController, token: str, action: str = "search", index: str | None = "sales") -> str:
    with pytest.raises(MeiliError) as info:
        ctl.authenticate(token, action, index)
    assert info.value.code == "invalid_api_key" and info.value.status == 403
    return info.value.message


def raw_token(header: dict[str, Any] | str, claims: dict[str, Any] | str, secret: str) -> str:
    """A token from literal JSON parts (compact, as serde_json writes), signed with HS256."""

    def part(value: dict[str, Any] | str) -> str:
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        return b64url_encode(text.encode())

    message = f"{part(header)}.{part(claims)}"
    signature = hmac.new(secret.encode(), message.encode(), hashlib.sha256).digest()
    return f"{message}.{b64url_encode(signature)}"


# -- encoding and decoding -------------------------------------------------------------------------


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
def test_roundtrip(alg: str) -> None:
    uid = uuid.uuid4()
    token = encode_token(
        {"apiKeyUid": str(uid), "searchRules": ["*"], "exp": None, "other": 1}, "secret", alg
    )
    claims = decode_token(token, lambda u: "secret")
    assert claims is not None and claims.api_key_uid == uid and claims.exp is None
    assert claims.search_rules.all_indexes_authorized()


def test_not_a_jwt() -> None:
    for token in ("d9e776b8412f1db6974c9a5556b961c3559440b6588216f4ea5d9ed49f7c8f3c", "a.b", ""):
        assert split_token(token) is None
        assert decode_token(token, lambda u: "x") is None


def test_claims_errors() -> None:
    def reason(claims: str) -> str:
        with pytest.raises(TokenError) as info:
            parse_claims(b64url_encode(claims.encode()))
        return str(info.value)

    assert reason('{"tamo":"kefir"}') == "JSON error: missing field `searchRules` at line 1 column 16"
    assert reason('{"searchRules":"kefir"}') == (
        "JSON error: data did not match any variant of untagged enum SearchRules at line 1 column 23"
    )
    assert reason('{"searchRules":["a"]}') == "JSON error: missing field `apiKeyUid` at line 1 column 21"
    assert reason('{"searchRules":["a"],"searchRules":["b"]}').startswith(
        "JSON error: duplicate field `searchRules`"
    )
    assert reason('{"searchRules":["a"],"apiKeyUid":"doggo"}') == (
        "JSON error: UUID parsing failed: invalid character: found `o` at 1 at line 1 column 41"
    )
    assert reason(f'{{"searchRules":["a"],"apiKeyUid":"{NIL}","exp":"soon"}}').startswith(
        'JSON error: invalid type: string "soon", expected i64'
    )
    assert reason(f'{{"searchRules":["a"],"apiKeyUid":"{NIL}","aud":"x"}}') == "InvalidAudience"
    assert reason("[1]").startswith("JSON error: invalid type: sequence, expected struct Claims")


def test_base64_errors() -> None:
    with pytest.raises(TokenError, match=r"^Base64 error: Invalid symbol 46, offset 1\.$"):
        parse_claims("a.b")
    with pytest.raises(TokenError, match=r"^Base64 error: Invalid padding$"):
        parse_claims(b64url_encode(b'{"a":1}') + "==")


# -- the controller --------------------------------------------------------------------------------


def test_invalid_tenant_tokens(ctl: AuthController) -> None:
    # as Meilisearch's `invalid_tenant_token` test, step by step
    not_search = encode_token({"tamo": "kefir"}, "tamo")
    assert error_of(ctl, not_search, "documents.get", "dog") == "The provided API key is invalid."
    assert error_of(ctl, encode_token({"tamo": "kefir"}, "tamo"), index="dog") == (
        "Could not decode tenant token, JSON error: missing field `searchRules` at line 1 column 16."
    )
    assert error_of(ctl, encode_token({"searchRules": "kefir"}, "tamo"), index="dog") == (
        "Could not decode tenant token, JSON error: data did not match any variant of untagged enum SearchRules "
        "at line 1 column 23."
    )
    token = encode_token({"searchRules": ["kefir"], "apiKeyUid": NIL}, "tamo")
    assert error_of(ctl, token, index="dog") == "Could not decode tenant token, InvalidSignature."

    _, value = add(ctl, ["dog"], ["search"], uid=NIL)
    assert value == "aeb94973e0b6e912d94165430bbe87dee91a7c4f891ce19050c3910ec96977e9"
    token = encode_token({"searchRules": ["doggo", "catto"], "apiKeyUid": NIL}, value)
    assert error_of(ctl, token, index="dog") == (
        'The provided tenant token cannot acces the index `dog`, allowed indexes are ["catto", "doggo"].'
    )
    assert error_of(ctl, token, index="doggo") == (
        "The API key used to generate this tenant token cannot acces the index `doggo`."
    )


def test_signature_checks(ctl: AuthController) -> None:
    key, value = add(ctl, ["*"], ["*"])
    good = encode_token({"searchRules": ["products"], "apiKeyUid": str(key.uid)}, value)
    assert ctl.authorize(good, "search", "products")
    # a payload swapped in from another valid token breaks the signature
    other = encode_token({"searchRules": ["*"], "apiKeyUid": str(key.uid)}, value)
    header, _, signature = good.split(".")
    altered = f"{header}.{other.split('.')[1]}.{signature}"
    assert error_of(ctl, altered, index="products") == "Could not decode tenant token, InvalidSignature."
    # signed with the master key, or with the uid instead of the key value
    for secret in (MASTER, str(key.uid)):
        forged = encode_token({"searchRules": ["*"], "apiKeyUid": str(key.uid)}, secret)
        assert error_of(ctl, forged, index="products") == "Could not decode tenant token, InvalidSignature."
    rs256 = raw_token(
        {"typ": "JWT", "alg": "RS256"}, {"searchRules": ["*"], "apiKeyUid": str(key.uid)}, value
    )
    assert error_of(ctl, rs256, index="products") == "Could not decode tenant token, InvalidAlgorithm."
    none = raw_token({"alg": "none"}, {"searchRules": ["*"], "apiKeyUid": str(key.uid)}, value)
    assert error_of(ctl, none, index="products").startswith(
        "Could not decode tenant token, JSON error: unknown variant `none`, expected one of `HS256`, `HS384`"
    )
    no_alg = raw_token({"typ": "JWT"}, {"searchRules": ["*"], "apiKeyUid": str(key.uid)}, value)
    assert error_of(ctl, no_alg, index="products") == (
        "Could not decode tenant token, JSON error: missing field `alg` at line 1 column 13."
    )


def test_expiry(ctl: AuthController) -> None:
    key, value = add(ctl, ["*"], ["search"])
    past = int(time.time()) - 3600
    token = encode_token({"searchRules": ["*"], "apiKeyUid": str(key.uid), "exp": past}, value)
    message = error_of(ctl, token)
    prefix = f"Tenant token expired. Was valid up to `{past}` and we're now `"
    assert message.startswith(prefix) and message.endswith("`.")
    assert int(message[len(prefix) : -2]) >= past + 3600
    future = encode_token(
        {"searchRules": ["*"], "apiKeyUid": str(key.uid), "exp": int(time.time()) + 60}, value
    )
    assert ctl.authorize(future, "search", "sales")


def test_parent_key_conditions(ctl: AuthController) -> None:
    def token_for(key: Key, value: str, rules: Any = ("*",)) -> str:
        return encode_token({"searchRules": list(rules), "apiKeyUid": str(key.uid)}, value)

    # accepted parent keys (Meilisearch's ACCEPTED_KEYS) on index `sales`
    for indexes, actions in (
        (["*"], ["*"]),
        (["*"], ["search"]),
        (["sales"], ["*"]),
        (["sales"], ["search"]),
        (["sal*", "prod*"], ["search"]),
    ):
        key, value = add(ctl, indexes, actions)
        assert ctl.authorize(token_for(key, value), "search", "sales"), (indexes, actions)
    # refused ones: no search action, or not covering the index
    for indexes, actions in (
        (["*"], ["documents.*", "settings.*"]),
        (["products"], ["*"]),
        (["prod*", "p*"], ["*"]),
        (["products"], ["search"]),
    ):
        key, value = add(ctl, indexes, actions)
        assert not ctl.authorize(token_for(key, value), "search", "sales"), (indexes, actions)
    # a deleted parent key
    key, value = add(ctl, ["*"], ["*"])
    token = token_for(key, value)
    ctl.delete_key(key.uid)
    assert error_of(ctl, token) == "The provided API key is invalid."
    # an expired parent key
    key, value = add(
        ctl, ["*"], ["*"], expiresAt=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2))
    )
    token = token_for(key, value)
    assert ctl.authorize(token, "search", "sales")
    time.sleep(2.1)
    assert error_of(ctl, token) == "The provided API key is invalid."


def test_tenant_tokens_only_on_search_routes(ctl: AuthController) -> None:
    key, value = add(ctl, ["*"], ["*"])
    token = encode_token({"searchRules": ["*"], "apiKeyUid": str(key.uid)}, value)
    assert ctl.authorize(token, "search", "sales")
    for action in ("documents.get", "settings.update", "indexes.get", "tasks.get", "keys.get"):
        assert error_of(ctl, token, action) == "The provided API key is invalid."


# -- search rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ({"*": {"filter": "color = green"}, "sales": {"filter": "color = blue"}}, "color = blue"),
        ({"*": {}, "sales": {"filter": ["color = blue"]}}, ["color = blue"]),
        ({"*": {"filter": "a = 1"}, "sal*": {"filter": "b = 2"}}, "b = 2"),
        ({"s*": {"filter": "a = 1"}, "sal*": {"filter": "b = 2"}}, "b = 2"),
        ({"sal*": {"filter": "a = 1"}, "sales": None}, None),
        ({"*": None}, None),
        ({"*": {"filter": None, "other": 3}}, None),
        (["*"], None),
        (["sa*", "x"], None),
    ],
)
def test_most_specific_rule_wins(rules: Any, expected: Any) -> None:
    key_uid = str(uuid.uuid4())
    claims = parse_claims(b64url_encode(json.dumps({"searchRules": rules, "apiKeyUid": key_uid}).encode()))
    resolved = claims.search_rules.index_rules("sales")
    assert (resolved.filter if resolved is not None else None) == expected
    assert claims.search_rules.is_index_authorized("sales")


def test_rules_coverage() -> None:
    rules = SearchRules.from_map({"books": IndexSearchRules("a = 1"), "movies_*": None})
    assert rules.is_index_authorized("movies_2024") and not rules.is_index_authorized("movie")
    assert rules.index_rules("movie") is None
    assert rules.allowed() == ["books", "movies_*"] and not rules.all_indexes_authorized()


@pytest.mark.parametrize(
    ("user", "rule", "fused"),
    [
        (None, "a = 1", "a = 1"),
        ("b = 2", None, "b = 2"),
        (None, None, None),
        ("b = 2", "a = 1", ["b = 2", "a = 1"]),
        (["b = 2", ["c = 3", "d = 4"]], "a = 1", ["b = 2", ["c = 3", "d = 4"], "a = 1"]),
        ("b = 2", ["a = 1", "e = 5"], ["b = 2", "a = 1", "e = 5"]),
    ],
)
def test_fuse_filters(user: Any, rule: Any, fused: Any) -> None:
    assert fuse_filters(user, rule) == fused


# -- the SDK's tokens and the guard ----------------------------------------------------------------


def guarded_app(ctl: AuthController, action: str) -> Starlette:
    async def endpoint(request: Request) -> Response:
        index = request.path_params["index_uid"]
        guard(request, action, index)
        flt = auth_filter(request)
        return JSONResponse({"filter": flt.fuse_filter(index, "user = 1"), "tenant": flt.is_tenant_token})

    app = Starlette(routes=[Route("/indexes/{index_uid}/search", safe(endpoint), methods=["POST"])])
    app.state.master_key = MASTER
    app.state.key_resolver = ctl
    return app


def call(app: Starlette, index: str, token: str) -> httpx.Response:
    """POST /indexes/{index}/search in-process (the ASGI app, no server)."""

    async def run() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
            return await http.post(f"/indexes/{index}/search", headers={"Authorization": f"Bearer {token}"})

    return asyncio.run(run())


def test_sdk_tenant_token_through_the_guard(ctl: AuthController) -> None:
    key, value = add(ctl, ["*"], ["search"])
    client = meilisearch.Client("http://127.0.0.1:1", value)
    expires = datetime.datetime.now(tz=datetime.UTC) + datetime.timedelta(hours=1)
    token = client.generate_tenant_token(
        str(key.uid), {"sales": {"filter": "tenant = 7"}, "*": None}, expires_at=expires
    )
    app = guarded_app(ctl, "search")
    ok = call(app, "sales", token)
    assert ok.status_code == 200
    assert ok.json() == {"filter": ["user = 1", "tenant = 7"], "tenant": True}
    assert call(app, "other", token).json() == {"filter": "user = 1", "tenant": True}
    assert call(app, "sales", value).json() == {"filter": "user = 1", "tenant": False}
    assert call(app, "sales", MASTER).json() == {"filter": "user = 1", "tenant": False}
    bad = call(app, "sales", token[:-1] + ("B" if token.endswith("A") else "A"))
    assert bad.status_code == 403
    assert bad.json()["message"] == "Could not decode tenant token, InvalidSignature."
    narrow = client.generate_tenant_token(str(key.uid), ["books"], api_key=value)
    refused = call(app, "sales", narrow)
    assert refused.status_code == 403
    assert refused.json() == {
        "message": 'The provided tenant token cannot acces the index `sales`, allowed indexes are ["books"].',
        "code": "invalid_api_key",
        "type": "auth",
        "link": "https://docs.meilisearch.com/errors#invalid_api_key",
    }
    r = call(guarded_app(ctl, "documents.get"), "sales", token)
    assert r.status_code == 403
    assert r.json()["message"] == "The provided API key is invalid."
