"""The full-text indexer: keeps the search structures of an index in step with its documents.

Structures (databases of the index env, all written in the batch's write transaction):

- `word-docids`      word -> roaring bitmap of the docids containing it in any field.
- `word-fid-docids`  word + 0x00 + fid (u16 BE) -> bitmap of docids containing the word in that field.
                     Gives attribute restriction (`attributesToSearchOn`, searchable attributes) and the
                     attribute-rank rule as bitmap operations.
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
write per touched key instead of one per document.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import msgspec
from pyroaring import BitMap

from hanzo_engine._native.tokenizer import TokenizerConfig
from hanzo_engine._native.tokenizer import config as tokenizer_config
from hanzo_engine.engine.documents.fields import flatten

if TYPE_CHECKING:
    from hanzo_engine.engine.index import IndexReader, IndexWriter

DB_WORD_DOCIDS: Final = b"word-docids"
DB_WORD_FID_DOCIDS: Final = b"word-fid-docids"
DB_DOCID_WORDS: Final = b"docid-words"
KEY_SEARCH_FIELDS: Final = b"search-fields"
KEY_FIELD_STATS: Final = b"field-stats"

MAX_POSITION: Final = 0xFFFF
_U32 = struct.Struct(">I")
_FID = struct.Struct(">H")
_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode
_json_decode = msgspec.json.decode
_json_encode = msgspec.json.Encoder().encode

Forward = tuple[dict[int, int], dict[str, list[int]]]


def tokenizer_for(settings: dict[str, Any]) -> TokenizerConfig:
    return tokenizer_config(
        separators=settings.get("separatorTokens") or (),
        non_separators=settings.get("nonSeparatorTokens") or (),
        dictionary=settings.get("dictionary") or (),
        stop_words=settings.get("stopWords") or (),
    )


def word_fid_key(word: str, fid: int) -> bytes:
    return word.encode() + b"\x00" + _FID.pack(fid)


def field_text(value: Any) -> str | None:
    """The text indexed for a flattened value (strings and numbers; booleans/null are not searchable)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return msgspec.json.encode(value).decode()
    return None


def read_forward(reader: IndexReader, docid: int) -> Forward | None:
    raw = reader.txn.get(_U32.pack(docid), db=reader.index.db(DB_DOCID_WORDS))
    if raw is None:
        return None
    lengths, postings = _unpack(raw)
    return lengths, postings


def search_fields(reader: IndexReader) -> list[str]:
    raw = reader._main(KEY_SEARCH_FIELDS)
    return list(_json_decode(raw)) if raw else []


def field_stats(reader: IndexReader) -> dict[int, list[int]]:
    raw = reader._main(KEY_FIELD_STATS)
    return {int(k): v for k, v in _json_decode(raw).items()} if raw else {}


