"""Instance routes on real servers: `/experimental-features` (defaults, PATCH, persistence, CLI-forced
features), `/metrics` (Prometheus text), `/logs/stderr` and `/logs/stream`, `POST /indexes/{uid}/fields`,
`POST /indexes/{uid}/compact` (a dense rebuild of the index's LMDB file) and the `X-Hanzo-Wait-For-Task` read-after-write
header.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task
from tests.http.test_search_route import DOCUMENTS, NESTED_DOCUMENTS, make_index

LINK = "https://docs.meilisearch.com/errors#"
FEATURES = {
    "metrics": False,
    "logsRoute": False,
    "editDocumentsByFunction": False,
    "containsFilter": False,
    "dynamicSearchRules": False,
    "network": False,
    "getTaskDocumentsRoute": False,
    "taskQueueCompactionRoute": False,
    "compositeEmbedders": False,
    "chatCompletions": False,
    "multimodal": False,
    "foreignKeys": False,
    "disableDocumentsFetchQueue": False,
    "legacySearch": False,
    "renderRoute": False,
}
SIZE = re.compile(r"\d+(\.\d+)? (B|KB|KiB|MB|MiB|GB|GiB)")


def error(code: str, message: str) -> dict[str, str]:
    return {"message": message, "code": code, "type": "invalid_request", "link": LINK + code}


def fails(res: httpx.Response, status: int, code: str, message: str) -> None:
    assert (res.status_code, res.json()) == (status, error(code, message)), res.text


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server of this module only: experimental features are instance-wide state."""
    srv = ServerProcess(tmp_path_factory.mktemp("instance") / "data.ms").start()
    yield srv
    srv.stop()


@pytest.fixture
def api(own: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=own.url, timeout=30) as client:
        yield client


# -- experimental features ---------------------------------------------------------------------------


def test_features_defaults_patch_and_persistence(own: ServerProcess) -> None:
    with httpx.Client(base_url=own.url, timeout=30) as api:
        res = api.get("/experimental-features")
        assert (res.status_code, res.json()) == (200, FEATURES)
        assert list(res.json()) == list(FEATURES)
        res = api.patch("/experimental-features", json={"network": True, "metrics": None})
        assert (res.status_code, res.json()) == (200, {**FEATURES, "network": True})
        assert api.patch("/experimental-features", json={}).json() == {**FEATURES, "network": True}
    own.stop()
    own.start()
    with httpx.Client(base_url=own.url, timeout=30) as api:
        assert api.get("/experimental-features").json() == {**FEATURES, "network": True}
        assert api.patch("/experimental-features", json={"network": False}).json() == FEATURES


def test_features_patch_errors(api: httpx.Client) -> None:
    accepted = ", ".join(f"`{name}`" for name in FEATURES)
    fails(
        api.patch("/experimental-features", json={"metric": True}),
        400,
        "bad_request",
        f"Unknown field `metric`: did you mean `metrics`? expected one of {accepted}",
    )
    fails(
        api.patch("/experimental-features", json={"metrics": "yes"}),
        400,
        "bad_request",
        'Invalid value type at `.metrics`: expected a boolean, but found a string: `"yes"`',
    )
    fails(
        api.patch("/experimental-features", json=[]),
        400,
        "bad_request",
        "Invalid value type: expected an object, but found an array: `[]`",
    )


def test_cli_flags_force_features(tmp_path: Path) -> None:
    srv = ServerProcess(
        tmp_path / "data.ms",
        extra_args=[
            "--experimental-enable-metrics",
            "--experimental-enable-logs-route",
            "--experimental-contains-filter",
            "--experimental-legacy-search-default",
        ],
    ).start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as api:
            forced = {
                **FEATURES,
                "metrics": True,
                "logsRoute": True,
                "containsFilter": True,
                "legacySearch": True,
            }
            assert api.get("/experimental-features").json() == forced
            # CLI-forced features stay on; the legacy-search flag is only a default
            off = {"metrics": False, "logsRoute": False, "containsFilter": False, "legacySearch": False}
            assert api.patch("/experimental-features", json=off).json() == {**forced, "legacySearch": False}
            assert api.get("/metrics").status_code == 200
    finally:
        srv.stop()


