"""The full-text indexer: keeps the search structures of an index in step with its documents.

Structures (databases of the index env, all written in the batch's write transaction):

- `word-docids`      word -> roaring bitmap of the docids containing it in any field.
- `word-fid-docids`  word + 0x00 + fid (u16 BE) -> bitmap of docids containing the word in that field.
                     Gives attribute restriction (`attributesToSearchOn`, searchable attributes) and the
                     attribute-rank rule as bitmap operations.
                     Under fid | FIRST_WORD_FID (0x8000): the docids whose field fid starts with the
                     word (position 0), the best word-position bucket of a one-word query as a bitmap
                     (`search/native_bucket_keys.py`); under fid | FIRST_WORD_FID | SOLE_WORD_FID (0xC000) the
                     docids whose field fid holds that word alone (a one-word query's exact attribute
                     matches); under fid | FIRST_WORD_FID | SECOND_WORD_FID (0xA000) the docids whose
                     field fid has the word at position 1 (with the first words: the fields starting
                     with a pair of words). Only fields below PSEUDO_FID_LIMIT (0x2000) have them.
                     Under NEXT_WORD_FID | bits (0xE000 + 6 bits), for words of at most
                     NEXT_WORD_MAX_LEN bytes: the docids where the word is directly followed, in some
                     field, by a word with those `next_word_bits` (3 bits of each of its first two
                     bytes: the documents where it is followed by a given word or by any word with a
                     given prefix, and a few more). Complete as `first-words` says.
- `docid-words`      docid (u32 BE) -> msgpack `[lengths, postings]` — the forward index: `lengths` maps
                     fid -> number of words of that field, `postings` maps word -> packed positions
                     (`fid << 16 | position`). Proximity, word position, exactness, phrases and BM25
                     read it for the few documents left to rank.
- `search-fields`    (main db key) flattened field names in first-seen order; the index in this list
                     is the `fid` above, stable for the life of the index.
- `field-stats`      (main db key) `{fid: [documents with the field, total words]}` for BM25's
                     average field lengths.

Every flattened field is indexed, searchable or not: which fields a query searches (and their
weights) is decided at search time, so changing `searchableAttributes` needs no reindexing. Settings
that change tokenization (stop words, separators, dictionary) rebuild everything (`reindex_all`).

Bitmap changes are accumulated per transaction and merged once per word in `flush`: one read and one
write per touched key instead of one per document. The per-document work and the merge are native
(`_native.indexing`, csrc/postings.c, csrc/index_batch.c and csrc/bitmap_merge.c): added documents are
flattened in Python and queued; a queue of BATCH_DOCUMENTS (or whatever is queued at a flush or at the
removal of a queued docid) is tokenized, its positions packed, its forward entries encoded and its
(word, fid, docid) events logged in C on `SearchIndexer.threads` threads with the GIL released, with
the same result whatever the number of threads (the batch runs beside the writer thread, which
meanwhile stores and flattens the next documents, even with one); `flush` sorts
the log into key order and merges each key's changes straight on the stored roaring bytes. The
accumulated changes are flushed early when they outgrow `SearchIndexer.max_memory`, which bounds the
indexing memory of a large transaction (a flush may happen at any time: the merge rule holds).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING, Any, Final, cast

import msgspec
from pyroaring import BitMap

from hanzo_engine._native.doc_fields import document_fields, simple_document_fields
from hanzo_engine._native.indexing import DocumentBatch, PostingAccumulator, analyze
from hanzo_engine._native.tokenizer import TokenizerConfig
from hanzo_engine._native.tokenizer import config as tokenizer_config
from hanzo_engine.engine.documents.fields import flatten
from hanzo_engine.engine.storage.codecs import U32, U64, Forward, decode_forward
from hanzo_engine.engine.storage.keys import (
    DB_DOCID_WORDS,
    DB_WORD_DOCIDS,
    DB_WORD_FID_DOCIDS,
    FIRST_WORDS_LEVEL,
    KEY_DICTIONARY_DELTA,
    KEY_DICTIONARY_VERSION,
    KEY_FIELD_STATS,
    KEY_FIRST_WORDS,
    KEY_FORWARD_DELTA,
    KEY_FORWARD_VERSION,
    KEY_SEARCH_FIELDS,
)

if TYPE_CHECKING:
    from hanzo_engine.engine.index import IndexReader, IndexWriter

DICTIONARY_DELTAS: Final = 64
DICTIONARY_DELTA_MAX: Final = 100_000  # words; a bigger change is read again whole

MAX_POSITION: Final = 0xFFFF
# Accumulated bitmap changes (about 12 bytes per word and field of each document) are flushed past this.
MAX_PENDING_BYTES: Final = 256 << 20
# Added documents indexed per native batch: enough for every thread to get a long share, few enough
# that their flattened texts stay small beside the accumulated changes.
BATCH_DOCUMENTS: Final = 2048
# ... and at most this many characters of text: a batch holds its documents' flattened texts alive
# (two batches: the one being tokenized, the one filling), which must stay small beside large documents
BATCH_TEXT_CHARS: Final = 1 << 20
_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode
_json_decode = msgspec.json.decode
_json_encode = msgspec.json.Encoder().encode


def tokenizer_for(settings: dict[str, Any]) -> TokenizerConfig:
    return tokenizer_config(
        separators=settings.get("separatorTokens") or (),
        non_separators=settings.get("nonSeparatorTokens") or (),
        dictionary=settings.get("dictionary") or (),
        stop_words=settings.get("stopWords") or (),
    )


def field_text(value: Any) -> str | None:
    """The text indexed for a flattened value (strings and numbers; booleans/null are not searchable)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return msgspec.json.encode(value).decode()
    return None


