"""Progress and summaries of the long-running commands: `admin import-documents`, `export-a-dump`,
`export-documents`, `index-compaction`, and `--import-dump` at server start.

Each command ends with a summary line (counts and time) whatever stderr is; on a terminal it draws bars.
The terminal case runs the command as a process whose stderr is a pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hanzo_engine.auth import KeyStore
from hanzo_engine.cli import main
from hanzo_engine.engine.storage.datadir import write_version
from hanzo_engine.scheduler.scheduler import Scheduler
from tests.conftest import ServerProcess

COUNT = 5000
WORDS = "river stone light shadow garden winter harbor meadow signal engine".split()


def admin(db: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["admin", "--db-path", str(db), *args], prog_name="hanzo-engine")


def write_documents(path: Path, count: int) -> Path:
    with open(path, "w") as f:
        for i in range(count):
            words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(12)]
            f.write(
                json.dumps(
                    {"id": i, "title": " ".join(words[:3]), "body": " ".join(words), "year": 1950 + i % 70}
                )
                + "\n"
            )
    return path


def empty_data_dir(path: Path) -> Path:
    """A data directory as a fresh server leaves it: the task store, the keys, VERSION."""
    Scheduler(path).stop()
    KeyStore(path / "auth").close()
    write_version(path)
    return path


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_documents(tmp_path_factory.mktemp("progress") / "docs.ndjson", COUNT)


@pytest.fixture
def db(tmp_path: Path, source: Path) -> Path:
    path = empty_data_dir(tmp_path / "data.ms")
    result = admin(path, "import-documents", "--index-name", "docs", str(source))
    assert result.exit_code == 0, result.output
    return path


def summary(stderr: str, pattern: str) -> re.Match[str]:
    found = re.search(pattern, stderr, re.M)
    assert found, f"no line matching {pattern!r} in:\n{stderr}"
    return found


def test_import_documents_summary(tmp_path: Path, source: Path) -> None:
    path = empty_data_dir(tmp_path / "data.ms")
    result = admin(path, "import-documents", "--index-name", "docs", "--chunk-size", "1", str(source))
    assert result.exit_code == 0, result.output
    received = summary(result.stderr, r"^(\d+) documents in (\d+) tasks; indexing\.\.\.$")
    tasks = int(received.group(2))
    assert int(received.group(1)) == COUNT and tasks >= 1
    line = summary(
        result.stderr,
        r"^(\d+) documents indexed into `docs` \((\d+) of (\d+) tasks succeeded\) "
        r"in \d+\.\d\ds \([\d,]+ documents/s\)$",
    )
    assert (int(line.group(1)), int(line.group(2)), int(line.group(3))) == (COUNT, tasks, tasks)
    [listed] = [json.loads(x) for x in admin(path, "list-indexes").stdout.splitlines()]
    assert listed["numberOfDocuments"] == COUNT


def test_export_documents_summary(db: Path) -> None:
    result = admin(db, "export-documents", "--index-name", "docs", "--offset", "1000")
    assert result.exit_code == 0, result.output
    line = summary(
        result.stderr, r"^Exported (\d+) documents of `docs` in \d+\.\d\ds \([\d,]+ documents/s\)$"
    )
    assert int(line.group(1)) == COUNT - 1000 == len(result.stdout.splitlines())


def test_export_a_dump_steps_and_summary(db: Path, tmp_path: Path) -> None:
    result = admin(db, "export-a-dump", "--dump-dir", str(tmp_path / "dumps"))
    assert result.exit_code == 0, result.output
    steps = re.findall(r"^\[(\d)/6\] (.+)$", result.stderr, re.M)
    assert [int(n) for n, _ in steps] == [1, 2, 3, 4, 5, 6]
    assert steps[-1][1] == "compress the dump"
    assert "dump the documents of `docs`" in result.stderr
    line = summary(
        result.stderr,
        r"^Successfully dumped (\d+) keys, (\d+) tasks .*, (\d+) indexes and (\d+) "
        r"documents in \d+\.\d\ds$",
    )
    assert (int(line.group(3)), int(line.group(4))) == (1, COUNT)
    path = Path(summary(result.stderr, r"^Dump exported at path (.+)$").group(1))
    assert path.is_file() and path.parent == tmp_path / "dumps"


def test_index_compaction_summary(db: Path) -> None:
    # delete half of the documents, so that there is space to reclaim
    scheduler = Scheduler(db)
    try:
        scheduler.register(
            "documentDeletion",
            "docs",
            details={"providedIds": COUNT // 2, "deletedDocuments": None, "originalFilter": None},
            kind={"op": "ids", "ids": [str(i) for i in range(0, COUNT, 2)]},
        )
        while scheduler.tick():
            pass
        data = scheduler.index("docs").path / "data.mdb"
    finally:
        scheduler.stop()
    result = admin(db, "index-compaction", "docs")
    assert result.exit_code == 0, result.output
    sizes = json.loads(result.stdout)
    assert sizes["sizeAfter"] == data.stat().st_size < sizes["sizeBefore"]
    summary(result.stderr, r"^Compaction successful\. Took around \d+\.\d\ds$")
    line = summary(
        result.stderr, r"^The index went from (\d+) bytes to (\d+) bytes \((\d+\.\d\d)x reduction\)$"
    )
    assert (int(line.group(1)), int(line.group(2))) == (sizes["sizeBefore"], sizes["sizeAfter"])
    assert not list(data.parent.glob("*.cpy*"))
    exported = admin(db, "export-documents", "--index-name", "docs")
    assert len(exported.stdout.splitlines()) == COUNT // 2


def test_import_dump_at_start_logs_progress_and_summary(db: Path, tmp_path: Path) -> None:
    dump = tmp_path / "dumps"
    assert admin(db, "export-a-dump", "--dump-dir", str(dump)).exit_code == 0
    [dump_file] = dump.iterdir()
    srv = ServerProcess(tmp_path / "imported.ms", extra_args=["--import-dump", str(dump_file)]).start()
    try:
        output = srv.output()
    finally:
        srv.stop()
    assert "importing index `docs`" in output
    assert f"index `docs`: {COUNT} documents imported" in output
    assert re.search(
        rf"dump imported: \d+ keys, 1 indexes, {COUNT} documents, \d+ batches, \d+ tasks "
        r"\(0 to process\) in \d+\.\d\ds",
        output,
    ), output


def on_a_terminal(*args: str) -> tuple[int, str]:
    """Run `hanzo-engine <args>` with stderr on a pseudo-terminal; its exit code and what it drew."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEILI_")}
    env.update({"COLUMNS": "100", "TERM": "xterm"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "hanzo_engine", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    code = proc.wait(timeout=120)
    return code, b"".join(chunks).decode(errors="replace").replace("\r", "\n")


def test_bars_on_a_terminal(tmp_path: Path, source: Path) -> None:
    path = empty_data_dir(tmp_path / "data.ms")
    code, drawn = on_a_terminal(
        "admin", "--db-path", str(path), "import-documents", "--index-name", "docs", str(source)
    )
    assert code == 0, drawn
    # one task: the indexing bar moves within it, from the scheduler's progress
    percentages = {int(p) for p in re.findall(r"indexing into `docs`\s+\[[#-]+\]\s+(\d+)%", drawn)}
    assert 100 in percentages and len(percentages - {0, 100}) >= 2, drawn
    summary(drawn, rf"^{COUNT} documents indexed into `docs` \(1 of 1 tasks succeeded\)")

    code, drawn = on_a_terminal(
        "admin", "--db-path", str(path), "export-a-dump", "--dump-dir", str(tmp_path / "dumps")
    )
    assert code == 0, drawn
    assert re.search(r"dump the documents of `docs`\s+\[#+\]\s+100%", drawn), drawn
    summary(drawn, rf"Successfully dumped .* 1 indexes and {COUNT} documents in")

    code, drawn = on_a_terminal("admin", "--db-path", str(path), "index-compaction", "docs")
    assert code == 0, drawn
    assert re.search(r"writing the compacted copy\s+\[#+\]\s+100%", drawn), drawn
    summary(drawn, r"^The index went from \d+ bytes to \d+ bytes")
