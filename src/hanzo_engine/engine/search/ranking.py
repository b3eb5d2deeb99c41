"""The bucket sort and the ranking score (see `engine.py` for the query graph it works on).

Ranking rules run as milli's (`search/new/mod.rs`): `words` is inserted before the first of typo,
proximity, attribute(Rank), wordPosition, exactness (not `bm25`, ours), unless the matching strategy is
`all` (then there is no words rule at all); `sort` is a no-op until the request may sort.

1. Words steps (bitmaps): step k removes the first k removal groups of the matching strategy
   (`last`: terms from the end; `frequency`: most frequent terms first; ties removed together;
   phrases never; the first group is kept unless a phrase is mandatory). A document belongs to the
   first step it matches: its words rank is `max - k`, where max counts the words of phrases.
2. Typo buckets (bitmaps) split a words step by the cheapest path cost: typo level of each node,
   plus 2 per 2-gram and 3 per 3-gram; the max is over the paths of the step.
3. Only the documents of the buckets needed for the page are scored on the remaining rules from
   the forward index; each rule keeps the document's best interpretations (paths, typo levels) for
   the next one, as milli's subgraphs do. BM25 orders what every rule leaves tied, then the docid.

Scores: each relevancy rule gives (rank, max rank) exactly as milli's `score_details.rs`, and
`_rankingScore` folds them like a mixed-radix number (`Rank::global_score`); sort rules do not count.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap

from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.update.indexer import read_forward

from .disjunctive import bm25_first_page
from .engine import (
    EXACT,
    MAX_COUNTED_WORDS,
    MAX_DISTANCE,
    Node,
    Path,
    Searcher,
    alts_key,
    bucketed_position,
    fold,
    position_cost,
    sort_detail,
    sort_value,
)
from .fast_bucket import MIN_DOCS as FAST_MIN_DOCS
from .fast_bucket import FastBuckets
from .plan_cache import MATCHING
from .query import MAX_TERMS, MAX_TERMS_BM25, parse_query
from .rule_scores import BM25_HALF, BM25_LEVELS, RuleScores
from .types import MatchingWords, SearchRequest, SearchResult

GRAPH_RULES = ("typo", "proximity", "attribute", "attributeRank", "wordPosition", "exactness")
DEFAULT_CUTOFF_MS = 1500
CUTOFF_CHECK_EVERY = 64  # documents scored between two looks at the clock (~10 ms at 1M documents)

Combo = tuple[Path, tuple[int, ...] | None]  # a path and its nodes' typo levels (None: any level)


def effective_rules(rules: list[str], strategy: str, sort_rules: list[str] | None = None) -> list[str]:
    """The rule pipeline milli builds from the settings (`get_ranking_rules_for_query_graph_search`);
    `sort` stands for the request's sort rules (`sorting.Ordering.sort_names`)."""
    words = strategy == "all"
    out: list[str] = []
    sorted_fields: set[str] = set()
    for rule in rules:
        if rule in GRAPH_RULES and not words:
            out.append("words")
            words = True
        if rule == "words":
            if not words:
                out.append(rule)
                words = True
            continue
        if rule == "sort":
            for name in sort_rules or ():
                field = "\0geo" if name.startswith("_geoPoint(") else name.rpartition(":")[0]
                if field not in sorted_fields:
                    sorted_fields.add(field)
                    out.append(name)
            continue
        if rule.endswith((":asc", ":desc")):
            name = rule.rpartition(":")[0]
            if name in sorted_fields:
                continue
            sorted_fields.add(name)
        elif rule in out or (rule == "attribute" and ("attributeRank" in out or "wordPosition" in out)):
            continue
        out.append(rule)
    return out


# -- query graph --------------------------------------------------------------------------------


