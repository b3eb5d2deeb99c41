"""Generating embedders over HTTP: a real hanzo-engine server with `rest`, `openAi` and `ollama`
embedders pointed at a small embedding service this module runs on loopback (Meilisearch's
`tests/vector/rest.rs`, `openai.rs`, `ollama.rs` cases).

The service embeds a text as a bag of words: each word adds 1 to one of `DIM` coordinates chosen by a
hash, so texts sharing words are close and equal texts are identical. It records every request and
can be told to fail (any status, for the next requests or all of them) or to answer with the wrong
dimensions. The server runs with `MEILI_EXPERIMENTAL_REST_EMBEDDER_MAX_RETRY_DURATION_SECONDS=0`, so
its retries (Meilisearch's policy: 10 of them) happen without waiting.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task

DIM = 16
DOCS = [
    {"id": 1, "title": "red apple", "color": "red"},
    {"id": 2, "title": "green apple pie", "color": "green"},
    {"id": 3, "title": "blue car", "color": "blue"},
    {"id": 4, "title": "fast red car", "color": "red"},
    {"id": 5, "title": "ocean waves", "color": "blue"},
]


def embed(text: str, dims: int = DIM) -> list[float]:
    vec = [0.0] * dims
    for word in text.lower().split():
        vec[hashlib.md5(word.encode()).digest()[0] % dims] += 1.0
    if not any(vec):
        vec[0] = 1.0
    return vec


class FakeService:
    """The embedding service (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.fail_next: list[int] = []
        self.fail_all: int | None = None
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"null")
                with service.lock:
                    service.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    status = service.fail_next.pop(0) if service.fail_next else service.fail_all
                if status is None:
                    status, answer = service.answer(self.path, body)
                else:
                    answer = {"error": f"failing with {status}"}
                raw = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def answer(self, path: str, body: Any) -> tuple[int, Any]:
        path = path.split("?")[0]
        if path == "/single":  # request "{{text}}", response {"data": "{{embedding}}"}
            return 200, {"data": embed(body)}
        if path == "/three":  # always three dimensions
            return 200, {"data": embed(body, 3)}
        if path == "/batch":  # {"input": [texts]} -> {"output": [{"embedding"}]}
            return 200, {"output": [{"embedding": embed(t)} for t in body["input"]]}
        if path == "/v1/embeddings":  # OpenAI
            dims = body.get("dimensions", 1536)
            return 200, {
                "data": [{"embedding": embed(t, dims), "index": i} for i, t in enumerate(body["input"])],
                "model": body["model"],
            }
        if path == "/api/embed":  # Ollama, batched
            if body["model"] != "nomic":
                return 404, {"error": f'model "{body["model"]}" not found, try pulling it first'}
            return 200, {"embeddings": [embed(t) for t in body["input"]]}
        if path == "/api/embeddings":  # Ollama, one text
            return 200, {"embedding": embed(body["prompt"])}
        return 404, {"error": "no such route"}

    def texts(self) -> list[str]:
        """Every text sent so far, in order (requests of any shape)."""
        out: list[str] = []
        for request in self.requests:
            body = request["body"]
            if isinstance(body, str):
                out.append(body)
            elif "prompt" in body:
                out.append(body["prompt"])
            else:
                out.extend(body["input"] if isinstance(body["input"], list) else [body["input"]])
        return out

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.fail_next.clear()
            self.fail_all = None


@pytest.fixture(scope="module")
def service() -> Iterator[FakeService]:
    svc = FakeService()
    yield svc
    svc.server.shutdown()
    svc.server.server_close()


@pytest.fixture(scope="module")
def rest_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        Path(tmp_path_factory.mktemp("rest")) / "data.ms",
        env={
            "MEILI_EXPERIMENTAL_REST_EMBEDDER_MAX_RETRY_DURATION_SECONDS": "0",
            "MEILI_OPENAI_API_KEY": "",
            "OPENAI_API_KEY": "",
            # the fake service listens on loopback, refused by default
            "MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS": "127.0.0.0/8",
        },
    ).start()
    yield srv
    srv.stop()


