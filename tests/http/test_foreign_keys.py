"""The `foreignKeys` index setting (Meilisearch 1.50, experimental feature `foreignKeys`) over raw HTTP.

Bodies are compared field by field with what Meilisearch's own tests assert (`tests/settings/
get_settings.rs`, `routes/indexes/settings.rs`, `index-scheduler/src/features.rs`): the sub-route
`/settings/foreign-keys` with PUT, its default `[]`, the feature gate on *setting* it (resetting and
reading need no feature), `GET /settings` showing it after `sortableAttributes` only while the feature
is on, task details, validation errors and dumps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task
from tests.unit.test_settings_model import CONTRACT_DEFAULTS

LINK = "https://docs.meilisearch.com/errors#"
KEYS = [
    {"foreignIndexUid": "products", "fieldName": "productId"},
    {"foreignIndexUid": "authors", "fieldName": "author.id"},
]
GATE_MESSAGE = (
    "setting `foreignKeys` in the index settings requires enabling the `foreign_keys` experimental "
    "feature. See https://github.com/orgs/meilisearch/discussions/873"
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server of this module's own: the tests turn `foreignKeys` on and off, a server-wide switch."""
    srv = ServerProcess(tmp_path_factory.mktemp("foreign_keys") / "data.ms").start()
    yield srv
    srv.stop()


@pytest.fixture
def api(engine: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=engine.url, timeout=30) as client:
        yield client


def set_feature(api: httpx.Client, on: bool) -> None:
    res = api.patch("/experimental-features", json={"foreignKeys": on})
    assert res.status_code == 200 and res.json()["foreignKeys"] is on, res.text


def error(res: httpx.Response, status: int, code: str, message: str) -> None:
    assert res.status_code == status, res.text
    assert res.json() == {"message": message, "code": code, "type": "invalid_request", "link": LINK + code}


def settings_task(
    api: httpx.Client, res: httpx.Response, uid: str, status: str = "succeeded"
) -> dict[str, Any]:
    assert res.status_code == 202, res.text
    summary = res.json()
    assert (
        summary["type"] == "settingsUpdate" and summary["indexUid"] == uid and summary["status"] == "enqueued"
    )
    task = wait_task(api, summary["taskUid"])
    assert task["status"] == status, task
    return task


def with_foreign_keys(value: Any) -> dict[str, Any]:
    """`GET /settings` while the feature is on: `foreignKeys` right after `sortableAttributes`."""
    out: dict[str, Any] = {}
    for name, default in CONTRACT_DEFAULTS.items():
        out[name] = default
        if name == "sortableAttributes":
            out["foreignKeys"] = value
    return out


def create_index(api: httpx.Client, uid: str) -> None:
    assert wait_task(api, api.post("/indexes", json={"uid": uid}).json()["taskUid"])["status"] == "succeeded"


# ------------------------------------------------------------------------------------------------
# Reading: the default, and where `GET /settings` shows it
# ------------------------------------------------------------------------------------------------


def test_default_is_an_empty_list_and_get_settings_shows_it_only_with_the_feature(
    api: httpx.Client, index_uid: str
) -> None:
    create_index(api, index_uid)
    set_feature(api, False)
    # the sub-route answers whatever the feature (Meilisearch's generated GET checks no feature)
    res = api.get(f"/indexes/{index_uid}/settings/foreign-keys")
    assert res.status_code == 200 and res.json() == []
    whole = api.get(f"/indexes/{index_uid}/settings").json()
    assert "foreignKeys" not in whole and whole == CONTRACT_DEFAULTS

    set_feature(api, True)
    try:
        whole = api.get(f"/indexes/{index_uid}/settings").json()
        assert whole == with_foreign_keys([])
        assert list(whole) == list(with_foreign_keys([]))
        assert list(whole)[4] == "foreignKeys"
    finally:
        set_feature(api, False)


