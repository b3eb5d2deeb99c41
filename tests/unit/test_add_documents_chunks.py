"""A document addition larger than one read chunk (`payload.read_documents`): every document is checked
before the first write, errors keep their order (ids, then `_geo`, then `_vectors`), and the documents
of every chunk are written. Each test runs with a payload the task keeps decoded between its check pass
and its writes (under `HOLD_PAYLOAD_BYTES`) and with one it reads twice, the check pass reading only
the fields it checks (`payload.read_document_fields`)."""

from __future__ import annotations

import gc
from typing import Any

import msgspec
import pytest

from hanzo_engine.scheduler.processing import HOLD_PAYLOAD_BYTES, cyclic_gc_paused
from hanzo_engine.scheduler.scheduler import Scheduler

N = 6_000
# ~500 bytes a document: 6,000 documents span three 1 MiB chunks; ~2 KB: past HOLD_PAYLOAD_BYTES
PADS = {"kept": "lorem ipsum " * 40, "read twice": "lorem ipsum " * 170}


@pytest.fixture(params=list(PADS))
def pad(request: pytest.FixtureRequest) -> str:
    text = PADS[request.param]
    assert (N * len(text) > HOLD_PAYLOAD_BYTES) == (request.param == "read twice")
    return text


def register(s: Scheduler, type_: str, kind: dict[str, Any], details: dict[str, Any]) -> int:
    return int(s.register(type_, "big", details=details, kind=kind)["taskUid"])


def add(s: Scheduler, docs: list[dict[str, Any]]) -> int:
    file_uuid, path = s.new_update_file()
    path.write_bytes(msgspec.json.Encoder().encode_lines(docs))
    assert path.stat().st_size > 2 << 20
    kind = {
        "method": "replace",
        "primaryKey": "id",
        "contentFile": file_uuid,
        "contentSize": path.stat().st_size,
        "allowIndexCreation": True,
    }
    return register(
        s, "documentAdditionOrUpdate", kind, {"receivedDocuments": len(docs), "indexedDocuments": None}
    )


def run(s: Scheduler, uid: int) -> dict[str, Any]:
    while s.tick():
        pass
    task = s.get_task(uid)
    assert task is not None
    return task


def docs(pad: str) -> list[dict[str, Any]]:
    return [{"id": i, "text": pad} for i in range(N)]


def count(s: Scheduler) -> int:
    index = s.index("big")
    if index is None:
        return 0
    with index.read() as r:
        return r.number_of_documents()


def test_every_chunk_is_written(sched: Scheduler, pad: str) -> None:
    payload = docs(pad)
    payload.append({"id": 3, "text": "the last of id 3"})  # a later chunk replaces an earlier one
    task = run(sched, add(sched, payload))
    assert task["status"] == "succeeded", task
    assert task["details"]["indexedDocuments"] == N + 1
    assert count(sched) == N
    index = sched.index("big")
    assert index is not None
    with index.read() as r:
        assert r.get_document("3") == {"id": 3, "text": "the last of id 3"}
        assert r.get_document(str(N - 1)) == {"id": N - 1, "text": pad}


def test_a_bad_id_in_the_last_chunk_wins_over_an_earlier_bad_geo(sched: Scheduler, pad: str) -> None:
    settings = {"filterableAttributes": ["_geo"]}
    run(sched, register(sched, "settingsUpdate", {"settings": settings}, settings))
    payload = docs(pad)
    payload[0]["_geo"] = "nowhere"
    payload[-1]["id"] = "not valid!"
    task = run(sched, add(sched, payload))
    assert task["status"] == "failed" and task["error"]["code"] == "invalid_document_id", task
    assert count(sched) == 0


def test_a_bad_geo_in_the_last_chunk_wins_over_an_earlier_bad_vectors(sched: Scheduler, pad: str) -> None:
    settings = {"filterableAttributes": ["_geo"]}
    run(sched, register(sched, "settingsUpdate", {"settings": settings}, settings))
    payload = docs(pad)
    payload[0]["_vectors"] = 3
    payload[-1]["_geo"] = "nowhere"
    task = run(sched, add(sched, payload))
    assert task["status"] == "failed" and task["error"]["code"] == "invalid_document_geo_field", task
    assert count(sched) == 0
    payload[-1].pop("_geo")
    task = run(sched, add(sched, payload))
    assert task["status"] == "failed" and task["error"]["code"] == "invalid_vectors_type", task
    assert count(sched) == 0


def test_a_missing_id_is_reported_with_the_whole_document(sched: Scheduler, pad: str) -> None:
    payload = docs(pad)
    payload[4_000] = {"text": "no id here", "_geo": {"lat": 1, "lng": 2}, "rank": [1, 2]}
    task = run(sched, add(sched, payload))
    assert task["status"] == "failed", task
    assert task["error"]["code"] == "missing_document_id"
    assert task["error"]["message"] == (
        'Document doesn\'t have a `id` attribute: `{"text":"no id here","_geo":{"lat":1,"lng":2},"rank":[1,2]}`.'
    )
    assert count(sched) == 0


def test_the_cyclic_collector_rests_while_documents_are_applied(sched: Scheduler, pad: str) -> None:
    payload = [dict(d, tags=["a", "b"], meta={"n": [1, 2]}) for d in docs(pad)]
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        # what decoding the payload alone costs the collector in this process, with it on
        reference = msgspec.json.Encoder().encode_lines(payload)
        msgspec.json.Decoder().decode_lines(reference)
        decoding = len(collections)
        collections.clear()
        task = run(sched, add(sched, payload))
    finally:
        gc.callbacks.remove(count)
    assert task["status"] == "succeeded", task
    assert decoding > 20
    assert len(collections) < decoding // 4, (len(collections), decoding)
    assert gc.isenabled()


def test_the_collector_pause_restores_what_it_found() -> None:
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), cyclic_gc_paused():
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