@pytest.fixture
def http(rest_server: ServerProcess, service: FakeService) -> Iterator[httpx.Client]:
    service.reset()
    with httpx.Client(base_url=rest_server.url, timeout=60) as client:
        yield client


def rest(service: FakeService, **extra: Any) -> dict[str, Any]:
    return {
        "source": "rest",
        "url": service.url("/single"),
        "request": "{{text}}",
        "response": {"data": "{{embedding}}"},
        "dimensions": DIM,
        "documentTemplate": "{{doc.title}}",
        **extra,
    }


def task_of(http: httpx.Client, res: httpx.Response) -> dict[str, Any]:
    assert res.status_code == 202, res.text
    return wait_task(http, res.json()["taskUid"], timeout=60)


def set_embedders(
    http: httpx.Client, uid: str, embedders: dict[str, Any], status: str = "succeeded"
) -> dict[str, Any]:
    task = task_of(http, http.patch(f"/indexes/{uid}/settings", json={"embedders": embedders}))
    assert task["status"] == status, task
    return task


def add(
    http: httpx.Client, uid: str, docs: list[dict[str, Any]], status: str = "succeeded", method: str = "post"
) -> dict[str, Any]:
    task = task_of(http, getattr(http, method)(f"/indexes/{uid}/documents", json=docs))
    assert task["status"] == status, task
    return task


def vectors_of(http: httpx.Client, uid: str) -> dict[Any, Any]:
    res = http.get(f"/indexes/{uid}/documents", params={"retrieveVectors": "true", "limit": 100})
    assert res.status_code == 200, res.text
    return {doc["id"]: doc.get("_vectors") for doc in res.json()["results"]}


def search(http: httpx.Client, uid: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    res = http.post(f"/indexes/{uid}/search", json=body)
    assert res.status_code == status, res.text
    return dict(res.json())


def close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=1e-6) for x, y in zip(a, b, strict=True))


# -- indexing -----------------------------------------------------------------------------------------


def test_documents_are_embedded_from_their_template(
    http: httpx.Client, service: FakeService, index_uid: str
) -> None:
    set_embedders(
        http, index_uid, {"rest": rest(service, apiKey="my-secret-key", headers={"X-Tenant": "hanzo"})}
    )
    assert service.requests == []  # dimensions given: no test embedding
    add(http, index_uid, DOCS)
    assert sorted(service.texts()) == sorted(d["title"] for d in DOCS)
    headers = service.requests[0]["headers"]
    assert headers["Authorization"] == "Bearer my-secret-key" and headers["X-Tenant"] == "hanzo"
    assert headers["Content-Type"] == "application/json"
    stored = vectors_of(http, index_uid)
    for doc in DOCS:
        entry = stored[doc["id"]]["rest"]
        assert entry["regenerate"] is True
        assert close(entry["embeddings"][0], embed(doc["title"]))
    plain = http.get(f"/indexes/{index_uid}/documents/1").json()
    assert plain == {"id": 1, "title": "red apple", "color": "red"}  # `_vectors` only with retrieveVectors
    stats = http.get(f"/indexes/{index_uid}/stats").json()
    assert stats["numberOfDocuments"] == 5


