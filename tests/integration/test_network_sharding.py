"""Sharding (issue 21, Meilisearch Enterprise Edition's protocol): three real servers on loopback ports
form a network with a leader and one shard each; 10k documents written to the leader are forwarded to
the others, each keeps the documents of its shard (rendezvous hashing), and a `useNetwork` search (the
default with a leader) equals one instance holding every document. A fourth server is that reference.

A fourth instance then joins with a new shard: the others move it the documents of that shard.
Failures come last: a stopped remote, a slow one and one refusing the write key give the leader's task
failed `remoteTasks` entries (the local write is kept), and a shard whose owner is down gives
`remoteErrors` with the other shards' results.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from hanzo_engine.scheduler.sharding import document_shard
from tests.conftest import MASTER_KEY, ServerProcess, free_port, wait_task

INDEX: Final = "products"
ALLOW: Final = ["--experimental-allowed-ip-networks", "127.0.0.0/8"]
ENV: Final = {
    "MEILI_EXPERIMENTAL_REMOTE_SEARCH_TIMEOUT_SECONDS": "30",
    "MEILI_EXPERIMENTAL_PROXY_REQUEST_TIMEOUT_SECONDS": "1",
    "MEILI_EXPERIMENTAL_PROXY_CONNECT_TIMEOUT_SECONDS": "1",
    "MEILI_EXPERIMENTAL_PROXY_BACKOFF_TIMEOUT_SECONDS": "2",
}
NODES: Final = ("ms0", "ms1", "ms2")
SHARDS: Final = {"s0": "ms0", "s1": "ms1", "s2": "ms2"}
COUNT: Final = 10_000
COLORS: Final = ("red", "blue", "green", "black", "white", "yellow")
WORDS: Final = (
    "lamp",
    "desk",
    "chair",
    "table",
    "shelf",
    "sofa",
    "bed",
    "rug",
    "mirror",
    "clock",
    "vase",
    "stool",
)
SETTINGS: Final = {
    "filterableAttributes": ["color", "price"],
    "sortableAttributes": ["price", "rank"],
    "rankingRules": ["sort", "words", "typo", "proximity", "attribute", "exactness"],
    "pagination": {"maxTotalHits": 20_000},
}


def _documents() -> list[dict[str, Any]]:
    return [
        {
            "id": f"p{i}",
            "title": " ".join(WORDS[(i * 5 + k * 7) % len(WORDS)] for k in range(1 + i % 3)),
            "color": COLORS[i % len(COLORS)],
            "price": (i * 31) % 997,
            "rank": (i * 7919) % COUNT,
        }
        for i in range(COUNT)
    ]


class _Slow(http.server.BaseHTTPRequestHandler):
    """A remote answering after the proxy's request timeout."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        time.sleep(3)
        try:
            self.send_response(202)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "15")
            self.end_headers()
            self.wfile.write(b'{"taskUid": 1}\n')
        except OSError:
            pass

    do_POST = do_PATCH = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _client(srv: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=srv.url, timeout=60, headers={"Authorization": f"Bearer {MASTER_KEY}"})