class SearchIndexer:
    """Accumulates the search-structure changes of one write transaction."""

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
        # word (or (word, fid)) -> docids, applied at flush as "(stored - removed) | added"
        self.added: defaultdict[str, list[int]] = defaultdict(list)
        self.removed: defaultdict[str, list[int]] = defaultdict(list)
        self.added_fid: defaultdict[tuple[str, int], list[int]] = defaultdict(list)
        self.removed_fid: defaultdict[tuple[str, int], list[int]] = defaultdict(list)
        self.pending: set[int] = set()
        self.dirty = False

    def _fid(self, name: str) -> int:
        fid = self.fid_of.get(name)
        if fid is None:
            fid = self.fid_of[name] = len(self.fields)
            self.fields.append(name)
        return fid

    def analyze(self, document: dict[str, Any]) -> tuple[Forward, list[tuple[int, list[str]]]]:
        """Tokenize every field of `document`: (field lengths, word -> packed positions), and the
        distinct words of each field."""
        lengths: dict[int, int] = {}
        postings: defaultdict[str, list[int]] = defaultdict(list)
        per_field: list[tuple[int, list[str]]] = []
        word_positions = self.tokenizer.word_positions
        for name, value in flatten(document).items():
            if name == "_vectors" or name.startswith("_vectors."):
                continue
            values = value if isinstance(value, list) else (value,)
            fid = self._fid(name)
            base = fid << 16
            offset = 0
            count = 0
            seen: dict[str, None] = {}
            for item in values:
                text = field_text(item)
                if not text:
                    continue
                last = -1
                for word, pos in word_positions(text):
                    p = offset + pos
                    if p > MAX_POSITION:
                        break
                    postings[word].append(base | p)
                    seen[word] = None
                    last = p
                    count += 1
                # Array elements are apart by a hard separator, as milli does.
                offset = last + 8 if last >= 0 else offset
            if count:
                lengths[fid] = count
                per_field.append((fid, list(seen)))
        return (lengths, dict(postings)), per_field

    def _mark(self, docid: int, lengths: dict[int, int], per_field: list[tuple[int, list[str]]], add: bool) -> None:
        words, words_fid = (self.added, self.added_fid) if add else (self.removed, self.removed_fid)
        all_words: set[str] = set()
        for fid, field_words in per_field:
            all_words.update(field_words)
            for word in field_words:
                words_fid[(word, fid)].append(docid)
        for word in all_words:
            words[word].append(docid)
        sign = 1 if add else -1
        for fid, n in lengths.items():
            st = self.stats.setdefault(fid, [0, 0])
            st[0] += sign
            st[1] += sign * n
        self.dirty = True

    def add(self, docid: int, document: dict[str, Any]) -> None:
        forward, per_field = self.analyze(document)
        self.txn.put(_U32.pack(docid), _pack(forward), db=self.db_forward)
        self._mark(docid, forward[0], per_field, add=True)
        self.pending.add(docid)

    def remove(self, docid: int) -> None:
        if docid in self.pending:
            # Added earlier in this transaction: apply that first, so "(stored - removed) | added"
            # at flush time stays right for add-then-remove sequences.
            self.flush()
        raw = self.txn.pop(_U32.pack(docid), db=self.db_forward)
        if raw is None:
            return
        lengths, postings = _unpack(raw)
        by_fid: defaultdict[int, list[str]] = defaultdict(list)
        for word, positions in postings.items():
            for fid in {p >> 16 for p in positions}:
                by_fid[fid].append(word)
        self._mark(docid, {int(k): v for k, v in lengths.items()}, list(by_fid.items()), add=False)

    def clear(self) -> None:
        for db in (self.db_word, self.db_word_fid, self.db_forward):
            self.txn.drop(db, delete=False)
        self.added.clear()
        self.removed.clear()
        self.added_fid.clear()
        self.removed_fid.clear()
        self.pending.clear()
        self.stats = {}
        self.dirty = True

    def _merge(self, db: Any, added: dict[bytes, list[int]], removed: dict[bytes, list[int]]) -> None:
        txn = self.txn
        for key in sorted(set(added) | set(removed)):
            raw = txn.get(key, db=db)
            bitmap = BitMap.deserialize(bytes(raw)) if raw is not None else BitMap()
            if key in removed:
                bitmap -= BitMap(removed[key])
            if key in added:
                bitmap |= BitMap(added[key])
            if bitmap:
                txn.put(key, bitmap.serialize(), db=db)
            elif raw is not None:
                txn.delete(key, db=db)

    def flush(self) -> None:
        if not self.dirty:
            return
        self._merge(self.db_word, {w.encode(): d for w, d in self.added.items()},
                    {w.encode(): d for w, d in self.removed.items()})
        self._merge(self.db_word_fid, {word_fid_key(w, f): d for (w, f), d in self.added_fid.items()},
                    {word_fid_key(w, f): d for (w, f), d in self.removed_fid.items()})
        db_main = self.writer.index.db_main
        self.txn.put(KEY_SEARCH_FIELDS, _json_encode(self.fields), db=db_main)
        self.txn.put(KEY_FIELD_STATS, _json_encode({str(k): v for k, v in self.stats.items()}), db=db_main)
        for d in (self.added, self.removed, self.added_fid, self.removed_fid):
            d.clear()
        self.pending.clear()
        self.dirty = False

    def reindex_all(self, documents: Iterable[tuple[int, dict[str, Any]]]) -> None:
        """Rebuild every structure from the stored documents (tokenization settings changed)."""
        self.clear()
        self.fields = []
        self.fid_of = {}
        for docid, document in documents:
            self.add(docid, document)