def test_semantic_and_hybrid_search_embed_the_query(
    http: httpx.Client, service: FakeService, index_uid: str
) -> None:
    task = task_of(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings",
            json={"filterableAttributes": ["color"], "embedders": {"rest": rest(service)}},
        ),
    )
    assert task["status"] == "succeeded"
    add(http, index_uid, DOCS)
    service.reset()
    body = search(
        http,
        index_uid,
        {
            "q": "blue car",
            "hybrid": {"embedder": "rest", "semanticRatio": 1.0},
            "showRankingScore": True,
            "retrieveVectors": True,
        },
    )
    assert service.texts() == ["blue car"]  # the query itself, not a template
    assert [h["id"] for h in body["hits"]][:2] == [3, 4]
    assert body["hits"][0]["_rankingScore"] == pytest.approx(1.0)
    assert close(body["queryVector"], embed("blue car"))
    assert body["semanticHitCount"] == 5
    # filters apply to the semantic list
    body = search(
        http,
        index_uid,
        {"q": "blue car", "hybrid": {"embedder": "rest", "semanticRatio": 1.0}, "filter": "color = red"},
    )
    assert body["hits"][0]["id"] == 4
    # hybrid: both lists merged; the keyword side finds the exact titles too
    body = search(
        http,
        index_uid,
        {"q": "apple", "hybrid": {"embedder": "rest", "semanticRatio": 0.5}, "showRankingScore": True},
    )
    assert {h["id"] for h in body["hits"][:2]} == {1, 2}
    assert "semanticHitCount" in body
    # an explicit vector is not embedded again
    service.reset()
    body = search(
        http,
        index_uid,
        {"vector": embed("ocean waves"), "hybrid": {"embedder": "rest", "semanticRatio": 1.0}},
    )
    assert body["hits"][0]["id"] == 5 and service.requests == []


def test_update_reembeds_only_changed_texts(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    set_embedders(http, index_uid, {"rest": rest(service)})
    add(http, index_uid, DOCS)
    add(http, index_uid, [{"id": 6, "title": "user vectors", "_vectors": {"rest": [0.5] * DIM}}])
    service.reset()
    # partial update: the title of 1 changes, 2 changes a field its template does not use
    add(
        http,
        index_uid,
        [{"id": 1, "title": "yellow banana"}, {"id": 2, "color": "yellow"}, {"id": 6, "color": "x"}],
        method="put",
    )
    assert service.texts() == ["yellow banana"]
    stored = vectors_of(http, index_uid)
    assert close(stored[1]["rest"]["embeddings"][0], embed("yellow banana"))
    assert close(stored[2]["rest"]["embeddings"][0], embed("green apple pie"))
    assert stored[6]["rest"] == {"embeddings": [[0.5] * DIM], "regenerate": False}  # user-provided: kept
    # the search sees the new vector
    body = search(http, index_uid, {"q": "banana", "hybrid": {"embedder": "rest", "semanticRatio": 1.0}})
    assert body["hits"][0]["id"] == 1
    # replacing a document re-renders it too; `regenerate: true` with no embeddings asks for an embedding
    service.reset()
    add(
        http,
        index_uid,
        [
            {"id": 6, "title": "now generated", "_vectors": {"rest": {"regenerate": True}}},
            {"id": 3, "title": "blue car"},
        ],
    )
    assert service.texts() == ["now generated"]
    stored = vectors_of(http, index_uid)
    assert stored[6]["rest"]["regenerate"] is True and close(
        stored[6]["rest"]["embeddings"][0], embed("now generated")
    )


def test_batched_requests_and_inferred_dimensions(
    http: httpx.Client, service: FakeService, index_uid: str
) -> None:
    conf = {
        "source": "rest",
        "url": service.url("/batch"),
        "request": {"input": ["{{text}}", "{{..}}"]},
        "response": {"output": [{"embedding": "{{embedding}}"}, "{{..}}"]},
        "documentTemplate": "{{doc.title}}",
    }
    set_embedders(http, index_uid, {"batched": conf})
    assert service.texts() == ["test"]  # no `dimensions`: one test embedding
    service.reset()
    docs = [{"id": i, "title": f"word{i} common"} for i in range(25)]
    add(http, index_uid, docs)
    sizes = sorted(len(r["body"]["input"]) for r in service.requests)
    assert sizes == [5, 10, 10]  # ten texts per request
    stored = vectors_of(http, index_uid)
    assert all(len(stored[i]["batched"]["embeddings"][0]) == DIM for i in range(25))


def test_default_template_renders_searchable_fields(
    http: httpx.Client, service: FakeService, index_uid: str
) -> None:
    conf = rest(service)
    del conf["documentTemplate"]
    task = task_of(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings",
            json={"searchableAttributes": ["title"], "embedders": {"rest": conf}},
        ),
    )
    assert task["status"] == "succeeded"
    add(http, index_uid, [{"id": 1, "title": "kefir", "breed": "patou", "nothing": None}])
    assert service.texts() == ["title: kefir\n"]
    service.reset()
    # the default template depends on searchableAttributes: changing them re-renders
    task = task_of(
        http, http.patch(f"/indexes/{index_uid}/settings", json={"searchableAttributes": ["breed", "id"]})
    )
    assert task["status"] == "succeeded", task
    assert service.texts() == ["id: 1\nbreed: patou\n"]


