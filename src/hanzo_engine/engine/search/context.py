"""The search context (milli's `SearchContext`): what one search reads from one read transaction —
the fields it searches and their weights, the typo settings, and the documents of words and phrases.

Invariant: every docid set is restricted to the searched fields (searchable attributes, then
`attributesToSearchOn`), so a document never matches through a field the request does not search.
Positions are packed `fid << 16 | position`, as the forward index stores them.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from pyroaring import BitMap, FrozenBitMap

from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.storage.keys import DB_WORD_DOCIDS, DB_WORD_FID_DOCIDS
from hanzo_engine.engine.tokenizer import Tokenizer
from hanzo_engine.engine.update.indexer import field_stats, read_forward, search_fields

from .query_graph import Alt
from .types import SearchRequest

FID = struct.Struct(">H")  # the field id in a word-fid-docids key: `word 0x00 fid-u16-BE`


def _snapshot(reader: IndexReader) -> tuple[list[str], dict[int, list[int]], FrozenBitMap]:
    """The searchable fields, their statistics and every docid of the committed state `reader` sees,
    decoded once per state for the searches of the index (LMDB names a state by the id of the last
    write transaction; an older snapshot, a long read, decodes its own). Callers must not modify the
    field list or the statistics."""
    state = reader.state_id
    cached = reader.index.__dict__.get("_search_snapshot")
    if cached is not None and cached[0] == state:
        return cached[1], cached[2], cached[3]
    fields, stats, docids = search_fields(reader), field_stats(reader), FrozenBitMap(reader.documents_ids())
    if state is not None and (cached is None or cached[0] < state):
        reader.index.__dict__["_search_snapshot"] = (state, fields, stats, docids)
    return fields, stats, docids


class SearchContext:
    """Fields, settings and docid lookups of one search in one read transaction."""

    def __init__(self, reader: IndexReader, settings: dict[str, Any], request: SearchRequest) -> None:
        self.reader = reader
        self.settings = settings
        self.request = request
        self.tokenizer = Tokenizer.from_settings(settings)
        self.fields, self.stats, all_docids = _snapshot(reader)
        self.all_docids = BitMap(all_docids)
        self.n_docs = len(self.all_docids)
        typo = settings.get("typoTolerance") or {}
        self.typo_enabled = bool(typo.get("enabled", True))
        sizes = typo.get("minWordSizeForTypos") or {}
        self.one_typo = int(sizes.get("oneTypo", 5))
        self.two_typos = int(sizes.get("twoTypos", 9))
        self.exact_words = {self.tokenizer.normalize(w) for w in typo.get("disableOnWords") or ()}
        self.no_number_typos = bool(typo.get("disableOnNumbers"))
        self.by_attribute = settings.get("proximityPrecision") == "byAttribute"
        self._resolve_fields(typo.get("disableOnAttributes") or [])
        self._word_cache: dict[tuple[str, bool], BitMap] = {}
        self._phrase_cache: dict[tuple[tuple[str | None, ...], bool], BitMap] = {}
        self._in_dictionary: dict[str, bool] = {}
        self.field_tables: Any = None  # `ranking_rules.bm25.field_arrays`, made once per search
        # `features.derivations`' per-search memo: (id(node), level) -> (derivations, by word, others)
        self.derivation_plans: dict[
            tuple[int, int | None], tuple[list[Alt], dict[str, list[int]], list[int]]
        ] = {}

    # -- fields -----------------------------------------------------------------------------------

    def _resolve_fields(self, exact_attributes: list[str]) -> None:
        """Weights (milli's fieldids-weights map), searched fids and `disableOnAttributes` fids.

        With `searchableAttributes: ["*"]` every field has weight 0 (attributeRank is then a no-op);
        otherwise a field (and its nested fields) weighs its rank in the list.
        """
        searchable: list[str] = self.settings.get("searchableAttributes") or ["*"]
        on = self.request.attributes_to_search_on

        def under(name: str, attr: str) -> bool:
            return name == attr or name.startswith(attr + ".")

        self.weight: dict[int, int] = {}
        for fid, name in enumerate(self.fields):
            if searchable == ["*"]:
                self.weight[fid] = 0
                continue
            for rank, attr in enumerate(searchable):
                if under(name, attr):
                    self.weight[fid] = rank
                    break
        self.max_weight = max(self.weight.values(), default=0)
        self.searched = {fid for fid in self.weight if not on or any(under(self.fields[fid], a) for a in on)}
        self.exact_fids = {
            fid for fid in self.searched if any(under(self.fields[fid], a) for a in exact_attributes)
        }
        self.restricted = len(self.searched) != len(self.fields)

    def allowed(self, fid: int, tolerant: bool) -> bool:
        """Whether a derivation may match in field `fid` (a `tolerant` one not in exact fields)."""
        return fid in self.searched and not (tolerant and fid in self.exact_fids)

    def restriction(self) -> tuple[bool, tuple[int, ...], tuple[int, ...]]:
        """What a word's documents depend on besides the index: part of a union cache key."""
        return self.restricted, tuple(sorted(self.searched)), tuple(sorted(self.exact_fids))

    # -- docids -----------------------------------------------------------------------------------

    def in_dictionary(self, word: str) -> bool:
        known = self._in_dictionary.get(word)
        if known is None:
            raw = self.reader.txn.get(word.encode(), db=self.reader.index.db(DB_WORD_DOCIDS))
            known = self._in_dictionary[word] = raw is not None
        return known

    def unrestricted_docids(self, word: str) -> BitMap:
        """Documents containing `word` in any field, searched or not."""
        raw = self.reader.txn.get(word.encode(), db=self.reader.index.db(DB_WORD_DOCIDS))
        return BitMap.deserialize(bytes(raw)) if raw is not None else BitMap()

    def word_docids(self, word: str, tolerant: bool = False) -> BitMap:
        """Documents containing `word` in a searched field (not in exact fields when `tolerant`)."""
        tolerant = tolerant and bool(self.exact_fids)
        key = (word, tolerant)
        cached = self._word_cache.get(key)
        if cached is not None:
            return cached
        txn = self.reader.txn
        if not self.restricted and not tolerant:
            raw = txn.get(word.encode(), db=self.reader.index.db(DB_WORD_DOCIDS))
            bm = BitMap.deserialize(bytes(raw)) if raw is not None else BitMap()
        else:
            bm = BitMap()
            if self.in_dictionary(word):
                db = self.reader.index.db(DB_WORD_FID_DOCIDS)
                base = word.encode() + b"\x00"
                for fid in self.searched:
                    if tolerant and fid in self.exact_fids:
                        continue
                    raw = txn.get(base + FID.pack(fid), db=db)
                    if raw is not None:
                        bm |= BitMap.deserialize(bytes(raw))
        self._word_cache[key] = bm
        return bm

    def phrase_docids(self, words: Sequence[str | None], tolerant: bool = False) -> BitMap:
        """Documents where `words` appear consecutively in one searched field (`None`: any word)."""
        key = (tuple(words), tolerant)
        cached = self._phrase_cache.get(key)
        if cached is not None:
            return cached
        present = [w for w in words if w is not None]
        if not present:
            return BitMap()
        docids = self.word_docids(present[0], tolerant).copy()
        for w in present[1:]:
            docids &= self.word_docids(w, tolerant)
            if not docids:
                break
        if len(words) > 1 and docids:
            out = BitMap()
            for docid in docids:
                fwd = read_forward(self.reader, docid)
                if fwd is not None and self.phrase_starts(fwd[1], words, tolerant):
                    out.add(docid)
            docids = out
        self._phrase_cache[key] = docids
        return docids

    def know_phrase(self, words: tuple[str, ...], docids: BitMap) -> None:
        """Records the documents of the untolerant phrase `words` found by other means (a split word's
        adjacent halves): valid only when the search is not restricted to some fields."""
        if not self.restricted:
            self._phrase_cache[(words, False)] = docids

    def alt_docids(self, alt: Alt) -> BitMap:
        if len(alt.words) == 1 and alt.words[0] is not None:
            return self.word_docids(alt.words[0], alt.tolerant)
        return self.phrase_docids(alt.words, alt.tolerant)

    # -- positions in one document ------------------------------------------------------------------

    def positions(self, postings: dict[str, list[int]], word: str, tolerant: bool) -> list[int]:
        """Packed positions of `word` in the fields it may match in."""
        ps = postings.get(word)
        if not ps:
            return []
        return [p for p in ps if self.allowed(p >> 16, tolerant)]

    def phrase_starts(
        self, postings: dict[str, list[int]], words: Sequence[str | None], tolerant: bool = False
    ) -> list[int]:
        """Packed positions of the first slot of every occurrence of the phrase `words`."""
        slots = [(k, w) for k, w in enumerate(words) if w is not None]
        if not slots:
            return []
        k0, w0 = slots[0]
        starts = {p - k0 for p in self.positions(postings, w0, tolerant) if (p & 0xFFFF) >= k0}
        for k, w in slots[1:]:
            if not starts:
                break
            nxt = set(self.positions(postings, w, tolerant))
            starts = {s for s in starts if s + k in nxt}
        return sorted(starts)
