"""Keyword search: query terms -> candidate bitmaps -> bucket sort through the ranking rules.

Algorithm (milli's bucket sort, contract §3.6):
1. Each query term gets its derivations from the word dictionary: the exact word, prefix expansions
   (last word), typo variants (native `WordTable`, first-letter rule) and single-word synonyms. Each
   derivation has a typo cost; a term's documents are the union of its derivations' bitmaps,
   restricted to the searched fields through the word-field bitmaps.
2. `words` buckets documents by how many terms they match (terms dropped from the end for
   `matchingStrategy: last`, most frequent first for `frequency`, none for `all`).
3. `typo` splits a words bucket by the total typo cost, still as bitmap operations.
4. The documents of the current bucket, and only those, are scored on the remaining rules from the
   forward index (positions): proximity, attributeRank, wordPosition (or legacy attribute),
   exactness, custom `field:asc|desc`, and BM25 (k1 1.2, b 0.75, per-field lengths), which orders
   whatever the rules leave tied.
5. Buckets are consumed in order until `offset + limit` documents are ranked; later buckets are only
   counted. So the cost follows the size of the buckets actually needed, not the candidate count.

Invariant: a document's `_rankingScore` is the mixed-radix fold of its (rank, max rank) per relevancy
rule in rule order; sort/custom rules do not contribute, BM25 only when `bm25` is a ranking rule.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyroaring import BitMap

from hanzo_engine._native.typo import WordTable
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.tokenizer import Tokenizer
from hanzo_engine.engine.update.indexer import (
    DB_WORD_DOCIDS,
    DB_WORD_FID_DOCIDS,
    field_stats,
    read_forward,
    search_fields,
)

from .query import QueryTerm
from .types import SearchRequest, SearchResult

K1 = 1.2
B = 0.75
MAX_PREFIX_EXPANSIONS = 1000
MAX_TYPO_WORDS = (0, 150, 50)
PROXIMITY_CAP = 7
WORD_POSITION_CAP = 10
_FID = struct.Struct(">H")


@dataclass
class Term:
    """A query term with its derivations and documents."""

    query: QueryTerm
    costs: dict[str, int] = field(default_factory=dict)  # derived word -> typo cost
    levels: list[BitMap] = field(default_factory=list)  # docids by exact typo cost 0, 1, 2
    docids: BitMap = field(default_factory=BitMap)
    exact_words: set[str] = field(default_factory=set)  # derivations that count as exact

    @property
    def max_typos(self) -> int:
        return len(self.levels) - 1


# -- dictionary ---------------------------------------------------------------------------------


def _word_table(reader: IndexReader) -> WordTable:
    """The index's words, sorted; cached on the Index until its next write (`updated_at`)."""
    index = reader.index
    version = reader.updated_at
    cached = getattr(index, "_word_table", None)
    if cached is not None and cached[0] == version:
        table: WordTable = cached[1]
        return table
    with reader.txn.cursor(db=index.db(DB_WORD_DOCIDS)) as cursor:
        words = [bytes(k).decode() for k in cursor.iternext(keys=True, values=False)]
    table = WordTable(words)
    index._word_table = (version, table)  # type: ignore[attr-defined]
    return table


def _prefix_words(reader: IndexReader, prefix: str, limit: int) -> list[str]:
    out: list[str] = []
    key = prefix.encode()
    with reader.txn.cursor(db=reader.index.db(DB_WORD_DOCIDS)) as cursor:
        if not cursor.set_range(key):
            return out
        for k in cursor.iternext(keys=True, values=False):
            kb = bytes(k)
            if not kb.startswith(key):
                break
            out.append(kb.decode())
            if len(out) >= limit:
                break
    return out


