"""Document routes over raw HTTP: payload formats, replace vs update, browsing, deletion.

Expected values follow Meilisearch's integration tests (`tests/documents/*.rs`) and route code:
documents come back with their keys in the index's fields-ids-map order (the order in which field
names were first seen), nested values exactly as sent, `_vectors` only with `retrieveVectors`.
"""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import httpx
import pytest

from tests.conftest import wait_task

SUMMARY_KEYS = ["taskUid", "indexUid", "status", "type", "enqueuedAt"]


def summary(res: httpx.Response, index_uid: str, type_: str) -> int:
    assert res.status_code == 202, res.text
    body = res.json()
    assert list(body) == SUMMARY_KEYS
    assert (body["indexUid"], body["status"], body["type"]) == (index_uid, "enqueued", type_)
    uid: int = body["taskUid"]
    return uid


def succeeded(http: httpx.Client, task_uid: int) -> dict[str, Any]:
    task = wait_task(http, task_uid)
    assert task["status"] == "succeeded", task
    assert task["error"] is None
    return task


def add(http: httpx.Client, uid: str, docs: Any, method: str = "POST", **params: str) -> dict[str, Any]:
    res = http.request(method, f"/indexes/{uid}/documents", json=docs, params=params)
    return succeeded(http, summary(res, uid, "documentAdditionOrUpdate"))


def add_raw(
    http: httpx.Client, uid: str, body: bytes, content_type: str, method: str = "POST", **params: str
) -> dict[str, Any]:
    res = http.request(
        method,
        f"/indexes/{uid}/documents",
        content=body,
        params=params,
        headers={"Content-Type": content_type},
    )
    return succeeded(http, summary(res, uid, "documentAdditionOrUpdate"))


def browse(http: httpx.Client, uid: str, **params: Any) -> dict[str, Any]:
    res = http.get(f"/indexes/{uid}/documents", params=params)
    assert res.status_code == 200, res.text
    body: dict[str, Any] = res.json()
    assert list(body) == ["results", "offset", "limit", "total"]
    return body


def fetch(http: httpx.Client, uid: str, body: dict[str, Any]) -> dict[str, Any]:
    res = http.post(f"/indexes/{uid}/documents/fetch", json=body)
    assert res.status_code == 200, res.text
    out: dict[str, Any] = res.json()
    return out