class Graph:
    """Nodes, removal groups and paths of one query."""

    def __init__(self, s: Searcher, n_terms: int, nodes: list[Node], prefix_last: bool) -> None:
        self.s = s
        self.n = n_terms
        self.prefix_last = prefix_last
        self.nodes = nodes
        self.starts: dict[int, list[int]] = defaultdict(list)
        self.single: dict[int, int] = {}
        for i, node in enumerate(nodes):
            self.starts[node.first].append(i)
            if node.length == 1:
                self.single[node.first] = i
        self.phrase_words = sum(len([w for w in a.words if w is not None])
                                for n in nodes if n.kind == "phrase" for a in n.alts[0])
        self._path_docids: dict[Path, BitMap] = {}

    def groups(self, strategy: str) -> list[set[int]]:
        """Node groups in removal order (milli's `removal_order_for_terms_matching_strategy_*`)."""
        if strategy == "all" or not self.nodes:
            return []
        if strategy == "frequency":
            docids: dict[int, BitMap] = defaultdict(BitMap)
            for node in self.nodes:
                for t in range(node.first, node.last + 1):
                    docids[t] |= node.docids
            freq = sorted(((t, len(d) or 1 << 64) for t, d in sorted(docids.items())), key=lambda x: -x[1])
            weight: dict[int, int] = {}
            w = 1
            for i, (t, f) in enumerate(freq):
                weight[t] = w
                if i + 1 < len(freq) and freq[i + 1][1] != f:
                    w += 1

            def cost(node: Node) -> int:
                return max(weight[t] for t in range(node.first, node.last + 1))
        else:
            first = min(n.first for n in self.nodes)
            last = max(n.last for n in self.nodes)
            if first >= last:
                return []

            def cost(node: Node) -> int:
                return 1 + last - node.first

        by_cost: dict[int, set[int]] = defaultdict(set)
        mandatory = False
        for i, node in enumerate(self.nodes):
            if node.kind == "phrase":
                mandatory = True
                continue
            by_cost[cost(node)].add(i)
        groups = [by_cost[c] for c in sorted(by_cost)]
        if not mandatory and groups:
            groups.pop()
        return groups

    def paths(self, removed: set[int]) -> list[Path]:
        """Every way to cover the terms left to right with kept nodes, skipping removed terms."""
        # depth first with an explicit stack (a recursive closure would be a reference cycle keeping
        # the graph, its searcher and the read transaction alive until the next garbage collection);
        # children are pushed in reverse so paths come out in the recursive order
        out: list[Path] = []
        stack: list[tuple[int, Path]] = [(0, ())]
        while stack:
            t, acc = stack.pop()
            if t >= self.n:
                if acc:
                    out.append(acc)
                continue
            children = [(self.nodes[i].last + 1, (*acc, i)) for i in self.starts.get(t, ()) if i not in removed]
            if self.single.get(t) in removed:
                children.append((t + 1, acc))
            stack.extend(reversed(children))
        return out

    def path_docids(self, path: Path) -> BitMap:
        cached = self._path_docids.get(path)
        if cached is None:
            cached = self.nodes[path[0]].docids.copy()
            for i in path[1:]:
                cached &= self.nodes[i].docids
                if not cached:
                    break
            self._path_docids[path] = cached
        return cached

    def typo_costs(self, path: Path, docs: BitMap) -> dict[int, BitMap]:
        """`docs` split by their cheapest typo cost along `path`."""
        costs: dict[int, BitMap] = {0: docs}
        for i in path:
            node = self.nodes[i]
            nxt: dict[int, BitMap] = {}
            for c, bm in costs.items():
                for level, level_docs in enumerate(node.levels):
                    part = bm & level_docs
                    if part:
                        key = c + level + node.typo_base
                        acc = nxt.get(key)
                        nxt[key] = part if acc is None else acc | part
            costs = nxt
        return costs

    def max_typo(self, path: Path) -> int:
        return sum(self.nodes[i].typo_base + self.nodes[i].max_typo for i in path)

    def max_proximity(self, path: Path) -> int:
        total = 0
        prev: Node | None = None
        for i in path:
            node = self.nodes[i]
            contiguous = prev is not None and prev.qend + 1 == node.qstart
            total += node.length - 1 + (MAX_DISTANCE - 1 if contiguous else 0)
            prev = node
        return total

    def covered(self, path: Path) -> int:
        return sum(self.nodes[i].length for i in path)


@dataclass
class Step:
    """A words bucket: the documents first matched with `k` removal groups removed."""

    k: int
    docids: BitMap
    paths: list[Path]
    removed: set[int]
    max_typo: int = 0


@dataclass
class Bucket:
    """The documents the bitmap rules left together, with what the per-document rules need."""

    step: Step
    docids: BitMap
    paths: list[Path]
    typo: int | None  # typo cost when the typo rule split the bucket


