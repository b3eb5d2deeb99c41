"""A server of several processes (`--http-workers`) behaves as one: what a write does, every process sees.

Searches are answered by whichever process accepted the connection (the kernel spreads new
connections over the processes); a search worker marks its answers with `x-hanzo-worker`. Each test
opens fresh connections until both the primary and a worker have answered, so that it checks the
guarantee on both kinds of process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hanzo_engine.server.search_queue import SearchQueue
from hanzo_engine.server.shared_counts import SharedCounts
from tests.conftest import MASTER_KEY, ServerProcess, wait_task

WORKER = "x-hanzo-worker"


def worker_pids(server_pid: int) -> list[int]:
    """The live children of the server process (its search workers)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == server_pid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for_workers(srv: ServerProcess, count: int, timeout: float = 30.0) -> list[int]:
    """Wait until `count` workers answer searches (a worker binds the port a moment after the primary)."""
    assert srv.proc is not None
    deadline = time.monotonic() + timeout
    seen: set[str] = set()
    while time.monotonic() < deadline:
        with httpx.Client(base_url=srv.url, timeout=10) as fresh:
            r = fresh.post("/indexes/probe/search", json={"q": ""})
        if WORKER in r.headers:
            seen.add(r.headers[WORKER])
        if len(seen) >= count:
            return worker_pids(srv.proc.pid)
        time.sleep(0.02)
    raise TimeoutError(f"only {len(seen)} of {count} workers answered")


def on_each_process(
    url: str, method: str, path: str, headers: dict[str, str] | None = None, **kw: Any
) -> dict[str, httpx.Response]:
    """The same request on fresh connections until both a worker and the primary answered it."""
    answers: dict[str, httpx.Response] = {}
    for _ in range(400):
        with httpx.Client(base_url=url, timeout=30, headers=headers) as fresh:
            r = fresh.request(method, path, **kw)
        answers.setdefault("worker" if WORKER in r.headers else "primary", r)
        if len(answers) == 2:
            return answers
    raise AssertionError(f"only {sorted(answers)} answered in 400 connections")


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("workers") / "data.ms",
        extra_args=["--http-workers", "2", "--master-key", MASTER_KEY],
    ).start()
    wait_for_workers(srv, 1)
    yield srv
    srv.stop()


@pytest.fixture
def admin(multi: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=multi.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}) as c:
        yield c


def test_a_write_through_any_process_is_searchable_on_every_process(
    multi: ServerProcess, admin: httpx.Client
) -> None:
    docs = [{"id": i, "title": f"title {i}", "kind": "even" if i % 2 == 0 else "odd"} for i in range(50)]
    # the writes are sent on fresh connections: some reach the worker, which forwards them
    for chunk in (docs[:25], docs[25:]):
        with httpx.Client(base_url=multi.url, timeout=30, headers=admin.headers) as fresh:
            task = fresh.post("/indexes/written/documents", json=chunk).json()
        assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    answers = on_each_process(
        multi.url,
        "POST",
        "/indexes/written/search",
        headers=dict(admin.headers),
        json={"q": "title", "limit": 100},
    )
    for r in answers.values():
        assert r.status_code == 200
        assert sorted(h["id"] for h in r.json()["hits"]) == list(range(50))

    # a settings change is seen by every process once its task succeeded
    task = admin.patch("/indexes/written/settings", json={"filterableAttributes": ["kind"]}).json()
    assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    answers = on_each_process(
        multi.url,
        "POST",
        "/indexes/written/search",
        headers=dict(admin.headers),
        json={"q": "", "filter": "kind = even", "limit": 100},
    )
    for r in answers.values():
        assert r.status_code == 200, r.text
        assert sorted(h["id"] for h in r.json()["hits"]) == list(range(0, 50, 2))

    # an index deleted is gone for every process
    task = admin.delete("/indexes/written").json()
    assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    answers = on_each_process(
        multi.url, "POST", "/indexes/written/search", headers=dict(admin.headers), json={"q": ""}
    )
    for r in answers.values():
        assert r.status_code == 404
        assert r.json()["code"] == "index_not_found"


def test_swap_and_compaction_are_seen_by_every_process(multi: ServerProcess, admin: httpx.Client) -> None:
    for uid, word in (("left", "apple"), ("right", "banana")):
        task = admin.post(
            f"/indexes/{uid}/documents", json=[{"id": i, "t": f"{word} {i}"} for i in range(30)]
        ).json()
        assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    for r in on_each_process(
        multi.url, "POST", "/indexes/left/search", headers=dict(admin.headers), json={"q": "apple"}
    ).values():
        assert r.json()["estimatedTotalHits"] == 30  # every process has the env of `left` open now
    task = admin.post("/swap-indexes", json=[{"indexes": ["left", "right"]}]).json()
    assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    for r in on_each_process(
        multi.url, "POST", "/indexes/left/search", headers=dict(admin.headers), json={"q": "banana"}
    ).values():
        assert r.json()["estimatedTotalHits"] == 30
    # compaction rebuilds the index in a new environment and drops the old one
    task = admin.post("/indexes/left/compact").json()
    assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    task = admin.post("/indexes/left/documents", json=[{"id": 99, "t": "banana cherry"}]).json()
    assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    for r in on_each_process(
        multi.url, "POST", "/indexes/left/search", headers=dict(admin.headers), json={"q": "banana"}
    ).values():
        assert r.status_code == 200, r.text
        assert r.json()["estimatedTotalHits"] == 31


