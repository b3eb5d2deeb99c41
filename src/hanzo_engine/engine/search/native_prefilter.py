"""Prefilters of the native bucket keys: the first-, second-, sole- and next-word keys narrow a large
bucket to the documents that may reach its best keys before `native_bucket_keys.NativeBuckets.best`
keys it.

The indexer stores, per word and field, the documents where the word starts the field (FIRST_WORD_FID),
is its second word (| SECOND_WORD_FID) or its only word (| SOLE_WORD_FID), and, per short word, the
documents where it is directly followed by a word with given next-word bits (NEXT_WORD_FID:
`_native.indexing.next_word_bits`, bits of its first two bytes). From them:

- `first_words`: every document whose leading proximity, attribute and word-position keys are the
  best possible starts a field with a derivation of the first node;
- `first_pairs`: of those, the ones starting it with the first two nodes adjacent (when proximity
  must be best);
- `exact_starts`: the documents that may have an exact attribute match (exactness next);
- `adjacent`: the documents where the first two nodes can be adjacent, which proximity needs for its
  best key (`ranking_rules/proximity.py`).

Each is a superset of the documents it stands for, so keying only it never changes the page.
"""

from __future__ import annotations

from pyroaring import BitMap

from hanzo_engine._native.indexing import next_word_bits
from hanzo_engine.engine.storage.keys import (
    DB_WORD_FID_DOCIDS,
    FIRST_WORD_FID,
    NEXT_WORD_FID,
    NEXT_WORD_MAX_LEN,
    PSEUDO_FID_LIMIT,
    SECOND_WORD_FID,
    SOLE_WORD_FID,
)
from hanzo_engine.engine.update.indexer import first_words_level

from .context import FID, SearchContext
from .query_graph import Alt, Node, Path
from .ranking_rules import attribute_rank, exactness, proximity, word_position
from .union_cache import cached_union

# the native rule codes the prefilters read (`native_bucket_keys.RULE_CODES`)
PROXIMITY = proximity.NATIVE_CODE
ATTRIBUTE_RANK = attribute_rank.NATIVE_CODE
ATTRIBUTE = attribute_rank.ATTRIBUTE_NATIVE_CODE
WORD_POSITION = word_position.NATIVE_CODE
EXACTNESS = exactness.NATIVE_CODE
# the rules `first_words` reads the best keys of
POSITIONAL = (PROXIMITY, ATTRIBUTE_RANK, ATTRIBUTE, WORD_POSITION)
PAIR_LOOKUP_COST = 3  # documents keyed in the time of one first/second-word bitmap lookup


def union_of(parts: list[BitMap]) -> BitMap:
    return BitMap.union(*parts) if parts else BitMap()


def key_width(code: int) -> int:
    """The key columns of a rule code (attribute: fid and position; exactness: attribute match and
    exact words)."""
    return 2 if code in (ATTRIBUTE, EXACTNESS) else 1