# -- metrics -----------------------------------------------------------------------------------------


def _samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_metrics(api: httpx.Client, index_uid: str) -> None:
    fails(
        api.get("/metrics"),
        400,
        "feature_not_enabled",
        "Getting metrics requires enabling the `metrics` "
        "experimental feature. See https://github.com/meilisearch/product/discussions/625",
    )
    make_index(api, index_uid, DOCUMENTS)
    api.patch("/experimental-features", json={"metrics": True})
    try:
        for _ in range(3):
            assert api.post(f"/indexes/{index_uid}/search", json={"q": "glass"}).status_code == 200
        assert api.post("/indexes/metrics_missing/search", json={}).status_code == 404
        res = api.get("/metrics")
        assert res.status_code == 200
        assert res.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        text = res.text
        assert "# TYPE meilisearch_http_requests_total counter" in text
        assert "# TYPE meilisearch_http_response_time_seconds histogram" in text
        samples = _samples(text)
        search = 'method="POST",path="/indexes/{index_uid}/search"'
        assert samples[f'meilisearch_http_requests_total{{{search},status="200"}}'] == 3
        assert samples[f'meilisearch_http_requests_total{{{search},status="404"}}'] == 1
        assert samples[f"meilisearch_http_response_time_seconds_count{{{search}}}"] == 4
        buckets = [
            v
            for k, v in samples.items()
            if k.startswith(f"meilisearch_http_response_time_seconds_bucket{{{search}")
        ]
        assert buckets == sorted(buckets) and buckets[-1] == 4  # cumulative, `+Inf` counts every request
        assert samples[f'meilisearch_index_docs_count{{index="{index_uid}"}}'] == len(DOCUMENTS)
        assert samples[f'meilisearch_index_size_bytes{{index="{index_uid}"}}'] > 0
        assert samples['meilisearch_nb_tasks{kind="statuses",value="succeeded"}'] >= 1
        assert samples['meilisearch_nb_tasks{kind="statuses",value="enqueued"}'] == 0
        assert samples[f'meilisearch_nb_tasks{{kind="indexes",value="{index_uid}"}}'] == 1
        assert samples["meilisearch_index_count"] >= 1
        assert samples["meilisearch_search_queue_size"] == 1000
        assert samples["meilisearch_searches_running"] == 0
        # unmatched paths are not recorded: their label set would be unbounded
        assert api.get("/no/such/route").status_code == 404
        assert "/no/such/route" not in api.get("/metrics").text
    finally:
        api.patch("/experimental-features", json={"metrics": False})


# -- logs --------------------------------------------------------------------------------------------


def test_logs_routes_need_the_feature(api: httpx.Client) -> None:
    message = (
        "Modifying logs through the `/logs/*` routes requires enabling the `logs route` experimental "
        "feature. See https://github.com/orgs/meilisearch/discussions/721"
    )
    fails(api.post("/logs/stderr", json={"target": "info"}), 400, "feature_not_enabled", message)
    fails(api.post("/logs/stream", json={}), 400, "feature_not_enabled", message)
    fails(api.delete("/logs/stream"), 400, "feature_not_enabled", message)
    fails(
        api.post("/logs/stream", json={"mode": "fancy"}),
        400,
        "bad_request",
        "Unknown value `fancy` at `.mode`: expected one of `human`, `json`, `profile`",
    )