# -- per-document scoring -----------------------------------------------------------------------


class Doc:
    """One document being ranked: its forward entry, interpretations left and scores so far."""

    __slots__ = ("bucket", "combos", "docid", "document", "ends", "lengths", "occ", "postings", "scores")

    def __init__(self, docid: int, bucket: Bucket) -> None:
        self.docid = docid
        self.bucket = bucket
        self.lengths: dict[Any, int] = {}
        self.postings: dict[str, list[int]] | None = None
        self.combos: list[Combo] = []
        self.scores = RuleScores()
        self.document: dict[str, Any] | None = None
        self.occ: dict[tuple[int, int | None], list[tuple[int, int, bool]]] = {}
        self.ends: dict[tuple[int, int | None], tuple[list[tuple[int, bool]], list[tuple[int, bool]]]] = {}


class Ranker:
    """Scores documents on the ranking rules after the bitmap buckets (milli's rules, one document
    at a time); `apply` runs one rule, keeping the interpretations the next rule works with."""

    def __init__(self, s: Searcher, graph: Graph, rules: list[str], words_max: int, typo_bucketed: bool) -> None:
        self.s = s
        self.g = graph
        self.rules = rules
        self.words_max = words_max
        self.typo_bucketed = typo_bucketed
        displayed = s.settings.get("displayedAttributes") or ["*"]
        self.displayed = None if displayed == ["*"] else set(displayed)

    def start(self, docid: int, bucket: Bucket) -> Doc:
        """The document with its interpretations: the paths of its bucket it matches, each node at
        the typo level the typo bucket chose (any level when the typo rule did not bucket)."""
        g = self.g
        doc = Doc(docid, bucket)
        for path in bucket.paths:
            if bucket.typo is None:
                if all(docid in g.nodes[i].docids for i in path):
                    doc.combos.append((path, None))
                continue
            levels = tuple(g.nodes[i].level_of(docid) for i in path)
            if min(levels, default=0) >= 0 and sum(
                    lv + g.nodes[i].typo_base for i, lv in zip(path, levels, strict=True)) == bucket.typo:
                doc.combos.append((path, levels))
        if not doc.combos:  # cannot happen for a document of the bucket; keep the scoring total anyway
            doc.combos = [(p, None) for p in bucket.paths[:1]]
        return doc

    def _postings(self, doc: Doc) -> dict[str, list[int]]:
        if doc.postings is None:
            fwd = read_forward(self.s.reader, doc.docid)
            doc.lengths, doc.postings = fwd if fwd is not None else ({}, {})
        return doc.postings

    def _occurrences(self, doc: Doc, i: int, level: int | None) -> list[tuple[int, int, bool]]:
        found = doc.occ.get((i, level))
        if found is None:
            found = doc.occ[(i, level)] = self.s.occurrences(self._postings(doc), self.g.nodes[i], level)
        return found

    def _ends(self, doc: Doc, i: int, level: int | None) -> tuple[list[tuple[int, bool]], list[tuple[int, bool]]]:
        found = doc.ends.get((i, level))
        if found is None:
            found = doc.ends[(i, level)] = self.s.proximity_ends(self._postings(doc), self.g.nodes[i], level)
        return found

    @staticmethod
    def _best(doc: Doc, values: list[tuple[Any, Combo]]) -> Any:
        """Keeps the interpretations scoring best on this rule (the next rule's subgraph)."""
        top = min(v for v, _ in values)
        doc.combos = [c for v, c in values if v == top]
        return top

    def apply(self, doc: Doc, rule: str) -> None:
        """Scores `doc` on `rule`: computes the rule's value, which `doc.scores` turns into its detail,
        rank and sort-key part."""
        s, g = self.s, self.g
        step = doc.bucket.step
        scores = doc.scores
        if rule == "words":
            scores.words(self.words_max - step.k, self.words_max)
        elif rule == "typo":
            if doc.bucket.typo is not None and self.typo_bucketed:
                typos = doc.bucket.typo
            else:
                typos = self._best(doc, [(self._typo_cost(doc.docid, c), c) for c in doc.combos])
                doc.combos = [(p, tuple(g.nodes[i].level_of(doc.docid) for i in p)) for p, _ in doc.combos]
            scores.typo(typos, step.max_typo)
        elif rule == "proximity":
            cost = self._best(doc, [(self._proximity(doc, c), c) for c in doc.combos])
            scores.cost(rule, cost, max(g.max_proximity(p) for p in doc.bucket.paths) + 1)
        elif rule in ("attribute", "attributeRank"):
            fid_cost = self._best(doc, [(self._fid(doc, c), c) for c in doc.combos])
            fid_top = max(s.max_weight * g.covered(p) for p in doc.bucket.paths) + 1
            if rule == "attributeRank":
                scores.cost(rule, fid_cost, fid_top)
            else:
                pos_cost = self._best(doc, [(self._position(doc, c), c) for c in doc.combos])
                scores.attribute(rule, fid_cost, fid_top, pos_cost,
                                 max(10 * g.covered(p) for p in doc.bucket.paths) + 1)
        elif rule == "wordPosition":
            pos_cost = self._best(doc, [(self._position(doc, c), c) for c in doc.combos])
            scores.cost(rule, pos_cost, max(10 * g.covered(p) for p in doc.bucket.paths) + 1)
        elif rule == "exactness":
            _, er = self._exact_attribute(doc)
            exact = self._best(doc, [(-self._exact_words(doc.docid, c)[0], c) for c in doc.combos])
            scores.exactness(er, -exact, g.covered(doc.combos[0][0]))
            # the rules after exactness see only the exact word of the terms matched exactly
            doc.combos = [(p, self._exact_levels(doc.docid, p, lv)) for p, lv in doc.combos]
        elif rule == "bm25":
            scores.bm25(self._bm25(doc))
        elif rule.endswith((":asc", ":desc")) and s.request.ordering is not None:
            scores.sort(*s.request.ordering.rule_key(doc.docid, rule, scores.order))
        elif rule.endswith((":asc", ":desc")):
            if doc.document is None:
                doc.document = s.reader.document_by_internal_id(doc.docid) or {}
            sort_key, value = sort_value(doc.document, rule)
            scores.sort(sort_key, sort_detail(rule, scores.order, value, self.displayed))

    def score(self, docid: int, bucket: Bucket) -> tuple[tuple[Any, ...], float, dict[str, Any]]:
        """(sort key, ranking score, score details) of the document on every rule, then BM25."""
        doc = self.start(docid, bucket)
        for rule in self.rules:
            self.apply(doc, rule)
        raw = doc.scores.details["bm25"]["value"] if "bm25" in doc.scores.details else self._bm25(doc)
        return doc.scores.finish(raw, docid)

    def _bm25(self, doc: Doc) -> float:
        postings = self._postings(doc)
        return self.s.bm25(doc.lengths, postings, self._bm25_nodes(doc.bucket.step))

    def _bm25_nodes(self, step: Step) -> list[Node]:
        g = self.g
        return [n for i, n in enumerate(g.nodes) if n.length == 1 and i not in step.removed]

    def _exact_levels(self, docid: int, path: Path, levels: tuple[int, ...] | None) -> tuple[int, ...]:
        out = []
        for idx, i in enumerate(path):
            node = self.g.nodes[i]
            lv = -1 if levels is None else levels[idx]
            exact = node.exact is not None and lv in (-1, 0, EXACT) and docid in node.exact_docids
            out.append(EXACT if exact else (node.level_of(docid) if lv == -1 else lv))
        return tuple(out)

    def _typo_cost(self, docid: int, combo: Combo) -> int:
        path, _ = combo
        total = 0
        for i in path:
            level = self.g.nodes[i].level_of(docid)
            total += max(level, 0) + self.g.nodes[i].typo_base
        return total

    def _proximity(self, doc: Doc, combo: Combo) -> int:
        """milli's proximity graph cost along the path: per pair of terms at consecutive query
        positions, the smallest cost over their positions in one field (forward distance d < 4
        costs d - 1, backward d < 3 costs d — never for phrase-like derivations —, else 3; an
        ngram adds its length - 1)."""
        path, levels = combo
        g = self.g
        total = 0
        prev: tuple[Node, int, int | None] | None = None
        for idx, i in enumerate(path):
            node = g.nodes[i]
            level = None if levels is None else levels[idx]
            extra = node.length - 1
            if prev is None or prev[0].qend + 1 != node.qstart:
                total += extra
                prev = (node, i, level)
                continue
            cap = MAX_DISTANCE - 1 + extra
            cost = cap
            left = self._ends(doc, prev[1], prev[2])[0]
            right = self._ends(doc, i, level)[1]
            for ll, lphrase in left:
                for rf, rphrase in right:
                    if ll >> 16 != rf >> 16:
                        continue
                    if self.s.by_attribute:
                        c = extra
                    elif rf > ll:
                        d = rf - ll
                        c = d - 1 + extra if d < MAX_DISTANCE else cap
                    elif rf < ll and not (lphrase or rphrase):
                        d = ll - rf
                        c = d + extra if d < MAX_DISTANCE - 1 else cap
                    else:
                        continue
                    if c < cost:
                        cost = c
                if cost == extra:
                    break
            total += cost
            prev = (node, i, level)
        return total

    def _fid(self, doc: Doc, combo: Combo) -> int:
        """milli's fid graph: per node, the weight of the best searchable field it appears in."""
        path, levels = combo
        s = self.s
        total = 0
        for idx, i in enumerate(path):
            weights = [s.weight.get(first >> 16, s.max_weight)
                       for first, _, _ in self._occurrences(doc, i, None if levels is None else levels[idx])]
            total += min(weights, default=s.max_weight) * self.g.nodes[i].length
        return total

    def _position(self, doc: Doc, combo: Combo) -> int:
        """milli's position graph: per node, the cost of the distance between the query position
        and the closest (bucketed) document position, summed over the ngram's words."""
        path, levels = combo
        total = 0
        for idx, i in enumerate(path):
            node = self.g.nodes[i]
            positions = {bucketed_position(p & 0xFFFF)
                         for p in self.s.word_positions(self._postings(doc), node,
                                                        None if levels is None else levels[idx])}
            best = 10 * node.length
            for p in positions:
                d = abs(p - node.qstart)
                c = sum(position_cost(d + k) for k in range(node.length))
                if c < best:
                    best = c
            total += best
        return total

    def _exact_words(self, docid: int, combo: Combo) -> tuple[int, int]:
        """milli's exactness graph: (terms matched by their exact word or phrase, terms)."""
        path, levels = combo
        covered = self.g.covered(path)
        cost = 0
        for idx, i in enumerate(path):
            node = self.g.nodes[i]
            exact = (node.exact is not None and (levels is None or levels[idx] in (0, EXACT))
                     and docid in node.exact_docids)
            if not exact:
                cost += node.length
        return covered - cost, covered

    def _exact_attribute(self, doc: Doc) -> tuple[str, int]:
        """milli's `ExactAttribute`: a field equal to the (remaining) query, or starting with it."""
        g, s = self.g, self.s
        postings = self._postings(doc)
        lengths = doc.lengths
        terms: dict[int, Node] = {}
        for path, levels in doc.combos:
            for idx, i in enumerate(path):
                node = g.nodes[i]
                if node.exact is not None and (levels is None or levels[idx] in (0, EXACT)):
                    terms.setdefault(node.first, node)
        ordered = [terms[t] for t in sorted(terms)]
        if not ordered or ordered[0].first != 0:
            return "noExactMatch", 1
        for a, b in itertools.pairwise(ordered):
            if b.first - a.first > 1:
                return "noExactMatch", 1
        count = sum(n.qend - n.qstart + 1 for n in ordered)
        words: list[str] = []
        for node in ordered:
            assert node.exact is not None
            for offset, w in enumerate(node.exact.words):
                if w is None:
                    continue
                words.append(w)
                want = bucketed_position(node.qstart + offset)
                if not any(p >> 16 in s.weight and bucketed_position(p & 0xFFFF) == want
                           for p in postings.get(w, ())):
                    return "noExactMatch", 1
        starts = False
        for fid in s.weight:
            if all(any(p >> 16 == fid for p in postings.get(w, ())) for w in words):
                length = lengths.get(fid, lengths.get(str(fid), -1))
                if count <= MAX_COUNTED_WORDS and length == count:
                    return "exactMatch", 3
                starts = True
        return ("matchesStart", 2) if starts else ("noExactMatch", 1)


