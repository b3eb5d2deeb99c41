"""The `exactness` rule (milli's `exact_attribute.rs` and `ranking_rule_graph/exactness`): first
whether a field equals or starts with the query, then how many terms matched by their exact word.
The rules after it see only the exact word of the terms matched exactly (`exact_levels`).

Native block: `BucketQuery.exact_attribute` and the exact-word count in `BucketQuery.keys`
(`_native/bucket.pyx`, code R_EXACTNESS).
"""

from __future__ import annotations

import itertools
from typing import Any

from ..features import DocFeatures
from ..query_graph import EXACT, Combo, Node, Path, QueryGraph
from ..score_details import RuleScore, fold
from .word_position import bucketed_position

NATIVE_CODE = 5
MAX_COUNTED_WORDS = 30  # exactness compares field word counts up to this
MATCH_TYPES = {3: "exactMatch", 2: "matchesStart", 1: "noExactMatch"}


def exact_words(graph: QueryGraph, docid: int, combo: Combo) -> tuple[int, int]:
    """milli's exactness graph: (terms matched by their exact word or phrase, terms)."""
    path, levels = combo
    covered = graph.covered(path)
    cost = 0
    for idx, i in enumerate(path):
        node = graph.nodes[i]
        exact = (
            node.exact is not None
            and (levels is None or levels[idx] in (0, EXACT))
            and docid in node.exact_docids
        )
        if not exact:
            cost += node.length
    return covered - cost, covered


def exact_attribute(doc: DocFeatures, graph: QueryGraph, combos: list[Combo]) -> int:
    """milli's `ExactAttribute`: 3 a field equal to the (remaining) query, 2 a field starting with
    it, 1 neither."""
    ctx = doc.ctx
    postings = doc.postings()
    lengths = doc.lengths
    terms: dict[int, Node] = {}
    for path, levels in combos:
        for idx, i in enumerate(path):
            node = graph.nodes[i]
            if node.exact is not None and (levels is None or levels[idx] in (0, EXACT)):
                terms.setdefault(node.first, node)
    ordered = [terms[t] for t in sorted(terms)]
    if not ordered or ordered[0].first != 0:
        return 1
    for a, b in itertools.pairwise(ordered):
        if b.first - a.first > 1:
            return 1
    count = sum(n.qend - n.qstart + 1 for n in ordered)
    words: list[str] = []
    for node in ordered:
        assert node.exact is not None
        for offset, w in enumerate(node.exact.words):
            if w is None:
                continue
            words.append(w)
            want = bucketed_position(node.qstart + offset)
            if not any(
                p >> 16 in ctx.weight and bucketed_position(p & 0xFFFF) == want for p in postings.get(w, ())
            ):
                return 1
    starts = False
    for fid in ctx.weight:
        if all(any(p >> 16 == fid for p in postings.get(w, ())) for w in words):
            length = lengths.get(fid, lengths.get(str(fid), -1))
            if count <= MAX_COUNTED_WORDS and length == count:
                return 3
            starts = True
    return 2 if starts else 1


def exact_levels(
    graph: QueryGraph, docid: int, path: Path, levels: tuple[int, ...] | None
) -> tuple[int, ...]:
    """The path's typo levels for the rules after exactness: EXACT for a node matched by its exact
    word, else its level."""
    out = []
    for idx, i in enumerate(path):
        node = graph.nodes[i]
        lv = -1 if levels is None else levels[idx]
        exact = node.exact is not None and lv in (-1, 0, EXACT) and docid in node.exact_docids
        out.append(EXACT if exact else (node.level_of(docid) if lv == -1 else lv))
    return tuple(out)


def details(attribute_rank: int, matching: int, maximum: int) -> RuleScore:
    """`attribute_rank`: 3 exact match of a field, 2 a field starting with the query, 1 neither;
    `matching` of `maximum` query words matched by their exact word."""
    detail: dict[str, Any] = {"matchType": MATCH_TYPES[attribute_rank]}
    if attribute_rank == 1:
        detail.update(
            matchingWords=matching,
            maxMatchingWords=maximum,
            score=fold([(1, 3), (matching + 1, maximum + 1)]),
        )
    else:
        detail["score"] = attribute_rank / 3
    return detail, ((attribute_rank, 3), (matching + 1, maximum + 1)), (-attribute_rank, -matching)
