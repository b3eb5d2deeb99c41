"""Index and global stats fields (api-contract §20, Meilisearch's `IndexStats`): embeddings counted
from the vector store, every internal database size, `sizeFormat=human`; and the optional stats of a
batch (`progressTrace`, `writeChannelCongestion`, `internalDatabaseSizes`)."""

from __future__ import annotations

import re

import httpx

from tests.conftest import wait_task

HUMAN = re.compile(r"^\d+(\.\d+)?\s+(B|KiB|MiB|GiB|TiB)$")


def test_embedding_counts(http: httpx.Client, index_uid: str) -> None:
    r = http.patch(f"/indexes/{index_uid}/settings",
                   json={"embedders": {"manual": {"source": "userProvided", "dimensions": 2},
                                       "other": {"source": "userProvided", "dimensions": 3}}})
    assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
    docs = [
        {"id": 1, "_vectors": {"manual": [[0.1, 0.2], [0.3, 0.4]], "other": [1, 2, 3]}},  # 3 embeddings
        {"id": 2, "_vectors": {"manual": [0.5, 0.6], "other": None}},
        {"id": 3, "_vectors": {"manual": None, "other": None}},  # no embedding (a user-provided vector
        {"id": 4, "_vectors": {"manual": [], "other": []}},      # must be given, even as none)
    ]
    r = http.post(f"/indexes/{index_uid}/documents", json=docs)
    task = wait_task(http, r.json()["taskUid"])
    assert task["status"] == "succeeded", task["error"]
    stats = http.get(f"/indexes/{index_uid}/stats").json()
    assert (stats["numberOfEmbeddings"], stats["numberOfEmbeddedDocuments"]) == (4, 2)
    assert http.get("/stats").json()["indexes"][index_uid]["numberOfEmbeddings"] == 4
    r = http.delete(f"/indexes/{index_uid}/documents/1")
    assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
    stats = http.get(f"/indexes/{index_uid}/stats").json()
    assert (stats["numberOfEmbeddings"], stats["numberOfEmbeddedDocuments"]) == (1, 1)


def test_internal_sizes_and_human_format(http: httpx.Client, index_uid: str) -> None:
    r = http.post(f"/indexes/{index_uid}/documents", json=[{"id": i, "t": f"word{i} common"} for i in range(50)])
    task = wait_task(http, r.json()["taskUid"])
    stats = http.get(f"/indexes/{index_uid}/stats", params={"showInternalDatabaseSizes": "true"}).json()
    sizes = stats["internalDatabaseSizes"]
    assert sizes and all(isinstance(v, int) and v > 0 for v in sizes.values())
    assert list(sizes.values()) == sorted(sizes.values(), reverse=True)  # largest first
    assert {"documents", "wordDocids"} <= set(sizes)
    human = http.get(f"/indexes/{index_uid}/stats",
                     params={"showInternalDatabaseSizes": "true", "sizeFormat": "human"}).json()
    assert list(human) == list(stats)
    for key in ("rawDocumentDbSize", "avgDocumentSize"):
        assert HUMAN.match(human[key]), human[key]
    assert all(HUMAN.match(v) for v in human["internalDatabaseSizes"].values())
    assert isinstance(human["numberOfDocuments"], int)
    overall = http.get("/stats", params={"sizeFormat": "human"}).json()
    assert HUMAN.match(overall["databaseSize"]) and HUMAN.match(overall["usedDatabaseSize"])
    assert HUMAN.match(overall["indexes"][index_uid]["rawDocumentDbSize"])
    r = http.get(f"/indexes/{index_uid}/stats", params={"sizeFormat": "big"})
    assert r.status_code == 400
    assert r.json() == {"message": "Unknown value `big` for parameter `sizeFormat`: expected one of `human`, `raw`",
                        "code": "invalid_stats_size_format", "type": "invalid_request",
                        "link": "https://docs.meilisearch.com/errors#invalid_stats_size_format"}
    # the batch that indexed them reports what grew
    batch = http.get(f"/batches/{task['batchUid']}").json()
    grown = batch["stats"]["internalDatabaseSizes"]
    assert set(grown) <= set(sizes) and "wordDocids" in grown
    assert all(re.fullmatch(r"\d+(\.\d+)? (B|KiB|MiB) \(\+\d+(\.\d+)? (B|KiB|MiB)\)", v) for v in grown.values())
    assert batch["stats"]["writeChannelCongestion"]["attempts"] == 50
    assert any(k.startswith("processing tasks > ") for k in batch["stats"]["progressTrace"])
