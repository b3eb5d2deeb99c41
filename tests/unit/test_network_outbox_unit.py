"""The leader's forward outbox (`server.outbox`): what is appended survives a reopen until every remote
is done with it, bodies are read back intact, and a torn record at the end is cut off."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.scheduler.network import default_network, write_network
from hanzo_engine.scheduler.store import TaskStore
from hanzo_engine.server import outbox, sharding
from hanzo_engine.server.outbox import Outbox

A = {"url": "http://a", "writeApiKey": "ka"}
B = {"url": "http://b", "writeApiKey": None}


def _pending(directory: Path) -> list[tuple[str, int, bytes]]:
    box = Outbox(directory)
    try:
        return [(name, e.task_uid, box.body(e)) for name, e in box.load()]
    finally:
        box.close()


def test_appended_jobs_survive_until_done(tmp_path: Path) -> None:
    box = Outbox(tmp_path)
    assert box.load() == []
    shared = b'[{"id": 1}]'
    first = box.append(
        7,
        "POST",
        "/indexes/i/documents?primaryKey=id",
        {"content-type": "application/json"},
        "v1",
        "ms0",
        {"a": (A, shared), "b": (B, shared)},
    )
    second = box.append(8, "PATCH", "/network", {}, "v1", "ms0", {"a": (A, b"{1}"), "b": (B, b"{22}")})
    assert box.body(first["b"]) == shared and box.body(second["b"]) == b"{22}"
    box.done("a", first["a"])
    box.close()
    assert _pending(tmp_path) == [("b", 7, shared), ("a", 8, b"{1}"), ("b", 8, b"{22}")]
    box = Outbox(tmp_path)
    entries = box.load()
    name, entry = entries[0]
    assert (
        entry.method,
        entry.path,
        entry.headers,
        entry.network_version,
        entry.origin_name,
        entry.remote,
    ) == ("POST", "/indexes/i/documents?primaryKey=id", {"content-type": "application/json"}, "v1", "ms0", B)
    for name, entry in entries:
        box.done(name, entry)
    box.close()
    assert _pending(tmp_path) == []
    assert [p.stat().st_size for p in tmp_path.iterdir()] == [0]  # the segment was emptied


def test_a_torn_record_is_cut_off(tmp_path: Path) -> None:
    box = Outbox(tmp_path)
    box.load()
    box.append(1, "DELETE", "/indexes/i", {}, "v", "ms0", {"a": (A, b"")})
    box.append(2, "POST", "/indexes/i/documents", {}, "v", "ms0", {"a": (A, b"x" * 1000)})
    box.close()
    (segment,) = tmp_path.iterdir()
    size = segment.stat().st_size
    os.truncate(segment, size - 10)
    assert _pending(tmp_path) == [("a", 1, b"")]
    assert segment.stat().st_size < size - 1000
    box = Outbox(tmp_path)
    box.load()
    box.append(3, "POST", "/indexes/i/documents", {}, "v", "ms0", {"a": (A, b"[]")})
    box.close()
    assert _pending(tmp_path) == [("a", 1, b""), ("a", 3, b"[]")]


def test_done_segments_are_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outbox, "SEGMENT_BYTES", 100)
    box = Outbox(tmp_path)
    box.load()
    first = box.append(1, "POST", "/x", {}, "v", "ms0", {"a": (A, b"y" * 200)})
    box.append(2, "POST", "/x", {}, "v", "ms0", {"a": (A, b"z")})
    assert len(list(tmp_path.iterdir())) == 2
    box.done("a", first["a"])
    assert len(list(tmp_path.iterdir())) == 1
    box.close()
    assert _pending(tmp_path) == [("a", 2, b"z")]


def test_no_directory_until_the_first_forward(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "outbox")
    assert box.load() == []
    assert not (tmp_path / "outbox").exists()
    box.append(1, "POST", "/x", {}, "v", "ms0", {"a": (A, b"[]")})
    box.close()
    assert _pending(tmp_path / "outbox") == [("a", 1, b"[]")]


# -- the forwarder over the outbox ------------------------------------------------------------------------


class _Remote:
    """A stand-in for `_send_once`: records what each remote received, or fails as an unreachable host."""

    def __init__(self, up: bool = True) -> None:
        self.up = up
        self.received: list[tuple[str, int, bytes]] = []
        self.lock = threading.Lock()

    def __call__(self, client: Any, url: str, remote: dict[str, Any], job: Any) -> int:
        if not self.up:
            raise sharding._Failure(
                MeiliError("remote_could_not_send_request", "error sending request"), True
            )
        with self.lock:
            self.received.append((remote["url"], job.task_uid, job.body))
            return len(self.received)


def _network() -> Any:
    return {
        **default_network(),
        "self": "ms0",
        "version": "0190a5b2-0000-7000-8000-000000000000",
        "remotes": {
            "ms1": {"url": "http://127.0.0.1:1", "searchApiKey": None, "writeApiKey": None},
            "ms2": {"url": "http://127.0.0.1:2", "searchApiKey": None, "writeApiKey": None},
        },
    }


def test_forwards_keep_the_task_order_and_survive_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEILI_EXPERIMENTAL_PROXY_BACKOFF_TIMEOUT_SECONDS", "0.2")
    store = TaskStore(tmp_path / "tasks")
    write_network(store, _network())  # a remote no longer in the network would be given up on
    down = _Remote(up=False)
    monkeypatch.setattr(sharding, "_send_once", down)
    fw = sharding.Forwarder(store, tmp_path / outbox.DIRECTORY)
    monkeypatch.setattr(sharding, "_forwarders", {store.env.path(): fw})
    for uid in (2, 1):
        sharding.forward(store, _network(), uid, "POST", "/x", {}, f"body{uid}".encode())
    assert fw.wait_idle(0.5) is False  # nothing answered: all pending
    fw.close()

    # a "restart": a second forwarder over the same outbox resumes every pending forward, in task order
    up = _Remote()
    monkeypatch.setattr(sharding, "_send_once", up)
    fw2 = sharding.Forwarder(store, tmp_path / outbox.DIRECTORY)
    try:
        fw2.open()
        assert fw2.wait_idle(10)
    finally:
        fw2.close()
    assert sorted(up.received, key=lambda r: r[0]) == [
        ("http://127.0.0.1:1", 1, b"body1"),
        ("http://127.0.0.1:1", 2, b"body2"),
        ("http://127.0.0.1:2", 1, b"body1"),
        ("http://127.0.0.1:2", 2, b"body2"),
    ]


def test_a_forward_waits_for_the_writes_in_flight_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TaskStore(tmp_path / "tasks")
    up = _Remote()
    monkeypatch.setattr(sharding, "_send_once", up)
    fw = sharding.Forwarder(store, tmp_path / outbox.DIRECTORY)
    monkeypatch.setattr(sharding, "_forwarders", {store.env.path(): fw})
    network = {**_network(), "remotes": {"ms1": {"url": "http://127.0.0.1:1"}}}
    try:
        slow = fw.begin_write()  # a request whose task (uid 5) is registered but not yet forwarded
        sharding.forward(store, network, 6, "POST", "/x", {}, b"six")
        time.sleep(0.2)
        assert up.received == []
        sharding.forward(store, network, 5, "POST", "/x", {}, b"five")
        fw.end_write(slow)
        assert fw.wait_idle(10)
    finally:
        fw.close()
    assert [uid for _, uid, _ in up.received] == [5, 6]
    (segment,) = (tmp_path / outbox.DIRECTORY).glob("*.log")
    assert segment.stat().st_size == 0  # all done: emptied