def test_stored_instance_state_reaches_the_search_of_every_process(
    multi: ServerProcess, admin: httpx.Client
) -> None:
    """What search reads besides the index (dynamic search rules, foreign keys, the network) is read
    from storage by a search worker as by the primary."""
    assert (
        admin.patch(
            "/experimental-features", json={"dynamicSearchRules": True, "foreignKeys": True, "network": True}
        ).status_code
        == 200
    )
    writes = [
        ("/indexes/authors/documents", "POST", [{"id": "a1", "name": "Ann"}, {"id": "a2", "name": "Bob"}]),
        (
            "/indexes/books/documents",
            "POST",
            [{"id": i, "title": f"book {i}", "author": "a1" if i % 2 else "a2"} for i in range(10)],
        ),
        ("/indexes/authors/settings", "PATCH", {"filterableAttributes": ["name"]}),
        (
            "/indexes/books/settings",
            "PATCH",
            {
                "filterableAttributes": ["author"],
                "foreignKeys": [{"foreignIndexUid": "authors", "fieldName": "author"}],
            },
        ),
    ]
    for path, method, body in writes:
        task = admin.request(method, path, json=body).json()
        assert wait_task(admin, task["taskUid"])["status"] == "succeeded", task
    rule = admin.patch(
        "/dynamic-search-rules/pin-book-7",
        json={
            "conditions": [{"scope": "query", "contains": "book"}],
            "actions": [
                {"selector": {"indexUid": "books", "id": "7"}, "action": {"type": "pin", "position": 0}}
            ],
        },
    )
    if rule.status_code != 202:  # the rule's shape as this version's route takes it
        rule = admin.patch(
            "/dynamic-search-rules/pin-book-7",
            json={
                "conditions": {"query": {"words": "book"}},
                "actions": [
                    {"selector": {"indexUid": "books", "id": "7"}, "action": {"type": "pin", "position": 0}}
                ],
            },
        )
    assert rule.status_code == 202, rule.text
    assert wait_task(admin, rule.json()["taskUid"])["status"] == "succeeded"
    queries = {
        "pins": ("/indexes/books/search", {"q": "book", "limit": 3}),
        "foreign": (
            "/indexes/books/search",
            {"q": "", "filter": '_foreign(author, name = "Ann")', "limit": 20},
        ),
        "federated": ("/multi-search", {"federation": {}, "queries": [{"indexUid": "books", "q": "book"}]}),
        "facets": ("/indexes/books/facet-search", {"facetName": "author", "facetQuery": "a"}),
    }
    for name, (path, body) in queries.items():
        answers = on_each_process(multi.url, "POST", path, headers=dict(admin.headers), json=body)
        bodies = []
        for r in answers.values():
            assert r.status_code == 200, (name, r.text)
            got = r.json()
            for key in ("processingTimeMs", "requestUid"):
                got.pop(key, None)
            bodies.append(got)
        assert bodies[0] == bodies[1], name
    worker = on_each_process(
        multi.url, "POST", "/indexes/books/search", headers=dict(admin.headers), json=queries["pins"][1]
    )["worker"].json()
    assert worker["hits"][0]["id"] == 7  # pinned first
    worker = on_each_process(
        multi.url, "POST", "/indexes/books/search", headers=dict(admin.headers), json=queries["foreign"][1]
    )["worker"].json()
    assert sorted(h["id"] for h in worker["hits"]) == [1, 3, 5, 7, 9]


def test_a_deleted_key_is_refused_by_every_process(multi: ServerProcess, admin: httpx.Client) -> None:
    task = admin.post("/indexes/keyed/documents", json=[{"id": 1, "title": "hello"}]).json()
    assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    key = admin.post("/keys", json={"actions": ["search"], "indexes": ["keyed"], "expiresAt": None}).json()
    bearer = {"Authorization": f"Bearer {key['key']}"}
    for r in on_each_process(
        multi.url, "POST", "/indexes/keyed/search", headers=bearer, json={"q": "hello"}
    ).values():
        assert r.status_code == 200
        assert [h["id"] for h in r.json()["hits"]] == [1]
    assert admin.delete(f"/keys/{key['uid']}").status_code == 204
    for r in on_each_process(
        multi.url, "POST", "/indexes/keyed/search", headers=bearer, json={"q": "hello"}
    ).values():
        assert r.status_code == 403
        assert r.json()["code"] == "invalid_api_key"