def _wait_remote_tasks(
    client: httpx.Client, uid: int, names: set[str], timeout: float = 30
) -> dict[str, Any]:
    """The leader's task once every remote of `names` has its `remoteTasks` entry."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task: dict[str, Any] = client.get(f"/tasks/{uid}").json()
        if names <= set((task.get("network") or {}).get("remoteTasks") or {}):
            return task
        time.sleep(0.05)
    raise TimeoutError(f"task {uid} was not forwarded to {names}")


def _replicated(clients: dict[str, httpx.Client], leader_task: int) -> dict[str, Any]:
    """Wait for a leader task and its copies on ms1, ms2; returns the leader's task."""
    task = _wait_remote_tasks(clients["ms0"], leader_task, {"ms1", "ms2"})
    assert wait_task(clients["ms0"], leader_task, timeout=120)["status"] == "succeeded"
    for name in ("ms1", "ms2"):
        remote = task["network"]["remoteTasks"][name]
        assert remote["error"] is None, remote
        assert wait_task(clients[name], remote["taskUid"], timeout=120)["status"] == "succeeded"
    return task


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root: Path = tmp_path_factory.mktemp("sharding")
    args = [*ALLOW, "--master-key", MASTER_KEY]
    servers = {
        name: ServerProcess(
            root / name / "data.ms",
            env=ENV,
            extra_args=[
                *args,
                "--snapshot-dir",
                str(root / name / "snapshots"),
                "--dump-dir",
                str(root / name / "dumps"),
            ],
        )
        for name in (*NODES, "single")
    }
    for srv in servers.values():
        srv.db_path.parent.mkdir(parents=True, exist_ok=True)
        srv.start()
    clients = {name: _client(srv) for name, srv in servers.items()}
    try:
        for c in clients.values():
            assert c.patch("/experimental-features", json={"network": True}).status_code == 200
        remotes = {
            name: {"url": servers[name].url, "searchApiKey": MASTER_KEY, "writeApiKey": MASTER_KEY}
            for name in NODES
        }
        r = clients["ms0"].patch(
            "/network",
            json={
                "self": "ms0",
                "remotes": remotes,
                "leader": "ms0",
                "shards": {shard: {"remotes": [owner]} for shard, owner in SHARDS.items()},
            },
        )
        assert r.status_code == 202, r.text
        change = r.json()
        assert change["type"] == "networkTopologyChange"
        _replicated(clients, change["taskUid"])
        docs = _documents()
        tasks = []
        for c in (clients["ms0"], clients["single"]):
            tasks.append(c.patch(f"/indexes/{INDEX}/settings", json=SETTINGS).json()["taskUid"])
            tasks.append(
                c.post(f"/indexes/{INDEX}/documents", json=docs, params={"primaryKey": "id"}).json()[
                    "taskUid"
                ]
            )
        assert wait_task(clients["single"], tasks[3], timeout=120)["status"] == "succeeded"
        _replicated(clients, tasks[0])
        added = _replicated(clients, tasks[1])
        yield {
            "servers": servers,
            "clients": clients,
            "docs": docs,
            "change": change,
            "added": added,
            "root": root,
        }
    finally:
        for c in clients.values():
            c.close()
        for srv in servers.values():
            srv.stop()


def test_followers_take_the_leaders_network(net: dict[str, Any]) -> None:
    clients = net["clients"]
    leader = clients["ms0"].get("/network").json()
    for name in NODES:
        network = clients[name].get("/network").json()
        assert network["self"] == name and network["leader"] == "ms0"
        assert network["version"] == leader["version"]
        assert network["shards"] == {shard: {"remotes": [owner]} for shard, owner in SHARDS.items()}
        assert set(network["remotes"]) == set(NODES)
    task = clients["ms0"].get(f"/tasks/{net['change']['taskUid']}").json()
    assert task["details"]["movedDocuments"] == 0
    # a second change waits for none: the first one is done
    origin = (
        clients["ms1"].get(f"/tasks/{task['network']['remoteTasks']['ms1']['taskUid']}").json()["network"]
    )
    assert origin == {
        "origin": {"remoteName": "ms0", "taskUid": task["uid"], "networkVersion": leader["version"]}
    }


