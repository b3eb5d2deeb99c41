"""Error answers of the document routes, compared field by field with Meilisearch's.

Synchronous refusals (query, path, Content-Type, payload) are checked for their exact status and
body and for leaving the index untouched (same documents, no task). Problems found while indexing
are checked on the failed task: `error` object and `details` counters.

Expected bodies come from Meilisearch's `tests/documents/errors.rs`, `add_documents.rs`,
`get_documents.rs`, `delete_documents.rs` and its route code (`routes/indexes/documents.rs`,
`error.rs`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task

LINK = "https://docs.meilisearch.com/errors#"
ACCEPTED = "`application/json`, `application/x-ndjson`, `text/csv`"
UID_RULE = (
    "is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric "
    "characters, hyphens (-) and underscores (_), and can not be more than 512 bytes."
)
DOC_ID_RULE = (
    "is invalid. A document identifier can be of type integer or string, only composed of alphanumeric "
    "characters (a-z A-Z 0-9), hyphens (-) and underscores (_), and can not be more than 511 bytes."
)
PK_HINT = "Please specify the primary key manually using the `primaryKey` query parameter."


def error(code: str, message: str, type_: str = "invalid_request") -> dict[str, str]:
    return {"message": message, "code": code, "type": type_, "link": LINK + code}


def tasks_of(http: httpx.Client, uid: str) -> int:
    total: int = http.get("/tasks", params={"indexUids": uid, "limit": 0}).json()["total"]
    return total


@pytest.fixture
def filled(http: httpx.Client, index_uid: str) -> str:
    """An index holding two documents, so that refused requests can be shown to change nothing."""
    res = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 1, "a": "x"}, {"id": 2, "a": "y"}])
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
    return index_uid


class Unchanged:
    """Context manager: the index has the same documents and no new task afterwards."""

    def __init__(self, http: httpx.Client, uid: str) -> None:
        self.http, self.uid = http, uid

    def snapshot(self) -> tuple[Any, int]:
        docs = self.http.get(f"/indexes/{self.uid}/documents", params={"limit": 1000}).json()
        return docs, tasks_of(self.http, self.uid)

    def __enter__(self) -> Unchanged:
        self.before = self.snapshot()
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            assert self.snapshot() == self.before


def check(res: httpx.Response, status: int, body: dict[str, str]) -> None:
    assert res.status_code == status, res.text
    assert res.headers["content-type"].startswith("application/json")
    assert res.json() == body


def post_docs(
    http: httpx.Client, uid: str, body: bytes, content_type: str | None, method: str = "POST", query: str = ""
) -> httpx.Response:
    headers = {} if content_type is None else {"Content-Type": content_type}
    return http.request(method, f"/indexes/{uid}/documents{query}", content=body, headers=headers)


def failed(http: httpx.Client, res: httpx.Response) -> dict[str, Any]:
    assert res.status_code == 202, res.text
    task = wait_task(http, res.json()["taskUid"])
    assert task["status"] == "failed", task
    return task


# -- path and query ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/documents"),
        ("PUT", "/documents"),
        ("GET", "/documents"),
        ("DELETE", "/documents"),
        ("GET", "/documents/1"),
        ("DELETE", "/documents/1"),
        ("POST", "/documents/delete-batch"),
        ("POST", "/documents/fetch"),
    ],
)
def test_bad_index_uid_in_path(http: httpx.Client, method: str, path: str) -> None:
    before = http.get("/tasks", params={"limit": 0}).json()["total"]
    body = b"[]" if method in ("POST", "PUT") and "fetch" not in path else b"{}"
    res = http.request(
        method, f"/indexes/883  fj!{path}", content=body, headers={"Content-Type": "application/json"}
    )
    check(res, 400, error("invalid_index_uid", f"`883  fj!` {UID_RULE}"))
    assert http.get("/tasks", params={"limit": 0}).json()["total"] == before


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_add_unknown_query_parameter(http: httpx.Client, filled: str, method: str) -> None:
    with Unchanged(http, filled):
        res = post_docs(http, filled, b'[{"id": 3}]', "application/json", method, "?primarykey=id")
        check(
            res,
            400,
            error(
                "bad_request",
                "Unknown parameter `primarykey`: did you mean `primaryKey`? expected one of `primaryKey`, "
                "`csvDelimiter`, `customMetadata`, `skipCreation`",
            ),
        )


def test_add_bad_skip_creation(http: httpx.Client, filled: str) -> None:
    with Unchanged(http, filled):
        res = post_docs(http, filled, b'[{"id": 3}]', "application/json", query="?skipCreation=yes")
        check(
            res,
            400,
            error("invalid_skip_creation", "skipCreation must be either `true` or `false`. Found: `yes`"),
        )
    # the value is case-insensitive
    res = post_docs(
        http, filled, b'[{"id": 1, "a": "z"}, {"id": 9}]', "application/json", "PUT", "?skipCreation=TRUE"
    )
    task = wait_task(http, res.json()["taskUid"])
    assert task["details"] == {"receivedDocuments": 2, "indexedDocuments": 1}


@pytest.mark.parametrize(
    ("query", "body"),
    [
        (
            "?offset",
            error(
                "invalid_document_offset",
                "Invalid value in parameter `offset`: could not parse `` as a positive integer",
            ),
        ),
        (
            "?offset=doggo",
            error(
                "invalid_document_offset",
                "Invalid value in parameter `offset`: could not parse `doggo` as a positive integer",
            ),
        ),
        (
            "?offset=-1",
            error(
                "invalid_document_offset",
                "Invalid value in parameter `offset`: could not parse `-1` as a positive integer",
            ),
        ),
        (
            "?limit",
            error(
                "invalid_document_limit",
                "Invalid value in parameter `limit`: could not parse `` as a positive integer",
            ),
        ),
        (
            "?limit=doggo",
            error(
                "invalid_document_limit",
                "Invalid value in parameter `limit`: could not parse `doggo` as a positive integer",
            ),
        ),
        (
            "?limit=-1",
            error(
                "invalid_document_limit",
                "Invalid value in parameter `limit`: could not parse `-1` as a positive integer",
            ),
        ),
        (
            "?retrieveVectors=tamo",
            error(
                "invalid_document_retrieve_vectors",
                "Invalid value in parameter `retrieveVectors`: could not parse `tamo` as a boolean, expected either "
                "`true` or `false`",
            ),
        ),
        (
            "?ids=1,a%20b",
            error("invalid_document_ids", f'In `.ids[1]`: Document identifier `"a b"` {DOC_ID_RULE}'),
        ),
    ],
)
def test_browse_bad_query(http: httpx.Client, filled: str, query: str, body: dict[str, str]) -> None:
    check(http.get(f"/indexes/{filled}/documents{query}"), 400, body)


def test_browse_unknown_parameter(http: httpx.Client, filled: str) -> None:
    res = http.get(f"/indexes/{filled}/documents?limits=1")
    assert res.status_code == 400
    body = res.json()
    assert body["code"] == "bad_request" and body["link"] == LINK + "bad_request"
    assert body["message"].startswith(
        "Unknown parameter `limits`: did you mean `limit`? expected one of `offset`, `limit`, `fields`, "
        "`retrieveVectors`, `ids`, `filter`, `sort`"
    )


def test_get_document_bad_query(http: httpx.Client, filled: str) -> None:
    check(
        http.get(f"/indexes/{filled}/documents/1?retrieveVectors=tamo"),
        400,
        error(
            "invalid_document_retrieve_vectors",
            "Invalid value in parameter `retrieveVectors`: could not parse `tamo` as a boolean, expected either "
            "`true` or `false`",
        ),
    )
    check(
        http.get(f"/indexes/{filled}/documents/1?doggo=1"),
        400,
        error(
            "bad_request",
            "Unknown parameter `doggo`: expected one of `fields`, `retrieveVectors`, `useNetwork`",
        ),
    )


@pytest.mark.parametrize(
    ("payload", "body"),
    [
        (None, error("bad_request", "Invalid value type: expected an object, but found null")),
        (
            {"offset": "doggo"},
            error(
                "invalid_document_offset",
                'Invalid value type at `.offset`: expected a positive integer, but found a string: `"doggo"`',
            ),
        ),
        (
            {"limit": "doggo"},
            error(
                "invalid_document_limit",
                'Invalid value type at `.limit`: expected a positive integer, but found a string: `"doggo"`',
            ),
        ),
        (
            {"limit": -1},
            error(
                "invalid_document_limit",
                "Invalid value type at `.limit`: expected a positive integer, but found a negative integer: `-1`",
            ),
        ),
        (
            {"fields": "doggo"},
            error(
                "invalid_document_fields",
                'Invalid value type at `.fields`: expected an array, but found a string: `"doggo"`',
            ),
        ),
        (
            {"retrieveVectors": "tamo"},
            error(
                "invalid_document_retrieve_vectors",
                'Invalid value type at `.retrieveVectors`: expected a boolean, but found a string: `"tamo"`',
            ),
        ),
        (
            {"ids": [1, 1.5]},
            error("invalid_document_ids", f"In `.ids[1]`: Document identifier `1.5` {DOC_ID_RULE}"),
        ),
        (
            {"ids": [True]},
            error("invalid_document_ids", f"In `.ids[0]`: Document identifier `true` {DOC_ID_RULE}"),
        ),
        (
            {"ids": ["ok", "not ok"]},
            error("invalid_document_ids", f'In `.ids[1]`: Document identifier `"not ok"` {DOC_ID_RULE}'),
        ),
    ],
)
def test_fetch_bad_body(http: httpx.Client, filled: str, payload: Any, body: dict[str, str]) -> None:
    res = http.post(
        f"/indexes/{filled}/documents/fetch",
        content=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
    )
    check(res, 400, body)


def test_fetch_unknown_field(http: httpx.Client, filled: str) -> None:
    res = http.post(f"/indexes/{filled}/documents/fetch", json={"limits": 1})
    body = res.json()
    assert res.status_code == 400 and body["code"] == "bad_request"
    assert body["message"].startswith(
        "Unknown field `limits`: did you mean `limit`? expected one of `offset`, `limit`, `fields`, "
        "`retrieveVectors`, `ids`, `filter`, `sort`"
    )


def test_fetch_payload_errors(http: httpx.Client, filled: str) -> None:
    url = f"/indexes/{filled}/documents/fetch"
    check(
        http.post(url, content=b""),
        415,
        error(
            "missing_content_type",
            "A Content-Type header is missing. Accepted values for the Content-Type header are: `application/json`",
        ),
    )
    check(
        http.post(url, content=b"", headers={"Content-Type": "application/json"}),
        400,
        error("missing_payload", "A json payload is missing."),
    )
    check(
        http.post(url, content=b"{", headers={"Content-Type": "application/json"}),
        400,
        error(
            "malformed_payload",
            "The json payload provided is malformed. `EOF while parsing an object at line 1 column 1`.",
        ),
    )


# -- missing things: index, document ----------------------------------------------------------


def test_missing_index_on_reads_is_404(http: httpx.Client, index_uid: str) -> None:
    not_found = error("index_not_found", f"Index `{index_uid}` not found.")
    check(http.get(f"/indexes/{index_uid}/documents"), 404, not_found)
    check(http.get(f"/indexes/{index_uid}/documents/1"), 404, not_found)
    check(http.post(f"/indexes/{index_uid}/documents/fetch", json={}), 404, not_found)
    # the index is looked up before filters are read
    check(http.get(f"/indexes/{index_uid}/documents?filter=doggo"), 404, not_found)
    # but query and body errors come first
    assert http.get(f"/indexes/{index_uid}/documents?limit=x").json()["code"] == "invalid_document_limit"
    assert http.get(f"/indexes/{index_uid}/documents?ids=a%20b").json()["code"] == "invalid_document_ids"


def test_document_not_found(http: httpx.Client, filled: str) -> None:
    check(
        http.get(f"/indexes/{filled}/documents/3"),
        404,
        error("document_not_found", "Document `3` not found."),
    )
    # ids that could never exist are simply not found
    check(
        http.get(f"/indexes/{filled}/documents/a b"),
        404,
        error("document_not_found", "Document `a b` not found."),
    )
    check(
        http.get(f"/indexes/{filled}/documents/1.0"),
        404,
        error("document_not_found", "Document `1.0` not found."),
    )


@pytest.mark.parametrize(
    ("request_args", "details"),
    [
        (("DELETE", "/documents/1", None), {"providedIds": 1, "deletedDocuments": 0, "originalFilter": None}),
        (
            ("POST", "/documents/delete-batch", [1, 2, 3]),
            {"providedIds": 3, "deletedDocuments": 0, "originalFilter": None},
        ),
        (
            ("POST", "/documents/delete-batch", []),
            {"providedIds": 0, "deletedDocuments": 0, "originalFilter": None},
        ),
        (("DELETE", "/documents", None), {"deletedDocuments": 0}),
    ],
)
def test_deletions_on_missing_index_fail(
    http: httpx.Client, index_uid: str, request_args: tuple[str, str, Any], details: dict[str, Any]
) -> None:
    method, path, payload = request_args
    res = (
        http.request(method, f"/indexes/{index_uid}{path}", json=payload)
        if payload is not None
        else http.request(method, f"/indexes/{index_uid}{path}")
    )
    task = failed(http, res)
    assert task["type"] == "documentDeletion"
    assert task["details"] == details
    assert task["error"] == error("index_not_found", f"Index `{index_uid}` not found.")
    assert http.get(f"/indexes/{index_uid}").status_code == 404


# -- Content-Type and payload ------------------------------------------------------------------


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_add_content_type_errors(http: httpx.Client, filled: str, method: str) -> None:
    doc = b'[{"id": 3}]'
    missing = error(
        "missing_content_type",
        f"A Content-Type header is missing. Accepted values for the Content-Type header are: {ACCEPTED}",
    )
    with Unchanged(http, filled):
        check(post_docs(http, filled, doc, None, method), 415, missing)
        # even with a (valid) csv delimiter the missing header is reported
        check(post_docs(http, filled, doc, None, method, "?csvDelimiter=;"), 415, missing)
        for content_type, shown in (
            ("doggo", "doggo"),
            ("text/plain", "text/plain"),
            ("application/xml; charset=utf-8", "application/xml"),
            ("TEXT/PLAIN", "text/plain"),
        ):
            check(
                post_docs(http, filled, doc, content_type, method),
                415,
                error(
                    "invalid_content_type",
                    f"The Content-Type `{shown}` is invalid. Accepted values for the Content-Type header are: {ACCEPTED}",
                ),
            )
        # an empty body with a bad type is still a Content-Type error
        check(
            post_docs(http, filled, b"", "doggo", method),
            415,
            error(
                "invalid_content_type",
                f"The Content-Type `doggo` is invalid. Accepted values for the Content-Type header are: {ACCEPTED}",
            ),
        )


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_add_csv_delimiter_errors(http: httpx.Client, filled: str, method: str) -> None:
    with Unchanged(http, filled):
        check(
            post_docs(http, filled, b"", "application/json", method, "?csvDelimiter"),
            400,
            error(
                "invalid_document_csv_delimiter",
                "Invalid value in parameter `csvDelimiter`: expected a string of one character, but found an empty string",
            ),
        )
        check(
            post_docs(http, filled, b"", "application/json", method, "?csvDelimiter=doggo"),
            400,
            error(
                "invalid_document_csv_delimiter",
                "Invalid value in parameter `csvDelimiter`: expected a string of one character, but found the "
                "following string of 5 characters: `doggo`",
            ),
        )
        check(
            post_docs(http, filled, b"", "application/json", method, "?csvDelimiter=%F0%9F%8D%B0"),
            400,
            error("invalid_document_csv_delimiter", "csv delimiter must be an ascii character. Found: `🍰`"),
        )
        for content_type in ("application/json", "application/x-ndjson"):
            check(
                post_docs(http, filled, b'{"id": 3}', content_type, method, "?csvDelimiter=a"),
                415,
                error(
                    "invalid_content_type",
                    f"The Content-Type `{content_type}` does not support the use of a csv delimiter. The csv delimiter "
                    "can only be used with the Content-Type `text/csv`.",
                ),
            )


@pytest.mark.parametrize("method", ["POST", "PUT"])
@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv"])
def test_add_missing_payload(http: httpx.Client, filled: str, method: str, fmt: str) -> None:
    content_type = {"json": "application/json", "ndjson": "application/x-ndjson", "csv": "text/csv"}[fmt]
    with Unchanged(http, filled):
        check(
            post_docs(http, filled, b"", content_type, method),
            400,
            error("missing_payload", f"A {fmt} payload is missing."),
        )


@pytest.mark.parametrize("method", ["POST", "PUT"])
@pytest.mark.parametrize(
    ("content_type", "payload", "message"),
    [
        (
            "application/json",
            b'[{"id": 1}, {id: 2}]',
            "The `json` payload provided is malformed. `Couldn't serialize document value: key must be a string at line 1 column 14`.",
        ),
        (
            "application/json",
            b'"kefir"',
            "The `json` payload provided is malformed. `Couldn't serialize document value: data are neither an object nor a list of objects`.",
        ),
        (
            "application/json",
            b'"' + b"0123456789" * 10 + b'm"',
            "The `json` payload provided is malformed. `Couldn't serialize document value: data are neither an object nor a list of objects`.",
        ),
        (
            "application/json",
            b'{"id": 1',
            "The `json` payload provided is malformed. `Couldn't serialize document value: EOF while parsing an object at line 1 column 8`.",
        ),
        (
            "application/x-ndjson",
            b'{"id": 1}\n{id: 2}',
            "The `ndjson` payload provided is malformed. `Couldn't serialize document value: key must be a string at line 2 column 2`.",
        ),
        (
            "text/csv",
            b"id, content\n1234, hello, world\n12, hello world",
            "The `csv` payload provided is malformed: `CSV error: record 1 (line: 2, byte: 12): found record with 3 "
            "fields, but the previous record has 2 fields`.",
        ),
        (
            "text/csv",
            b"#id:number,a:boolean,b:number\n0,doggo,1",
            'The `csv` payload provided is malformed: `Error parsing boolean "doggo" at line 1: provided string was '
            "not `true` or `false``.",
        ),
        (
            "text/csv",
            b"#id:number,a:boolean,b:number\n0,true,doggo",
            'The `csv` payload provided is malformed: `Error parsing number "doggo" at line 1: invalid float literal`.',
        ),
    ],
)
def test_add_malformed_payload(
    http: httpx.Client, filled: str, method: str, content_type: str, payload: bytes, message: str
) -> None:
    with Unchanged(http, filled):
        check(
            post_docs(http, filled, payload, content_type, method), 400, error("malformed_payload", message)
        )


def test_broken_gzip_document_payload(http: httpx.Client, filled: str) -> None:
    with Unchanged(http, filled):
        res = http.post(
            f"/indexes/{filled}/documents",
            content=b'"kefir"',
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
        check(res, 400, error("bad_request", "The provided payload is incomplete and cannot be parsed"))
        res = http.put(
            f"/indexes/{filled}/documents",
            content=b"not deflate",
            headers={"Content-Type": "application/json", "Content-Encoding": "deflate"},
        )
        check(res, 400, error("bad_request", "The provided payload is incomplete and cannot be parsed"))


# -- delete-batch ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b'"doggo"', 'invalid type: string "doggo", expected a sequence at line 1 column 7'),
        (b'{"id": 1}', "invalid type: map, expected a sequence at line 1 column 0"),
        (b"12", "invalid type: integer `12`, expected a sequence at line 1 column 2"),
        (b"-1.5", "invalid type: floating point `-1.5`, expected a sequence at line 1 column 4"),
        (b"true", "invalid type: boolean `true`, expected a sequence at line 1 column 4"),
        (b"null", "invalid type: null, expected a sequence at line 1 column 4"),
    ],
)
def test_delete_batch_not_an_array(http: httpx.Client, filled: str, payload: bytes, message: str) -> None:
    with Unchanged(http, filled):
        res = http.post(
            f"/indexes/{filled}/documents/delete-batch",
            content=payload,
            headers={"Content-Type": "application/json"},
        )
        check(res, 400, error("bad_request", f"Json deserialize error: {message}"))


def test_delete_batch_payload_errors(http: httpx.Client, filled: str) -> None:
    url = f"/indexes/{filled}/documents/delete-batch"
    with Unchanged(http, filled):
        check(
            http.post(url, content=b"[1]"),
            415,
            error(
                "missing_content_type",
                "A Content-Type header is missing. Accepted values for the Content-Type header are: `application/json`",
            ),
        )
        check(
            http.post(url, content=b"[1]", headers={"Content-Type": "text/csv"}),
            415,
            error(
                "invalid_content_type",
                "The Content-Type `text/csv` is invalid. Accepted values for the Content-Type header are: `application/json`",
            ),
        )
        check(
            http.post(url, content=b"", headers={"Content-Type": "application/json"}),
            400,
            error("missing_payload", "A json payload is missing."),
        )
        check(
            http.post(url, content=b"[1,", headers={"Content-Type": "application/json"}),
            400,
            error(
                "malformed_payload",
                "The json payload provided is malformed. `EOF while parsing a value at line 1 column 3`.",
            ),
        )
        check(
            http.post(url + "?doggo=1", json=[1]),
            400,
            error("bad_request", "Unknown parameter `doggo`: expected one of `customMetadata`"),
        )


# -- failed tasks ------------------------------------------------------------------------------


def test_failed_addition_details_and_codes(http: httpx.Client, index_uid: str) -> None:
    """The exact error and the counters of every per-document failure (no `Index `x`: ` prefix)."""
    wait_task(http, http.post("/indexes", json={"uid": index_uid, "primaryKey": "docid"}).json()["taskUid"])
    cases = [
        (
            [{"docid": "foo & bar", "content": "foobar"}],
            "invalid_document_id",
            f'Document identifier `"foo & bar"` {DOC_ID_RULE}',
        ),
        ([{"docid": "a" * 512}], "invalid_document_id", f'Document identifier `"{"a" * 512}"` {DOC_ID_RULE}'),
        ([{"docid": 1.5}], "invalid_document_id", f"Document identifier `1.5` {DOC_ID_RULE}"),
        ([{"docid": True}], "invalid_document_id", f"Document identifier `true` {DOC_ID_RULE}"),
        (
            [{"docid": 1}, {"id": "11", "content": "foobar"}],
            "missing_document_id",
            'Document doesn\'t have a `docid` attribute: `{"id":"11","content":"foobar"}`.',
        ),
    ]
    for docs, code, message in cases:
        assert isinstance(docs, list)
        task = failed(http, http.post(f"/indexes/{index_uid}/documents", json=docs))
        assert task["details"] == {"receivedDocuments": len(docs), "indexedDocuments": 0}
        assert task["error"] == error(code, message)
    # no document of a failed task was indexed, not even the valid first one
    assert http.get(f"/indexes/{index_uid}/documents").json()["total"] == 0
    # the largest valid id is 511 bytes
    res = http.post(f"/indexes/{index_uid}/documents", json=[{"docid": "a" * 511}])
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"


def test_failed_addition_exact_error_invalid_document_id(http: httpx.Client, index_uid: str) -> None:
    res = http.post(
        f"/indexes/{index_uid}/documents", json=[{"docid": "foo & bar"}], params={"primaryKey": "docid"}
    )
    task = failed(http, res)
    assert task["error"] == error("invalid_document_id", f'Document identifier `"foo & bar"` {DOC_ID_RULE}')


def test_failed_addition_exact_error_missing_document_id(http: httpx.Client, index_uid: str) -> None:
    wait_task(http, http.post("/indexes", json={"uid": index_uid, "primaryKey": "docid"}).json()["taskUid"])
    task = failed(
        http, http.post(f"/indexes/{index_uid}/documents", json=[{"id": "11", "content": "foobar"}])
    )
    assert task["error"] == error(
        "missing_document_id", 'Document doesn\'t have a `docid` attribute: `{"id":"11","content":"foobar"}`.'
    )


def test_primary_key_inference_failures(http: httpx.Client, index_uid: str) -> None:
    task = failed(
        http, http.post(f"/indexes/{index_uid}/documents", json=[{"title": "11", "desc": "foobar"}])
    )
    assert task["details"] == {"receivedDocuments": 1, "indexedDocuments": 0}
    assert task["error"] == error(
        "index_primary_key_no_candidate_found",
        "The primary key inference failed as the engine did not find any field ending with `id` in its name. "
        + PK_HINT,
    )
    docs = [{"primary_id": "12", "object_id": "42", "id": "124", "title": "11", "desc": "foobar"}]
    task = failed(http, http.post(f"/indexes/{index_uid}/documents", json=docs))
    assert task["error"] == error(
        "index_primary_key_multiple_candidates_found",
        "The primary key inference failed as the engine found 3 fields ending with `id` in their names: 'id' and "
        "'object_id'. " + PK_HINT,
    )
    # the index exists (created by the task) but has no primary key yet
    assert http.get(f"/indexes/{index_uid}").json()["primaryKey"] is None
    # a payload with a single candidate then succeeds
    res = http.post(f"/indexes/{index_uid}/documents", json=[{"primary_id": "12", "title": "11"}])
    assert wait_task(http, res.json()["taskUid"])["status"] == "succeeded"
    assert http.get(f"/indexes/{index_uid}").json()["primaryKey"] == "primary_id"


def test_primary_key_inference_failure_exact_error(http: httpx.Client, index_uid: str) -> None:
    task = failed(http, http.post(f"/indexes/{index_uid}/documents", json=[{"title": "11"}]))
    assert task["error"] == error(
        "index_primary_key_no_candidate_found",
        "The primary key inference failed as the engine did not find any field ending with `id` in its name. "
        + PK_HINT,
    )


def test_invalid_explicit_primary_key_leaves_index_without_one(http: httpx.Client, index_uid: str) -> None:
    res = http.post(
        f"/indexes/{index_uid}/documents",
        json=[{"id": 2, "title": "Pride and Prejudice"}],
        params={"primaryKey": "title"},
    )
    task = failed(http, res)
    assert task["error"]["code"] == "invalid_document_id"
    assert http.get(f"/indexes/{index_uid}").json()["primaryKey"] is None
    res = http.post(f"/indexes/{index_uid}/documents", json=[{"id": "e" * 513}], params={"primaryKey": "id"})
    failed(http, res)
    assert http.get(f"/indexes/{index_uid}").json()["primaryKey"] is None


def test_changing_primary_key_with_documents_fails(http: httpx.Client, filled: str) -> None:
    with Unchanged(http, filled) as unchanged:
        res = http.post(
            f"/indexes/{filled}/documents", json=[{"id": 5, "title": "x"}], params={"primaryKey": "title"}
        )
        task = failed(http, res)
        unchanged.before = (unchanged.before[0], unchanged.before[1] + 1)
    assert task["details"] == {"receivedDocuments": 1, "indexedDocuments": 0}
    assert task["error"] == error(
        "index_primary_key_already_exists", "Index already has a primary key: `id`."
    )
    assert http.get(f"/indexes/{filled}").json()["primaryKey"] == "id"


def test_changing_primary_key_with_documents_exact_error(http: httpx.Client, filled: str) -> None:
    res = http.post(
        f"/indexes/{filled}/documents", json=[{"id": 5, "title": "x"}], params={"primaryKey": "title"}
    )
    assert failed(http, res)["error"] == error(
        "index_primary_key_already_exists", "Index already has a primary key: `id`."
    )


def test_failed_task_in_batch_does_not_block_others(http: httpx.Client, index_uid: str) -> None:
    uids = [
        http.post(f"/indexes/{index_uid}/documents", json=docs).json()["taskUid"]
        for docs in ([{"id": 1}], [{"id": "bad id"}], [{"id": 3}])
    ]
    statuses = [wait_task(http, uid)["status"] for uid in uids]
    assert statuses == ["succeeded", "failed", "succeeded"]
    assert [d["id"] for d in http.get(f"/indexes/{index_uid}/documents").json()["results"]] == [1, 3]


# -- payload size limit ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "shown"),
    [
        (100_000_000, "95.367431640625 MiB"),
        (10 * 1024 * 1024, "10 MiB"),
        (1000, "1000 B"),
        (1024, "1 KiB"),
        (1_500_000, "1.430511474609375 MiB"),
        (2**30, "1 GiB"),
    ],
)
def test_payload_limit_is_printed_in_binary_units(limit: int, shown: str) -> None:
    """byte_unit's `get_appropriate_unit(UnitType::Binary)`, as in Meilisearch's message."""
    from hanzo_engine.server.http import human_size

    assert human_size(limit) == shown


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("small") / "data.ms", extra_args=["--http-payload-size-limit", "1KB"]
    ).start()
    yield srv
    srv.stop()


def test_payload_too_large(small_server: ServerProcess) -> None:
    too_large = error(
        "payload_too_large",
        "The provided payload reached the size limit. The maximum accepted payload size is 1000 B.",
    )
    with httpx.Client(base_url=small_server.url, timeout=30) as client:
        res = client.post("/indexes/small/documents", json=[{"id": 1}])
        assert wait_task(client, res.json()["taskUid"])["status"] == "succeeded"
        big = b'[{"id": 2, "text": "' + b"x" * 1000 + b'"}]'
        # with a Content-Length header, for every payload format and both methods
        check(
            client.post(
                "/indexes/small/documents", content=big, headers={"Content-Type": "application/json"}
            ),
            413,
            too_large,
        )
        check(
            client.put(
                "/indexes/small/documents",
                content=b"id\n" + b"1\n" * 600,
                headers={"Content-Type": "text/csv"},
            ),
            413,
            too_large,
        )

        # streamed without a length
        def chunks() -> Iterator[bytes]:
            yield big[:500]
            yield big[500:]

        check(
            client.post(
                "/indexes/small/documents", content=chunks(), headers={"Content-Type": "application/json"}
            ),
            413,
            too_large,
        )
        # a small compressed body that inflates past the limit
        bomb = gzip.compress(big)
        assert len(bomb) < 1000
        check(
            client.post(
                "/indexes/small/documents",
                content=bomb,
                headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
            ),
            413,
            too_large,
        )
        # exactly at the limit is accepted
        exact = b'[{"id": 3, "t": "' + b"y" * (1000 - 20) + b'"}]'
        assert len(exact) == 1000
        res = client.post(
            "/indexes/small/documents", content=exact, headers={"Content-Type": "application/json"}
        )
        assert wait_task(client, res.json()["taskUid"])["status"] == "succeeded"
        # JSON routes are limited too
        res = client.post("/indexes", json={"uid": "x" * 2000})
        assert res.status_code == 413 and res.json()["code"] == "payload_too_large"
        docs = client.get("/indexes/small/documents").json()
        assert [d["id"] for d in docs["results"]] == [1, 3]
        total = client.get("/tasks", params={"limit": 0}).json()["total"]
        assert total == 2
    # refused payloads left no update file behind
    update_files = Path(small_server.db_path) / "update_files"
    assert sorted(update_files.iterdir()) == []
