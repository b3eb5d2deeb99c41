"""The query graph's nodes and their derivations (milli's `query_term/compute_derivations.rs`):
exact word, prefix expansions, synonyms, typo words and split words, grouped by typo level, and the
documents of each level (`query_graph` describes the model)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from pyroaring import BitMap

from hanzo_engine._native.bucket import BucketQuery
from hanzo_engine._native.typo_matcher import SortedWords
from hanzo_engine.engine.update.indexer import (
    coarse_version,
    dictionary_version,
    forward_changes,
    forward_version,
)

from .context import SearchContext
from .dictionary import cached_word_table, prefix_words, word_table
from .forward_cache import forward_entries
from .plan_cache import PREFIX_ALTS, SPLITS, TYPO_ALTS, PlanCache
from .query import MAX_WORD_BYTES, QueryTerm
from .query_graph import Alt, Node
from .union_cache import cached_union

MAX_PREFIX_EXPANSIONS = 1000
MAX_TYPO_WORDS = (0, 150, 50)  # kept words of 0, 1 and 2 typos
MAX_SYNONYM_PHRASES = 50
MAX_SYNONYM_WORDS = 100
SPLIT_SCAN_LIMIT = 256  # most documents checked for a candidate split of a word

Synonyms = dict[tuple[str, ...], list[tuple[str, ...]]]


def typo_budget(ctx: SearchContext, word: str) -> int:
    """milli's `number_of_typos_allowed` (characters, not bytes), plus `disableOnNumbers`."""
    if not ctx.typo_enabled or word in ctx.exact_words:
        return 0
    if ctx.no_number_typos and word.isdigit():
        return 0
    n = len(word)
    if n < ctx.one_typo:
        return 0
    if n < ctx.two_typos:
        return 1
    return 2


def normalized_synonyms(ctx: SearchContext) -> Synonyms:
    """The `synonyms` setting with keys and values normalized into word tuples."""
    raw: dict[str, list[str]] = ctx.settings.get("synonyms") or {}
    out: Synonyms = {}
    for key, values in raw.items():
        k = tuple(ctx.tokenizer.words(key))
        if not k:
            continue
        bucket = out.setdefault(k, [])
        for value in values:
            v = tuple(ctx.tokenizer.words(value))
            if v and v not in bucket:
                bucket.append(v)
    return out


def synonym_alts(synonyms: Synonyms, words: Sequence[str]) -> list[Alt]:
    """The synonyms of `words` as phrase-like derivations, within the synonym limits."""
    out: list[Alt] = []
    count = 0
    for value in synonyms.get(tuple(words), [])[:MAX_SYNONYM_PHRASES]:
        if count + len(value) > MAX_SYNONYM_WORDS:
            continue
        count += len(value)
        out.append(Alt(value, phrase=True))
    return out


