"""POST /indexes/{uid}/documents/edit (experimental `editDocumentsByFunction`), against Meilisearch's
route (`routes/indexes/documents.rs` `edit_documents_by_function`), its task processing
(`process_index_operation.rs`, `update_by_function.rs`) and the SDK suites' cases (python
`test_client_update_document_by_functions.py`, js `updateDocumentsByFunction`), docs/api-contract.md §18.

Bodies are compared whole: the 202 summary, the finished task (dates and duration aside), errors with
Meilisearch's messages, and the documents after the task.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task

MOVIES: Final = [
    {"id": "287947", "title": "Shazam", "genre": "action", "year": 2019},
    {"id": "299537", "title": "Captain Marvel", "genre": "action", "year": 2019},
    {"id": "522681", "title": "Escape Room", "genre": "horror", "year": 2019},
    {"id": "166428", "title": "How to Train Your Dragon", "genre": "family", "year": 2019},
]
RUNTIME: Final = "Document edition runtime error encountered while running the function: "


def error(code: str, message: str, type_: str = "invalid_request") -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": type_,
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(Path(tmp_path_factory.mktemp("edit")) / "data.ms").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def http(srv: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=srv.url, timeout=30) as client:
        r = client.patch("/experimental-features", json={"editDocumentsByFunction": True})
        assert r.status_code == 200 and r.json()["editDocumentsByFunction"] is True
        yield client


_n = [0]


@pytest.fixture
def movies(http: httpx.Client) -> str:
    """A fresh index holding MOVIES, `genre` and `year` filterable."""
    _n[0] += 1
    uid = f"movies_{_n[0]}"
    r = http.patch(f"/indexes/{uid}/settings", json={"filterableAttributes": ["genre", "year"]})
    assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
    r = http.post(f"/indexes/{uid}/documents", json=MOVIES)
    assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
    return uid


def documents(http: httpx.Client, uid: str) -> list[dict[str, Any]]:
    r = http.get(f"/indexes/{uid}/documents", params={"limit": 100})
    assert r.status_code == 200, r.text
    return sorted(r.json()["results"], key=lambda d: str(d["id"]))


def edit(http: httpx.Client, uid: str, body: dict[str, Any]) -> dict[str, Any]:
    r = http.post(f"/indexes/{uid}/documents/edit", json=body)
    assert r.status_code == 202, r.text
    summary = r.json()
    assert list(summary) == ["taskUid", "indexUid", "status", "type", "enqueuedAt"]
    assert (summary["indexUid"], summary["status"], summary["type"]) == (uid, "enqueued", "documentEdition")
    task = wait_task(http, summary["taskUid"])
    assert list(task) == [
        "uid",
        "batchUid",
        "indexUid",
        "status",
        "type",
        "canceledBy",
        "details",
        "error",
        "duration",
        "enqueuedAt",
        "startedAt",
        "finishedAt",
    ]
    return task


def details(
    edited: int | None,
    deleted: int | None,
    function: str,
    original_filter: str | None = None,
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "editedDocuments": edited,
        "deletedDocuments": deleted,
        "originalFilter": original_filter,
        "context": context,
        "function": function,
    }


# -- the route ------------------------------------------------------------------------------------


def test_route_is_gated(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms").start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as client:
            r = client.post("/indexes/movies/documents/edit", json={"function": "doc.a = 1"})
            assert r.status_code == 400
            assert r.json() == error(
                "feature_not_enabled",
                "Using the documents edit route requires enabling the `edit documents by "
                "function` experimental feature. See https://github.com/orgs/meilisearch/discussions/762",
            )
            # the body is read before the feature is checked
            r = client.post("/indexes/movies/documents/edit", json={})
            assert r.json()["code"] == "missing_document_edition_function"
    finally:
        srv.stop()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, error("missing_document_edition_function", "Missing field `function`")),
        (
            {"function": 1},
            error(
                "invalid_document_edition_function_filter",
                "Invalid value type at `.function`: expected a string, but found a positive integer: `1`",
            ),
        ),
        (
            {"function": "doc.a = 1", "context": [1]},
            error("invalid_document_edition_context", "The context must be an object"),
        ),
        (
            {"function": "doc.a = 1", "context": "x"},
            error("invalid_document_edition_context", "The context must be an object"),
        ),
        (
            {"function": "doc.a = 1", "filter": ""},
            error("invalid_document_filter", "Sending an empty filter is forbidden."),
        ),
        (
            {"function": "doc.a = 1", "filter": "genre ="},
            error("invalid_document_filter", "Was expecting a value but instead got nothing.\n8:8 genre ="),
        ),
        (
            {"function": "doc.a = 1", "filter": 1},
            error(
                "invalid_document_filter",
                "Invalid syntax for the filter parameter: `expected String, Array, found: 1`.",
            ),
        ),
        ({"function": "doc.a = 1 +"}, error("bad_request", "Script is incomplete (line 1, position 12)")),
        (
            {"function": "let x = 1 let y = 2"},
            error("bad_request", "Expecting ';' to terminate this statement (line 1, position 11)"),
        ),
        (
            {"function": "doc.a = 1", "other": 1},
            error("bad_request", "Unknown field `other`: expected one of `filter`, `context`, `function`"),
        ),
    ],
)
def test_request_errors(http: httpx.Client, body: dict[str, Any], expected: dict[str, str]) -> None:
    r = http.post("/indexes/movies/documents/edit", json=body)
    assert (r.status_code, r.json()) == (400, expected), r.text


def test_invalid_index_uid(http: httpx.Client) -> None:
    r = http.post("/indexes/bad%20uid/documents/edit", json={"function": "1"})
    assert r.status_code == 400
    assert r.json()["code"] == "invalid_index_uid"


def test_a_missing_index_fails_the_task_and_is_not_created(http: httpx.Client) -> None:
    task = edit(http, "nowhere", {"function": "doc.a = 1"})
    assert task["status"] == "failed"
    assert task["details"] == details(0, None, "doc.a = 1")
    assert task["error"] == error("index_not_found", "Index `nowhere` not found.")
    assert http.get("/indexes/nowhere").status_code == 404


# -- processing -----------------------------------------------------------------------------------


def test_delete_one_and_edit_the_others(http: httpx.Client, movies: str) -> None:
    function = 'if doc.id == "522681" {doc = () } else {doc.title = `* ${doc.title} *`}'
    task = edit(http, movies, {"function": function})
    assert task["status"] == "succeeded", task
    assert task["error"] is None
    # both counters are the number of documents the function ran on
    assert task["details"] == details(4, 4, function)
    assert documents(http, movies) == [
        {"genre": "family", "id": "166428", "title": "* How to Train Your Dragon *", "year": 2019},
        {"genre": "action", "id": "287947", "title": "* Shazam *", "year": 2019},
        {"genre": "action", "id": "299537", "title": "* Captain Marvel *", "year": 2019},
    ]
    # stored documents keep the index's field order (Meilisearch stores them by field id)
    assert list(http.get(f"/indexes/{movies}/documents/287947").json()) == ["id", "title", "genre", "year"]
    batch = http.get(f"/batches/{task['batchUid']}").json()
    assert batch["stats"]["totalNbTasks"] == 1
    assert batch["stats"]["types"] == {"documentEdition": 1}
    # a finished batch omits its null details (Meilisearch's `Option<Option<_>>` round trip)
    assert batch["details"] == {"editedDocuments": 4, "deletedDocuments": 4, "function": function}
    listed = http.get("/tasks", params={"types": "documentEdition", "indexUids": movies}).json()["results"]
    assert [t["uid"] for t in listed] == [task["uid"]]


def test_context_and_filter(http: httpx.Client, movies: str) -> None:
    function = "doc.comment = `Yer a wizard, ${context.ctx}!`; doc.year += context.add"
    task = edit(
        http,
        movies,
        {"function": function, "filter": "genre = action", "context": {"ctx": "Harry", "add": 1}},
    )
    assert task["status"] == "succeeded", task
    assert task["details"] == details(2, 2, function, '"genre = action"', {"ctx": "Harry", "add": 1})
    docs = {d["id"]: d for d in documents(http, movies)}
    assert docs["287947"] == {
        "comment": "Yer a wizard, Harry!",
        "genre": "action",
        "id": "287947",
        "title": "Shazam",
        "year": 2020,
    }
    assert docs["299537"]["comment"] == "Yer a wizard, Harry!"
    assert list(http.get(f"/indexes/{movies}/documents/287947").json()) == [
        "id",
        "title",
        "genre",
        "year",
        "comment",
    ]
    # documents outside the filter are untouched, their field order too
    assert docs["522681"] == MOVIES[2]
    assert list(http.get(f"/indexes/{movies}/documents/522681").json()) == ["id", "title", "genre", "year"]
    # the edited fields are indexed: searchable and filterable
    hits = http.post(f"/indexes/{movies}/search", json={"q": "wizard", "filter": "year = 2020"}).json()[
        "hits"
    ]
    assert sorted(h["id"] for h in hits) == ["287947", "299537"]


def test_array_filter_and_to_upper(http: httpx.Client, movies: str) -> None:
    function = "doc.title = doc.title.to_upper()"
    task = edit(http, movies, {"function": function, "filter": [["genre = horror", "genre = family"]]})
    assert task["status"] == "succeeded", task
    assert task["details"]["originalFilter"] == '[["genre = horror","genre = family"]]'
    titles = {d["id"]: d["title"] for d in documents(http, movies)}
    assert titles == {
        "166428": "HOW TO TRAIN YOUR DRAGON",
        "287947": "Shazam",
        "299537": "Captain Marvel",
        "522681": "ESCAPE ROOM",
    }


def test_switch_and_loops(http: httpx.Client, movies: str) -> None:
    function = """
        doc.kind = switch doc.genre { "action" | "horror" => "thrill", "family" => { "fun" }, _ => "other" };
        let stars = "";
        let i = 0;
        do { stars += "*"; i += 1; } until i >= doc.title.len / 5;
        for (c, n) in doc.title.to_chars() { if c == ' ' { doc.first_space = n; break; } }
        doc.stars = stars;
    """
    task = edit(http, movies, {"function": function})
    assert task["status"] == "succeeded", task["error"]
    docs = {d["id"]: d for d in documents(http, movies)}
    assert docs["287947"] == {**MOVIES[0], "kind": "thrill", "stars": "*"}
    assert docs["166428"] == {**MOVIES[3], "kind": "fun", "stars": "****", "first_space": 3}
    assert docs["299537"]["first_space"] == 7


def test_script_functions(http: httpx.Client, movies: str) -> None:
    function = """
        fn initials(title) { let out = ""; for word in title.split(" ") { out += word[0]; } out }
        fn decade(year) { return year / 10 * 10; }
        doc.initials = initials(doc.title);
        doc.decade = decade(doc.year);
    """
    task = edit(http, movies, {"function": function})
    assert task["status"] == "succeeded", task["error"]
    docs = {d["id"]: d for d in documents(http, movies)}
    assert (docs["166428"]["initials"], docs["166428"]["decade"]) == ("HtTYD", 2010)
    # functions see only their parameters; an error inside one names it
    task = edit(http, movies, {"function": "fn touch() { doc.x = 1 } touch()"})
    assert task["status"] == "failed"
    assert task["error"]["message"] == (
        f"Index `{movies}`: {RUNTIME}Variable not found: doc (line 1, position 14)\nin call to function 'touch' "
        "(line 1, position 26)"
    )
    r = http.post(f"/indexes/{movies}/documents/edit", json={"function": "if true { fn f() {} }"})
    assert r.json() == error(
        "bad_request",
        "Function definitions must be at global level and cannot be inside "
        "a block or another function (line 1, position 11)",
    )


def test_no_candidate(http: httpx.Client, movies: str) -> None:
    task = edit(http, movies, {"function": "doc = ()", "filter": "year > 3000"})
    assert task["status"] == "succeeded"
    assert task["details"] == details(0, 0, "doc = ()", '"year > 3000"')
    assert len(documents(http, movies)) == 4


def test_a_bare_expression_changes_nothing(http: httpx.Client, movies: str) -> None:
    task = edit(http, movies, {"function": "1"})
    assert task["status"] == "succeeded"
    assert task["details"] == details(4, 4, "1")
    assert documents(http, movies) == sorted(MOVIES, key=lambda d: d["id"])
    assert list(http.get(f"/indexes/{movies}/documents/522681").json()) == ["id", "title", "genre", "year"]


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("doc.title = foo", RUNTIME + "Variable not found: foo (line 1, position 13)"),
        (
            "doc.title = doc.title.len.foo",
            RUNTIME + "Unknown property 'foo' - a getter is not registered for type "
            "'i64' (line 1, position 27)",
        ),
        (
            "doc.year = doc.title - 1",
            RUNTIME + "Function not found: - (&str | ImmutableString | String, i64) (line 1, position 22)",
        ),
        (
            'doc.title = "x"; if doc.id == "522681" { loop { } }',
            RUNTIME + "Too many operations (line 1, position 42)",
        ),
        (
            'doc.title = "x"; if doc.id == "522681" { throw "no" }',
            RUNTIME + "Runtime error: no (line 1, position 42)",
        ),
        (
            'doc.title = "x"; if doc.id == "166428" { doc = 5 }',
            "Document editions must keep documents as objects",
        ),
        (
            'doc.title = "x"; if doc.id == "166428" { doc.id = "1" }',
            "Document editions cannot modify a document's primary key",
        ),
        ("doc.year = doc.year / 0", RUNTIME + "Division by zero: 2019 / 0 (line 1, position 21)"),
        ("context.x = 1", RUNTIME + "Cannot modify constant context (line 1, position 11)"),
    ],
)
def test_a_failing_function_changes_nothing(
    http: httpx.Client, movies: str, function: str, message: str
) -> None:
    body: dict[str, Any] = {"function": function}
    if "context" in function:
        body["context"] = {"x": 0}
    task = edit(http, movies, body)
    assert task["status"] == "failed"
    assert task["error"] == error("edit_documents_by_function_error", f"Index `{movies}`: {message}")
    assert task["details"] == details(0, None, function, context=body.get("context"))
    assert documents(http, movies) == sorted(MOVIES, key=lambda d: d["id"])


def test_filter_on_an_attribute_that_is_not_filterable(http: httpx.Client, movies: str) -> None:
    task = edit(http, movies, {"function": "doc = ()", "filter": "title = Shazam"})
    assert task["status"] == "failed"
    assert task["error"]["code"] == "invalid_document_filter"
    assert task["error"]["message"].startswith(f"Index `{movies}`: Attribute `title` is not filterable.")
    assert len(documents(http, movies)) == 4


def test_edition_runs_alone_in_its_batch(http: httpx.Client, movies: str) -> None:
    uids = [
        http.post(f"/indexes/{movies}/documents", json=[{"id": "1", "title": "a"}]).json()["taskUid"],
        http.post(f"/indexes/{movies}/documents/edit", json={"function": "doc.n = 1"}).json()["taskUid"],
        http.post(f"/indexes/{movies}/documents", json=[{"id": "2", "title": "b"}]).json()["taskUid"],
    ]
    tasks = [wait_task(http, uid) for uid in uids]
    assert [t["status"] for t in tasks] == ["succeeded"] * 3
    assert len({t["batchUid"] for t in tasks}) == 3
    docs = {d["id"]: d for d in documents(http, movies)}
    assert docs["1"] == {"id": "1", "n": 1, "title": "a"}
    assert docs["2"] == {"id": "2", "title": "b"}


def test_deleting_every_document(http: httpx.Client, movies: str) -> None:
    task = edit(http, movies, {"function": "doc = ()"})
    assert task["details"] == details(4, 4, "doc = ()")
    assert documents(http, movies) == []
    assert http.get(f"/indexes/{movies}/stats").json()["numberOfDocuments"] == 0
    assert http.post(f"/indexes/{movies}/search", json={"q": "shazam"}).json()["hits"] == []


def test_a_late_failure_rolls_back_the_documents_already_edited(http: httpx.Client) -> None:
    """Editions are written a chunk at a time: a failure after the first chunks still leaves every
    document as it was (the whole write transaction is dropped), and the index's updatedAt too."""
    uid = "many_docs"
    docs = [{"id": i, "n": i, "tags": ["x"]} for i in range(3000)]
    r = http.post(f"/indexes/{uid}/documents", json=docs)
    assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
    updated_at = http.get(f"/indexes/{uid}").json()["updatedAt"]
    function = "doc.n += 1; doc.tags.push(`t${doc.id}`); if doc.id == 2900 { doc.n = doc.nope.len() }"
    task = edit(http, uid, {"function": function})
    assert task["status"] == "failed"
    assert task["error"]["message"] == (
        f"Index `{uid}`: {RUNTIME}Function not found: len (()) (line 1, position 79)"
    )
    r = http.post(f"/indexes/{uid}/documents/fetch", json={"limit": 3000})
    assert sorted(r.json()["results"], key=lambda d: d["id"]) == docs
    assert http.get(f"/indexes/{uid}").json()["updatedAt"] == updated_at
    # and the same function without the failure edits every document
    task = edit(http, uid, {"function": "doc.n += 1; doc.tags.push(`t${doc.id}`);"})
    assert task["status"] == "succeeded"
    r = http.post(f"/indexes/{uid}/documents/fetch", json={"limit": 3000})
    assert sorted(r.json()["results"], key=lambda d: d["id"]) == [
        {"id": i, "n": i + 1, "tags": ["x", f"t{i}"]} for i in range(3000)
    ]
    hits = http.post(f"/indexes/{uid}/search", json={"q": "t2999", "matchingStrategy": "all"}).json()["hits"]
    assert hits[0]["id"] == 2999  # the edited field is indexed
