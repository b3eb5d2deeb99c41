"""Start-up of a data directory: lock, VERSION file, instance uid, import rules (in-process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hanzo_engine.engine.storage import datadir
from hanzo_engine.engine.storage.datadir import (
    FORMAT_VERSION,
    DataDirError,
    DataDirLock,
    DataDirLocked,
    check_version,
    read_version,
)
from hanzo_engine.server import startup
from hanzo_engine.server.options import load_options
from hanzo_engine.server.startup import StartupError, prepare


def options(tmp_path: Path, *flags: str) -> startup.Options:
    values: dict[str, object] = {"db_path": str(tmp_path / "data.ms")}
    for flag in flags:
        name, _, value = flag.partition("=")
        values[name] = value or True
    return load_options(values, {}, cwd=tmp_path)


def test_a_new_database_gets_a_version_and_an_instance_uid(tmp_path: Path) -> None:
    boot = prepare(options(tmp_path))
    try:
        db = tmp_path / "data.ms"
        assert (db / "VERSION").read_text() == f"hanzo-engine-db {FORMAT_VERSION}\n"
        assert len((db / "instance-uid").read_text()) == 36
        assert "pid" in (db / "hanzo-engine.lock").read_text()
        with pytest.raises(DataDirLocked, match="is in use by a hanzo-engine server"):
            DataDirLock(db, "someone").acquire()
    finally:
        boot.stop()
    DataDirLock(tmp_path / "data.ms", "someone").acquire().release()


def test_a_database_written_before_version_files_is_adopted(tmp_path: Path) -> None:
    db = tmp_path / "data.ms"
    (db / "tasks").mkdir(parents=True)
    (db / "tasks" / "data.mdb").write_bytes(b"")
    assert read_version(db) is None
    assert check_version(db) == FORMAT_VERSION
    assert read_version(db) == FORMAT_VERSION


def test_other_formats_are_refused_and_upgrades_run_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "data.ms"
    db.mkdir()
    (db / "VERSION").write_text("garbage")
    with pytest.raises(DataDirError, match="Version file is corrupted"):
        check_version(db)
    (db / "VERSION").write_text(f"hanzo-engine-db {FORMAT_VERSION - 1}")
    with pytest.raises(DataDirError, match="No in-place upgrade exists from this format"):
        check_version(db, upgrade=True)
    ran: list[Path] = []
    monkeypatch.setitem(datadir.UPGRADES, FORMAT_VERSION - 1, ran.append)
    with pytest.raises(DataDirError, match="Start with `--upgrade-db`"):
        check_version(db)
    assert ran == []
    assert check_version(db, upgrade=True) == FORMAT_VERSION
    assert ran == [db] and read_version(db) == FORMAT_VERSION


def test_import_rules_leave_a_refused_directory_as_it_was(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match="dump doesn't exist at"):
        prepare(options(tmp_path, f"import_dump={tmp_path / 'none.dump'}"))
    assert not (tmp_path / "data.ms").exists()
    boot = prepare(options(tmp_path, f"import_dump={tmp_path / 'none.dump'}", "ignore_missing_dump"))
    boot.stop()
    with pytest.raises(StartupError, match="database already exists at"):
        prepare(options(tmp_path, f"import_snapshot={tmp_path / 'none'}"))
    (tmp_path / "s.snapshot").write_bytes(b"not a snapshot")
    (tmp_path / "empty.ms").mkdir()
    opts = load_options(
        {"db_path": str(tmp_path / "empty.ms"), "import_snapshot": str(tmp_path / "s.snapshot")},
        {},
        cwd=tmp_path,
    )
    with pytest.raises(StartupError, match="importing the snapshot"):
        prepare(opts)
    assert list((tmp_path / "empty.ms").iterdir()) == []