def test_template_change_reembeds_generated_vectors_only(
    http: httpx.Client, service: FakeService, index_uid: str
) -> None:
    set_embedders(http, index_uid, {"rest": rest(service)})
    add(http, index_uid, [*DOCS[:2], {"id": 9, "title": "mine", "_vectors": {"rest": [1.0] * DIM}}])
    service.reset()
    set_embedders(http, index_uid, {"rest": {"documentTemplate": "{{doc.title}} is {{doc.color}}"}})
    assert sorted(service.texts()) == ["green apple pie is green", "red apple is red"]
    stored = vectors_of(http, index_uid)
    assert close(stored[1]["rest"]["embeddings"][0], embed("red apple is red"))
    assert stored[9]["rest"] == {"embeddings": [[1.0] * DIM], "regenerate": False}
    # a change that does not alter the texts (apiKey, distribution) embeds nothing
    service.reset()
    set_embedders(http, index_uid, {"rest": {"apiKey": "other", "distribution": {"mean": 0.7, "sigma": 0.2}}})
    assert service.requests == []
    # removing the embedder removes the generated vectors, user-provided ones stay in the document
    set_embedders(http, index_uid, {"rest": None})
    stored = vectors_of(http, index_uid)
    assert stored[1] == {} and stored[9] == {"rest": {"embeddings": [[1.0] * DIM], "regenerate": False}}


def test_new_embedder_takes_vectors_documents_already_carry(
    http: httpx.Client, service: FakeService, index_uid: str
) -> None:
    add(
        http,
        index_uid,
        [
            {"id": 1, "title": "given", "_vectors": {"later": [0.25] * DIM}},
            {"id": 2, "title": "opted out", "_vectors": {"later": None}},
            {"id": 3, "title": "to embed"},
        ],
    )
    set_embedders(http, index_uid, {"later": rest(service)})
    assert service.texts() == ["to embed"]
    stored = vectors_of(http, index_uid)
    assert stored[1]["later"] == {"embeddings": [[0.25] * DIM], "regenerate": False}
    assert stored[2]["later"] == {"embeddings": [], "regenerate": False}
    assert close(stored[3]["later"]["embeddings"][0], embed("to embed"))
    body = search(
        http,
        index_uid,
        {
            "vector": [0.25] * DIM,
            "hybrid": {"embedder": "later", "semanticRatio": 1.0},
            "showRankingScore": True,
        },
    )
    assert body["hits"][0]["id"] == 1 and body["hits"][0]["_rankingScore"] == pytest.approx(1.0)
    # a url change regenerates every generated vector, never the given ones
    service.reset()
    set_embedders(http, index_uid, {"later": {"url": service.url("/single?v=2")}})
    assert service.texts() == ["to embed"] and service.requests[0]["path"] == "/single?v=2"


# -- failures -----------------------------------------------------------------------------------------