def test_experimental_features_apply_on_every_process(multi: ServerProcess, admin: httpx.Client) -> None:
    task = admin.post(
        "/indexes/features/documents", json=[{"id": 1, "name": "sunflower"}, {"id": 2, "name": "tree"}]
    ).json()
    assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    task = admin.patch("/indexes/features/settings", json={"filterableAttributes": ["name"]}).json()
    assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    query = {"q": "", "filter": "name CONTAINS flow"}
    assert admin.patch("/experimental-features", json={"containsFilter": False}).status_code == 200
    for r in on_each_process(
        multi.url, "POST", "/indexes/features/search", headers=dict(admin.headers), json=query
    ).values():
        assert r.status_code == 400
        assert r.json()["code"] == "feature_not_enabled"
    assert (
        admin.patch("/experimental-features", json={"containsFilter": True}).json()["containsFilter"] is True
    )
    for r in on_each_process(
        multi.url, "POST", "/indexes/features/search", headers=dict(admin.headers), json=query
    ).values():
        assert r.status_code == 200, r.text
        assert [h["id"] for h in r.json()["hits"]] == [1]


def test_wait_for_task_and_metrics_count_every_process(multi: ServerProcess, admin: httpx.Client) -> None:
    # a write held until its task finished, whichever process received it
    for i in range(6):
        with httpx.Client(base_url=multi.url, timeout=30, headers=admin.headers) as fresh:
            r = fresh.post(
                "/indexes/held/documents", json=[{"id": i}], headers={"X-Hanzo-Wait-For-Task": "20000"}
            )
        assert r.status_code == 202
        assert r.headers["x-hanzo-task-status"] == "succeeded"
    assert admin.get("/indexes/held/documents", params={"limit": 100}).json()["total"] == 6

    assert admin.patch("/experimental-features", json={"metrics": True}).status_code == 200
    path = 'meilisearch_http_requests_total{method="POST",path="/indexes/{index_uid}/search",status="200"}'

    def searches_counted() -> float:
        for line in admin.get("/metrics").text.splitlines():
            if line.startswith(path):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    before = searches_counted()
    served = {"worker": 0, "primary": 0}
    while min(served.values()) < 3:
        with httpx.Client(base_url=multi.url, timeout=30, headers=admin.headers) as fresh:
            r = fresh.post("/indexes/held/search", json={"q": ""})
        assert r.status_code == 200
        served["worker" if WORKER in r.headers else "primary"] += 1
    assert searches_counted() - before == sum(served.values())


def test_the_search_queue_capacity_counts_every_process(tmp_path: Path) -> None:
    """Two queues sharing the counters file, as two processes do: the waiting searches of one count
    against the capacity of the other."""

    async def scenario() -> None:
        first = SearchQueue(
            capacity=2, parallelism=1, time_to_abort=60, shared=SharedCounts(tmp_path / "q", 0)
        )
        second = SearchQueue(
            capacity=2, parallelism=1, time_to_abort=60, shared=SharedCounts(tmp_path / "q", 1)
        )
        await first.acquire()  # running
        waiting = [asyncio.ensure_future(first.acquire()) for _ in range(2)]
        await asyncio.sleep(0)
        assert first.instance_waiting() == 2 and second.instance_waiting() == 2
        await second.acquire()  # runs at once: the second process has a free slot
        with pytest.raises(Exception) as refused:
            await second.acquire()  # would wait, but the instance's queue is full
        assert getattr(refused.value, "code", None) == "too_many_search_requests"
        first.release()
        await asyncio.sleep(0)
        assert first.instance_waiting() == 1
        waiting_second = asyncio.ensure_future(second.acquire())  # one place is free again
        await asyncio.sleep(0)
        assert second.instance_waiting() == 2
        for task in (*waiting, waiting_second):
            task.cancel()

    asyncio.run(scenario())


def test_a_killed_worker_is_replaced_and_searches_go_on(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms", extra_args=["--http-workers", "2"]).start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            task = http.post(
                "/indexes/live/documents", json=[{"id": i, "t": f"word{i}"} for i in range(20)]
            ).json()
            assert wait_task(http, task["taskUid"])["status"] == "succeeded"
        (old,) = wait_for_workers(srv, 1)
        results: list[int] = []
        stop = threading.Event()

        def load() -> None:
            while not stop.is_set():
                try:
                    with httpx.Client(base_url=srv.url, timeout=10) as fresh:
                        results.append(fresh.post("/indexes/live/search", json={"q": "word1"}).status_code)
                except httpx.HTTPError:
                    results.append(-1)  # a connection the killed worker held

        thread = threading.Thread(target=load)
        thread.start()
        time.sleep(0.5)
        os.kill(old, signal.SIGKILL)
        assert srv.proc is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and [p for p in worker_pids(srv.proc.pid) if p != old] == []:
            time.sleep(0.05)
        new = wait_for_workers(srv, 1)
        assert new and old not in new
        mark = len(results)
        time.sleep(1.0)
        stop.set()
        thread.join()
        after = results[mark:]
        assert after and all(code == 200 for code in after), after
        assert srv.proc.poll() is None
    finally:
        srv.stop()


