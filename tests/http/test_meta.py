"""GET /health, /version, / and the stats routes (Meilisearch tests/stats/mod.rs, routes/mod.rs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task
from tests.http.test_tasks import DATE_RE, to_ns

INDEX_STATS_KEYS = [
    "numberOfDocuments",
    "rawDocumentDbSize",
    "avgDocumentSize",
    "indexSize",
    "usedIndexSize",
    "isIndexing",
    "numberOfEmbeddings",
    "numberOfEmbeddedDocuments",
    "fieldDistribution",
]
PRODUCTION_KEY = "0123456789abcdef"  # exactly the 16 bytes production requires


def error(code: str, message: str, type_: str = "invalid_request") -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": type_,
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


def add_documents(http: httpx.Client, uid: str, docs: list[dict[str, Any]]) -> dict[str, Any]:
    r = http.post(f"/indexes/{uid}/documents", json=docs)
    assert r.status_code == 202, r.text
    return wait_task(http, r.json()["taskUid"])


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    srv = ServerProcess(
        Path(tmp_path_factory.mktemp("production")) / "data.ms",
        extra_args=["--env", "production", "--master-key", PRODUCTION_KEY],
    ).start()
    try:
        with httpx.Client(
            base_url=srv.url, timeout=30, headers={"Authorization": f"Bearer {PRODUCTION_KEY}"}
        ) as client:
            yield client
    finally:
        srv.stop()


def test_health(http: httpx.Client) -> None:
    r = http.get("/health")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"status": "available"}


def test_version(http: httpx.Client) -> None:
    r = http.get("/version")
    assert r.status_code == 200
    body = r.json()
    assert list(body) == ["commitSha", "commitDate", "pkgVersion"]
    assert all(isinstance(v, str) and v for v in body.values())
    # the Meilisearch version whose API is implemented (docs/api-contract.md §20)
    assert body["pkgVersion"] == "1.50.0"


def test_root_is_the_dashboard_in_development(http: httpx.Client) -> None:
    r = http.get("/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")


def test_root_is_a_status_in_production(production: httpx.Client) -> None:
    r = httpx.get(f"{production.base_url}/")  # no auth needed
    assert r.status_code == 200
    assert r.json() == {"status": "Meilisearch is running"}


def test_root_in_production_gives_a_browser_the_dashboard(production: httpx.Client) -> None:
    # the page holds no data: it asks for a key before showing anything (tests/browser)
    accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    r = httpx.get(f"{production.base_url}/", headers={"Accept": accept})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert 'id="key-prompt"' in r.text


def test_stats_of_an_empty_instance(production: httpx.Client) -> None:
    r = production.get("/stats")
    assert r.status_code == 200
    body = r.json()
    assert list(body) == ["databaseSize", "usedDatabaseSize", "lastUpdate", "indexes"]
    assert body["lastUpdate"] is None
    assert body["indexes"] == {}
    assert isinstance(body["databaseSize"], int) and body["databaseSize"] > 0
    assert isinstance(body["usedDatabaseSize"], int)


def test_index_stats(http: httpx.Client, index_uid: str) -> None:
    add_documents(http, index_uid, [{"id": 1, "name": "Alexey"}, {"id": 2, "age": 45}])
    r = http.get(f"/indexes/{index_uid}/stats")
    assert r.status_code == 200
    stats = r.json()
    assert list(stats) == INDEX_STATS_KEYS
    assert stats["numberOfDocuments"] == 2
    assert stats["isIndexing"] is False
    assert (stats["numberOfEmbeddings"], stats["numberOfEmbeddedDocuments"]) == (0, 0)
    assert stats["fieldDistribution"] == {"age": 1, "id": 2, "name": 1}
    assert list(stats["fieldDistribution"]) == ["age", "id", "name"]
    assert stats["rawDocumentDbSize"] > 0
    assert stats["avgDocumentSize"] == stats["rawDocumentDbSize"] // 2
    # the SDKs (meilisearch-python-sdk's test_get_stats) read both as sizes in bytes
    assert isinstance(stats["indexSize"], int) and isinstance(stats["usedIndexSize"], int)
    assert 0 < stats["usedIndexSize"] <= stats["indexSize"]
    overall = http.get("/stats").json()["indexes"][index_uid]
    assert list(overall) == INDEX_STATS_KEYS
    human = http.get(f"/indexes/{index_uid}/stats", params={"sizeFormat": "human"}).json()
    assert all(
        isinstance(human[key], str) and human[key].endswith("B") for key in ("indexSize", "usedIndexSize")
    )

    internal = http.get(f"/indexes/{index_uid}/stats", params={"showInternalDatabaseSizes": "true"}).json()
    keys = list(internal)
    assert keys[: keys.index("isIndexing") + 2] == [*INDEX_STATS_KEYS[:6], "internalDatabaseSizes"]
    assert isinstance(internal["internalDatabaseSizes"], dict)


def test_index_stats_errors(http: httpx.Client, index_uid: str) -> None:
    r = http.get(f"/indexes/{index_uid}/stats")
    assert r.status_code == 404
    assert r.json() == error("index_not_found", f"Index `{index_uid}` not found.")
    add_documents(http, index_uid, [{"id": 1}])
    for path in (f"/indexes/{index_uid}/stats", "/stats"):
        r = http.get(path, params={"showInternalDatabaseSizes": "doggo"})
        assert r.status_code == 400
        assert r.json() == error(
            "invalid_stats_show_internal_database_sizes",
            "Invalid value in parameter `showInternalDatabaseSizes`: could not parse `doggo` as a boolean, "
            "expected either `true` or `false`",
        )


def test_global_stats(http: httpx.Client, index_uid: str) -> None:
    first, second = f"{index_uid}_b", f"{index_uid}_a"
    add_documents(http, first, [{"id": 1, "name": "Alexey"}, {"id": 2, "age": 45}])
    add_documents(http, second, [{"id": 1}])
    body = http.get("/stats").json()
    assert list(body) == ["databaseSize", "usedDatabaseSize", "lastUpdate", "indexes"]
    assert isinstance(body["databaseSize"], int)
    assert 0 < body["usedDatabaseSize"] <= body["databaseSize"]
    names = list(body["indexes"])
    assert names == sorted(names)
    assert body["indexes"][first] == http.get(f"/indexes/{first}/stats").json()
    assert list(body["indexes"][second]) == INDEX_STATS_KEYS
    assert body["indexes"][second]["numberOfDocuments"] == 1
    # lastUpdate is the newest `updatedAt` of the indexes
    assert DATE_RE.fullmatch(body["lastUpdate"])
    updated = [http.get(f"/indexes/{uid}").json()["updatedAt"] for uid in names]
    assert body["lastUpdate"] == max(updated, key=to_ns)


def test_last_update_ignores_tasks_that_touch_no_index(http: httpx.Client, index_uid: str) -> None:
    task = add_documents(http, index_uid, [{"id": 1}])
    before = http.get("/stats").json()["lastUpdate"]
    wait_task(http, http.post(f"/tasks/cancel?uids={task['uid']}").json()["taskUid"])
    failed = wait_task(http, http.delete(f"/indexes/{index_uid}_missing").json()["taskUid"])
    assert failed["status"] == "failed"
    assert http.get("/stats").json()["lastUpdate"] == before


def test_stats_with_more_indexes_than_open_environments(production: httpx.Client) -> None:
    # More indexes than the mapper keeps open at once (100): every one must still be reported.
    names = [f"many_{i:03d}" for i in range(101)]
    last = 0
    for name in names:
        last = production.post("/indexes", json={"uid": name}).json()["taskUid"]
    assert wait_task(production, last, timeout=60)["status"] == "succeeded"
    r = production.get("/stats")
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body["indexes"]) == names
    assert all(stats["numberOfDocuments"] == 0 for stats in body["indexes"].values())
    assert production.get(f"/indexes/{names[0]}/stats").status_code == 200
