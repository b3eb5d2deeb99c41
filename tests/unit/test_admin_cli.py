"""`hanzo-engine admin ...` with click's CliRunner on a data directory built in-process."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import lmdb
import msgspec
import pytest
from click.testing import CliRunner, Result

from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.auth import KeyStore
from hanzo_engine.auth.keys import generate_key_value
from hanzo_engine.cli import main
from hanzo_engine.dump import DumpReader
from hanzo_engine.dump.compaction import compact_env_file
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search.engine import search
from hanzo_engine.engine.search.types import SearchRequest
from hanzo_engine.engine.storage.datadir import DataDirLock, write_version
from hanzo_engine.scheduler.scheduler import Scheduler


def add_docs(s: Scheduler, uid: str, docs: list[dict[str, Any]]) -> int:
    file_uuid, path = s.new_update_file()
    path.write_bytes(b"".join(msgspec.json.encode(d) + b"\n" for d in docs))
    task = s.register(
        "documentAdditionOrUpdate",
        uid,
        details={"receivedDocuments": len(docs), "indexedDocuments": None},
        kind={
            "method": "replace",
            "primaryKey": None,
            "contentFile": file_uuid,
            "contentSize": path.stat().st_size,
            "documentsCount": len(docs),
            "allowIndexCreation": True,
        },
    )
    return int(task["taskUid"])


def delete_docs(s: Scheduler, uid: str, ids: list[str]) -> int:
    task = s.register(
        "documentDeletion",
        uid,
        details={"providedIds": len(ids), "deletedDocuments": None, "originalFilter": None},
        kind={"op": "ids", "ids": ids},
    )
    return int(task["taskUid"])


def run_all(s: Scheduler) -> None:
    while s.tick():
        pass


MOVIES = [{"id": i, "title": f"movie {i}", "_vectors": {"default": [0.1, 0.2]}} for i in range(50)]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A data directory as a server leaves it: VERSION, default keys, one index, finished tasks."""
    path = tmp_path / "data.ms"
    s = Scheduler(path)
    add_docs(s, "movies", MOVIES)
    run_all(s)
    s.stop()
    KeyStore(path / "auth").close()
    write_version(path)
    return path


def admin(db: Path, *args: str, input: bytes | None = None) -> Result:
    return CliRunner().invoke(
        main, ["admin", "--db-path", str(db), *args], prog_name="hanzo-engine", input=input
    )


def lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_list_indexes_and_keys(db: Path) -> None:
    result = admin(db, "list-indexes")
    assert result.exit_code == 0, result.output
    [movies] = lines(result.stdout)
    assert (movies["uid"], movies["primaryKey"], movies["numberOfDocuments"]) == ("movies", "id", 50)
    assert movies["databaseSize"] > 0
    result = admin(db, "list-keys")
    keys = lines(result.stdout)
    assert [k["name"] for k in keys] == [
        "Default Search API Key",
        "Default Admin API Key",
        "Default Read-Only Admin API Key",
        "Default Chat API Key",
    ]
    assert "key" not in keys[0]
    shown = lines(admin(db, "list-keys", "--master-key", "a-master-key-of-16b").stdout)
    assert shown[0]["key"] == generate_key_value(uuid.UUID(shown[0]["uid"]), "a-master-key-of-16b")


def test_export_documents_as_ndjson(db: Path) -> None:
    result = admin(db, "export-documents", "--index-name", "movies")
    assert result.exit_code == 0, result.output
    assert lines(result.stdout) == MOVIES
    assert "Exported 50 documents" in result.stderr
    skipped = lines(
        admin(db, "export-documents", "--index-name", "movies", "--offset", "45", "--ignore-vectors").stdout
    )
    assert skipped == [{"id": i, "title": f"movie {i}"} for i in range(45, 50)]
    missing = admin(db, "export-documents", "--index-name", "nope")
    assert missing.exit_code == 1 and "index `nope` not found" in missing.stderr