# -- the search ---------------------------------------------------------------------------------


def _highlighted(node: Node) -> tuple[tuple[bool, tuple[str, ...]], ...]:
    """(phrase?, words) a node makes the formatter highlight, in derivation order (shared by the
    searches of the same derivations: a prefix has ~1,000 to look through)."""
    key = (alts_key(node), node.kind, node.is_prefix, node.word)
    found: tuple[tuple[bool, tuple[str, ...]], ...] | None = MATCHING.get(key)
    if found is not None:
        return found
    out: list[tuple[bool, tuple[str, ...]]] = []
    if node.kind == "phrase":
        out.append((True, tuple(w for w in node.alts[0][0].words if w is not None)))
    else:
        for level, alts in enumerate(node.alts):
            for alt in alts:
                words = tuple(w for w in alt.words if w is not None)
                if len(words) > 1:
                    out.append((True, words))
                elif words and not (node.is_prefix and level == 0 and not alt.phrase and words[0] != node.word):
                    # prefix expansions are highlighted on the prefix only, through `prefixes`
                    out.append((False, words))
    found = tuple(out)
    MATCHING.put(key, found)
    return found


def _matching_words(g: Graph) -> MatchingWords:
    """What the formatter highlights: each node's derivations, keyed by the query terms they cover."""
    matching = MatchingWords()
    for node in g.nodes:
        ids = (node.first, node.last)
        for phrase, words in _highlighted(node):
            if phrase:
                matching.phrases.append(list(words))
                matching.ids.setdefault(" ".join(words), ids)
            else:
                matching.words.add(words[0])
                matching.ids.setdefault(words[0], ids)
        if node.is_prefix:
            matching.prefixes.append(node.word)
            matching.ids.setdefault(node.word, ids)
    return matching