def forward_entries(reader: IndexReader, docids: Iterable[int]) -> list[bytes | None]:
    """The raw forward entries of `docids`, in order (one LMDB get each; read transactions are not
    opened with `buffers=True`, so values are `bytes`), for the native readers of `_native.bucket`
    and `_native.bm25`."""
    # map with positional arguments: cheaper per document than a comprehension passing `db=`
    db = reader.index.db(DB_DOCID_WORDS)
    return cast(
        list[bytes | None], list(map(reader.txn.get, map(U32.pack, docids), repeat(None), repeat(db)))
    )


def read_forward(reader: IndexReader, docid: int) -> Forward | None:
    raw = reader.txn.get(U32.pack(docid), db=reader.index.db(DB_DOCID_WORDS))
    return None if raw is None else decode_forward(raw)


# Versions with deltas (the dictionary's, the forward index's): a counter in the main db bumped by each
# change, and per version what changed, the last DICTIONARY_DELTAS kept, so that what a search process
# caches can follow small writes (`engine/search/dictionary.py`, `derivations.split_word`).


def _version(reader: IndexReader, key: bytes) -> int:
    raw = reader._main(key)
    return 0 if raw is None else int(U64.unpack(raw)[0])


def _record_version(
    txn: Any, db_main: Any, version_key: bytes, delta_key: bytes, delta: bytes | None
) -> None:
    """Bumps the version under `version_key`, keeping `delta` (None: not recorded) for the new one."""
    raw = txn.get(version_key, db=db_main)
    version = (0 if raw is None else int(U64.unpack(bytes(raw))[0])) + 1
    txn.put(version_key, U64.pack(version), db=db_main)
    if delta is not None:
        txn.put(delta_key + U64.pack(version), delta, db=db_main)
    if version > DICTIONARY_DELTAS:
        txn.delete(delta_key + U64.pack(version - DICTIONARY_DELTAS), db=db_main)


def coarse_version(version: int, latest: int, oldest: int = 0) -> int:
    """`version` rounded down to a power-of-two distance from `latest` (not below `oldest`): a cache
    asking what changed since a version asks since the coarse one (a superset of the changes), so
    that the entries of many versions share a few answers."""
    if version >= latest:
        return version
    return max(oldest, latest - (1 << (latest - version - 1).bit_length()))


def dictionary_version(reader: IndexReader) -> int:
    """Bumped by every write that adds words to or removes words from `word-docids` (0: never)."""
    return _version(reader, KEY_DICTIONARY_VERSION)


def dictionary_delta(reader: IndexReader, version: int) -> tuple[list[bytes], list[bytes]] | None:
    """(words added, words removed) by the write that made `version`, when it was recorded."""
    raw = reader._main(KEY_DICTIONARY_DELTA + U64.pack(version))
    if raw is None:
        return None
    added, removed = _unpack(raw)
    return added, removed


