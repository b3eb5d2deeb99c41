"""Index environments (`engine/storage/environment.py`): written through a writable memory map, sized by
the blocks they hold, refused a write transaction on a nearly full disk."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import hanzo_engine.engine  # noqa: F401  (installs the document writer)
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.storage import environment


def test_a_writer_maps_the_file_writable_and_counts_its_blocks(tmp_path: Path) -> None:
    index = Index.create(tmp_path / "idx", primary_key="id", created_at=0)
    try:
        assert index.env.flags()["writemap"]
        with index.write() as w:
            for i in range(200):
                w.put_document(str(i), {"id": i, "text": "some words " * 20}, merge=False)
        data = tmp_path / "idx" / "data.mdb"
        assert data.stat().st_size == index.env.info()["map_size"]  # stretched, sparse
        assert 0 < index.file_size() < 64 << 20
        assert index.file_size() <= data.stat().st_blocks * 512
    finally:
        index.close()
    # a search worker's read-only environment is mapped read-only
    reader = Index(tmp_path / "idx", readonly=True)
    try:
        assert not reader.env.flags()["writemap"]
        with reader.read() as r:
            assert r.number_of_documents() == 200
    finally:
        reader.close()


def test_file_bytes_of_a_plain_and_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10_000)
    assert environment.file_bytes(path) == 10_000
    assert environment.file_bytes(tmp_path / "missing") == 0


def test_a_nearly_full_disk_fails_the_write_before_it_begins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = Index.create(tmp_path / "idx", primary_key="id", created_at=0)
    try:
        real = os.statvfs(tmp_path)

        class Full:
            f_frsize = real.f_frsize
            f_bavail = (1 << 20) // real.f_frsize

        def statvfs(path: Any) -> Any:
            return Full()

        monkeypatch.setattr(os, "statvfs", statvfs)
        with pytest.raises(MeiliError) as err, index.write() as w:
            w.put_document("1", {"id": 1}, merge=False)
        assert err.value.code == "no_space_left_on_device"
        monkeypatch.undo()
        with index.write() as w:
            w.put_document("1", {"id": 1}, merge=False)
        with index.read() as r:
            assert r.number_of_documents() == 1
    finally:
        index.close()
