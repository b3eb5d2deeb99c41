"""Keyword search: query graph, term derivations and per-document features (milli's `search/new`).

Model (contract §3.4–§3.7; the names follow milli's query graph):

- Terms are the located query terms of `query.parse_query` (words and phrases, with query
  positions). Every term is a *node*; two or three consecutive word terms also make an *ngram node*
  (their concatenation, `sun flower` -> `sunflower`, with a typo budget reduced by its extra words)
  when it matches some document.
- A node's derivations are grouped by typo cost (level): 0 = the exact word, prefix expansions (last
  term) and synonyms; 1 = one-typo words and the split word (`sunflower` -> the phrase `sun flower`,
  the split that is most often adjacent in the index); 2 = two-typo words. `levels[l]` holds the
  documents whose cheapest derivation of the node has cost `l` (disjoint bitmaps). Typo and ngram
  derivations never match in `disableOnAttributes` fields.
- A *path* is a sequence of nodes covering the query terms left to right; terms removed by the
  matching strategy are skipped. A document matches a path when it matches every node of it.
- `ranking.py` buckets documents with these bitmaps (words, typo) and scores the documents of the
  buckets it needs on the other rules from the forward index (`occurrences`, `proximity_ends`,
  `word_positions`, `bm25` here): proximity, attribute rank, word position, exactness, BM25.

Invariant: all docids are restricted to the searched fields (searchable attributes, then
`attributesToSearchOn`), so a document never matches through a field the request does not search.
"""

from __future__ import annotations

import bisect
import itertools
import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from pyroaring import BitMap

from hanzo_engine._native.bucket import BucketQuery
from hanzo_engine._native.scoring import SortedWords
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.tokenizer import Tokenizer
from hanzo_engine.engine.update.indexer import (
    DB_WORD_DOCIDS,
    DB_WORD_FID_DOCIDS,
    dictionary_delta,
    dictionary_version,
    field_stats,
    forward_entries,
    read_forward,
    search_fields,
)

from .plan_cache import PREFIX_ALTS, TYPO_ALTS, HashedKey
from .query import MAX_WORD_BYTES, QueryTerm
from .types import SearchRequest, SearchResult
from .union_cache import cached_union

K1 = 1.2
B = 0.75
MAX_PREFIX_EXPANSIONS = 1000
MAX_TYPO_WORDS = (0, 150, 50)
MAX_SYNONYM_PHRASES = 50
MAX_SYNONYM_WORDS = 100
MAX_DISTANCE = 4  # milli's `proximity::MAX_DISTANCE`: words 4 or more positions apart are not "close"
MAX_COUNTED_WORDS = 30  # exactness compares field word counts up to this
SPLIT_SCAN_LIMIT = 256  # most documents checked for a candidate split of a word
EXACT = -2  # pseudo typo level: only the node's exact word (after the exactness rule)
DIRECT_DERIVATIONS = 8  # up to this many derivations, each is looked up in the document
_FID = struct.Struct(">H")


class Alt(NamedTuple):
    """One derivation: a word, or a sequence of words that must be consecutive (`None`: any word).
    A named tuple, not a frozen dataclass: a prefix node makes up to 1,000 of them per query."""

    words: tuple[str | None, ...]
    phrase: bool = False  # phrase, synonym or split word: proximity is only counted forward
    tolerant: bool = False  # a typo or ngram derivation: not matched in `disableOnAttributes` fields


def alts_key(node: Node) -> HashedKey:
    """A node's derivations by typo level, hashable: part of the key of the structures built from
    them (`plan_cache`); made once per node (its derivations are final once built)."""
    if node.alts_key is None:
        node.alts_key = HashedKey(tuple(tuple(level) for level in node.alts))
    return node.alts_key