def record_dictionary_change(
    txn: Any, db_main: Any, created: list[bytes] | None, deleted: list[bytes] | None
) -> None:
    """Bumps the dictionary version; keeps the change as a delta (searches then patch their cached
    dictionary instead of reading every word again) unless it is None (everything dropped) or too
    large to be worth it."""
    known = (
        created is not None and deleted is not None and len(created) + len(deleted) <= DICTIONARY_DELTA_MAX
    )
    delta = _pack([created, deleted]) if known else None
    _record_version(txn, db_main, KEY_DICTIONARY_VERSION, KEY_DICTIONARY_DELTA, delta)


def forward_version(reader: IndexReader) -> int:
    """Bumped by every flush that changes a forward entry (`docid-words`); 0: never."""
    return _version(reader, KEY_FORWARD_VERSION)


def forward_delta(reader: IndexReader, version: int) -> BitMap | None:
    """The docids whose forward entry the flush that made `version` changed, when it was recorded."""
    raw = reader._main(KEY_FORWARD_DELTA + U64.pack(version))
    return None if raw is None else BitMap.deserialize(raw)


def forward_changes(reader: IndexReader, since: int, version: int) -> BitMap | None:
    """The docids whose forward entry changed after version `since` up to `version`; None when the
    delta of one of those versions was not recorded (or no longer is: the last DICTIONARY_DELTAS)."""
    changed = BitMap()
    for v in range(since + 1, version + 1):
        delta = forward_delta(reader, v)
        if delta is None:
            return None
        changed |= delta
    return changed


def record_forward_change(txn: Any, db_main: Any, changed: BitMap | None) -> None:
    """Bumps the forward version, keeping which docids changed (None: every one) when few enough."""
    delta = changed.serialize() if changed is not None and len(changed) <= DICTIONARY_DELTA_MAX else None
    _record_version(txn, db_main, KEY_FORWARD_VERSION, KEY_FORWARD_DELTA, delta)


def first_words_level(reader: IndexReader) -> int:
    """How complete the FIRST_WORD_FID keys are (`KEY_FIRST_WORDS`): 0 not, 1 first words, 2 also
    sole and second words (fields below PSEUDO_FID_LIMIT), 3 also next words by a hash of the whole
    next word (no longer used), 4 next words by the bits of the next word's first two bytes."""
    return _level(reader._main(KEY_FIRST_WORDS))


def _level(marker: Any) -> int:
    """The level a stored `first-words` marker says (0: none)."""
    return 0 if marker is None else int(bytes(marker))


def search_fields(reader: IndexReader) -> list[str]:
    raw = reader._main(KEY_SEARCH_FIELDS)
    return list(_json_decode(raw)) if raw else []


def field_stats(reader: IndexReader) -> dict[int, list[int]]:
    raw = reader._main(KEY_FIELD_STATS)
    return {int(k): v for k, v in _json_decode(raw).items()} if raw else {}


class _BatchJob(threading.Thread):
    """`PostingAccumulator.add_batch` on a thread of its own: the native part releases the GIL, so
    the writer thread goes on storing and flattening the next documents meanwhile."""

    def __init__(
        self, changes: PostingAccumulator, tokenizer: TokenizerConfig, batch: DocumentBatch, threads: int
    ) -> None:
        super().__init__(name="hanzo-index-batch", daemon=True)
        self.changes = changes
        self.tokenizer = tokenizer
        self.batch = batch
        self.threads = threads
        self.forwards: list[bytes] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.forwards = self.changes.add_batch(self.tokenizer, self.batch, self.threads)
        except BaseException as e:  # raised again in the writer thread
            self.error = e

    def result(self) -> list[bytes]:
        self.join()
        if self.error is not None:
            raise self.error
        return self.forwards


