"""The `typo` rule (milli's `ranking_rule_graph/typo`): the cheapest typo cost of a path, the typo
level of each node plus 2 per 2-gram and 3 per 3-gram.

Right after `words` it splits each words bucket by bitmaps (`costs`); elsewhere it is computed per
document (`cost`). No native block: the native keys start after it (`native_bucket_keys`).
"""

from __future__ import annotations

from pyroaring import BitMap

from ..query_graph import Combo, Path, QueryGraph
from ..score_details import RuleScore


def max_cost(graph: QueryGraph, path: Path) -> int:
    """The highest typo cost `path` allows."""
    return sum(graph.nodes[i].typo_base + graph.nodes[i].max_typo for i in path)


def costs(graph: QueryGraph, path: Path, docs: BitMap) -> dict[int, BitMap]:
    """`docs` split by their cheapest typo cost along `path`."""
    out: dict[int, BitMap] = {0: docs}
    for i in path:
        node = graph.nodes[i]
        nxt: dict[int, BitMap] = {}
        for c, bm in out.items():
            for level, level_docs in enumerate(node.levels):
                part = bm & level_docs
                if part:
                    key = c + level + node.typo_base
                    acc = nxt.get(key)
                    nxt[key] = part if acc is None else acc | part
        out = nxt
    return out


def cost(graph: QueryGraph, docid: int, combo: Combo) -> int:
    """The typo cost of one document along the path of `combo` (each node at its cheapest level)."""
    path, _ = combo
    total = 0
    for i in path:
        level = graph.nodes[i].level_of(docid)
        total += max(level, 0) + graph.nodes[i].typo_base
    return total


def details(typos: int, max_typos: int) -> RuleScore:
    m = max_typos + 1
    r = max(m - typos, 0)
    return {"typoCount": typos, "maxTypoCount": max_typos, "score": r / m}, ((r, m),), (typos,)