@dataclass
class Node:
    """A query-graph node: one term (`first == last`) or an ngram of terms `first..last`."""

    first: int
    last: int
    qstart: int
    qend: int
    word: str
    kind: str  # "word" | "phrase" | "ngram"
    is_prefix: bool = False
    alts: list[list[Alt]] = field(default_factory=list)  # derivations by typo level
    levels: list[BitMap] = field(default_factory=list)  # documents by cheapest level
    docids: BitMap = field(default_factory=BitMap)
    max_typo: int = 0  # milli's `max_typo_cost`
    exact: Alt | None = None  # the exact term (exactness rule): the indexed word or the phrase
    exact_docids: BitMap = field(default_factory=BitMap)
    alts_key: HashedKey | None = field(default=None, repr=False, compare=False)  # `alts_key(node)`

    @property
    def length(self) -> int:
        return self.last - self.first + 1

    @property
    def typo_base(self) -> int:
        # an ngram costs as many typos as it joins words
        return self.length if self.length > 1 else 0

    def level_of(self, docid: int) -> int:
        for i, level in enumerate(self.levels):
            if docid in level:
                return i
        return -1


Path = tuple[int, ...]  # node indexes, left to right


def bucketed_position(position: int) -> int:
    """milli's `bucketed_position`: exact below 16, then 24, then the next power of two."""
    if position < 16:
        return position
    if position < 24:
        return 24
    return 1 << math.ceil(math.log2(position))


def fold(ranks: list[tuple[int, int]]) -> float:
    """milli's `Rank::global_score`: ranks merged like digits of a mixed-radix number."""
    rank, maximum = 1, 1
    for r, m in ranks:
        rank = max(rank - 1, 0) * m + r
        maximum *= m
    return rank / maximum if maximum else 1.0


def position_cost(distance: int) -> int:
    """milli's word-position cost of a distance between query and document positions (0..10)."""
    for bound, cost in ((0, 0), (1, 1), (4, 2), (7, 3), (11, 4), (16, 5), (24, 6), (64, 7), (256, 8), (1024, 9)):
        if distance <= bound:
            return cost
    return 10


# -- dictionary ---------------------------------------------------------------------------------


def _word_table(reader: IndexReader) -> SortedWords:
    """The index's words, sorted; cached on the Index per dictionary version (`dictionary_version`:
    writes that only change which documents hold known words keep it). A cached table a few versions
    behind is patched with the recorded deltas instead of reading every word again (~3.6 s for 2M words)."""
    index = reader.index
    version = dictionary_version(reader)
    cached = getattr(index, "_word_table", None)
    if cached is not None and cached[0] == version:
        table: SortedWords = cached[1]
        return table
    words: Sequence[str] | None = None
    if cached is not None and cached[0] < version:
        words = cached[1].words
        for v in range(cached[0] + 1, version + 1):
            delta = dictionary_delta(reader, v)
            if delta is None or words is None:
                words = None
                break
            words = _patched(words, [w.decode() for w in delta[0]], {w.decode() for w in delta[1]})
    if words is None:
        with reader.txn.cursor(db=index.db(DB_WORD_DOCIDS)) as cursor:
            words = [bytes(k).decode() for k in cursor.iternext(keys=True, values=False)]
    table = SortedWords(words)  # typo matching walks it as a trie (_native/scoring.pyx)
    index._word_table = (version, table)  # type: ignore[attr-defined]
    return table


def _patched(words: Sequence[str], added: list[str], removed: set[str]) -> Sequence[str]:
    """`words` (sorted by code point, as LMDB orders UTF-8 keys) without `removed`, with `added`:
    whole slices copied between the changed places, so a few changes cost one pass in C."""
    if removed:
        cuts = sorted(i for w in removed if (i := bisect.bisect_left(words, w)) < len(words) and words[i] == w)
        kept: list[str] = []
        prev = 0
        for i in cuts:
            kept.extend(words[prev:i])
            prev = i + 1
        kept.extend(words[prev:])
        words = kept
    if not added:
        return words
    out: list[str] = []
    prev = 0
    for w in sorted(added):
        i = bisect.bisect_left(words, w, prev)
        out.extend(words[prev:i])
        if i >= len(words) or words[i] != w:
            out.append(w)
        prev = i
    out.extend(words[prev:])
    return out