class SearchIndexer:
    """Accumulates the search-structure changes of one write transaction.

    The per-document work (tokenizing, packing positions, encoding the forward entry, logging a
    (word, fid, docid) event per word of each field) runs in native code (`_native.indexing`); the
    bitmap changes stay in C memory until `flush` merges them, one read and one write per touched key.
    A docid removed after being added in the same transaction (`pending`, queued or indexed) forces a
    flush first, so "(stored - removed) | added" stays right for add-then-remove sequences.
    Added documents wait in `queue` (flattened) until a batch of them is indexed on `threads` threads;
    the batch is `inflight` on a `_BatchJob` while the next one fills (whatever `threads` is), and the
    accumulator is the job's until `_join` (removals meanwhile wait in `removals`).
    """

    def __init__(self, writer: IndexWriter, settings: dict[str, Any]) -> None:
        self.writer = writer
        self.txn = writer.txn
        self.db_word = writer.index.db(DB_WORD_DOCIDS)
        self.db_word_fid = writer.index.db(DB_WORD_FID_DOCIDS)
        self.db_forward = writer.index.db(DB_DOCID_WORDS)
        self.tokenizer = tokenizer_for(settings)
        self.fields = search_fields(writer)
        self.fid_of = {name: i for i, name in enumerate(self.fields)}
        self.stats = field_stats(writer)
        self.changes = PostingAccumulator()
        self.max_memory = MAX_PENDING_BYTES
        self.pending: set[int] = set()
        self.queue = DocumentBatch()
        self.spare = DocumentBatch()
        self.inflight: _BatchJob | None = None
        self.removals: list[tuple[int, bytes]] = []
        self.batch_documents = BATCH_DOCUMENTS
        self.queued_chars = 0  # text characters in `queue`
        # docids whose forward entry this transaction changed since the last flush (None: all of them)
        self.touched: BitMap | None = BitMap()
        self.threads = 1
        self.dirty = False
        db_main = writer.index.db_main
        stored = self.txn.get(KEY_FIRST_WORDS, db=db_main)
        # an empty index gets complete keys from its first document on; else the stored level holds
        self.first_words = (
            FIRST_WORDS_LEVEL if self.txn.stat(self.db_forward)["entries"] == 0 else _level(stored)
        )

    def analyze(self, document: dict[str, Any]) -> Forward:
        """(field lengths, word -> packed positions) of `document`, as its forward entry stores them."""
        lengths, postings, _ = analyze(
            self.tokenizer, document_fields(flatten(document), self.fid_of, self.fields)
        )
        return lengths, postings

    def add(self, docid: int, document: dict[str, Any]) -> None:
        # fids are given here, in document order, as indexing one by one would
        fields = simple_document_fields(document, self.fid_of, self.fields)
        if fields is None:
            fields = document_fields(flatten(document), self.fid_of, self.fields)
        self.queued_chars += self.queue.push(docid, fields)
        if self.touched is not None:
            self.touched.add(docid)
        self.pending.add(docid)
        self.dirty = True
        if len(self.queue) < self.batch_documents and self.queued_chars < BATCH_TEXT_CHARS:
            return
        self.queued_chars = 0
        # even on one thread: the batch is tokenized while this thread stores the next documents
        self._index_in_background()

    def _index_in_background(self) -> None:
        """Hands the queue to a `_BatchJob` (the previous one finished and stored first), so that the
        next documents are stored and flattened while it is tokenized."""
        self._join()
        if self.changes.memory_usage > self.max_memory:
            self.flush()  # indexes the queue too
            return
        job = _BatchJob(self.changes, self.tokenizer, self.queue, self.threads)
        self.queue = self.spare
        self.inflight = job
        job.start()

    def _join(self) -> None:
        """Waits for the batch job in flight, stores its forward entries and applies the removals
        that waited for it (the accumulator is the job's while it runs)."""
        job = self.inflight
        if job is None:
            return
        self.inflight = None
        forwards = job.result()
        self._store(job.batch, forwards)
        self.spare = job.batch
        removals = self.removals
        self.removals = []
        for docid, raw in removals:
            self.changes.remove(docid, raw)

    def _store(self, batch: DocumentBatch, forwards: list[bytes]) -> None:
        with self.txn.cursor(db=self.db_forward) as cursor:
            cursor.putmulti(zip(map(U32.pack, batch.docids()), forwards, strict=True))
        batch.clear()

    def index_queue(self) -> None:
        """Indexes the queued documents (and waits for those in flight), storing their forward entries."""
        if self.inflight is not None and len(self.queue):
            # the queue is tokenized on this thread, into an accumulator of its own, while the batch in
            # flight finishes; appended after it, its changes are what indexing it after would give
            rest = PostingAccumulator()
            forwards = rest.add_batch(self.tokenizer, self.queue, self.threads)
            self._join()
            self.changes.absorb(rest)
            self._store(self.queue, forwards)
        else:
            self._join()
            if len(self.queue):
                self._store(self.queue, self.changes.add_batch(self.tokenizer, self.queue, self.threads))
        self.queued_chars = 0

    def remove(self, docid: int) -> None:
        if docid in self.pending:
            # Added earlier in this transaction: apply that first, so "(stored - removed) | added"
            # at flush time stays right for add-then-remove sequences.
            self.flush()
        raw = self.txn.pop(U32.pack(docid), db=self.db_forward)
        if raw is None:
            return
        if self.touched is not None:
            self.touched.add(docid)
        if self.inflight is not None:
            # not one of its documents (they are pending): the merge rule lets it wait
            self.removals.append((docid, bytes(raw)))
        else:
            self.changes.remove(docid, bytes(raw))
        self.dirty = True

    def release(self) -> None:
        """Hands back the accumulator's memory once the transaction ended (after a batch job still in
        flight: it writes into the accumulator)."""
        job = self.inflight
        if job is not None:
            job.join()
            self.inflight = None
        self.changes.release()

    def clear(self) -> None:
        self._join()
        for db in (self.db_word, self.db_word_fid, self.db_forward):
            self.txn.drop(db, delete=False)
        self.changes.clear()
        self.pending.clear()
        self.queue.clear()
        self.queued_chars = 0
        self.touched = None
        self.stats = {}
        self.first_words = FIRST_WORDS_LEVEL
        self.dirty = True
        record_dictionary_change(self.txn, self.writer.index.db_main, None, None)

    def flush(self) -> None:
        self.index_queue()
        if not self.dirty:
            return
        changes = self.changes
        txn = self.txn
        # one cursor reads and one writes each table: the keys come in order, so each lookup mostly
        # stays on the leaf page of the one before. A table that stores nothing yet (a new index's
        # first flush) is not read, and its keys are appended (no search for their place).
        new_words = txn.stat(self.db_word)["entries"] == 0
        with txn.cursor(db=self.db_word) as read, txn.cursor(db=self.db_word) as write:
            created, deleted = changes.apply_word_docids(
                None if new_words else read.getmulti,
                partial(write.putmulti, append=True) if new_words else write.putmulti,
                partial(txn.delete, db=self.db_word),
            )
        new_fids = txn.stat(self.db_word_fid)["entries"] == 0
        with txn.cursor(db=self.db_word_fid) as read, txn.cursor(db=self.db_word_fid) as write:
            changes.apply_word_fid_docids(
                None if new_fids else read.getmulti,
                partial(write.putmulti, append=True) if new_fids else write.putmulti,
                partial(txn.delete, db=self.db_word_fid),
            )
        if created is None or created or deleted:
            # (None: an empty dictionary gained words; a cached empty dictionary gains nothing from a
            # delta over reading the words again, which is what None records)
            record_dictionary_change(txn, self.writer.index.db_main, created, deleted)
        if self.touched is None or self.touched:
            record_forward_change(txn, self.writer.index.db_main, self.touched)
        self.touched = BitMap()
        for fid, docs, words in changes.field_stats_changes():
            st = self.stats.setdefault(fid, [0, 0])
            st[0] += docs
            st[1] += words
        changes.clear()
        db_main = self.writer.index.db_main
        txn.put(KEY_SEARCH_FIELDS, _json_encode(self.fields), db=db_main)
        txn.put(KEY_FIELD_STATS, _json_encode({str(k): v for k, v in self.stats.items()}), db=db_main)
        if self.first_words:
            txn.put(KEY_FIRST_WORDS, str(self.first_words).encode(), db=db_main)
        self.pending.clear()
        self.dirty = False

    def reindex_all(self, documents: Iterable[tuple[int, dict[str, Any]]]) -> None:
        """Rebuild every structure from the stored documents (tokenization settings changed)."""
        self.clear()
        self.fields = []
        self.fid_of = {}
        for docid, document in documents:
            self.add(docid, document)
