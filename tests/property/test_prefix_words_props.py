"""Prefix expansions read from the cached dictionary (`dictionary.prefix_words` slicing `word_table`)
equal the ones read from the word postings with a cursor, for random dictionaries and prefixes
(non-ASCII ones, the word itself, limits that cut the expansions)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search import dictionary

ALPHABET = "abcé東ß"
word = st.text(alphabet=ALPHABET, min_size=1, max_size=5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.lists(word, min_size=1, max_size=6).map(" ".join), min_size=1, max_size=20),
    prefixes=st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=3), min_size=1, max_size=8),
    limit=st.integers(1, 12),
)
def test_prefix_words_from_the_dictionary_equal_the_cursor_walk(
    texts: list[str], prefixes: list[str], limit: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.create(Path(tmp) / "i", primary_key="id", created_at=0)
        with index.write() as w:
            for i, text in enumerate(texts):
                w.put_document(str(i), {"id": i, "title": text}, merge=False)
            w.touch()
        with index.read() as r:
            walked = {p: dictionary.prefix_words(r, p, limit) for p in prefixes}
            table = dictionary.word_table(r)  # from now on the slices of the cached dictionary
            assert getattr(index, "_word_table", None) is not None
            for p in prefixes:
                assert dictionary.prefix_words(r, p, limit) == walked[p], p
                expected = [w for w in table.words if w.startswith(p) and w != p][:limit]
                assert walked[p] == expected, p
        index.close()
