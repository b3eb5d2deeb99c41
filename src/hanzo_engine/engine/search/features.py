"""Per-document features: where a node's derivations occur in one document's forward entry
(`postings`: word -> packed positions `fid << 16 | position`, in the fields the derivation may
match in). The ranking rules read them (`ranking_rules/`); `proximity.ends` and
`word_position.positions` are the rule-specific ones."""

from __future__ import annotations

from typing import Any

from hanzo_engine.engine.update.indexer import read_forward

from .context import SearchContext
from .query_graph import EXACT, Alt, Node

DIRECT_DERIVATIONS = 8  # up to this many derivations, each is looked up in the document


def derivations(
    ctx: SearchContext, postings: dict[str, list[int]], node: Node, level: int | None
) -> list[Alt]:
    """`node`'s derivations at `level` (every level when None, the exact term for EXACT) that may
    occur in a document with these `postings`, in derivation order.

    A prefix or typo node has up to ~1,300 one-word derivations and a document a few dozen words,
    so past `DIRECT_DERIVATIONS` the document's words are looked up in the node's word index
    instead of every derivation in the document (a one-word derivation absent from the document
    contributes nothing to any feature).
    """
    key = (id(node), level)
    plan = ctx.derivation_plans.get(key)
    if plan is None:
        if level == EXACT:
            alts = [node.exact] if node.exact is not None else []
        else:
            alts = [
                alt
                for group in (node.alts if level is None else node.alts[level : level + 1])
                for alt in group
            ]
        by_word: dict[str, list[int]] = {}
        others: list[int] = []
        for i, alt in enumerate(alts):
            if len(alt.words) == 1 and alt.words[0] is not None:
                by_word.setdefault(alt.words[0], []).append(i)
            else:
                others.append(i)
        plan = ctx.derivation_plans[key] = (alts, by_word, others)
    alts, by_word, others = plan
    if len(alts) <= DIRECT_DERIVATIONS:
        return alts
    picked = list(others)
    if len(by_word) < len(postings):
        for w, idx in by_word.items():
            if w in postings:
                picked.extend(idx)
    else:
        for w in postings:
            found = by_word.get(w)
            if found is not None:
                picked.extend(found)
    picked.sort()
    return [alts[i] for i in picked]


def occurrences(
    ctx: SearchContext, postings: dict[str, list[int]], node: Node, level: int | None
) -> list[tuple[int, int, bool]]:
    """(first packed position, last packed position, phrase-like) of every match of `node`'s
    derivations at `level` (every level when None) in the document."""
    out: list[tuple[int, int, bool]] = []
    for alt in derivations(ctx, postings, node, level):
        if len(alt.words) == 1 and alt.words[0] is not None:
            out.extend((p, p, alt.phrase) for p in ctx.positions(postings, alt.words[0], alt.tolerant))
            continue
        slots = [k for k, w in enumerate(alt.words) if w is not None]
        for s in ctx.phrase_starts(postings, alt.words, alt.tolerant):
            out.append((s + slots[0], s + slots[-1], True))
    return out


class DocFeatures:
    """One document's forward entry, read on first use, and its features memoized per (node index,
    typo level): what the rules of one document share."""

    __slots__ = ("_postings", "ctx", "docid", "document", "ends", "lengths", "occ")

    def __init__(self, ctx: SearchContext, docid: int) -> None:
        self.ctx = ctx
        self.docid = docid
        self.lengths: dict[Any, int] = {}
        self._postings: dict[str, list[int]] | None = None
        self.document: dict[str, Any] | None = None  # the stored document, for sort rules without facets
        self.occ: dict[tuple[int, int | None], list[tuple[int, int, bool]]] = {}
        # `proximity.ends` of a node at a level
        self.ends: dict[tuple[int, int | None], tuple[list[tuple[int, bool]], list[tuple[int, bool]]]] = {}

    def postings(self) -> dict[str, list[int]]:
        if self._postings is None:
            fwd = read_forward(self.ctx.reader, self.docid)
            self.lengths, self._postings = fwd if fwd is not None else ({}, {})
        return self._postings

    def occurrences(self, i: int, node: Node, level: int | None) -> list[tuple[int, int, bool]]:
        """`occurrences` of node `i` at `level` in this document."""
        found = self.occ.get((i, level))
        if found is None:
            found = self.occ[(i, level)] = occurrences(self.ctx, self.postings(), node, level)
        return found
