"""The index's word dictionary as a search reads it: the sorted word table the typo matcher walks,
and prefix expansions (milli reads both from its words FST).

The table is cached on the `Index` per dictionary version (`indexer.dictionary_version`: writes that
only change which documents hold known words keep it). A newer version is not built again: the
cached native table stays the base and the words added and removed since (the recorded deltas) are
kept beside it (`WordTable`), a small native table of their own for the added ones, until they
outgrow a fiftieth of the base. A search process under a stream of small writes so pays for a few
new words per commit instead of rebuilding a dictionary of hundreds of thousands of words.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Final

from hanzo_engine._native.typo_matcher import SortedWords
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.storage.keys import DB_WORD_DOCIDS
from hanzo_engine.engine.update.indexer import coarse_version, dictionary_delta, dictionary_version

# the base is built again once the changes since it reach this share of it (or this many words)
REBUILD_SHARE: Final = 50
REBUILD_MIN: Final = 1000
RECENT_TABLES: Final = 8


class WordTable:
    """The dictionary at one version: `base` without `removed`, with `added` (sorted, none in `base`);
    `history` lists the words each version since the base's changed, for `changed_since`."""

    def __init__(
        self,
        base: SortedWords,
        base_version: int,
        added: tuple[str, ...] = (),
        removed: frozenset[str] = frozenset(),
        history: tuple[tuple[int, frozenset[str]], ...] = (),
    ) -> None:
        self.base = base
        self.base_version = base_version
        self.added = added
        self.removed = removed
        self.history = history
        self._added_table = SortedWords(added) if added else None
        self._words: Sequence[str] | None = None if added or removed else base.words
        self._changed: dict[int, tuple[SortedWords, frozenset[str]]] = {}

    @property
    def words(self) -> Sequence[str]:
        """Every word, sorted (materialized once per version: the searches themselves never need it)."""
        if self._words is None:
            self._words = patched(self.base.words, list(self.added), set(self.removed))
        return self._words

    def changes(self) -> int:
        return len(self.added) + len(self.removed)

    def changed_since(self, version: int) -> SortedWords | None:
        """At least the words added or removed by the versions after `version`, as a native table (to
        ask whether a derivation computed at `version` could differ now); None when not known.

        The answer covers the versions after `version` rounded down to a power-of-two distance from
        this version: a few tables per version serve every cached derivation, however many versions
        they were computed at (each exact answer is a native table to build)."""
        found = self._changes(version)
        return None if found is None else found[0]

    def changed_words_since(self, version: int) -> frozenset[str] | None:
        """`changed_since` as a set (to ask whether given words changed)."""
        found = self._changes(version)
        return None if found is None else found[1]

    def _changes(self, version: int) -> tuple[SortedWords, frozenset[str]] | None:
        end = self.history_end()
        if version < self.base_version or version > end:
            return None
        version = coarse_version(version, end, self.base_version)
        found = self._changed.get(version)
        if found is None:
            # the history is in version order: only the versions after `version` are read
            start = bisect.bisect_right(self.history, version, key=lambda entry: entry[0])
            out: set[str] = set()
            for _, words in self.history[start:]:
                out |= words
            found = self._changed[version] = (SortedWords(sorted(out)), frozenset(out))
        return found

    def history_end(self) -> int:
        return self.history[-1][0] if self.history else self.base_version

    def matches(
        self,
        query: str,
        max_typos: int,
        prefix: bool,
        limit: int = 1000,
        keep: tuple[int, ...] | None = None,
        skip_digits: bool = False,
    ) -> list[tuple[str, int]]:
        """`SortedWords.matches` over this version's words: what the native table of all of them gives."""
        extra = (
            self._added_table.matches(query, max_typos, prefix, limit, None, False)
            if self._added_table is not None
            else []
        )
        if not extra and not self.removed:
            # (the common case between rebuilds: no added word is near the query) the base's walk
            return list(self.base.matches(query, max_typos, prefix, limit, keep, skip_digits))
        r = len(self.removed)
        # enough of the base's matches per cost to fill the merged ones: those the merged walk takes
        # (at most `limit`, or `keep[d]` when every word counts), plus the removed ones among them
        base_keep = None if keep is None or skip_digits else tuple(k + r for k in keep)
        found = [
            (w, d)
            for w, d in self.base.matches(query, max_typos, prefix, limit + r, base_keep, False)
            if w not in self.removed
        ]
        if extra:
            found += extra
            found.sort(key=lambda item: item[0])  # code point order: the dictionary's
        # the native walk's caps, per typo count: `limit` words seen (digits too), `keep[d]` kept
        seen: dict[int, int] = {}
        kept: dict[int, int] = {}
        out: list[tuple[str, int]] = []
        for w, d in found:
            cap = min(limit, max(keep[d], 0)) if keep is not None and d < len(keep) else limit
            if seen.get(d, 0) >= limit or kept.get(d, 0) >= cap:
                continue
            seen[d] = seen.get(d, 0) + 1
            if skip_digits and w.isdigit():
                continue
            kept[d] = kept.get(d, 0) + 1
            out.append((w, d))
        return out

    def with_prefix(self, prefix: str, limit: int) -> list[str]:
        """The words starting with `prefix`, `prefix` itself excluded, at most `limit`, in order."""
        picked = _prefixed(self.base.words, prefix, limit + len(self.removed))
        if self.removed:
            picked = [w for w in picked if w not in self.removed]
        if self.added:
            picked = sorted(picked + _prefixed(self.added, prefix, limit))
        return picked[:limit]

    def advanced(self, version: int, added: list[str], removed: set[str]) -> WordTable:
        """This table with one more version's delta applied (`added` new words, `removed` gone ones)."""
        now_added = set(self.added)
        now_removed = set(self.removed)
        for w in removed:
            if w in now_added:
                now_added.discard(w)
            else:
                now_removed.add(w)
        for w in added:
            if w in now_removed:
                now_removed.discard(w)  # back in the base
            else:
                now_added.add(w)
        return WordTable(
            self.base,
            self.base_version,
            tuple(sorted(now_added)),
            frozenset(now_removed),
            (*self.history, (version, frozenset(added) | frozenset(removed))),
        )


