"""Chat workspaces and the index `chat` setting (docs/api-contract.md §13, Meilisearch's `routes/chats/settings.rs`,
`tests/settings/chat.rs`, meilisearch-js `chat-settings` / `chat-workspaces` tests).

Covered: the `chatCompletions` gate on every route and on the index setting, workspace settings (defaults,
merge, resets, validation, masking, the errors of each field), listing/getting/deleting workspaces,
durability across a restart and through a dump, the index setting's defaults, merge, validation and task
flow, and API keys holding the chat actions.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from hanzo_engine.apitypes.chat_settings import DEFAULT_PROMPTS
from tests.conftest import MASTER_KEY, ServerProcess, wait_task

DEFAULT_TEMPLATE: Final = (
    "{% for field in fields %}{% if field.is_searchable and field.value != nil %}"
    "{{ field.name }}: {{ field.value }}\n{% endif %}{% endfor %}"
)
DEFAULT_CHAT: Final = {
    "description": "",
    "documentTemplate": DEFAULT_TEMPLATE,
    "documentTemplateMaxBytes": 400,
    "searchParameters": {},
}
DEFAULT_WORKSPACE: Final = {
    "source": "openAi",
    "orgId": None,
    "projectId": None,
    "apiVersion": None,
    "deploymentId": None,
    "baseUrl": None,
    "apiKey": None,
    "prompts": dict(DEFAULT_PROMPTS),
}
CHAT_LINK: Final = "https://github.com/orgs/meilisearch/discussions/835"


def error(message: str, code: str, type_: str = "invalid_request") -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": type_,
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


def not_enabled(action: str) -> dict[str, str]:
    return error(
        f"{action} requires enabling the `chat completions` experimental feature. See {CHAT_LINK}",
        "feature_not_enabled",
    )


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("chat_settings") / "data.ms", extra_args=["--master-key", MASTER_KEY]
    ).start()
    yield srv
    srv.stop()


@pytest.fixture
def api(engine: ServerProcess) -> Iterator[httpx.Client]:
    """The master key's client, `chatCompletions` on (a test that turns it off turns it back on)."""
    with httpx.Client(
        base_url=engine.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}
    ) as c:
        set_feature(c, True)
        yield c


def set_feature(api: httpx.Client, on: bool) -> None:
    assert api.patch("/experimental-features", json={"chatCompletions": on}).json()["chatCompletions"] is on


def test_every_route_is_gated(api: httpx.Client) -> None:
    set_feature(api, False)
    try:
        cases = [
            (api.get("/chats"), "listing the chats"),
            (api.get("/chats/ws"), "displaying a chat"),
            (api.delete("/chats/ws"), "deleting a chat"),
            (api.get("/chats/ws/settings"), "using the /chats/settings route"),
            (api.patch("/chats/ws/settings", json={}), "using the /chats/settings route"),
            (api.delete("/chats/ws/settings"), "using the /chats/settings route"),
            (
                api.post("/chats/ws/chat/completions", json={"model": "m", "messages": [], "stream": True}),
                "using the /chats chat completions route",
            ),
            (
                api.patch("/indexes/gated/settings", json={"chat": {"description": "x"}}),
                "setting `chat` in the index settings",
            ),
            (
                api.patch("/indexes/gated/settings/chat", json={"description": "x"}),
                "setting `chat` in the index settings",
            ),
        ]
        for r, action in cases:
            assert (r.status_code, r.json()) == (400, not_enabled(action)), r.request.url
        # not shown while off, but the sub-route answers and a reset is allowed
        task = api.post("/indexes", json={"uid": "gated"}).json()
        wait_task(api, task["taskUid"])
        assert "chat" not in api.get("/indexes/gated/settings").json()
        assert api.get("/indexes/gated/settings/chat").json() == DEFAULT_CHAT
        assert api.patch("/indexes/gated/settings", json={"chat": None}).status_code == 202
    finally:
        set_feature(api, True)
    assert api.get("/indexes/gated/settings").json()["chat"] == DEFAULT_CHAT


