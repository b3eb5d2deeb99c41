"""The dump v6 format: task/batch/key lines as Meilisearch writes them, the streaming writer, the reader."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from pyroaring import BitMap

from hanzo_engine.dump import DumpFormatError, DumpReader, DumpWriter, dump_uid
from hanzo_engine.dump.format import key_line, key_record
from hanzo_engine.scheduler.dump_records import batch_line, batch_record, task_line, task_record

T0 = 1_668_988_800_000_000_000  # 2022-11-21T00:00:00Z


def task(type_: str, kind: dict[str, Any], details: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    base = {
        "uid": 7,
        "batchUid": 3,
        "indexUid": "doggos",
        "status": "succeeded",
        "type": type_,
        "canceledBy": None,
        "details": details,
        "error": None,
        "enqueuedAt": T0,
        "startedAt": T0 + 1_500_000,
        "finishedAt": T0 + 86_400_000_000_000,
        "kind": kind,
    }
    return {**base, **extra}


# (record, the KindDump Meilisearch writes, the Details Meilisearch writes)
CASES: list[tuple[dict[str, Any], Any, Any]] = [
    (
        task(
            "documentAdditionOrUpdate",
            {
                "method": "update",
                "primaryKey": "id",
                "contentFile": None,
                "contentSize": 0,
                "documentsCount": 12,
                "allowIndexCreation": True,
                "skipCreation": False,
            },
            {"receivedDocuments": 12, "indexedDocuments": 10},
        ),
        {
            "documentImport": {
                "primary_key": "id",
                "method": "UpdateDocuments",
                "documents_count": 12,
                "allow_index_creation": True,
            }
        },
        {"DocumentAdditionOrUpdate": {"received_documents": 12, "indexed_documents": 10}},
    ),
    (
        task(
            "documentDeletion",
            {"op": "ids", "ids": ["1", "2"]},
            {"providedIds": 2, "deletedDocuments": 1, "originalFilter": None},
        ),
        {"documentDeletion": {"documents_ids": ["1", "2"]}},
        {"DocumentDeletion": {"provided_ids": 2, "deleted_documents": 1}},
    ),
    (
        task("documentDeletion", {"op": "clear"}, {"deletedDocuments": 4}),
        "documentClear",
        {"ClearAll": {"deleted_documents": 4}},
    ),
    (
        task(
            "settingsUpdate",
            {
                "settings": {"stopWords": ["the"], "distinctAttribute": None},
                "isDeletion": False,
                "allowIndexCreation": True,
            },
            {"stopWords": ["the"], "distinctAttribute": None},
        ),
        {
            "settings": {
                "settings": {"stopWords": ["the"], "distinctAttribute": None},
                "is_deletion": False,
                "allow_index_creation": True,
            }
        },
        {"SettingsUpdate": {"settings": {"stopWords": ["the"], "distinctAttribute": None}}},
    ),
    (
        task("indexCreation", {"primaryKey": None}, {"primaryKey": None}),
        {"indexCreation": {"primary_key": None}},
        {"IndexInfo": {"primary_key": None, "new_index_uid": None, "old_index_uid": None}},
    ),
    (
        task(
            "indexUpdate",
            {"primaryKey": "id", "newUid": "cats"},
            {"primaryKey": "id", "oldIndexUid": "doggos", "newIndexUid": "cats"},
        ),
        {"indexUpdate": {"primary_key": "id", "uid": "cats"}},
        {"IndexInfo": {"primary_key": "id", "new_index_uid": "cats", "old_index_uid": "doggos"}},
    ),
    (
        task("indexDeletion", {}, {"deletedDocuments": 3}),
        "indexDeletion",
        {"ClearAll": {"deleted_documents": 3}},
    ),
    (
        task(
            "indexSwap",
            {"swaps": [{"indexes": ["a", "b"], "rename": False}]},
            {"swaps": [{"indexes": ["a", "b"], "rename": False}]},
            indexUid=None,
        ),
        {"indexSwap": {"swaps": [{"indexes": ["a", "b"], "rename": False}]}},
        {"IndexSwap": {"swaps": [{"indexes": ["a", "b"], "rename": False}]}},
    ),
    (
        task(
            "taskCancelation",
            {"tasks": [1, 5]},
            {"matchedTasks": 2, "canceledTasks": 1, "originalFilter": "?uids=1,5"},
            indexUid=None,
        ),
        {"taskCancelation": {"query": "?uids=1,5", "tasks": list(BitMap([1, 5]).serialize())}},
        {"TaskCancelation": {"matched_tasks": 2, "canceled_tasks": 1, "original_filter": "?uids=1,5"}},
    ),
    (
        task(
            "taskDeletion",
            {"tasks": [2]},
            {"matchedTasks": 1, "deletedTasks": 1, "originalFilter": "?uids=2"},
            indexUid=None,
        ),
        {"tasksDeletion": {"query": "?uids=2", "tasks": list(BitMap([2]).serialize())}},
        {"TaskDeletion": {"matched_tasks": 1, "deleted_tasks": 1, "original_filter": "?uids=2"}},
    ),
    (
        task(
            "dumpCreation",
            {"keys": [], "instanceUid": None},
            {"dumpUid": "20221121-000000000"},
            indexUid=None,
        ),
        {"dumpCreation": {"keys": [], "instance_uid": None}},
        {"Dump": {"dump_uid": "20221121-000000000"}},
    ),
    (task("snapshotCreation", {}, None, indexUid=None), "snapshotCreation", None),
]


@pytest.mark.parametrize(
    ("record", "kind", "details"), CASES, ids=[c[0]["type"] + str(i) for i, c in enumerate(CASES)]
)
def test_task_lines_match_meilisearch_and_read_back(record: dict[str, Any], kind: Any, details: Any) -> None:
    line = task_line(record)
    assert line["type"] == kind
    assert line.get("details") == details
    assert line["enqueuedAt"] == "2022-11-21T00:00:00Z" and line["startedAt"] == "2022-11-21T00:00:00.0015Z"
    assert list(line)[:5] == ["uid", "batchUid", "indexUid", "status", "type"]
    assert "canceledBy" not in line and "error" not in line
    assert task_record(msgspec.json.decode(msgspec.json.encode(line))) == record


def test_failed_canceled_and_enqueued_tasks_keep_their_fields() -> None:
    error = {
        "message": "boom",
        "code": "internal",
        "type": "internal",
        "link": "https://docs.meilisearch.com/errors#internal",
    }
    failed = task(
        "indexDeletion",
        {},
        {"deletedDocuments": 0},
        status="failed",
        error=error,
        canceledBy=9,
        customMetadata="meta",
    )
    line = task_line(failed)
    assert (line["error"], line["canceledBy"], line["customMetadata"]) == (error, 9, "meta")
    assert task_record(line) == failed
    enqueued = task(
        "indexDeletion", {}, None, status="enqueued", batchUid=None, startedAt=None, finishedAt=None
    )
    line = task_line(enqueued)
    assert "startedAt" not in line and "finishedAt" not in line and line["batchUid"] is None
    assert task_record(line) == enqueued


def test_meilisearch_settings_details_get_their_secrets_masked() -> None:
    line = {
        "uid": 1,
        "indexUid": "x",
        "status": "succeeded",
        "enqueuedAt": "2022-11-21T00:00:00Z",
        "type": {"settings": {"settings": {}, "is_deletion": False, "allow_index_creation": True}},
        "details": {
            "SettingsUpdate": {
                "settings": {
                    "embedders": {"e": {"source": "openAi", "apiKey": "sk-0123456789abcdefghijklmn"}}
                }
            }
        },
    }
    details = task_record(line)["details"]
    assert details["embedders"]["e"]["apiKey"] == "sk-XXXXX..."
    # already masked (our own dumps): unchanged
    assert task_record(task_line(task_record(line)))["details"] == details


def test_batch_and_key_lines() -> None:
    batch = {
        "uid": 3,
        "progress": None,
        "details": {"receivedDocuments": 2},
        "startedAt": T0,
        "finishedAt": T0 + 5,
        "stats": {
            "totalNbTasks": 1,
            "status": {"succeeded": 1},
            "types": {"documentAdditionOrUpdate": 1},
            "indexUids": {"doggos": 1},
        },
        "batchStrategy": "batched all enqueued tasks",
    }
    line = batch_line(batch, (T0 - 10, T0 - 1))
    assert line["stopReason"] == "batched all enqueued tasks" and "progress" not in line
    assert line["enqueuedAt"] == {
        "earliest": "2022-11-20T23:59:59.99999999Z",
        "oldest": "2022-11-20T23:59:59.999999999Z",
    }
    assert batch_record(line) == batch
    record = {
        "uid": "9f8a34da-b6b2-42f0-939b-dbd4c3448655",
        "name": None,
        "description": "d",
        "actions": ["search"],
        "indexes": ["*"],
        "expiresAt": None,
        "createdAt": T0,
        "updatedAt": T0,
    }
    assert key_line(record) == {
        "description": "d",
        "uid": record["uid"],
        "actions": ["search"],
        "indexes": ["*"],
        "expires_at": None,
        "created_at": "2022-11-21T00:00:00Z",
        "updated_at": "2022-11-21T00:00:00Z",
    }
    assert key_record(key_line(record)) == record


def test_dump_uid_is_the_start_time() -> None:
    assert dump_uid(T0 + 45_123_456_789) == "20221121-000045123"


def test_writer_streams_members_and_reader_reads_them(tmp_path: Path) -> None:
    target = tmp_path / "x.dump"
    docs = [{"id": i, "text": "é" * (i % 7)} for i in range(3000)]
    payload = b"".join(msgspec.json.encode(d) + b"\n" for d in docs)
    update = tmp_path / "update"
    update.write_bytes(b'{"id": 9}\n')
    with DumpWriter(
        target, instance_uid="9e15e977-f2ae-4761-943f-1eaf75fd736d", db_version="1.36.0", dump_date_ns=T0
    ) as writer:
        writer.write_keys([{"uid": "u"}])
        writer.add_lines("tasks/queue.jsonl", iter([{"uid": 4, "status": "enqueued"}]))
        writer.write_update_file(4, update)
        # chunks of uneven sizes must add up exactly
        writer.write_index(
            "doggos",
            {
                "uid": "doggos",
                "primaryKey": "id",
                "createdAt": "2022-11-21T00:00:00Z",
                "updatedAt": "2022-11-21T00:00:00Z",
            },
            {"stopWords": []},
            len(payload),
            (payload[i : i + 777] for i in range(0, len(payload), 777)),
        )
        assert not target.exists()  # written under a temporary name until finished
        writer.finish()
    assert not (tmp_path / "x.dump.tmp").exists()
    with DumpReader(target) as reader:
        assert reader.metadata == {
            "dumpVersion": "V6",
            "dbVersion": "1.36.0",
            "dumpDate": "2022-11-21T00:00:00Z",
        }
        assert reader.instance_uid() == "9e15e977-f2ae-4761-943f-1eaf75fd736d"
        assert list(reader.keys()) == [{"uid": "u"}]
        [(line, path)] = list(reader.tasks())
        assert (
            line == {"uid": 4, "status": "enqueued"}
            and path is not None
            and path.read_bytes() == b'{"id": 9}\n'
        )
        [index] = list(reader.indexes())
        assert (index.uid, index.primary_key, index.created_at) == ("doggos", "id", T0)
        assert [msgspec.json.decode(line) for line in index.document_lines()] == docs
        assert list(reader.batches()) == [] and reader.features() is None
        root = reader.root
    with tarfile.open(target) as tar:
        names = tar.getnames()
    # the layout Meilisearch's writer produces (directories first, `indexes/` always there)
    assert names[:5] == ["metadata.json", "instance_uid.uuid", "indexes", "tasks", "tasks/update_files"]
    assert {
        "keys.jsonl",
        "tasks/queue.jsonl",
        "tasks/update_files/4.jsonl",
        "indexes/doggos/metadata.json",
        "indexes/doggos/settings.json",
        "indexes/doggos/documents.jsonl",
    } <= set(names)
    assert not root.exists()


def test_writer_refuses_a_stream_of_the_wrong_size(tmp_path: Path) -> None:
    target = tmp_path / "x.dump"
    with (
        pytest.raises((ValueError, OSError)),
        DumpWriter(target, instance_uid=None, db_version="1", dump_date_ns=T0) as writer,
    ):
        writer.add_stream("indexes/a/documents.jsonl", 10, iter([b"12345"]))
    assert not target.exists() and not (tmp_path / "x.dump.tmp").exists()


def _archive(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_reader_refuses_older_versions_and_unsafe_archives(tmp_path: Path) -> None:
    v5 = _archive(tmp_path / "v5.dump", {"metadata.json": b'{"dumpVersion": "V5", "dbVersion": "0.30.0"}'})
    with pytest.raises(DumpFormatError, match="dump version V5 is not supported by hanzo-engine"):
        DumpReader(v5)
    escape = _archive(tmp_path / "evil.dump", {"metadata.json": b'{"dumpVersion": "V6"}', "../evil": b"x"})
    with pytest.raises(DumpFormatError):
        DumpReader(escape, workdir=tmp_path)
    assert not (tmp_path / "evil").exists()
    (tmp_path / "junk.dump").write_bytes(b"junk")
    with pytest.raises(DumpFormatError, match="is not a readable dump archive"):
        DumpReader(tmp_path / "junk.dump")
    # nothing left behind by the refused reads
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".dump-import-")]