def results(http: httpx.Client, uid: str, **params: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = browse(http, uid, limit=1000, **params)["results"]
    return out


# -- additions ---------------------------------------------------------------------------------


def test_add_json_array_creates_index_and_infers_primary_key(http: httpx.Client, index_uid: str) -> None:
    task = add(http, index_uid, [{"id": 1, "content": "foo"}, {"id": 2, "content": "bar"}])
    assert task["type"] == "documentAdditionOrUpdate"
    assert task["details"] == {"receivedDocuments": 2, "indexedDocuments": 2}
    index = http.get(f"/indexes/{index_uid}").json()
    assert index["primaryKey"] == "id"
    assert browse(http, index_uid) == {
        "results": [{"id": 1, "content": "foo"}, {"id": 2, "content": "bar"}],
        "offset": 0,
        "limit": 20,
        "total": 2,
    }


def test_add_single_object(http: httpx.Client, index_uid: str) -> None:
    task = add(http, index_uid, {"id": 1, "content": "Bouvier Bernois"})
    assert task["details"] == {"receivedDocuments": 1, "indexedDocuments": 1}
    assert http.get(f"/indexes/{index_uid}/documents/1").json() == {"id": 1, "content": "Bouvier Bernois"}


def test_add_empty_array(http: httpx.Client, index_uid: str) -> None:
    task = add(http, index_uid, [])
    assert task["details"] == {"receivedDocuments": 0, "indexedDocuments": 0}
    index = http.get(f"/indexes/{index_uid}")
    assert index.status_code == 200
    assert index.json()["primaryKey"] is None
    assert browse(http, index_uid)["total"] == 0


def test_primary_key_inference_variants(http: httpx.Client, index_uid: str) -> None:
    for n, (doc, expected) in enumerate(
        [
            ({"movieId": 1, "title": "a"}, "movieId"),
            ({"title": "a", "_ID": "x"}, "_ID"),
            ({"primary_id": "12", "title": "11", "desc": "foobar"}, "primary_id"),
            ({"paid": 3}, "paid"),
        ]
    ):
        uid = f"{index_uid}_{n}"
        add(http, uid, [doc])
        assert http.get(f"/indexes/{uid}").json()["primaryKey"] == expected


def test_explicit_primary_key(http: httpx.Client, index_uid: str) -> None:
    task = add(http, index_uid, [{"primary": 1, "id": "x", "content": "foo"}], primaryKey="primary")
    assert task["details"] == {"receivedDocuments": 1, "indexedDocuments": 1}
    assert http.get(f"/indexes/{index_uid}").json()["primaryKey"] == "primary"
    assert http.get(f"/indexes/{index_uid}/documents/1").json() == {"primary": 1, "id": "x", "content": "foo"}
    # the same primaryKey again is accepted
    add(http, index_uid, [{"primary": 2}], primaryKey="primary")
    assert browse(http, index_uid)["total"] == 2


def test_primary_key_given_at_index_creation(http: httpx.Client, index_uid: str) -> None:
    wait_task(http, http.post("/indexes", json={"uid": index_uid, "primaryKey": "sku"}).json()["taskUid"])
    add(http, index_uid, [{"id": 1, "sku": "a-1"}])
    assert http.get(f"/indexes/{index_uid}/documents/a-1").json() == {"id": 1, "sku": "a-1"}


def test_nested_primary_key(http: httpx.Client, index_uid: str) -> None:
    add(
        http,
        index_uid,
        [{"product": {"sku": "abc", "name": "x"}}, {"product.sku": "def"}],
        primaryKey="product.sku",
    )
    assert http.get(f"/indexes/{index_uid}/documents/abc").json() == {"product": {"sku": "abc", "name": "x"}}
    assert http.get(f"/indexes/{index_uid}/documents/def").json() == {"product.sku": "def"}


def test_huge_integer_id(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"primary": 14630868576586246730, "content": "foo"}], primaryKey="primary")
    res = http.get(f"/indexes/{index_uid}/documents/14630868576586246730")
    assert res.status_code == 200
    assert res.content == b'{"primary":14630868576586246730,"content":"foo"}'


def test_integer_and_string_ids_are_the_same_document(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"id": 1, "v": "int"}])
    add(http, index_uid, [{"id": "1", "v": "str"}])
    assert browse(http, index_uid)["results"] == [{"id": "1", "v": "str"}]


def test_add_ndjson(http: httpx.Client, index_uid: str) -> None:
    body = b'{"id": 1, "name": "jean"}\n\n{"id": 2, "name": "jorts"}\r\n{"id": 3, "nested": {"a": [1, 2]}}'
    task = add_raw(http, index_uid, body, "application/x-ndjson")
    assert task["details"] == {"receivedDocuments": 3, "indexedDocuments": 3}
    assert results(http, index_uid) == [
        {"id": 1, "name": "jean"},
        {"id": 2, "name": "jorts"},
        {"id": 3, "nested": {"a": [1, 2]}},
    ]


def test_add_csv_untyped_columns_are_strings(http: httpx.Client, index_uid: str) -> None:
    body = b"#id,name,race\n0,jean,bernese mountain\n1,jorts,orange cat"
    task = add_raw(http, index_uid, body, "text/csv", method="PUT")
    assert task["details"] == {"receivedDocuments": 2, "indexedDocuments": 2}
    assert browse(http, index_uid) == {
        "results": [
            {"#id": "0", "name": "jean", "race": "bernese mountain"},
            {"#id": "1", "name": "jorts", "race": "orange cat"},
        ],
        "offset": 0,
        "limit": 20,
        "total": 2,
    }


