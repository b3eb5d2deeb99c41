"""`_vectors` filters over HTTP (Meilisearch's `filter_vector.rs`, and its `tests/search/filters.rs`
vector cases): every form, `NOT`, combinations, the documents routes, the embedding status following
updates, deletions and embedder changes, and the error bodies field by field.

A server of this module's own runs with the `multimodal` feature on (the gate is tested by turning it
off and on again), with a `userProvided` embedder `manual` and a `rest` embedder pointed at the
embedding service of `test_rest_embedder.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, wait_task
from tests.http.test_rest_embedder import DIM, FakeService, embed
from tests.http.test_rest_embedder import (
    service as service,  # the embedding service fixture, module-scoped here too
)

LINK = "https://docs.meilisearch.com/errors#"
GATE = (
    "using a vector filter requires enabling the `multimodal` experimental feature. "
    "See https://github.com/orgs/meilisearch/discussions/846"
)


def v16(seed: float) -> list[float]:
    return [seed + i for i in range(DIM)]


# id -> manual (userProvided, 3 dims) and rest (generated from the title unless given)
DOCS: list[dict[str, Any]] = [
    {"id": 0, "title": "kefir dog", "color": "red", "_vectors": {"manual": [0, 0, 1]}},
    {
        "id": 1,
        "title": "echo dog",
        "color": "blue",
        "_vectors": {"manual": [1, 1, 1], "rest": {"embeddings": v16(1), "regenerate": False}},
    },
    {
        "id": 2,
        "title": "intel cat",
        "color": "red",
        "_vectors": {
            "manual": {"embeddings": [2, 2, 2], "regenerate": True},
            "rest": {"embeddings": [v16(2)], "regenerate": True},
        },
    },
    {
        "id": 3,
        "title": "dustin cat",
        "color": "blue",
        "_vectors": {"manual": None, "rest": {"regenerate": False}},
    },
    {
        "id": 4,
        "title": "iko bird",
        "color": "red",
        "_vectors": {"manual": {"embeddings": [4, 4, 4], "regenerate": False}},
    },
    {"id": 5, "title": "max fish", "color": "green", "_vectors": {"manual": None}},
]
ALL = {0, 1, 2, 3, 4, 5}
# the embedding service listens on loopback, which outgoing requests may not reach by default
LOOPBACK = {"MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS": "127.0.0.0/8"}


@pytest.fixture(scope="module")
def vf_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        Path(tmp_path_factory.mktemp("vector-filter")) / "data.ms", env=dict(LOOPBACK)
    ).start()
    with httpx.Client(base_url=srv.url) as client:
        assert client.patch("/experimental-features", json={"multimodal": True}).json()["multimodal"] is True
    yield srv
    srv.stop()


@pytest.fixture
def http(vf_server: ServerProcess, service: FakeService) -> Iterator[httpx.Client]:
    service.reset()
    with httpx.Client(base_url=vf_server.url, timeout=60) as client:
        yield client


def task_of(http: httpx.Client, res: httpx.Response, status: str = "succeeded") -> dict[str, Any]:
    assert res.status_code == 202, res.text
    task = wait_task(http, res.json()["taskUid"], timeout=60)
    assert task["status"] == status, task
    return task


def rest(service: FakeService) -> dict[str, Any]:
    return {
        "source": "rest",
        "url": service.url("/single"),
        "request": "{{text}}",
        "response": {"data": "{{embedding}}"},
        "dimensions": DIM,
        "documentTemplate": "{{doc.title}}",
    }


def setup(http: httpx.Client, service: FakeService, uid: str, docs: list[dict[str, Any]] = DOCS) -> None:
    settings = {
        "filterableAttributes": ["color"],
        "embedders": {"manual": {"source": "userProvided", "dimensions": 3}, "rest": rest(service)},
    }
    task_of(http, http.patch(f"/indexes/{uid}/settings", json=settings))
    task_of(http, http.post(f"/indexes/{uid}/documents", json=docs))


def ids(http: httpx.Client, uid: str, filter: Any) -> set[int]:
    """The ids the search selects (checked against `documents/fetch` with the same filter)."""
    res = http.post(f"/indexes/{uid}/search", json={"filter": filter, "limit": 1000})
    assert res.status_code == 200, res.text
    found = {hit["id"] for hit in res.json()["hits"]}
    fetched = http.post(f"/indexes/{uid}/documents/fetch", json={"filter": filter, "limit": 1000})
    assert fetched.status_code == 200, fetched.text
    assert {doc["id"] for doc in fetched.json()["results"]} == found
    return found


def error(res: httpx.Response, status: int = 400) -> dict[str, Any]:
    assert res.status_code == status, res.text
    return dict(res.json())


def body(message: str, code: str) -> dict[str, Any]:
    return {"message": message, "code": code, "type": "invalid_request", "link": LINK + code}


# -- every form ---------------------------------------------------------------------------------------


def test_each_form_selects_as_meilisearch(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    setup(http, service, index_uid)
    # manual: 0, 1, 2, 4 have vectors; 3 and 5 opted out with `null` (user-provided, no vectors);
    # 2 was sent with `regenerate: true`. rest: 0, 4, 5 generated; 1 and 2 sent; 3 opted out of
    # regeneration without vectors.
    assert ids(http, index_uid, "_vectors EXISTS") == {0, 1, 2, 4, 5}
    assert ids(http, index_uid, "_vectors.manual EXISTS") == {0, 1, 2, 4}
    assert ids(http, index_uid, "_vectors.manual.userProvided EXISTS") == ALL
    assert ids(http, index_uid, "_vectors.manual.documentTemplate EXISTS") == set()
    assert ids(http, index_uid, "_vectors.manual.regenerate EXISTS") == {2}
    assert ids(http, index_uid, "_vectors.rest EXISTS") == {0, 1, 2, 4, 5}
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == {1, 2}
    assert ids(http, index_uid, "_vectors.rest.documentTemplate EXISTS") == {0, 4, 5}
    assert ids(http, index_uid, "_vectors.rest.regenerate EXISTS") == {0, 2, 4, 5}
    # quoted embedder names are names too
    assert ids(http, index_uid, '_vectors."rest".userProvided EXISTS') == {1, 2}


def test_not_forms_and_combinations(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    setup(http, service, index_uid)
    assert ids(http, index_uid, "_vectors NOT EXISTS") == {3}
    assert ids(http, index_uid, "NOT _vectors EXISTS") == {3}
    assert ids(http, index_uid, "_vectors.rest.userProvided NOT EXISTS") == {0, 3, 4, 5}
    assert ids(http, index_uid, "NOT _vectors.rest.regenerate EXISTS") == {1, 3}
    assert ids(http, index_uid, "NOT NOT _vectors.manual EXISTS") == {0, 1, 2, 4}
    assert ids(http, index_uid, "_vectors.rest.documentTemplate EXISTS AND color = red") == {0, 4}
    assert ids(http, index_uid, "color = red AND _vectors.rest.documentTemplate NOT EXISTS") == {2}
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS OR color = green") == {1, 2, 5}
    assert ids(
        http, index_uid, "(_vectors.manual EXISTS OR color = blue) AND NOT _vectors.rest.regenerate EXISTS"
    ) == {1, 3}
    assert ids(http, index_uid, [["_vectors.rest.userProvided EXISTS", "color = green"], "color != red"]) == {
        1,
        5,
    }
    # the filter restricts a vector search too
    res = http.post(
        f"/indexes/{index_uid}/search",
        json={
            "vector": [1, 1, 1],
            "hybrid": {"embedder": "manual", "semanticRatio": 1.0},
            "filter": "_vectors.manual EXISTS AND _vectors.manual.regenerate NOT EXISTS",
        },
    )
    assert res.status_code == 200, res.text
    assert {hit["id"] for hit in res.json()["hits"]} == {0, 1, 4}
    # GET search and GET documents take the filter as a string
    res = http.get(f"/indexes/{index_uid}/search", params={"filter": "_vectors.rest.userProvided EXISTS"})
    assert {hit["id"] for hit in res.json()["hits"]} == {1, 2}
    res = http.get(
        f"/indexes/{index_uid}/documents", params={"filter": "_vectors.rest.documentTemplate EXISTS"}
    )
    assert {doc["id"] for doc in res.json()["results"]} == {0, 4, 5}


# -- the status follows the documents -------------------------------------------------------------------


def test_updates_flip_regenerate_and_user_provided(
    http: httpx.Client, service: FakeService, index_uid: str
) -> None:
    setup(http, service, index_uid)
    docs = f"/indexes/{index_uid}/documents"
    # (PUT updates documents, POST replaces them)
    # 1 turns regeneration on: its embeddings are generated from now on (no longer user-provided)
    task_of(http, http.put(docs, json=[{"id": 1, "_vectors": {"rest": {"regenerate": True}}}]))
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == {2}
    assert ids(http, index_uid, "_vectors.rest.regenerate EXISTS") == {0, 1, 2, 4, 5}
    assert ids(http, index_uid, "_vectors.rest.documentTemplate EXISTS") == {0, 1, 4, 5}
    # 0 turns it off without sending vectors: still generated ones, frozen
    task_of(http, http.put(docs, json=[{"id": 0, "_vectors": {"rest": {"regenerate": False}}}]))
    assert ids(http, index_uid, "_vectors.rest.regenerate EXISTS") == {1, 2, 4, 5}
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == {2}
    assert ids(http, index_uid, "_vectors.rest EXISTS") == {0, 1, 2, 4, 5}
    # 4 sends embeddings that stay regenerable: user-provided and regenerated
    task_of(
        http,
        http.put(docs, json=[{"id": 4, "_vectors": {"rest": {"embeddings": v16(4), "regenerate": True}}}]),
    )
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == {2, 4}
    assert ids(http, index_uid, "_vectors.rest.regenerate EXISTS") == {1, 2, 4, 5}
    # an update naming no vectors regenerates the documents whose `regenerate` is true: 2 and 4 are
    # no longer user-provided, in both embedders for 2 (Meilisearch's `update_autogenerated`)
    task_of(http, http.put(docs, json=[{"id": 2, "title": "intel cat again"}, {"id": 4, "color": "blue"}]))
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == set()
    assert ids(http, index_uid, "_vectors.manual.userProvided EXISTS") == {0, 1, 3, 4, 5}
    assert ids(http, index_uid, "_vectors.rest.documentTemplate EXISTS") == {0, 1, 2, 4, 5}
    stored = http.get(f"{docs}/2", params={"retrieveVectors": "true"}).json()["_vectors"]["rest"]
    assert stored == {"embeddings": [embed("intel cat again")], "regenerate": True}
    # a replacement with array vectors makes them user-provided again, regenerate off
    task_of(
        http,
        http.post(
            docs, json=[{"id": 2, "title": "intel", "_vectors": {"manual": [3, 2, 1], "rest": v16(9)}}]
        ),
    )
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == {2}
    assert ids(http, index_uid, "_vectors.manual.regenerate EXISTS") == set()
    assert ids(http, index_uid, "_vectors.rest.regenerate EXISTS") == {1, 4, 5}
    # `null` opts out: no vectors, user-provided, not regenerated
    task_of(http, http.put(docs, json=[{"id": 5, "_vectors": {"rest": None}}]))
    assert ids(http, index_uid, "_vectors.rest EXISTS") == {0, 1, 2, 4}
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == {2, 5}
    assert ids(http, index_uid, "_vectors.rest.regenerate EXISTS") == {1, 4}


def test_deleted_documents_leave_no_status(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    setup(http, service, index_uid)
    docs = f"/indexes/{index_uid}/documents"
    task_of(http, http.post(f"{docs}/delete-batch", json=[1, 2]))
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == set()
    assert ids(http, index_uid, "_vectors.manual.userProvided EXISTS") == {0, 3, 4, 5}
    assert ids(http, index_uid, "_vectors.manual.regenerate EXISTS") == set()
    # new documents take the freed internal ids: nothing of the deleted ones sticks to them
    task_of(
        http,
        http.post(
            docs,
            json=[
                {"id": 7, "title": "seven", "_vectors": {"manual": None}},
                {"id": 8, "title": "eight", "_vectors": {"manual": [8, 8, 8]}},
            ],
        ),
    )
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == set()
    assert ids(http, index_uid, "_vectors.rest.documentTemplate EXISTS") == {0, 4, 5, 7, 8}
    assert ids(http, index_uid, "_vectors.manual.regenerate EXISTS") == set()
    task_of(http, http.delete(f"{docs}/0"))
    assert ids(http, index_uid, "_vectors.rest EXISTS") == {4, 5, 7, 8}
    task_of(http, http.delete(docs))
    assert ids(http, index_uid, "_vectors EXISTS") == set()
    assert ids(http, index_uid, "_vectors.manual.userProvided EXISTS") == set()
    task_of(http, http.post(docs, json=[{"id": 9, "title": "nine", "_vectors": {"manual": [9, 9, 9]}}]))
    assert ids(http, index_uid, "_vectors.manual.userProvided EXISTS") == {9}
    assert ids(http, index_uid, "_vectors.rest.documentTemplate EXISTS") == {9}


def test_delete_by_filter(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    setup(http, service, index_uid)
    docs = f"/indexes/{index_uid}/documents"
    task = task_of(
        http, http.post(f"{docs}/delete", json={"filter": "_vectors.rest.documentTemplate EXISTS"})
    )
    assert task["details"] == {
        "providedIds": 0,
        "deletedDocuments": 3,
        "originalFilter": '"_vectors.rest.documentTemplate EXISTS"',
    }
    remaining = http.post(f"{docs}/fetch", json={"limit": 100}).json()["results"]
    assert sorted(doc["id"] for doc in remaining) == [1, 2, 3]
    task = task_of(http, http.post(f"{docs}/delete", json={"filter": "NOT _vectors EXISTS"}))
    assert task["details"]["deletedDocuments"] == 1
    assert ids(http, index_uid, "_vectors.manual.userProvided EXISTS") == {1, 2}
    # an unknown embedder fails the task, with the index named
    task = task_of(http, http.post(f"{docs}/delete", json={"filter": "_vectors.mnual EXISTS"}), "failed")
    assert task["error"] == body(
        f"Index `{index_uid}`: The embedder `mnual` does not exist. Available embedders are: "
        "`manual`, `rest`. Did you mean `manual`?\n10:15 _vectors.mnual EXISTS",
        "invalid_document_filter",
    )
    assert task["details"]["deletedDocuments"] == 0


def test_embedder_removed_and_added_again(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    setup(http, service, index_uid)
    settings = f"/indexes/{index_uid}/settings"
    task_of(http, http.patch(settings, json={"embedders": {"rest": None}}))
    res = http.post(f"/indexes/{index_uid}/search", json={"filter": "_vectors.rest EXISTS"})
    assert error(res) == body(
        f"Index `{index_uid}`: The embedder `rest` does not exist. Available embedders are: "
        "`manual`.\n10:14 _vectors.rest EXISTS",
        "invalid_search_filter",
    )
    assert ids(http, index_uid, "_vectors EXISTS") == {0, 1, 2, 4}
    # added again, the embedder takes what the documents kept of it (their `regenerate: false`
    # entries: 1's vectors, 3's empty ones) as user-provided, and embeds the others
    task_of(http, http.patch(settings, json={"embedders": {"rest": rest(service)}}))
    assert ids(http, index_uid, "_vectors.rest EXISTS") == {0, 1, 2, 4, 5}
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == {1, 3}
    assert ids(http, index_uid, "_vectors.rest.regenerate EXISTS") == {0, 2, 4, 5}
    # a template change regenerates every regenerable document, none of them user-provided
    task_of(
        http,
        http.patch(
            settings, json={"embedders": {"rest": {"documentTemplate": "{{doc.title}} {{doc.color}}"}}}
        ),
    )
    assert ids(http, index_uid, "_vectors.rest.userProvided EXISTS") == {1, 3}
    assert ids(http, index_uid, "_vectors.rest.documentTemplate EXISTS") == {0, 2, 4, 5}
    # a new userProvided embedder is filled from what documents carried before it existed
    task_of(
        http,
        http.put(
            f"/indexes/{index_uid}/documents",
            json=[{"id": 0, "_vectors": {"late": [1.0, 0.0]}}, {"id": 1, "_vectors": {"late": None}}],
        ),
    )
    assert error(http.post(f"/indexes/{index_uid}/search", json={"filter": "_vectors.late EXISTS"}))[
        "message"
    ].startswith(
        f"Index `{index_uid}`: The embedder `late` does not exist. Available embedders are: `manual`, `rest`."
    )
    task_of(
        http, http.patch(settings, json={"embedders": {"late": {"source": "userProvided", "dimensions": 2}}})
    )
    assert ids(http, index_uid, "_vectors.late EXISTS") == {0}
    assert ids(http, index_uid, "_vectors.late.userProvided EXISTS") == {0, 1}
    # removing every embedder: `_vectors EXISTS` selects nothing, naming one fails
    task_of(http, http.patch(settings, json={"embedders": None}))
    assert ids(http, index_uid, "_vectors EXISTS") == set()
    assert ids(http, index_uid, "_vectors NOT EXISTS") == ALL


# -- errors ---------------------------------------------------------------------------------------------


def test_unknown_embedder_and_fragment_errors(
    http: httpx.Client, service: FakeService, index_uid: str
) -> None:
    setup(http, service, index_uid)
    search = f"/indexes/{index_uid}/search"
    prefix = f"Index `{index_uid}`: "
    cases = [
        (
            "_vectors.other EXISTS",
            "The embedder `other` does not exist. Available embedders are: `manual`, `rest`.\n10:15 _vectors.other EXISTS",
        ),
        # the part after `_vectors.` always names an embedder
        (
            "_vectors.userProvided EXISTS",
            "The embedder `userProvided` does not exist. Available embedders are: `manual`, `rest`.\n"
            "10:22 _vectors.userProvided EXISTS",
        ),
        (
            "_vectors.rset.regenerate NOT EXISTS",
            "The embedder `rset` does not exist. Available embedders are: `manual`, `rest`. Did you mean `rest`?\n"
            "10:14 _vectors.rset.regenerate NOT EXISTS",
        ),
        (
            "color = red AND _vectors.manul.userProvided EXISTS",
            "The embedder `manul` does not exist. Available embedders are: `manual`, `rest`. Did you mean `manual`?\n"
            "26:31 color = red AND _vectors.manul.userProvided EXISTS",
        ),
        (
            "_vectors.rest.fragments.basic EXISTS",
            "The fragment `basic` does not exist on embedder `rest`. This embedder does not have any configured "
            "fragments.\n25:30 _vectors.rest.fragments.basic EXISTS",
        ),
    ]
    for filter, message in cases:
        assert error(http.post(search, json={"filter": filter})) == body(
            prefix + message, "invalid_search_filter"
        )
        # the documents routes answer `invalid_document_filter`, without the index name
        fetch = http.post(f"/indexes/{index_uid}/documents/fetch", json={"filter": filter})
        assert error(fetch) == body(message, "invalid_document_filter")
    res = http.get(f"/indexes/{index_uid}/documents", params={"filter": "_vectors.other EXISTS"})
    assert error(res) == body(cases[0][1], "invalid_document_filter")
    # an `AND` whose left side selects nothing does not evaluate its right side (milli)
    assert ids(http, index_uid, "color = purple AND _vectors.other EXISTS") == set()
    # multi-search names the query
    res = http.post(
        "/multi-search", json={"queries": [{"indexUid": index_uid, "filter": "_vectors.other EXISTS"}]}
    )
    assert error(res) == body(f"Inside `.queries[0]`: {prefix}{cases[0][1]}", "invalid_search_filter")


def test_errors_without_embedders(http: httpx.Client, index_uid: str) -> None:
    task_of(
        http, http.post(f"/indexes/{index_uid}/documents", json=[{"id": 1, "_vectors": {"manual": [1, 2]}}])
    )
    assert ids(http, index_uid, "_vectors EXISTS") == set()
    res = http.post(f"/indexes/{index_uid}/search", json={"filter": "_vectors.manual EXISTS"})
    assert error(res) == body(
        f"Index `{index_uid}`: The embedder `manual` does not exist. This index does not have any "
        "configured embedders.\n10:16 _vectors.manual EXISTS",
        "invalid_search_filter",
    )


def test_feature_gate(http: httpx.Client, service: FakeService, index_uid: str) -> None:
    setup(http, service, index_uid)
    assert http.patch("/experimental-features", json={"multimodal": False}).json()["multimodal"] is False
    try:
        gate = body(f"{GATE}\n1:9 _vectors EXISTS", "feature_not_enabled")
        assert error(http.post(f"/indexes/{index_uid}/search", json={"filter": "_vectors EXISTS"})) == gate
        fetch = http.post(f"/indexes/{index_uid}/documents/fetch", json={"filter": "_vectors EXISTS"})
        assert error(fetch) == gate
        delete = http.post(f"/indexes/{index_uid}/documents/delete", json={"filter": "_vectors EXISTS"})
        assert error(delete) == gate
        res = http.post(
            f"/indexes/{index_uid}/search", json={"filter": "color = red AND _vectors.rest EXISTS"}
        )
        assert error(res)["message"] == f"{GATE}\n17:25 color = red AND _vectors.rest EXISTS"
    finally:
        assert http.patch("/experimental-features", json={"multimodal": True}).json()["multimodal"] is True
    assert ids(http, index_uid, "_vectors EXISTS") == {0, 1, 2, 4, 5}


def test_dump_import_loads_vectors_and_statuses(tmp_path: Path, service: FakeService) -> None:
    """A dump keeps every document's `_vectors`; importing it loads them into the vector store, as
    user-provided embeddings with their `regenerate` (Meilisearch's dump import), without embedding."""
    source = ServerProcess(
        tmp_path / "src.ms", extra_args=["--dump-dir", str(tmp_path / "dumps")], env=dict(LOOPBACK)
    ).start()
    try:
        with httpx.Client(base_url=source.url, timeout=60) as http:
            http.patch("/experimental-features", json={"multimodal": True})
            setup(http, service, "dogs")
            assert ids(http, "dogs", "_vectors.rest.documentTemplate EXISTS") == {0, 4, 5}
            dump_uid = task_of(http, http.post("/dumps"))["details"]["dumpUid"]
    finally:
        source.stop()
    service.reset()
    target = ServerProcess(
        tmp_path / "dst.ms",
        env=dict(LOOPBACK),
        extra_args=["--import-dump", str(tmp_path / "dumps" / f"{dump_uid}.dump")],
    ).start()
    try:
        with httpx.Client(base_url=target.url, timeout=60) as http:
            assert service.requests == []  # nothing was embedded
            assert ids(http, "dogs", "_vectors.manual EXISTS") == {0, 1, 2, 4}
            assert ids(http, "dogs", "_vectors.manual.userProvided EXISTS") == ALL
            assert ids(http, "dogs", "_vectors.manual.regenerate EXISTS") == {2}
            assert ids(http, "dogs", "_vectors.rest EXISTS") == {0, 1, 2, 4, 5}
            assert ids(http, "dogs", "_vectors.rest.userProvided EXISTS") == ALL
            assert ids(http, "dogs", "_vectors.rest.documentTemplate EXISTS") == set()
            assert ids(http, "dogs", "_vectors.rest.regenerate EXISTS") == {0, 2, 4, 5}
            res = http.post(
                "/indexes/dogs/search",
                json={"vector": [0, 0, 1], "hybrid": {"embedder": "manual"}, "limit": 1},
            )
            assert res.status_code == 200 and res.json()["hits"][0]["id"] == 0
            # the imported documents keep regenerating as their `regenerate` says
            task_of(http, http.put("/indexes/dogs/documents", json=[{"id": 0, "title": "kefir again"}]))
            assert ids(http, "dogs", "_vectors.rest.documentTemplate EXISTS") == {0}
    finally:
        target.stop()
