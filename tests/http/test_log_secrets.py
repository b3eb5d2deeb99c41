"""Logs without secrets (issue 5, hardening): a server with a master key, at its most verbose levels,
is sent requests carrying the master key, API keys and tenant tokens (valid, wrong, expired, tampered,
on routes that accept them and on routes that refuse them, and in the path of `/keys/{key}`); its
whole log output must contain none of those values.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from hanzo_engine.auth import encode_token
from tests.conftest import MASTER_KEY, ServerProcess, wait_task


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def exercise(url: str) -> set[str]:
    """Requests carrying every kind of secret; the set of secret values used."""
    secrets = {MASTER_KEY}
    with httpx.Client(base_url=url, timeout=30, headers=bearer(MASTER_KEY)) as admin:
        r = admin.post("/indexes/logs/documents", json=[{"id": 1, "tenant": "a"}, {"id": 2, "tenant": "b"}])
        wait_task(admin, r.json()["taskUid"])
        r = admin.patch("/indexes/logs/settings", json={"filterableAttributes": ["tenant"]})
        wait_task(admin, r.json()["taskUid"])
        keys: list[dict[str, Any]] = admin.get("/keys").json()["results"]  # the default keys
        created = admin.post(
            "/keys",
            json={
                "actions": ["search", "documents.get"],
                "indexes": ["logs"],
                "expiresAt": None,
                "name": "log test",
            },
        ).json()
        keys.append(created)
        secrets.update(k["key"] for k in keys)
        # a key in the path, as `/keys/{key_or_uid}` allows
        assert admin.get(f"/keys/{created['key']}").status_code == 200
        assert admin.patch(f"/keys/{created['key']}", json={"description": "d"}).status_code == 200
        tokens = [
            encode_token(
                {"apiKeyUid": created["uid"], "searchRules": {"logs": {"filter": "tenant = a"}}},
                created["key"],
            ),
            encode_token(
                {"apiKeyUid": created["uid"], "searchRules": ["*"], "exp": int(time.time()) - 5},
                created["key"],
            ),  # expired
            encode_token({"apiKeyUid": created["uid"], "searchRules": ["*"]}, MASTER_KEY),  # bad signature
            encode_token(
                {"apiKeyUid": created["uid"], "searchRules": {"logs": {"filter": "nope = ("}}},
                created["key"],
                "HS512",
            ),  # a filter the index refuses
        ]
        secrets.update(tokens)
        wrong = [MASTER_KEY + "x", created["key"][:-1] + "0", "Bearer-less-" + created["key"]]
        secrets.update(wrong)
        credentials = [MASTER_KEY, *(k["key"] for k in keys), *tokens, *wrong]
        with httpx.Client(base_url=url, timeout=30) as anon:
            for token in credentials:
                headers = bearer(token)
                anon.post("/indexes/logs/search", json={"q": ""}, headers=headers)
                anon.get("/indexes/logs/search", params={"q": "a"}, headers=headers)
                anon.post("/multi-search", json={"queries": [{"indexUid": "logs"}]}, headers=headers)
                anon.get("/indexes/logs/documents", headers=headers)
                anon.get("/tasks", headers=headers)
                anon.get("/keys", headers=headers)
                anon.get(f"/keys/{created['key']}", headers=headers)
            anon.get("/tasks", headers={"Authorization": f"Basic {MASTER_KEY}"})
            anon.get("/tasks", headers={"Authorization": MASTER_KEY})
        assert admin.delete(f"/keys/{created['key']}").status_code == 204
    return secrets


@pytest.mark.parametrize(
    "level",
    [
        "INFO",
        "DEBUG",
        "TRACE",
    ],
)
@pytest.mark.parametrize("log_format", ["human", "json"])
def test_logs_contain_no_key_nor_token(tmp_path: Path, level: str, log_format: str) -> None:
    srv = ServerProcess(
        tmp_path / "data.ms",
        extra_args=["--master-key", MASTER_KEY, "--log-level", level, "--experimental-logs-mode", log_format],
    ).start()
    try:
        secrets = exercise(srv.url)
    finally:
        srv.stop()
    log = srv.output()
    assert "/indexes/logs" in log or level == "INFO"  # the requests were logged at the verbose levels
    leaked = sorted(s for s in secrets if s.lower() in log.lower())
    assert leaked == [], [f"{s[:12]}...: {log[log.lower().index(s.lower()) - 200 :][:400]}" for s in leaked]