def test_add_csv_typed_columns(http: httpx.Client, index_uid: str) -> None:
    body = (
        b"#id:number,name:string,race:string,age:number,cute:boolean\n"
        b"0,jean,bernese mountain,2.5,true\n1,,,,\n2,lilou,pug,-2,false"
    )
    task = add_raw(http, index_uid, body, "text/csv")
    assert task["details"] == {"receivedDocuments": 3, "indexedDocuments": 3}
    assert results(http, index_uid) == [
        {"#id": 0, "name": "jean", "race": "bernese mountain", "age": 2.5, "cute": True},
        {"#id": 1, "name": None, "race": None, "age": None, "cute": None},
        {"#id": 2, "name": "lilou", "race": "pug", "age": -2, "cute": False},
    ]


def test_add_csv_custom_delimiter_and_quotes(http: httpx.Client, index_uid: str) -> None:
    body = b'#id|name|race\n0|jean|bernese mountain\n1|"jorts | the cat"|"orange ""cat"""'
    task = add_raw(http, index_uid, body, "text/csv", csvDelimiter="|")
    assert task["details"] == {"receivedDocuments": 2, "indexedDocuments": 2}
    assert results(http, index_uid) == [
        {"#id": "0", "name": "jean", "race": "bernese mountain"},
        {"#id": "1", "name": "jorts | the cat", "race": 'orange "cat"'},
    ]


def test_content_type_with_parameters(http: httpx.Client, index_uid: str) -> None:
    add_raw(http, index_uid, b'[{"id": 1}]', "application/json; charset=utf-8")
    add_raw(http, index_uid, b"id\n2", "text/csv; charset=utf-8")
    assert [d["id"] for d in results(http, index_uid)] == [1, "2"]


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compressed_payloads(http: httpx.Client, index_uid: str, encoding: str) -> None:
    docs = [{"id": i, "text": "lorem ipsum " * 20} for i in range(50)]
    raw = json.dumps(docs).encode()
    body = gzip.compress(raw) if encoding == "gzip" else zlib.compress(raw)
    res = http.post(
        f"/indexes/{index_uid}/documents",
        content=body,
        headers={"Content-Type": "application/json", "Content-Encoding": encoding},
    )
    task = succeeded(http, summary(res, index_uid, "documentAdditionOrUpdate"))
    assert task["details"] == {"receivedDocuments": 50, "indexedDocuments": 50}
    assert results(http, index_uid) == docs


def test_unknown_content_encoding_is_read_as_identity(http: httpx.Client, index_uid: str) -> None:
    # actix treats an encoding it does not know as `identity`
    res = http.post(
        f"/indexes/{index_uid}/documents",
        content=b'[{"id": 1}]',
        headers={"Content-Type": "application/json", "Content-Encoding": "doggo"},
    )
    succeeded(http, summary(res, index_uid, "documentAdditionOrUpdate"))
    assert results(http, index_uid) == [{"id": 1}]


def test_custom_metadata_is_echoed(http: httpx.Client, index_uid: str) -> None:
    res = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 1}], params={"customMetadata": "batch-7"})
    assert res.status_code == 202
    assert list(res.json()) == [*SUMMARY_KEYS, "customMetadata"]
    assert res.json()["customMetadata"] == "batch-7"
    assert wait_task(http, res.json()["taskUid"])["customMetadata"] == "batch-7"


# -- replace vs update -------------------------------------------------------------------------


def test_post_replaces_whole_document(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"doc_id": 1, "content": "foo", "nested": {"a": 1, "b": 2}}])
    task = add(http, index_uid, [{"doc_id": 1, "other": "bar"}])
    assert task["details"] == {"receivedDocuments": 1, "indexedDocuments": 1}
    assert http.get(f"/indexes/{index_uid}/documents/1").json() == {"doc_id": 1, "other": "bar"}


