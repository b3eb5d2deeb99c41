"""What a search worker forwards to the primary (`server.proxy`) reaches the client as the primary sent it:
bodies in both framings, compressed answers, large streamed answers, HEAD, percent-encoded targets,
errors, and pooled connections reused or replaced."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task

from .test_workers import wait_for_workers

# A forwarded answer carries no mark of the worker that forwarded it: each request goes out on this many
# fresh connections, which the kernel spreads over both processes (all of them on the primary: 2**-16).
TRIES = 16


def everywhere(url: str, method: str, path: str, **kw: Any) -> list[httpx.Response]:
    """The request on `TRIES` fresh connections; the answers all have the first one's status (and body,
    unless the request writes)."""
    answers = []
    for _ in range(TRIES):
        with httpx.Client(base_url=url, timeout=30) as fresh:
            answers.append(fresh.request(method, path, **kw))
    for r in answers[1:]:
        assert r.status_code == answers[0].status_code, r.text
        if method != "POST":
            assert r.content == answers[0].content
    return answers


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("proxy") / "data.ms", extra_args=["--http-workers", "2"]
    ).start()
    wait_for_workers(srv, 1)
    docs = [{"id": i, "title": f"title {i}", "overview": "word " * 50} for i in range(2000)]
    with httpx.Client(base_url=srv.url, timeout=60) as http:
        uid = http.post("/indexes/proxied/documents", json=docs).json()["taskUid"]
        assert wait_task(http, uid, timeout=60)["status"] == "succeeded"
    yield srv
    srv.stop()


def test_writes_through_a_worker_in_every_framing_are_applied(multi: ServerProcess) -> None:
    payload = json.dumps([{"id": 10_000 + i, "title": "framed"} for i in range(300)]).encode()
    bodies: list[dict[str, Any]] = [
        {"content": payload},  # Content-Length
        {"content": [payload[i : i + 1000] for i in range(0, len(payload), 1000)]},  # chunked
        {"content": gzip.compress(payload), "headers": {"Content-Encoding": "gzip"}},
    ]
    with httpx.Client(base_url=multi.url, timeout=30) as http:
        for n, body in enumerate(bodies):
            headers = {"Content-Type": "application/json", **body.pop("headers", {})}
            for r in everywhere(multi.url, "POST", f"/indexes/framed{n}/documents", headers=headers, **body):
                assert r.status_code == 202, r.text
                assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
            assert http.get(f"/indexes/framed{n}/stats").json()["numberOfDocuments"] == 300


def test_answers_through_a_worker_are_the_primarys(multi: ServerProcess) -> None:
    # a large answer, streamed
    big = everywhere(multi.url, "GET", "/indexes/proxied/documents", params={"limit": 2000})
    assert len(big[0].json()["results"]) == 2000
    assert all(len(r.headers.get_list("date")) == 1 for r in big)
    # compressed as the client asked, once
    zipped = everywhere(
        multi.url,
        "GET",
        "/indexes/proxied/documents",
        headers={"Accept-Encoding": "gzip"},
        params={"limit": 500},
    )
    for r in zipped:
        assert r.headers["content-encoding"] == "gzip"
        assert len(r.json()["results"]) == 500
    # HEAD: headers, no body
    for r in everywhere(multi.url, "HEAD", "/indexes/proxied"):
        assert r.status_code == 200
        assert r.content == b""
    # errors and percent-encoded targets pass through
    missing = everywhere(multi.url, "GET", "/indexes/proxied/documents/a%20b")
    assert missing[0].status_code == 404
    assert missing[0].json()["code"] == "document_not_found"


def test_pooled_connections_outlive_the_primarys_keep_alive(multi: ServerProcess) -> None:
    """Requests forwarded after the primary closed the worker's idle pooled connections still succeed."""
    for pause in (0.0, 5.5, 0.0):
        time.sleep(pause)
        for r in everywhere(multi.url, "GET", "/indexes/proxied/stats"):
            assert r.status_code == 200, r.text
