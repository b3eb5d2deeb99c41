"""Every error of the task and batch filter routes, body for body (Meilisearch tests/tasks/errors.rs,
tests/batches/errors.rs and tests/batches/mod.rs::list_batch_filter_error)."""

from __future__ import annotations

import httpx
import pytest

# (method, path) of the four routes sharing the task filters
LIST_ROUTES = [("GET", "/tasks"), ("GET", "/batches")]
WRITE_ROUTES = [("POST", "/tasks/cancel"), ("DELETE", "/tasks")]
ALL_ROUTES = LIST_ROUTES + WRITE_ROUTES

TYPES = (
    "`documentAdditionOrUpdate`, `documentEdition`, `documentDeletion`, `settingsUpdate`, `indexCreation`, "
    "`indexDeletion`, `indexUpdate`, `indexSwap`, `taskCancelation`, `taskDeletion`, `dumpCreation`, "
    "`snapshotCreation`, `export`, `upgradeDatabase`, `indexCompaction`, `networkTopologyChange`, "
    "`dsrUpdate`, `dsrClear`"
)
STATUSES = "`enqueued`, `processing`, `succeeded`, `failed`, `canceled`"
BAD_DATE = "`doggo` is an invalid date-time. It should follow the YYYY-MM-DD or RFC 3339 date-time format."
BAD_INDEX_UID = (
    "`the good doggo` is not a valid index uid. Index uid can be an integer or a string containing only "
    "alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes."
)
LIST_PARAMS = (
    "`limit`, `from`, `reverse`, `batchUids`, `uids`, `canceledBy`, `types`, `statuses`, `indexUids`, "
    "`afterEnqueuedAt`, `beforeEnqueuedAt`, `afterStartedAt`, `beforeStartedAt`, `afterFinishedAt`, "
    "`beforeFinishedAt`"
)
FILTER_PARAMS = (
    "`uids`, `batchUids`, `canceledBy`, `types`, `statuses`, `indexUids`, `afterEnqueuedAt`, "
    "`beforeEnqueuedAt`, `afterStartedAt`, `beforeStartedAt`, `afterFinishedAt`, `beforeFinishedAt`"
)


def error(code: str, message: str, type_: str = "invalid_request") -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": type_,
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


def call(http: httpx.Client, method: str, path: str, query: str) -> httpx.Response:
    return http.request(method, f"{path}?{query}")


# (query, code, message) rejected identically by the four routes
SHARED_ERRORS = [
    (
        "uids=doggo",
        "invalid_task_uids",
        "Invalid value in parameter `uids`: could not parse `doggo` as a positive integer",
    ),
    (
        "uids=1,dogo",
        "invalid_task_uids",
        "Invalid value in parameter `uids[1]`: could not parse `dogo` as a positive integer",
    ),
    (
        "uids=4294967296",
        "invalid_task_uids",
        "Invalid value in parameter `uids`: could not parse `4294967296` as a positive integer",
    ),
    (
        "batchUids=doggo",
        "invalid_batch_uids",
        "Invalid value in parameter `batchUids`: could not parse `doggo` as a positive integer",
    ),
    (
        "canceledBy=doggo",
        "invalid_task_canceled_by",
        "Invalid value in parameter `canceledBy`: could not parse `doggo` as a positive integer",
    ),
    (
        "types=doggo",
        "invalid_task_types",
        f"Invalid value in parameter `types`: `doggo` is not a valid task type. Available types are {TYPES}.",
    ),
    (
        "types=indexCreation,doggo",
        "invalid_task_types",
        f"Invalid value in parameter `types[1]`: `doggo` is not a valid task type. Available types are {TYPES}.",
    ),
    (
        "statuses=doggo",
        "invalid_task_statuses",
        f"Invalid value in parameter `statuses`: `doggo` is not a valid task status. Available statuses are "
        f"{STATUSES}.",
    ),
    (
        "statuses=succeeded,doggo",
        "invalid_task_statuses",
        f"Invalid value in parameter `statuses[1]`: `doggo` is not a valid task status. Available statuses are "
        f"{STATUSES}.",
    ),
    (
        "indexUids=the%20good%20doggo",
        "invalid_index_uid",
        f"Invalid value in parameter `indexUids`: {BAD_INDEX_UID}",
    ),
    *(
        (f"{param}=doggo", f"invalid_task_{snake}", f"Invalid value in parameter `{param}`: {BAD_DATE}")
        for param, snake in (
            ("afterEnqueuedAt", "after_enqueued_at"),
            ("beforeEnqueuedAt", "before_enqueued_at"),
            ("afterStartedAt", "after_started_at"),
            ("beforeStartedAt", "before_started_at"),
            ("afterFinishedAt", "after_finished_at"),
            ("beforeFinishedAt", "before_finished_at"),
        )
    ),
    (
        "afterEnqueuedAt=2024-02-30",
        "invalid_task_after_enqueued_at",
        "Invalid value in parameter `afterEnqueuedAt`: `2024-02-30` is an invalid date-time. It should follow the "
        "YYYY-MM-DD or RFC 3339 date-time format.",
    ),
]