def _prefix_words(reader: IndexReader, prefix: str, limit: int) -> list[str]:
    """Indexed words starting with `prefix`, the word itself excluded, at most `limit`: a slice of
    the cached dictionary when it is the transaction's (~20 µs), else a cursor walk (~1 ms for 1,000)."""
    cached = getattr(reader.index, "_word_table", None)
    if cached is not None and prefix and cached[0] == dictionary_version(reader):
        words: Sequence[str] = cached[1].words  # sorted by code point, as LMDB orders UTF-8 keys
        start = bisect.bisect_left(words, prefix)
        if start < len(words) and words[start] == prefix:
            start += 1
        picked = words[start : start + limit]
        if picked and not picked[-1].startswith(prefix):
            # the words starting with `prefix` are the slice's first ones: those before the prefix
            # with its last character incremented (code point order)
            if ord(prefix[-1]) < 0x10FFFF:
                return list(picked[: bisect.bisect_left(picked, prefix[:-1] + chr(ord(prefix[-1]) + 1))])
            return [w for w in picked if w.startswith(prefix)]
        return list(picked)
    out: list[str] = []
    key = prefix.encode()
    with reader.txn.cursor(db=reader.index.db(DB_WORD_DOCIDS)) as cursor:
        if not cursor.set_range(key):
            return out
        for k in cursor.iternext(keys=True, values=False):
            kb = bytes(k)
            if not kb.startswith(key):
                break
            if kb != key:
                out.append(kb.decode())
                if len(out) >= limit:
                    break
    return out


