"""Native keys for a whole bucket: the bucket sort's fast path, only the best documents scored in Python.

`bucket_sort.Ranker` scores a document on the rules after words and typo one at a time in Python; a
bucket of a common word holds tens of thousands of documents. When every rule left is one the native
keyer implements (each rule module's `NATIVE_CODE`: proximity, attribute rank, word position,
exactness, bm25, field sort rules) and the bucket has one path of word nodes (derivations: words,
split words, synonyms), `_native.bucket.BucketQuery` computes the same sort keys for every document
from the raw forward entries (one LMDB get and one in-place parse each), and
`ranking_rules.bm25.BM25Scorer` the BM25 tie-break (only for the documents at the page's cut and its
ties, unless a `bm25` rule needs it for all), the same float `ranking_rules.bm25.score` computes. For
the best documents the page needs by those keys, the score details are rebuilt from the native keys
and BM25 by the same rule modules `Ranker.apply` uses: the page is exactly the Python ranker's as
long as the native keys agree with it (tests/property/test_fast_bucket_props.py compares both on
random corpora).

Not taken (the caller scores per document): a bucket without a typo split, several paths (ngrams),
quoted phrases, geo sort rules, `distinct`, a ranking score threshold.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, NamedTuple

import numpy as np
from pyroaring import BitMap

from hanzo_engine._native.bucket import BucketQuery
from hanzo_engine._native.bucket_rows import order_rows, rank_rows

from .context import SearchContext
from .forward_cache import forward_entries
from .native_prefilter import Prefilter, key_width
from .plan_cache import BUCKET_QUERIES
from .query_graph import Node, Path, alts_key
from .ranking_rules import attribute_rank, bm25, exactness, proximity, sort, typo, word_position, words
from .ranking_rules.bm25 import BM25Scorer, FieldArrays, field_arrays
from .score_details import ScoreDetails, cost_score
from .sorting import Ordering

# the rules `_native/bucket.pyx` keys (its R_* codes)
RULE_CODES = {
    "proximity": proximity.NATIVE_CODE,
    "attributeRank": attribute_rank.NATIVE_CODE,
    "attribute": attribute_rank.ATTRIBUTE_NATIVE_CODE,
    "wordPosition": word_position.NATIVE_CODE,
    "exactness": exactness.NATIVE_CODE,
    "bm25": bm25.NATIVE_CODE,
}
MIN_DOCS = 8  # smaller buckets are scored in Python directly (the native query costs more than they do)
# ... unless nobody reads the scores: without rebuilding the score details, the native keys cost less
# than the Python ranker from two documents on (a single document needs no ranking at all)
LEAN_MIN_DOCS = 2
CHUNK = 16_384  # documents keyed between two looks at the clock
PREFILTER_MIN = 256  # from this size, a one-node bucket is first narrowed by its first words
WALK_MIN = 20_000  # from this size, a bucket is put in sort order by walking the field's values
WALK_SHARE = 16  # ... until the walk has covered this fraction (1/WALK_SHARE) of it
S_EXACT, S_RAW = 3, 4  # BucketQuery's node sets past the typo levels
MAX_SLOTS = 8  # bucket.pyx's MAX_SLOTS

Scored = tuple[tuple[Any, ...], float, dict[str, Any]]
Pick = tuple[int, list[int], float]  # docid, native keys, raw BM25
SORT_CODE = sort.NATIVE_CODE  # a field sort rule: BucketQuery leaves its column to `_select`


def _supported(node: Node) -> bool:
    """A word or ngram node whose derivations are words or phrase-like word sequences (split words,
    synonyms) of at most MAX_SLOTS words, without the `None` slots of quoted stop words."""
    return (
        node.kind != "phrase"
        and len(node.alts) <= 3
        and all(len(alt.words) <= MAX_SLOTS and None not in alt.words for level in node.alts for alt in level)
    )


def _sorted_slices(ordering: Ordering, rule: str, docs: BitMap, first: int) -> Iterator[BitMap]:
    """`docs` in the order of the field sort `rule`, as successive slices of about `first`, then four
    times the previous slice; the ties of a slice's last key stay in that slice.

    A bucket of more than WALK_MIN documents gets its first slices by walking the field's values in
    order, in runs of consecutive values holding at most a quarter of the first slice (facet level
    groups: a bitmap operation per run, never one per value), which never looks at the
    documents past them, as long as the walk has covered less than 1/WALK_SHARE of the bucket; the
    rest (or a smaller bucket) gets its sort keys at once (`rank_column`, vectorized), each slice cut by a partition at the slice's last key."""
    target = first
    if len(docs) > WALK_MIN:
        walked, limit = 0, max(len(docs) // WALK_SHARE, 1)
        # runs of values of at most a quarter slice: a bitmap per run, not per value
        values = ordering.parts_in_order(docs, rule, coarse=max(first // 4, 1))
        while walked < limit:
            batch = BitMap()
            for part in values:
                batch |= part
                if len(batch) >= target:
                    break
            if not batch:
                return
            yield batch
            walked += len(batch)
            docs = docs - batch
            target *= 4
        if not docs:
            return
    docids = np.frombuffer(docs.to_array(), dtype=np.uint32).astype(np.int64)
    column = ordering.rank_column(rule, docids)
    assert column is not None
    low: int | None = None  # the previous slice's last key: slices hold keys in (low, cut]
    while True:
        remaining = column if low is None else column[column > low]
        if not len(remaining):
            return
        if target >= len(remaining):
            cut = int(remaining.max())
        else:
            cut = int(np.partition(remaining, target - 1)[target - 1])
        inside = column <= cut if low is None else (column > low) & (column <= cut)
        yield BitMap(docids[inside].tolist())
        low = cut
        target = 4 * target


class Keyed(NamedTuple):
    """Native keys (documents x columns), raw BM25 (NaN where not computed yet) and docids of keyed
    documents, the documents left unkeyed when the deadline passed, and the forward entries of the
    keyed documents (for BM25 computed later)."""

    key: np.ndarray
    raw: np.ndarray
    docids: np.ndarray
    rest: BitMap
    entries: list[bytes | None]

    def reaching(self, best: list[int]) -> int:
        """How many documents have exactly `best` as their leading keys."""
        return int(np.all(self.key[:, : len(best)] == np.array(best, dtype=np.int32), axis=1).sum())

    def reaching_exact(self, best: list[int], match: int = -2) -> int:
        """How many documents have exactly `best` as their leading keys and then an exact attribute
        match of `match` or better (exactness's first column: -3 `exactMatch`, -2 `matchesStart`,
        -1 neither)."""
        col = len(best)
        lead = np.all(self.key[:, :col] == np.array(best, dtype=np.int32), axis=1)
        return int((lead & (self.key[:, col] <= match)).sum())

    @staticmethod
    def join(parts: list[Keyed]) -> Keyed:
        rest = BitMap()
        for part in parts:
            rest |= part.rest
        return Keyed(
            np.concatenate([p.key for p in parts]),
            np.concatenate([p.raw for p in parts]),
            np.concatenate([p.docids for p in parts]),
            rest,
            [e for p in parts for e in p.entries],
        )


class NativeBuckets:
    """Per search: which buckets the native keyer can take, and their best documents."""

    def __init__(
        self,
        s: SearchContext,
        nodes: list[Node],
        rules: list[str],
        levels: int,
        half: float,
        *,
        lean: bool = False,
    ) -> None:
        self.s = s
        self.lean = lean  # nobody reads the picks' scores: BM25 only where it breaks a tie
        self.nodes = nodes
        self.rules = rules
        self.codes = [RULE_CODES.get(r, SORT_CODE) for r in rules]
        self.levels = levels
        self.half = half
        self._scorers: dict[tuple[int, ...], BM25Scorer] = {}
        self._queries: dict[Path, BucketQuery | None] = {}
        self._fields: FieldArrays | None = None
        self._taken: list[tuple[Any, BucketQuery]] = []
        self.prefilter = Prefilter(s, nodes, self.codes)

    @staticmethod
    def applicable(rules: list[str], ordering: Ordering | None = None) -> bool:
        """Whether the native keyer implements every rule (field sort rules: through `ordering`)."""
        return all(
            r in RULE_CODES
            or (ordering is not None and r.endswith((":asc", ":desc")) and ordering.rule(r).point is None)
            for r in rules
        )

    def query(self, path: Path, bm25_terms: tuple[int, ...]) -> BucketQuery | None:
        """The native query of a single-path bucket (BM25 over the nodes `bm25_terms`), or None
        when the keyer cannot take it."""
        del bm25_terms  # `BM25Scorer` rescores the documents of phrase-like derivations itself
        if path not in self._queries:
            self._queries[path] = self._build(path)
        return self._queries[path]

    def _build(self, path: Path) -> BucketQuery | None:
        """The native query of `path`: from the shared cache when an earlier search built it from
        the same inputs (`plan_cache`), taken out of it until `release`."""
        s = self.s
        nodes = [self.nodes[i] for i in path]
        if not nodes or len(nodes) > 64 or not all(_supported(n) for n in nodes):
            return None
        if self._fields is None:
            self._fields = field_arrays(s)
        allowed, allowed_tol, _, _ = self._fields
        key = (
            tuple((alts_key(n), n.exact, n.qstart, n.qend, n.first, n.last) for n in nodes),
            tuple(self.codes),
            allowed.tobytes(),
            allowed_tol.tobytes(),
            tuple(sorted(s.weight.items())),
            s.max_weight,
            s.by_attribute,
        )
        bq = BUCKET_QUERIES.take(key)
        if bq is None:
            bq = self._new_query(nodes, allowed, allowed_tol)
        self._taken.append((key, bq))
        return bq

    def release(self) -> None:
        """Puts the native queries this search took back in the shared cache (the search is over)."""
        for key, bq in self._taken:
            BUCKET_QUERIES.put(key, bq)
        self._taken.clear()

    def _new_query(self, nodes: list[Node], allowed: np.ndarray, allowed_tol: np.ndarray) -> BucketQuery:
        s = self.s
        entries: dict[bytes, set[tuple[int, int, bool, bool, int, int]]] = {}
        phrases: list[tuple[int, int, int]] = []
        spec: list[tuple[int, int, int, int, bool, bool]] = []
        prev: Node | None = None
        for k, node in enumerate(nodes):
            for level, alts in enumerate(node.alts):
                for alt in alts:
                    if len(alt.words) == 1:
                        word = alt.words[0]
                        assert word is not None
                        entries.setdefault(word.encode(), set()).add(
                            (k, level, alt.tolerant, alt.phrase, -1, 0)
                        )
                        continue
                    for slot, word in enumerate(alt.words):
                        assert word is not None
                        entries.setdefault(word.encode(), set()).add(
                            (k, level, alt.tolerant, True, len(phrases), slot)
                        )
                    phrases.append((k, level, len(alt.words)))
            exact = node.exact
            if exact is not None:
                word = exact.words[0]
                assert word is not None and len(exact.words) == 1
                entries.setdefault(word.encode(), set()).add(
                    (k, S_EXACT, exact.tolerant, exact.phrase, -1, 0)
                )
                entries[word.encode()].add((k, S_RAW, False, False, -1, 0))
            contiguous = prev is not None and prev.qend + 1 == node.qstart
            spec.append(
                (
                    node.qstart,
                    node.length,
                    node.first,
                    node.qend - node.qstart + 1,
                    contiguous,
                    exact is not None,
                )
            )
            prev = node
        weight = np.full(len(allowed), -1, dtype=np.int32)
        for fid, w in s.weight.items():
            if fid < len(weight):
                weight[fid] = w
        words = sorted(entries)
        return BucketQuery(
            words,
            [sorted(entries[w]) for w in words],
            phrases,
            spec,
            self.codes,
            allowed,
            allowed_tol,
            weight,
            s.max_weight,
            s.by_attribute,
        )

    def best(
        self,
        bq: BucketQuery,
        bm25_terms: tuple[int, ...],
        path: Path,
        level: int,
        docs: BitMap,
        want: int,
        deadline: float,
    ) -> tuple[list[Pick], BitMap]:
        """(docid, native keys, raw BM25) of the best `want` documents of `docs` (a bucket of `path`
        whose node(s) matched at typo `level`) by the native keys, best first; and the documents left
        unkeyed when `deadline` (time.monotonic) passed.

        A large bucket is first narrowed to the documents that may reach the best keys: in the order of
        its first sort rule when only proximity and attribute rank come before it (`_sorted_scan`),
        or to nested tiers from the first/second/sole-word keys (`native_prefilter.Prefilter`), keyed
        narrowest first: the documents where a field starts with the first query word
        (`first_words`), with the first two adjacent (`first_pairs`), then those that may have an
        exact attribute match when exactness follows (`exact_starts`). Once enough documents of a tier
        reach keys no document outside it can reach, the rest is never read.
        """
        if len(docs) >= PREFILTER_MIN:
            scanned = self._sorted_scan(bq, bm25_terms, path, docs, want, deadline)
            if scanned is not None:
                return self._select(scanned, want, bm25_terms), BitMap()
        # nested tiers, narrowest first, each with how to tell that enough of its documents reach
        # keys no document outside it can reach (the last tier is the whole bucket)
        tiers: list[tuple[BitMap, Callable[[Keyed], int] | None]] = []
        if len(docs) >= PREFILTER_MIN:
            first = self.prefilter.first_words(path, level, docs)
            if first is not None and len(first[0]) >= want:
                subset, best_prefix = first
                # every document reaching the best keys is in `pairs` when the path's first two nodes
                # must be adjacent at the start of a field: the subset past it cannot help
                pairs = self.prefilter.first_pairs(path, subset)
                inner = subset if pairs is None else pairs
                exact = self.prefilter.exact_starts(path, level, inner, len(best_prefix))
                if exact is not None:
                    sole, starts = exact
                    if sole is not None and want <= len(sole) < len(starts):
                        tiers.append((sole, partial(Keyed.reaching_exact, best=best_prefix, match=-3)))
                    if want <= len(starts) < len(inner):
                        tiers.append((starts, partial(Keyed.reaching_exact, best=best_prefix)))
                if len(inner) >= want:
                    tiers.append((inner, partial(Keyed.reaching, best=best_prefix)))
            if self.prefilter.adjacency_needed(path, (RULE_CODES["proximity"],)):
                # proximity first: every document with the best proximity has the first two nodes
                # adjacent (with the tiers before, to keep them nested)
                adjacent = self.prefilter.adjacent(path, docs)
                if adjacent is not None:
                    if tiers:
                        adjacent |= tiers[-1][0]
                    if want <= len(adjacent) < len(docs):
                        proximity = [sum(self.nodes[i].length - 1 for i in path)]
                        tiers.append((adjacent, partial(Keyed.reaching, best=proximity)))
        tiers.append((docs, None))
        parts: list[Keyed] = []
        covered = BitMap()
        for tier, reaching in tiers:
            parts.append(self._key(bq, bm25_terms, tier - covered if covered else tier, deadline))
            covered = tier
            keyed = Keyed.join(parts) if len(parts) > 1 else parts[0]
            if keyed.rest or reaching is None or reaching(keyed) >= want:
                break
        return self._select(keyed, want, bm25_terms), keyed.rest

    def _sorted_scan(
        self,
        bq: BucketQuery,
        bm25_terms: tuple[int, ...],
        path: Path,
        docs: BitMap,
        want: int,
        deadline: float,
    ) -> Keyed | None:
        """The keys of the documents of `docs` up to a cut in the order of the first field sort rule,
        when the only rules before it are proximity and attribute rank with one searched weight; None
        when the rules do not allow it or the deadline passed.

        Those rules are at best Σ (ngram length - 1) (every pair of consecutive words adjacent) and
        the searched weight. Documents are keyed in sort order, in growing slices (ties of the sort
        key at a slice's end kept), until `want` of them reach those best keys: a document after the
        cut either misses them or sorts after every one of them, so it cannot rank before them."""
        s = self.s
        ordering = s.request.ordering
        if ordering is None:
            return None
        weights = {s.weight[f] for f in s.searched}
        best: list[int] = []
        sort_rule: str | None = None
        for rule, code in zip(self.rules, self.codes, strict=True):
            if code == RULE_CODES["proximity"]:
                best.append(sum(self.nodes[i].length - 1 for i in path))
            elif code == RULE_CODES["attributeRank"] and len(weights) <= 1:
                best.append(min(weights, default=0) * sum(self.nodes[i].length for i in path))
            elif code == SORT_CODE:
                sort_rule = rule
                break
            else:
                return None
        if sort_rule is None:
            return None
        if ordering.rule(sort_rule).point is not None:
            return None
        # when the best proximity needs the first two nodes adjacent, only the documents where they
        # can be are scanned: if fewer than `want` of those reach the best keys, no other document
        # can, and the page needs the keys of the whole bucket (the rest keyed at once)
        scope = docs
        if self.prefilter.adjacency_needed(path, (RULE_CODES["proximity"], RULE_CODES["attributeRank"])):
            adjacent = self.prefilter.adjacent(path, docs)
            if adjacent is not None and len(adjacent) < len(docs):
                scope = adjacent
        parts: list[Keyed] = []
        reached = 0
        for batch in _sorted_slices(ordering, sort_rule, scope, 4 * want):
            part = self._key(bq, bm25_terms, batch, deadline)
            if part.rest:
                return None
            parts.append(part)
            reached += part.reaching(best)
            if reached >= want:
                return Keyed.join(parts)
        if scope is not docs:
            part = self._key(bq, bm25_terms, docs - scope, deadline)
            if part.rest:
                return None
            parts.append(part)
        return Keyed.join(parts) if parts else None

    def _scorer(self, bm25_terms: tuple[int, ...]) -> BM25Scorer:
        scorer = self._scorers.get(bm25_terms)
        if scorer is None:
            scorer = self._scorers[bm25_terms] = BM25Scorer(self.s, [self.nodes[i] for i in bm25_terms])
        return scorer

    def _key(self, bq: BucketQuery, bm25_terms: tuple[int, ...], docs: BitMap, deadline: float) -> Keyed:
        """The native keys of `docs`, chunk by chunk until `deadline`; their raw BM25 too when a `bm25`
        rule needs it for every document (else `_select` computes it for the documents at its cut)."""
        scorer = self._scorer(bm25_terms) if RULE_CODES["bm25"] in self.codes else None
        n = len(docs)
        if not n:
            return Keyed(
                np.empty((0, max(bq.n_cols, 1)), dtype=np.int32),
                np.empty(0),
                np.empty(0, dtype=np.int64),
                BitMap(),
                [],
            )
        parts: list[Keyed] = []
        for start in range(0, n, CHUNK):
            if start and time.monotonic() > deadline:
                parts.append(parts.pop()._replace(rest=BitMap(docs[start:])))
                break
            chunk = BitMap(docs[start : start + CHUNK]) if n > CHUNK else docs
            entries = forward_entries(self.s.reader, chunk)
            raw = (
                scorer.score_entries(chunk, entries) if scorer is not None else np.full(len(entries), np.nan)
            )
            parts.append(
                Keyed(
                    bq.keys(entries),
                    raw,
                    np.frombuffer(chunk.to_array(), dtype=np.uint32).astype(np.int64),
                    BitMap(),
                    entries,
                )
            )
        return Keyed.join(parts) if len(parts) > 1 else parts[0]

    def _select(self, keyed: Keyed, want: int, bm25_terms: tuple[int, ...]) -> list[Pick]:
        """The best `want` of `keyed` by the rules' keys, then BM25, then docid (`rank_rows`). BM25
        only breaks ties: without a `bm25` rule it is computed for the picked documents that share
        all their keys with another one (the ties of the want-th included), no other can move."""
        key, raw, docids, _, entries = keyed
        cols = key.astype(np.int64)
        col = 0
        for rule, code in zip(self.rules, self.codes, strict=True):
            if code == RULE_CODES["bm25"]:
                norm = raw / (raw + self.half)
                cols[:, col] = -(1 + np.rint(norm * (self.levels - 1))).astype(np.int64)
            elif code == SORT_CODE:
                ordering = self.s.request.ordering
                assert ordering is not None
                sort_keys = ordering.rank_column(rule, docids)
                assert sort_keys is not None
                cols[:, col] = sort_keys
            col += key_width(code)
        rows, tied = rank_rows(cols, docids, want)
        # the score details need every picked document's BM25 (their sort key ends with it)
        needs = rows if not self.lean else rows[tied]
        if not len(needs):
            order = rows[:want]
        else:
            todo = needs[np.isnan(raw[needs])]
            if len(todo):
                todo = todo[np.argsort(docids[todo], kind="stable")]
                raw = raw.copy()
                raw[todo] = self._scorer(bm25_terms).score_entries(
                    BitMap(docids[todo].tolist()), [entries[i] for i in todo.tolist()]
                )
            order = order_rows(cols, raw, docids, rows, want)
        return list(zip(docids[order].tolist(), key[order].tolist(), raw[order].tolist(), strict=True))

    def scored(self, ranker: Any, bucket: Any, picks: list[Pick]) -> list[Scored]:
        """What `ranker.score` gives the picked documents of `bucket` (`bucket_sort.Ranker`,
        `bucket_sort.Bucket`), sorted: the native keys are the rules' values, turned into details and
        ranks by the rule modules the ranker uses; the native BM25 is the float
        `ranking_rules.bm25.score` computes, so ties and rounding are exactly the Python ranker's."""
        s = self.s
        g = ranker.g
        step = bucket.step
        path = bucket.paths[0]
        covered = g.covered(path)
        fid_top = attribute_rank.top(s, g, [path])
        pos_top = word_position.top(g, [path])
        tops = {"proximity": proximity.top(g, [path]), "attributeRank": fid_top, "wordPosition": pos_top}
        out: list[Scored] = []
        for docid, row, raw in picks:
            scores = ScoreDetails()
            values = iter(row)
            for rule in ranker.rules:
                if rule == "words":
                    scores.add(rule, words.details(ranker.words_max - step.k, ranker.words_max))
                elif rule == "typo":
                    scores.add(rule, typo.details(bucket.typo, step.max_typo))
                elif rule in tops:  # proximity, attributeRank, wordPosition: a cost
                    scores.add(rule, cost_score(next(values), tops[rule]))
                elif rule == "attribute":
                    scores.add(
                        rule, attribute_rank.attribute_details(next(values), fid_top, next(values), pos_top)
                    )
                elif rule == "exactness":
                    scores.add(rule, exactness.details(-next(values), -next(values), covered))
                elif rule == "bm25":
                    next(values)  # a placeholder column: the rank comes from `raw`
                    scores.add(rule, bm25.details(raw))
                else:  # a field sort rule
                    next(values)
                    ordering = s.request.ordering
                    assert ordering is not None
                    scores.sort(*ordering.rule_key(docid, rule, scores.order))
            out.append(scores.finish(raw, docid))
        out.sort(key=lambda x: x[0])
        return out