def search(reader: IndexReader, request: SearchRequest, settings: dict[str, Any]) -> SearchResult:
    started = time.monotonic()
    s = Searcher(reader, settings, request)
    prefix_search = settings.get("prefixSearch", "indexingTime") != "disabled"
    rules = [r for r in settings.get("rankingRules") or [] if r]
    # bm25 first: an OR query ranked by BM25 (`disjunctive.py`); sort and distinct need the pipeline
    bm25_first = rules[:1] == ["bm25"] and (request.ordering is None or (
        not request.ordering.sort_names and request.ordering.distinct is None))
    parsed = parse_query(request.q, s.tokenizer, prefix_search=prefix_search,
                         max_terms=MAX_TERMS_BM25 if bm25_first else MAX_TERMS, distinct=bm25_first)
    strategy = request.matching_strategy
    universe = s.all_docids
    for w in parsed.negative_words:
        universe = universe - s.word_docids(w)
    for phrase in parsed.negative_phrases:
        universe = universe - s.phrase_docids(phrase)
    if request.filter_universe is not None:
        universe = universe & request.filter_universe
    ordering = request.ordering  # sort rules and distinct (`sorting.Ordering`)

    if parsed.is_placeholder:
        if ordering is not None:
            result: SearchResult = ordering.placeholder(universe, request, rules)
            return result
        result = _placeholder(s, universe, request, rules)
        result.all_candidates = universe
        return result

    nodes = s.build_nodes(parsed.terms, ngrams=not bm25_first, splits=not bm25_first)
    g = Graph(s, len(parsed.terms), nodes, bool(parsed.terms[-1].is_prefix))
    if bm25_first:
        ids, scores, hit_details, found = bm25_first_page(s, nodes, universe, request.offset, request.limit,
                                                          request.ranking_score_threshold, BM25_LEVELS, BM25_HALF,
                                                          [t.count for t in parsed.terms])
        return SearchResult(docids=ids, scores=scores, details=hit_details, candidates=len(found),
                            matching=_matching_words(g), all_candidates=found)
    pipeline = effective_rules(rules, strategy, ordering.sort_names if ordering is not None else None)
    groups = g.groups(strategy)
    words_max = 1 + max(g.phrase_words - 1, 0) + len(groups)
    steps = _steps(g, groups, universe)
    bitmap_words = bool(pipeline) and pipeline[0] == "words"
    lead = 1 if bitmap_words else 0
    bitmap_typo = len(pipeline) > lead and pipeline[lead] == "typo"
    ranker = Ranker(s, g, pipeline, words_max, bitmap_typo)
    cutoff = settings.get("searchCutoffMs")
    cutoff_ms = DEFAULT_CUTOFF_MS if cutoff is None else cutoff  # 0 is a valid (immediate) budget
    threshold = request.ranking_score_threshold
    want = request.offset + request.limit

    ranked: list[tuple[int, float, dict[str, Any]]] = []
    total = sum(len(st.docids) for st in steps)
    dropped = BitMap()  # below the ranking score threshold: not candidates
    distinct = ordering.distinct if ordering is not None else None
    degraded = False
    exhaustive = request.exhaustive_count and threshold is not None  # every hit must be scored to count
    # large single-path buckets are keyed natively; only their best documents are scored here
    fast = (FastBuckets(s, g.nodes, pipeline[2:], BM25_LEVELS, BM25_HALF)
            if bitmap_words and bitmap_typo and threshold is None and distinct is None
            and FastBuckets.applicable(pipeline[2:], ordering) else None)
    for bucket in _buckets(g, steps, bitmap_words, bitmap_typo):
        if len(ranked) >= want and not exhaustive:
            break
        prefix_ranks = _prefix_ranks(bucket, pipeline, bitmap_words, bitmap_typo, words_max)
        if threshold is not None and fold(prefix_ranks) < threshold:
            total -= len(bucket.docids)  # every document of the bucket scores at most this
            dropped |= bucket.docids
            continue
        if (time.monotonic() - started) * 1000 > cutoff_ms:
            degraded = True
            _skip(bucket, ranked, want, pipeline, prefix_ranks)
            continue
        merged = isinstance(bucket, _MergedBucket)
        deadline = started + cutoff_ms / 1000
        bq = None
        if fast is not None and bucket.typo is not None and len(bucket.paths) == 1 and len(bucket.docids) >= FAST_MIN_DOCS:
            bm25_terms = tuple(i for i, n in enumerate(g.nodes) if n.length == 1 and i not in bucket.step.removed)
            bq = fast.query(bucket.paths[0], bm25_terms)
        if fast is not None and bq is not None and bucket.typo is not None:
            level = bucket.typo - sum(g.nodes[i].typo_base for i in bucket.paths[0])
            best, rest = fast.best(bq, bm25_terms, bucket.paths[0], level, bucket.docids, want - len(ranked),
                                   deadline)
            scored = fast.scored(ranker, bucket, best)
        else:
            # every document of the bucket is scored on all the rules, one at a time (keeping only its
            # key and details: holding decoded forward entries for a large bucket costs more than it saves)
            scored, rest = _score_until(ranker, bucket, merged, deadline)
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
            _skip(Bucket(bucket.step, rest, bucket.paths, bucket.typo), ranked, want, pipeline, prefix_ranks)
    if fast is not None:
        fast.release()  # (after an exception its queries are just not shared: rebuilt next time)
    page = ranked[request.offset : want]
    candidates = BitMap.union(*(st.docids for st in steps)) - dropped if steps else BitMap()
    if distinct is not None:
        candidates = distinct.remaining(candidates) if request.exhaustive_count else candidates - distinct.excluded
        total = len(candidates)
    return SearchResult(
        docids=[r[0] for r in page], scores=[r[1] for r in page], details=[r[2] for r in page],
        candidates=total, matching=_matching_words(g), degraded=degraded, all_candidates=candidates,
    )