@pytest.mark.parametrize("method", ["GET"])
def test_get_on_a_missing_index_is_404(api: httpx.Client, index_uid: str, method: str) -> None:
    error(
        api.request(method, f"/indexes/{index_uid}/settings/foreign-keys"),
        404,
        "index_not_found",
        f"Index `{index_uid}` not found.",
    )


# ------------------------------------------------------------------------------------------------
# Update and reset: task flow and details
# ------------------------------------------------------------------------------------------------


def test_put_get_delete_round_trip(api: httpx.Client, index_uid: str) -> None:
    set_feature(api, True)
    try:
        url = f"/indexes/{index_uid}/settings/foreign-keys"
        # the update creates the missing index; the order of the keys is kept
        task = settings_task(api, api.put(url, json=KEYS), index_uid)
        assert task["type"] == "settingsUpdate" and task["details"] == {"foreignKeys": KEYS}
        assert api.get(url).json() == KEYS
        assert api.get(f"/indexes/{index_uid}/settings").json() == with_foreign_keys(KEYS)

        task = settings_task(api, api.delete(url), index_uid)
        assert task["details"] == {"foreignKeys": None}
        assert api.get(url).json() == []

        # `null` as the body resets too; an empty list is a value like any other
        settings_task(api, api.put(url, json=KEYS[:1]), index_uid)
        task = settings_task(
            api, api.put(url, content=b"null", headers={"content-type": "application/json"}), index_uid
        )
        assert task["details"] == {"foreignKeys": None} and api.get(url).json() == []
        task = settings_task(api, api.put(url, json=[]), index_uid)
        assert task["details"] == {"foreignKeys": []} and api.get(url).json() == []
    finally:
        set_feature(api, False)


def test_patch_settings_carries_it_in_canonical_order(api: httpx.Client, index_uid: str) -> None:
    set_feature(api, True)
    try:
        body = {"rankingRules": ["words"], "foreignKeys": KEYS[1:], "sortableAttributes": ["price"]}
        task = settings_task(api, api.patch(f"/indexes/{index_uid}/settings", json=body), index_uid)
        assert task["details"] == {
            "sortableAttributes": ["price"],
            "foreignKeys": KEYS[1:],
            "rankingRules": ["words"],
        }
        assert list(task["details"]) == ["sortableAttributes", "foreignKeys", "rankingRules"]
        assert api.get(f"/indexes/{index_uid}/settings/foreign-keys").json() == KEYS[1:]

        # resetting every setting resets it (`Settings::cleared()` names it after `sortableAttributes`)
        task = settings_task(api, api.delete(f"/indexes/{index_uid}/settings"), index_uid)
        names = list(task["details"])
        assert (
            names[names.index("sortableAttributes") + 1] == "foreignKeys"
            and task["details"]["foreignKeys"] is None
        )
        assert api.get(f"/indexes/{index_uid}/settings/foreign-keys").json() == []
    finally:
        set_feature(api, False)


def test_the_value_outlives_the_feature(api: httpx.Client, index_uid: str) -> None:
    """Turning the feature off hides the setting from `GET /settings` but keeps it stored."""
    set_feature(api, True)
    settings_task(api, api.put(f"/indexes/{index_uid}/settings/foreign-keys", json=KEYS), index_uid)
    set_feature(api, False)
    assert "foreignKeys" not in api.get(f"/indexes/{index_uid}/settings").json()
    assert api.get(f"/indexes/{index_uid}/settings/foreign-keys").json() == KEYS
    # other settings can still be updated, and the stored keys stay
    settings_task(api, api.patch(f"/indexes/{index_uid}/settings", json={"stopWords": ["a"]}), index_uid)
    assert api.get(f"/indexes/{index_uid}/settings/foreign-keys").json() == KEYS


def test_delete_on_a_missing_index_fails_the_task(api: httpx.Client, index_uid: str) -> None:
    task = settings_task(api, api.delete(f"/indexes/{index_uid}/settings/foreign-keys"), index_uid, "failed")
    assert task["error"]["code"] == "index_not_found"
    assert api.get(f"/indexes/{index_uid}").status_code == 404