def test_writes_go_to_the_leader(net: dict[str, Any]) -> None:
    clients = net["clients"]
    r = clients["ms1"].post(f"/indexes/{INDEX}/documents", json=[{"id": "x"}])
    assert r.status_code == 400 and r.json()["code"] == "not_leader", r.text
    assert "only the leader `ms0` can receive new tasks" in r.json()["message"]
    r = clients["ms2"].patch(f"/indexes/{INDEX}/settings", json={"distinctAttribute": None})
    assert r.json()["code"] == "not_leader"
    # the API key is checked first
    r = httpx.post(f"{net['servers']['ms1'].url}/indexes/{INDEX}/documents", json=[{"id": "x"}])
    assert r.status_code == 401 and r.json()["code"] == "missing_authorization_header"
    r = clients["ms1"].post(
        f"/indexes/{INDEX}/documents", json=[{"id": "x"}], headers={"Authorization": "Bearer no"}
    )
    assert r.status_code == 403 and r.json()["code"] == "invalid_api_key"
    # a forwarded write names its origin; both headers or none
    r = clients["ms1"].post(
        "/indexes", json={"uid": "scratch"}, headers={"X-Meili-Proxy-Origin-Remote": "ms0"}
    )
    assert r.status_code == 400 and r.json()["code"] == "inconsistent_document_change_headers"
    r = clients["ms1"].post(
        "/indexes",
        json={"uid": "scratch"},
        headers={
            "X-Meili-Proxy-Origin-Remote": "ms0",
            "X-Meili-Proxy-Origin-TaskUid": "7",
            "X-Meili-Proxy-Origin-Network-Version": "00000000-0000-0000-0000-000000000000",
        },
    )
    assert r.status_code == 400 and r.json()["code"] == "network_version_too_old"
    # reads are not writes
    assert clients["ms1"].post(f"/indexes/{INDEX}/documents/fetch", json={"limit": 1}).status_code == 200


def test_each_node_keeps_its_shard(net: dict[str, Any]) -> None:
    clients, docs = net["clients"], net["docs"]
    owners = {d["id"]: SHARDS[document_shard(sorted(SHARDS), d["id"]) or ""] for d in docs}
    total = 0
    for name in NODES:
        stats = clients[name].get(f"/indexes/{INDEX}/stats").json()
        expected = sorted(i for i, owner in owners.items() if owner == name)
        assert stats["numberOfDocuments"] == len(expected)
        assert COUNT / 3 * 0.9 < len(expected) < COUNT / 3 * 1.1
        total += stats["numberOfDocuments"]
        got = (
            clients[name]
            .post(
                f"/indexes/{INDEX}/documents/fetch",
                json={"limit": COUNT, "fields": ["id"], "useNetwork": False},
            )
            .json()
        )
        assert sorted(d["id"] for d in got["results"]) == expected
    assert total == COUNT
    added = net["added"]
    assert list(added["network"]) == ["remoteTasks", "networkVersion"]
    for name in ("ms1", "ms2"):
        copy = clients[name].get(f"/tasks/{added['network']['remoteTasks'][name]['taskUid']}").json()
        assert copy["network"]["origin"]["taskUid"] == added["uid"]
        assert copy["details"]["receivedDocuments"] == COUNT
        assert copy["details"]["indexedDocuments"] == sum(1 for o in owners.values() if o == name)


def test_shard_filter(net: dict[str, Any]) -> None:
    c = net["clients"]["ms1"]

    def local(filter_: Any) -> httpx.Response:
        return c.post(
            f"/indexes/{INDEX}/search", json={"filter": filter_, "useNetwork": False, "hitsPerPage": 0}
        )

    own = c.get(f"/indexes/{INDEX}/stats").json()["numberOfDocuments"]
    assert local('_shard = "s1"').json()["totalHits"] == own
    assert local("_shard = s0").json()["totalHits"] == 0
    assert local("_shard != s1").json()["totalHits"] == 0
    assert local("_shard IN [s0, s1]").json()["totalHits"] == own
    assert 0 < local(["_shard = s1", "color = red"]).json()["totalHits"] < own
    r = local("_shard = nope")
    assert r.status_code == 400 and r.json()["code"] == "invalid_search_filter"
    assert r.json()["message"] == f"Index `{INDEX}`: Shard `nope` does not exist"


QUERIES: Final = [
    {"q": "", "sort": ["rank:asc"], "limit": 30, "offset": 15, "facets": ["color"]},
    {"q": "lamp desk", "sort": ["price:desc", "rank:asc"], "limit": 20, "facets": ["color"]},
    {
        "q": "chair",
        "sort": ["rank:desc"],
        "filter": "color IN [red, blue] AND price < 500",
        "hitsPerPage": 12,
        "page": 4,
        "facets": ["color"],
    },
    # few `price` values: a merged distribution orders numbers as strings, as Meilisearch's federated facets
    {"q": "", "filter": "price >= 990", "sort": ["rank:asc"], "limit": 100, "facets": ["price", "color"]},
]