def _steps(g: Graph, groups: list[set[int]], universe: BitMap) -> list[Step]:
    steps: list[Step] = []
    seen = BitMap()
    removed: set[int] = set()
    for k in range(len(groups) + 1):
        if k:
            removed = removed | groups[k - 1]
        paths = g.paths(removed)
        docs = BitMap()
        good: list[Path] = []
        for path in paths:
            part = g.path_docids(path) & universe
            part -= seen
            if part:
                docs |= part
                good.append(path)
        if docs:
            seen |= docs
            step = Step(k, docs, good, set(removed))
            step.max_typo = max(g.max_typo(p) for p in good)
            steps.append(step)
    return steps


def _buckets(g: Graph, steps: list[Step], bitmap_words: bool, bitmap_typo: bool) -> Iterator[Bucket]:
    if not bitmap_words:
        # a per-document rule comes first: one bucket, words and typo are scored per document
        if steps:
            yield _MergedBucket(steps)
        return
    for st in steps:
        if not bitmap_typo:
            yield Bucket(st, st.docids, st.paths, None)
            continue
        parts = {p: g.typo_costs(p, st.docids & g.path_docids(p)) for p in st.paths}
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


class _MergedBucket(Bucket):
    """Every step's documents together; each document is scored with its own step."""

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


