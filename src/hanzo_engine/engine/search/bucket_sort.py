"""The bucket sort (milli's `bucket_sort.rs`): documents bucketed by the bitmap rules, then scored
one at a time on the rules after them, until the page is full.

1. Words steps (bitmaps, `ranking_rules.words`), each split by typo cost (bitmaps,
   `ranking_rules.typo`) when typo follows words.
2. Only the documents of the buckets needed for the page are scored on the remaining rules from
   the forward index (`Ranker`); each rule keeps the document's best interpretations (paths, typo
   levels) for the next one, as milli's subgraphs do. BM25 orders what every rule leaves tied,
   then the docid.
3. A large single-path bucket is keyed natively instead (`native_bucket_keys`): only its best
   documents are scored here.

Scores: each relevancy rule gives (rank, max rank) exactly as milli's `score_details.rs`, and
`_rankingScore` folds them like a mixed-radix number (`score_details.fold`); sort rules do not count.
The search cutoff is checked between buckets and every CUTOFF_CHECK_EVERY documents: what is left
unscored is appended unsorted with a `skipped` detail.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap

from .context import SearchContext
from .features import DocFeatures
from .native_bucket_keys import LEAN_MIN_DOCS, NativeBuckets
from .native_bucket_keys import MIN_DOCS as NATIVE_MIN_DOCS
from .query_graph import Combo, Node, Path, QueryGraph
from .ranking_rules import attribute_rank, bm25, exactness, proximity, sort, typo, word_position, words
from .ranking_rules.words import Step
from .score_details import ScoreDetails, fold
from .types import MatchingWords, SearchRequest, SearchResult

DEFAULT_CUTOFF_MS = 1500
CUTOFF_CHECK_EVERY = 64  # documents scored between two looks at the clock

Scored = tuple[tuple[Any, ...], float, dict[str, Any]]


@dataclass
class Bucket:
    """The documents the bitmap rules left together, with what the per-document rules need."""

    step: Step
    docids: BitMap
    paths: list[Path]
    typo: int | None  # typo cost when the typo rule split the bucket


class MergedBucket(Bucket):
    """Every step's documents together (a per-document rule comes first); each document is scored
    with its own step."""

    def __init__(self, steps: list[Step]) -> None:
        docids = BitMap()
        for st in steps:
            docids |= st.docids
        super().__init__(steps[0], docids, steps[0].paths, None)
        self.steps = steps

    def for_doc(self, docid: int) -> Bucket:
        for st in self.steps:
            if docid in st.docids:
                return Bucket(st, self.docids, st.paths, None)
        return self


def buckets(graph: QueryGraph, steps: list[Step], bitmap_words: bool, bitmap_typo: bool) -> Iterator[Bucket]:
    """The buckets of the bitmap rules, best first."""
    if not bitmap_words:
        # a per-document rule comes first: one bucket, words and typo are scored per document
        if steps:
            yield MergedBucket(steps)
        return
    for st in steps:
        if not bitmap_typo:
            yield Bucket(st, st.docids, st.paths, None)
            continue
        parts = {p: typo.costs(graph, p, st.docids & graph.path_docids(p)) for p in st.paths}
        seen = BitMap()
        for c in sorted({c for costs in parts.values() for c in costs}):
            docs = BitMap()
            good: list[Path] = []
            for p, costs in parts.items():
                part = costs.get(c)
                if part is None:
                    continue
                part = part - seen
                if part:
                    docs |= part
                    good.append(p)
            if docs:
                seen |= docs
                yield Bucket(st, docs, good, c)


class Doc(DocFeatures):
    """One document being ranked: its features, the interpretations left and its scores so far."""

    __slots__ = ("bucket", "combos", "scores")

    def __init__(self, ctx: SearchContext, docid: int, bucket: Bucket) -> None:
        super().__init__(ctx, docid)
        self.bucket = bucket
        self.combos: list[Combo] = []
        self.scores = ScoreDetails()


class Ranker:
    """Scores documents on the ranking rules after the bitmap buckets (milli's rules, one document
    at a time); `apply` runs one rule, keeping the interpretations the next rule works with."""

    def __init__(
        self, ctx: SearchContext, graph: QueryGraph, rules: list[str], words_max: int, typo_bucketed: bool
    ) -> None:
        self.s = ctx
        self.g = graph
        self.rules = rules
        self.words_max = words_max
        self.typo_bucketed = typo_bucketed
        displayed = ctx.settings.get("displayedAttributes") or ["*"]
        self.displayed = None if displayed == ["*"] else set(displayed)

    def start(self, docid: int, bucket: Bucket) -> Doc:
        """The document with its interpretations: the paths of its bucket it matches, each node at
        the typo level the typo bucket chose (any level when the typo rule did not bucket)."""
        g = self.g
        doc = Doc(self.s, docid, bucket)
        for path in bucket.paths:
            if bucket.typo is None:
                if all(docid in g.nodes[i].docids for i in path):
                    doc.combos.append((path, None))
                continue
            levels = tuple(g.nodes[i].level_of(docid) for i in path)
            if (
                min(levels, default=0) >= 0
                and sum(lv + g.nodes[i].typo_base for i, lv in zip(path, levels, strict=True)) == bucket.typo
            ):
                doc.combos.append((path, levels))
        if not doc.combos:  # cannot happen for a document of the bucket; keep the scoring total anyway
            doc.combos = [(p, None) for p in bucket.paths[:1]]
        return doc

    @staticmethod
    def _best(doc: Doc, values: list[tuple[Any, Combo]]) -> Any:
        """Keeps the interpretations scoring best on this rule (the next rule's subgraph)."""
        best = min(v for v, _ in values)
        doc.combos = [c for v, c in values if v == best]
        return best

    def apply(self, doc: Doc, rule: str) -> None:
        """Scores `doc` on `rule`: the rule's module computes its value and its score."""
        s, g = self.s, self.g
        step = doc.bucket.step
        scores = doc.scores
        if rule == "words":
            scores.add(rule, words.details(self.words_max - step.k, self.words_max))
        elif rule == "typo":
            if doc.bucket.typo is not None and self.typo_bucketed:
                typos = doc.bucket.typo
            else:
                typos = self._best(doc, [(typo.cost(g, doc.docid, c), c) for c in doc.combos])
                doc.combos = [(p, tuple(g.nodes[i].level_of(doc.docid) for i in p)) for p, _ in doc.combos]
            scores.add(rule, typo.details(typos, step.max_typo))
        elif rule == "proximity":
            cost = self._best(doc, [(proximity.cost(doc, g, c), c) for c in doc.combos])
            scores.add(rule, proximity.details(cost, proximity.top(g, doc.bucket.paths)))
        elif rule in ("attribute", "attributeRank"):
            fid_cost = self._best(doc, [(attribute_rank.cost(doc, g, c), c) for c in doc.combos])
            fid_top = attribute_rank.top(s, g, doc.bucket.paths)
            if rule == "attributeRank":
                scores.add(rule, attribute_rank.details(fid_cost, fid_top))
            else:
                pos_cost = self._best(doc, [(word_position.cost(doc, g, c), c) for c in doc.combos])
                scores.add(
                    rule,
                    attribute_rank.attribute_details(
                        fid_cost, fid_top, pos_cost, word_position.top(g, doc.bucket.paths)
                    ),
                )
        elif rule == "wordPosition":
            pos_cost = self._best(doc, [(word_position.cost(doc, g, c), c) for c in doc.combos])
            scores.add(rule, word_position.details(pos_cost, word_position.top(g, doc.bucket.paths)))
        elif rule == "exactness":
            er = exactness.exact_attribute(doc, g, doc.combos)
            exact = self._best(doc, [(-exactness.exact_words(g, doc.docid, c)[0], c) for c in doc.combos])
            scores.add(rule, exactness.details(er, -exact, g.covered(doc.combos[0][0])))
            # the rules after exactness see only the exact word of the terms matched exactly
            doc.combos = [(p, exactness.exact_levels(g, doc.docid, p, lv)) for p, lv in doc.combos]
        elif rule == "bm25":
            scores.add(rule, bm25.details(self._bm25(doc)))
        elif rule.endswith((":asc", ":desc")) and s.request.ordering is not None:
            scores.sort(*s.request.ordering.rule_key(doc.docid, rule, scores.order))
        elif rule.endswith((":asc", ":desc")):
            if doc.document is None:
                doc.document = s.reader.document_by_internal_id(doc.docid) or {}
            sort_key, value = sort.sort_value(doc.document, rule)
            scores.sort(sort_key, sort.sort_detail(rule, scores.order, value, self.displayed))

    def score(self, docid: int, bucket: Bucket) -> Scored:
        """(sort key, ranking score, score details) of the document on every rule, then BM25."""
        doc = self.start(docid, bucket)
        for rule in self.rules:
            self.apply(doc, rule)
        raw = doc.scores.details["bm25"]["value"] if "bm25" in doc.scores.details else self._bm25(doc)
        return doc.scores.finish(raw, docid)

    def _bm25(self, doc: Doc) -> float:
        postings = doc.postings()
        return bm25.score(self.s, doc.lengths, postings, self.bm25_nodes(doc.bucket.step))

    def bm25_nodes(self, step: Step) -> list[Node]:
        """The term nodes BM25 sums over in a words step: those the step did not remove."""
        return [n for i, n in enumerate(self.g.nodes) if n.length == 1 and i not in step.removed]


def prefix_ranks(
    bucket: Bucket, pipeline: list[str], bitmap_words: bool, bitmap_typo: bool, words_max: int
) -> list[tuple[int, int]]:
    """The ranks the bitmap rules gave the whole bucket (an upper bound of its documents' scores)."""
    ranks: list[tuple[int, int]] = []
    if bitmap_words:
        ranks.append((words_max - bucket.step.k, words_max))
    if bitmap_typo and bucket.typo is not None:
        m = bucket.step.max_typo + 1
        ranks.append((max(m - bucket.typo, 0), m))
    return ranks


def score_until(ranker: Ranker, bucket: Bucket, deadline: float) -> tuple[list[Scored], BitMap]:
    """The bucket's documents scored and sorted until `deadline` (time.monotonic), and the ones left
    unscored: a single bucket can hold most of the index (`t`, a one-letter prefix), so the search
    cutoff is checked every `CUTOFF_CHECK_EVERY` documents, not only between buckets."""
    scored = []
    rest = BitMap()
    merged = bucket if isinstance(bucket, MergedBucket) else None
    for n, d in enumerate(bucket.docids):
        if n % CUTOFF_CHECK_EVERY == 0 and n and time.monotonic() > deadline:
            rest = BitMap(bucket.docids[n:])
            break
        scored.append(ranker.score(d, merged.for_doc(d) if merged is not None else bucket))
    scored.sort(key=lambda x: x[0])
    return scored, rest


def skip(
    bucket: Bucket, ranked: list[Any], want: int, pipeline: list[str], ranks: list[tuple[int, int]]
) -> None:
    """Search cutoff: the bucket's documents unsorted, with a `skipped` detail after the known ones."""
    details: dict[str, Any] = {}
    order = 0
    if ranks and pipeline and pipeline[0] == "words":
        r, m = ranks[0]
        details["words"] = {"order": 0, "matchingWords": r, "maxMatchingWords": m, "score": r / m}
        order = 1
        if len(ranks) > 1:
            r, m = ranks[1]
            details["typo"] = {"order": 1, "typoCount": bucket.typo, "maxTypoCount": m - 1, "score": r / m}
            order = 2
    details["skipped"] = {"order": order}
    score = fold([*ranks, (0, 1)])
    for docid in bucket.docids:
        if len(ranked) >= want:
            break
        ranked.append((docid, score, dict(details)))


def bucket_sort(
    ctx: SearchContext,
    graph: QueryGraph,
    request: SearchRequest,
    pipeline: list[str],
    strategy: str,
    universe: BitMap,
    started: float,
) -> SearchResult:
    """The page of a keyword search over `universe` by the rules of `pipeline` (`effective_rules`),
    its matching words left empty; `started` (time.monotonic) is when the search began, for
    `searchCutoffMs`."""
    ordering = request.ordering  # sort rules and distinct (`sorting.Ordering`)
    groups = graph.groups(strategy)
    words_max = words.max_rank(graph, groups)
    steps = words.steps(graph, groups, universe)
    bitmap_words = bool(pipeline) and pipeline[0] == "words"
    lead = 1 if bitmap_words else 0
    bitmap_typo = len(pipeline) > lead and pipeline[lead] == "typo"
    ranker = Ranker(ctx, graph, pipeline, words_max, bitmap_typo)
    cutoff = ctx.settings.get("searchCutoffMs")
    cutoff_ms = DEFAULT_CUTOFF_MS if cutoff is None else cutoff  # 0 is a valid (immediate) budget
    threshold = request.ranking_score_threshold
    want = request.offset + request.limit

    ranked: list[tuple[int, float, dict[str, Any]]] = []
    total = sum(len(st.docids) for st in steps)
    dropped = BitMap()  # below the ranking score threshold: not candidates
    distinct = ordering.distinct if ordering is not None else None
    degraded = False
    exhaustive = request.exhaustive_count and threshold is not None  # every hit must be scored to count
    # nobody reads the scores: a bucket's documents are only put in order (no details, no score)
    lean = not request.scores_needed and threshold is None
    native_min_docs = min(NATIVE_MIN_DOCS, LEAN_MIN_DOCS) if lean else NATIVE_MIN_DOCS
    # large single-path buckets are keyed natively; only their best documents are scored here
    native = (
        NativeBuckets(ctx, graph.nodes, pipeline[2:], bm25.LEVELS, bm25.HALF, lean=lean)
        if bitmap_words
        and bitmap_typo
        and threshold is None
        and distinct is None
        and NativeBuckets.applicable(pipeline[2:], ordering)
        else None
    )
    for bucket in buckets(graph, steps, bitmap_words, bitmap_typo):
        if len(ranked) >= want and not exhaustive:
            break
        ranks = prefix_ranks(bucket, pipeline, bitmap_words, bitmap_typo, words_max)
        if threshold is not None and fold(ranks) < threshold:
            total -= len(bucket.docids)  # every document of the bucket scores at most this
            dropped |= bucket.docids
            continue
        if (time.monotonic() - started) * 1000 > cutoff_ms:
            degraded = True
            skip(bucket, ranked, want, pipeline, ranks)
            continue
        deadline = started + cutoff_ms / 1000
        bq = None
        if (
            native is not None
            and bucket.typo is not None
            and len(bucket.paths) == 1
            and len(bucket.docids) >= native_min_docs
        ):
            bm25_terms = tuple(
                i for i, n in enumerate(graph.nodes) if n.length == 1 and i not in bucket.step.removed
            )
            bq = native.query(bucket.paths[0], bm25_terms)
        if native is not None and bq is not None and bucket.typo is not None:
            level = bucket.typo - sum(graph.nodes[i].typo_base for i in bucket.paths[0])
            best, rest = native.best(
                bq, bm25_terms, bucket.paths[0], level, bucket.docids, want - len(ranked), deadline
            )
            scored = (
                [((docid,), 0.0, {}) for docid, _, _ in best] if lean else native.scored(ranker, bucket, best)
            )
        elif lean and len(bucket.docids) == 1:
            scored, rest = [((bucket.docids.min(),), 0.0, {})], BitMap()
        else:
            # every document of the bucket is scored on all the rules, one at a time (keeping only its
            # key and details: holding decoded forward entries for a large bucket costs more than it saves)
            scored, rest = score_until(ranker, bucket, deadline)
        for key, score, details in scored:
            if threshold is not None and score < threshold:
                total -= 1
                dropped.add(key[-1])
                continue
            if distinct is not None and not distinct.admit(key[-1]):
                continue
            ranked.append((key[-1], score, details))
            if len(ranked) >= want and not exhaustive:
                break
        if rest:
            # the budget ran out inside the bucket: what was scored is sorted, the rest is skipped
            degraded = True
            skip(Bucket(bucket.step, rest, bucket.paths, bucket.typo), ranked, want, pipeline, ranks)
    if native is not None:
        native.release()  # (after an exception its queries are just not shared: rebuilt next time)
    page = ranked[request.offset : want]
    candidates = BitMap.union(*(st.docids for st in steps)) - dropped if steps else BitMap()
    if distinct is not None:
        candidates = (
            distinct.remaining(candidates) if request.exhaustive_count else candidates - distinct.excluded
        )
        total = len(candidates)
    return SearchResult(
        docids=[r[0] for r in page],
        scores=[r[1] for r in page],
        details=[r[2] for r in page],
        candidates=total,
        matching=MatchingWords(),
        degraded=degraded,
        all_candidates=candidates,
    )
