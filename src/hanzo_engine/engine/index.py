"""One index = one LMDB environment (as milli's `Index`).

Layout of the environment (every database name and main-db key is a constant of
`engine/storage/keys.py`, every byte form one of `engine/storage/codecs.py`):

- `main`        small metadata: primary key, dates, the fields-ids map (field names in first-seen order),
                the field distribution, the free docids and the marker of the last applied batch.
- `documents`   internal docid (u32 big-endian, so cursor order = insertion order) -> document JSON.
- `external`    external document id (utf-8) -> internal docid.

Invariants:
- `documents` and `external` always hold the same set of docids (one write transaction changes both).
- Stored documents keep their keys in fields-ids-map order, which is the order Meilisearch returns them.
- Internal docids are allocated as milli's `AvailableIds`: a new document takes the smallest docid
  that was free when the write transaction began (gaps below the largest docid in use, then the
  ids after it). Docids freed by a transaction become reusable from the next one. `free-docids`
  holds the gaps below the largest docid; the ids above it are implied.
- `applied-batch` in `main` is written in the same transaction as the batch's changes; it lets the
  scheduler tell, after a crash, whether a batch's changes already reached disk (exactly-once apply).

This module is the storage layer: it imports nothing from the layers above. `IndexWriter` stores
documents and metadata only; the writer every `Index.write()` hands out is `Index.writer_type`, which
the update layer sets to its subclass keeping the search, facet and vector structures in step
(`engine/update/writer.py`, installed by `hanzo_engine.engine`).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Final

import lmdb
import msgspec
from pyroaring import BitMap

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.storage.codecs import U32, U64
from hanzo_engine.engine.storage.environment import check_free_space, file_bytes, open_index_env
from hanzo_engine.engine.storage.keys import (
    DB_DOCUMENTS,
    DB_EXTERNAL,
    DB_MAIN,
    EXTRA_DBS,
    KEY_APPLIED_BATCH,
    KEY_CREATED_AT,
    KEY_DOCUMENTS_IDS,
    KEY_FIELD_DISTRIBUTION,
    KEY_FIELDS_IDS_MAP,
    KEY_FREE_DOCIDS,
    KEY_PRIMARY_KEY,
    KEY_SETTINGS,
    KEY_UPDATED_AT,
)

# Virtual address space reserved per index (LMDB files grow only as data is written). 256 GiB each,
# with at most `IndexMapper.MAX_OPEN` environments open, stays far inside the 128 TiB user address space.
DEFAULT_MAP_SIZE: Final = 256 << 30
MAX_FIELDS: Final = 65_535
# The memory of an indexing task outside the full-text accumulator (`indexer_budget`).
INDEXING_RESERVE: Final = 128 << 20

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


def now_ns() -> int:
    return time.time_ns()


def indexer_budget(max_indexing_memory: int) -> int:
    """The share of `--max-indexing-memory` the full-text indexer may accumulate before it flushes: a
    third of what the budget leaves past `INDEXING_RESERVE` (the chunk of the payload being applied,
    the caches, the merge buffers), as the accumulator's arrays grow by doubling, so its footprint runs
    up to twice what it accounts; LMDB's dirty pages are file-backed (`storage/environment.py`). Every
    flush of a large task merges into the bitmaps the earlier ones wrote, so the larger the share, the
    faster the task. At least 16 MiB, so a tiny budget still flushes in batches rather than every few
    documents."""
    return max((max_indexing_memory - INDEXING_RESERVE) // 3, 16 << 20)


class IndexClosed(Exception):
    """The environment was closed (index deleted, or its env evicted) while it was being read."""


class Index:
    """An open index environment. Thread-safe: LMDB read txns may run while one write txn is open."""

    # `--max-indexing-memory` (bytes), set by the scheduler's IndexMapper; None: the indexer's default.
    max_indexing_memory: int | None = None
    # `--max-indexing-threads`, set by the scheduler's IndexMapper; None: every CPU.
    max_indexing_threads: int | None = None
    # What `write()` hands out: the update layer's writer once `hanzo_engine.engine` is imported.
    writer_type: ClassVar[type[IndexWriter]]

    def __init__(
        self,
        path: Path,
        *,
        map_size: int = DEFAULT_MAP_SIZE,
        readonly: bool = False,
        created: tuple[str | None, int] | None = None,
    ) -> None:
        """Open (or create) the environment at `path`.

        `readonly` is for the search workers of a multi-process server: the environment is opened
        read-only, so no write transaction can begin and opening never waits for the writer.
        `created`: (primary key, creation time) of a new index, written in the same transaction as
        its databases (`create`).
        """
        if not readonly:
            path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.closed = False
        self.readonly = readonly
        self.env = open_index_env(path, map_size=map_size, readonly=readonly)
        # Every database is opened here: opening one later, inside a write transaction of this thread,
        # would deadlock on LMDB's writer lock. The writer opens (creates) them all in one transaction:
        # one synced commit instead of one per database.
        txn = None if readonly else self.env.begin(write=True)
        try:
            self.db_main = self._open_db(DB_MAIN, txn)
            self.db_documents = self._open_db(DB_DOCUMENTS, txn)
            self.db_external = self._open_db(DB_EXTERNAL, txn)
            self._dbs = {name: self._open_db(name, txn) for name in EXTRA_DBS}
            if txn is not None and created is not None and txn.get(KEY_CREATED_AT, db=self.db_main) is None:
                primary_key, created_at = created
                txn.put(KEY_CREATED_AT, U64.pack(created_at), db=self.db_main)
                txn.put(KEY_UPDATED_AT, U64.pack(created_at), db=self.db_main)
                if primary_key is not None:
                    txn.put(KEY_PRIMARY_KEY, primary_key.encode(), db=self.db_main)
        except BaseException:
            if txn is not None:
                txn.abort()
            raise
        if txn is not None:
            txn.commit()

    def _open_db(self, name: bytes, txn: lmdb.Transaction | None) -> Any:
        # read-only: every database exists, since the writer opened the index before any worker did
        # (`Scheduler.open_all_indexes` runs before the workers start; new indexes are created whole)
        return self.env.open_db(name, txn=txn, create=not self.readonly)

    def db(self, name: bytes) -> Any:
        return self._dbs[name]

    @classmethod
    def create(cls, path: Path, *, primary_key: str | None, created_at: int) -> Index:
        return cls(path, created=(primary_key, created_at))

    def close(self) -> None:
        self.closed = True
        self.env.close()

    def delete_files(self) -> None:
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)

    @contextmanager
    def read(self) -> Iterator[IndexReader]:
        """One read transaction; `IndexClosed` when the env is (or gets) closed under the reader."""
        try:
            with self.env.begin(write=False, buffers=False) as txn:
                yield IndexReader(self, txn)
        except lmdb.Error:
            if self.closed:
                raise IndexClosed(str(self.path)) from None
            raise

    @contextmanager
    def write(self) -> Iterator[IndexWriter]:
        """One write transaction; commits on normal exit, aborts on exception."""
        check_free_space(self.env, self.path)
        txn = self.env.begin(write=True)
        writer: IndexWriter | None = None
        try:
            writer = self.writer_type(self, txn)
            yield writer
            writer.flush_metadata()
            txn.commit()
        except BaseException:
            txn.abort()
            raise
        finally:
            if writer is not None:
                writer.release()

    def file_size(self) -> int:
        return file_bytes(self.path / "data.mdb")

    def used_size(self) -> int:
        info = self.env.info()
        stat = self.env.stat()
        return int((info["last_pgno"] + 1) * stat["psize"])


class IndexReader:
    """Read-only view of one committed state of an index."""

    def __init__(self, index: Index, txn: lmdb.Transaction) -> None:
        self.index = index
        self.txn = txn

    @property
    def state_id(self) -> int | None:
        """The committed state this reader sees, for caches shared by the searches of that state: LMDB
        names it by the id of the last write transaction. None for a write transaction (`IndexWriter`):
        its id is given again to the next one when it aborts, so nothing may be cached under it."""
        return int(self.txn.id())

    def _main(self, key: bytes) -> bytes | None:
        value = self.txn.get(key, db=self.index.db_main)
        return None if value is None else bytes(value)

    @property
    def primary_key(self) -> str | None:
        raw = self._main(KEY_PRIMARY_KEY)
        return raw.decode() if raw is not None else None

    @property
    def created_at(self) -> int:
        raw = self._main(KEY_CREATED_AT)
        return U64.unpack(raw)[0] if raw else 0

    @property
    def updated_at(self) -> int:
        raw = self._main(KEY_UPDATED_AT)
        return U64.unpack(raw)[0] if raw else 0

    def fields_ids_map(self) -> list[str]:
        raw = self._main(KEY_FIELDS_IDS_MAP)
        return list(_decode(raw)) if raw else []

    def field_distribution(self) -> dict[str, int]:
        raw = self._main(KEY_FIELD_DISTRIBUTION)
        return dict(_decode(raw)) if raw else {}

    def applied_batch(self) -> dict[str, Any] | None:
        raw = self._main(KEY_APPLIED_BATCH)
        return dict(_decode(raw)) if raw else None

    def settings(self) -> dict[str, Any]:
        """The stored settings JSON; `{}` for an index whose settings were never updated (all defaults)."""
        raw = self._main(KEY_SETTINGS)
        return dict(_decode(raw)) if raw else {}

    def documents_ids(self) -> BitMap:
        raw = self._main(KEY_DOCUMENTS_IDS)
        return BitMap.deserialize(raw) if raw else BitMap()

    def number_of_documents(self) -> int:
        return int(self.txn.stat(self.index.db_external)["entries"])

    def documents_size(self) -> int:
        """Bytes of stored documents (pages of the documents database)."""
        st = self.txn.stat(self.index.db_documents)
        return int((st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]) * st["psize"])

    def internal_id(self, external_id: str) -> int | None:
        raw = self.txn.get(external_id.encode(), db=self.index.db_external)
        return U32.unpack(raw)[0] if raw is not None else None

    def document_by_internal_id(self, docid: int) -> dict[str, Any] | None:
        raw = self.txn.get(U32.pack(docid), db=self.index.db_documents)
        return _decode(raw) if raw is not None else None

    def stored_document(self, docid: int) -> bytes | None:
        """The document's stored JSON (keys in fields-ids-map order, compact, as msgspec encodes it)."""
        raw = self.txn.get(U32.pack(docid), db=self.index.db_documents)
        return None if raw is None else bytes(raw)

    def get_document(self, external_id: str) -> dict[str, Any] | None:
        docid = self.internal_id(external_id)
        return None if docid is None else self.document_by_internal_id(docid)

    def iter_documents(self, offset: int = 0) -> Iterator[dict[str, Any]]:
        """Documents in internal-id order (insertion order), skipping the first `offset`."""
        with self.txn.cursor(db=self.index.db_documents) as cursor:
            if not cursor.first():
                return
            for i, value in enumerate(cursor.iternext(keys=False, values=True)):
                if i >= offset:
                    yield _decode(value)

    def iter_raw_documents(self) -> Iterator[tuple[int, bytes]]:
        with self.txn.cursor(db=self.index.db_documents) as cursor:
            for key, value in cursor:
                yield U32.unpack(key)[0], bytes(value)


