"""The `proximity` rule (milli's `ranking_rule_graph/proximity`): how close the terms at consecutive
query positions are in one field.

Native block: `BucketQuery.proximity` in `_native/bucket.pyx` (code R_PROXIMITY); the native keys'
prefilters on first/next-word keys (`native_prefilter.Prefilter.adjacent`) narrow a bucket to
the documents where the best proximity is possible.
"""

from __future__ import annotations

from ..context import SearchContext
from ..features import DocFeatures, derivations
from ..query_graph import Combo, Node, Path, QueryGraph
from ..score_details import RuleScore, cost_score

NATIVE_CODE = 1
MAX_DISTANCE = 4  # milli's `proximity::MAX_DISTANCE`: words 4 or more positions apart are not "close"

Ends = tuple[list[tuple[int, bool]], list[tuple[int, bool]]]


def max_cost(graph: QueryGraph, path: Path) -> int:
    """The highest proximity cost of `path`: every pair of consecutive terms far apart."""
    total = 0
    prev: Node | None = None
    for i in path:
        node = graph.nodes[i]
        contiguous = prev is not None and prev.qend + 1 == node.qstart
        total += node.length - 1 + (MAX_DISTANCE - 1 if contiguous else 0)
        prev = node
    return total


def top(graph: QueryGraph, paths: list[Path]) -> int:
    """The rank scale of a bucket with these paths."""
    return max(max_cost(graph, p) for p in paths) + 1


def ends(ctx: SearchContext, postings: dict[str, list[int]], node: Node, level: int | None) -> Ends:
    """(last words, first words) of `node`'s matches, as milli's proximity graph sees them:
    for a phrase-like derivation the document must contain it, then any position of its last
    (first) word counts, not only the ones inside an occurrence."""
    lasts: list[tuple[int, bool]] = []
    firsts: list[tuple[int, bool]] = []
    for alt in derivations(ctx, postings, node, level):
        if len(alt.words) == 1 and alt.words[0] is not None:
            ps = ctx.positions(postings, alt.words[0], alt.tolerant)
            lasts.extend((p, alt.phrase) for p in ps)
            firsts.extend((p, alt.phrase) for p in ps)
            continue
        if not ctx.phrase_starts(postings, alt.words, alt.tolerant):
            continue
        if alt.words[-1] is not None:
            lasts.extend((p, True) for p in ctx.positions(postings, alt.words[-1], alt.tolerant))
        if alt.words[0] is not None:
            firsts.extend((p, True) for p in ctx.positions(postings, alt.words[0], alt.tolerant))
    return lasts, firsts


def _ends_of(doc: DocFeatures, graph: QueryGraph, i: int, level: int | None) -> Ends:
    found = doc.ends.get((i, level))
    if found is None:
        found = doc.ends[(i, level)] = ends(doc.ctx, doc.postings(), graph.nodes[i], level)
    return found


def cost(doc: DocFeatures, graph: QueryGraph, combo: Combo) -> int:
    """milli's proximity graph cost along the path: per pair of terms at consecutive query
    positions, the smallest cost over their positions in one field (forward distance d < 4
    costs d - 1, backward d < 3 costs d — never for phrase-like derivations —, else 3; an
    ngram adds its length - 1)."""
    path, levels = combo
    by_attribute = doc.ctx.by_attribute
    total = 0
    prev: tuple[Node, int, int | None] | None = None
    for idx, i in enumerate(path):
        node = graph.nodes[i]
        level = None if levels is None else levels[idx]
        extra = node.length - 1
        if prev is None or prev[0].qend + 1 != node.qstart:
            total += extra
            prev = (node, i, level)
            continue
        cap = MAX_DISTANCE - 1 + extra
        best = cap
        left = _ends_of(doc, graph, prev[1], prev[2])[0]
        right = _ends_of(doc, graph, i, level)[1]
        for ll, lphrase in left:
            for rf, rphrase in right:
                if ll >> 16 != rf >> 16:
                    continue
                if by_attribute:
                    c = extra
                elif rf > ll:
                    d = rf - ll
                    c = d - 1 + extra if d < MAX_DISTANCE else cap
                elif rf < ll and not (lphrase or rphrase):
                    d = ll - rf
                    c = d + extra if d < MAX_DISTANCE - 1 else cap
                else:
                    continue
                if c < best:
                    best = c
            if best == extra:
                break
        total += best
        prev = (node, i, level)
    return total


def details(cost: int, top: int) -> RuleScore:
    return cost_score(cost, top)