def test_export_a_dump_with_and_without_enqueued_tasks(db: Path, tmp_path: Path) -> None:
    s = Scheduler(db)
    pending = add_docs(s, "movies", [{"id": 100, "title": "pending"}])
    s.stop()
    result = admin(db, "export-a-dump", "--dump-dir", str(tmp_path / "dumps"))
    assert result.exit_code == 0, result.output
    [dump] = list((tmp_path / "dumps").iterdir())
    assert f"Dump exported at path {dump}" in result.stderr
    with DumpReader(dump) as reader:
        tasks = {line["uid"]: (line, payload) for line, payload in reader.tasks()}
        assert tasks[pending][0]["status"] == "enqueued"
        payload = tasks[pending][1]
        assert payload is not None and lines(payload.read_text()) == [{"id": 100, "title": "pending"}]
        [index] = list(reader.indexes())
        assert [msgspec.json.decode(line) for line in index.document_lines()] == MOVIES
        assert len(list(reader.keys())) == 4
    skipped = admin(db, "export-a-dump", "--dump-dir", str(tmp_path / "skipped"), "--skip-enqueued-tasks")
    assert skipped.exit_code == 0, skipped.output
    [dump] = list((tmp_path / "skipped").iterdir())
    with DumpReader(dump) as reader:
        assert pending not in {line["uid"] for line, _ in reader.tasks()}


def test_clear_task_queue(db: Path) -> None:
    s = Scheduler(db)
    add_docs(s, "movies", [{"id": 100}])
    s.stop()
    result = admin(db, "clear-task-queue")
    assert result.exit_code == 0, result.output
    assert "Successfully deleted 2 tasks and 1 batches" in result.stderr
    assert "Successfully deleted 1 content files" in result.stderr
    s = Scheduler(db)
    try:
        assert not s.store.bitmap("status:succeeded") and not s.store.bitmap("status:enqueued")
        assert s.get_task(0) is None and s.get_batch(0) is None
        assert not list(s.update_files.iterdir())
        # documents are untouched; task uids keep increasing
        assert add_docs(s, "movies", [{"id": 101}]) == 2
        run_all(s)
        assert s.get_task(2)["status"] == "succeeded"  # type: ignore[index]
        assert s.get_task(2)["batchUid"] == 0  # type: ignore[index]
        index = s.index("movies")
        assert index is not None
        with index.read() as r:
            assert r.number_of_documents() == 51
    finally:
        s.stop()


def raw_databases(env: lmdb.Environment) -> dict[bytes, Any]:
    """Every database of `env`: name -> (flags, every pair in order); plain main-database keys -> value."""
    out: dict[bytes, Any] = {}
    with env.begin() as txn:
        for name, value in list(txn.cursor()):
            try:
                db = env.open_db(name, txn=txn, create=False)
            except lmdb.IncompatibleError:
                out[name] = value
                continue
            out[name] = (db.flags(), list(txn.cursor(db=db)))
    return out


COMPACTION_QUERIES = ["document", "movie 7", "text to reclaim", "document 60", "nothing-matches", ""]


def index_state(s: Scheduler, uid: str) -> dict[str, Any]:
    """What the index answers (documents, settings, searches with scores and details) and its raw content."""
    index = s.index(uid)
    assert index is not None
    with index.read() as r:
        settings = complete_settings(r.settings())
        searches = []
        for q in COMPACTION_QUERIES:
            result = search(r, SearchRequest(q=q, limit=1000), settings)
            searches.append(
                {
                    "hits": [r.document_by_internal_id(d) for d in result.docids],
                    "scores": result.scores,
                    "details": result.details,
                    "candidates": result.candidates,
                }
            )
        answers = {
            "documents": list(r.iter_documents()),
            "settings": r.settings(),
            "count": r.number_of_documents(),
            "fields": r.field_distribution(),
            "primaryKey": r.primary_key,
            "searches": searches,
        }
    # JSON round trip: what a client would see, and a check that it is all plain JSON
    return {"answers": json.loads(json.dumps(answers)), "databases": raw_databases(index.env)}


