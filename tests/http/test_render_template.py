"""`POST /render-template` (docs/api-contract.md §17, Meilisearch's `routes/render.rs` and `tests/documents/render_documents.rs`):
the `renderRoute` gate, each template and input kind this engine supports, their errors, and the two
actions a key needs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import httpx
import pytest

from tests.conftest import MASTER_KEY, ServerProcess, wait_task

INDEX: Final = "render_dogs"


def error(message: str, code: str, type_: str = "invalid_request") -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": type_,
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("render") / "data.ms", extra_args=["--master-key", MASTER_KEY]
    ).start()
    with httpx.Client(
        base_url=srv.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}
    ) as client:
        assert client.patch("/experimental-features", json={"chatCompletions": True}).status_code == 200
        tasks = [
            client.patch(
                f"/indexes/{INDEX}/settings",
                json={
                    "searchableAttributes": ["name", "breed"],
                    "embedders": {"manual": {"source": "userProvided", "dimensions": 2}},
                    "chat": {"documentTemplate": "{{ doc.name }} is a {{ doc.breed }}"},
                },
            ).json(),
            client.post(
                f"/indexes/{INDEX}/documents",
                json=[
                    {
                        "id": 1,
                        "name": "iko",
                        "breed": "jack russell",
                        "age": 3,
                        "_vectors": {"manual": [0.1, 0.2]},
                    }
                ],
            ).json(),
        ]
        for task in tasks:
            done = wait_task(client, task["taskUid"])
            assert done["status"] == "succeeded", done
        yield client
    srv.stop()


def render(api: httpx.Client, body: Any, **kwargs: Any) -> tuple[int, Any]:
    r = api.post("/render-template", json=body, **kwargs)
    return r.status_code, r.json()


def test_gate(api: httpx.Client) -> None:
    assert api.patch("/experimental-features", json={"renderRoute": False}).status_code == 200
    assert render(api, {"template": {"kind": "inlineDocumentTemplate", "inline": "x"}}) == (
        400,
        error(
            "calling the /render-template route requires enabling the `render_route` experimental feature. See "
            "https://github.com/orgs/meilisearch/discussions/888",
            "feature_not_enabled",
        ),
    )
    assert api.patch("/experimental-features", json={"renderRoute": True}).status_code == 200


def test_inline_template_and_documents(api: httpx.Client) -> None:
    api.patch("/experimental-features", json={"renderRoute": True})
    assert render(api, {"template": {"kind": "inlineDocumentTemplate", "inline": "Hi {{ doc.name }}"}}) == (
        200,
        {"template": "Hi {{ doc.name }}", "rendered": None},
    )
    assert render(
        api,
        {
            "template": {"kind": "inlineDocumentTemplate", "inline": "Hi {{ doc.name }}"},
            "input": {"kind": "inlineDocument", "inline": {"name": "iko"}},
        },
    ) == (200, {"template": "Hi {{ doc.name }}", "rendered": "Hi iko"})
    status, body = render(
        api,
        {
            "template": {
                "kind": "inlineDocumentTemplate",
                "inline": "{{ doc.name }}",
                "documentTemplateMaxBytes": 2,
            },
            "input": {"kind": "inlineDocument", "inline": {"name": "iko"}},
        },
    )
    assert (status, body["rendered"]) == (200, "ik")
    # the chat template of an index, on an inline document and on a stored one
    assert render(
        api,
        {
            "template": {"kind": "chatDocumentTemplate", "indexUid": INDEX},
            "input": {"kind": "indexDocument", "indexUid": INDEX, "id": "1"},
        },
    ) == (200, {"template": "{{ doc.name }} is a {{ doc.breed }}", "rendered": "iko is a jack russell"})
    # the default chat template renders every field of an inline document (no index: all searchable)
    wait_task(api, api.delete(f"/indexes/{INDEX}/settings/chat").json()["taskUid"])
    status, body = render(
        api,
        {
            "template": {"kind": "chatDocumentTemplate", "indexUid": INDEX},
            "input": {"kind": "inlineDocument", "inline": {"name": "iko", "breed": "jack russell"}},
        },
    )
    assert (status, body["rendered"]) == (200, "name: iko\nbreed: jack russell\n")
    # on a stored document, only the searchable fields
    status, body = render(
        api,
        {
            "template": {"kind": "chatDocumentTemplate", "indexUid": INDEX},
            "input": {"kind": "indexDocument", "indexUid": INDEX, "id": "1"},
        },
    )
    assert (status, body["rendered"]) == (200, "name: iko\nbreed: jack russell\n")


def test_errors(api: httpx.Client) -> None:
    api.patch("/experimental-features", json={"renderRoute": True})
    assert render(api, {}) == (400, error("Missing field `template`", "bad_request"))
    status, body = render(api, {"template": {"kind": "bad"}})
    assert (status, body) == (
        400,
        error(
            "Unknown value `bad` at `.template.kind`: expected one of `documentTemplate`, `chatDocumentTemplate`, "
            "`indexingFragment`, `searchFragment`, `inlineDocumentTemplate`, `inlineFragment`",
            "invalid_render_template",
        ),
    )
    assert render(api, {"template": {}}) == (
        400,
        error("Missing field `kind` inside `.template`", "invalid_render_template"),
    )
    assert render(api, {"template": {"kind": "documentTemplate", "embedder": "x"}}) == (
        400,
        error(
            "error while fetching template: parameter `index_uid` missing for kind `documentTemplate`",
            "invalid_render_template",
        ),
    )
    assert render(
        api, {"template": {"kind": "documentTemplate", "indexUid": INDEX, "embedder": "e", "fragment": "f"}}
    ) == (
        400,
        error(
            "error while fetching template: parameter `fragment` disallowed for kind `documentTemplate`",
            "invalid_render_template",
        ),
    )
    assert render(
        api, {"template": {"kind": "documentTemplate", "indexUid": INDEX, "embedder": "wrong"}}
    ) == (
        400,
        error(
            f"error while fetching template: cannot find embedder `wrong` in index `{INDEX}`",
            "invalid_render_template",
        ),
    )
    assert render(
        api, {"template": {"kind": "documentTemplate", "indexUid": INDEX, "embedder": "manual"}}
    ) == (
        400,
        error(
            f"error while fetching template: embedder `manual` in index `{INDEX}` does not use a document "
            "template.",
            "invalid_render_template",
        ),
    )
    assert render(api, {"template": {"kind": "inlineDocumentTemplate", "inline": 3}}) == (
        400,
        error(
            "error while fetching template: inline document templates must be strings",
            "invalid_render_template",
        ),
    )
    status, body = render(api, {"template": {"kind": "inlineDocumentTemplate", "inline": "{% if %}"}})
    assert (status, body["code"]) == (400, "template_parsing_error")
    assert body["message"].startswith(
        "error while fetching template: user error: cannot parse template: liquid: "
    )
    assert render(
        api,
        {
            "template": {"kind": "chatDocumentTemplate", "indexUid": INDEX},
            "input": {"kind": "indexDocument", "indexUid": INDEX, "id": "9999"},
        },
    ) == (
        404,
        error(
            f"error while fetching input: document `9999` not found in `{INDEX}`", "render_document_not_found"
        ),
    )
    assert render(
        api,
        {"template": {"kind": "inlineDocumentTemplate", "inline": "x"}, "input": {"kind": "inlineDocument"}},
    ) == (
        400,
        error(
            "error while fetching input: parameter `inline` missing for kind `inlineDocument`",
            "invalid_render_input",
        ),
    )
    status, body = render(
        api,
        {
            "template": {"kind": "inlineDocumentTemplate", "inline": "{{ doc.missing }}"},
            "input": {"kind": "inlineDocument", "inline": {"a": 1}},
        },
    )
    assert (status, body["code"]) == (400, "template_rendering_error")
    status, body = render(
        api,
        {"template": {"kind": "indexingFragment", "indexUid": INDEX, "embedder": "manual", "fragment": "f"}},
    )
    assert (status, body["code"]) == (400, "feature_not_enabled")
    status, body = render(api, {"template": {"kind": "chatDocumentTemplate", "indexUid": "missing_index"}})
    assert (status, body["code"]) == (404, "index_not_found")


def test_keys_need_both_actions(api: httpx.Client) -> None:
    api.patch("/experimental-features", json={"renderRoute": True})

    def key(actions: list[str], indexes: list[str]) -> dict[str, str]:
        created = api.post("/keys", json={"actions": actions, "indexes": indexes, "expiresAt": None}).json()
        return {"Authorization": f"Bearer {created['key']}"}

    body = {"template": {"kind": "chatDocumentTemplate", "indexUid": INDEX}}
    assert render(api, body, headers=key(["settings.get"], ["*"]))[0] == 403
    assert render(api, body, headers=key(["documents.get"], ["*"]))[0] == 403
    assert render(api, body, headers=key(["settings.get", "documents.get"], ["*"]))[0] == 200
    status, answer = render(api, body, headers=key(["settings.get", "documents.get"], ["other"]))
    assert (status, answer) == (403, error("The provided API key is invalid.", "invalid_api_key", "auth"))