def test_logs_stderr_and_stream(api: httpx.Client, own: ServerProcess) -> None:
    api.patch("/experimental-features", json={"logsRoute": True})
    try:
        assert api.post("/logs/stderr", json={"target": "hanzo_engine=debug,uvicorn=off"}).status_code == 204
        fails(
            api.post("/logs/stderr", json={"target": "hanzo_engine=loud"}),
            400,
            "bad_request",
            'Invalid value at `.target`: error parsing level filter: expected one of "off", "error", "warn", '
            '"info", "debug", "trace", or a number 0-5',
        )
        lines: list[str] = []
        opened = threading.Event()

        def stream() -> None:
            with (
                httpx.Client(base_url=own.url, timeout=30) as client,
                client.stream(
                    "POST", "/logs/stream", json={"target": "hanzo_engine.http=debug", "mode": "json"}
                ) as res,
            ):
                assert res.status_code == 200
                opened.set()
                for line in res.iter_lines():
                    lines.append(line)

        reader = threading.Thread(target=stream)
        reader.start()
        assert opened.wait(10)
        fails(
            api.post("/logs/stream", json={}),
            400,
            "bad_request",
            "The `/logs/stream` route is currently in use by someone else.",
        )
        deadline = time.monotonic() + 10
        while not any("/version" in line for line in lines) and time.monotonic() < deadline:
            api.get("/version")
            time.sleep(0.05)
        assert api.delete("/logs/stream").status_code == 204
        reader.join(10)
        assert not reader.is_alive()  # DELETE ended the stream
        line = next(line for line in lines if "/version" in line)
        assert '"level": "DEBUG"' in line and '"target": "hanzo_engine.http"' in line
        # the route is free again
        with (
            httpx.Client(base_url=own.url, timeout=5) as client,
            client.stream("POST", "/logs/stream", json={}) as res,
        ):
            assert res.status_code == 200
    finally:
        api.post("/logs/stderr", json={"target": "info"})
        api.delete("/logs/stream")
        api.patch("/experimental-features", json={"logsRoute": False})


# -- fields ------------------------------------------------------------------------------------------


def _field(name: str, **overrides: Any) -> dict[str, Any]:
    field = {
        "name": name,
        "displayed": {"enabled": True},
        "searchable": {"enabled": True},
        "sortable": {"enabled": False},
        "distinct": {"enabled": False},
        "rankingRule": {"enabled": False},
        "filterable": {
            "enabled": False,
            "sortBy": "alpha",
            "facetSearch": False,
            "equality": False,
            "comparison": False,
        },
        "localized": {"locales": []},
    }
    field.update(overrides)
    return field