class IndexWriter(IndexReader):
    """Mutations inside one write transaction. Metadata is cached and flushed once at the end.

    This class stores documents and metadata only. The structures derived from the documents follow
    them through the hooks below, which a subclass of the update layer implements; each is called at
    a point where the stored documents are consistent with what it is told.
    """

    @property
    def state_id(self) -> int | None:
        return None

    def __init__(self, index: Index, txn: lmdb.Transaction) -> None:
        super().__init__(index, txn)
        self._fields: list[str] = self.fields_ids_map()
        self._field_pos: dict[str, int] = {name: i for i, name in enumerate(self._fields)}
        self._distribution: dict[str, int] = self.field_distribution()
        raw = self._main(KEY_FREE_DOCIDS)
        # docids this transaction may hand out, fixed at its start (AvailableIds over `documents_ids`)
        last = self._last_docid()
        self._free = BitMap.deserialize(raw) if raw else BitMap()
        if last is None:
            self._free.clear()
        else:
            self._free.remove_range(last + 1, 1 << 32)
        self._next_docid = 0 if last is None else last + 1
        self._freed = BitMap()  # reusable once this transaction is committed
        self._dirty = False
        self.interrupted: Callable[[], bool] = lambda: False
        self._docids: BitMap | None = None

    @property
    def docids(self) -> BitMap:
        """The documents-ids bitmap of this transaction (loaded on first use, stored at flush)."""
        if self._docids is None:
            self._docids = self.documents_ids()
        return self._docids

    # -- hooks of the derived structures ------------------------------------------------------------

    def _document_stored(self, docid: int, document: dict[str, Any], external_id: str) -> None:
        """`document` (keys in fields-ids-map order) was stored under `docid`."""

    def _document_replaced(self, docid: int) -> None:
        """The document of `docid` is about to be replaced (`_document_stored` follows)."""

    def _document_deleted(self, docid: int) -> None:
        """The document of `docid` was deleted."""

    def _documents_cleared(self) -> None:
        """Every document was deleted."""

    def _flush_structures(self) -> None:
        """The transaction is about to commit: write what was accumulated."""

    def release(self) -> None:
        """The transaction ended: hand back what its indexers hold (a writer and its indexers refer to
        each other, so without this their memory would wait for the cyclic collector)."""

    def _last_docid(self) -> int | None:
        with self.txn.cursor(db=self.index.db_documents) as cursor:
            if not cursor.last():
                return None
            last: int = U32.unpack(cursor.key())[0]
            return last

    def _allocate_docid(self) -> bytes:
        if self._free:
            docid = self._free.min()
            self._free.remove(docid)
        else:
            docid = self._next_docid
            self._next_docid += 1
        return U32.pack(docid)

    # -- metadata ---------------------------------------------------------------------------------

    def set_primary_key(self, primary_key: str) -> None:
        self.txn.put(KEY_PRIMARY_KEY, primary_key.encode(), db=self.index.db_main)
        self._dirty = True

    def set_settings(self, settings: dict[str, Any]) -> None:
        self.txn.put(KEY_SETTINGS, _encode(settings), db=self.index.db_main)

    def set_applied_batch(self, marker: dict[str, Any]) -> None:
        self.txn.put(KEY_APPLIED_BATCH, _encode(marker), db=self.index.db_main)

    def touch(self, at: int | None = None) -> None:
        self.txn.put(KEY_UPDATED_AT, U64.pack(at or now_ns()), db=self.index.db_main)

    def flush_metadata(self) -> None:
        self._flush_structures()
        if self._docids is not None:
            self.txn.put(KEY_DOCUMENTS_IDS, self._docids.serialize(), db=self.index.db_main)
        if not self._dirty:
            return
        db = self.index.db_main
        self.txn.put(KEY_FIELDS_IDS_MAP, _encode(self._fields), db=db)
        self.txn.put(KEY_FIELD_DISTRIBUTION, _encode(self._distribution), db=db)
        free = self._free | self._freed
        last = self._last_docid()
        if last is None:
            free.clear()
        else:
            free.remove_range(last, 1 << 32)  # ids above the largest docid are implied
        self.txn.put(KEY_FREE_DOCIDS, free.serialize(), db=db)
        self._dirty = False

    # -- documents --------------------------------------------------------------------------------

    def _ordered(self, document: dict[str, Any]) -> dict[str, Any]:
        """The document with its keys in fields-ids-map order, registering new field names."""
        pos = self._field_pos
        in_order = True
        last = -1
        for key in document:
            p = pos.get(key)
            if p is None:
                if len(self._fields) >= MAX_FIELDS:
                    raise MeiliError(
                        "max_fields_limit_exceeded", "A document cannot contain more than 65,535 fields."
                    )
                p = pos[key] = len(self._fields)
                self._fields.append(key)
            if p < last:
                in_order = False
            last = p
        if in_order:
            return document
        return dict(sorted(document.items(), key=lambda item: pos[item[0]]))

    def _count_fields(self, document: dict[str, Any], delta: int) -> None:
        dist = self._distribution
        for key in document:
            n = dist.get(key, 0) + delta
            if n > 0:
                dist[key] = n
            else:
                dist.pop(key, None)

    def put_document(self, external_id: str, document: dict[str, Any], *, merge: bool) -> None:
        """Add, replace (merge=False) or update (merge=True: top-level fields overwrite) a document."""
        self._dirty = True
        ext = external_id.encode()
        raw_docid = self.txn.get(ext, db=self.index.db_external)
        if raw_docid is not None:
            old_raw = self.txn.get(raw_docid, db=self.index.db_documents)
            old = _decode(old_raw) if old_raw is not None else {}
            self._count_fields(old, -1)
            self._document_replaced(U32.unpack(raw_docid)[0])
            if merge:
                merged = dict(old)
                merged.update(document)
                document = merged
        else:
            raw_docid = self._allocate_docid()
            self.txn.put(ext, raw_docid, db=self.index.db_external)
        document = self._ordered(document)
        self._count_fields(document, +1)
        self.txn.put(raw_docid, _encode(document), db=self.index.db_documents)
        docid = U32.unpack(raw_docid)[0]
        self.docids.add(docid)
        self._document_stored(docid, document, external_id)

    def delete_document(self, external_id: str) -> bool:
        ext = external_id.encode()
        raw_docid = self.txn.get(ext, db=self.index.db_external)
        if raw_docid is None:
            return False
        self._dirty = True
        docid = U32.unpack(raw_docid)[0]
        old_raw = self.txn.get(raw_docid, db=self.index.db_documents)
        if old_raw is not None:
            self._count_fields(_decode(old_raw), -1)
        self.txn.delete(raw_docid, db=self.index.db_documents)
        self.txn.delete(ext, db=self.index.db_external)
        self._document_deleted(docid)
        self.docids.discard(docid)
        self._freed.add(docid)
        return True

    def delete_documents(self, external_ids: Iterable[str]) -> int:
        return sum(1 for ext in external_ids if self.delete_document(ext))

    def clear_documents(self) -> int:
        count = self.number_of_documents()
        self.txn.drop(self.index.db_documents, delete=False)
        self.txn.drop(self.index.db_external, delete=False)
        self._documents_cleared()
        self._docids = BitMap()
        self._distribution = {}
        # an empty index allocates from 0 again, as milli after a clear
        self._free.clear()
        self._freed.clear()
        self._next_docid = 0
        self._dirty = True
        return count


Index.writer_type = IndexWriter