def test_put_merges_top_level_fields(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"doc_id": 1, "content": "foo", "nested": {"a": 1, "b": 2}, "keep": [1, 2]}])
    task = add(
        http, index_uid, [{"doc_id": 1, "content": "bar", "nested": {"c": 3}, "new": None}], method="PUT"
    )
    assert task["details"] == {"receivedDocuments": 1, "indexedDocuments": 1}
    # nested objects are replaced wholesale, absent fields kept, explicit null stored
    assert http.get(f"/indexes/{index_uid}/documents/1").json() == {
        "doc_id": 1,
        "content": "bar",
        "nested": {"c": 3},
        "keep": [1, 2],
        "new": None,
    }


def test_put_creates_missing_documents(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"id": 1, "a": 1}, {"id": 2, "b": 2}], method="PUT")
    assert results(http, index_uid) == [{"id": 1, "a": 1}, {"id": 2, "b": 2}]


def test_same_id_twice_in_one_payload(http: httpx.Client, index_uid: str) -> None:
    task = add(http, index_uid, [{"id": 1, "a": 1}, {"id": 1, "b": 2}])
    assert task["details"] == {"receivedDocuments": 2, "indexedDocuments": 2}
    assert results(http, index_uid) == [{"id": 1, "b": 2}]
    add(http, f"{index_uid}_u", [{"id": 1, "a": 1}, {"id": 1, "b": 2}, {"id": 1, "a": 3}], method="PUT")
    assert results(http, f"{index_uid}_u") == [{"id": 1, "a": 3, "b": 2}]


def test_skip_creation(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"id": 1, "a": 1}])
    task = add(http, index_uid, [{"id": 1, "a": 2}, {"id": 2, "a": 3}], method="PUT", skipCreation="true")
    assert task["details"] == {"receivedDocuments": 2, "indexedDocuments": 1}
    assert results(http, index_uid) == [{"id": 1, "a": 2}]


# -- field order and values --------------------------------------------------------------------


def test_document_keys_follow_fields_ids_map_order(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"id": 1, "b": 1, "a": 1}])
    add(http, index_uid, [{"c": 3, "a": 2, "id": 2, "b": 4}, {"d": 0, "id": 3}])
    res = http.get(f"/indexes/{index_uid}/documents")
    # raw bytes: the order is part of the contract, a dict comparison would not see it
    assert res.content == (
        b'{"results":[{"id":1,"b":1,"a":1},{"id":2,"b":4,"a":2,"c":3},{"id":3,"d":0}],'
        b'"offset":0,"limit":20,"total":3}'
    )
    # an update merges into the stored order, new fields go last
    add(http, index_uid, [{"e": 5, "id": 1, "c": 9}], method="PUT")
    assert http.get(f"/indexes/{index_uid}/documents/1").content == b'{"id":1,"b":1,"a":1,"c":9,"e":5}'


def test_nested_values_are_kept_as_sent(http: httpx.Client, index_uid: str) -> None:
    doc = {
        "id": 0,
        "nested": {"z": 1, "a": {"y": [3, {"k": None}], "b": True}},
        "arr": [[1, 2], {"x": 1.5}],
        "unicode": "été 🍰",
        "big": 18446744073709551615,
        "neg": -9223372036854775808,
        "float": 0.1,
    }
    add(http, index_uid, [doc])
    res = http.get(f"/indexes/{index_uid}/documents/0")
    assert res.json() == doc
    # the nested object keeps its own key order
    assert res.text.index('"z"') < res.text.index('"a"')


