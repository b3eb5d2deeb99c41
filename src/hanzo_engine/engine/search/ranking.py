"""The bucket sort and the ranking score (see `engine.py` for the overall algorithm)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap

from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.update.indexer import read_forward

from .engine import PROXIMITY_CAP, WORD_POSITION_CAP, Searcher, Term
from .query import parse_query
from .types import MatchingWords, SearchRequest, SearchResult

RELEVANCY_RULES = ("words", "typo", "proximity", "attribute", "attributeRank", "wordPosition", "exactness",
                   "bm25")
DEFAULT_CUTOFF_MS = 1500
BM25_LEVELS = 100


@dataclass
class Bucket:
    docids: BitMap
    terms: list[Term]
    typos: int | None  # total typo cost when the typo rule split this bucket


def _words_buckets(terms: list[Term], strategy: str, universe: BitMap) -> Iterator[tuple[BitMap, list[Term]]]:
    n = len(terms)
    if strategy == "all":
        removal: list[Term] = []
    elif strategy == "frequency":
        removal = sorted(terms, key=lambda t: (-len(t.docids), -t.query.index))
    else:
        removal = list(reversed(terms))
    seen = BitMap()
    kept = list(terms)
    for dropped in range(0, max(len(removal), 1) if strategy != "all" else 1):
        if dropped:
            gone = removal[dropped - 1]
            kept = [t for t in kept if t is not gone]
        if not kept:
            break
        docs = universe.copy()
        for t in kept:
            docs &= t.docids
            if not docs:
                break
        docs -= seen
        if docs:
            seen |= docs
            yield docs, list(kept)
        if len(kept) == 1 or dropped + 1 >= n:
            break


def _typo_buckets(docs: BitMap, terms: list[Term]) -> Iterator[tuple[int, BitMap]]:
    costs: dict[int, BitMap] = {0: docs}
    for t in terms:
        nxt: dict[int, BitMap] = {}
        for c, bm in costs.items():
            for i, level in enumerate(t.levels):
                part = bm & level
                if part:
                    acc = nxt.get(c + i)
                    nxt[c + i] = part if acc is None else acc | part
        costs = nxt
    for c in sorted(costs):
        yield c, costs[c]


def _fold(ranks: list[tuple[int, int]]) -> float:
    rank, maximum = 1, 1
    for r, m in ranks:
        rank = (rank - 1) * m + r
        maximum *= m
    return rank / maximum if maximum else 1.0


class Ranker:
    """Scores the documents of a bucket on every ranking rule."""

    def __init__(self, s: Searcher, rules: list[str], all_terms: list[Term]) -> None:
        self.s = s
        self.rules = rules
        self.all_terms = all_terms
        self.n_terms = len(all_terms)
        self.max_typos = sum(t.max_typos for t in all_terms)

    def score(self, docid: int, terms: list[Term], typos: int | None) -> tuple[tuple[Any, ...], float, dict[str, Any]]:
        s = self.s
        fwd = read_forward(s.reader, docid)
        lengths, postings = fwd if fwd is not None else ({}, {})
        positions = [s.term_positions(postings, t) for t in terms]
        if typos is None:
            typos = self._typos(docid, terms)
        key: list[Any] = []
        ranks: list[tuple[int, int]] = []
        details: dict[str, Any] = {}
        document: dict[str, Any] | None = None
        order = -1
        for rule in self.rules:
            if rule == "sort":
                continue  # the sort placeholder shows only when the request sorts (filters issue)
            order += 1
            if rule == "words":
                r, m = len(terms), max(self.n_terms, 1)
                details["words"] = {"order": order, "matchingWords": len(terms),
                                    "maxMatchingWords": self.n_terms, "score": r / m}
            elif rule == "typo":
                m = self.max_typos + 1
                r = m - typos
                details["typo"] = {"order": order, "typoCount": typos, "maxTypoCount": self.max_typos,
                                   "score": r / m}
            elif rule == "proximity":
                r, m = self._proximity(positions)
                details["proximity"] = {"order": order, "score": r / m}
            elif rule in ("attribute", "attributeRank", "wordPosition"):
                ar, am = self._attribute_rank(positions)
                wr, wm = self._word_position(positions)
                if rule == "attributeRank":
                    r, m = ar, am
                    details[rule] = {"order": order, "attributeRankingOrderScore": ar / am, "score": r / m}
                elif rule == "wordPosition":
                    r, m = wr, wm
                    details[rule] = {"order": order, "queryWordDistanceScore": wr / wm, "score": r / m}
                else:
                    r, m = (ar - 1) * wm + wr, am * wm
                    details[rule] = {"order": order, "attributeRankingOrderScore": ar / am,
                                     "queryWordDistanceScore": wr / wm, "score": r / m}
            elif rule == "exactness":
                r, m, match_type, exact = self._exactness(lengths, positions, terms, postings)
                detail: dict[str, Any] = {"order": order, "matchType": match_type}
                if match_type == "noExactMatch":
                    detail.update(matchingWords=exact, maxMatchingWords=len(terms))
                detail["score"] = r / m
                details["exactness"] = detail
            elif rule == "bm25":
                raw = s.bm25(lengths, postings, terms)
                norm = raw / (raw + 5.0)
                m = BM25_LEVELS
                r = 1 + round(norm * (m - 1))
                details["bm25"] = {"order": order, "value": raw, "score": norm}
            elif rule.endswith(":asc") or rule.endswith(":desc"):
                if document is None:
                    document = s.reader.document_by_internal_id(docid) or {}
                name, _, direction = rule.rpartition(":")
                value = _lookup(document, name)
                key.append(_sort_key(value, direction == "desc"))
                details[rule] = {"order": order, "value": value}
                continue
            else:
                continue
            key.append(-r)
            ranks.append((r, m))
        if "bm25" not in details:
            raw = s.bm25(lengths, postings, terms)
            details["bm25"] = {"order": order + 1, "value": raw, "score": raw / (raw + 5.0)}
        key.append(-details["bm25"]["value"])
        key.append(docid)
        return tuple(key), _fold(ranks), details

    def _typos(self, docid: int, terms: list[Term]) -> int:
        total = 0
        for t in terms:
            for i, level in enumerate(t.levels):
                if docid in level:
                    total += i
                    break
        return total

    @staticmethod
    def _proximity(positions: list[list[int]]) -> tuple[int, int]:
        pairs = len(positions) - 1
        if pairs <= 0:
            return 1, 1
        cost = 0
        for a, b in itertools.pairwise(positions):
            best = PROXIMITY_CAP
            for p in a:
                for q in b:
                    if p >> 16 != q >> 16:
                        continue
                    d = q - p if q > p else p - q + 1
                    c = min(d, PROXIMITY_CAP + 1) - 1
                    if c < best:
                        best = c
                        if best == 0:
                            break
                if best == 0:
                    break
            cost += best
        m = PROXIMITY_CAP * pairs + 1
        return m - cost, m

    def _attribute_rank(self, positions: list[list[int]]) -> tuple[int, int]:
        rank_of = self.s.field_rank or {}
        n = self.s.n_ranks
        best = n - 1
        for ps in positions:
            for p in ps:
                r = rank_of.get(p >> 16, n - 1)
                if r < best:
                    best = r
        return n - best, n

    @staticmethod
    def _word_position(positions: list[list[int]]) -> tuple[int, int]:
        cap = WORD_POSITION_CAP
        cost = sum(min((min((p & 0xFFFF) for p in ps) if ps else cap), cap) for ps in positions)
        m = cap * max(len(positions), 1) + 1
        return m - cost, m

    @staticmethod
    def _exactness(lengths: dict[Any, int], positions: list[list[int]], terms: list[Term],
                   postings: dict[str, list[int]]) -> tuple[int, int, str, int]:
        k = len(terms)
        m = k + 3
        exact_positions = []
        for t in terms:
            exact: set[int] = set()
            for w in t.exact_words:
                exact.update(postings.get(w, ()))
            exact_positions.append(exact)
        if k and exact_positions[0]:
            for p in exact_positions[0]:
                if p & 0xFFFF:
                    continue
                fid = p >> 16
                if all((fid << 16) | i in exact_positions[i] for i in range(1, k)):
                    length = lengths.get(fid, lengths.get(str(fid), -1))  # type: ignore[call-overload]
                    if length == k:
                        return m, m, "exactMatch", k
                    return m - 1, m, "matchesStart", k
        exact_count = sum(1 for e in exact_positions if e)
        return 1 + exact_count, m, "noExactMatch", exact_count


def _lookup(document: dict[str, Any], path: str) -> Any:
    value: Any = document
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _sort_key(value: Any, desc: bool) -> tuple[Any, ...]:
    # Numbers before strings (both directions), documents lacking the value last.
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        return (2, 0)
    if isinstance(value, (int, float)):
        return (0, -value if desc else value)
    text = str(value).lower()
    if desc:
        return (1, (*tuple(-ord(c) for c in text), 1))
    return (1, text)


def search(reader: IndexReader, request: SearchRequest, settings: dict[str, Any]) -> SearchResult:
    started = time.monotonic()
    s = Searcher(reader, settings, request)
    prefix_search = settings.get("prefixSearch", "indexingTime") != "disabled"
    parsed = parse_query(request.q, s.tokenizer, prefix_search=prefix_search)
    rules = [r for r in settings.get("rankingRules") or [] if r]
    universe = s.all_docids
    for w in parsed.negative_words:
        universe = universe - s.word_docids(w)
    for phrase in parsed.negative_phrases:
        universe = universe - s.phrase_docids(phrase)
    want = request.offset + request.limit

    if parsed.is_placeholder:
        return _placeholder(s, universe, request, rules)

    terms = [s.build_term(q) for q in parsed.terms]
    matching = MatchingWords()
    position = 0
    for t in terms:
        if t.query.phrase is not None:
            # Phrase words match only as the whole phrase (the formatter checks the sequence).
            matching.phrases.append(t.query.phrase)
            matching.ids[" ".join(t.query.phrase)] = (position, position + len(t.query.phrase) - 1)
            position += len(t.query.phrase)
            continue
        for w, c in t.costs.items():
            if t.query.is_prefix and c == 0 and w != t.query.word:
                continue  # a prefix expansion: highlighted through `prefixes`, on the prefix only
            matching.words.add(w)
            matching.ids.setdefault(w, (position, position))
        if t.query.is_prefix:
            matching.prefixes.append(t.query.word)
            matching.ids.setdefault(t.query.word, (position, position))
        position += 1
    ranker = Ranker(s, rules, terms)
    cutoff_ms = settings.get("searchCutoffMs") or DEFAULT_CUTOFF_MS
    use_words = bool(rules) and rules[0] == "words"
    use_typo = use_words and len(rules) > 1 and rules[1] == "typo"
    strategy = request.matching_strategy if use_words else "all"

    ranked: list[tuple[tuple[Any, ...], int, float, dict[str, Any]]] = []
    total = 0
    degraded = False
    for docs, kept in _words_buckets(terms, strategy, universe):
        total += len(docs)
        if len(ranked) >= want and not request.exhaustive_count:
            continue
        sub = _typo_buckets(docs, kept) if use_typo else iter([(None, docs)])
        for typos, bucket in sub:
            if len(ranked) >= want:
                break
            if (time.monotonic() - started) * 1000 > cutoff_ms:
                degraded = True
                for docid in bucket:
                    if len(ranked) >= want:
                        break
                    ranked.append(((), docid, 0.0, {"skipped": {"order": 0}}))
                continue
            scored = [ranker.score(docid, kept, typos) for docid in bucket]
            scored.sort(key=lambda x: x[0])
            threshold = request.ranking_score_threshold
            for key, score, details in scored:
                if threshold is not None and score < threshold:
                    continue
                ranked.append((key, key[-1], score, details))
    page = ranked[request.offset : want]
    return SearchResult(
        docids=[r[1] for r in page], scores=[r[2] for r in page], details=[r[3] for r in page],
        candidates=total, matching=matching, degraded=degraded,
    )


def _placeholder(s: Searcher, universe: BitMap, request: SearchRequest, rules: list[str]) -> SearchResult:
    custom = [r for r in rules if r.endswith(":asc") or r.endswith(":desc")]
    if custom:
        # Custom ranking rules order placeholder results too (sort/geo come with the filters work).
        keyed = []
        for docid in universe:
            doc = s.reader.document_by_internal_id(docid) or {}
            keyed.append((tuple(_sort_key(_lookup(doc, r.rpartition(":")[0]), r.endswith(":desc"))
                                for r in custom), docid))
        keyed.sort()
        ordered = [d for _, d in keyed]
        page = ordered[request.offset : request.offset + request.limit]
    else:
        page = list(universe[request.offset : request.offset + request.limit]) if request.limit else []
    return SearchResult(docids=page, scores=[1.0] * len(page), details=[{} for _ in page],
                        candidates=len(universe), matching=MatchingWords())
