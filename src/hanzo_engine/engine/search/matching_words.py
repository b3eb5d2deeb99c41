"""What a keyword search makes the formatter highlight (milli's `matches/matching_words.rs`): each
node's derivations, keyed by the query terms they cover."""

from __future__ import annotations

from .plan_cache import MATCHING
from .query_graph import Node, QueryGraph, alts_key
from .types import MatchingWords


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
                elif words and not (
                    node.is_prefix and level == 0 and not alt.phrase and words[0] != node.word
                ):
                    # prefix expansions are highlighted on the prefix only, through `prefixes`
                    out.append((False, words))
    found = tuple(out)
    MATCHING.put(key, found, len(found) + 1)
    return found


def matching_words(graph: QueryGraph) -> MatchingWords:
    """Every node's highlighted words, phrases and prefixes, with the query terms they stand for."""
    matching = MatchingWords()
    for node in graph.nodes:
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
