"""Error answers of the index routes, compared field by field with Meilisearch's.

Expected bodies come from Meilisearch's own integration tests (`tests/index/errors.rs`,
`tests/index/create_index.rs`, `tests/index/update_index.rs`, `tests/index/rename_index.rs`,
`tests/swap_indexes/errors.rs`) and its route code. Synchronous errors must leave no task behind;
asynchronous ones are checked on the failed task, `details` counters included.
"""

from __future__ import annotations

import gzip
from typing import Any

import httpx
import pytest

from tests.conftest import wait_task

LINK = "https://docs.meilisearch.com/errors#"
JSON = {"Content-Type": "application/json"}
UID_RULE = (
    "is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric "
    "characters, hyphens (-) and underscores (_), and can not be more than 512 bytes."
)


def error(code: str, message: str, type_: str = "invalid_request") -> dict[str, str]:
    return {"message": message, "code": code, "type": type_, "link": LINK + code}


def task_count(http: httpx.Client) -> int:
    total: int = http.get("/tasks", params={"limit": 0}).json()["total"]
    return total


def assert_rejected(
    http: httpx.Client, response: httpx.Response, status: int, body: dict[str, str], tasks_before: int
) -> None:
    """A synchronous refusal: exact status and body, JSON content type, and no task registered."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == body
    assert task_count(http) == tasks_before


def create(http: httpx.Client, uid: str, primary_key: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"uid": uid}
    if primary_key is not None:
        body["primaryKey"] = primary_key
    res = http.post("/indexes", json=body)
    assert res.status_code == 202, res.text
    return wait_task(http, res.json()["taskUid"])


def failed_task_view(task: dict[str, Any]) -> dict[str, Any]:
    """The part of a finished task that is deterministic (dates and durations dropped)."""
    assert task["status"] == "failed", task
    for key in ("duration", "enqueuedAt", "startedAt", "finishedAt"):
        assert isinstance(task[key], str)
    return {
        k: v
        for k, v in task.items()
        if k not in ("uid", "batchUid", "duration", "enqueuedAt", "startedAt", "finishedAt")
    }


# -- GET /indexes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "body"),
    [
        (
            "offset=doggo",
            error(
                "invalid_index_offset",
                "Invalid value in parameter `offset`: could not parse `doggo` as a positive integer",
            ),
        ),
        (
            "offset=-1",
            error(
                "invalid_index_offset",
                "Invalid value in parameter `offset`: could not parse `-1` as a positive integer",
            ),
        ),
        (
            "offset=",
            error(
                "invalid_index_offset",
                "Invalid value in parameter `offset`: could not parse `` as a positive integer",
            ),
        ),
        (
            "limit=doggo",
            error(
                "invalid_index_limit",
                "Invalid value in parameter `limit`: could not parse `doggo` as a positive integer",
            ),
        ),
        (
            "limit=1.5",
            error(
                "invalid_index_limit",
                "Invalid value in parameter `limit`: could not parse `1.5` as a positive integer",
            ),
        ),
        (
            "doggo=nolimit",
            error("bad_request", "Unknown parameter `doggo`: expected one of `offset`, `limit`"),
        ),
        (
            "limt=1",
            error(
                "bad_request",
                "Unknown parameter `limt`: did you mean `limit`? expected one of `offset`, `limit`",
            ),
        ),
    ],
)
def test_list_indexes_bad_query(http: httpx.Client, query: str, body: dict[str, str]) -> None:
    res = http.get(f"/indexes?{query}")
    assert res.status_code == 400
    assert res.json() == body


# -- POST /indexes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "body"),
    [
        ({"primaryKey": "doggo"}, error("missing_index_uid", "Missing field `uid`")),
        (
            {"uid": "the best doggo"},
            error("invalid_index_uid", f"Invalid value at `.uid`: `the best doggo` {UID_RULE}"),
        ),
        (
            {"uid": "a" * 401},
            error("invalid_index_uid", f"Invalid value at `.uid`: `{'a' * 401}` {UID_RULE}"),
        ),
        ({"uid": ""}, error("invalid_index_uid", f"Invalid value at `.uid`: `` {UID_RULE}")),
        (
            {"uid": True},
            error(
                "invalid_index_uid",
                "Invalid value type at `.uid`: expected a string, but found a boolean: `true`",
            ),
        ),
        (
            {"uid": 12},
            error(
                "invalid_index_uid",
                "Invalid value type at `.uid`: expected a string, but found a positive integer: `12`",
            ),
        ),
        (
            {"uid": "doggo", "primaryKey": ["the", "best", "doggo"]},
            error(
                "invalid_index_primary_key",
                'Invalid value type at `.primaryKey`: expected a string, but found an array: `["the","best","doggo"]`',
            ),
        ),
        (
            {"uid": "doggo", "doggo": "bernese"},
            error("bad_request", "Unknown field `doggo`: expected one of `uid`, `primaryKey`"),
        ),
        (
            {"uid": "doggo", "primaryKy": "id"},
            error(
                "bad_request",
                "Unknown field `primaryKy`: did you mean `primaryKey`? expected one of `uid`, `primaryKey`",
            ),
        ),
        (
            [{"uid": "doggo"}],
            error(
                "bad_request",
                'Invalid value type: expected an object, but found an array: `[{"uid":"doggo"}]`',
            ),
        ),
        (
            "doggo",
            error("bad_request", 'Invalid value type: expected an object, but found a string: `"doggo"`'),
        ),
    ],
)
def test_create_index_bad_body(http: httpx.Client, payload: Any, body: dict[str, str]) -> None:
    before = task_count(http)
    assert_rejected(http, http.post("/indexes", json=payload), 400, body, before)


def test_create_index_max_uid_length_is_400_bytes(http: httpx.Client) -> None:
    uid = "b" * 400
    res = http.post("/indexes", json={"uid": uid})
    assert res.status_code == 202
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
    assert http.get(f"/indexes/{uid}").json()["uid"] == uid
    wait_task(http, http.delete(f"/indexes/{uid}").json()["taskUid"])


def test_create_index_payload_errors(http: httpx.Client) -> None:
    before = task_count(http)
    assert_rejected(
        http,
        http.post("/indexes", content=b"", headers=JSON),
        400,
        error("missing_payload", "A json payload is missing."),
        before,
    )
    assert_rejected(
        http,
        http.post("/indexes", content=b'{"uid": "doggo",}', headers=JSON),
        400,
        error(
            "malformed_payload",
            "The json payload provided is malformed. `trailing comma at line 1 column 17`.",
        ),
        before,
    )
    assert_rejected(
        http,
        http.post("/indexes", content=b'{"uid": "doggo"', headers=JSON),
        400,
        error(
            "malformed_payload",
            "The json payload provided is malformed. `EOF while parsing an object at line 1 column 15`.",
        ),
        before,
    )


def test_create_index_content_type_errors(http: httpx.Client) -> None:
    before = task_count(http)
    assert_rejected(
        http,
        http.post("/indexes", content=b'{"uid": "doggo"}'),
        415,
        error(
            "missing_content_type",
            "A Content-Type header is missing. Accepted values for the Content-Type header are: `application/json`",
        ),
        before,
    )
    assert_rejected(
        http,
        http.post("/indexes", content=b'{"uid": "doggo"}', headers={"Content-Type": "text/plain"}),
        415,
        error(
            "invalid_content_type",
            "The Content-Type `text/plain` is invalid. Accepted values for the Content-Type header are: "
            "`application/json`",
        ),
        before,
    )
    # parameters on the JSON media type are fine
    res = http.post(
        "/indexes",
        content=b'{"uid": "charset_ok"}',
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert res.status_code == 202
    wait_task(http, res.json()["taskUid"])


def test_create_index_broken_gzip_is_incomplete_payload(http: httpx.Client) -> None:
    before = task_count(http)
    res = http.post(
        "/indexes",
        content=b'{"uid": "doggo"}',
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert_rejected(
        http,
        res,
        400,
        error("bad_request", "The provided payload is incomplete and cannot be parsed"),
        before,
    )
    # a truncated gzip stream is refused the same way
    truncated = gzip.compress(b'{"uid": "doggo"}')[:-6]
    res = http.post(
        "/indexes",
        content=truncated,
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert_rejected(
        http,
        res,
        400,
        error("bad_request", "The provided payload is incomplete and cannot be parsed"),
        before,
    )


def test_create_existing_index_fails_the_task(http: httpx.Client, index_uid: str) -> None:
    assert create(http, index_uid, "primary")["status"] == "succeeded"
    task = create(http, index_uid, "other")
    assert failed_task_view(task) == {
        "indexUid": index_uid,
        "status": "failed",
        "type": "indexCreation",
        "canceledBy": None,
        "details": {"primaryKey": "other"},
        "error": error("index_already_exists", f"Index `{index_uid}` already exists."),
    }
    # the first creation is untouched
    assert http.get(f"/indexes/{index_uid}").json()["primaryKey"] == "primary"


# -- GET /indexes/{uid} ------------------------------------------------------------------------


def test_get_index_bad_uid(http: httpx.Client) -> None:
    res = http.get("/indexes/the good doggo")
    assert res.status_code == 400
    assert res.json() == error("invalid_index_uid", f"`the good doggo` {UID_RULE}")
    res = http.get("/indexes/" + "a" * 401)
    assert res.status_code == 400
    assert res.json() == error("invalid_index_uid", f"`{'a' * 401}` {UID_RULE}")


def test_get_missing_index_is_404(http: httpx.Client, index_uid: str) -> None:
    res = http.get(f"/indexes/{index_uid}")
    assert res.status_code == 404
    assert res.json() == error("index_not_found", f"Index `{index_uid}` not found.")


# -- PATCH /indexes/{uid} ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "body"),
    [
        (
            {"primaryKey": ["doggo"]},
            error(
                "invalid_index_primary_key",
                'Invalid value type at `.primaryKey`: expected a string, but found an array: `["doggo"]`',
            ),
        ),
        (
            {"createdAt": "doggo"},
            error(
                "immutable_index_created_at",
                "Immutable field `createdAt`: expected one of `primaryKey`, `uid`",
            ),
        ),
        (
            {"updatedAt": "doggo"},
            error(
                "immutable_index_updated_at",
                "Immutable field `updatedAt`: expected one of `primaryKey`, `uid`",
            ),
        ),
        (
            {"doggo": "bork"},
            error("bad_request", "Unknown field `doggo`: expected one of `primaryKey`, `uid`"),
        ),
        (
            {"uid": 3},
            error(
                "invalid_index_uid",
                "Invalid value type at `.uid`: expected a string, but found a positive integer: `3`",
            ),
        ),
        ({"uid": "Invalid UID!"}, error("invalid_index_uid", f"`Invalid UID!` {UID_RULE}")),
    ],
)
def test_update_index_bad_body(
    http: httpx.Client, index_uid: str, payload: Any, body: dict[str, str]
) -> None:
    create(http, index_uid)
    before = task_count(http)
    assert_rejected(http, http.patch(f"/indexes/{index_uid}", json=payload), 400, body, before)


def test_update_index_bad_uid(http: httpx.Client) -> None:
    before = task_count(http)
    assert_rejected(
        http,
        http.patch("/indexes/the good doggo", json={"primaryKey": "doggo"}),
        400,
        error("invalid_index_uid", f"`the good doggo` {UID_RULE}"),
        before,
    )
    # the body is read before the path is validated, as actix runs the extractors first
    assert_rejected(
        http,
        http.patch("/indexes/the good doggo", json={"doggo": 1}),
        400,
        error("bad_request", "Unknown field `doggo`: expected one of `primaryKey`, `uid`"),
        before,
    )


def test_update_missing_index_fails_the_task(http: httpx.Client, index_uid: str) -> None:
    res = http.patch(f"/indexes/{index_uid}", json={"primaryKey": "id"})
    assert res.status_code == 202
    task = wait_task(http, res.json()["taskUid"])
    assert failed_task_view(task) == {
        "indexUid": index_uid,
        "status": "failed",
        "type": "indexUpdate",
        "canceledBy": None,
        "details": {"primaryKey": "id"},
        "error": error("index_not_found", f"Index `{index_uid}` not found."),
    }
    assert http.get(f"/indexes/{index_uid}").status_code == 404


def test_update_primary_key_of_index_with_documents_fails(http: httpx.Client, index_uid: str) -> None:
    create(http, index_uid, "id")
    res = http.post(f"/indexes/{index_uid}/documents", json=[{"id": "11", "content": "foobar"}])
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
    res = http.patch(f"/indexes/{index_uid}", json={"primaryKey": "primary"})
    task = wait_task(http, res.json()["taskUid"])
    assert failed_task_view(task) == {
        "indexUid": index_uid,
        "status": "failed",
        "type": "indexUpdate",
        "canceledBy": None,
        "details": {"primaryKey": "primary"},
        "error": error(
            "index_primary_key_already_exists", f"Index `{index_uid}`: Index already has a primary key: `id`."
        ),
    }
    assert http.get(f"/indexes/{index_uid}").json()["primaryKey"] == "id"


def test_rename_to_existing_index_fails(http: httpx.Client, index_uid: str) -> None:
    other = f"{index_uid}_other"
    create(http, index_uid)
    create(http, other)
    res = http.patch(f"/indexes/{index_uid}", json={"uid": other})
    task = wait_task(http, res.json()["taskUid"])
    assert failed_task_view(task) == {
        "indexUid": index_uid,
        "status": "failed",
        "type": "indexUpdate",
        "canceledBy": None,
        "details": {"primaryKey": None, "oldIndexUid": index_uid, "newIndexUid": other},
        "error": error("index_already_exists", f"Index `{other}` already exists."),
    }
    assert http.get(f"/indexes/{index_uid}").status_code == 200


def test_rename_missing_index_fails(http: httpx.Client, index_uid: str) -> None:
    res = http.patch(f"/indexes/{index_uid}", json={"uid": f"{index_uid}_new"})
    task = wait_task(http, res.json()["taskUid"])
    assert task["error"] == error("index_not_found", f"Index `{index_uid}` not found.")
    assert http.get(f"/indexes/{index_uid}_new").status_code == 404


# -- DELETE /indexes/{uid} ---------------------------------------------------------------------


def test_delete_index_bad_uid(http: httpx.Client) -> None:
    before = task_count(http)
    assert_rejected(
        http,
        http.delete("/indexes/the good doggo"),
        400,
        error("invalid_index_uid", f"`the good doggo` {UID_RULE}"),
        before,
    )


def test_delete_missing_index_fails_the_task(http: httpx.Client, index_uid: str) -> None:
    res = http.delete(f"/indexes/{index_uid}")
    assert res.status_code == 202
    task = wait_task(http, res.json()["taskUid"])
    assert failed_task_view(task) == {
        "indexUid": index_uid,
        "status": "failed",
        "type": "indexDeletion",
        "canceledBy": None,
        "details": {"deletedDocuments": 0},
        "error": error("index_not_found", f"Index `{index_uid}` not found."),
    }


# -- POST /swap-indexes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "body"),
    [
        (
            "doggo",
            error("bad_request", 'Invalid value type: expected an array, but found a string: `"doggo"`'),
        ),
        (
            {"indexes": ["a", "b"]},
            error(
                "bad_request",
                'Invalid value type: expected an array, but found an object: `{"indexes":["a","b"]}`',
            ),
        ),
        (
            ["doggo"],
            error(
                "bad_request",
                'Invalid value type at `[0]`: expected an object, but found a string: `"doggo"`',
            ),
        ),
        (
            [{"indexes": "doggo"}],
            error(
                "invalid_swap_indexes",
                'Invalid value type at `[0].indexes`: expected an array, but found a string: `"doggo"`',
            ),
        ),
        (
            [{"indexes": ["doggo"]}],
            error(
                "invalid_swap_indexes",
                'Two indexes must be given for each swap. The list `["doggo"]` contains 1 indexes.',
            ),
        ),
        (
            [{"indexes": ["doggo", "crabo", "croco"]}],
            error(
                "invalid_swap_indexes",
                'Two indexes must be given for each swap. The list `["doggo", "crabo", "croco"]` contains 3 indexes.',
            ),
        ),
        (
            [{"indexes": ["doggo", "doggo"]}],
            error(
                "invalid_swap_duplicate_index_found",
                "Indexes must be declared only once during a swap. `doggo` was specified several times.",
            ),
        ),
        (
            [{"indexes": ["doggo", "catto"]}, {"indexes": ["girafo", "doggo"]}],
            error(
                "invalid_swap_duplicate_index_found",
                "Indexes must be declared only once during a swap. `doggo` was specified several times.",
            ),
        ),
        (
            [{"indexes": ["doggo", "catto"], "rename": "yes"}],
            error(
                "invalid_swap_rename",
                'Invalid value type at `[0].rename`: expected a boolean, but found a string: `"yes"`',
            ),
        ),
        ([{}], error("missing_swap_indexes", "Missing field `indexes` inside `[0]`")),
        (
            [{"indexes": ["doggo", "catto"], "doggo": 1}],
            error("bad_request", "Unknown field `doggo` inside `[0]`: expected one of `indexes`, `rename`"),
        ),
    ],
)
def test_swap_indexes_bad_payload(http: httpx.Client, payload: Any, body: dict[str, str]) -> None:
    before = task_count(http)
    assert_rejected(http, http.post("/swap-indexes", json=payload), 400, body, before)


def test_swap_with_missing_index_fails_the_task(http: httpx.Client, index_uid: str) -> None:
    create(http, index_uid)
    missing = f"{index_uid}_missing"
    res = http.post("/swap-indexes", json=[{"indexes": [index_uid, missing]}])
    assert res.status_code == 202
    assert res.json()["indexUid"] is None
    task = wait_task(http, res.json()["taskUid"])
    assert task["status"] == "failed"
    assert task["error"] == error("index_not_found", f"Index `{missing}` not found.")
    assert http.get(f"/indexes/{index_uid}").status_code == 200
