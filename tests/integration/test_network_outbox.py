"""No lost acknowledged write in a sharded network (issue 21): the leader stores every forward in its
outbox before answering, so writes taken while a follower is down reach it even when the leader is
killed (`kill -9`) and restarted in between.

Three real servers (one shard each, `ms0` leads). `ms2` is stopped, the leader takes writes (documents
written several times over, so their last version shows the order, a deletion, a settings change) and
is killed at once, with forwards to `ms1` possibly still in flight too; then it restarts, `ms2` starts
again, and both followers end with exactly the documents of their shard at their last version, their
tasks naming the leader's as their origin, received in the leader's task order.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final
from unittest import mock

import httpx
import pytest

from hanzo_engine.scheduler.sharding import document_shard
from tests.conftest import MASTER_KEY, ServerProcess, wait_task

INDEX: Final = "items"
NODES: Final = ("ms0", "ms1", "ms2")
SHARDS: Final = {"s0": "ms0", "s1": "ms1", "s2": "ms2"}
ENV: Final = {
    "MEILI_EXPERIMENTAL_PROXY_REQUEST_TIMEOUT_SECONDS": "2",
    "MEILI_EXPERIMENTAL_PROXY_CONNECT_TIMEOUT_SECONDS": "1",
    "MEILI_EXPERIMENTAL_PROXY_BACKOFF_TIMEOUT_SECONDS": "1",
}
ROUNDS: Final = 6
PER_ROUND: Final = 300


def _start(srv: ServerProcess, port: int) -> None:
    """Start `srv` on `port`: the network names each remote by its url."""
    with mock.patch("tests.conftest.free_port", return_value=port):
        srv.start()


def _client(srv: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=srv.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"})


def _until(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.1)


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[dict[str, ServerProcess]]:
    from tests.conftest import free_port

    servers = {
        name: ServerProcess(
            tmp_path / name / "data.ms",
            env=ENV,
            extra_args=["--experimental-allowed-ip-networks", "127.0.0.0/8", "--master-key", MASTER_KEY],
        )
        for name in NODES
    }
    try:
        for srv in servers.values():
            srv.db_path.parent.mkdir(parents=True)
            _start(srv, free_port())
        yield servers
    finally:
        for srv in servers.values():
            srv.stop()


def _documents(round_no: int) -> list[dict[str, Any]]:
    # each round rewrites the first half of the previous round's documents and adds new ones
    first = round_no * PER_ROUND // 2
    return [{"id": f"d{i}", "round": round_no, "title": f"item {i}"} for i in range(first, first + PER_ROUND)]


def test_writes_reach_a_follower_across_a_leader_crash(nodes: dict[str, ServerProcess]) -> None:
    clients = {name: _client(srv) for name, srv in nodes.items()}
    try:
        for c in clients.values():
            assert c.patch("/experimental-features", json={"network": True}).status_code == 200
        r = clients["ms0"].patch(
            "/network",
            json={
                "self": "ms0",
                "leader": "ms0",
                "remotes": {
                    name: {"url": srv.url, "searchApiKey": MASTER_KEY, "writeApiKey": MASTER_KEY}
                    for name, srv in nodes.items()
                },
                "shards": {shard: {"remotes": [owner]} for shard, owner in SHARDS.items()},
            },
        )
        assert r.status_code == 202, r.text
        change = r.json()["taskUid"]
        _until(
            lambda: all(
                (
                    (clients["ms0"].get(f"/tasks/{change}").json().get("network") or {}).get("remoteTasks")
                    or {}
                )
                .get(n, {})
                .get("taskUid")
                is not None
                for n in ("ms1", "ms2")
            ),
            30,
            "network",
        )

        ms2_port = nodes["ms2"].port
        nodes["ms2"].stop()
        leader = clients["ms0"]
        acked = [leader.post(f"/indexes/{INDEX}/documents", json=_documents(0), params={"primaryKey": "id"})]
        acked.append(leader.patch(f"/indexes/{INDEX}/settings", json={"filterableAttributes": ["round"]}))
        for round_no in range(1, ROUNDS):
            acked.append(leader.post(f"/indexes/{INDEX}/documents", json=_documents(round_no)))
        acked.append(leader.post(f"/indexes/{INDEX}/documents/delete-batch", json=["d0", "d1", "d2", "d3"]))
        assert [a.status_code for a in acked] == [202] * len(acked), [a.text for a in acked]
        uids = [a.json()["taskUid"] for a in acked]
        leader_port = nodes["ms0"].port
        nodes["ms0"].kill9()

        leader.close()
        _start(nodes["ms0"], leader_port)
        _start(nodes["ms2"], ms2_port)
        clients["ms0"] = leader = _client(nodes["ms0"])
        assert wait_task(leader, uids[-1], timeout=60)["status"] == "succeeded"

        def forwarded() -> list[dict[str, Any]] | None:
            tasks = [leader.get(f"/tasks/{uid}").json() for uid in uids]
            for task in tasks:
                remote_tasks = (task.get("network") or {}).get("remoteTasks") or {}
                if any(remote_tasks.get(n, {}).get("taskUid") is None for n in ("ms1", "ms2")):
                    return None
            return tasks

        tasks = _until(forwarded, 40, "the leader's writes were not all forwarded")
        final: dict[str, dict[str, Any]] = {}
        for round_no in range(ROUNDS):
            final.update({d["id"]: d for d in _documents(round_no)})
        for gone in ("d0", "d1", "d2", "d3"):
            del final[gone]
        for name in ("ms1", "ms2"):
            c = clients[name]
            copies = [task["network"]["remoteTasks"][name] for task in tasks]
            assert all(copy["error"] is None for copy in copies), copies
            for task, copy in zip(tasks, copies, strict=True):
                done = wait_task(c, copy["taskUid"], timeout=60)
                assert done["status"] == "succeeded", done
                assert done["network"]["origin"]["remoteName"] == "ms0"
                assert done["network"]["origin"]["taskUid"] == task["uid"]
            # received in the leader's order (a write in flight at the crash may come twice)
            received = c.get(
                "/tasks",
                params={"types": "documentAdditionOrUpdate,documentDeletion,settingsUpdate", "limit": 100},
            ).json()["results"]
            origins = [t["network"]["origin"]["taskUid"] for t in reversed(received)]
            assert origins == sorted(origins) and set(origins) == set(uids)
            got = c.post(
                f"/indexes/{INDEX}/documents/fetch", json={"limit": 10_000, "useNetwork": False}
            ).json()
            expected = {
                i: d for i, d in final.items() if SHARDS[document_shard(sorted(SHARDS), i) or ""] == name
            }
            assert {d["id"]: d for d in got["results"]} == expected
            assert c.get(f"/indexes/{INDEX}/settings/filterable-attributes").json() == ["round"]
    finally:
        for c in clients.values():
            c.close()