def test_fields(api: httpx.Client, index_uid: str) -> None:
    make_index(
        api,
        index_uid,
        NESTED_DOCUMENTS,
        settings={
            "displayedAttributes": ["id", "father", "doggos"],
            "searchableAttributes": ["father", "doggos.name"],
            "sortableAttributes": ["mother"],
            "distinctAttribute": "id",
            "filterableAttributes": [
                "father",
                {
                    "attributePatterns": ["dog*"],
                    "features": {"facetSearch": True, "filter": {"equality": True, "comparison": True}},
                },
            ],
            "rankingRules": [
                "words",
                "typo",
                "proximity",
                "attributeRank",
                "sort",
                "wordPosition",
                "exactness",
                "id:desc",
            ],
            "faceting": {"sortFacetValuesBy": {"*": "alpha", "father": "count"}},
            "localizedAttributes": [{"attributePatterns": ["cattos"], "locales": ["fra"]}],
        },
    )
    res = api.post(f"/indexes/{index_uid}/fields", json={})
    assert res.status_code == 200, res.text
    body = res.json()
    by_name = {f["name"]: f for f in body["results"]}
    assert body["total"] == len(body["results"]) and (body["offset"], body["limit"]) == (0, 20)
    assert by_name["id"] == _field(
        "id",
        searchable={"enabled": False},
        distinct={"enabled": True},
        rankingRule={"enabled": True, "order": "desc"},
    )
    assert by_name["father"] == _field(
        "father",
        filterable={
            "enabled": True,
            "sortBy": "count",
            "facetSearch": True,
            "equality": True,
            "comparison": True,
        },
    )
    assert by_name["mother"] == _field(
        "mother", displayed={"enabled": False}, searchable={"enabled": False}, sortable={"enabled": True}
    )
    assert by_name["cattos"] == _field(
        "cattos", displayed={"enabled": False}, searchable={"enabled": False}, localized={"locales": ["fra"]}
    )
    assert by_name["doggos"]["filterable"] == {
        "enabled": True,
        "sortBy": "alpha",
        "facetSearch": True,
        "equality": True,
        "comparison": True,
    }
    assert by_name["doggos"]["searchable"] == {"enabled": False}  # only `doggos.name` is searchable
    names = [f["name"] for f in body["results"]]
    assert names[:5] == ["id", "father", "mother", "doggos", "cattos"]

    def listed(payload: dict[str, Any]) -> list[str]:
        res = api.post(f"/indexes/{index_uid}/fields", json=payload)
        assert res.status_code == 200, res.text
        return [f["name"] for f in res.json()["results"]]

    assert listed({"filter": {"sortable": True}}) == ["mother"]
    assert listed({"filter": {"rankingRule": True, "displayed": True}}) == ["id"]
    assert listed({"filter": {"attributePatterns": ["*er"]}}) == ["father", "mother"]
    assert listed({"filter": {"attributePatterns": ["doggos.name"]}}) == [
        n for n in names if n == "doggos.name"
    ]
    assert listed({"offset": 1, "limit": 2}) == names[1:3]
    fails(
        api.post(f"/indexes/{index_uid}/fields", json={"limit": -1}),
        400,
        "invalid_index_limit",
        "Invalid value type at `.limit`: expected a positive integer, but found a negative integer: `-1`",
    )
    fails(
        api.post(f"/indexes/{index_uid}/fields", json={"filter": {"shown": True}}),
        400,
        "invalid_index_fields_filter",
        "Unknown field `shown` inside `.filter`: expected one of "
        "`attributePatterns`, `displayed`, `searchable`, `sortable`, `distinct`, `rankingRule`, `filterable`",
    )
    fails(
        api.post(f"/indexes/{index_uid}/fields", json={"filter": {"sortable": 1}}),
        400,
        "invalid_index_fields_filter_sortable",
        "Invalid value type at `.filter.sortable`: expected a boolean, but found a positive integer: `1`",
    )
    fails(
        api.post("/indexes/fields_missing/fields", json={}),
        404,
        "index_not_found",
        "Index `fields_missing` not found.",
    )


# -- compaction --------------------------------------------------------------------------------------


COMPACT_SETTINGS = {"filterableAttributes": ["genre", "year"], "sortableAttributes": ["year"]}
GENRES = ["drama", "comedy", "action", "horror"]


def compact_doc(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "text": f"document number {i} " * 10 + f"word{i % 97} tail{i % 13}",
        "genre": GENRES[i % 4],
        "year": 1950 + i % 70,
    }


SIZE_UNITS = {"B": 1, "KB": 1e3, "KiB": 1024, "MB": 1e6, "MiB": 1 << 20, "GB": 1e9, "GiB": 1 << 30}


def byte_size(text: str) -> float:
    number, unit = text.split()
    return float(number) * SIZE_UNITS[unit]


def compact(api: httpx.Client, uid: str) -> tuple[float, float]:
    """`POST /indexes/{uid}/compact`; the index file's size before and after, from the task details."""
    res = api.post(f"/indexes/{uid}/compact")
    assert res.status_code == 202
    summary = res.json()
    assert list(summary) == ["taskUid", "indexUid", "status", "type", "enqueuedAt"]
    assert (summary["indexUid"], summary["status"], summary["type"]) == (uid, "enqueued", "indexCompaction")
    task = wait_task(api, summary["taskUid"])
    assert task["status"] == "succeeded", task
    assert list(task["details"]) == ["preCompactionSize", "postCompactionSize"]
    before, after = task["details"]["preCompactionSize"], task["details"]["postCompactionSize"]
    assert SIZE.fullmatch(before) and SIZE.fullmatch(after)
    return byte_size(before), byte_size(after)


