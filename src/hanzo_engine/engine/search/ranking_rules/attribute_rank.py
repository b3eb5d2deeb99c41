"""The `attributeRank` rule (milli's `ranking_rule_graph/fid`): the weight of the best searchable
field each term appears in; and the pre-1.36 `attribute` rule, attribute rank then word position.

Native block: `BucketQuery.fid_cost` in `_native/bucket.pyx` (codes R_ATTRIBUTE_RANK, and
R_ATTRIBUTE with `BucketQuery.position`).
"""

from __future__ import annotations

from ..context import SearchContext
from ..features import DocFeatures
from ..query_graph import Combo, Path, QueryGraph
from ..score_details import RuleScore, cost_score, fold

NATIVE_CODE = 2
ATTRIBUTE_NATIVE_CODE = 3  # the legacy `attribute` rule: two key columns, fid cost then position cost


def top(ctx: SearchContext, graph: QueryGraph, paths: list[Path]) -> int:
    """The rank scale of a bucket with these paths."""
    return max(ctx.max_weight * graph.covered(p) for p in paths) + 1


def cost(doc: DocFeatures, graph: QueryGraph, combo: Combo) -> int:
    """milli's fid graph: per node, the weight of the best searchable field it appears in."""
    path, levels = combo
    ctx = doc.ctx
    total = 0
    for idx, i in enumerate(path):
        node = graph.nodes[i]
        weights = [
            ctx.weight.get(first >> 16, ctx.max_weight)
            for first, _, _ in doc.occurrences(i, node, None if levels is None else levels[idx])
        ]
        total += min(weights, default=ctx.max_weight) * node.length
    return total


def details(cost: int, top: int) -> RuleScore:
    return cost_score(cost, top)


def attribute_details(fid_cost: int, fid_top: int, pos_cost: int, pos_top: int) -> RuleScore:
    """The pre-1.36 `attribute` rule: attribute rank then word position."""
    fr, pr = max(fid_top - fid_cost, 1), max(pos_top - pos_cost, 1)
    ranks = ((fr, fid_top), (pr, pos_top))
    detail = {
        "attributeRankingOrderScore": fr / fid_top,
        "queryWordDistanceScore": pr / pos_top,
        "score": fold(list(ranks)),
    }
    return detail, ranks, (fid_cost, pos_cost)
