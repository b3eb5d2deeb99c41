"""The search's cached word dictionary (`engine.search.dictionary.word_table`) follows every write.

Random writes (documents added, replaced and deleted, all documents cleared, a tokenization setting
changed so everything is reindexed), each in its own write transaction, with the dictionary read
between some of them: after every write the cached table, patched from the recorded deltas or read
again, must list exactly the keys of `word-docids`, in order.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search import dictionary
from hanzo_engine.engine.update.indexer import DB_WORD_DOCIDS, dictionary_version
from hanzo_engine.engine.update.settings_hook import reindex_for_settings

WORDS = ["apple", "apples", "banana", "band", "bandana", "cherry", "zebra", "zoo", "éclair", "über", "a", "b"]
text = st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join)
op = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 15), text),
    st.tuples(st.just("delete"), st.integers(0, 15), st.just("")),
    st.tuples(st.just("clear"), st.just(0), st.just("")),
    st.tuples(st.just("stop"), st.just(0), st.sampled_from(WORDS)),
)


def stored_words(index: Index) -> list[str]:
    with index.read() as r, r.txn.cursor(db=index.db(DB_WORD_DOCIDS)) as cursor:
        return [bytes(k).decode() for k in cursor.iternext(keys=True, values=False)]


@settings(max_examples=80, deadline=None)
@given(ops=st.lists(st.tuples(op, st.booleans()), min_size=1, max_size=25))
def test_cached_dictionary_follows_writes(ops: list[tuple[tuple[str, int, str], bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.create(Path(tmp) / "i", primary_key="id", created_at=0)
        current: dict[str, Any] = complete_settings({})
        for (kind, key, value), look in ops:
            with index.write() as w:
                if kind == "put":
                    w.put_document(str(key), {"id": key, "text": value}, merge=False)
                elif kind == "delete":
                    w.delete_document(str(key))
                elif kind == "clear":
                    w.clear_documents()
                else:
                    new = complete_settings({"stopWords": [value]})
                    reindex_for_settings(w, current, new)
                    w.set_settings(new)
                    current = new
                w.touch()
            if look:
                with index.read() as r:
                    table = dictionary.word_table(r)
                assert list(table.words) == stored_words(index)
        with index.read() as r:
            assert list(dictionary.word_table(r).words) == stored_words(index)
        index.close()


def test_a_write_patches_the_cached_dictionary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = Index.create(tmp_path / "i", primary_key="id", created_at=0)
    with index.write() as w:
        for i, word in enumerate(WORDS):
            w.put_document(str(i), {"id": i, "text": word}, merge=False)
        w.touch()
    with index.read() as r:
        dictionary.word_table(r)
        before = dictionary_version(r)
    patches: list[int] = []
    patched = dictionary.patched
    monkeypatch.setattr(dictionary, "patched", lambda *a: patches.append(1) or patched(*a))
    with index.write() as w:
        w.put_document("100", {"id": 100, "text": "kiwi banana"}, merge=False)  # a new word
        w.delete_document("0")  # `apple` leaves the dictionary
        w.touch()
    with index.write() as w:
        w.put_document("1", {"id": 1, "text": "apples cherry"}, merge=False)  # no word added or removed
        w.touch()
    with index.read() as r:
        assert dictionary_version(r) == before + 1
        assert list(dictionary.word_table(r).words) == stored_words(index)
    assert patches == [1]
    assert "kiwi" in stored_words(index) and "apple" not in stored_words(index)
    index.close()