def result_of(body: dict[str, Any]) -> dict[str, Any]:
    """A search response without what differs on every request (`processingTimeMs`, `requestUid`)."""
    assert isinstance(body.pop("processingTimeMs"), int)
    body.pop("requestUid", None)  # search responses carry one, facet-search responses do not
    return body


def observable(api: httpx.Client, uid: str) -> dict[str, Any]:
    """Every response body a client can see of the index (the storage-size figures of the stats aside)."""

    def ok(res: httpx.Response) -> Any:
        assert res.status_code == 200, res.text
        return res.json()

    stats = ok(api.get(f"/indexes/{uid}/stats"))
    sizes = {key: stats.pop(key) for key in ("rawDocumentDbSize", "avgDocumentSize")}
    for key in ("indexSize", "usedIndexSize"):  # the file's pages depend on the write history
        stats.pop(key)
    searches = [
        {"q": "number", "limit": 1000, "showRankingScore": True, "showRankingScoreDetails": True},
        {
            "q": "document word7",
            "filter": "genre = drama AND year > 1990",
            "sort": ["year:desc"],
            "facets": ["genre", "year"],
            "attributesToHighlight": ["text"],
            "showRankingScoreDetails": True,
        },
        {"q": "tail3", "attributesToCrop": ["text"], "cropLength": 5, "showMatchesPosition": True},
        {"q": "", "filter": "year 1960 TO 1980", "sort": ["year:asc"], "hitsPerPage": 30, "page": 2},
        {"q": "nomatch"},
    ]
    return {
        "index": ok(api.get(f"/indexes/{uid}")),
        "settings": ok(api.get(f"/indexes/{uid}/settings")),
        "stats": stats,
        "sizes": sizes,
        "documents": ok(api.get(f"/indexes/{uid}/documents", params={"limit": 10_000})),
        "fetched": ok(
            api.post(f"/indexes/{uid}/documents/fetch", json={"filter": "genre = comedy", "limit": 1000})
        ),
        "one": ok(api.get(f"/indexes/{uid}/documents/2990")),
        "searches": [result_of(ok(api.post(f"/indexes/{uid}/search", json=body))) for body in searches],
        "facets": result_of(
            ok(api.post(f"/indexes/{uid}/facet-search", json={"facetName": "genre", "facetQuery": "dra"}))
        ),
    }


def test_compact(api: httpx.Client, index_uid: str) -> None:
    everything = [compact_doc(i) for i in range(3000)]
    make_index(api, index_uid, everything, settings=COMPACT_SETTINGS)
    # 90% deleted, scattered (every document but one in ten), so the B-tree leaves stay half empty
    deleted = [doc["id"] for doc in everything if doc["id"] % 10]
    res = api.post(f"/indexes/{index_uid}/documents/delete-batch", json=deleted)
    assert wait_task(api, res.json()["taskUid"])["status"] == "succeeded"
    seen = observable(api, index_uid)
    assert seen["stats"]["numberOfDocuments"] == 300
    before, after = compact(api, index_uid)
    assert after < before / 2
    # the compacted index serves exactly the same documents, searches and settings
    compacted = observable(api, index_uid)
    assert compacted["sizes"]["rawDocumentDbSize"] <= seen["sizes"]["rawDocumentDbSize"]
    del seen["sizes"], compacted["sizes"]
    assert compacted == seen
    # and it is about as small as an index built from the survivors alone (LMDB's own compacting copy,
    # which keeps the half-empty pages, is over 2x here)
    fresh_uid = make_index(
        api, f"{index_uid}_fresh", [compact_doc(i) for i in range(0, 3000, 10)], settings=COMPACT_SETTINGS
    )
    fresh, fresh_compacted = compact(api, fresh_uid)
    assert after <= 1.5 * fresh, (after, fresh)
    assert fresh_compacted <= fresh
    # and still takes writes
    res = api.post(f"/indexes/{index_uid}/documents", json=[{"id": 1, "text": "back"}])
    assert wait_task(api, res.json()["taskUid"])["status"] == "succeeded"
    assert api.get(f"/indexes/{index_uid}/documents/1").json() == {"id": 1, "text": "back"}
    assert api.post(f"/indexes/{index_uid}/search", json={"q": "back"}).json()["hits"] == [
        {"id": 1, "text": "back"}
    ]


