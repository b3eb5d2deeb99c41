"""The indexer's entry point for settings changes.

`reindex_for_settings(writer, old, new)` runs inside the write transaction of the batch applying a
`settingsUpdate` task, after the new settings were validated and merged and before they are stored.
`old` and `new` are complete settings objects (the 20 keys of `apitypes.settings.DEFAULT_SETTINGS`).

What needs rebuilding: only the settings that change tokenization (stop words, separator and
non-separator tokens, dictionary) — every field is indexed whatever `searchableAttributes` says, and
typo tolerance, synonyms, ranking rules and the rest are applied at search time. A rebuild re-reads
every stored document in this same transaction, so a failure leaves the index as it was.
"""

from __future__ import annotations

from typing import Any

from hanzo_engine.engine.index import IndexWriter

TOKENIZATION_SETTINGS = ("stopWords", "separatorTokens", "nonSeparatorTokens", "dictionary")


def needs_reindex(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return any(old.get(key) != new.get(key) for key in TOKENIZATION_SETTINGS)


def reindex_for_settings(writer: IndexWriter, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Rebuild the search structures when the tokenization settings differ between `old` and `new`."""
    if not needs_reindex(old, new):
        return
    from hanzo_engine.engine.update.indexer import SearchIndexer

    if writer._search is not None:
        writer._search.flush()
    indexer = SearchIndexer(writer, new)
    writer._search = indexer
    documents = [(docid, doc) for docid, doc in _stored(writer)]
    indexer.reindex_all(documents)


def _stored(writer: IndexWriter) -> list[tuple[int, dict[str, Any]]]:
    import msgspec

    return [(docid, msgspec.json.decode(raw)) for docid, raw in writer.iter_raw_documents()]