def test_index_compaction_shrinks_the_file_after_deletions(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = Scheduler(db)
    big = [{"id": i, "title": f"document {i}", "body": "text to reclaim " * 40} for i in range(100, 6100)]
    add_docs(s, "movies", big)
    run_all(s)
    # 95% of the big documents deleted, scattered (19 in 20), so the B-tree leaves stay half empty
    survivors = [doc for doc in big if doc["id"] % 20 == 0]
    delete_docs(s, "movies", [str(doc["id"]) for doc in big if doc["id"] % 20])
    run_all(s)
    state = index_state(s, "movies")
    s.stop()
    result = admin(db, "index-compaction", "movies")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # the same documents, settings and search structures in a fresh data directory
    fresh = Scheduler(tmp_path / "fresh.ms")
    try:
        add_docs(fresh, "movies", MOVIES + survivors)
        run_all(fresh)
        fresh_index = fresh.index("movies")
        assert fresh_index is not None
        fresh_size = fresh_index.file_size()
    finally:
        fresh.stop()
    with capsys.disabled():
        print(
            f"\nindex-compaction: {report['sizeBefore']} -> {report['sizeAfter']} bytes (fresh: {fresh_size})"
        )
    assert report["sizeAfter"] < report["sizeBefore"] / 3
    # LMDB's own compacting copy keeps the half-empty pages: over 3x the fresh index here
    assert report["sizeAfter"] <= 1.5 * fresh_size
    assert "reduction" in result.stderr
    assert not [p.name for p in (db / "indexes").glob("*/data.mdb.*")]  # no copy or temporary file left
    s = Scheduler(db)
    try:
        index = s.index("movies")
        assert index is not None
        assert index.file_size() == report["sizeAfter"]
        # every answer and every stored byte is the same
        assert index_state(s, "movies") == state
        with index.read() as r:
            assert r.number_of_documents() == 50 + 300
            assert r.get_document("6000") == big[-100]
        # the compacted index still takes writes
        add_docs(s, "movies", [{"id": 7000, "title": "after compaction"}])
        run_all(s)
        with index.read() as r:
            assert r.get_document("7000") == {"id": 7000, "title": "after compaction"}
    finally:
        s.stop()


def test_compacted_copy_keeps_every_database_its_flags_and_the_map_size(tmp_path: Path) -> None:
    """The dense rebuild on databases of every kind LMDB has (the engine's own are all plain today)."""
    env = lmdb.open(str(tmp_path / "source"), max_dbs=8, map_size=64 << 20)
    dbs = {
        "plain": env.open_db(b"plain"),
        "dups": env.open_db(b"dups", dupsort=True),
        "fixed": env.open_db(b"fixed", dupsort=True, dupfixed=True),
        "reverse": env.open_db(b"reverse", reverse_key=True),
        "integers": env.open_db(b"integers", integerkey=True),
        "empty": env.open_db(b"empty"),
    }
    with env.begin(write=True) as txn:
        for i in range(5000):
            txn.put(b"k%06d" % i, b"v" * (i % 300), db=dbs["plain"])
            txn.put(b"k%04d" % (i // 7), b"d%05d" % (5000 - i), db=dbs["dups"])
            txn.put(b"k%04d" % (i // 3), i.to_bytes(4, "big"), db=dbs["fixed"])
            txn.put(b"%d.example.com" % i, b"r", db=dbs["reverse"])
            txn.put(i.to_bytes(8, "little"), b"n" * 3000 if i % 500 == 0 else b"n", db=dbs["integers"])
        txn.put(b"a-plain-key", b"in the main database")
        for i in range(0, 5000, 2):
            txn.delete(b"k%06d" % i, db=dbs["plain"])
    target = tmp_path / "copy" / "data.mdb"
    target.parent.mkdir()
    (target.parent / "data.mdb.tmp").write_bytes(b"left by a crash")  # must not be reused
    size = compact_env_file(env, target, commit_bytes=20_000)  # many destination transactions
    assert sorted(p.name for p in target.parent.iterdir()) == ["data.mdb"]
    assert size == target.stat().st_size
    # map_size=0: LMDB takes the map size recorded in the file
    copy = lmdb.open(str(target.parent), max_dbs=8, map_size=0)
    try:
        assert raw_databases(copy) == raw_databases(env)
        assert raw_databases(copy)[b"fixed"][0]["dupfixed"] is True
        assert copy.info()["map_size"] == 64 << 20
        # appended databases are dense: the rebuilt file is smaller than LMDB's compacting copy
        (tmp_path / "lmdb-copy").mkdir()
        env.copy(str(tmp_path / "lmdb-copy"), compact=True)
        assert size < (tmp_path / "lmdb-copy" / "data.mdb").stat().st_size
    finally:
        copy.close()
        env.close()


def test_import_documents_in_every_format(db: Path, tmp_path: Path) -> None:
    ndjson = tmp_path / "books.ndjson"
    books = [{"book_id": i, "title": f"book {i}", "pad": "x" * 100} for i in range(12_000)]
    ndjson.write_bytes(b"".join(msgspec.json.encode(b) + b"\n" for b in books))
    result = admin(db, "import-documents", "--index-name", "books", "--chunk-size", "1", str(ndjson))
    assert result.exit_code == 0, result.output
    assert "12000 documents in 2 tasks" in result.stderr and "12000 documents indexed" in result.stderr
    as_json = tmp_path / "more.json"
    as_json.write_bytes(msgspec.json.encode([{"book_id": 1, "title": "updated"}]))
    assert admin(db, "import-documents", "--index-name", "books", "--update", str(as_json)).exit_code == 0
    csv = tmp_path / "more.csv"
    csv.write_text("book_id:number,title\n20000,from csv\n")
    assert admin(db, "import-documents", "--index-name", "books", str(csv)).exit_code == 0
    s = Scheduler(db)
    try:
        index = s.index("books")
        assert index is not None
        with index.read() as r:
            assert r.number_of_documents() == 12_001
            assert r.get_document("1") == {"book_id": 1, "title": "updated", "pad": "x" * 100}
            assert r.get_document("20000") == {"book_id": 20000, "title": "from csv"}
    finally:
        s.stop()
    bad = tmp_path / "bad.json"
    bad.write_text('[{"book_id": 1,}]')
    result = admin(db, "import-documents", "--index-name", "books", str(bad))
    assert result.exit_code == 1
    assert (
        "The `json` payload provided is malformed. `Couldn't serialize document value: key must be a string"
        in result.stderr
    )
    no_id = tmp_path / "no_id.json"
    no_id.write_text('[{"title": "no id"}]')
    result = admin(db, "import-documents", "--index-name", "books", str(no_id))
    assert result.exit_code == 1 and "missing_document_id" not in result.stderr
    assert "failed: Document doesn't have a `book_id` attribute" in result.stderr


def test_every_command_refuses_a_directory_held_by_a_server(db: Path, tmp_path: Path) -> None:
    lock = DataDirLock(db, "a hanzo-engine server").acquire()
    try:
        for args in (
            ["list-indexes"],
            ["list-keys"],
            ["clear-task-queue"],
            ["export-a-dump"],
            ["export-documents", "--index-name", "movies"],
            ["index-compaction", "movies"],
            ["import-documents", "--index-name", "movies", str(tmp_path / "x.ndjson")],
            ["upgrade"],
        ):
            (tmp_path / "x.ndjson").write_text('{"id": 1}\n')
            result = admin(db, *args)
            assert result.exit_code == 1, args
            assert "is in use by a hanzo-engine server (pid" in result.stderr, args
    finally:
        lock.release()
    assert admin(db, "list-indexes").exit_code == 0


def test_commands_check_the_data_directory(db: Path, tmp_path: Path) -> None:
    result = admin(tmp_path / "nowhere", "list-indexes")
    assert result.exit_code == 1 and "no hanzo-engine database at" in result.stderr
    (db / "VERSION").write_text("1.12.0")
    result = admin(db, "list-indexes")
    assert result.exit_code == 1 and "was created by Meilisearch v1.12.0" in result.stderr
    write_version(db)
    result = admin(db, "upgrade")
    assert result.exit_code == 0 and "already at format 1" in result.stderr
    # the data directory was not modified by refused commands
    index = Index(next((db / "indexes").iterdir()))
    try:
        with index.read() as r:
            assert r.number_of_documents() == 50
    finally:
        index.close()
