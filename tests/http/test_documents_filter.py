"""Documents by filter against a real server: browse with `filter`/`sort` (GET and POST), and
`POST /documents/delete` (a `documentDeletion` task), with the expectations of Meilisearch's
`tests/documents/{delete_documents,errors,get_documents}.rs`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests import datasets
from tests.conftest import wait_task

LINK = "https://docs.meilisearch.com/errors#"


def error(code: str, message: str) -> dict[str, str]:
    return {"message": message, "code": code, "type": "invalid_request", "link": LINK + code}


def task_of(http: httpx.Client, res: httpx.Response) -> dict[str, Any]:
    assert res.status_code == 202, res.text
    return wait_task(http, res.json()["taskUid"])


def ok(http: httpx.Client, res: httpx.Response) -> dict[str, Any]:
    task = task_of(http, res)
    assert task["status"] == "succeeded", task
    return task


def ids(body: dict[str, Any]) -> list[Any]:
    return [d["id"] for d in body["results"]]


COLORED = [{"id": 0, "color": "red"}, {"id": 1, "color": "blue"}, {"id": 2, "color": "blue"}, {"id": 3}]


def test_delete_by_filter(http: httpx.Client, index_uid: str) -> None:
    ok(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["color"]}))
    ok(http, http.post(f"/indexes/{index_uid}/documents?primaryKey=id", json=COLORED))
    res = http.post(f"/indexes/{index_uid}/documents/delete", json={"filter": "color = blue"})
    assert res.json()["type"] == "documentDeletion" and res.json()["status"] == "enqueued"
    task = ok(http, res)
    assert task["details"] == {"providedIds": 0, "deletedDocuments": 2, "originalFilter": '"color = blue"'}
    assert ids(http.get(f"/indexes/{index_uid}/documents").json()) == [0, 3]
    stats = http.get(f"/indexes/{index_uid}/stats").json()
    assert stats["numberOfDocuments"] == 2 and stats["fieldDistribution"] == {"color": 1, "id": 2}
    task = ok(http, http.post(f"/indexes/{index_uid}/documents/delete", json={"filter": "color NOT EXISTS"}))
    assert task["details"] == {
        "providedIds": 0,
        "deletedDocuments": 1,
        "originalFilter": '"color NOT EXISTS"',
    }
    assert http.get(f"/indexes/{index_uid}/documents").json()["results"] == [{"id": 0, "color": "red"}]


def test_delete_by_complex_filter(http: httpx.Client, index_uid: str) -> None:
    ok(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["color"]}))
    ok(
        http,
        http.post(
            f"/indexes/{index_uid}/documents?primaryKey=id",
            json=[*COLORED[:3], {"id": 3, "color": "green"}, {"id": 4}],
        ),
    )
    task = ok(
        http,
        http.post(
            f"/indexes/{index_uid}/documents/delete",
            json={"filter": ["color != red", "color != green", "color EXISTS"]},
        ),
    )
    assert task["details"] == {
        "providedIds": 0,
        "deletedDocuments": 2,
        "originalFilter": '["color != red","color != green","color EXISTS"]',
    }
    assert ids(http.get(f"/indexes/{index_uid}/documents").json()) == [0, 3, 4]
    task = ok(
        http,
        http.post(
            f"/indexes/{index_uid}/documents/delete", json={"filter": [["color = green", "color NOT EXISTS"]]}
        ),
    )
    assert task["details"]["deletedDocuments"] == 2
    assert task["details"]["originalFilter"] == '[["color = green","color NOT EXISTS"]]'
    # the deleted documents are gone from the facet structures too
    body = http.post(f"/indexes/{index_uid}/search", json={"facets": ["color"]}).json()
    assert body["facetDistribution"] == {"color": {"red": 1}}


def test_delete_by_filter_errors(http: httpx.Client, index_uid: str) -> None:
    url = f"/indexes/{index_uid}/documents/delete"
    res = http.post(url, json={"filter": True})
    assert res.status_code == 400 and res.json() == error(
        "invalid_document_filter",
        "Invalid syntax for the filter parameter: `expected String, Array, found: true`.",
    )
    res = http.post(url, json={"filter": "hello"})
    assert res.status_code == 400 and res.json()["code"] == "invalid_document_filter"
    assert res.json()["message"].endswith("at `hello`.\n1:6 hello")
    empties: list[Any] = ["", "  ", [], [[]]]
    for empty in empties:
        res = http.post(url, json={"filter": empty})
        assert res.status_code == 400 and res.json() == error(
            "invalid_document_filter", "Sending an empty filter is forbidden."
        )
    res = http.post(url, json={})
    assert res.status_code == 400 and res.json() == error("missing_document_filter", "Missing field `filter`")
    res = http.post(url, json={"filter": "a = 1", "doggo": 1})
    assert res.status_code == 400 and res.json()["code"] == "bad_request"
    res = http.post(url, json={"filter": "a CONTAINS b"})
    assert res.status_code == 400 and res.json()["code"] == "feature_not_enabled"
    # the index does not exist: the task fails
    task = task_of(http, http.post(url, json={"filter": "doggo = bernese"}))
    assert task["status"] == "failed" and task["error"]["code"] == "index_not_found"
    assert task["details"] == {"providedIds": 0, "deletedDocuments": 0, "originalFilter": '"doggo = bernese"'}
    # attributes are checked when the task runs
    ok(http, http.post("/indexes", json={"uid": index_uid}))
    task = task_of(http, http.post(url, json={"filter": "doggo = bernese"}))
    assert task["status"] == "failed"
    assert task["error"] == error(
        "invalid_document_filter",
        f"Index `{index_uid}`: Attribute `doggo` is not filterable. This index does not "
        "have configured filterable attributes.\n1:6 doggo = bernese",
    )


def test_delete_by_filter_after_additions_in_one_batch(http: httpx.Client, index_uid: str) -> None:
    ok(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["color"]}))
    # enqueued together, these may run in one batch: the deletion must see the additions
    first = http.post(f"/indexes/{index_uid}/documents?primaryKey=id", json=COLORED)
    second = http.post(f"/indexes/{index_uid}/documents/delete", json={"filter": "color = blue"})
    task_of(http, first)
    assert ok(http, second)["details"]["deletedDocuments"] == 2


def test_browse_with_filter(http: httpx.Client, index_uid: str) -> None:
    ok(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["color", "id"]}))
    ok(http, http.post(f"/indexes/{index_uid}/documents?primaryKey=id", json=COLORED))
    url = f"/indexes/{index_uid}/documents"
    body = http.get(url, params={"filter": "color = blue"}).json()
    assert body == {
        "results": [{"id": 1, "color": "blue"}, {"id": 2, "color": "blue"}],
        "offset": 0,
        "limit": 20,
        "total": 2,
    }
    assert ids(http.get(url, params={"filter": '["color = blue", "id > 1"]'}).json()) == [2]
    body = http.post(
        f"{url}/fetch",
        json={"filter": ["color EXISTS", ["color = red", "color = blue"]], "limit": 1, "offset": 1},
    ).json()
    assert body == {"results": [{"id": 1, "color": "blue"}], "offset": 1, "limit": 1, "total": 3}
    assert ids(http.post(f"{url}/fetch", json={"filter": "color != blue", "ids": [0, 1, 3]}).json()) == [0, 3]
    res = http.post(f"{url}/fetch", json={"filter": "doggo = bernese"})
    assert res.status_code == 400 and res.json() == error(
        "invalid_document_filter",
        "Attribute `doggo` is not filterable. Available filterable attribute patterns "
        "are: `color`, `id`.\n1:6 doggo = bernese",
    )
    res = http.post(f"{url}/fetch", json={"filter": "cool doggo"})
    assert res.status_code == 400 and res.json()["code"] == "invalid_document_filter"
    res = http.post(f"{url}/fetch", json={"filter": True})
    assert (
        res.json()["message"]
        == "Invalid syntax for the filter parameter: `expected String, Array, found: true`."
    )


def test_browse_sorted(http: httpx.Client, index_uid: str) -> None:
    documents = datasets.load_json("meilisearch/meili_test_set.json")
    ok(http, http.post(f"/indexes/{index_uid}/documents", json=documents))
    url = f"/indexes/{index_uid}/documents"
    res = http.get(url, params={"fields": "id,name", "sort": "name:asc"})
    assert res.status_code == 400 and res.json() == error(
        "invalid_document_sort",
        "Attribute `name` is not sortable. This index does not have configured sortable attributes.",
    )
    ok(
        http,
        http.patch(
            f"/indexes/{index_uid}/settings", json={"sortableAttributes": ["age", "email", "gender", "name"]}
        ),
    )
    body = http.post(
        f"{url}/fetch", json={"fields": ["id", "age", "email"], "sort": ["age:asc", "email:desc"]}
    ).json()
    assert ids(body) == [5, 6, 57, 45, 40, 41, 63, 50, 44, 56, 51, 60, 70, 75, 68, 17, 76, 43, 12, 9]
    assert body["results"][0] == {"id": 5, "age": 20, "email": "warrenwatson@chorizon.com"}
    assert body["total"] == 77
    body = http.get(url, params={"fields": "id,gender,name", "sort": "gender:asc,name:asc"}).json()
    assert ids(body) == [3, 12, 68, 15, 36, 23, 53, 71, 65, 33, 1, 38, 7, 76, 73, 75, 16, 62, 20, 42]
    # against a plain sort of the file: descending age, ties by internal id
    body = http.post(f"{url}/fetch", json={"sort": ["age:desc"], "limit": 77, "fields": ["id", "age"]}).json()
    expected = [d["id"] for d in sorted(documents, key=lambda d: -d["age"])]
    assert ids(body) == expected
    res = http.get(url, params={"sort": "age"})
    assert res.status_code == 400 and res.json()["code"] == "invalid_document_sort"


def test_browse_geo_sorted(http: httpx.Client, index_uid: str) -> None:
    documents = [
        {"id": 1, "name": "Taco Truck", "_geo": {"lat": 34.0522, "lng": -118.2437}},
        {"id": 2, "name": "La Bella Italia", "_geo": {"lat": "45.4777599", "lng": "9.1967508"}},
        {"id": 3, "name": "Crêpe Truck"},
    ]
    ok(http, http.patch(f"/indexes/{index_uid}/settings", json={"sortableAttributes": ["_geo"]}))
    ok(http, http.post(f"/indexes/{index_uid}/documents", json=documents))
    body = http.get(
        f"/indexes/{index_uid}/documents", params={"sort": "_geoPoint(45.4777599, 9.1967508):asc"}
    ).json()
    assert ids(body) == [2, 1, 3]
    assert "_geoDistance" not in body["results"][0]  # browsing does not add it


@pytest.mark.parametrize(
    "payload",
    [
        [{"id": "11", "_geo": "foobar"}],
        [{"id": "1", "_geo": {"lat": 1, "lng": 2}}, {"id": "11", "_geo": {"lat": 1}}],
    ],
)
def test_invalid_geo_fails_the_whole_task(
    http: httpx.Client, index_uid: str, payload: list[dict[str, Any]]
) -> None:
    ok(http, http.patch(f"/indexes/{index_uid}/settings", json={"filterableAttributes": ["_geo"]}))
    task = task_of(http, http.post(f"/indexes/{index_uid}/documents", json=payload))
    assert task["status"] == "failed" and task["error"]["code"] == "invalid_document_geo_field"
    assert task["error"]["message"].startswith(f"Index `{index_uid}`: ")
    assert '`"11"`' in task["error"]["message"]
    assert task["details"]["indexedDocuments"] == 0
    assert http.get(f"/indexes/{index_uid}/documents").json()["total"] == 0
