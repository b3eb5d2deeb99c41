"""`GET /settings/embedders` shows the defaults Meilisearch applied to each embedder (it rebuilds the
settings from the configuration it runs): meilisearch-js's settings snapshot reads them back. `huggingFace`
sources are refused by this build, composite ones are shown in `test_embedder_sources.py`."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task

TEMPLATE = (
    "{% for field in fields %}{% if field.is_searchable and field.value != nil %}{{ field.name }}: "
    "{{ field.value }}\n{% endif %}{% endfor %}"
)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("embdisplay") / "data.ms").start()
    yield server
    server.stop()


@pytest.fixture
def api(srv: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=srv.url, timeout=30) as client:
        yield client


def _set(
    api: httpx.Client, uid: str, embedders: dict[str, object], details: dict[str, object] | None = None
) -> dict[str, object]:
    r = api.patch(f"/indexes/{uid}/settings/embedders", json=embedders)
    assert r.status_code == 202, r.text
    task = wait_task(api, r.json()["taskUid"])
    assert task["status"] == "succeeded", task
    # the task's details show what was sent, not the defaults
    assert task["details"]["embedders"] == (embedders if details is None else details)
    shown = api.get(f"/indexes/{uid}/settings/embedders").json()
    assert api.get(f"/indexes/{uid}/settings").json()["embedders"] == shown
    return dict(shown)


def test_given_fields_are_shown_as_given(api: httpx.Client, index_uid: str) -> None:
    conf = {
        "source": "ollama",
        "model": "m",
        "dimensions": 3,
        "documentTemplate": "{{doc.title}}",
        "documentTemplateMaxBytes": 500,
        "url": "http://localhost:11434/api/embed",
        "binaryQuantized": False,
        "distribution": {"mean": 0.7, "sigma": 0.3},
    }
    assert _set(api, index_uid, {"default": conf}) == {"default": conf}


def test_openai_shows_its_model_and_template(api: httpx.Client, index_uid: str) -> None:
    shown = _set(
        api,
        index_uid,
        {"oa": {"source": "openAi", "apiKey": "sk-0123456789abcdefghij"}},
        {"oa": {"source": "openAi", "apiKey": "sk-XXXXX..."}},
    )
    assert shown == {
        "oa": {
            "source": "openAi",
            "model": "text-embedding-3-small",
            "apiKey": "sk-XXXXX...",
            "documentTemplate": TEMPLATE,
            "documentTemplateMaxBytes": 400,
        }
    }


def test_user_provided_shows_no_template(api: httpx.Client, index_uid: str) -> None:
    shown = _set(api, index_uid, {"up": {"source": "userProvided", "dimensions": 3}})
    assert shown == {"up": {"source": "userProvided", "dimensions": 3}}
