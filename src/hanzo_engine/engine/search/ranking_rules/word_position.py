"""The `wordPosition` rule (milli's `ranking_rule_graph/position`): how far each term is from its
query position in the document, positions bucketed as milli's.

Native block: `BucketQuery.position` with `bucketed` and `position_cost` in `_native/bucket.pyx`
(code R_WORD_POSITION).
"""

from __future__ import annotations

import math

from ..context import SearchContext
from ..features import DocFeatures, derivations
from ..query_graph import Combo, Node, Path, QueryGraph
from ..score_details import RuleScore, cost_score

NATIVE_CODE = 4


def bucketed_position(position: int) -> int:
    """milli's `bucketed_position`: exact below 16, then 24, then the next power of two."""
    if position < 16:
        return position
    if position < 24:
        return 24
    return 1 << math.ceil(math.log2(position))


def position_cost(distance: int) -> int:
    """milli's word-position cost of a distance between query and document positions (0..10)."""
    for bound, c in ((0, 0), (1, 1), (4, 2), (7, 3), (11, 4), (16, 5), (24, 6), (64, 7), (256, 8), (1024, 9)):
        if distance <= bound:
            return c
    return 10


def top(graph: QueryGraph, paths: list[Path]) -> int:
    """The rank scale of a bucket with these paths."""
    return max(10 * graph.covered(p) for p in paths) + 1


def positions(ctx: SearchContext, postings: dict[str, list[int]], node: Node, level: int | None) -> list[int]:
    """Packed positions the rule looks at: the derivations' words, and for a phrase-like derivation
    contained in the document its first word anywhere (as milli)."""
    out: list[int] = []
    for alt in derivations(ctx, postings, node, level):
        present = [w for w in alt.words if w is not None]
        if len(alt.words) > 1 and not ctx.phrase_starts(postings, alt.words, alt.tolerant):
            continue
        if present:
            out.extend(ctx.positions(postings, present[0], alt.tolerant))
    return out


def cost(doc: DocFeatures, graph: QueryGraph, combo: Combo) -> int:
    """milli's position graph: per node, the cost of the distance between the query position
    and the closest (bucketed) document position, summed over the ngram's words."""
    path, levels = combo
    total = 0
    for idx, i in enumerate(path):
        node = graph.nodes[i]
        found = {
            bucketed_position(p & 0xFFFF)
            for p in positions(doc.ctx, doc.postings(), node, None if levels is None else levels[idx])
        }
        best = 10 * node.length
        for p in found:
            d = abs(p - node.qstart)
            c = sum(position_cost(d + k) for k in range(node.length))
            if c < best:
                best = c
        total += best
    return total


def details(cost: int, top: int) -> RuleScore:
    return cost_score(cost, top)
