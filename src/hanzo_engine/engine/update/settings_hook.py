"""The indexer's entry point for settings changes.

`reindex_for_settings(writer, old, new)` runs inside the write transaction of the batch applying a
`settingsUpdate` task, after the new settings were validated and merged and before they are stored.
`old` and `new` are complete settings objects (the 20 keys of `apitypes.settings.DEFAULT_SETTINGS`).

What needs rebuilding: the settings that change tokenization (stop words, separator and
non-separator tokens, dictionary) — every field is indexed whatever `searchableAttributes` says, and
typo tolerance, synonyms, ranking rules and the rest are applied at search time — and the settings
that change which fields are faceted (filterable, sortable and distinct attributes, custom
`field:asc|desc` ranking rules; `engine/update/facets.py`), for which only the fields whose status
changed are re-indexed. A rebuild re-reads every stored document in this same transaction; `_geo`
values are validated before anything is rebuilt, so an invalid one fails the task with the index as
it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hanzo_engine.engine.index import IndexWriter
from hanzo_engine.engine.update import facets
from hanzo_engine.engine.update.writer import document_writer

TOKENIZATION_SETTINGS = ("stopWords", "separatorTokens", "nonSeparatorTokens", "dictionary")


def needs_reindex(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return any(old.get(key) != new.get(key) for key in TOKENIZATION_SETTINGS)


def reindex_for_settings(
    writer: IndexWriter, old: dict[str, Any], new: dict[str, Any], uid: str = ""
) -> None:
    """Rebuild the search structures when the tokenization settings differ between `old` and `new`,
    and the facet structures of the fields whose faceted status changed."""
    rebuild_facets = facets.facets_changed(old, new)
    if facets.needs_geo_check(old, new):
        facets.check_geo(new, ((ext, doc) for _, ext, doc in _stored_with_ids(writer)), uid)
    # embeddings are computed before the first write: a failing embedder leaves the index as it was
    from hanzo_engine.engine.vector import documents as vectors

    embedders_changed = vectors.embedders_changed(old, new)
    plan = vectors.plan_embedders(writer, old, new, uid) if embedders_changed else None
    if needs_reindex(old, new):
        _reindex_search(writer, new)
    if embedders_changed:
        vectors.configure_embedders(writer, old, new, plan)
    if rebuild_facets:
        document_writer(writer).fresh_facets(new).rebuild(_stored_with_ids(writer))


def _reindex_search(writer: IndexWriter, new: dict[str, Any]) -> None:
    indexer = document_writer(writer).fresh_search(new)
    indexer.reindex_all(_stored(writer))


def _stored(writer: IndexWriter) -> Iterator[tuple[int, dict[str, Any]]]:
    """(docid, document) of every stored document, decoded one at a time (a reindex never holds them all)."""
    import msgspec

    for docid, raw in writer.iter_raw_documents():
        yield docid, msgspec.json.decode(raw)


def _stored_with_ids(writer: IndexWriter) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(docid, external id, document) of every stored document, decoded one at a time."""
    import msgspec

    external: dict[int, str] = {}
    with writer.txn.cursor(db=writer.index.db_external) as cursor:
        for key, value in cursor:
            external[int.from_bytes(bytes(value), "big")] = bytes(key).decode()
    for docid, raw in writer.iter_raw_documents():
        yield docid, external.get(docid, ""), msgspec.json.decode(raw)
