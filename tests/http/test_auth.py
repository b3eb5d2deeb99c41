"""Master-key authentication (Meilisearch extractors/authentication and tests/auth/authorization.rs).

With a master key every route but `/health` (and `/`) needs `Authorization: Bearer <master key>`:
no header or another scheme is 401 `missing_authorization_header`, a wrong token 403
`invalid_api_key`. Without a master key everything is open except `/keys` (401 `missing_master_key`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import MASTER_KEY, ServerProcess, free_port, wait_task

MISSING_AUTH = {
    "message": "The Authorization header is missing. It must use the bearer authorization method.",
    "code": "missing_authorization_header",
    "type": "auth",
    "link": "https://docs.meilisearch.com/errors#missing_authorization_header",
}
INVALID_KEY = {
    "message": "The provided API key is invalid.",
    "code": "invalid_api_key",
    "type": "auth",
    "link": "https://docs.meilisearch.com/errors#invalid_api_key",
}
MISSING_MASTER_KEY = {
    "message": "Meilisearch is running without a master key. To access this API endpoint, you must have set a "
    "master key at launch.",
    "code": "missing_master_key",
    "type": "auth",
    "link": "https://docs.meilisearch.com/errors#missing_master_key",
}
# one guarded route per family: (method, path)
GUARDED = [
    ("GET", "/tasks"),
    ("GET", "/tasks/0"),
    ("POST", "/tasks/cancel?uids=0"),
    ("DELETE", "/tasks?uids=0"),
    ("GET", "/batches"),
    ("GET", "/batches/0"),
    ("GET", "/stats"),
    ("GET", "/version"),
    ("GET", "/indexes"),
    ("GET", "/indexes/auth_probe/stats"),
    ("POST", "/indexes/auth_probe/documents"),
]


@pytest.fixture
def secured(secured_server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=secured_server.url, timeout=30) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(("method", "path"), GUARDED)
def test_no_header_is_401(secured: httpx.Client, method: str, path: str) -> None:
    r = secured.request(method, path)
    assert r.status_code == 401
    assert r.headers["content-type"] == "application/json"
    assert r.json() == MISSING_AUTH


@pytest.mark.parametrize(("method", "path"), GUARDED)
def test_wrong_key_is_403(secured: httpx.Client, method: str, path: str) -> None:
    r = secured.request(method, path, headers=bearer("not-the-master-key"))
    assert r.status_code == 403
    assert r.json() == INVALID_KEY


@pytest.mark.parametrize(
    "header", [f"Basic {MASTER_KEY}", f"bearer {MASTER_KEY}", MASTER_KEY, f"Token {MASTER_KEY}"]
)
def test_other_schemes_are_401(secured: httpx.Client, header: str) -> None:
    r = secured.get("/tasks", headers={"Authorization": header})
    assert r.status_code == 401
    assert r.json() == MISSING_AUTH


@pytest.mark.parametrize("header", ["Bearer", f"Bearer  {MASTER_KEY}", f"Bearer {MASTER_KEY}x", "Bearer a b"])
def test_malformed_bearer_tokens_are_403(secured: httpx.Client, header: str) -> None:
    # the value is split once on a space and the token kept as is: `Bearer` alone has no token,
    # and a second space belongs to the token
    r = secured.get("/tasks", headers={"Authorization": header})
    assert r.status_code == 403
    assert r.json() == INVALID_KEY


def test_master_key_passes_everywhere(secured: httpx.Client, index_uid: str) -> None:
    auth = bearer(MASTER_KEY)
    r = secured.post(f"/indexes/{index_uid}/documents", json=[{"id": 1}], headers=auth)
    assert r.status_code == 202
    task = r.json()["taskUid"]
    secured.headers.update(auth)
    assert wait_task(secured, task)["status"] == "succeeded"
    for path in (
        "/tasks",
        f"/tasks/{task}",
        "/batches",
        "/stats",
        "/version",
        "/indexes",
        f"/indexes/{index_uid}/stats",
    ):
        assert secured.get(path).status_code == 200, path
    assert secured.post(f"/tasks/cancel?uids={task}").status_code == 200
    assert secured.delete(f"/tasks?uids={task}").status_code == 200


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}])
def test_health_and_root_need_no_key(secured: httpx.Client, headers: dict[str, str]) -> None:
    r = secured.get("/health", headers=headers)
    assert r.status_code == 200
    assert r.json() == {"status": "available"}
    assert secured.get("/", headers=headers).status_code == 200


def test_unknown_route_is_404_before_auth(secured: httpx.Client) -> None:
    r = secured.get("/nope")
    assert r.status_code == 404
    assert r.content == b""


# -- without a master key ----------------------------------------------------------------------------


def test_without_master_key_any_bearer_token_passes(http: httpx.Client) -> None:
    for headers in ({}, bearer("whatever"), bearer(MASTER_KEY)):
        assert http.get("/tasks", headers=headers).status_code == 200


def test_without_master_key_the_header_must_still_be_bearer(http: httpx.Client) -> None:
    r = http.get("/tasks", headers={"Authorization": "Basic abc"})
    assert r.status_code == 401
    assert r.json() == MISSING_AUTH
    r = http.get("/tasks", headers={"Authorization": "Bearer"})
    assert r.status_code == 403
    assert r.json() == INVALID_KEY


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer whatever"}])
def test_keys_need_a_master_key(http: httpx.Client, headers: dict[str, str]) -> None:
    r = http.get("/keys", headers=headers)
    assert r.status_code == 401
    assert r.json() == MISSING_MASTER_KEY


# -- production environment ------------------------------------------------------------------------


def run_production(tmp_path: Path, *key_args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "hanzo_engine",
        "--db-path",
        str(tmp_path / "data.ms"),
        "--http-addr",
        f"127.0.0.1:{free_port()}",
        "--no-analytics",
        "--env",
        "production",
        *key_args,
    ]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=30, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}
    )


def test_production_refuses_to_start_without_master_key(tmp_path: Path) -> None:
    done = run_production(tmp_path)
    assert done.returncode != 0
    assert (
        "You must provide a master key to secure your instance in a production environment. It can be "
        "specified via the MEILI_MASTER_KEY environment variable or the --master-key launch option."
    ) in done.stderr + done.stdout


def test_production_refuses_a_master_key_under_16_bytes(tmp_path: Path) -> None:
    done = run_production(tmp_path, "--master-key", "123456789012345")
    assert done.returncode != 0
    assert (
        "The master key must be at least 16 bytes in a production environment. The provided key is only "
        "15 bytes."
    ) in done.stderr + done.stdout


def test_production_starts_with_a_16_byte_master_key(tmp_path: Path) -> None:
    key = "é" * 8  # 8 characters but 16 UTF-8 bytes: the minimum counts bytes
    srv = ServerProcess(tmp_path / "data.ms", extra_args=["--env", "production", "--master-key", key]).start()
    try:
        assert httpx.get(f"{srv.url}/tasks").status_code == 401
        # a header value that is not visible ASCII reads as empty: no `Bearer` scheme, so 401
        r = httpx.get(f"{srv.url}/tasks", headers={"Authorization": f"Bearer {key}".encode()})
        assert r.status_code == 401
        assert r.json() == MISSING_AUTH
    finally:
        srv.stop()