def split_word(ctx: SearchContext, word: str) -> tuple[str, str] | None:
    """milli's `split_best_frequency`: the split `left right` most often adjacent in the index.

    milli reads adjacency from its word-pair database; here it is checked in the forward index,
    so a split whose halves appear together in more than SPLIT_SCAN_LIMIT documents is not
    considered (such pairs are common words, e.g. `in to`). Each candidate's documents and the ones
    where its halves are adjacent are cached with the forward index's version they hold for; at a
    later version only the documents whose forward entry changed since (`indexer.forward_delta`)
    are scanned again, so a stream of small writes does not redo every word's splits.
    """
    version = forward_version(ctx.reader)
    words_at = dictionary_version(ctx.reader)
    key = (str(ctx.reader.index.path), word)
    entry: SplitEntry | None = SPLITS.get(key)
    known: dict[tuple[str, str], tuple[BitMap, BitMap]] = {}
    changed: BitMap | None = None
    pairs: list[tuple[str, str]] | None = None
    if entry is not None and entry[0] == version:
        return _chosen(ctx, entry[4])
    if entry is not None and entry[0] < version:
        known = entry[3]
        changed = _forward_changes(ctx, entry[0], version)
        if entry[1] == words_at:
            pairs = entry[2]
        elif entry[1] < words_at and (table := cached_word_table(ctx.reader)) is not None:
            # the splits whose halves are both words hold while no half entered or left the dictionary
            # (the word table is not built here: a query of short words needs none)
            words = table.changed_words_since(entry[1])
            if words is not None and not any(
                word[:i] in words or word[i:] in words for i in range(1, len(word))
            ):
                pairs = entry[2]
    if pairs is None:
        pairs = [
            (word[:i], word[i:])
            for i in range(1, len(word))
            if ctx.in_dictionary(word[:i]) and ctx.in_dictionary(word[i:])
        ]
    candidates: dict[tuple[str, str], tuple[BitMap, BitMap]] = {}
    best: tuple[int, str, str, BitMap] | None = None
    for left, right in pairs:
        both = ctx.unrestricted_docids(left) & ctx.unrestricted_docids(right)
        if len(both) > SPLIT_SCAN_LIMIT:
            continue
        cached = known.get((left, right))
        if cached is not None and changed is not None:
            # documents whose forward entry did not change keep their adjacency (and their
            # membership in `both`): only the changed ones are scanned
            adjacent = cached[1] - changed
            rescan = both & changed
            if rescan:
                adjacent |= adjacent_docs(ctx, rescan, left, right)
        else:
            adjacent = adjacent_docs(ctx, both, left, right)
        candidates[(left, right)] = (both, adjacent)
        if adjacent and (best is None or len(adjacent) > best[0]):
            best = (len(adjacent), left, right, adjacent)
    chosen = None if best is None else best[1:]
    SPLITS.put(key, (version, words_at, pairs, candidates, chosen))
    return _chosen(ctx, chosen)


# (forward version, dictionary version, the splits whose halves are both words then, per candidate
# split: its documents and those where its halves are adjacent, the chosen split with its adjacent
# documents)
SplitEntry = tuple[
    int,
    int,
    list[tuple[str, str]],
    dict[tuple[str, str], tuple[BitMap, BitMap]],
    tuple[str, str, BitMap] | None,
]


def _chosen(ctx: SearchContext, chosen: tuple[str, str, BitMap] | None) -> tuple[str, str] | None:
    if chosen is None:
        return None
    left, right, adjacent = chosen
    # the phrase `left right` in any field: exactly the documents found adjacent
    ctx.know_phrase((left, right), adjacent)
    return left, right


def _forward_changes(ctx: SearchContext, since: int, version: int) -> BitMap | None:
    """At least the docids whose forward entry changed after version `since` up to `version` (None:
    unknown), kept on the index for the next words. `since` is rounded down to a power-of-two distance
    from `version`, so that the entries of many versions share a few answers (rescanning a document
    that did not change finds what it found before)."""
    since = coarse_version(since, version)
    index = ctx.reader.index
    memo: dict[tuple[int, int], BitMap | None] | None = getattr(index, "_forward_changes", None)
    if memo is None:
        memo = index._forward_changes = {}  # type: ignore[attr-defined]
    if (since, version) in memo:
        return memo[(since, version)]
    out = forward_changes(ctx.reader, since, version)
    if len(memo) >= 64:
        memo.clear()
    memo[(since, version)] = out
    return out