def patched(words: Sequence[str], added: list[str], removed: set[str]) -> Sequence[str]:
    """`words` (sorted by code point) without `removed`, with `added`: whole slices copied between
    the changed places, so a few changes cost one pass in C."""
    if removed:
        cuts = sorted(
            i for w in removed if (i := bisect.bisect_left(words, w)) < len(words) and words[i] == w
        )
        kept: list[str] = []
        prev = 0
        for i in cuts:
            kept.extend(words[prev:i])
            prev = i + 1
        kept.extend(words[prev:])
        words = kept
    if not added:
        return words
    out: list[str] = []
    prev = 0
    for w in sorted(added):
        i = bisect.bisect_left(words, w, prev)
        out.extend(words[prev:i])
        if i >= len(words) or words[i] != w:
            out.append(w)
        prev = i
    out.extend(words[prev:])
    return out


def _prefixed(words: Sequence[str], prefix: str, limit: int) -> list[str]:
    """The first `limit` words of sorted `words` starting with `prefix`, `prefix` itself excluded."""
    start = bisect.bisect_left(words, prefix)
    if start < len(words) and words[start] == prefix:
        start += 1
    picked = words[start : start + limit]
    if picked and not picked[-1].startswith(prefix):
        # the words starting with `prefix` are the slice's first ones: those before the prefix
        # with its last character incremented (code point order)
        if ord(prefix[-1]) < 0x10FFFF:
            return list(picked[: bisect.bisect_left(picked, prefix[:-1] + chr(ord(prefix[-1]) + 1))])
        return [w for w in picked if w.startswith(prefix)]
    return list(picked)


def word_table(reader: IndexReader) -> WordTable:
    """The index's words, sorted by code point (as LMDB orders UTF-8 keys), for `reader`'s
    dictionary version; the typo matcher walks them as a trie (`_native/typo_matcher.pyx`).

    The tables of the last RECENT_TABLES versions are kept: while writes commit, searches that began
    before a commit still read the version before it, and must not make the next ones start over."""
    index = reader.index
    version = dictionary_version(reader)
    tables: dict[int, WordTable] | None = getattr(index, "_word_tables", None)
    if tables is None:
        tables = index._word_tables = {}  # type: ignore[attr-defined]
    found = tables.get(version)
    if found is not None:
        return found
    older = [v for v in tables if v < version]
    advanced: WordTable | None = None
    if older:
        start = max(older)
        advanced = tables[start]
        for v in range(start + 1, version + 1):
            delta = dictionary_delta(reader, v)
            if delta is None or advanced is None:
                advanced = None
                break
            advanced = advanced.advanced(v, [w.decode() for w in delta[0]], {w.decode() for w in delta[1]})
        if advanced is not None and advanced.changes() > max(
            REBUILD_MIN, len(advanced.base) // REBUILD_SHARE
        ):
            advanced = WordTable(SortedWords(advanced.words), version)
    if advanced is None:
        with reader.txn.cursor(db=index.db(DB_WORD_DOCIDS)) as cursor:
            words = [bytes(k).decode() for k in cursor.iternext(keys=True, values=False)]
        advanced = WordTable(SortedWords(words), version)
    tables[version] = advanced
    while len(tables) > RECENT_TABLES:
        del tables[min(tables)]
    latest = getattr(index, "_word_table", None)
    if latest is None or latest[0] <= version:
        index._word_table = (version, advanced)  # type: ignore[attr-defined]
    return advanced


def cached_word_table(reader: IndexReader) -> WordTable | None:
    """The cached table of `reader`'s dictionary version (None when there is none: nothing is built)."""
    tables: dict[int, WordTable] | None = getattr(reader.index, "_word_tables", None)
    return None if tables is None else tables.get(dictionary_version(reader))


def prefix_words(reader: IndexReader, prefix: str, limit: int) -> list[str]:
    """Indexed words starting with `prefix`, the word itself excluded, at most `limit`: a slice of
    the cached table when it is the transaction's, else a cursor walk."""
    table = cached_word_table(reader)
    if table is not None and prefix:
        return table.with_prefix(prefix, limit)
    out: list[str] = []
    key = prefix.encode()
    with reader.txn.cursor(db=reader.index.db(DB_WORD_DOCIDS)) as cursor:
        if not cursor.set_range(key):
            return out
        for k in cursor.iternext(keys=True, values=False):
            kb = bytes(k)
            if not kb.startswith(key):
                break
            if kb != key:
                out.append(kb.decode())
                if len(out) >= limit:
                    break
    return out
