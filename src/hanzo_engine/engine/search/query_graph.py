"""The query graph (milli's `query_graph.rs` and `query_term`): nodes, their derivations, paths.

- Terms are the located query terms of `query.parse_query` (words and phrases, with query
  positions). Every term is a *node*; two or three consecutive word terms also make an *ngram node*
  (their concatenation, `sun flower` -> `sunflower`, with a typo budget reduced by its extra words)
  when it matches some document.
- A node's derivations (`Alt`, built by `derivations.build_nodes`) are grouped by typo cost (level):
  0 = the exact word, prefix expansions (last term) and synonyms; 1 = one-typo words and the split
  word; 2 = two-typo words. `levels[l]` holds the documents whose cheapest derivation of the node has
  cost `l` (disjoint bitmaps). Typo and ngram derivations never match in `disableOnAttributes` fields.
- A *path* is a sequence of nodes covering the query terms left to right; terms removed by the
  matching strategy are skipped. A document matches a path when it matches every node of it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from pyroaring import BitMap

from .plan_cache import HashedKey

EXACT = -2  # pseudo typo level: only the node's exact word (after the exactness rule)


class Alt(NamedTuple):
    """One derivation: a word, or a sequence of words that must be consecutive (`None`: any word).
    A named tuple, not a frozen dataclass: a prefix node makes up to 1,000 of them per query."""

    words: tuple[str | None, ...]
    phrase: bool = False  # phrase, synonym or split word: proximity is only counted forward
    tolerant: bool = False  # a typo or ngram derivation: not matched in `disableOnAttributes` fields


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


def alts_key(node: Node) -> HashedKey:
    """A node's derivations by typo level, hashable: part of the key of the structures built from
    them (`plan_cache`); made once per node (its derivations are final once built)."""
    if node.alts_key is None:
        node.alts_key = HashedKey(tuple(tuple(level) for level in node.alts))
    return node.alts_key


Path = tuple[int, ...]  # node indexes, left to right
Combo = tuple[Path, tuple[int, ...] | None]  # a path and its nodes' typo levels (None: any level)


class QueryGraph:
    """Nodes, removal groups and paths of one query."""

    def __init__(self, n_terms: int, nodes: list[Node], prefix_last: bool) -> None:
        self.n = n_terms
        self.prefix_last = prefix_last
        self.nodes = nodes
        self.starts: dict[int, list[int]] = defaultdict(list)
        self.single: dict[int, int] = {}
        for i, node in enumerate(nodes):
            self.starts[node.first].append(i)
            if node.length == 1:
                self.single[node.first] = i
        self.phrase_words = sum(
            len([w for w in a.words if w is not None]) for n in nodes if n.kind == "phrase" for a in n.alts[0]
        )
        self._path_docids: dict[Path, BitMap] = {}

    def groups(self, strategy: str) -> list[set[int]]:
        """Node groups in removal order (milli's `removal_order_for_terms_matching_strategy_*`):
        `last` removes terms from the end, `frequency` the most frequent first; ties go together,
        phrases never; the first group is kept unless a phrase is mandatory."""
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
        # the graph alive until the next garbage collection); children are pushed in reverse so paths
        # come out in the recursive order
        out: list[Path] = []
        stack: list[tuple[int, Path]] = [(0, ())]
        while stack:
            t, acc = stack.pop()
            if t >= self.n:
                if acc:
                    out.append(acc)
                continue
            children = [
                (self.nodes[i].last + 1, (*acc, i)) for i in self.starts.get(t, ()) if i not in removed
            ]
            if self.single.get(t) in removed:
                children.append((t + 1, acc))
            stack.extend(reversed(children))
        return out

    def path_docids(self, path: Path) -> BitMap:
        """The documents matching every node of `path` (memoized per search)."""
        cached = self._path_docids.get(path)
        if cached is None:
            cached = self.nodes[path[0]].docids.copy()
            for i in path[1:]:
                cached &= self.nodes[i].docids
                if not cached:
                    break
            self._path_docids[path] = cached
        return cached

    def covered(self, path: Path) -> int:
        """How many query terms `path` covers."""
        return sum(self.nodes[i].length for i in path)
