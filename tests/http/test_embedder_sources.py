"""Embedder sources and fields that need more than the REST path: `composite` embedders (documents embedded
by the indexing embedder, queries by the search embedder, both checked against each other first, as
Meilisearch's `composite.rs`), the experimental features that gate them (`compositeEmbedders`,
`multimodal`, as Meilisearch's `validate_settings`), and what this build refuses when it is sent rather
than accepting it and doing nothing: `huggingFace` sources and fragments.

Expected bodies are re-derived from Meilisearch's `tests/vector/settings.rs::composite_checks`; its
sub-embedders are `huggingFace` ones, whose field errors come before this build's refusal of the source.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess
from tests.http.test_rest_embedder import (
    DIM,
    DOCS,
    FakeService,
    add,
    close,
    embed,
    search,
    task_of,
    vectors_of,
)

CODE = "invalid_settings_embedders"
HF = {
    "source": "huggingFace",
    "model": "sentence-transformers/all-MiniLM-L6-v2",
    "revision": "e4ce9877abf3edfe10b0d82785e83bdcb973e22e",
}
TEMPLATE = (
    "{% for field in fields %}{% if field.is_searchable and field.value != nil %}{{ field.name }}: "
    "{{ field.value }}\n{% endif %}{% endfor %}"
)


class Service(FakeService):
    """The REST embedding service, plus `/reversed`: the same dimensions, other vectors."""

    def answer(self, path: str, body: Any) -> tuple[int, Any]:
        if path.split("?")[0] == "/reversed":
            return 200, {"data": embed(body)[::-1]}
        return super().answer(path, body)


@pytest.fixture(scope="module")
def service() -> Iterator[Service]:
    svc = Service()
    yield svc
    svc.server.shutdown()
    svc.server.server_close()


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(
        Path(tmp_path_factory.mktemp("sources")) / "data.ms",
        env={
            "MEILI_EXPERIMENTAL_REST_EMBEDDER_MAX_RETRY_DURATION_SECONDS": "0",
            "MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS": "127.0.0.0/8",
        },
    ).start()
    yield server
    server.stop()


@pytest.fixture
def http(srv: ServerProcess, service: Service) -> Iterator[httpx.Client]:
    service.reset()
    with httpx.Client(base_url=srv.url, timeout=60) as client:
        yield client


def features(http: httpx.Client, **values: bool) -> None:
    res = http.patch("/experimental-features", json=values)
    assert res.status_code == 200, res.text
    assert all(res.json()[name] is value for name, value in values.items())


def error(code: str, message: str, kind: str = "invalid_request") -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": kind,
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


def refused(http: httpx.Client, uid: str, embedders: dict[str, Any]) -> dict[str, Any]:
    """The 400 answer to a settings patch, which enqueues nothing."""
    before = http.get("/tasks", params={"limit": 1}).json()["total"]
    res = http.patch(f"/indexes/{uid}/settings", json={"embedders": embedders})
    assert res.status_code == 400, res.text
    assert http.get("/tasks", params={"limit": 1}).json()["total"] == before
    return dict(res.json())


def rest(service: Service, path: str, **extra: Any) -> dict[str, Any]:
    if path == "/batch":
        extra = {
            "request": {"input": ["{{text}}", "{{..}}"]},
            "response": {"output": [{"embedding": "{{embedding}}"}, "{{..}}"]},
            **extra,
        }
    return {
        "source": "rest",
        "url": service.url(path),
        "request": "{{text}}",
        "response": {"data": "{{embedding}}"},
        **extra,
    }


def composite(search_embedder: Any, indexing_embedder: Any) -> dict[str, Any]:
    return {"source": "composite", "searchEmbedder": search_embedder, "indexingEmbedder": indexing_embedder}


# -- refused sources and fields -------------------------------------------------------------------------


def test_hugging_face_is_refused_when_sent(http: httpx.Client, index_uid: str) -> None:
    message = (
        "`.embedders.{where}.source`: Source `huggingFace` is not available in this build: it cannot download "
        "models from the Hugging Face hub nor run them locally.\n  - Hint: serve the model behind a `rest` or "
        "`ollama` embedder, or compute the vectors elsewhere and use a `userProvided` embedder."
    )
    assert refused(http, index_uid, {"hf": {"source": "huggingFace"}}) == error(
        CODE, message.format(where="hf")
    )
    # Meilisearch's own field rules still come first
    assert refused(http, index_uid, {"hf": {**HF, "apiKey": "k"}})["message"].startswith(
        "`.embedders.hf`: Field `apiKey` unavailable for source `huggingFace`."
    )
    features(http, compositeEmbedders=True)
    try:
        body = refused(
            http, index_uid, {"c": composite(HF, {"source": "ollama", "model": "m", "dimensions": 2})}
        )
        assert body == error(CODE, message.format(where="c.searchEmbedder"))
        body = refused(
            http, index_uid, {"c": composite({"source": "ollama", "model": "m", "dimensions": 2}, HF)}
        )
        assert body == error(CODE, message.format(where="c.indexingEmbedder"))
    finally:
        features(http, compositeEmbedders=False)


def test_fragments_need_multimodal_then_are_refused(
    http: httpx.Client, service: Service, index_uid: str
) -> None:
    fragments = {"basic": {"value": "{{doc.title}}"}}
    for field in ("indexingFragments", "searchFragments"):
        body = refused(http, index_uid, {"e": {**rest(service, "/single"), field: fragments}})
        assert body == error(
            "feature_not_enabled",
            f"setting `{field}` requires enabling the `multimodal` "
            "experimental feature. See https://github.com/orgs/meilisearch/discussions/846",
        )
    features(http, multimodal=True)
    try:
        body = refused(http, index_uid, {"e": {**rest(service, "/single"), "indexingFragments": fragments}})
        assert body == error(
            CODE,
            "`.embedders.e.indexingFragments`: fragments are not available in this build: "
            "multimodal embedding through fragments is not implemented.\n  - Hint: use a "
            "`documentTemplate` to embed the documents' text, or a `userProvided` embedder.",
        )
    finally:
        features(http, multimodal=False)


# -- composite: settings --------------------------------------------------------------------------------


def test_composite_needs_its_feature(http: httpx.Client, index_uid: str) -> None:
    gate = (
        "{} requires enabling the `composite embedders` experimental feature. "
        "See https://github.com/orgs/meilisearch/discussions/816"
    )
    assert refused(http, index_uid, {"test": composite(HF, HF)}) == error(
        "feature_not_enabled", gate.format('using `"composite"` as source')
    )
    assert refused(http, index_uid, {"test": {"source": "userProvided", "searchEmbedder": HF}}) == error(
        "feature_not_enabled", gate.format("setting `searchEmbedder`")
    )
    assert refused(http, index_uid, {"test": {"source": "userProvided", "indexingEmbedder": HF}}) == error(
        "feature_not_enabled", gate.format("setting `indexingEmbedder`")
    )


@pytest.mark.parametrize(
    ("embedder", "message"),
    [
        (
            composite({**HF, "distribution": {"mean": 0.5, "sigma": 0.2}}, HF),
            "`.embedders.test.searchEmbedder`: Field `distribution` unavailable for source `huggingFace` for the search "
            "embedder.\n  - note: available fields for source `huggingFace` for the search embedder: `source`, `model`, "
            "`revision`, `pooling`\n  - note: `distribution` is available when source `huggingFace` is not for the search "
            "embedder",
        ),
        (
            composite({"source": "userProvided", "dimensions": 42}, HF),
            "`.embedders.test.searchEmbedder.source`: Source `userProvided` is not available in a nested embedder",
        ),
        (
            composite(composite(HF, HF), HF),
            "`.embedders.test.searchEmbedder.source`: Source `composite` is not available in a nested embedder",
        ),
        (
            composite(HF, {}),
            "`.embedders.test.indexingEmbedder`: Missing field `source`.\n  - note: this field is mandatory for nested "
            "embedders",
        ),
        (
            composite({}, HF),
            "`.embedders.test.searchEmbedder`: Missing field `source`.\n  - note: this field is mandatory for nested "
            "embedders",
        ),
        (
            {"source": "composite", "searchEmbedder": HF},
            "`.embedders.test`: Missing field `indexingEmbedder` (note: this field is mandatory for source `composite`)",
        ),
        (
            {"source": "composite", "indexingEmbedder": HF},
            "`.embedders.test`: Missing field `searchEmbedder` (note: this field is mandatory for source `composite`)",
        ),
        (
            composite({**HF, "binaryQuantized": True}, {**HF, "binaryQuantized": False}),
            "`.embedders.test.searchEmbedder`: Field `binaryQuantized` unavailable for source `huggingFace` for the search "
            "embedder.\n  - note: available fields for source `huggingFace` for the search embedder: `source`, `model`, "
            "`revision`, `pooling`\n  - note: `binaryQuantized` is available when source `huggingFace` is not for the "
            "search embedder",
        ),
        (
            composite({**HF, "documentTemplate": "toto"}, HF),
            "`.embedders.test.searchEmbedder`: Field `documentTemplate` unavailable for source `huggingFace` for the search "
            "embedder.\n  - note: available fields for source `huggingFace` for the search embedder: `source`, `model`, "
            "`revision`, `pooling`\n  - note: `documentTemplate` is available when source `huggingFace` is not for the "
            "search embedder",
        ),
    ],
)
def test_composite_settings_rules(
    http: httpx.Client, index_uid: str, embedder: dict[str, Any], message: str
) -> None:
    features(http, compositeEmbedders=True)
    try:
        assert refused(http, index_uid, {"test": embedder}) == error(CODE, message)
    finally:
        features(http, compositeEmbedders=False)


def test_composite_unknown_nested_field(http: httpx.Client, index_uid: str) -> None:
    res = http.patch(
        f"/indexes/{index_uid}/settings", json={"embedders": {"test": composite({**HF, "modle": "x"}, HF)}}
    )
    assert res.status_code == 400, res.text
    assert res.json()["code"] == CODE
    assert res.json()["message"].startswith("Unknown field `modle` inside `.embedders.test.searchEmbedder`")


def test_composite_dimensions_must_match(http: httpx.Client, index_uid: str) -> None:
    features(http, compositeEmbedders=True)
    try:
        sent = composite(
            {"source": "ollama", "dimensions": 0x42, "model": "does-not-exist"},
            {"source": "ollama", "dimensions": 42, "model": "does-not-exist"},
        )
        task = task_of(http, http.patch(f"/indexes/{index_uid}/settings", json={"embedders": {"test": sent}}))
    finally:
        features(http, compositeEmbedders=False)
    assert task["status"] == "failed"
    assert task["details"] == {
        "embedders": {
            "test": {
                "source": "composite",
                "searchEmbedder": {"source": "ollama", "model": "does-not-exist", "dimensions": 66},
                "indexingEmbedder": {"source": "ollama", "model": "does-not-exist", "dimensions": 42},
            }
        }
    }
    assert task["error"] == error(
        "vector_embedding_error",
        f"Index `{index_uid}`: Error while generating embeddings: "
        "user error: error while generating test embeddings.\n  - the dimensions of "
        "embeddings produced at search time and at indexing time don't match.\n  - Search "
        "time dimensions: 66\n  - Indexing time dimensions: 42\n  - Note: Dimensions of "
        "embeddings produced by both embedders are required to match.",
    )


def test_composite_embeddings_must_be_similar(http: httpx.Client, service: Service, index_uid: str) -> None:
    features(http, compositeEmbedders=True)
    try:
        sent = composite(rest(service, "/single", dimensions=DIM), rest(service, "/reversed", dimensions=DIM))
        task = task_of(http, http.patch(f"/indexes/{index_uid}/settings", json={"embedders": {"test": sent}}))
    finally:
        features(http, compositeEmbedders=False)
    assert task["status"] == "failed"
    message = task["error"]["message"]
    prefix = (
        f"Index `{index_uid}`: Error while generating embeddings: user error: error while generating test "
        "embeddings.\n  - the embeddings produced at search time and indexing time are not similar enough.\n"
        "  - angular distance "
    )
    assert message.startswith(prefix), message
    assert message.endswith(
        "\n  - Meilisearch requires a maximum distance of 0.01.\n  - Note: check that both "
        "embedders produce similar embeddings."
    )
    assert float(message[len(prefix) :].split("\n")[0]) > 0.01
    assert task["error"]["code"] == "vector_embedding_error"


def test_composite_test_embedding_failure(http: httpx.Client, service: Service, index_uid: str) -> None:
    features(http, compositeEmbedders=True)
    try:
        sent = composite(rest(service, "/nowhere", dimensions=DIM), rest(service, "/single", dimensions=DIM))
        task = task_of(http, http.patch(f"/indexes/{index_uid}/settings", json={"embedders": {"test": sent}}))
    finally:
        features(http, compositeEmbedders=False)
    assert task["status"] == "failed"
    assert task["error"]["message"].startswith(
        f"Index `{index_uid}`: Error while generating embeddings: runtime error: error while generating test "
        "embeddings.\n  - could not generate test embedding with embedder at search time.\n  - Embedding failed "
        "with error: received unexpected HTTP 404 from embedding server"
    )


# -- composite: indexing and search ---------------------------------------------------------------------


def test_composite_embeds_documents_and_queries_apart(
    http: httpx.Client, service: Service, index_uid: str
) -> None:
    features(http, compositeEmbedders=True)
    try:
        sent = composite(rest(service, "/single"), rest(service, "/batch", documentTemplate="{{doc.title}}"))
        task = task_of(http, http.patch(f"/indexes/{index_uid}/settings", json={"embedders": {"both": sent}}))
        assert task["status"] == "succeeded", task
        # dimensions learned from a test embedding of each, then the three test texts on both sides
        assert [r["path"] for r in service.requests].count("/single") == 4  # one text a request
        assert [r["path"] for r in service.requests].count("/batch") == 2
        shown = http.get(f"/indexes/{index_uid}/settings/embedders").json()
        assert shown == {
            "both": {
                "source": "composite",
                "searchEmbedder": sent["searchEmbedder"],
                "indexingEmbedder": {**sent["indexingEmbedder"], "documentTemplateMaxBytes": 400},
            }
        }
        service.reset()
        add(http, index_uid, DOCS)
        assert {r["path"] for r in service.requests} == {"/batch"}  # documents: the indexing embedder
        assert sorted(service.texts()) == sorted(d["title"] for d in DOCS)
        stored = vectors_of(http, index_uid)
        assert all(close(stored[d["id"]]["both"]["embeddings"][0], embed(d["title"])) for d in DOCS)
        service.reset()
        body = search(
            http, index_uid, {"q": "blue car", "hybrid": {"embedder": "both", "semanticRatio": 1.0}}
        )
        assert [(r["path"], r["body"]) for r in service.requests] == [
            ("/single", "blue car")
        ]  # the search embedder
        assert [h["id"] for h in body["hits"]][:2] == [3, 4]
        assert body["semanticHitCount"] == len(body["hits"])
        # a change of the search embedder alone re-embeds no document
        service.reset()
        sent["searchEmbedder"] = rest(service, "/single", headers={"X-Side": "search"})
        task = task_of(http, http.patch(f"/indexes/{index_uid}/settings", json={"embedders": {"both": sent}}))
        assert task["status"] == "succeeded", task
        assert len([r for r in service.requests if r["path"] == "/batch"]) == 2  # the checks' test texts only
    finally:
        features(http, compositeEmbedders=False)


def test_composite_display_defaults(http: httpx.Client, service: Service, index_uid: str) -> None:
    """Only the indexing embedder renders documents: it alone shows the default template."""
    features(http, compositeEmbedders=True)
    try:
        sent = composite(rest(service, "/single", dimensions=DIM), rest(service, "/batch", dimensions=DIM))
        task = task_of(http, http.patch(f"/indexes/{index_uid}/settings", json={"embedders": {"c": sent}}))
        assert task["status"] == "succeeded", task
        assert task["details"]["embedders"] == {"c": sent}
        shown = http.get(f"/indexes/{index_uid}/settings").json()["embedders"]
        assert shown == {
            "c": {
                "source": "composite",
                "searchEmbedder": sent["searchEmbedder"],
                "indexingEmbedder": {
                    **sent["indexingEmbedder"],
                    "documentTemplate": TEMPLATE,
                    "documentTemplateMaxBytes": 400,
                },
            }
        }
    finally:
        features(http, compositeEmbedders=False)


# -- `media` in a search ----------------------------------------------------------------------------------


def test_media_needs_multimodal_and_search_fragments(
    http: httpx.Client, service: Service, index_uid: str
) -> None:
    task = task_of(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings",
            json={
                "embedders": {
                    "rest": rest(service, "/single", dimensions=DIM, documentTemplate="{{doc.title}}"),
                    "manual": {"source": "userProvided", "dimensions": DIM},
                }
            },
        ),
    )
    assert task["status"] == "succeeded", task
    add(http, index_uid, [{**doc, "_vectors": {"manual": None}} for doc in DOCS])
    media = {"image": "https://example.com/cat.png"}
    res = http.post(f"/indexes/{index_uid}/search", json={"media": media, "hybrid": {"embedder": "rest"}})
    assert res.status_code == 400
    assert res.json() == error(
        "feature_not_enabled",
        "passing `media` in a search query requires enabling the "
        "`multimodal` experimental feature. See https://github.com/orgs/meilisearch/discussions/846",
    )
    features(http, multimodal=True)
    try:
        # no embedder has `searchFragments` (this build refuses them), so `media` cannot be embedded
        res = http.post(f"/indexes/{index_uid}/search", json={"media": media, "hybrid": {"embedder": "rest"}})
        assert res.status_code == 400
        assert res.json() == error(
            "vector_embedding_error",
            "Error while generating embeddings: user error: `media` "
            "requested, and the configuration has source `rest`, but the configuration doesn't "
            "have `searchFragments`.",
        )
        res = http.post(
            f"/indexes/{index_uid}/search", json={"media": media, "hybrid": {"embedder": "manual"}}
        )
        assert res.status_code == 400
        assert res.json() == error(
            "vector_embedding_error",
            "Error while generating embeddings: user error: `media` "
            "requested but the configuration doesn't have source `rest`",
        )
        # a hybrid search whose query cannot be embedded answers with its keyword results, as Meilisearch
        service.reset()
        body = search(
            http,
            index_uid,
            {"q": "blue car", "media": media, "hybrid": {"embedder": "rest", "semanticRatio": 0.5}},
        )
        assert body["semanticHitCount"] == 0 and [h["id"] for h in body["hits"]][:1] == [3]
        assert service.requests == []
    finally:
        features(http, multimodal=False)
