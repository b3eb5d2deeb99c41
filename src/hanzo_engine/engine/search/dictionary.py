"""The index's word dictionary as a search reads it: the sorted word table the typo matcher walks,
and prefix expansions (milli reads both from its words FST).

The table is cached on the `Index` per dictionary version (`indexer.dictionary_version`: writes that
only change which documents hold known words keep it); a table a few versions behind is patched with
the recorded deltas instead of being read again.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from hanzo_engine._native.typo_matcher import SortedWords
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.storage.keys import DB_WORD_DOCIDS
from hanzo_engine.engine.update.indexer import dictionary_delta, dictionary_version


def word_table(reader: IndexReader) -> SortedWords:
    """The index's words, sorted by code point (as LMDB orders UTF-8 keys), for `reader`'s
    dictionary version; the typo matcher walks it as a trie (`_native/typo_matcher.pyx`)."""
    index = reader.index
    version = dictionary_version(reader)
    cached = getattr(index, "_word_table", None)
    if cached is not None and cached[0] == version:
        table: SortedWords = cached[1]
        return table
    words: Sequence[str] | None = None
    if cached is not None and cached[0] < version:
        words = cached[1].words
        for v in range(cached[0] + 1, version + 1):
            delta = dictionary_delta(reader, v)
            if delta is None or words is None:
                words = None
                break
            words = patched(words, [w.decode() for w in delta[0]], {w.decode() for w in delta[1]})
    if words is None:
        with reader.txn.cursor(db=index.db(DB_WORD_DOCIDS)) as cursor:
            words = [bytes(k).decode() for k in cursor.iternext(keys=True, values=False)]
    table = SortedWords(words)
    index._word_table = (version, table)  # type: ignore[attr-defined]
    return table


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


def prefix_words(reader: IndexReader, prefix: str, limit: int) -> list[str]:
    """Indexed words starting with `prefix`, the word itself excluded, at most `limit`: a slice of
    the cached table when it is the transaction's, else a cursor walk."""
    cached = getattr(reader.index, "_word_table", None)
    if cached is not None and prefix and cached[0] == dictionary_version(reader):
        words: Sequence[str] = cached[1].words
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