class Searcher:
    """Everything one search needs from one read transaction."""

    def __init__(self, reader: IndexReader, settings: dict[str, Any], request: SearchRequest) -> None:
        self.reader = reader
        self.settings = settings
        self.request = request
        self.tokenizer = Tokenizer.from_settings(settings)
        self.fields = search_fields(reader)
        self.stats = field_stats(reader)
        self.all_docids = reader.documents_ids()
        self.n_docs = len(self.all_docids)
        self.field_rank, self.n_ranks = self._searched_fields()
        self.restricted = self.field_rank is not None and len(self.field_rank) != len(self.fields)
        self._word_cache: dict[str, BitMap] = {}

    # -- fields -----------------------------------------------------------------------------------

    def _searched_fields(self) -> tuple[dict[int, int] | None, int]:
        """fid -> attribute rank for the searched fields (None: every field, ranked by first-seen)."""
        searchable: list[str] = self.settings.get("searchableAttributes") or ["*"]
        on = self.request.attributes_to_search_on
        names = self.fields
        if searchable == ["*"] and not on:
            return {fid: fid for fid in range(len(names))}, max(len(names), 1)
        ranked: dict[int, int] = {}
        order = list(range(len(names))) if searchable == ["*"] else None
        patterns = searchable if searchable != ["*"] else None
        for fid, name in enumerate(names):
            rank = None
            if patterns is None:
                rank = order.index(fid) if order is not None else fid
            else:
                for r, attr in enumerate(patterns):
                    if name == attr or name.startswith(attr + "."):
                        rank = r
                        break
            if rank is None:
                continue
            if on and not any(name == a or name.startswith(a + ".") for a in on):
                continue
            ranked[fid] = rank
        n = len(patterns) if patterns is not None else max(len(names), 1)
        return ranked, max(n, 1)

    def word_docids(self, word: str) -> BitMap:
        cached = self._word_cache.get(word)
        if cached is not None:
            return cached
        txn = self.reader.txn
        if not self.restricted:
            raw = txn.get(word.encode(), db=self.reader.index.db(DB_WORD_DOCIDS))
            bm = BitMap.deserialize(bytes(raw)) if raw is not None else BitMap()
        else:
            bm = BitMap()
            assert self.field_rank is not None
            db = self.reader.index.db(DB_WORD_FID_DOCIDS)
            base = word.encode() + b"\x00"
            for fid in self.field_rank:
                raw = txn.get(base + _FID.pack(fid), db=db)
                if raw is not None:
                    bm |= BitMap.deserialize(bytes(raw))
        self._word_cache[word] = bm
        return bm

    # -- terms ------------------------------------------------------------------------------------

    def typo_budget(self, word: str) -> int:
        typo = self.settings.get("typoTolerance") or {}
        if not typo.get("enabled", True):
            return 0
        if word in {self.tokenizer.normalize(w) for w in typo.get("disableOnWords") or ()}:
            return 0
        if typo.get("disableOnNumbers") and word.isdigit():
            return 0
        sizes = typo.get("minWordSizeForTypos") or {}
        n = len(word)
        if n < sizes.get("oneTypo", 5):
            return 0
        if n < sizes.get("twoTypos", 9):
            return 1
        return 2

    def synonyms(self, word: str) -> list[list[str]]:
        raw: dict[str, list[str]] = self.settings.get("synonyms") or {}
        out: list[list[str]] = []
        for key, values in raw.items():
            if self.tokenizer.words(key) == [word]:
                out.extend(self.tokenizer.words(v) for v in values)
        return [w for w in out if w]

    def build_term(self, q: QueryTerm) -> Term:
        term = Term(query=q)
        if q.phrase is not None:
            docids = self.phrase_docids(q.phrase)
            term.levels = [docids]
            term.docids = docids
            term.costs = {w: 0 for w in q.phrase}
            term.exact_words = set(q.phrase)
            return term
        budget = self.typo_budget(q.word)
        costs: dict[str, int] = {q.word: 0}
        term.exact_words.add(q.word)
        if q.is_prefix:
            for w in _prefix_words(self.reader, q.word, MAX_PREFIX_EXPANSIONS):
                costs.setdefault(w, 0)
        if budget:
            table = _word_table(self.reader)
            for w, d in table.matches(q.word, budget, q.is_prefix, MAX_TYPO_WORDS[budget]):
                if w not in costs:
                    costs[w] = d
        levels = [BitMap() for _ in range(budget + 1)]
        for w, d in costs.items():
            bm = self.word_docids(w)
            if bm:
                levels[d] |= bm
        for alternative in self.synonyms(q.word):
            if len(alternative) == 1:
                costs.setdefault(alternative[0], 0)
                term.exact_words.add(alternative[0])
                levels[0] |= self.word_docids(alternative[0])
            else:
                levels[0] |= self.phrase_docids(alternative)
                for w in alternative:
                    costs.setdefault(w, 0)
        # A document counts at its cheapest derivation.
        seen = BitMap()
        for i, level in enumerate(levels):
            level -= seen
            levels[i] = level
            seen |= level
        term.levels = levels
        term.docids = seen
        term.costs = costs
        return term

    def phrase_docids(self, phrase: list[str]) -> BitMap:
        if not phrase:
            return BitMap()
        docids = self.word_docids(phrase[0]).copy()
        for w in phrase[1:]:
            docids &= self.word_docids(w)
        if len(phrase) == 1:
            return docids
        out = BitMap()
        for docid in docids:
            fwd = read_forward(self.reader, docid)
            if fwd is not None and self._has_phrase(fwd[1], phrase):
                out.add(docid)
        return out

    def _has_phrase(self, postings: dict[str, list[int]], phrase: list[str]) -> bool:
        starts = set(self._allowed(postings.get(phrase[0], ())))
        for k, w in enumerate(phrase[1:], start=1):
            nxt = set(self._allowed(postings.get(w, ())))
            starts = {p for p in starts if p + k in nxt}
            if not starts:
                return False
        return bool(starts)

    def _allowed(self, positions: Iterable[int]) -> list[int]:
        if not self.restricted:
            return list(positions)
        rank = self.field_rank
        assert rank is not None
        return [p for p in positions if (p >> 16) in rank]

    # -- per-document features ----------------------------------------------------------------------

    def term_positions(self, postings: dict[str, list[int]], term: Term) -> list[int]:
        if term.query.phrase is not None:
            phrase = term.query.phrase
            first = self._allowed(postings.get(phrase[0], ()))
            rest = [set(self._allowed(postings.get(w, ()))) for w in phrase[1:]]
            return [p for p in first if all(p + k + 1 in nxt for k, nxt in enumerate(rest))]
        out: list[int] = []
        for w in term.costs:
            ps = postings.get(w)
            if ps:
                out.extend(self._allowed(ps))
        return out

    def bm25(self, lengths: dict[Any, int], postings: dict[str, list[int]], terms: list[Term]) -> float:
        n = max(self.n_docs, 1)
        score = 0.0
        for term in terms:
            df = len(term.docids)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            per_field: dict[int, int] = {}
            for p in self.term_positions(postings, term):
                f = p >> 16
                per_field[f] = per_field.get(f, 0) + 1
            for f, tf in per_field.items():
                st = self.stats.get(f)
                avg = (st[1] / st[0]) if st and st[0] else 1.0
                dl = lengths.get(f, lengths.get(str(f), 1))  # type: ignore[call-overload]
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / max(avg, 1e-9)))
        return score


def search(reader: IndexReader, request: SearchRequest, settings: dict[str, Any]) -> SearchResult:
    """Run a keyword search in `reader`'s transaction. `settings` = the full settings view."""
    from .ranking import search as run

    return run(reader, request, settings)
