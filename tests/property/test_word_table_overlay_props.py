"""The dictionary kept as a native base plus the words added and removed since (`dictionary.WordTable`)
answers exactly what one native table of the current words answers: typo matches (every cap and
option of `SortedWords.matches`), prefix expansions and the word list; and `changed_since` names every
word a version changed, so a derivation it does not reach is still the current one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine._native.typo_matcher import SortedWords
from hanzo_engine.engine.search.dictionary import WordTable

WORD = st.text(alphabet="abcdeé1", min_size=1, max_size=7)
DELTAS = st.lists(st.tuples(st.lists(WORD, max_size=6), st.lists(WORD, max_size=4)), max_size=6)
QUERY = st.tuples(
    st.text(alphabet="abcdeé1", min_size=1, max_size=6),
    st.integers(1, 2),
    st.booleans(),
    st.integers(1, 6),
    st.one_of(st.none(), st.tuples(st.just(0), st.integers(0, 4), st.integers(0, 4))),
    st.booleans(),
)


def _replay(base: list[str], deltas: list[tuple[list[str], list[str]]]) -> tuple[WordTable, list[set[str]]]:
    """The overlay after each delta, made valid as the indexer records them (added words new, removed
    words present), and the word set of each version."""
    current = set(base)
    table = WordTable(SortedWords(sorted(current)), 0)
    versions = [set(current)]
    for v, (add, remove) in enumerate(deltas, start=1):
        added = sorted(set(add) - current)
        removed = set(remove) & current
        current = (current - removed) | set(added)
        table = table.advanced(v, added, removed)
        versions.append(set(current))
    return table, versions


@settings(max_examples=300, deadline=None)
@given(base=st.lists(WORD, max_size=40), deltas=DELTAS, queries=st.lists(QUERY, min_size=1, max_size=6))
def test_the_overlay_answers_as_a_full_table(
    base: list[str], deltas: list[tuple[list[str], list[str]]], queries: list[tuple]
) -> None:
    table, versions = _replay(base, deltas)
    full = SortedWords(sorted(versions[-1]))
    assert list(table.words) == sorted(versions[-1])
    for query, typos, prefix, limit, keep, skip_digits in queries:
        assert table.matches(query, typos, prefix, limit, keep, skip_digits) == full.matches(
            query, typos, prefix, limit, keep, skip_digits
        )
        expected = [w for w in sorted(versions[-1]) if w.startswith(query) and w != query][:limit]
        assert table.with_prefix(query, limit) == expected


@settings(max_examples=200, deadline=None)
@given(base=st.lists(WORD, max_size=30), deltas=DELTAS, query=QUERY, at=st.integers(0, 6))
def test_what_changed_since_a_version_reaches_every_changed_derivation(
    base: list[str], deltas: list[tuple[list[str], list[str]]], query: tuple, at: int
) -> None:
    table, versions = _replay(base, deltas)
    if at >= len(versions):
        return
    word, typos, prefix, limit, keep, skip_digits = query
    changed = table.changed_since(at)
    assert changed is not None
    then = SortedWords(sorted(versions[at])).matches(word, typos, prefix, limit, keep, skip_digits)
    now = SortedWords(sorted(versions[-1])).matches(word, typos, prefix, limit, keep, skip_digits)
    if not changed.matches(word, typos, prefix, 1):
        assert then == now  # what `derivations._typo_alts` relies on to keep an entry
    if not any(w.startswith(word) for w in changed.words):
        assert [w for w in sorted(versions[at]) if w.startswith(word)] == [
            w for w in sorted(versions[-1]) if w.startswith(word)
        ]


SEARCH_WORDS = ["river", "rivers", "driver", "rover", "riven", "liver", "forest", "forests", "fortress"]
SEARCH_TEXT = st.lists(st.sampled_from(SEARCH_WORDS), min_size=1, max_size=4).map(" ".join)
WRITE = st.tuples(st.integers(0, 8), st.one_of(st.none(), SEARCH_TEXT))  # (document, text or delete)


SPLIT_TEXT = st.lists(st.sampled_from(["river", "forest", "rover", "driver"]), min_size=1, max_size=4).map(
    " ".join
)
SPLIT_WRITE = st.tuples(st.integers(0, 5), st.one_of(st.none(), SPLIT_TEXT))


@settings(max_examples=60, deadline=None)
@given(
    writes=st.one_of(
        st.lists(st.lists(WRITE, min_size=1, max_size=3), min_size=1, max_size=8),
        # few words, so that two of them glued often split into a pair adjacent somewhere
        st.lists(st.lists(SPLIT_WRITE, min_size=1, max_size=3), min_size=1, max_size=8),
    )
)
def test_searches_after_each_write_equal_searches_on_cold_caches(
    writes: list[list[tuple[int, str | None]]],
) -> None:
    import tempfile
    from pathlib import Path

    from hanzo_engine.apitypes.settings import complete_settings
    from hanzo_engine.engine.index import Index
    from hanzo_engine.engine.search import engine
    from hanzo_engine.engine.search.plan_cache import PREFIX_ALTS, SPLITS, TYPO_ALTS
    from hanzo_engine.engine.search.types import SearchRequest

    # typos, prefixes, and words that split into two indexed words (`derivations.split_word`)
    queries = [
        "rivers",
        "rivr",
        "drivers",
        "forest",
        "fortres",
        "riv",
        "rovers for",
        "riverforest",
        "forestsriver",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.create(Path(tmp) / "i", primary_key="id", created_at=0)
        try:
            settings_view = complete_settings({})
            for batch in writes:
                with index.write() as w:
                    for doc, text in batch:
                        if text is None:
                            w.delete_document(str(doc))
                        else:
                            w.put_document(str(doc), {"id": doc, "text": text}, merge=False)
                    w.touch()
                with index.read() as r:
                    warm = [engine.search(r, SearchRequest(q=q, limit=20), settings_view) for q in queries]
                # the same searches with no dictionary nor derivation cached, then the warm state back:
                # the next write's searches must find the entries of this version
                caches = (TYPO_ALTS, PREFIX_ALTS, SPLITS)
                saved_table = getattr(index, "_word_table", None), getattr(index, "_word_tables", None)
                saved = [cache._entries.copy() for cache in caches]
                index._word_table = index._word_tables = None  # type: ignore[attr-defined]
                for cache in caches:
                    cache._entries.clear()
                with index.read() as r:
                    cold = [engine.search(r, SearchRequest(q=q, limit=20), settings_view) for q in queries]
                index._word_table, index._word_tables = saved_table  # type: ignore[attr-defined]
                for cache, entries in zip(caches, saved, strict=True):
                    cache._entries = entries
                for a, b in zip(warm, cold, strict=True):
                    assert (a.docids, a.scores, a.candidates) == (b.docids, b.scores, b.candidates)
        finally:
            index.close()


@given(latest=st.integers(0, 10**6), back=st.integers(0, 10**6), oldest=st.integers(0, 10**6))
def test_a_coarse_version_is_at_most_the_version_and_a_power_of_two_back(
    latest: int, back: int, oldest: int
) -> None:
    from hanzo_engine.engine.update.indexer import coarse_version

    version = max(latest - back, 0)
    oldest = min(oldest, version)
    coarse = coarse_version(version, latest, oldest)
    assert oldest <= coarse <= version  # what changed since `coarse` covers what changed since `version`
    if coarse > oldest and version < latest:
        distance = latest - coarse
        assert distance & (distance - 1) == 0 and distance < 2 * (latest - version)