def _prefix_ranks(bucket: Bucket, pipeline: list[str], bitmap_words: bool, bitmap_typo: bool,
                  words_max: int) -> list[tuple[int, int]]:
    """The ranks the bitmap rules gave the whole bucket (an upper bound of its documents' scores)."""
    ranks: list[tuple[int, int]] = []
    if bitmap_words:
        ranks.append((words_max - bucket.step.k, words_max))
    if bitmap_typo and bucket.typo is not None:
        m = bucket.step.max_typo + 1
        ranks.append((max(m - bucket.typo, 0), m))
    return ranks


def _score_until(ranker: Ranker, bucket: Bucket, merged: bool, deadline: float,
                 ) -> tuple[list[tuple[tuple[Any, ...], float, dict[str, Any]]], BitMap]:
    """The bucket's documents scored and sorted until `deadline` (time.monotonic), and the ones left
    unscored: a single bucket can hold most of the index (`t`, a one-letter prefix), so the search
    cutoff is checked every `CUTOFF_CHECK_EVERY` documents, not only between buckets."""
    scored = []
    rest = BitMap()
    for n, d in enumerate(bucket.docids):
        if n % CUTOFF_CHECK_EVERY == 0 and n and time.monotonic() > deadline:
            rest = BitMap(bucket.docids[n:])
            break
        scored.append(ranker.score(d, bucket.for_doc(d) if merged else bucket))  # type: ignore[attr-defined]
    scored.sort(key=lambda x: x[0])
    return scored, rest