class Prefilter:
    """Per search: the key lookups narrowing the buckets of one query (`nodes`) under the native
    rule codes `codes`, with what they read once per search (the index's key level, pairs of
    derivations)."""

    def __init__(self, s: SearchContext, nodes: list[Node], codes: list[int]) -> None:
        self.s = s
        self.nodes = nodes
        self.codes = codes
        self._first_words_level: int | None = None
        self._pairs: dict[Path, tuple[list[Alt], list[Alt]] | None] = {}

    def first_pairs(self, path: Path, subset: BitMap) -> BitMap | None:
        """A subset of `subset` holding every document where a searched field starts with a
        derivation of the path's first node right followed by one of its second, from the first- and
        second-word keys (positions 0 and 1), when the leading rules `first_words` reads hold
        proximity with word-level precision (the best keys then need every two consecutive nodes
        adjacent); else None.

        A one-word derivation of the first node then has one of the second's first words at
        position 1; a phrase-like one (a split word, a multi-word synonym) its own second word,
        which is all that is checked for it."""
        if self._level < 2 or not self.adjacency_needed(path, POSITIONAL):
            return None
        s = self.s
        alts = self._first_two(path)
        if alts is None:
            return None
        first, second = alts
        if len(subset) < PAIR_LOOKUP_COST * (len(first) + len(second)) * len(s.searched):
            return None  # a prefix with many expansions: reading its keys would cost more than keying
        docs_of = self.word_fid_docs
        pairs = BitMap()
        for alt in first:
            if len(alt.words) > 1:
                for fid in s.searched:
                    if s.allowed(fid, alt.tolerant):
                        pairs |= docs_of(alt.words[0], fid | FIRST_WORD_FID) & docs_of(
                            alt.words[1], fid | FIRST_WORD_FID | SECOND_WORD_FID
                        )
        starts = self.scan_fid_docs(self.fids_of([a for a in first if len(a.words) == 1]), FIRST_WORD_FID)
        if starts:
            follows = self.scan_fid_docs(self.fids_of(second), FIRST_WORD_FID | SECOND_WORD_FID)
            for fid, started in starts.items():
                if fid in follows:
                    pairs |= started & follows[fid]
        return pairs & subset

    def adjacency_needed(self, path: Path, leading: tuple[int, ...]) -> bool:
        """Whether the best keys of `path` need its first two nodes adjacent: proximity with word-level
        precision among the leading rules (the codes up to the first not in `leading`), and the two
        nodes consecutive in the query (else their proximity costs nothing)."""
        if len(path) < 2 or self.s.by_attribute:
            return False
        a, b = self.nodes[path[0]], self.nodes[path[1]]
        if a.qend + 1 != b.qstart:
            return False
        for code in self.codes:
            if code not in leading:
                return False
            if code == PROXIMITY:
                return True
        return False

    def adjacent(self, path: Path, docs: BitMap) -> BitMap | None:
        """A subset of `docs` holding every document where a derivation of the path's first node is
        directly followed by one of its second (the next-word keys: the first's last word followed by a
        word with the next-word bits of the second's first word, bits of its first two bytes, which a
        prefix's expansions share), when the index has those keys (the last words are short: the
        frequent words whose buckets are large); else None.
        The caller checks that the best keys need that adjacency (`adjacency_needed`)."""
        if self._level < 4:
            return None  # level 3 indexes have next-word keys by a hash of the whole word
        alts = self._first_two(path)
        if alts is None:
            return None
        first, second = alts
        lasts = sorted({str(alt.words[-1]) for alt in first})
        if any(len(word.encode()) > NEXT_WORD_MAX_LEN for word in lasts):
            return None  # only short words have next-word keys
        # the bits of a word's first two bytes (its first two characters hold them): a prefix's
        # expansions share a few
        bits = sorted({next_word_bits(start.encode()) for start in {str(alt.words[0])[:2] for alt in second}})
        lookups = len(lasts) * len(bits)
        if len(docs) < PAIR_LOOKUP_COST * lookups:
            return None  # the lookups would cost more than keying

        def union() -> BitMap:
            return union_of([self.word_fid_docs(word, NEXT_WORD_FID | b) for word in lasts for b in bits])

        return cached_union(self.s.reader, ("next", tuple(lasts), tuple(bits)), lookups, union) & docs

    def exact_starts(
        self, path: Path, level: int, subset: BitMap, col: int
    ) -> tuple[BitMap | None, BitMap] | None:
        """(the documents of `subset` where some searched field is the path's one query word alone, when
        the index has those keys, else None; the documents of `subset` that may have an exact
        attribute match), when the rule keyed right after the leading `col` columns is exactness;
        else None.

        An exact attribute match (`exactMatch` or `matchesStart`) needs the exact word of each node
        the document matched without typo at its query position in some field (`exact_attribute`):
        the first node's at position 0 (first-word keys) and, in a bucket without typos where the
        second node is the query's second word, the second's at position 1 (second-word keys). For a
        one-word path only the first set can have an `exactMatch` (a field equal to the query). So
        once `want` of them reach the leading best keys with such a match, no other document ranks
        before them."""
        node = self.nodes[path[0]]
        if node.exact is None or node.exact.words[0] is None:
            return None
        width = 0
        for code in self.codes:
            if width == col:
                if code != EXACTNESS:
                    return None
                break
            width += key_width(code)
        else:
            return None
        word = node.exact.words[0]
        one_word = len(path) == 1 and node.qend == node.qstart and self._level >= 2
        second: str | None = None
        if level == 0 and len(path) >= 2 and self._level >= 2:
            # without typos every node's exact word counts in `exact_attribute`, at its query position
            nxt = self.nodes[path[1]]
            if nxt.qstart == 1 and nxt.exact is not None and len(nxt.exact.words) == 1:
                second = nxt.exact.words[0]
        starts, sole, seconds = BitMap(), BitMap(), BitMap()
        for fid in self.s.weight:
            starts |= self.word_fid_docs(word, fid | FIRST_WORD_FID)
            if one_word:
                sole |= self.word_fid_docs(word, fid | FIRST_WORD_FID | SOLE_WORD_FID)
            if second is not None:
                seconds |= self.word_fid_docs(second, fid | FIRST_WORD_FID | SECOND_WORD_FID)
        if second is not None:
            starts &= seconds
        return (sole & subset if one_word else None), starts & subset

    def first_words(self, path: Path, level: int, docs: BitMap) -> tuple[BitMap, list[int]] | None:
        """(a subset of `docs` holding every document whose keys on the leading proximity, attribute
        and word-position rules are the best possible; those best keys), or None when the rules or the
        index do not allow it.

        The best keys of a path starting the query: proximity Σ (ngram length - 1) (consecutive
        words adjacent), attribute rank the smallest searched weight for every node, word position 0
        for every node, so the first node at position 0: a derivation of it starting a field (the
        FIRST_WORD_FID bitmaps; for a one-node path at the bucket's typo level, else at any level).
        Documents reaching them start a field with such a derivation and (if the weights differ) have
        one in a field of the smallest weight."""
        if not path or not self._first_words_complete:
            return None
        nodes = [self.nodes[i] for i in path]
        node = nodes[0]
        if node.qstart != 0 or (len(nodes) == 1 and not 0 <= level < len(node.alts)):
            return None
        best: list[int] = []
        positional = weighted = False
        s = self.s
        wmin = min((s.weight[f] for f in s.searched), default=0)
        covered = sum(n.length for n in nodes)
        for code in self.codes:
            if code == PROXIMITY:
                best.append(covered - len(nodes))
            elif code == ATTRIBUTE_RANK:
                best.append(wmin * covered)
                weighted = True
            elif code == ATTRIBUTE:
                best.extend((wmin * covered, 0))
                weighted = positional = True
            elif code == WORD_POSITION:
                best.append(0)
                positional = True
            else:
                break
        if not positional:
            return None
        if len({s.weight[f] for f in s.searched}) <= 1:
            weighted = False  # every searched field has the smallest weight
        alts = node.alts[level] if len(nodes) == 1 else [alt for group in node.alts for alt in group]
        if any(alt.words[0] is None for alt in alts):
            return None

        def union(flag: int, fids: list[int]) -> BitMap:
            return union_of(list(self.scan_fid_docs(self.fids_of(alts, fids), flag).values()))

        searched = list(s.searched)
        key = (s.restriction(), tuple(alts))
        # one lookup per derivation and field: what the cache saves
        subset = (
            cached_union(
                s.reader, ("first", key), len(alts) * len(searched), lambda: union(FIRST_WORD_FID, searched)
            )
            & docs
        )
        if weighted:
            best_fids = [fid for fid in searched if s.weight[fid] == wmin]
            subset &= cached_union(
                s.reader,
                ("in", key, tuple(best_fids)),
                len(alts) * len(best_fids),
                lambda: union(0, best_fids),
            )
        return subset, best

    def fids_of(self, alts: list[Alt], fids: list[int] | None = None) -> dict[str, set[int]]:
        """The first word of each derivation, with the fields (of `fids`, default the searched ones)
        it may match in."""
        s = self.s
        searched = list(s.searched) if fids is None else fids
        out: dict[str, set[int]] = {}
        for alt in alts:
            out.setdefault(str(alt.words[0]), set()).update(f for f in searched if s.allowed(f, alt.tolerant))
        return out

    def scan_fid_docs(self, fids_of: dict[str, set[int]], flag: int) -> dict[int, BitMap]:
        """Per field, the union of the bitmaps under (word, field | flag) for every word of `fids_of`
        and each of its fields (fields with nothing stored absent): one cursor seek per word, to its
        first key in the flag's range (a word's keys are adjacent, `word 0x00 fid-u16-BE`, in fid
        order), then that range's keys in order. A prefix's 1,000 expansions over 6 fields cost 1,000
        seeks instead of 6,000 lookups, most of which miss."""
        reader = self.s.reader
        out: dict[int, BitMap] = {}
        with reader.txn.cursor(db=reader.index.db(DB_WORD_FID_DOCIDS)) as cursor:
            for word in sorted(fids_of, key=str.encode):
                wanted = {fid | flag for fid in fids_of[word]}
                if not wanted:
                    continue
                head = word.encode() + b"\x00"
                last = max(wanted)
                found = cursor.set_range(head + FID.pack(min(wanted)))
                while found:
                    key = bytes(cursor.key())
                    if len(key) != len(head) + 2 or not key.startswith(head):
                        break
                    fid = FID.unpack_from(key, len(head))[0]
                    if fid > last:
                        break
                    if fid in wanted:
                        field = out.setdefault(fid & ~flag, BitMap())
                        field |= BitMap.deserialize(bytes(cursor.value()))
                    found = cursor.next()
        return out

    def word_fid_docs(self, word: str | None, fid: int) -> BitMap:
        """The bitmap stored under `word` and `fid` (a field, or a pseudo field of the first-, second-,
        sole- or next-word keys) in word-fid-docids; empty when absent."""
        reader = self.s.reader
        raw = reader.txn.get(
            str(word).encode() + b"\x00" + FID.pack(fid), db=reader.index.db(DB_WORD_FID_DOCIDS)
        )
        return BitMap.deserialize(bytes(raw)) if raw is not None else BitMap()

    def _first_two(self, path: Path) -> tuple[list[Alt], list[Alt]] | None:
        """The derivations (every typo level) of the path's first two nodes, when none has a quoted
        stop word where the pair keys would be read."""
        if path[:2] not in self._pairs:
            self._pairs[path[:2]] = self._first_two_of(path)
        return self._pairs[path[:2]]

    def _first_two_of(self, path: Path) -> tuple[list[Alt], list[Alt]] | None:
        first, second = ([alt for group in self.nodes[i].alts for alt in group] for i in path[:2])
        if any(None in alt.words for alt in first) or any(alt.words[0] is None for alt in second):
            return None
        return first, second

    @property
    def _first_words_complete(self) -> bool:
        return self._level >= 1 and all(fid < PSEUDO_FID_LIMIT for fid in self.s.weight)

    @property
    def _level(self) -> int:
        if self._first_words_level is None:
            self._first_words_level = first_words_level(self.s.reader)
        return self._first_words_level