def adjacent_docs(ctx: SearchContext, docs: BitMap, left: str, right: str) -> BitMap:
    """The documents of `docs` where `left` is immediately followed by `right` in one field (any
    field: milli's word pair at proximity 1), read natively from their forward entries."""
    n_fields = max(len(ctx.fields), 1)
    every = np.ones(n_fields, dtype=np.uint8)
    slots: dict[bytes, list[tuple[int, int, bool, bool, int, int]]] = {}
    for slot, word in enumerate((left, right)):
        slots.setdefault(word.encode(), []).append((0, 0, False, True, 0, slot))
    words = sorted(slots)
    query = BucketQuery(
        words,
        [slots[w] for w in words],
        [(0, 0, 2)],
        [(0, 1, 0, 1, False, False)],
        [],
        every,
        every,
        np.zeros(n_fields, dtype=np.int32),
        0,
        False,
    )
    found = query.matched(forward_entries(ctx.reader, docs))
    return BitMap(d for d, hit in zip(docs, found.tolist(), strict=True) if hit)


def _typo_alts(ctx: SearchContext, word: str, budget: int, is_prefix: bool) -> tuple[tuple[int, Alt], ...]:
    """(typos, derivation) of the dictionary words within `budget` typos of `word`, shared by the
    searches of the index. The matcher keeps the first MAX_TYPO_WORDS[d] words of d typos natively
    (numbers dropped when typos on numbers are off).

    An entry computed for an earlier dictionary version still holds when none of the words added or
    removed since is within `budget` typos of `word` (the matcher's answer is a function of each
    dictionary word alone): a stream of small writes keeps most derivations."""
    version = dictionary_version(ctx.reader)
    key = (str(ctx.reader.index.path), word, budget, is_prefix, ctx.no_number_typos)

    def holds(changed: SortedWords) -> bool:
        return not changed.matches(word, budget, is_prefix, 1)

    found: tuple[tuple[int, Alt], ...] | None = _still_current(ctx, TYPO_ALTS, key, version, holds)
    if found is None:
        found = tuple(
            (d, Alt((w,), tolerant=True))
            for w, d in word_table(ctx.reader).matches(
                word, budget, is_prefix, MAX_PREFIX_EXPANSIONS, MAX_TYPO_WORDS, ctx.no_number_typos
            )
        )
        TYPO_ALTS.put(key, (version, found))
    return found


def _prefix_alts(ctx: SearchContext, prefix: str, tolerant: bool) -> tuple[Alt, ...]:
    """The derivations of a prefix's expansions, shared by the searches of the index (index
    directories are never reused); an entry of an earlier dictionary version holds while no word
    added or removed since starts with the prefix."""
    version = dictionary_version(ctx.reader)
    key = (str(ctx.reader.index.path), prefix, tolerant)
    found: tuple[Alt, ...] | None = _still_current(
        ctx, PREFIX_ALTS, key, version, lambda changed: not _any_with_prefix(changed.words, prefix)
    )
    if found is None:
        found = tuple(
            Alt((w,), tolerant=tolerant) for w in prefix_words(ctx.reader, prefix, MAX_PREFIX_EXPANSIONS)
        )
        PREFIX_ALTS.put(key, (version, found), len(found) + 1)
    return found


def _still_current(
    ctx: SearchContext, cache: PlanCache, key: Hashable, version: int, holds: Callable[[SortedWords], bool]
) -> Any | None:
    """The value cached under `key` (as `(dictionary version, value)`) when it is `version`'s: computed
    for it, or for an earlier one and `holds(words changed since)`; None otherwise."""
    entry = cache.get(key)
    if entry is None:
        return None
    at, found = entry
    if at == version:
        return found
    if at < version:
        changed = word_table(ctx.reader).changed_since(at)
        if changed is not None and holds(changed):
            cache.put(key, (version, found), len(found) + 1)
            return found
    return None


def _any_with_prefix(words: Sequence[str], prefix: str) -> bool:
    """Whether sorted `words` hold one starting with `prefix`."""
    i = bisect.bisect_left(words, prefix)
    return i < len(words) and words[i].startswith(prefix)