@pytest.mark.parametrize(("method", "path"), ALL_ROUTES)
@pytest.mark.parametrize(("query", "code", "message"), SHARED_ERRORS)
def test_filter_errors(
    http: httpx.Client, method: str, path: str, query: str, code: str, message: str
) -> None:
    r = call(http, method, path, query)
    assert r.status_code == 400
    assert r.headers["content-type"] == "application/json"
    assert r.json() == error(code, message)


PAGING_ERRORS = [
    (
        "limit=doggo",
        "invalid_task_limit",
        "Invalid value in parameter `limit`: could not parse `doggo` as a positive integer",
    ),
    (
        "limit=-1",
        "invalid_task_limit",
        "Invalid value in parameter `limit`: could not parse `-1` as a positive integer",
    ),
    (
        "from=doggo",
        "invalid_task_from",
        "Invalid value in parameter `from`: could not parse `doggo` as a positive integer",
    ),
    (
        "reverse=doggo",
        "invalid_task_reverse",
        "Invalid value in parameter `reverse`: could not parse `doggo` as a boolean, expected either `true` or "
        "`false`",
    ),
    (
        "reverse=*",
        "invalid_task_reverse",
        "Invalid value in parameter `reverse`: could not parse `*` as a boolean, expected either `true` or `false`",
    ),
    ("lol=pied", "bad_request", f"Unknown parameter `lol`: expected one of {LIST_PARAMS}"),
]


@pytest.mark.parametrize(("method", "path"), LIST_ROUTES)
@pytest.mark.parametrize(("query", "code", "message"), PAGING_ERRORS)
def test_paging_errors_of_list_routes(
    http: httpx.Client, method: str, path: str, query: str, code: str, message: str
) -> None:
    r = call(http, method, path, query)
    assert r.status_code == 400
    assert r.json() == error(code, message)


@pytest.mark.parametrize(("method", "path"), WRITE_ROUTES)
@pytest.mark.parametrize("param", ["limit", "from", "reverse", "lol"])
def test_cancel_and_delete_reject_paging_parameters(
    http: httpx.Client, method: str, path: str, param: str
) -> None:
    r = call(http, method, path, f"{param}=doggo")
    assert r.status_code == 400
    assert r.json() == error("bad_request", f"Unknown parameter `{param}`: expected one of {FILTER_PARAMS}")


@pytest.mark.parametrize(
    ("method", "path", "verb"), [("POST", "/tasks/cancel", "cancel"), ("DELETE", "/tasks", "delete")]
)
def test_missing_task_filters(http: httpx.Client, method: str, path: str, verb: str) -> None:
    message = (
        f"Query parameters to filter the tasks to {verb} are missing. Available query parameters are: `uids`, "
        "`indexUids`, `statuses`, `types`, `canceledBy`, `beforeEnqueuedAt`, `afterEnqueuedAt`, "
        "`beforeStartedAt`, `afterStartedAt`, `beforeFinishedAt`, `afterFinishedAt`."
    )
    r = http.request(method, path)
    assert r.status_code == 400
    assert r.json() == error("missing_task_filters", message)


@pytest.mark.parametrize(("method", "path"), WRITE_ROUTES)
def test_a_star_is_a_filter(http: httpx.Client, method: str, path: str) -> None:
    # `uids=*` is "every task", not "no filter": the request is accepted
    r = call(http, method, path, "statuses=*&uids=4294967295")
    assert r.status_code == 200, r.text


def test_batch_route_errors(http: httpx.Client) -> None:
    r = http.get("/batches/doggo")
    assert r.status_code == 400
    assert r.json() == error(
        "invalid_batch_uids", "Batch uid `doggo` is invalid. It should only contain numeric characters."
    )
    r = http.get("/batches/4294967295")
    assert r.status_code == 404
    assert r.json() == error("batch_not_found", "Batch `4294967295` not found.")


def test_task_route_errors(http: httpx.Client) -> None:
    r = http.get("/tasks/doggo")
    assert r.status_code == 400
    assert r.json() == error(
        "invalid_task_uids", "Task uid `doggo` is invalid. It should only contain numeric characters."
    )
    r = http.get("/tasks/4294967295")
    assert r.status_code == 404
    assert r.json() == error("task_not_found", "Task `4294967295` not found.")
