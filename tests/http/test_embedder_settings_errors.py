"""Which embedder settings errors the settings routes answer synchronously (400, nothing enqueued) and
which only the settings task finds (Meilisearch's `validate_settings` checks what the PATCH body
carries; the merged settings are checked again when the task runs). Messages are Meilisearch's
(`tests/vector/settings.rs`, `tests/vector/rest.rs`, `tests/vector/openai.rs` snapshots)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import wait_task

LINK = "https://docs.meilisearch.com/errors#"
CODE = "invalid_settings_embedders"
USER_PROVIDED_FIELDS = "`source`, `dimensions`, `distribution`, `binaryQuantized`"
OPENAI_FIELDS = (
    "`source`, `model`, `apiKey`, `dimensions`, `documentTemplate`, `documentTemplateMaxBytes`, "
    "`url`, `distribution`, `binaryQuantized`"
)
OPENAI_MODELS = '["text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large"]'

# (embedder name, settings, code, message)
SYNC_ERRORS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "manual",
        {"source": "userProvided", "dimensions": 128, "documentTemplate": "{{doc.documentTemplate}}"},
        CODE,
        "`.embedders.manual`: Field `documentTemplate` unavailable for source `userProvided`.\n  - note: "
        "`documentTemplate` is available for sources: `openAi`, `huggingFace`, `ollama`, `rest`\n  - note: available "
        f"fields for source `userProvided`: {USER_PROVIDED_FIELDS}",
    ),
    (
        "default",
        {"source": "openAi", "revision": "42"},
        CODE,
        "`.embedders.default`: Field `revision` unavailable for source `openAi`.\n  - note: `revision` is available "
        f"for sources: `huggingFace`\n  - note: available fields for source `openAi`: {OPENAI_FIELDS}",
    ),
    # a reset (`null`) of a field the source refuses is refused too
    (
        "manual",
        {"source": "userProvided", "dimensions": 2, "model": None},
        CODE,
        "`.embedders.manual`: Field `model` unavailable for source `userProvided`.\n  - note: `model` is available "
        f"for sources: `openAi`, `huggingFace`, `ollama`\n  - note: available fields for source `userProvided`: "
        f"{USER_PROVIDED_FIELDS}",
    ),
    (
        "manual",
        {"source": "userProvided"},
        CODE,
        "`.embedders.manual`: Missing field `dimensions` (note: this field is mandatory for source `userProvided`)",
    ),
    (
        "manual",
        {"source": "userProvided", "dimensions": None},
        CODE,
        "`.embedders.manual`: Missing field `dimensions` (note: this field is mandatory for source `userProvided`)",
    ),
    (
        "ollama",
        {"source": "ollama", "url": "http://localhost:11434/api/embed"},
        CODE,
        "`.embedders.ollama`: Missing field `model` (note: this field is mandatory for source `ollama`)",
    ),
    (
        "rest",
        {"source": "rest", "request": "{{text}}", "response": "{{embedding}}"},
        CODE,
        "`.embedders.rest`: Missing field `url` (note: this field is mandatory for source `rest`)",
    ),
    # checked whatever the source, even when the patch names none
    ("manual", {"dimensions": 0}, CODE, "`.embedders.manual.dimensions`: `dimensions` cannot be zero"),
    (
        "rest",
        {"url": "kefir"},
        CODE,
        "`.embedders.rest.url`: could not parse `kefir`: relative URL without a base",
    ),
    (
        "rest",
        {"source": "rest", "url": "http://localhost:1337", "request": "54", "response": "{{embedding}}"},
        "vector_embedding_error",
        'Error while generating embeddings: user error: in `request`: "{{text}}" not found\n  - Note: this template is '
        'using a document template, and so expects to contain the placeholder "{{text}}" rather than "{{fragment}}"',
    ),
    (
        "rest",
        {"request": {"input": ["{{text}}", "{{..}}"]}, "response": {"data": "{{embedding}}"}},
        "vector_embedding_error",
        "Error while generating embeddings: user error: in `response`: `response` has a single embedding, but "
        "`request` has multiple texts to embed",
    ),
    (
        "default",
        {"documentTemplate": "{{doc.title}}", "documentTemplateMaxBytes": 0},
        CODE,
        "`.embedders.default.documentTemplateMaxBytes`: `documentTemplateMaxBytes` cannot be zero",
    ),
    (
        "openai",
        {"source": "openAi", "model": "text-embedding-4"},
        CODE,
        f"`.embedders.openai.model`: Invalid model `text-embedding-4` for OpenAI. Supported models: {OPENAI_MODELS}",
    ),
    (
        "openai",
        {"source": "openAi", "model": "text-embedding-ada-002", "dimensions": 512},
        CODE,
        "`.embedders.openai.dimensions`: Model `text-embedding-ada-002` does not support overriding its native "
        "dimensions of 1536. Found 512",
    ),
    (
        "openai",
        {"source": "openAi", "model": "text-embedding-3-small", "dimensions": 2000},
        CODE,
        "`.embedders.openai.dimensions`: Model `text-embedding-3-small` does not support overriding its dimensions to "
        "a value higher than 1536. Found 2000",
    ),
]


def total_tasks(http: httpx.Client) -> int:
    return int(http.get("/tasks", params={"limit": 1}).json()["total"])


def error_body(code: str, message: str) -> dict[str, str]:
    return {"message": message, "code": code, "type": "invalid_request", "link": LINK + code}


def task_of(http: httpx.Client, res: httpx.Response) -> dict[str, Any]:
    assert res.status_code == 202, res.text
    return wait_task(http, res.json()["taskUid"])


@pytest.mark.parametrize(("name", "conf", "code", "message"), SYNC_ERRORS)
def test_rejected_before_enqueuing(
    http: httpx.Client, index_uid: str, name: str, conf: dict[str, Any], code: str, message: str
) -> None:
    before = total_tasks(http)
    whole = http.patch(f"/indexes/{index_uid}/settings", json={"embedders": {name: conf}})
    assert (whole.status_code, whole.json()) == (400, error_body(code, message))
    # the sub-route runs the same validation, with the same `.embedders.<name>` paths
    sub = http.patch(f"/indexes/{index_uid}/settings/embedders", json={name: conf})
    assert (sub.status_code, sub.json()) == (400, error_body(code, message))
    assert total_tasks(http) == before
    # no task: the missing index was not created either
    assert http.get(f"/indexes/{index_uid}").status_code == 404


def test_invalid_document_template(http: httpx.Client, index_uid: str) -> None:
    before = total_tasks(http)
    res = http.patch(
        f"/indexes/{index_uid}/settings",
        json={"embedders": {"default": {"source": "openAi", "documentTemplate": "{{doc.title"}}},
    )
    assert res.status_code == 400
    body = res.json()
    assert body["code"] == CODE and body["link"] == LINK + CODE
    assert body["message"].startswith(
        "`.embedders.default.documentTemplate`: Invalid template: user error: cannot parse template: liquid: "
    )
    assert total_tasks(http) == before


def test_first_embedder_error_wins_and_valid_siblings_do_not_help(http: httpx.Client, index_uid: str) -> None:
    res = http.patch(
        f"/indexes/{index_uid}/settings/embedders",
        json={"a": {"source": "userProvided", "dimensions": 2}, "b": {"source": "userProvided"}},
    )
    assert res.status_code == 400
    assert res.json()["message"] == (
        "`.embedders.b`: Missing field `dimensions` (note: this field is mandatory for source `userProvided`)"
    )


def test_valid_patches_are_enqueued(http: httpx.Client, index_uid: str) -> None:
    # allowed resets, `null` embedders and patches without a source carry nothing the route refuses
    for embedders in (
        {
            "manual": {
                "source": "userProvided",
                "dimensions": 2,
                "distribution": None,
                "binaryQuantized": None,
            }
        },
        {"manual": {"dimensions": 3}},
        {"gone": None},
    ):
        task = task_of(http, http.patch(f"/indexes/{index_uid}/settings", json={"embedders": embedders}))
        assert task["status"] == "succeeded", task
    settings = http.get(f"/indexes/{index_uid}/settings/embedders").json()
    assert settings == {"manual": {"source": "userProvided", "dimensions": 3}}


def test_rules_needing_the_stored_settings_fail_the_task(http: httpx.Client, index_uid: str) -> None:
    setup = {"manual": {"source": "userProvided", "dimensions": 2}}
    assert (
        task_of(http, http.patch(f"/indexes/{index_uid}/settings/embedders", json=setup))["status"]
        == "succeeded"
    )
    # without `source` the route cannot know `model` is refused: the stored source decides, in the task
    task = task_of(
        http, http.patch(f"/indexes/{index_uid}/settings/embedders", json={"manual": {"model": "x"}})
    )
    assert task["status"] == "failed"
    assert task["error"] == error_body(
        CODE,
        f"Index `{index_uid}`: `.embedders.manual`: Field `model` unavailable for source `userProvided`.\n  - "
        "note: `model` is available for sources: `openAi`, `huggingFace`, `ollama`\n  - note: available fields "
        f"for source `userProvided`: {USER_PROVIDED_FIELDS}",
    )
    # a new embedder without `source` is an `openAi` one once merged
    task = task_of(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings", json={"embedders": {"openai": {"model": "text-embedding-4"}}}
        ),
    )
    assert task["status"] == "failed"
    assert task["error"] == error_body(
        CODE,
        f"Index `{index_uid}`: `.embedders.openai.model`: Invalid model `text-embedding-4` for OpenAI. "
        f"Supported models: {OPENAI_MODELS}",
    )
    assert http.get(f"/indexes/{index_uid}/settings/embedders").json() == setup