def test_vectors_hidden_unless_requested(http: httpx.Client, index_uid: str) -> None:
    add(
        http,
        index_uid,
        [
            {"id": 0, "_vectors": {"manual": [0, 0, 0]}, "name": "kefir", "age": 3},
            {"id": 1, "name": "echo"},
        ],
    )
    # hiding `_vectors` moves the last field into its slot (serde_json's swap_remove)
    assert http.get(f"/indexes/{index_uid}/documents").content.startswith(
        b'{"results":[{"id":0,"age":3,"name":"kefir"},{"id":1,"name":"echo"}]'
    )
    assert http.get(f"/indexes/{index_uid}/documents/0").json() == {"id": 0, "age": 3, "name": "kefir"}
    # asking for `_vectors` in `fields` is not enough
    assert results(http, index_uid, fields="name,_vectors") == [{"name": "kefir"}, {"name": "echo"}]
    assert http.get(f"/indexes/{index_uid}/documents/0", params={"fields": "name,_vectors"}).json() == {
        "name": "kefir"
    }

    expected = [
        {"id": 0, "age": 3, "name": "kefir", "_vectors": {"manual": [0, 0, 0]}},
        {"id": 1, "name": "echo", "_vectors": {}},
    ]
    res = http.get(f"/indexes/{index_uid}/documents", params={"retrieveVectors": "true"})
    assert res.json()["results"] == expected
    assert list(res.json()["results"][0]) == ["id", "age", "name", "_vectors"]
    assert fetch(http, index_uid, {"retrieveVectors": True})["results"] == expected
    res = http.get(f"/indexes/{index_uid}/documents/1", params={"retrieveVectors": "true"})
    assert res.json() == {"id": 1, "name": "echo", "_vectors": {}}
    # with retrieveVectors, `_vectors` comes back even when `fields` does not name it
    assert results(http, index_uid, fields="name", retrieveVectors="true") == [
        {"name": "kefir", "_vectors": {"manual": [0, 0, 0]}},
        {"name": "echo", "_vectors": {}},
    ]
    assert http.get(
        f"/indexes/{index_uid}/documents/0", params={"fields": "name", "retrieveVectors": "true"}
    ).json() == {"name": "kefir", "_vectors": {"manual": [0, 0, 0]}}
    assert fetch(http, index_uid, {"fields": [], "retrieveVectors": True})["results"] == [
        {"_vectors": {"manual": [0, 0, 0]}},
        {"_vectors": {}},
    ]


# -- browsing ----------------------------------------------------------------------------------


@pytest.fixture
def thirty(http: httpx.Client, index_uid: str) -> str:
    docs = [
        {"id": i, "name": f"doc {i}", "tags": ["t", str(i % 3)], "nested": {"a": i, "b": {"c": i * 2}}}
        for i in range(30)
    ]
    add(http, index_uid, docs)
    return index_uid


def test_browse_defaults(http: httpx.Client, thirty: str) -> None:
    body = browse(http, thirty)
    assert (body["offset"], body["limit"], body["total"]) == (0, 20, 30)
    assert [d["id"] for d in body["results"]] == list(range(20))


def test_browse_offset_and_limit(http: httpx.Client, thirty: str) -> None:
    body = browse(http, thirty, offset=25, limit=10)
    assert (body["offset"], body["limit"], body["total"]) == (25, 10, 30)
    assert [d["id"] for d in body["results"]] == list(range(25, 30))
    assert browse(http, thirty, offset=100)["results"] == []
    assert browse(http, thirty, limit=0) == {"results": [], "offset": 0, "limit": 0, "total": 30}
    assert fetch(http, thirty, {"offset": 5, "limit": 2}) == browse(http, thirty, offset=5, limit=2)


def test_browse_fields(http: httpx.Client, thirty: str) -> None:
    assert browse(http, thirty, limit=2, fields="name")["results"] == [{"name": "doc 0"}, {"name": "doc 1"}]
    assert browse(http, thirty, limit=1, fields="tags,id")["results"] == [{"id": 0, "tags": ["t", "0"]}]
    assert browse(http, thirty, limit=1, fields="nested.b.c,wrong")["results"] == [
        {"nested": {"b": {"c": 0}}}
    ]
    assert browse(http, thirty, limit=1, fields="*")["results"] == browse(http, thirty, limit=1)["results"]
    assert (
        browse(http, thirty, limit=1, fields="*,wrong")["results"] == browse(http, thirty, limit=1)["results"]
    )
    assert browse(http, thirty, limit=2, fields="")["results"] == [{}, {}]
    assert browse(http, thirty, limit=2, fields="wrong")["results"] == [{}, {}]
    assert fetch(http, thirty, {"limit": 1, "fields": ["nested.a", "id"]})["results"] == [
        {"id": 0, "nested": {"a": 0}}
    ]
    assert fetch(http, thirty, {"limit": 1, "fields": None}) == browse(http, thirty, limit=1)