def test_workspace_lifecycle(api: httpx.Client) -> None:
    set_feature(api, True)
    assert api.get("/chats/life/settings").json() == error("Chat `life` not found", "chat_not_found")
    assert api.get("/chats/life").json() == error("chat life not found", "chat_not_found")
    r = api.patch("/chats/life/settings", json={})
    assert (r.status_code, r.json()) == (200, DEFAULT_WORKSPACE)  # `{}` creates the workspace
    assert api.get("/chats/life").json() == {"uid": "life"}
    assert {"uid": "life"} in api.get("/chats").json()["results"]

    r = api.patch(
        "/chats/life/settings",
        json={
            "source": "mistral",
            "apiKey": "sk-test-placeholder-api-key",
            "orgId": "org",
            "prompts": {"system": "Be brief."},
        },
    )
    body = r.json()
    assert body["source"] == "mistral" and body["orgId"] == "org" and body["apiKey"] == "sk-XXXXX..."
    assert body["prompts"] == {**DEFAULT_PROMPTS, "system": "Be brief."}
    assert list(body) == list(DEFAULT_WORKSPACE) and list(body["prompts"]) == list(DEFAULT_PROMPTS)
    assert api.get("/chats/life/settings").json() == body

    # absent keeps, null resets (prompts per key; `prompts: null` all of them)
    body = api.patch("/chats/life/settings", json={"orgId": None, "prompts": {"searchQParam": "q!"}}).json()
    assert body["orgId"] is None and body["apiKey"] == "sk-XXXXX..." and body["source"] == "mistral"
    assert body["prompts"] == {**DEFAULT_PROMPTS, "system": "Be brief.", "searchQParam": "q!"}
    body = api.patch("/chats/life/settings", json={"prompts": {"system": None}}).json()
    assert body["prompts"] == {**DEFAULT_PROMPTS, "searchQParam": "q!"}
    assert api.patch("/chats/life/settings", json={"prompts": None}).json()["prompts"] == DEFAULT_PROMPTS

    # DELETE settings: the defaults, workspace kept
    r = api.delete("/chats/life/settings")
    assert (r.status_code, r.json()) == (200, DEFAULT_WORKSPACE)
    assert api.get("/chats/life").status_code == 200
    r = api.delete("/chats/life")
    assert (r.status_code, r.content) == (204, b"")
    assert api.delete("/chats/life").json() == error("chat life not found", "chat_not_found")
    assert api.delete("/chats/life/settings").json() == error("Chat `life` not found", "chat_not_found")


@pytest.mark.parametrize(
    ("key", "size", "masked"),
    [
        ("short", 5, "XXX..."),
        ("medium", 15, "abXXXX..."),
        ("long", 25, "abcXXXXX..."),
        ("longer", 35, "abcdeXXXXXX..."),
    ],
)
def test_api_key_masking(api: httpx.Client, key: str, size: int, masked: str) -> None:
    secret = ("abcdefghij" * 4)[:size]
    assert api.patch(f"/chats/mask-{key}/settings", json={"apiKey": secret}).json()["apiKey"] == masked
    assert api.get(f"/chats/mask-{key}/settings").json()["apiKey"] == masked


def test_workspace_validation(api: httpx.Client) -> None:
    def patch(body: Any) -> tuple[int, Any]:
        r = api.patch("/chats/valid/settings", json=body)
        return r.status_code, r.json()

    assert patch({"source": "claude"}) == (
        400,
        error(
            "Unknown value `claude` at `.source`: expected one of `openAi`, `mistral`, `azureOpenAi`, `vLlm`",
            "bad_request",
        ),
    )
    for field, code in [
        ("orgId", "invalid_chat_completion_org_id"),
        ("projectId", "invalid_chat_completion_project_id"),
        ("apiVersion", "invalid_chat_completion_api_version"),
        ("deploymentId", "invalid_chat_completion_deployment_id"),
        ("baseUrl", "invalid_chat_completion_base_api"),
        ("apiKey", "invalid_chat_completion_api_key"),
    ]:
        status, body = patch({field: 42})
        assert status == 400 and body["code"] == code, field
        assert (
            body["message"]
            == f"Invalid value type at `.{field}`: expected a string, but found a positive integer: `42`"
        )
    status, body = patch({"prompts": {"system": 1}})
    assert status == 400 and body["code"] == "invalid_chat_completion_system_prompt"
    status, body = patch({"prompts": {"searchIndexUidParam": []}})
    assert body["code"] == "invalid_chat_completion_search_index_uid_param_prompt"
    status, body = patch({"unknown": 1})
    assert (
        status == 400
        and body["code"] == "bad_request"
        and body["message"].startswith("Unknown field `unknown`")
    )
    assert patch({"source": "azureOpenAi"}) == (
        400,
        error(
            "azureOpenAi requires setting a valid `baseUrl`, `deploymentId`, and `apiVersion`", "bad_request"
        ),
    )
    assert patch({"source": "vLlm"}) == (400, error("vLlm requires setting a valid `baseUrl`", "bad_request"))
    # nothing was stored by the refused updates
    assert api.get("/chats/valid/settings").status_code == 404
    status, body = patch({"source": "vLlm", "baseUrl": "http://localhost:8000/v1"})
    assert status == 200 and body["source"] == "vLlm"