class Searcher:
    """Everything one search needs from one read transaction: fields, docids, derivations."""

    def __init__(self, reader: IndexReader, settings: dict[str, Any], request: SearchRequest) -> None:
        self.reader = reader
        self.settings = settings
        self.request = request
        self.tokenizer = Tokenizer.from_settings(settings)
        self.fields = search_fields(reader)
        self.stats = field_stats(reader)
        self.all_docids = reader.documents_ids()
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
        self._synonyms = self._normalized_synonyms()
        self._word_cache: dict[tuple[str, bool], BitMap] = {}
        self._phrase_cache: dict[tuple[tuple[str | None, ...], bool], BitMap] = {}
        self._in_dictionary: dict[str, bool] = {}
        self._derivation_plans: dict[tuple[int, int | None], tuple[list[Alt], dict[str, list[int]], list[int]]] = {}

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
        self.searched = {fid for fid in self.weight
                         if not on or any(under(self.fields[fid], a) for a in on)}
        self.exact_fids = {fid for fid in self.searched
                           if any(under(self.fields[fid], a) for a in exact_attributes)}
        self.restricted = len(self.searched) != len(self.fields)

    def allowed(self, fid: int, tolerant: bool) -> bool:
        return fid in self.searched and not (tolerant and fid in self.exact_fids)

    # -- docids -----------------------------------------------------------------------------------

    def in_dictionary(self, word: str) -> bool:
        known = self._in_dictionary.get(word)
        if known is None:
            raw = self.reader.txn.get(word.encode(), db=self.reader.index.db(DB_WORD_DOCIDS))
            known = self._in_dictionary[word] = raw is not None
        return known

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
                    raw = txn.get(base + _FID.pack(fid), db=db)
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

    def alt_docids(self, alt: Alt) -> BitMap:
        if len(alt.words) == 1 and alt.words[0] is not None:
            return self.word_docids(alt.words[0], alt.tolerant)
        return self.phrase_docids(alt.words, alt.tolerant)

    def positions(self, postings: dict[str, list[int]], word: str, tolerant: bool) -> list[int]:
        """Packed positions (`fid << 16 | position`) of `word` in the fields it may match in."""
        ps = postings.get(word)
        if not ps:
            return []
        return [p for p in ps if self.allowed(p >> 16, tolerant)]

    def phrase_starts(self, postings: dict[str, list[int]], words: Sequence[str | None],
                      tolerant: bool = False) -> list[int]:
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

    # -- derivations ------------------------------------------------------------------------------

    def typo_budget(self, word: str) -> int:
        """milli's `number_of_typos_allowed` (characters, not bytes), plus `disableOnNumbers`."""
        if not self.typo_enabled or word in self.exact_words:
            return 0
        if self.no_number_typos and word.isdigit():
            return 0
        n = len(word)
        if n < self.one_typo:
            return 0
        if n < self.two_typos:
            return 1
        return 2

    def _normalized_synonyms(self) -> dict[tuple[str, ...], list[tuple[str, ...]]]:
        raw: dict[str, list[str]] = self.settings.get("synonyms") or {}
        out: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
        for key, values in raw.items():
            k = tuple(self.tokenizer.words(key))
            if not k:
                continue
            bucket = out.setdefault(k, [])
            for value in values:
                v = tuple(self.tokenizer.words(value))
                if v and v not in bucket:
                    bucket.append(v)
        return out

    def synonyms(self, words: Sequence[str]) -> list[Alt]:
        out: list[Alt] = []
        count = 0
        for value in self._synonyms.get(tuple(words), [])[:MAX_SYNONYM_PHRASES]:
            if count + len(value) > MAX_SYNONYM_WORDS:
                continue
            count += len(value)
            out.append(Alt(value, phrase=True))
        return out

    def split_word(self, word: str) -> tuple[str, str] | None:
        """milli's `split_best_frequency`: the split `left right` most often adjacent in the index.

        milli reads adjacency from its word-pair database; here it is checked in the forward index,
        so a split whose halves appear together in more than SPLIT_SCAN_LIMIT documents is not
        considered (such pairs are common words, e.g. `in to`). The choice and the documents where
        the halves are adjacent are cached per index version.
        """
        index = self.reader.index
        version = self.reader.updated_at
        cache = getattr(index, "_split_cache", None)
        if cache is None or cache[0] != version:
            cache = (version, {})
            index._split_cache = cache  # type: ignore[attr-defined]
        splits: dict[str, tuple[str, str, BitMap] | None] = cache[1]
        if word not in splits:
            best: tuple[int, str, str, BitMap] | None = None
            for i in range(1, len(word)):
                left, right = word[:i], word[i:]
                if not (self.in_dictionary(left) and self.in_dictionary(right)):
                    continue
                both = self._unrestricted(left) & self._unrestricted(right)
                if len(both) > SPLIT_SCAN_LIMIT:
                    continue
                adjacent = self._adjacent_docs(both, left, right)
                if adjacent and (best is None or len(adjacent) > best[0]):
                    best = (len(adjacent), left, right, adjacent)
            splits[word] = None if best is None else best[1:]
        found = splits[word]
        if found is None:
            return None
        left, right, adjacent = found
        if not self.restricted:
            # the phrase `left right` in any field: exactly the documents found adjacent above
            self._phrase_cache[((left, right), False)] = adjacent
        return left, right

    def _adjacent_docs(self, docs: BitMap, left: str, right: str) -> BitMap:
        """The documents of `docs` where `left` is immediately followed by `right` in one field (any
        field: milli's word pair at proximity 1), read natively from their forward entries."""
        n_fields = max(len(self.fields), 1)
        every = np.ones(n_fields, dtype=np.uint8)
        slots: dict[bytes, list[tuple[int, int, bool, bool, int, int]]] = {}
        for slot, word in enumerate((left, right)):
            slots.setdefault(word.encode(), []).append((0, 0, False, True, 0, slot))
        words = sorted(slots)
        query = BucketQuery(words, [slots[w] for w in words], [(0, 0, 2)], [(0, 1, 0, 1, False, False)], [],
                            every, every, np.zeros(n_fields, dtype=np.int32), 0, False)
        found = query.matched(forward_entries(self.reader, docs))
        return BitMap(d for d, hit in zip(docs, found.tolist(), strict=True) if hit)

    def _unrestricted(self, word: str) -> BitMap:
        raw = self.reader.txn.get(word.encode(), db=self.reader.index.db(DB_WORD_DOCIDS))
        return BitMap.deserialize(bytes(raw)) if raw is not None else BitMap()

    def _word_node(self, node: Node, budget: int, is_prefix: bool, ngram_words: Sequence[str] | None,
                   splits: bool = True) -> None:
        """Fills the derivations of a word or ngram node (milli's `QueryTerm` subsets)."""
        word = node.word
        node.is_prefix = is_prefix
        ngram = ngram_words is not None
        levels: list[list[Alt]] = [[] for _ in range(max(budget, 1) + 1)]
        if self.in_dictionary(word):
            alt = Alt((word,), tolerant=ngram)
            levels[0].append(alt)
            if not ngram:
                node.exact = alt
        if is_prefix:
            levels[0].extend(self._prefix_alts(word, ngram))
        levels[0].extend(self.synonyms(ngram_words if ngram_words is not None else [word]))
        if budget:
            for d, alt in self._typo_alts(word, budget, is_prefix):
                levels[d].append(alt)
        if not splits:
            split = None
        elif ngram_words is not None and len(ngram_words) == 2:
            # milli drops a 2-gram's best split when it is the query's own two words, which it
            # nearly always is; assuming so spares scanning two words that are both in the query
            split = None
        else:
            split = self.split_word(word)
        if split is not None and (ngram_words is None or list(split) != list(ngram_words)):
            levels[1].append(Alt(split, phrase=True))
        node.alts = levels
        node.max_typo = max(budget, 1)

    def _typo_alts(self, word: str, budget: int, is_prefix: bool) -> tuple[tuple[int, Alt], ...]:
        """(typos, derivation) of the dictionary words within `budget` typos of `word`, shared by the
        searches of one dictionary state. The matcher keeps the first MAX_TYPO_WORDS[d] words of d
        typos natively (numbers dropped when typos on numbers are off)."""
        key = (str(self.reader.index.path), dictionary_version(self.reader), word, budget, is_prefix,
               self.no_number_typos)
        found: tuple[tuple[int, Alt], ...] | None = TYPO_ALTS.get(key)
        if found is None:
            found = tuple((d, Alt((w,), tolerant=True)) for w, d in _word_table(self.reader).matches(
                word, budget, is_prefix, MAX_PREFIX_EXPANSIONS, MAX_TYPO_WORDS, self.no_number_typos))
            TYPO_ALTS.put(key, found)
        return found

    def _prefix_alts(self, prefix: str, tolerant: bool) -> tuple[Alt, ...]:
        """The derivations of a prefix's expansions, shared by the searches of one dictionary state
        (a one-letter prefix makes 1,000 of them, ~0.5 ms); index directories are never reused."""
        key = (str(self.reader.index.path), dictionary_version(self.reader), prefix, tolerant)
        found: tuple[Alt, ...] | None = PREFIX_ALTS.get(key)
        if found is None:
            found = tuple(Alt((w,), tolerant=tolerant) for w in _prefix_words(self.reader, prefix, MAX_PREFIX_EXPANSIONS))
            PREFIX_ALTS.put(key, found)
        return found

    def build_nodes(self, terms: list[QueryTerm], ngrams: bool = True, splits: bool = True) -> list[Node]:
        """The query graph's nodes: every term, then (with `ngrams`) 2- and 3-grams of consecutive word
        terms. The bm25-first mode builds neither ngrams nor split-word derivations (`splits`): it sums
        BM25 over the query's words (`disjunctive.py`)."""
        nodes: list[Node] = []
        for t in terms:
            node = Node(t.index, t.index, t.qstart, t.qend, t.word, "phrase" if t.phrase is not None else "word")
            if t.phrase is not None:
                alt = Alt(tuple(t.phrase), phrase=True)
                node.alts = [[alt]]
                node.exact = alt
            else:
                self._word_node(node, self.typo_budget(t.word), t.is_prefix, None, splits)
            nodes.append(node)
        for size in (2, 3) if ngrams else ():
            for start in range(len(terms) - size + 1):
                group = terms[start : start + size]
                if any(t.phrase is not None for t in group):
                    continue
                if any(b.qstart != a.qend + 1 for a, b in itertools.pairwise(group)):
                    continue
                word = "".join(t.word for t in group)
                if len(word.encode()) > MAX_WORD_BYTES:
                    continue
                node = Node(group[0].index, group[-1].index, group[0].qstart, group[-1].qend, word, "ngram")
                budget = max(self.typo_budget(word) - (size - 1), 0)
                self._word_node(node, budget, group[-1].is_prefix, [t.word for t in group])
                nodes.append(node)
        for node in nodes:
            self._resolve(node)
        # ngram nodes that match nothing can never be on a path that matches something
        return [n for n in nodes if n.kind != "ngram" or n.docids]

    def restriction(self) -> tuple[bool, tuple[int, ...], tuple[int, ...]]:
        """What a word's documents depend on besides the index: part of a union cache key."""
        return self.restricted, tuple(sorted(self.searched)), tuple(sorted(self.exact_fids))

    def _alts_docids(self, alts: list[Alt]) -> BitMap:
        """The documents of any of `alts` (shared between searches for a prefix's many words)."""

        def union() -> BitMap:
            out = BitMap()
            for alt in alts:
                out |= self.alt_docids(alt)
            return out

        return cached_union(self.reader, ("alts", self.restriction(), tuple(alts)), len(alts), union)

    def _resolve(self, node: Node) -> None:
        seen = BitMap()
        node.levels = []
        for alts in node.alts:
            level = self._alts_docids(alts)
            level -= seen
            seen |= level
            node.levels.append(level)
        node.docids = seen
        if node.exact is not None:
            node.exact_docids = self.alt_docids(node.exact)

    # -- per-document features --------------------------------------------------------------------

    def derivations(self, postings: dict[str, list[int]], node: Node, level: int | None) -> list[Alt]:
        """`node`'s derivations at `level` (every level when None, the exact term for EXACT) that may
        occur in a document with these `postings`, in derivation order.

        A prefix or typo node has up to ~1,300 one-word derivations and a document a few dozen words,
        so past `DIRECT_DERIVATIONS` the document's words are looked up in the node's word index
        instead of every derivation in the document (a one-word derivation absent from the document
        contributes nothing to any feature).
        """
        key = (id(node), level)
        plan = self._derivation_plans.get(key)
        if plan is None:
            if level == EXACT:
                alts = [node.exact] if node.exact is not None else []
            else:
                alts = [alt for group in (node.alts if level is None else node.alts[level : level + 1])
                        for alt in group]
            by_word: dict[str, list[int]] = {}
            others: list[int] = []
            for i, alt in enumerate(alts):
                if len(alt.words) == 1 and alt.words[0] is not None:
                    by_word.setdefault(alt.words[0], []).append(i)
                else:
                    others.append(i)
            plan = self._derivation_plans[key] = (alts, by_word, others)
        alts, by_word, others = plan
        if len(alts) <= DIRECT_DERIVATIONS:
            return alts
        picked = list(others)
        if len(by_word) < len(postings):
            for w, idx in by_word.items():
                if w in postings:
                    picked.extend(idx)
        else:
            for w in postings:
                found = by_word.get(w)
                if found is not None:
                    picked.extend(found)
        picked.sort()
        return [alts[i] for i in picked]

    def occurrences(self, postings: dict[str, list[int]], node: Node,
                    level: int | None) -> list[tuple[int, int, bool]]:
        """(first packed position, last packed position, phrase-like) of every match of `node`'s
        derivations at `level` (every level when None) in the document."""
        out: list[tuple[int, int, bool]] = []
        for alt in self.derivations(postings, node, level):
            if len(alt.words) == 1 and alt.words[0] is not None:
                out.extend((p, p, alt.phrase) for p in self.positions(postings, alt.words[0], alt.tolerant))
                continue
            slots = [k for k, w in enumerate(alt.words) if w is not None]
            for s in self.phrase_starts(postings, alt.words, alt.tolerant):
                out.append((s + slots[0], s + slots[-1], True))
        return out

    def proximity_ends(self, postings: dict[str, list[int]], node: Node,
                       level: int | None) -> tuple[list[tuple[int, bool]], list[tuple[int, bool]]]:
        """(last words, first words) of `node`'s matches, as milli's proximity graph sees them:
        for a phrase-like derivation the document must contain it, then any position of its last
        (first) word counts, not only the ones inside an occurrence."""
        lasts: list[tuple[int, bool]] = []
        firsts: list[tuple[int, bool]] = []
        for alt in self.derivations(postings, node, level):
            if len(alt.words) == 1 and alt.words[0] is not None:
                ps = self.positions(postings, alt.words[0], alt.tolerant)
                lasts.extend((p, alt.phrase) for p in ps)
                firsts.extend((p, alt.phrase) for p in ps)
                continue
            if not self.phrase_starts(postings, alt.words, alt.tolerant):
                continue
            if alt.words[-1] is not None:
                lasts.extend((p, True) for p in self.positions(postings, alt.words[-1], alt.tolerant))
            if alt.words[0] is not None:
                firsts.extend((p, True) for p in self.positions(postings, alt.words[0], alt.tolerant))
        return lasts, firsts

    def word_positions(self, postings: dict[str, list[int]], node: Node, level: int | None) -> list[int]:
        """Packed positions the wordPosition rule looks at: the derivations' words, and for a
        phrase-like derivation contained in the document its first word anywhere (as milli)."""
        out: list[int] = []
        for alt in self.derivations(postings, node, level):
            present = [w for w in alt.words if w is not None]
            if len(alt.words) > 1 and not self.phrase_starts(postings, alt.words, alt.tolerant):
                continue
            if present:
                out.extend(self.positions(postings, present[0], alt.tolerant))
        return out

    def bm25(self, lengths: dict[Any, int], postings: dict[str, list[int]], nodes: Iterable[Node],
             qtf: Sequence[int] | None = None) -> float:
        """BM25 over the searched fields: per term and field, w * tf * (k1 + 1) / (tf + k1 * (1 - b +
        b * dl / avgdl)); w = qtf * idf, idf = ln(1 + (N - df + 0.5) / (df + 0.5)), df = documents
        matching the term, qtf the term's query-term frequency (`qtf[i]` for the i-th node, 1 without)."""
        n = max(self.n_docs, 1)
        score = 0.0
        for i, node in enumerate(nodes):
            df = len(node.docids)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            if qtf is not None:
                idf = qtf[i] * idf
            per_field: dict[int, int] = {}
            for first, _last, _phrase in self.occurrences(postings, node, None):
                f = first >> 16
                per_field[f] = per_field.get(f, 0) + 1
            for f, tf in sorted(per_field.items()):  # fields ascending, as `_native.bm25` sums
                st = self.stats.get(f)
                avg = (st[1] / st[0]) if st and st[0] else 1.0
                dl = lengths.get(f, lengths.get(str(f), 1))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / max(avg, 1e-9)))
        return score


