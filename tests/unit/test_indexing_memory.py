"""`--max-indexing-memory` reaches the full-text indexer, and a small budget (many early flushes)
builds exactly the index one large accumulation builds."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec

from hanzo_engine.engine.index import Index, indexer_budget
from hanzo_engine.engine.update.indexer import MAX_PENDING_BYTES
from hanzo_engine.scheduler.scheduler import Scheduler

WORDS = ["sun", "moon", "star", "night", "day", "river", "stone", "wind", "fire", "sea", "hill", "rain"]


def make_docs(n: int) -> list[dict[str, Any]]:
    rng = random.Random(7)
    return [
        {
            "id": i,
            "title": " ".join(rng.choices(WORDS, k=rng.randint(1, 4))),
            "overview": " ".join(rng.choices(WORDS, k=rng.randint(5, 30))),
            "rating": rng.randint(0, 9),
        }
        for i in range(n)
    ]


def add_docs(s: Scheduler, uid: str, docs: list[dict[str, Any]]) -> None:
    file_uuid, path = s.new_update_file()
    path.write_bytes(b"".join(msgspec.json.encode(d) + b"\n" for d in docs))
    s.register(
        "documentAdditionOrUpdate",
        uid,
        details={"receivedDocuments": len(docs), "indexedDocuments": None},
        kind={
            "method": "replace",
            "primaryKey": "id",
            "contentFile": file_uuid,
            "contentSize": path.stat().st_size,
            "allowIndexCreation": True,
        },
    )


def indexer_memory(tmp_path: Path, max_indexing_memory: int | None) -> int:
    s = Scheduler(tmp_path / "data.ms", max_indexing_memory=max_indexing_memory)
    try:
        add_docs(s, "movies", make_docs(3))
        while s.tick():
            pass
        index = s.index("movies")
        assert index is not None
        with index.write() as w:
            return w.search.max_memory
    finally:
        s.mapper.close()
        s.store.close()


def test_the_scheduler_gives_the_indexer_its_share_of_max_indexing_memory(tmp_path: Path) -> None:
    assert indexer_memory(tmp_path / "a", 1 << 30) == (896 << 20) // 3
    assert indexer_memory(tmp_path / "b", 8 << 30) == ((8 << 30) - (128 << 20)) // 3
    assert indexer_memory(tmp_path / "c", None) == MAX_PENDING_BYTES


def test_a_tiny_budget_still_flushes_in_batches() -> None:
    assert indexer_budget(1) == 16 << 20
    assert indexer_budget(100 << 20) == 16 << 20
    assert indexer_budget(176 << 20) == 16 << 20
    assert indexer_budget(416 << 20) == 96 << 20


def dump(index: Index) -> dict[bytes, list[tuple[bytes, bytes]]]:
    out: dict[bytes, list[tuple[bytes, bytes]]] = {}
    with index.read() as r:
        for name in (b"word-docids", b"word-fid-docids", b"docid-words"):
            with r.txn.cursor(db=index.db(name)) as cursor:
                out[name] = [(bytes(k), bytes(v)) for k, v in cursor]
        out[b"main"] = [(k, r._main(k) or b"") for k in (b"search-fields", b"field-stats")]
    return out


def test_early_flushes_build_the_same_index(tmp_path: Path) -> None:
    docs = make_docs(2_000)
    built = []
    for name, budget in (("small", 4 << 10), ("large", None)):
        index = Index.create(tmp_path / name, primary_key="id", created_at=0)
        with index.write() as w:
            if budget is not None:
                w.search.max_memory = budget  # a few documents per flush
            for doc in docs:
                w.put_document(str(doc["id"]), doc, merge=False)
            # replacing documents already flushed must remove their old postings too
            for doc in docs[:300]:
                w.put_document(str(doc["id"]), dict(doc, title="comet"), merge=False)
        built.append(dump(index))
        index.close()
    assert built[0] == built[1]
    assert any(k == b"comet" for k, _ in built[0][b"word-docids"])


def test_a_write_hands_back_the_accumulators_buffers(tmp_path: Path) -> None:
    """A flush keeps the accumulator's large buffers for the next changes; once the transaction ends,
    committed or aborted, they are handed back (the writer and its indexer refer to each other, so
    without it they would wait for the cyclic collector)."""
    index = Index.create(tmp_path / "i", primary_key="id", created_at=0)
    docs = make_docs(3_000)
    for outcome in ("commit", "abort"):
        try:
            with index.write() as w:
                search = w.search
                search.max_memory = 64 << 10  # many flushes
                for d in docs:
                    w.put_document(str(d["id"]), d, merge=False)
                search.flush()
                # after a flush: nothing in use, the log and the sort's scratch still held
                assert search.changes.held_bytes > search.changes.memory_usage + (64 << 10)
                if outcome == "abort":
                    raise RuntimeError("abort")
        except RuntimeError:
            pass
        assert search.changes.held_bytes == search.changes.memory_usage < (64 << 10)  # the merge buffer
    with index.read() as r:
        assert r.number_of_documents() == len(docs)
    index.close()
