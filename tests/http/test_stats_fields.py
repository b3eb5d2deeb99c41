"""Index and global stats fields (docs/api-contract.md §20, Meilisearch's `IndexStats`): embeddings counted
from the vector store, every internal database size, `sizeFormat=human`; and the optional stats of a
batch (`progressTrace`, `writeChannelCongestion`, `internalDatabaseSizes`)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task

HUMAN = re.compile(r"^\d+(\.\d+)?\s+(B|KiB|MiB|GiB|TiB)$")


def test_embedding_counts(http: httpx.Client, index_uid: str) -> None:
    r = http.patch(
        f"/indexes/{index_uid}/settings",
        json={
            "embedders": {
                "manual": {"source": "userProvided", "dimensions": 2},
                "other": {"source": "userProvided", "dimensions": 3},
            }
        },
    )
    assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
    docs = [
        {"id": 1, "_vectors": {"manual": [[0.1, 0.2], [0.3, 0.4]], "other": [1, 2, 3]}},  # 3 embeddings
        {"id": 2, "_vectors": {"manual": [0.5, 0.6], "other": None}},
        {"id": 3, "_vectors": {"manual": None, "other": None}},  # no embedding (a user-provided vector
        {"id": 4, "_vectors": {"manual": [], "other": []}},  # must be given, even as none)
    ]
    r = http.post(f"/indexes/{index_uid}/documents", json=docs)
    task = wait_task(http, r.json()["taskUid"])
    assert task["status"] == "succeeded", task["error"]
    stats = http.get(f"/indexes/{index_uid}/stats").json()
    assert (stats["numberOfEmbeddings"], stats["numberOfEmbeddedDocuments"]) == (4, 2)
    assert http.get("/stats").json()["indexes"][index_uid]["numberOfEmbeddings"] == 4
    r = http.delete(f"/indexes/{index_uid}/documents/1")
    assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
    stats = http.get(f"/indexes/{index_uid}/stats").json()
    assert (stats["numberOfEmbeddings"], stats["numberOfEmbeddedDocuments"]) == (1, 1)


def test_internal_sizes_and_human_format(http: httpx.Client, index_uid: str) -> None:
    r = http.post(
        f"/indexes/{index_uid}/documents", json=[{"id": i, "t": f"word{i} common"} for i in range(50)]
    )
    task = wait_task(http, r.json()["taskUid"])
    stats = http.get(f"/indexes/{index_uid}/stats", params={"showInternalDatabaseSizes": "true"}).json()
    sizes = stats["internalDatabaseSizes"]
    assert sizes and all(isinstance(v, int) and v > 0 for v in sizes.values())
    assert list(sizes.values()) == sorted(sizes.values(), reverse=True)  # largest first
    assert {"documents", "wordDocids"} <= set(sizes)
    human = http.get(
        f"/indexes/{index_uid}/stats", params={"showInternalDatabaseSizes": "true", "sizeFormat": "human"}
    ).json()
    assert list(human) == list(stats)
    for key in ("rawDocumentDbSize", "avgDocumentSize"):
        assert HUMAN.match(human[key]), human[key]
    assert all(HUMAN.match(v) for v in human["internalDatabaseSizes"].values())
    assert isinstance(human["numberOfDocuments"], int)
    overall = http.get("/stats", params={"sizeFormat": "human"}).json()
    assert HUMAN.match(overall["databaseSize"]) and HUMAN.match(overall["usedDatabaseSize"])
    assert HUMAN.match(overall["indexes"][index_uid]["rawDocumentDbSize"])
    r = http.get(f"/indexes/{index_uid}/stats", params={"sizeFormat": "big"})
    assert r.status_code == 400
    assert r.json() == {
        "message": "Unknown value `big` for parameter `sizeFormat`: expected one of `human`, `raw`",
        "code": "invalid_stats_size_format",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#invalid_stats_size_format",
    }
    # the batch that indexed them reports what grew
    batch = http.get(f"/batches/{task['batchUid']}").json()
    grown = batch["stats"]["internalDatabaseSizes"]
    assert set(grown) <= set(sizes) and "wordDocids" in grown
    assert all(
        re.fullmatch(r"\d+(\.\d+)? (B|KiB|MiB) \(\+\d+(\.\d+)? (B|KiB|MiB)\)", v) for v in grown.values()
    )
    assert batch["stats"]["writeChannelCongestion"]["attempts"] == 50
    assert any(k.startswith("processing tasks > ") for k in batch["stats"]["progressTrace"])


class FlakyEmbedder:
    """A loopback embedding service answering 500 to the first `failures` requests."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.requests = 0
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                service.requests += 1
                failing = service.requests <= service.failures
                raw = json.dumps({"error": "overloaded"} if failing else {"data": [1.0, 0.0]}).encode()
                self.send_response(500 if failing else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def embedding_server(tmp_path: Path) -> Iterator[tuple[httpx.Client, FlakyEmbedder]]:
    service = FlakyEmbedder(failures=2)
    srv = ServerProcess(
        tmp_path / "data.ms",
        env={
            "MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS": "127.0.0.0/8",
            "MEILI_EXPERIMENTAL_REST_EMBEDDER_MAX_RETRY_DURATION_SECONDS": "0",
        },
    )
    srv.start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as client:
            yield client, service
    finally:
        srv.stop()
        service.server.shutdown()
        service.server.server_close()


def test_batch_embedder_requests(embedding_server: tuple[httpx.Client, FlakyEmbedder]) -> None:
    http, service = embedding_server
    url = f"http://127.0.0.1:{service.server.server_address[1]}/embed"
    r = http.patch(
        "/indexes/e/settings",
        json={
            "embedders": {
                "default": {
                    "source": "rest",
                    "url": url,
                    "request": "{{text}}",
                    "response": {"data": "{{embedding}}"},
                    "dimensions": 2,
                }
            }
        },
    )
    assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
    service.requests, service.failures = 0, 2
    r = http.post("/indexes/e/documents", json=[{"id": 1, "t": "one"}])
    task = wait_task(http, r.json()["taskUid"])
    assert task["status"] == "succeeded", task["error"]
    batch = http.get(f"/batches/{task['batchUid']}").json()
    requests = batch["stats"]["embedderRequests"]
    # two failed attempts, then the one that worked (Meilisearch counts every attempt)
    assert (requests["total"], requests["failed"]) == (3, 2)
    assert requests["total"] == service.requests
    assert "500" in requests["lastError"] or "overloaded" in requests["lastError"]
    assert list(batch["stats"])[-1] == "embedderRequests"
    # a batch that embeds nothing has no entry
    r = http.delete("/indexes/e/documents/1")
    task = wait_task(http, r.json()["taskUid"])
    assert "embedderRequests" not in http.get(f"/batches/{task['batchUid']}").json()["stats"]
