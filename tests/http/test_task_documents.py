"""GET /tasks/{uid}/documents (experimental `getTaskDocumentsRoute`): the payload of an enqueued or
processing `documentAdditionOrUpdate` task (Meilisearch's `routes/tasks.rs` `get_task_documents_file`,
docs/api-contract.md §19).

To hold tasks enqueued deterministically, an index has a `rest` embedder pointed at a loopback service
that, once closed, answers only when the test opens it again: a document addition to that index keeps
the writer busy (its task `processing`), so later tasks of other indexes stay `enqueued`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task

FILE_NOT_FOUND: Final = (
    "Task `{}` does not contain any documents. Only `documentAdditionOrUpdate` tasks with "
    "the statuses `enqueued` or `processing` contain documents"
)


def error(code: str, message: str, type_: str = "invalid_request") -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": type_,
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


class Gate:
    """An embedding service (3 dimensions) that holds every request while closed."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()
        self.requests = 0
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                gate.requests += 1
                gate.open.wait(60)
                raw = json.dumps({"data": [1.0, 0.0, 0.0]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/embed"


@pytest.fixture(scope="module")
def gate() -> Iterator[Gate]:
    g = Gate()
    yield g
    g.open.set()
    g.server.shutdown()
    g.server.server_close()


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    srv = ServerProcess(
        Path(tmp_path_factory.mktemp("taskdocs")) / "data.ms",
        env={"MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS": "127.0.0.0/8"},
    ).start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as client:
            yield client
    finally:
        srv.stop()


def enqueue(http: httpx.Client, uid: str, body: bytes, content_type: str) -> int:
    r = http.post(f"/indexes/{uid}/documents", content=body, headers={"Content-Type": content_type})
    assert r.status_code == 202, r.text
    task_uid: int = r.json()["taskUid"]
    return task_uid


def test_route_is_gated(http: httpx.Client) -> None:
    r = http.get("/tasks/0/documents")
    assert r.status_code == 400
    assert r.json() == error(
        "feature_not_enabled",
        "Getting the documents of an enqueued task requires enabling the `get task "
        "documents route` experimental feature. See https://github.com/orgs/meilisearch/discussions/808",
    )
    # the gate comes before the uid is read
    assert http.get("/tasks/abc/documents").json()["code"] == "feature_not_enabled"


def test_payloads_of_enqueued_and_processing_tasks(http: httpx.Client, gate: Gate) -> None:
    assert http.patch("/experimental-features", json={"getTaskDocumentsRoute": True}).status_code == 200
    r = http.patch(
        "/indexes/held/settings",
        json={
            "embedders": {
                "default": {
                    "source": "rest",
                    "url": gate.url,
                    "request": "{{text}}",
                    "response": {"data": "{{embedding}}"},
                    "dimensions": 3,
                }
            }
        },
    )
    assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
    gate.open.clear()
    try:
        before = gate.requests
        held = enqueue(http, "held", b'[{"id": 1, "title": "held back"}]', "application/json")
        deadline = time.monotonic() + 30
        while gate.requests == before:
            assert time.monotonic() < deadline, "the embedder was never called"
            time.sleep(0.01)
        assert http.get(f"/tasks/{held}").json()["status"] == "processing"
        r = http.get(f"/tasks/{held}/documents")
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == "application/x-ndjson"
        assert r.content == b'{"id":1,"title":"held back"}'

        # JSON: compact objects one after the other
        from_json = enqueue(
            http,
            "other",
            b'[{"id": 1, "a": "x"},\n {"id": 2, "nested": {"b": [1, 2.5]}}]',
            "application/json",
        )
        # NDJSON: one document a line
        from_ndjson = enqueue(http, "other", b'{"id":3,"a":"y"}\n{"id":4}\n', "application/x-ndjson")
        # CSV: typed values, null for an empty cell
        from_csv = enqueue(http, "other", b"id,name,price:number\n5,kiwi,1.5\n6,,2\n", "text/csv")
        settings = http.patch("/indexes/other/settings", json={"filterableAttributes": ["a"]}).json()[
            "taskUid"
        ]
        for uid in (from_json, from_ndjson, from_csv, settings):
            assert http.get(f"/tasks/{uid}").json()["status"] == "enqueued"

        r = http.get(f"/tasks/{from_json}/documents")
        assert (r.status_code, r.headers["content-type"]) == (200, "application/x-ndjson")
        assert r.content == b'{"id":1,"a":"x"}{"id":2,"nested":{"b":[1,2.5]}}'
        assert http.get(f"/tasks/{from_ndjson}/documents").content == b'{"id":3,"a":"y"}\n{"id":4}\n'
        assert http.get(f"/tasks/{from_csv}/documents").content == (
            b'{"id":"5","name":"kiwi","price":1.5}{"id":"6","name":null,"price":2}'
        )

        # a task that carries no documents
        r = http.get(f"/tasks/{settings}/documents")
        assert r.status_code == 404
        assert r.json() == error("task_file_not_found", FILE_NOT_FOUND.format(settings))
    finally:
        gate.open.set()
    for uid in (held, from_json, from_ndjson, from_csv, settings):
        assert wait_task(http, uid)["status"] == "succeeded"
    # once processed, the payload is gone
    r = http.get(f"/tasks/{from_json}/documents")
    assert r.status_code == 404
    assert r.json() == error("task_file_not_found", FILE_NOT_FOUND.format(from_json))


def test_uid_errors(http: httpx.Client) -> None:
    assert http.patch("/experimental-features", json={"getTaskDocumentsRoute": True}).status_code == 200
    r = http.get("/tasks/abc/documents")
    assert r.status_code == 400
    assert r.json() == error(
        "invalid_task_uids", "Task uid `abc` is invalid. It should only contain numeric characters."
    )
    r = http.get("/tasks/999999/documents")
    assert r.status_code == 404
    assert r.json() == error("task_not_found", "Task `999999` not found.")