def test_wrong_verb_is_405(api: httpx.Client, index_uid: str) -> None:
    create_index(api, index_uid)
    res = api.patch(f"/indexes/{index_uid}/settings/foreign-keys", json=KEYS)
    assert res.status_code == 405


# ------------------------------------------------------------------------------------------------
# The feature gate
# ------------------------------------------------------------------------------------------------


def test_setting_it_needs_the_feature(api: httpx.Client, index_uid: str) -> None:
    set_feature(api, False)
    error(
        api.put(f"/indexes/{index_uid}/settings/foreign-keys", json=KEYS),
        400,
        "feature_not_enabled",
        GATE_MESSAGE,
    )
    error(
        api.patch(f"/indexes/{index_uid}/settings", json={"foreignKeys": KEYS}),
        400,
        "feature_not_enabled",
        GATE_MESSAGE,
    )
    # an empty list is still a value: refused as well
    error(
        api.put(f"/indexes/{index_uid}/settings/foreign-keys", json=[]),
        400,
        "feature_not_enabled",
        GATE_MESSAGE,
    )
    assert api.get(f"/indexes/{index_uid}").status_code == 404  # nothing was enqueued

    # resets need no feature: `null` through the sub-route or `/settings`, and DELETE
    task = settings_task(
        api,
        api.put(
            f"/indexes/{index_uid}/settings/foreign-keys",
            content=b"null",
            headers={"content-type": "application/json"},
        ),
        index_uid,
    )
    assert task["details"] == {"foreignKeys": None}
    task = settings_task(
        api, api.patch(f"/indexes/{index_uid}/settings", json={"foreignKeys": None}), index_uid
    )
    assert task["details"] == {"foreignKeys": None}
    task = settings_task(api, api.delete(f"/indexes/{index_uid}/settings/foreign-keys"), index_uid)
    assert task["details"] == {"foreignKeys": None}


def test_a_body_error_comes_before_the_feature_gate(api: httpx.Client, index_uid: str) -> None:
    set_feature(api, False)
    error(
        api.put(f"/indexes/{index_uid}/settings/foreign-keys", json="products"),
        400,
        "invalid_settings_foreign_keys",
        'Invalid value type: expected an array, but found a string: `"products"`',
    )


# ------------------------------------------------------------------------------------------------
# Validation (deserr's messages, code `invalid_settings_foreign_keys`)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"foreignIndexUid": "products", "fieldName": "productId"},
            'Invalid value type: expected an array, but found an object: `{"foreignIndexUid":"products",'
            '"fieldName":"productId"}`',
        ),
        (["products"], 'Invalid value type at `[0]`: expected an object, but found a string: `"products"`'),
        ([{"fieldName": "productId"}], "Missing field `foreignIndexUid` inside `[0]`"),
        ([KEYS[0], {"foreignIndexUid": "products"}], "Missing field `fieldName` inside `[1]`"),
        (
            [{"foreignIndexUid": 1, "fieldName": "productId"}],
            "Invalid value type at `[0].foreignIndexUid`: expected a string, but found a positive integer: `1`",
        ),
        (
            [{"foreignIndexUid": "products", "fieldName": None}],
            "Invalid value type at `[0].fieldName`: expected a string, but found null",
        ),
        (
            [{"foreignIndexUid": "products", "fieldName": "productId", "fieldNames": "x"}],
            "Unknown field `fieldNames` inside `[0]`: did you mean `fieldName`? expected one of `foreignIndexUid`, `fieldName`",
        ),
    ],
)
def test_sub_route_body_errors(api: httpx.Client, index_uid: str, body: Any, message: str) -> None:
    set_feature(api, True)
    try:
        error(
            api.put(f"/indexes/{index_uid}/settings/foreign-keys", json=body),
            400,
            "invalid_settings_foreign_keys",
            message,
        )
    finally:
        set_feature(api, False)