@pytest.mark.parametrize("query", QUERIES)
def test_network_search_equals_one_instance(net: dict[str, Any], query: dict[str, Any]) -> None:
    clients = net["clients"]
    expected = clients["single"].post(f"/indexes/{INDEX}/search", json=query).json()
    for caller, use_network in (("ms0", None), ("ms1", True), ("ms2", None)):
        body = dict(query) if use_network is None else {**query, "useNetwork": use_network}
        r = clients[caller].post(f"/indexes/{INDEX}/search", json=body)
        assert r.status_code == 200, r.text
        got = r.json()
        assert [h["id"] for h in got["hits"]] == [h["id"] for h in expected["hits"]]
        for key in (
            "estimatedTotalHits",
            "totalHits",
            "totalPages",
            "page",
            "hitsPerPage",
            "limit",
            "offset",
            "facetDistribution",
            "facetStats",
        ):
            assert got.get(key) == expected.get(key), key
        assert got["remoteErrors"] == {}
        for hit in got["hits"]:
            assert hit["_federation"]["remote"] == SHARDS[document_shard(sorted(SHARDS), hit["id"]) or ""]


def test_multi_search_over_shards(net: dict[str, Any]) -> None:
    clients = net["clients"]
    query = {"indexUid": INDEX, "q": "sofa", "sort": ["rank:asc"]}
    expected = (
        clients["single"].post("/multi-search", json={"federation": {"limit": 40}, "queries": [query]}).json()
    )
    got = clients["ms2"].post("/multi-search", json={"federation": {"limit": 40}, "queries": [query]}).json()
    assert [h["id"] for h in got["hits"]] == [h["id"] for h in expected["hits"]]
    assert got["estimatedTotalHits"] == expected["estimatedTotalHits"]
    plain = clients["ms1"].post("/multi-search", json={"queries": [{**query, "limit": 40}]}).json()
    assert [h["id"] for h in plain["results"][0]["hits"]] == [h["id"] for h in expected["hits"]]


def test_documents_and_facet_search_over_shards(net: dict[str, Any]) -> None:
    clients = net["clients"]
    c = clients["ms1"]
    body = {"filter": "color = red AND price < 200", "limit": 5000, "fields": ["id"]}
    expected = clients["single"].post(f"/indexes/{INDEX}/documents/fetch", json=body).json()
    got = c.post(f"/indexes/{INDEX}/documents/fetch", json=body).json()  # `useNetwork` true by default
    assert got["total"] == expected["total"] and "remoteErrors" not in got
    assert sorted(d["id"] for d in got["results"]) == sorted(d["id"] for d in expected["results"])
    page = c.get(f"/indexes/{INDEX}/documents", params={"offset": 10, "limit": 7}).json()
    assert (page["total"], page["offset"], page["limit"], len(page["results"])) == (COUNT, 10, 7, 7)
    elsewhere = next(d["id"] for d in net["docs"] if document_shard(sorted(SHARDS), d["id"]) == "s0")
    r = c.get(f"/indexes/{INDEX}/documents/{elsewhere}")
    assert r.status_code == 200 and r.json()["id"] == elsewhere
    assert c.get(f"/indexes/{INDEX}/documents/{elsewhere}", params={"useNetwork": "false"}).status_code == 404
    facet_body = {"facetName": "color", "facetQuery": "", "filter": "price > 900"}
    want = clients["single"].post(f"/indexes/{INDEX}/facet-search", json=facet_body).json()
    have = c.post(f"/indexes/{INDEX}/facet-search", json=facet_body).json()
    assert have["facetHits"] == want["facetHits"] and have["remoteErrors"] == {}