# -- sort rules ---------------------------------------------------------------------------------


def _lookup(document: Any, path: str) -> list[Any]:
    """The values at a dotted path, arrays flattened (milli's faceted values)."""
    values: list[Any] = [document]
    for part in path.split("."):
        nxt: list[Any] = []
        for v in values:
            for item in (v if isinstance(v, list) else [v]):
                if isinstance(item, dict) and part in item:
                    nxt.append(item[part])
        values = nxt
    flat: list[Any] = []
    for v in values:
        flat.extend(v if isinstance(v, list) else [v])
    return flat


def sort_value(document: dict[str, Any], rule: str) -> tuple[tuple[Any, ...], Any]:
    """(sort key, score-details value) of a `field:asc|desc` rule, as milli's facet sort: numbers
    before strings in both directions, strings compared trimmed and lowercased (booleans as
    "true"/"false"), the smallest value ascending, the largest descending, missing values last."""
    name, _, direction = rule.rpartition(":")
    desc = direction == "desc"
    numbers: list[float] = []
    strings: list[str] = []
    for v in _lookup(document, name):
        if isinstance(v, bool):
            strings.append("true" if v else "false")
        elif isinstance(v, (int, float)):
            numbers.append(float(v))
        elif isinstance(v, str):
            strings.append(v.strip().lower())
    if numbers:
        n = max(numbers) if desc else min(numbers)
        return (0, -n if desc else n), n
    if strings:
        text = max(strings) if desc else min(strings)
        if desc:
            return (1, (*(-b for b in text.encode()), 1)), text
        return (1, text.encode()), text
    return (2,), None


def sort_detail(rule: str, order: int, value: Any, displayed: set[str] | None) -> dict[str, Any]:
    """The score detail of a sort rule; a field that is not displayed is redacted, as milli."""
    if displayed is not None and rule.rpartition(":")[0] not in displayed:
        return {f"<hidden-rule-{order}>": {"order": order, "value": "<hidden>"}}
    return {rule: {"order": order, "value": value}}


def search(reader: IndexReader, request: SearchRequest, settings: dict[str, Any]) -> SearchResult:
    """Run a keyword search in `reader`'s transaction. `settings` = the full settings view."""
    from .ranking import search as run

    return run(reader, request, settings)