def test_list_pagination(api: httpx.Client) -> None:
    for uid in ("page-c", "page-a", "page-b"):
        assert api.patch(f"/chats/{uid}/settings", json={}).status_code == 200
    listed = [r["uid"] for r in api.get("/chats", params={"limit": 1000}).json()["results"]]
    assert listed == sorted(listed)
    page = api.get("/chats", params={"offset": listed.index("page-a"), "limit": 2}).json()
    assert page["results"] == [{"uid": "page-a"}, {"uid": "page-b"}]
    assert page["limit"] == 2 and page["total"] == len(listed)
    r = api.get("/chats", params={"limit": "x"})
    assert r.status_code == 400 and r.json()["code"] == "invalid_index_limit"
    r = api.get("/chats/bad%20uid")
    assert r.status_code == 400 and r.json()["code"] == "invalid_index_uid"


def test_chat_actions_of_api_keys(api: httpx.Client) -> None:
    assert api.patch("/chats/keyed/settings", json={"apiKey": "secret-value-of-20b"}).status_code == 200

    def key(*actions: str) -> dict[str, str]:
        created = api.post(
            "/keys", json={"actions": list(actions), "indexes": ["*"], "expiresAt": None}
        ).json()
        return {"Authorization": f"Bearer {created['key']}"}

    reader, writer, admin = key("chatsSettings.get", "chats.get"), key("chatsSettings.*"), key("chats.*")
    assert api.get("/chats/keyed/settings", headers=reader).json()["apiKey"] == "seXXXX..."
    assert api.patch("/chats/keyed/settings", json={}, headers=reader).status_code == 403
    assert api.patch("/chats/keyed/settings", json={"orgId": "o"}, headers=writer).status_code == 200
    assert api.get("/chats", headers=writer).status_code == 403
    assert api.get("/chats", headers=admin).status_code == 200
    assert api.delete("/chats/keyed", headers=admin).status_code == 204


def test_index_chat_setting(api: httpx.Client) -> None:
    set_feature(api, True)
    uid = "chat_setting_idx"
    url = f"/indexes/{uid}/settings/chat"
    r = api.patch(
        url,
        json={
            "description": "test!",
            "documentTemplate": DEFAULT_TEMPLATE,
            "documentTemplateMaxBytes": 400,
            "searchParameters": {"limit": 15, "sort": [], "attributesToSearchOn": []},
        },
    )
    assert r.status_code == 202
    task = wait_task(api, r.json()["taskUid"])
    assert task["status"] == "succeeded" and task["type"] == "settingsUpdate"
    assert task["details"]["chat"]["description"] == "test!"
    # a partial update keeps what it does not name, at every level (Meilisearch issue 5772)
    task = wait_task(
        api,
        api.patch(f"/indexes/{uid}/settings", json={"chat": {"searchParameters": {"limit": 16}}}).json()[
            "taskUid"
        ],
    )
    assert task["status"] == "succeeded"
    assert api.get(f"/indexes/{uid}/settings").json()["chat"] == {
        "description": "test!",
        "documentTemplate": DEFAULT_TEMPLATE,
        "documentTemplateMaxBytes": 400,
        "searchParameters": {"limit": 16, "sort": [], "attributesToSearchOn": []},
    }
    wait_task(
        api,
        api.patch(
            url,
            json={
                "searchParameters": {
                    "hybrid": {"embedder": "default"},
                    "limit": None,
                    "matchingStrategy": "frequency",
                    "rankingScoreThreshold": 0.5,
                    "distinct": "genre",
                }
            },
        ).json()["taskUid"],
    )
    assert api.get(url).json()["searchParameters"] == {
        "hybrid": {"semanticRatio": 0.5, "embedder": "default"},
        "sort": [],
        "distinct": "genre",
        "matchingStrategy": "frequency",
        "attributesToSearchOn": [],
        "rankingScoreThreshold": 0.5,
    }
    # reset
    assert wait_task(api, api.delete(url).json()["taskUid"])["status"] == "succeeded"
    assert api.get(url).json() == DEFAULT_CHAT