def _without_status(network: dict[str, Any]) -> dict[str, Any]:
    """The network without the computed availability of remotes (runtime state, in no snapshot)."""
    return {
        **network,
        "remotes": {n: {k: v for k, v in r.items() if k != "status"} for n, r in network["remotes"].items()},
    }


def test_snapshot_and_dump_keep_the_network(net: dict[str, Any]) -> None:
    clients, root = net["clients"], net["root"]
    c = clients["ms1"]
    network = _without_status(c.get("/network").json())
    assert wait_task(c, c.post("/snapshots").json()["taskUid"], timeout=60)["status"] == "succeeded"
    done = wait_task(c, c.post("/dumps").json()["taskUid"], timeout=60)
    assert done["status"] == "succeeded"
    dump = root / "ms1" / "dumps" / f"{done['details']['dumpUid']}.dump"
    restored = ServerProcess(
        root / "restored" / "data.ms",
        extra_args=["--import-snapshot", str(root / "ms1" / "snapshots" / "data.ms.snapshot")],
    )
    imported = ServerProcess(root / "imported" / "data.ms", extra_args=["--import-dump", str(dump)])
    for srv in (restored, imported):
        srv.db_path.parent.mkdir(parents=True, exist_ok=True)
        srv.start()
    try:
        with httpx.Client(base_url=restored.url, timeout=30) as r:
            assert _without_status(r.get("/network").json()) == network
        with httpx.Client(base_url=imported.url, timeout=30) as i:
            # a dump is loaded elsewhere: without `self` and `leader`, as Meilisearch
            assert _without_status(i.get("/network").json()) == {**network, "self": None, "leader": None}
            # tasks keep their `network` (here the origin of the leader's document addition)
            added = i.get("/tasks", params={"types": "documentAdditionOrUpdate"}).json()["results"][-1]
            assert added["network"]["origin"]["remoteName"] == "ms0"
    finally:
        restored.stop()
        imported.stop()