def _skip(bucket: Bucket, ranked: list[Any], want: int, pipeline: list[str],
          prefix_ranks: list[tuple[int, int]]) -> None:
    """Search cutoff: the bucket's documents unsorted, with a `skipped` detail after the known ones."""
    details: dict[str, Any] = {}
    order = 0
    if prefix_ranks and pipeline and pipeline[0] == "words":
        r, m = prefix_ranks[0]
        details["words"] = {"order": 0, "matchingWords": r, "maxMatchingWords": m, "score": r / m}
        order = 1
        if len(prefix_ranks) > 1:
            r, m = prefix_ranks[1]
            details["typo"] = {"order": 1, "typoCount": bucket.typo, "maxTypoCount": m - 1, "score": r / m}
            order = 2
    details["skipped"] = {"order": order}
    score = fold([*prefix_ranks, (0, 1)])
    for docid in bucket.docids:
        if len(ranked) >= want:
            break
        ranked.append((docid, score, dict(details)))


def _placeholder(s: Searcher, universe: BitMap, request: SearchRequest, rules: list[str]) -> SearchResult:
    """No query: only custom `field:asc|desc` rules order the documents, then the docid."""
    custom = effective_rules([r for r in rules if r.endswith((":asc", ":desc"))], "all")
    want = request.offset + request.limit
    details: list[dict[str, Any]] = []
    if custom:
        shown = s.settings.get("displayedAttributes") or ["*"]
        displayed = None if shown == ["*"] else set(shown)
        keyed = []
        for docid in universe:
            doc = s.reader.document_by_internal_id(docid) or {}
            values = [sort_value(doc, r) for r in custom]
            keyed.append((tuple(v[0] for v in values), docid, [v[1] for v in values]))
        keyed.sort(key=lambda x: (x[0], x[1]))
        page = keyed[request.offset : want]
        docids = [d for _, d, _ in page]
        for _, _, values in page:
            detail: dict[str, Any] = {}
            for order, (rule, value) in enumerate(zip(custom, values, strict=True)):
                detail.update(sort_detail(rule, order, value, displayed))
            details.append(detail)
    else:
        docids = list(universe[request.offset : want]) if request.limit else []
        details = [{} for _ in docids]
    return SearchResult(docids=docids, scores=[1.0] * len(docids), details=details,
                        candidates=len(universe), matching=MatchingWords())