def test_index_chat_setting_errors(api: httpx.Client) -> None:
    set_feature(api, True)
    uid = "chat_setting_errors"

    def patch(body: Any) -> tuple[int, Any]:
        r = api.patch(f"/indexes/{uid}/settings", json={"chat": body})
        return r.status_code, r.json()

    status, body = patch({"description": 1})
    assert status == 400 and body["code"] == "invalid_settings_index_chat"
    assert body["message"] == (
        "Invalid value type at `.chat.description`: expected a string, but found a positive integer: `1`"
    )
    status, body = patch({"searchParameters": {"matchingStrategy": "some"}})
    assert status == 400 and body["code"] == "invalid_settings_index_chat"
    status, body = patch({"nope": 1})
    assert status == 400 and body["code"] == "invalid_settings_index_chat"
    status, body = patch("text")
    assert (status, body["code"]) == (400, "invalid_settings_index_chat")

    # checked when the task runs
    status, body = patch({"documentTemplate": "{% if %}"})
    task = wait_task(api, body["taskUid"])
    assert task["status"] == "failed" and task["error"]["code"] == "invalid_chat_setting_document_template"
    assert task["error"]["message"].startswith(
        f"Index `{uid}`: `.chat.documentTemplate`: Invalid document template: "
    )
    status, body = patch({"documentTemplateMaxBytes": 0})
    task = wait_task(api, body["taskUid"])
    assert task["error"] == error(
        f"Index `{uid}`: `.chat.documentTemplateMaxBytes`: `documentTemplateMaxBytes` cannot be zero",
        "invalid_settings_embedders",
    )


def test_workspaces_survive_a_restart_and_a_dump(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms", extra_args=["--master-key", MASTER_KEY]).start()
    headers = {"Authorization": f"Bearer {MASTER_KEY}"}
    try:
        with httpx.Client(base_url=srv.url, timeout=30, headers=headers) as api:
            set_feature(api, True)
            api.patch(
                "/chats/kept/settings", json={"source": "vLlm", "baseUrl": "http://x/v1", "apiKey": "k" * 12}
            )
            wait_task(
                api,
                api.patch("/indexes/kept_idx/settings/chat", json={"description": "kept"}).json()["taskUid"],
            )
        srv.stop()
        srv.start()
        with httpx.Client(base_url=srv.url, timeout=30, headers=headers) as api:
            assert api.get("/chats/kept/settings").json()["baseUrl"] == "http://x/v1"
            dump = wait_task(api, api.post("/dumps").json()["taskUid"])
            assert dump["status"] == "succeeded", dump
            dump_uid = dump["details"]["dumpUid"]
    finally:
        srv.stop()
    dump_file = tmp_path / "dumps" / f"{dump_uid}.dump"
    imported = ServerProcess(
        tmp_path / "imported.ms", extra_args=["--master-key", MASTER_KEY, "--import-dump", str(dump_file)]
    ).start()
    try:
        with httpx.Client(base_url=imported.url, timeout=30, headers=headers) as api:
            settings = api.get("/chats/kept/settings").json()
            assert settings["source"] == "vLlm" and settings["apiKey"] == "kkXXXX..."
            assert api.get("/indexes/kept_idx/settings/chat").json()["description"] == "kept"
    finally:
        imported.stop()


def test_snapshots_carry_the_workspaces(tmp_path: Path) -> None:
    source = ServerProcess(
        tmp_path / "data.ms", extra_args=["--snapshot-dir", str(tmp_path / "snaps")]
    ).start()
    try:
        with httpx.Client(base_url=source.url, timeout=30) as api:
            set_feature(api, True)
            assert api.patch("/chats/snap/settings", json={"orgId": "org-snap"}).status_code == 200
            done = wait_task(api, api.post("/snapshots").json()["taskUid"], timeout=60)
            assert done["status"] == "succeeded", done
    finally:
        source.stop()
    target = ServerProcess(
        tmp_path / "restored.ms",
        extra_args=["--import-snapshot", str(tmp_path / "snaps" / "data.ms.snapshot")],
    ).start()
    try:
        with httpx.Client(base_url=target.url, timeout=30) as api:
            assert api.get("/chats").json()["results"] == [{"uid": "snap"}]
            assert api.get("/chats/snap/settings").json()["orgId"] == "org-snap"
    finally:
        target.stop()