def _wait_idle(client: httpx.Client, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.get("/tasks", params={"statuses": "enqueued,processing", "limit": 1}).json()["total"] == 0:
            return
        time.sleep(0.05)
    raise TimeoutError("tasks still pending")


def test_adding_a_shard_moves_documents(net: dict[str, Any]) -> None:
    """A fourth instance owning a new shard: the others send it the documents of that shard (with the
    index settings) and delete them; searches still equal one instance."""
    clients, servers, docs = net["clients"], net["servers"], net["docs"]
    ms3 = ServerProcess(
        net["root"] / "ms3" / "data.ms", env=ENV, extra_args=[*ALLOW, "--master-key", MASTER_KEY]
    )
    ms3.db_path.parent.mkdir(parents=True, exist_ok=True)
    servers["ms3"] = ms3.start()
    clients["ms3"] = _client(ms3)
    assert clients["ms3"].patch("/experimental-features", json={"network": True}).status_code == 200
    r = clients["ms0"].patch(
        "/network",
        json={
            "remotes": {"ms3": {"url": ms3.url, "searchApiKey": MASTER_KEY, "writeApiKey": MASTER_KEY}},
            "shards": {"s3": {"remotes": ["ms3"]}},
        },
    )
    assert r.status_code == 202, r.text
    change = _wait_remote_tasks(clients["ms0"], r.json()["taskUid"], {"ms1", "ms2", "ms3"})
    moved = 0
    for name in ("ms0", "ms1", "ms2"):
        uid = change["uid"] if name == "ms0" else change["network"]["remoteTasks"][name]["taskUid"]
        done = wait_task(clients[name], uid, timeout=120)
        assert done["status"] == "succeeded" and done["details"]["message"] == "Finished", done
        moved += done["details"]["movedDocuments"]
    _wait_idle(clients["ms3"])
    shards = {**SHARDS, "s3": "ms3"}
    owners = {d["id"]: shards[document_shard(sorted(shards), d["id"]) or ""] for d in docs}
    assert moved == sum(1 for o in owners.values() if o == "ms3") > COUNT / 5
    for name in ("ms0", "ms1", "ms2", "ms3"):
        got = (
            clients[name]
            .post(
                f"/indexes/{INDEX}/documents/fetch",
                json={"limit": COUNT, "fields": ["id"], "useNetwork": False},
            )
            .json()
        )
        assert sorted(d["id"] for d in got["results"]) == sorted(i for i, o in owners.items() if o == name), (
            name
        )
    assert clients["ms3"].get(f"/indexes/{INDEX}/settings").json()["sortableAttributes"] == ["price", "rank"]
    query = QUERIES[1]
    expected = clients["single"].post(f"/indexes/{INDEX}/search", json=query).json()
    got = clients["ms2"].post(f"/indexes/{INDEX}/search", json=query).json()
    assert [h["id"] for h in got["hits"]] == [h["id"] for h in expected["hits"]]
    assert got["facetDistribution"] == expected["facetDistribution"] and got["remoteErrors"] == {}


def test_failing_remotes(net: dict[str, Any]) -> None:
    """Last: changes the topology. A stopped remote, a slow one and one refusing the write key."""
    clients, servers = net["clients"], net["servers"]
    gone = ServerProcess(net["root"] / "gone" / "data.ms", extra_args=ALLOW)
    gone.db_path.parent.mkdir(parents=True, exist_ok=True)
    gone.start()
    gone_url = gone.url
    gone.stop()
    slow = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Slow)
    slow.daemon_threads = True
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    try:
        leader = clients["ms0"]
        r = leader.patch(
            "/network",
            json={
                "remotes": {
                    "down": {"url": gone_url},
                    "slow": {"url": f"http://127.0.0.1:{slow.server_port}"},
                    "badkey": {
                        "url": servers["ms2"].url,
                        "writeApiKey": "not-the-key",
                        "searchApiKey": MASTER_KEY,
                    },
                },
                "shards": {"s9": {"remotes": ["down"]}},
            },
        )
        assert r.status_code == 202, r.text
        names = {"ms1", "ms2", "ms3", "down", "slow", "badkey"}
        change = _wait_remote_tasks(leader, r.json()["taskUid"], names)
        errors = {
            name: (t["error"] or {}).get("code") for name, t in change["network"]["remoteTasks"].items()
        }
        assert errors == {
            "ms1": None,
            "ms2": None,
            "ms3": None,
            "down": "remote_could_not_send_request",
            "slow": "remote_timeout",
            "badkey": "remote_invalid_api_key",
        }
        for name in ("ms1", "ms2"):
            uid = change["network"]["remoteTasks"][name]["taskUid"]
            assert wait_task(clients[name], uid)["status"] == "succeeded"
        # a write: kept here, forwarded to the live remotes, failed for the others
        r = leader.post(
            f"/indexes/{INDEX}/documents", json=[{"id": f"new{i}", "title": "lamp"} for i in range(30)]
        )
        uid = r.json()["taskUid"]
        assert wait_task(leader, uid)["status"] == "succeeded"
        task = _wait_remote_tasks(leader, uid, names)
        assert task["status"] == "succeeded"
        remote_tasks = task["network"]["remoteTasks"]
        assert remote_tasks["badkey"]["error"]["code"] == "remote_invalid_api_key"
        assert remote_tasks["down"]["error"]["code"] == "remote_could_not_send_request"
        assert "taskUid" in remote_tasks["ms1"] and remote_tasks["ms1"]["error"] is None
        # the shard owned by the stopped remote is missing from searches, the others answer
        got = clients["ms1"].post(f"/indexes/{INDEX}/search", json={"q": "", "limit": 0}).json()
        assert set(got["remoteErrors"]) == {"down"}
        assert got["remoteErrors"]["down"]["code"] == "remote_could_not_send_request"
        # the documents of `s9` could not be sent to `down`: they stayed where they were
        assert got["estimatedTotalHits"] == COUNT + 30 - sum(
            1 for i in range(30) if document_shard(sorted([*SHARDS, "s3", "s9"]), f"new{i}") == "s9"
        )
    finally:
        slow.shutdown()
        slow.server_close()