def test_service_failure_fails_the_task_and_writes_nothing(
    http: httpx.Client, service: FakeService, index_uid: str
) -> None:
    set_embedders(http, index_uid, {"rest": rest(service)})
    add(http, index_uid, DOCS[:1])
    service.fail_all = 500
    task = add(http, index_uid, DOCS[1:3], status="failed")
    assert len(service.requests) >= 11  # ten retries, then a last attempt (per request)
    assert task["error"]["code"] == "vector_embedding_error"
    assert task["error"]["type"] == "invalid_request"
    assert task["error"]["message"] == (
        f"Index `{index_uid}`: While embedding documents for embedder `rest`: runtime error: received internal "
        'error HTTP 500 from embedding server\n  - server replied with `{"error": "failing with 500"}`'
    )
    assert task["details"]["indexedDocuments"] == 0
    assert http.get(f"/indexes/{index_uid}/documents/2").status_code == 404
    assert http.get(f"/indexes/{index_uid}/stats").json()["numberOfDocuments"] == 1
    # an update whose embedding fails leaves the old version
    task = add(http, index_uid, [{"id": 1, "title": "changed"}], status="failed", method="put")
    assert http.get(f"/indexes/{index_uid}/documents/1").json()["title"] == "red apple"
    # a bad request is not retried
    service.reset()
    service.fail_all = 400
    task = add(http, index_uid, DOCS[1:2], status="failed")
    assert len(service.requests) == 1
    assert task["error"]["message"] == (
        f"Index `{index_uid}`: While embedding documents for embedder `rest`: user error: sent a bad request to "
        "embedding server\n  - Hint: check that the `request` in the embedder configuration matches the remote "
        'server\'s API\n  - server replied with `{"error": "failing with 400"}`'
    )