def test_kill_9_of_the_server_under_mixed_load_loses_no_acknowledged_write(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data.ms", extra_args=["--http-workers", "2"]).start()
    wait_for_workers(srv, 1)
    acked: list[tuple[int, int]] = []  # (task uid, document id)
    stop = threading.Event()

    def writer(start: int) -> None:
        doc_id = start
        while not stop.is_set():
            try:
                with httpx.Client(base_url=srv.url, timeout=10) as fresh:
                    r = fresh.post("/indexes/crash/documents", json=[{"id": doc_id, "n": doc_id}])
                if r.status_code == 202:
                    acked.append((r.json()["taskUid"], doc_id))
            except httpx.HTTPError:
                pass
            doc_id += 2

    def searcher() -> None:
        while not stop.is_set():
            try:
                with httpx.Client(base_url=srv.url, timeout=10) as fresh:
                    fresh.post("/indexes/crash/search", json={"q": ""})
            except httpx.HTTPError:
                pass

    threads = [
        threading.Thread(target=writer, args=(0,)),
        threading.Thread(target=writer, args=(1,)),
        threading.Thread(target=searcher),
    ]
    for t in threads:
        t.start()
    time.sleep(2.0)
    assert srv.proc is not None
    workers = worker_pids(srv.proc.pid)
    srv.kill9()
    stop.set()
    for t in threads:
        t.join()
    # the workers follow the primary
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(p) for p in workers):
        time.sleep(0.05)
    assert not any(alive(p) for p in workers)
    assert acked, "no write was acknowledged before the kill"
    srv.start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            for task_uid, _ in acked:
                assert wait_task(http, task_uid, timeout=120)["status"] == "succeeded"
            docs = http.post("/indexes/crash/documents/fetch", json={"limit": 100_000}).json()
            ids = [d["id"] for d in docs["results"]]
            assert len(ids) == len(set(ids))  # none doubled
            assert {doc_id for _, doc_id in acked} <= set(ids)  # none lost
    finally:
        srv.stop()


def test_the_banner_names_the_processes(multi: ServerProcess) -> None:
    assert "HTTP processes: 2" in multi.output()


def test_runtime_dirs_of_dead_primaries_are_swept(tmp_path: Path) -> None:
    import subprocess
    import sys

    from hanzo_engine.server import workers

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale, live, foreign = (
        tmp_path / f"{workers.RUNTIME_PREFIX}{name}" for name in ("stale", "live", "foreign")
    )
    for path, pid in ((stale, dead.pid), (live, os.getpid())):
        path.mkdir()
        (path / workers.PID_FILE).write_text(str(pid))
    foreign.mkdir()  # no pid file: not one of ours
    workers._sweep_runtime_dirs(tmp_path)
    assert not stale.exists() and live.exists() and foreign.exists()


def test_a_second_server_on_the_same_port_is_refused(multi: ServerProcess, tmp_path: Path) -> None:
    """SO_REUSEPORT must not let another server share the port and take half of its connections."""
    import subprocess
    import sys

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hanzo_engine",
            "--db-path",
            str(tmp_path / "other.ms"),
            "--http-addr",
            f"127.0.0.1:{multi.port}",
            "--http-workers",
            "2",
            "--no-analytics",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("MEILI_")},
    )
    assert result.returncode != 0
    assert f"cannot listen on 127.0.0.1:{multi.port}" in result.stderr


def test_the_search_routes_never_read_the_scheduler() -> None:
    """A search worker has no scheduler (`AppState.scheduler` is None there): what the search routes
    read besides the index goes through `AppState.indexes` (an `IndexSource`, with its task `store`)."""
    import ast

    import hanzo_engine.server as server_package

    root = Path(server_package.__file__).parent
    modules = [
        "routes/search.py",
        "routes/multi_search.py",
        "routes/facet_search.py",
        "routes/similar.py",
        "search.py",
        "pins.py",
        "foreign_keys.py",
        "remotes.py",
        "search_queue.py",
        *(f"federation/{p.name}" for p in sorted((root / "federation").glob("*.py"))),
    ]
    found = []
    for name in modules:
        tree = ast.parse((root / name).read_text())
        found += [
            f"{name}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "scheduler"
        ]
    assert found == []