def test_compact_errors(api: httpx.Client) -> None:
    res = api.post("/indexes/compact_missing/compact")
    task = wait_task(api, res.json()["taskUid"])
    assert (task["status"], task["error"]) == (
        "failed",
        error("index_not_found", "Index `compact_missing` not found."),
    )
    assert task["details"] == {}
    fails(
        api.post("/indexes/h%C3%A9/compact"),
        400,
        "invalid_index_uid",
        "`hé` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric "
        "characters, hyphens (-) and underscores (_), and can not be more than 512 bytes.",
    )


# -- read-after-write --------------------------------------------------------------------------------


def test_wait_for_task_header(api: httpx.Client, index_uid: str) -> None:
    res = api.post(
        f"/indexes/{index_uid}/documents",
        json=[{"id": 1, "title": "read after write"}],
        headers={"X-Hanzo-Wait-For-Task": "30000"},
    )
    assert res.status_code == 202
    assert res.headers["x-hanzo-task-status"] == "succeeded"
    body = res.json()
    assert list(body) == ["taskUid", "indexUid", "status", "type", "enqueuedAt"]
    assert body["status"] == "enqueued"  # the normal summarized task, so SDKs keep working
    hits = api.post(f"/indexes/{index_uid}/search", json={"q": "read after"}).json()["hits"]
    assert hits == [{"id": 1, "title": "read after write"}]
    res = api.post(
        f"/indexes/{index_uid}/documents",
        json=[{"id": "bad id!"}],
        headers={"X-Hanzo-Wait-For-Task": "30000"},
    )
    assert (res.status_code, res.headers["x-hanzo-task-status"]) == (202, "failed")
    # a zero timeout answers at once with whatever status the task has
    res = api.delete(f"/indexes/{index_uid}/documents/1", headers={"X-Hanzo-Wait-For-Task": "0"})
    assert res.status_code == 202
    assert res.headers["x-hanzo-task-status"] in ("enqueued", "processing", "succeeded")
    # other answers are untouched
    res = api.get(f"/indexes/{index_uid}", headers={"X-Hanzo-Wait-For-Task": "100"})
    assert res.status_code == 200 and "x-hanzo-task-status" not in res.headers
    fails(
        api.post(f"/indexes/{index_uid}/documents", json=[], headers={"X-Hanzo-Wait-For-Task": "soon"}),
        400,
        "bad_request",
        "The `X-Hanzo-Wait-For-Task` header must be a number of milliseconds between 0 and 600000, "
        "found `soon`.",
    )


def test_wait_for_task_with_the_official_sdk(own: ServerProcess, index_uid: str) -> None:
    import meilisearch

    client = meilisearch.Client(own.url, custom_headers={"X-Hanzo-Wait-For-Task": "30000"})
    info = client.index(index_uid).add_documents([{"id": 7, "text": "written then read"}])
    assert info.status == "enqueued" and info.task_uid >= 0  # the SDK parses the usual summarized task
    assert client.index(index_uid).search("written")["hits"] == [{"id": 7, "text": "written then read"}]
    assert client.get_task(info.task_uid).status == "succeeded"