def _word_node(
    ctx: SearchContext,
    synonyms: Synonyms,
    node: Node,
    budget: int,
    is_prefix: bool,
    ngram_words: Sequence[str] | None,
    splits: bool = True,
) -> None:
    """Fills the derivations of a word or ngram node (milli's `QueryTerm` subsets)."""
    word = node.word
    node.is_prefix = is_prefix
    ngram = ngram_words is not None
    levels: list[list[Alt]] = [[] for _ in range(max(budget, 1) + 1)]
    if ctx.in_dictionary(word):
        alt = Alt((word,), tolerant=ngram)
        levels[0].append(alt)
        if not ngram:
            node.exact = alt
    if is_prefix:
        levels[0].extend(_prefix_alts(ctx, word, ngram))
    levels[0].extend(synonym_alts(synonyms, ngram_words if ngram_words is not None else [word]))
    if budget:
        for d, alt in _typo_alts(ctx, word, budget, is_prefix):
            levels[d].append(alt)
    if not splits:
        split = None
    elif ngram_words is not None and len(ngram_words) == 2:
        # milli drops a 2-gram's best split when it is the query's own two words, which it
        # nearly always is; assuming so spares scanning two words that are both in the query
        split = None
    else:
        split = split_word(ctx, word)
    if split is not None and (ngram_words is None or list(split) != list(ngram_words)):
        levels[1].append(Alt(split, phrase=True))
    node.alts = levels
    node.max_typo = max(budget, 1)


def build_nodes(
    ctx: SearchContext, terms: list[QueryTerm], ngrams: bool = True, splits: bool = True
) -> list[Node]:
    """The query graph's nodes: every term, then (with `ngrams`) 2- and 3-grams of consecutive word
    terms, each with its documents per typo level. The bm25-first mode builds neither ngrams nor
    split-word derivations (`splits`): it sums BM25 over the query's words (`bm25_first.py`)."""
    synonyms = normalized_synonyms(ctx)
    nodes: list[Node] = []
    for t in terms:
        node = Node(t.index, t.index, t.qstart, t.qend, t.word, "phrase" if t.phrase is not None else "word")
        if t.phrase is not None:
            alt = Alt(tuple(t.phrase), phrase=True)
            node.alts = [[alt]]
            node.exact = alt
        else:
            _word_node(ctx, synonyms, node, typo_budget(ctx, t.word), t.is_prefix, None, splits)
        nodes.append(node)
    for size in (2, 3) if ngrams else ():
        for start in range(len(terms) - size + 1):
            group = terms[start : start + size]
            if any(t.phrase is not None for t in group):
                continue
            if any(b.qstart != a.qend + 1 for a, b in itertools.pairwise(group)):
                continue
            word = "".join(t.word for t in group)
            if len(word.encode()) > MAX_WORD_BYTES:
                continue
            node = Node(group[0].index, group[-1].index, group[0].qstart, group[-1].qend, word, "ngram")
            budget = max(typo_budget(ctx, word) - (size - 1), 0)
            _word_node(ctx, synonyms, node, budget, group[-1].is_prefix, [t.word for t in group])
            nodes.append(node)
    for node in nodes:
        _resolve(ctx, node)
    # ngram nodes that match nothing can never be on a path that matches something
    return [n for n in nodes if n.kind != "ngram" or n.docids]


def _alts_docids(ctx: SearchContext, alts: list[Alt]) -> BitMap:
    """The documents of any of `alts` (shared between searches for a prefix's many words)."""

    def union() -> BitMap:
        out = BitMap()
        for alt in alts:
            out |= ctx.alt_docids(alt)
        return out

    return cached_union(ctx.reader, ("alts", ctx.restriction(), tuple(alts)), len(alts), union)


def _resolve(ctx: SearchContext, node: Node) -> None:
    """The node's documents per typo level (each at its cheapest level), in all, and exactly."""
    seen = BitMap()
    node.levels = []
    for alts in node.alts:
        level = _alts_docids(ctx, alts)
        level -= seen
        seen |= level
        node.levels.append(level)
    node.docids = seen
    if node.exact is not None:
        node.exact_docids = ctx.alt_docids(node.exact)