def test_browse_by_ids(http: httpx.Client, thirty: str) -> None:
    # results follow the internal (insertion) order, not the order of `ids`; unknown ids are skipped
    body = browse(http, thirty, ids="12,3,99,3", fields="id")
    assert body == {"results": [{"id": 3}, {"id": 12}], "offset": 0, "limit": 20, "total": 2}
    assert fetch(http, thirty, {"ids": [12, "3", "nope"], "fields": ["id"]}) == body
    assert fetch(http, thirty, {"ids": [], "fields": ["id"]}) == {
        "results": [],
        "offset": 0,
        "limit": 20,
        "total": 0,
    }
    assert fetch(http, thirty, {"ids": [1, 2, 3], "offset": 1, "limit": 1, "fields": ["id"]}) == {
        "results": [{"id": 2}],
        "offset": 1,
        "limit": 1,
        "total": 3,
    }


def test_fetch_empty_body_object(http: httpx.Client, thirty: str) -> None:
    assert fetch(http, thirty, {}) == browse(http, thirty)


def test_get_document_fields(http: httpx.Client, index_uid: str) -> None:
    add(
        http,
        index_uid,
        [{"id": 0, "content.truc": "foobar"}, {"id": 1, "content": {"truc": "foobar", "machin": "bidule"}}],
    )
    get = http.get
    assert get(f"/indexes/{index_uid}/documents/0", params={"fields": "content"}).json() == {}
    assert get(f"/indexes/{index_uid}/documents/1", params={"fields": "content"}).json() == {
        "content": {"truc": "foobar", "machin": "bidule"}
    }
    assert get(f"/indexes/{index_uid}/documents/0", params={"fields": "content.truc"}).json() == {
        "content.truc": "foobar"
    }
    assert get(f"/indexes/{index_uid}/documents/1", params={"fields": "content.truc"}).json() == {
        "content": {"truc": "foobar"}
    }
    assert get(f"/indexes/{index_uid}/documents/1", params={"fields": "*"}).json() == {
        "id": 1,
        "content": {"truc": "foobar", "machin": "bidule"},
    }


def test_fields_below_a_container_keep_the_container(http: httpx.Client, index_uid: str) -> None:
    """Meilisearch keeps an object or array a selector reaches into, even when nothing matched in it."""
    add(
        http,
        index_uid,
        [
            {
                "id": 0,
                "array": [],
                "object": {},
                "nested": {"a": 1},
                "list": [1, {"b": 2}, [{"c": 1}]],
                "scalar": 5,
            }
        ],
    )
    doc = http.get(
        f"/indexes/{index_uid}/documents/0",
        params={"fields": "array.name,object.name,nested.zzz,list.c,scalar.x,nested."},
    ).json()
    assert doc == {"array": [], "object": {}, "nested": {}, "list": [[{"c": 1}]]}
    assert fetch(http, index_uid, {"fields": ["list.b"]})["results"] == [{"list": [{"b": 2}, []]}]


def test_empty_index_browse(http: httpx.Client, index_uid: str) -> None:
    wait_task(http, http.post("/indexes", json={"uid": index_uid}).json()["taskUid"])
    assert browse(http, index_uid) == {"results": [], "offset": 0, "limit": 20, "total": 0}
    assert fetch(http, index_uid, {}) == {"results": [], "offset": 0, "limit": 20, "total": 0}


# -- deletions ---------------------------------------------------------------------------------