def test_transient_failures_are_retried(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    set_embedders(http, index_uid, {"rest": rest(service)})
    service.fail_next = [503, 429, 502]
    add(http, index_uid, DOCS[:1])
    assert len(service.requests) == 4
    assert close(vectors_of(http, index_uid)[1]["rest"]["embeddings"][0], embed("red apple"))


def test_wrong_dimensions(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    set_embedders(http, index_uid, {"rest": rest(service, url=service.url("/three"))})
    task = add(http, index_uid, DOCS[:1], status="failed")
    assert task["error"]["code"] == "vector_embedding_error"
    assert task["error"]["message"] == (
        f"Index `{index_uid}`: While embedding documents for embedder `rest`: "
        "runtime error: was expecting embeddings of dimension `16`, got embeddings "
        "of dimensions `3`"
    )
    # vectors sent by the user are checked against the embedder's dimensions too
    task = add(http, index_uid, [{"id": 7, "title": "x", "_vectors": {"rest": [1.0, 2.0]}}], status="failed")
    assert task["error"]["code"] == "invalid_vector_dimensions"
    assert task["error"]["message"] == (
        f"Index `{index_uid}`: Invalid vector dimensions in document with id `7` in "
        "`._vectors.rest`.\n  - note: embedding #0 has dimensions 2\n  - note: "
        "embedder `rest` requires 16"
    )
    # a query vector of the wrong length
    res = http.post(
        f"/indexes/{index_uid}/search",
        json={"vector": [1.0], "hybrid": {"embedder": "rest", "semanticRatio": 1.0}},
    )
    assert res.status_code == 400 and res.json()["code"] == "invalid_vector_dimensions"


def test_template_needing_a_missing_field(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    set_embedders(http, index_uid, {"rest": rest(service, documentTemplate="{{doc.name}}")})
    task = add(http, index_uid, [{"id": 1, "title": "no name"}], status="failed")
    assert task["error"]["code"] == "invalid_document_fields"
    assert task["error"]["message"] == (
        f"Index `{index_uid}`: user error: missing field in document `1`: liquid: Unknown index\n  with:\n"
        "    variable=doc\n    requested index=name\n    available indexes=id, title\n"
    )
    assert service.requests == []
    # a guarded template renders documents that lack the field
    set_embedders(
        http, index_uid, {"rest": {"documentTemplate": "{% if doc.name %}{{doc.name}}{% endif %}!"}}
    )
    add(http, index_uid, [{"id": 1, "title": "no name"}])
    assert service.texts() == ["!"]


def test_settings_errors(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    def failure(conf: dict[str, Any]) -> dict[str, Any]:
        return dict(set_embedders(http, index_uid, {"e": conf}, status="failed")["error"])

    def rejected(conf: dict[str, Any]) -> dict[str, Any]:
        # what the patch carries is checked by the route: 400, nothing enqueued, no index prefix
        res = http.patch(f"/indexes/{index_uid}/settings", json={"embedders": {"e": conf}})
        assert res.status_code == 400, res.text
        return dict(res.json())

    err = rejected(
        {"source": "rest", "url": service.url("/single"), "request": "54", "response": "{{embedding}}"}
    )
    assert err["code"] == "vector_embedding_error"
    assert err["message"] == (
        'Error while generating embeddings: user error: in `request`: "{{text}}" not found\n'
        "  - Note: this template is using a document template, and so expects to contain the "
        'placeholder "{{text}}" rather than "{{fragment}}"'
    )
    err = rejected(
        {
            "source": "rest",
            "url": service.url("/single"),
            "request": "{{text}}",
            "response": {"data": ["{{embedding}}", "{{..}}"]},
        }
    )
    assert err["message"].endswith(
        "in `response`: `response` has multiple embeddings, but `request` has only one text to embed"
    )
    err = rejected({"source": "rest", "url": service.url("/single"), "response": "{{embedding}}"})
    assert (err["code"], err["message"]) == (
        "invalid_settings_embedders",
        "`.embedders.e`: Missing field `request` (note: this field is mandatory for source `rest`)",
    )
    err = rejected({"source": "rest", "url": "kefir", "request": "{{text}}", "response": "{{embedding}}"})
    assert err["message"] == "`.embedders.e.url`: could not parse `kefir`: relative URL without a base"
    err = rejected(
        {
            "source": "rest",
            "url": service.url("/single"),
            "request": "{{text}}",
            "response": "{{embedding}}",
            "model": "x",
        }
    )
    assert err["message"].startswith(
        "`.embedders.e`: Field `model` unavailable for source `rest`.\n  - note: "
        "`model` is available for sources: `openAi`, `huggingFace`, `ollama`"
    )
    err = rejected({**rest(service), "documentTemplate": "{{doc.title"})
    assert err["code"] == "invalid_settings_embedders"
    assert err["message"].startswith(
        "`.embedders.e.documentTemplate`: Invalid template: user error: cannot parse template: liquid: "
    )
    # no dimensions: the test embedding fails (the response has no `data` array of numbers)
    err = failure(
        {"source": "rest", "url": service.url("/single"), "request": "{{text}}", "response": "{{embedding}}"}
    )
    assert err["message"] == (
        f"Index `{index_uid}`: Error while generating embeddings: runtime error: could not determine model "
        "dimensions:\n  - test embedding failed with runtime error: error extracting embeddings from the response:\n"
        '  - in `response`, while extracting a single "{{embedding}}", expected `response` to be an array of '
        "numbers, but failed to parse server response:\n  - invalid type: map, expected a sequence"
    )
    err = failure(
        {
            "source": "rest",
            "url": service.url("/single"),
            "request": "{{text}}",
            "response": {"data": {"embeddings": "{{embedding}}"}},
        }
    )
    assert err["message"].endswith(
        'in `response.data`, while extracting a single "{{embedding}}", configuration '
        "expects `data` to be an object with key `embeddings` but server sent an array "
        f"of size {DIM}"
    )
    assert http.get(f"/indexes/{index_uid}/settings/embedders").json() == {}


def test_search_when_the_service_fails(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    set_embedders(http, index_uid, {"rest": rest(service)})
    add(http, index_uid, DOCS)
    service.fail_all = 500
    res = http.post(
        f"/indexes/{index_uid}/search",
        json={"q": "apple", "hybrid": {"embedder": "rest", "semanticRatio": 1.0}},
    )
    assert res.status_code == 400
    error = res.json()
    assert error["code"] == "vector_embedding_error"
    assert error["message"] == (
        "Error while generating embeddings: runtime error: received internal error HTTP 500 "
        'from embedding server\n  - server replied with `{"error": "failing with 500"}`'
    )
    # hybrid falls back to the keyword results
    body = search(
        http,
        index_uid,
        {"q": "apple", "hybrid": {"embedder": "rest", "semanticRatio": 0.5}, "retrieveVectors": True},
    )
    assert {h["id"] for h in body["hits"]} == {1, 2}
    assert body["semanticHitCount"] == 0 and "queryVector" not in body


# -- presets ------------------------------------------------------------------------------------------


def test_openai_preset(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    conf = {
        "source": "openAi",
        "url": service.url("/v1/embeddings"),
        "apiKey": "sk-test-0123456789",
        "model": "text-embedding-3-small",
        "dimensions": DIM,
        "documentTemplate": "{{doc.title}}",
    }
    set_embedders(http, index_uid, {"openai": conf})
    assert service.requests == []  # the model's dimensions are known
    add(http, index_uid, DOCS)
    request = service.requests[0]
    assert request["headers"]["Authorization"] == "Bearer sk-test-0123456789"
    assert request["body"]["model"] == "text-embedding-3-small" and request["body"]["dimensions"] == DIM
    assert sorted(service.texts()) == sorted(d["title"] for d in DOCS)
    assert close(vectors_of(http, index_uid)[3]["openai"]["embeddings"][0], embed("blue car"))
    body = search(
        http,
        index_uid,
        {"q": "ocean", "hybrid": {"embedder": "openai", "semanticRatio": 1.0}, "showRankingScore": True},
    )
    assert body["hits"][0]["id"] == 5
    settings = http.get(f"/indexes/{index_uid}/settings/embedders").json()
    assert settings["openai"]["apiKey"] == "skXXXX..."
    err = set_embedders(http, index_uid, {"openai": {"model": "text-embedding-4"}}, status="failed")["error"]
    assert err["message"] == (
        f"Index `{index_uid}`: `.embedders.openai.model`: Invalid model `text-embedding-4` for "
        'OpenAI. Supported models: ["text-embedding-ada-002", "text-embedding-3-small", '
        '"text-embedding-3-large"]'
    )


def test_ollama_preset(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    set_embedders(
        http,
        index_uid,
        {
            "ollama": {
                "source": "ollama",
                "url": service.url("/api/embed"),
                "model": "nomic",
                "documentTemplate": "{{doc.title}}",
            }
        },
    )
    assert service.texts() == ["test"]  # dimensions learned from a test embedding
    assert service.requests[0]["body"] == {"model": "nomic", "input": ["test"]}
    add(http, index_uid, DOCS)
    assert close(vectors_of(http, index_uid)[2]["ollama"]["embeddings"][0], embed("green apple pie"))
    body = search(http, index_uid, {"q": "red car", "hybrid": {"embedder": "ollama", "semanticRatio": 1.0}})
    assert body["hits"][0]["id"] == 4
    # the one-text endpoint
    set_embedders(
        http,
        index_uid,
        {
            "single": {
                "source": "ollama",
                "url": service.url("/api/embeddings"),
                "model": "nomic",
                "dimensions": DIM,
                "documentTemplate": "{{doc.title}}",
            }
        },
    )
    assert close(vectors_of(http, index_uid)[5]["single"]["embeddings"][0], embed("ocean waves"))
    # a model the server does not have
    err = set_embedders(
        http,
        index_uid,
        {"missing": {"source": "ollama", "url": service.url("/api/embed"), "model": "llama"}},
        status="failed",
    )["error"]
    assert err["message"] == (
        f"Index `{index_uid}`: Error while generating embeddings: runtime error: could not "
        "determine model dimensions:\n  - test embedding failed with user error: model not "
        "found. Meilisearch will not automatically download models from the Ollama library, "
        "please pull the model manually\n  - server replied with "
        '`{"error": "model \\"llama\\" not found, try pulling it first"}`'
    )
    err = set_embedders(
        http,
        index_uid,
        {"bad": {"source": "ollama", "url": service.url("/elsewhere"), "model": "nomic"}},
        status="failed",
    )["error"]
    assert err["message"].endswith(
        "unsupported Ollama URL.\n  - For `ollama` sources, the URL must end with "
        f"`/api/embed` or `/api/embeddings`\n  - Got `{service.url('/elsewhere')}`"
    )
