"""The leader's forward outbox (`server.outbox`): what is appended survives a reopen until every remote
is done with it, bodies are read back intact, and a torn record at the end is cut off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hanzo_engine.server import outbox
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
    first = box.append(7, "POST", "/indexes/i/documents?primaryKey=id", {"content-type": "application/json"},
                       "v1", "ms0", {"a": (A, shared), "b": (B, shared)})
    second = box.append(8, "PATCH", "/network", {}, "v1", "ms0", {"a": (A, b"{1}"), "b": (B, b"{22}")})
    assert box.body(first["b"]) == shared and box.body(second["b"]) == b"{22}"
    box.done("a", first["a"])
    box.close()
    assert _pending(tmp_path) == [("b", 7, shared), ("a", 8, b"{1}"), ("b", 8, b"{22}")]
    box = Outbox(tmp_path)
    entries = box.load()
    name, entry = entries[0]
    assert (entry.method, entry.path, entry.headers, entry.network_version, entry.origin_name, entry.remote) == (
        "POST", "/indexes/i/documents?primaryKey=id", {"content-type": "application/json"}, "v1", "ms0", B)
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