def test_delete_one_document(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"id": 0, "content": "foobar"}, {"id": 1}])
    res = http.delete(f"/indexes/{index_uid}/documents/0")
    task = succeeded(http, summary(res, index_uid, "documentDeletion"))
    assert task["details"] == {"providedIds": 1, "deletedDocuments": 1, "originalFilter": None}
    assert http.get(f"/indexes/{index_uid}/documents/0").status_code == 404
    assert results(http, index_uid) == [{"id": 1}]
    # deleting an unknown id succeeds and deletes nothing
    task = succeeded(
        http, summary(http.delete(f"/indexes/{index_uid}/documents/42"), index_uid, "documentDeletion")
    )
    assert task["details"] == {"providedIds": 1, "deletedDocuments": 0, "originalFilter": None}


def test_delete_batch(http: httpx.Client, index_uid: str) -> None:
    add(
        http,
        index_uid,
        [
            {"id": 1, "content": "foobar"},
            {"id": 0, "content": "foobar"},
            {"id": 3, "content": "foobar"},
            {"id": "x"},
        ],
    )
    res = http.post(f"/indexes/{index_uid}/documents/delete-batch", json=[1, "0", 7, "x"])
    task = succeeded(http, summary(res, index_uid, "documentDeletion"))
    assert task["details"] == {"providedIds": 4, "deletedDocuments": 3, "originalFilter": None}
    assert results(http, index_uid) == [{"id": 3, "content": "foobar"}]


def test_delete_empty_batch(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"id": 1}, {"id": 2}])
    res = http.post(f"/indexes/{index_uid}/documents/delete-batch", json=[])
    task = succeeded(http, summary(res, index_uid, "documentDeletion"))
    assert task["details"] == {"providedIds": 0, "deletedDocuments": 0, "originalFilter": None}
    assert browse(http, index_uid)["total"] == 2


def test_delete_batch_non_id_values_delete_nothing(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"id": 1}, {"id": "true"}])
    res = http.post(f"/indexes/{index_uid}/documents/delete-batch", json=[1.5, True, None, {"a": 1}, [1]])
    task = succeeded(http, summary(res, index_uid, "documentDeletion"))
    # non-strings are stringified (`true` -> "true"), which can match a string id
    assert task["details"] == {"providedIds": 5, "deletedDocuments": 1, "originalFilter": None}
    assert results(http, index_uid) == [{"id": 1}]


def test_clear_all_documents(http: httpx.Client, index_uid: str) -> None:
    add(http, index_uid, [{"id": 1, "content": "foobar"}, {"id": 0, "content": "foobar"}])
    task = succeeded(
        http, summary(http.delete(f"/indexes/{index_uid}/documents"), index_uid, "documentDeletion")
    )
    assert task["details"] == {"deletedDocuments": 2}
    assert browse(http, index_uid) == {"results": [], "offset": 0, "limit": 20, "total": 0}
    # the primary key survives the clear
    assert http.get(f"/indexes/{index_uid}").json()["primaryKey"] == "id"
    task = succeeded(
        http, summary(http.delete(f"/indexes/{index_uid}/documents"), index_uid, "documentDeletion")
    )
    assert task["details"] == {"deletedDocuments": 0}


def test_deleted_internal_ids_are_reused(http: httpx.Client, index_uid: str) -> None:
    """Browse order is internal-id order, and milli hands out the smallest free internal id first."""
    add(http, index_uid, [{"id": i} for i in range(1, 6)])
    succeeded(http, http.post(f"/indexes/{index_uid}/documents/delete-batch", json=[2, 4]).json()["taskUid"])
    add(http, index_uid, [{"id": 6}, {"id": 7}, {"id": 8}])
    assert [d["id"] for d in results(http, index_uid)] == [1, 6, 3, 7, 5, 8]
    # a document deleted and added again takes its old slot back
    succeeded(http, http.delete(f"/indexes/{index_uid}/documents/1").json()["taskUid"])
    add(http, index_uid, [{"id": 1, "again": True}])
    assert [d["id"] for d in results(http, index_uid)] == [1, 6, 3, 7, 5, 8]
    # after a clear, numbering starts over
    succeeded(http, http.delete(f"/indexes/{index_uid}/documents").json()["taskUid"])
    add(http, index_uid, [{"id": 9}, {"id": 1}])
    assert [d["id"] for d in results(http, index_uid)] == [9, 1]