def test_settings_body_errors_name_the_setting(api: httpx.Client, index_uid: str) -> None:
    set_feature(api, True)
    try:
        error(
            api.patch(f"/indexes/{index_uid}/settings", json={"foreignKeys": "x"}),
            400,
            "invalid_settings_foreign_keys",
            'Invalid value type at `.foreignKeys`: expected an array, but found a string: `"x"`',
        )
        error(
            api.patch(f"/indexes/{index_uid}/settings", json={"foreignKeys": [{"foreignIndexUid": "p"}]}),
            400,
            "invalid_settings_foreign_keys",
            "Missing field `fieldName` inside `.foreignKeys[0]`",
        )
    finally:
        set_feature(api, False)


# ------------------------------------------------------------------------------------------------
# Persistence: restart and dumps
# ------------------------------------------------------------------------------------------------


def test_restart_and_dump_keep_the_keys(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms").start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as api:
            set_feature(api, True)
            settings_task(api, api.put("/indexes/orders/settings/foreign-keys", json=KEYS), "orders")
        srv.stop()
        srv.start()
        with httpx.Client(base_url=srv.url, timeout=30) as api:
            assert api.get("/indexes/orders/settings/foreign-keys").json() == KEYS
            dump = wait_task(api, api.post("/dumps").json()["taskUid"])
            assert dump["status"] == "succeeded", dump
            dump_uid = dump["details"]["dumpUid"]
    finally:
        srv.stop()
    imported = ServerProcess(
        tmp_path / "imported.ms", extra_args=["--import-dump", str(tmp_path / "dumps" / f"{dump_uid}.dump")]
    ).start()
    try:
        with httpx.Client(base_url=imported.url, timeout=30) as api:
            assert api.get("/experimental-features").json()["foreignKeys"] is True
            assert api.get("/indexes/orders/settings/foreign-keys").json() == KEYS
            assert api.get("/indexes/orders/settings").json() == with_foreign_keys(KEYS)
    finally:
        imported.stop()


# ------------------------------------------------------------------------------------------------
# Joins: `_foreign(..)` filters and hit hydration (Meilisearch's tests/search/document_join.rs)
# ------------------------------------------------------------------------------------------------

AUTHORS = [
    {"id": "a1", "name": "Alice", "birthday": "1990-01-01", "popularity": 2.0},
    {"id": "a2", "name": "Bob", "birthday": "1958-06-15", "popularity": 4.5},
    {"id": "a3", "name": "Charlie", "birthday": "1940-05-05", "popularity": 4.8},
    {"id": "a4", "name": "Diana", "birthday": "1985-03-20", "popularity": 3.2},
    {"id": "a5", "name": "Ethan", "birthday": "1972-11-30", "popularity": 3.9},
    {"id": "a6", "name": "Fiona", "birthday": "1988-07-14", "popularity": 2.8},
]
BOOKS = [
    {
        "id": "b1",
        "title": "Rust in action",
        "author": "a1",
        "related_authors": ["a2", "a3"],
        "genres": ["tech", "programming"],
    },
    {
        "id": "b2",
        "title": "Captain Marvel story",
        "author": "a2",
        "related_authors": ["a3", "a4"],
        "genres": ["action", "fiction"],
    },
    {
        "id": "b3",
        "title": "The Great Gatsby",
        "author": "a3",
        "related_authors": ["a4", "a5"],
        "genres": ["action", "classic"],
    },
    {
        "id": "b4",
        "title": "To Kill a Mockingbird",
        "author": "a4",
        "related_authors": ["a5", "a6"],
        "genres": ["classic", "drama"],
    },
    {"id": "b5", "title": "1984", "author": "a9", "related_authors": [], "genres": ["dystopia"]},
]


def author(uid: str, displayed: tuple[str, ...] = ("id", "name", "birthday", "popularity")) -> dict[str, Any]:
    doc = next(a for a in AUTHORS if a["id"] == uid)
    return {k: doc[k] for k in displayed}


@pytest.fixture(scope="module")
def library(engine: ServerProcess) -> tuple[str, str]:
    """`lib_authors` (filterable `id`, `birthday`, `popularity`) and `lib_books` whose `author` and
    `related_authors` are foreign keys to it."""
    with httpx.Client(base_url=engine.url, timeout=30) as api:
        set_feature(api, True)
        try:
            tasks = [
                api.post("/indexes", json={"uid": "lib_authors", "primaryKey": "id"}),
                api.post("/indexes/lib_authors/documents", json=AUTHORS),
                api.patch(
                    "/indexes/lib_authors/settings",
                    json={"filterableAttributes": ["id", "birthday", "popularity"]},
                ),
                api.post("/indexes", json={"uid": "lib_books", "primaryKey": "id"}),
                api.patch(
                    "/indexes/lib_books/settings",
                    json={
                        "foreignKeys": [
                            {"foreignIndexUid": "lib_authors", "fieldName": "author"},
                            {"foreignIndexUid": "lib_authors", "fieldName": "related_authors"},
                        ],
                        "filterableAttributes": ["id", "genres", "author", "related_authors"],
                    },
                ),
                api.post("/indexes/lib_books/documents", json=BOOKS),
            ]
            for res in tasks:
                assert wait_task(api, res.json()["taskUid"])["status"] == "succeeded"
        finally:
            set_feature(api, False)
    return "lib_authors", "lib_books"


def test_hits_are_hydrated_only_with_the_feature(api: httpx.Client, library: tuple[str, str]) -> None:
    _, books = library
    body = {
        "q": "Rust",
        "attributesToRetrieve": ["title", "author", "related_authors"],
        "attributesToHighlight": ["title"],
    }
    set_feature(api, True)
    try:
        hits = api.post(f"/indexes/{books}/search", json=body).json()["hits"]
        assert hits == [
            {
                "title": "Rust in action",
                "author": author("a1"),
                "related_authors": [author("a2"), author("a3")],
                "_formatted": {
                    "title": "<em>Rust</em> in action",
                    "author": author("a1"),
                    "related_authors": [author("a2"), author("a3")],
                },
            }
        ]
        assert list(hits[0]["author"]) == ["id", "name", "birthday", "popularity"]
        # an id no document has becomes an empty object
        hits = api.post(
            f"/indexes/{books}/search", json={"q": "1984", "attributesToRetrieve": ["author"]}
        ).json()
        assert hits["hits"] == [{"author": {}}]
    finally:
        set_feature(api, False)
    hits = api.post(f"/indexes/{books}/search", json=body).json()["hits"]
    assert hits == [
        {
            "title": "Rust in action",
            "author": "a1",
            "related_authors": ["a2", "a3"],
            "_formatted": {
                "title": "<em>Rust</em> in action",
                "author": "a1",
                "related_authors": ["a2", "a3"],
            },
        }
    ]


def test_hydration_shows_the_foreign_displayed_attributes(
    api: httpx.Client, engine: ServerProcess, tmp_path: Path
) -> None:
    set_feature(api, True)
    try:
        tasks = [
            api.post("/indexes/disp_authors/documents", json=AUTHORS[:2]),
            api.put("/indexes/disp_authors/settings/displayed-attributes", json=["name"]),
            api.put(
                "/indexes/disp_books/settings/foreign-keys",
                json=[{"foreignIndexUid": "disp_authors", "fieldName": "author"}],
            ),
            api.post(
                "/indexes/disp_books/documents", json=[{"id": 1, "author": "a2"}, {"id": 2, "author": 3.5}]
            ),
        ]
        for res in tasks:
            assert wait_task(api, res.json()["taskUid"])["status"] == "succeeded"
        hits = api.post("/indexes/disp_books/search", json={}).json()["hits"]
        # a value that is no document id (a float) stays as it is
        assert hits == [{"id": 1, "author": {"name": "Bob"}}, {"id": 2, "author": 3.5}]
        # a foreign index that does not exist: Meilisearch's `user_index` answers 404
        settings_task(
            api,
            api.put(
                "/indexes/disp_books/settings/foreign-keys",
                json=[{"foreignIndexUid": "disp_nowhere", "fieldName": "author"}],
            ),
            "disp_books",
        )
        error(
            api.post("/indexes/disp_books/search", json={}),
            404,
            "index_not_found",
            "Index `disp_nowhere` not found.",
        )
    finally:
        set_feature(api, False)


def test_foreign_filter_selects_through_the_foreign_index(
    api: httpx.Client, library: tuple[str, str]
) -> None:
    _, books = library
    body = {
        "filter": 'genres = action AND _foreign(author, birthday STARTS WITH "1958-" AND popularity >= 3.5)',
        "attributesToRetrieve": ["id", "author"],
    }
    set_feature(api, True)
    try:
        res = api.post(f"/indexes/{books}/search", json=body)
        assert res.status_code == 200, res.text
        assert res.json()["hits"] == [{"id": "b2", "author": author("a2")}]
        # OR of two clauses, and NOT around one
        body = {
            "filter": 'genres = classic AND (_foreign(author, birthday STARTS WITH "198") OR '
            '_foreign(related_authors, birthday STARTS WITH "198"))',
            "attributesToRetrieve": ["id"],
        }
        assert [h["id"] for h in api.post(f"/indexes/{books}/search", json=body).json()["hits"]] == [
            "b3",
            "b4",
        ]
        body = {"filter": "NOT _foreign(author, popularity > 3)", "attributesToRetrieve": ["id"]}
        assert [h["id"] for h in api.post(f"/indexes/{books}/search", json=body).json()["hits"]] == [
            "b1",
            "b5",
        ]
        # the GET form too
        res = api.get(
            f"/indexes/{books}/search",
            params={"filter": "_foreign(author, id = a3)", "attributesToRetrieve": "id"},
        )
        assert res.json()["hits"] == [{"id": "b3"}]
    finally:
        set_feature(api, False)


def test_foreign_filter_needs_the_feature(api: httpx.Client, library: tuple[str, str]) -> None:
    _, books = library
    set_feature(api, False)
    error(
        api.post(
            f"/indexes/{books}/search",
            json={
                "filter": 'genres = action AND _foreign(author, birthday STARTS WITH "1958-" AND '
                "popularity >= 3.5)"
            },
        ),
        400,
        "feature_not_enabled",
        "using a foreign filter requires enabling the `foreign_keys` experimental feature. See "
        "https://github.com/orgs/meilisearch/discussions/873\n30:36 _foreign(author, birthday STARTS WITH "
        '"1958-" AND popularity >= 3.5)',
    )


@pytest.mark.parametrize(
    ("filter_", "status", "code", "message"),
    [
        (
            "_foreign(title, id = a1)",
            400,
            "invalid_search_filter",
            "Index `lib_books`: Field `title` is not a foreign key",
        ),
        (
            "_foreign(author, id = a1 AND _foreign(related_authors, id = a2))",
            400,
            "invalid_search_filter",
            "Index `lib_books`: Nested foreign filters are not supported",
        ),
        (
            '_foreign(author, name = "Bob")',
            400,
            "invalid_document_filter",
            "Index `lib_authors`: Attribute `name` is not filterable. Available filterable attribute patterns are: "
            '`birthday`, `id`, `popularity`.\n18:22 _foreign(author, name = "Bob")',
        ),
        (
            "genres = x AND _foreign(author, name EXISTS)",
            400,
            "invalid_document_filter",
            "Index `lib_authors`: Attribute `name` is not filterable. Available filterable attribute patterns are: "
            "`birthday`, `id`, `popularity`.\n33:37 _foreign(author, name EXISTS)",
        ),
        (
            "_foreign(author)",
            400,
            "invalid_search_filter",
            "Was expecting a field name and an condition inside `_foreign(..)` filter but instead found `)`."
            "\n16:17 _foreign(author)",
        ),
    ],
)
def test_foreign_filter_errors(
    api: httpx.Client, library: tuple[str, str], filter_: str, status: int, code: str, message: str
) -> None:
    _, books = library
    set_feature(api, True)
    try:
        error(api.post(f"/indexes/{books}/search", json={"filter": filter_}), status, code, message)
    finally:
        set_feature(api, False)


def test_the_rewritten_clause_is_checked_on_the_searched_index(
    api: httpx.Client, library: tuple[str, str]
) -> None:
    """The clause becomes `"author" IN [..]`: a foreign key that is not filterable fails there."""
    authors, _ = library
    set_feature(api, True)
    try:
        tasks = [
            api.put(
                "/indexes/plain_books/settings/foreign-keys",
                json=[{"foreignIndexUid": authors, "fieldName": "author"}],
            ),
            api.post("/indexes/plain_books/documents", json=BOOKS),
        ]
        for res in tasks:
            assert wait_task(api, res.json()["taskUid"])["status"] == "succeeded"
        error(
            api.post("/indexes/plain_books/search", json={"filter": "_foreign(author, id = a1)"}),
            400,
            "invalid_search_filter",
            "Index `plain_books`: Attribute `author` is not filterable. This index does not have configured "
            'filterable attributes.\n2:8 "author" IN ["a1"]',
        )
    finally:
        set_feature(api, False)


def test_too_many_foreign_documents_are_refused(api: httpx.Client) -> None:
    set_feature(api, True)
    try:
        tasks = [
            api.post("/indexes/many_authors/documents", json=[{"id": i, "n": 1} for i in range(101)]),
            api.put("/indexes/many_authors/settings/filterable-attributes", json=["n", "id"]),
            api.patch(
                "/indexes/many_books/settings",
                json={
                    "foreignKeys": [{"foreignIndexUid": "many_authors", "fieldName": "author"}],
                    "filterableAttributes": ["author"],
                },
            ),
            api.post("/indexes/many_books/documents", json=[{"id": 1, "author": 7}]),
        ]
        for res in tasks:
            assert wait_task(api, res.json()["taskUid"])["status"] == "succeeded"
        error(
            api.post("/indexes/many_books/search", json={"filter": "_foreign(author, n = 1)"}),
            400,
            "invalid_search_filter",
            "Index `many_authors`: Foreign filter is retrieving too many documents, foreign filters can't "
            "retrieve more than 100 documents per index",
        )
        res = api.post("/indexes/many_books/search", json={"filter": "_foreign(author, n = 1 AND id < 100)"})
        assert res.status_code == 200, res.text
        assert res.json()["hits"] == [{"id": 1, "author": {"id": 7, "n": 1}}]
    finally:
        set_feature(api, False)


def test_document_routes_refuse_foreign_filters(api: httpx.Client, library: tuple[str, str]) -> None:
    _, books = library
    set_feature(api, True)
    try:
        res = api.post(f"/indexes/{books}/documents/fetch", json={"filter": "_foreign(author, id = a1)"})
        error(
            res,
            400,
            "invalid_document_filter",
            "Filter condition `_foreign` is not supported for this endpoint.\n10:16 _foreign(author, id = a1)",
        )
    finally:
        set_feature(api, False)


def test_multi_search_filters_and_hydrates(api: httpx.Client, library: tuple[str, str]) -> None:
    _, books = library
    query = {
        "indexUid": books,
        "q": "",
        "attributesToRetrieve": ["id", "author"],
        "filter": 'genres = action AND _foreign(author, birthday STARTS WITH "1958-" AND popularity >= 3.5)',
    }
    set_feature(api, True)
    try:
        res = api.post("/multi-search", json={"queries": [query]})
        assert res.status_code == 200, res.text
        assert res.json()["results"][0]["hits"] == [{"id": "b2", "author": author("a2")}]
        # federated: the filter and the hydration of the index each hit comes from
        res = api.post(
            "/multi-search",
            json={
                "federation": {},
                "queries": [
                    query,
                    {"indexUid": books, "q": "Gatsby", "attributesToRetrieve": ["id", "related_authors"]},
                ],
            },
        )
        assert res.status_code == 200, res.text
        hits = [{k: v for k, v in hit.items() if k != "_federation"} for hit in res.json()["hits"]]
        assert sorted(hits, key=lambda h: h["id"]) == [
            {"id": "b2", "author": author("a2")},
            {"id": "b3", "related_authors": [author("a4"), author("a5")]},
        ]
    finally:
        set_feature(api, False)
    res = api.post("/multi-search", json={"queries": [query]})
    assert res.status_code == 400 and res.json()["code"] == "feature_not_enabled"
    assert res.json()["message"].startswith("Inside `.queries[0]`: using a foreign filter requires enabling")


def test_facet_search_takes_foreign_filters(api: httpx.Client, library: tuple[str, str]) -> None:
    _, books = library
    set_feature(api, True)
    try:
        res = api.post(
            f"/indexes/{books}/facet-search",
            json={"facetName": "genres", "filter": "_foreign(author, popularity > 4)"},
        )
        assert res.status_code == 200, res.text
        # authors above 4: a2 (b2: action, fiction) and a3 (b3: action, classic)
        assert res.json()["facetHits"] == [
            {"value": "action", "count": 2},
            {"value": "classic", "count": 1},
            {"value": "fiction", "count": 1},
        ]
    finally:
        set_feature(api, False)


def test_delete_by_filter_refuses_foreign_filters(api: httpx.Client, library: tuple[str, str]) -> None:
    _, books = library
    set_feature(api, False)
    error(
        api.post(f"/indexes/{books}/documents/delete", json={"filter": "_foreign(author, id = a1)"}),
        400,
        "feature_not_enabled",
        "using a foreign filter requires enabling the `foreign_keys` experimental feature. See "
        "https://github.com/orgs/meilisearch/discussions/873\n10:16 _foreign(author, id = a1)",
    )
    set_feature(api, True)
    try:
        res = api.post(f"/indexes/{books}/documents/delete", json={"filter": "_foreign(author, id = a1)"})
        error(
            res,
            400,
            "invalid_document_filter",
            "Filter condition `_foreign` is not supported for this endpoint.\n10:16 _foreign(author, id = a1)",
        )
    finally:
        set_feature(api, False)


def test_official_python_sdk_methods(api: httpx.Client, engine: ServerProcess, index_uid: str) -> None:
    """meilisearch-python's `get_foreign_keys`, `update_foreign_keys`, `reset_foreign_keys`."""
    import meilisearch

    client = meilisearch.Client(engine.url)
    index = client.index(index_uid)
    client.wait_for_task(client.create_index(index_uid).task_uid)
    assert index.get_foreign_keys() == []
    with pytest.raises(meilisearch.errors.MeilisearchApiError) as refused:
        index.update_foreign_keys(KEYS)
    assert refused.value.code == "feature_not_enabled"
    set_feature(api, True)
    try:
        task = client.wait_for_task(index.update_foreign_keys(KEYS).task_uid)
        assert task.status == "succeeded" and task.details == {"foreignKeys": KEYS}
        assert index.get_foreign_keys() == KEYS
        assert index.get_settings()["foreignKeys"] == KEYS
        task = client.wait_for_task(index.reset_foreign_keys().task_uid)
        assert task.status == "succeeded" and task.details == {"foreignKeys": None}
        assert index.get_foreign_keys() == []
    finally:
        set_feature(api, False)
