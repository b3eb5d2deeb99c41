"""Query structures shared between searches: what a prefix's derivations turn into.

A one-letter prefix (`a`: the first keystroke of search-as-you-type) expands to up to 1,000 words.
Turning them into the native lookup tables (`_native.bm25.QueryWords`, `_native.bucket.BucketQuery`)
is a visible part of such a search. A table depends only on what it is built from (the
derivations, the nodes' query positions, the rules and the field settings), never on the index's
documents, so those inputs are the key and no write invalidates an entry; the key holds the
derivations themselves (`Alt` tuples, hashed once: `HashedKey`).

The expansions themselves (`Alt` tuples) do depend on the index: they are
keyed by the index's directory and dictionary version (`derivations._prefix_alts`), and so are a
word's typo derivations (`derivations._typo_alts`: the walk of the whole dictionary).

`QueryWords` is read-only once built and is shared (`get`). `BucketQuery` keeps scratch buffers, so a
search takes it out (`take`) and puts it back when it is done (`put`): two searches never use one
at the same time, and a second search of the same query meanwhile builds its own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class HashedKey:
    """A key holding ~1,000 derivations: hashed once (a tuple hashes all its items at every lookup)."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, HashedKey) and self._hash == other._hash and self.value == other.value
        )


class PlanCache:
    """A small least-recently-used map, safe across search threads.

    `capacity` bounds the entries; `max_weight`, when given, also bounds the sum of the entries'
    weights (`put`'s `weight`: what an entry holds, e.g. its derivations), so that a cache can keep
    thousands of small entries without a few large ones growing it past that."""

    def __init__(
        self,
        capacity: int,
        max_weight: int | None = None,
        weigh: Callable[[Hashable, Any], int] | None = None,
    ) -> None:
        self.capacity = capacity
        self.max_weight = max_weight
        self.weigh = weigh  # an entry's weight when `put` is given none
        self.weight = 0
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def take(self, key: Hashable) -> Any | None:
        """The entry under `key`, removed until it is `put` back."""
        with self._lock:
            found = self._entries.pop(key, None)
            if found is None:
                return None
            self.weight -= found[1]
            return found[0]

    def put(self, key: Hashable, value: Any, weight: int | None = None) -> None:
        if weight is None:
            weight = 1 if self.weigh is None else self.weigh(key, value)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.weight -= old[1]
            self._entries[key] = (value, weight)
            self.weight += weight
            while len(self._entries) > self.capacity or (
                self.max_weight is not None and self.weight > self.max_weight and len(self._entries) > 1
            ):
                self.weight -= self._entries.popitem(last=False)[1][1]

    def __len__(self) -> int:
        return len(self._entries)


# sized for ~1,000 derivations an entry (~100-150 KB): a few MB at most
# `derivations._prefix_alts`: a prefix's expansions, with the dictionary version they were checked for
# (weighed by derivations: search traffic repeats its prefixes, and the longer a prefix the fewer
# words it expands to, so most entries are small; ~150 bytes a derivation)
PREFIX_ALTS = PlanCache(16384, max_weight=1 << 17)
# `matching_words._highlighted`: what a node makes the formatter highlight (weighed as PREFIX_ALTS)
MATCHING = PlanCache(16384, max_weight=1 << 17)


def _derivations_in(key: Hashable, value: Any) -> int:
    """The weight of a table keyed by its nodes' `query_graph.alts_key`s: their derivations, plus
    what a table holds whatever its size (8 KiB of word heads, ~64 derivations)."""
    del value
    nodes = key.value if isinstance(key, HashedKey) else key
    assert isinstance(nodes, tuple)
    return 64 + sum(len(level) for node in nodes for level in node.value)


# `ranking_rules.bm25.query_words` tables (the BM25 tie-break of nearly every search)
QUERY_WORDS = PlanCache(16384, max_weight=1 << 17, weigh=_derivations_in)
BUCKET_QUERIES = PlanCache(32)  # `native_bucket_keys.NativeBuckets._build` queries, taken while in use
# `derivations._typo_alts`: a word's typo derivations and the dictionary version they hold for (at
# most 200 words an entry); search traffic repeats its words (search as you type), and the dictionary
# walk is the largest per-word cost of a search on real text
TYPO_ALTS = PlanCache(16384)  # a query of three words makes ~5 entries (words and ngrams)
# `derivations.split_word`: a word's candidate splits with the forward version they hold for
SPLITS = PlanCache(16384)
