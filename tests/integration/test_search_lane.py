"""The search lane (`server/search_lane.py`) answers `POST /indexes/{uid}/search` exactly as the general
request path does: same status, headers and body, for good and bad requests alike, in the primary and
in the search workers, and its requests are counted by `/metrics`.

A search carrying `X-Hanzo-Wait-For-Task` goes the general path, which gives the reference answer of
each case; each case is sent several times so that both server processes answer it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest

from tests.conftest import ServerProcess, wait_task

KEY = "lane-master-key-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}
GENERAL_PATH = {"X-Hanzo-Wait-For-Task": "0"}
# differ between two answers to the same request
VOLATILE_HEADERS = {"date", "content-length", "x-hanzo-worker", "connection"}
VOLATILE_FIELDS = {"requestUid", "processingTimeMs"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("lane") / "data.ms",
        extra_args=["--master-key", KEY, "--http-workers", "2"],
    ).start()
    docs = [
        {"id": i, "title": f"{w} story {i}", "overview": f"a {w} tale of {w}s and more words " * 8}
        for i, w in enumerate(["river", "mountain", "forest", "desert", "ocean"] * 20)
    ]
    with httpx.Client(base_url=srv.url, headers=AUTH, timeout=60) as http:
        task = http.post("/indexes/lane/documents", json=docs).json()["taskUid"]
        assert wait_task(http, task, timeout=60)["status"] == "succeeded"
        res = http.patch("/experimental-features", json={"metrics": True})
        assert res.status_code == 200, res.text
    yield srv
    srv.stop()


def _comparable(res: httpx.Response) -> tuple[int, dict[str, str], Any]:
    headers = {k: v for k, v in res.headers.items() if k not in VOLATILE_HEADERS}
    try:
        body = msgspec.json.decode(res.content)  # (httpx has undone a gzip encoding, kept in the headers)
    except msgspec.DecodeError:
        body = res.content
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in VOLATILE_FIELDS}
    return res.status_code, headers, body


CASES: list[tuple[str, str, dict[str, str], bytes]] = [
    ("plain", "/indexes/lane/search", AUTH, b'{"q": "river", "limit": 3}'),
    ("placeholder", "/indexes/lane/search", AUTH, b"{}"),
    ("trailing slash", "/indexes/lane/search/", AUTH, b'{"q": "forest"}'),
    ("scores", "/indexes/lane/search", AUTH, b'{"q": "ocean tale", "showRankingScoreDetails": true}'),
    ("highlight", "/indexes/lane/search", AUTH, b'{"q": "deser", "attributesToHighlight": ["*"]}'),
    ("cors", "/indexes/lane/search", {**AUTH, "Origin": "https://example.com"}, b'{"q": "mountain"}'),
    ("gzip", "/indexes/lane/search", {**AUTH, "Accept-Encoding": "gzip"}, b'{"q": "a", "limit": 50}'),
    ("no key", "/indexes/lane/search", {}, b'{"q": "river"}'),
    ("wrong key", "/indexes/lane/search", {"Authorization": "Bearer nope"}, b'{"q": "river"}'),
    ("unknown index", "/indexes/nowhere/search", AUTH, b'{"q": "river"}'),
    ("bad index uid", "/indexes/bad%20uid/search", AUTH, b'{"q": "river"}'),
    ("malformed body", "/indexes/lane/search", AUTH, b'{"q": '),
    ("unknown field", "/indexes/lane/search", AUTH, b'{"q": "river", "nope": 1}'),
    ("bad filter", "/indexes/lane/search", AUTH, b'{"q": "river", "filter": "title ="}'),
]


@pytest.mark.parametrize(("name", "path", "headers", "body"), CASES, ids=[c[0] for c in CASES])
def test_the_lane_answers_as_the_general_path(
    server: ServerProcess, name: str, path: str, headers: dict[str, str], body: bytes
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        sent = {"Content-Type": "application/json", "Accept-Encoding": "identity", **headers}
        reference = _comparable(http.post(path, content=body, headers={**sent, **GENERAL_PATH}))
        for _ in range(8):  # new connections: the kernel spreads them over both processes
            res = http.post(path, content=body, headers={**sent, "Connection": "close"})
            assert _comparable(res) == reference, name
    if name == "plain":
        assert reference[0] == 200 and len(reference[2]["hits"]) == 3
    if name == "gzip":
        assert reference[1]["content-encoding"] == "gzip"
    if name == "cors":
        assert reference[1]["access-control-allow-origin"] == "*"


def _search_count(text: str) -> int:
    pattern = re.compile(
        r'^meilisearch_http_requests_total\{method="POST",path="/indexes/\{index_uid\}/search",status="200"\} (\d+)',
        re.M,
    )
    return sum(int(m) for m in pattern.findall(text))


def test_lane_searches_are_counted_by_metrics(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.url, headers=AUTH, timeout=30) as http:
        before = _search_count(http.get("/metrics").text)
        for _ in range(12):
            res = http.post("/indexes/lane/search", json={"q": "forest"}, headers={"Connection": "close"})
            assert res.status_code == 200
        after = _search_count(http.get("/metrics").text)
    assert after - before == 12


def test_the_lane_does_not_take_other_routes(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.url, headers=AUTH, timeout=30) as http:
        # same prefix, other routes: the general path answers them
        assert http.post("/indexes/lane/search/extra", json={}).status_code == 404
        assert http.put("/indexes/lane/search", json={}).status_code == 405
        res = http.get("/indexes/lane/search", params={"q": "river", "limit": 2})
        assert res.status_code == 200 and len(res.json()["hits"]) == 2
