"""The writer of every index write transaction: storage plus the structures derived from documents.

`DocumentWriter` is `engine/index.py`'s `IndexWriter` with its hooks implemented: each stored,
replaced or deleted document goes to the full-text indexer (`indexer.py`), the facet indexer
(`facets.py`), the embedding statuses (`engine/vector/status.py`) and the vector store
(`engine/vector/store.py`), and `flush_metadata` writes what they accumulated. Each structure is
created on first use, so a transaction that never touches one pays nothing for it.

`install()` makes it what `Index.write()` hands out; `hanzo_engine.engine` calls it on import, so
the storage layer never imports this one. Typed code holding an `IndexWriter` reaches the structures
through `document_writer(w)`.
"""

from __future__ import annotations

import os
from typing import Any

from hanzo_engine.engine.index import Index, IndexWriter, indexer_budget
from hanzo_engine.engine.update.facets import FacetIndexer
from hanzo_engine.engine.update.indexer import SearchIndexer
from hanzo_engine.engine.vector.status import StatusWriter
from hanzo_engine.engine.vector.store import VectorStore

__all__ = ["DocumentWriter", "document_writer", "install"]


class DocumentWriter(IndexWriter):
    """An `IndexWriter` that keeps the search, facet and vector structures in step with the documents."""

    def __init__(self, index: Index, txn: Any) -> None:
        super().__init__(index, txn)
        self._search: SearchIndexer | None = None
        self._facets: FacetIndexer | None = None
        self._embedding_status: StatusWriter | None = None

    @property
    def search(self) -> SearchIndexer:
        """The full-text indexer of this transaction, created on first use."""
        if self._search is None:
            self._search = SearchIndexer(self, self.settings())
            if self.index.max_indexing_memory is not None:
                self._search.max_memory = indexer_budget(self.index.max_indexing_memory)
            self._search.threads = indexing_threads(self.index)
        return self._search

    @property
    def facets(self) -> FacetIndexer:
        """The facet indexer of this transaction, created on first use."""
        if self._facets is None:
            self._facets = FacetIndexer(self, self.settings())
        return self._facets

    @property
    def embedding_status(self) -> StatusWriter:
        """The embedding statuses of this transaction, loaded on first use; an index written before
        they existed gets them rebuilt from its documents then."""
        if self._embedding_status is None:
            self._embedding_status = StatusWriter(self)
        return self._embedding_status

    def fresh_search(self, settings: dict[str, Any]) -> SearchIndexer:
        """A new full-text indexer for `settings`, used from now on (the current one is flushed)."""
        if self._search is not None:
            self._search.flush()
        self._search = SearchIndexer(self, settings)
        if self.index.max_indexing_memory is not None:  # a reindex holds to the budget too
            self._search.max_memory = indexer_budget(self.index.max_indexing_memory)
        self._search.threads = indexing_threads(self.index)
        return self._search

    def fresh_facets(self, settings: dict[str, Any]) -> FacetIndexer:
        """A new facet indexer for `settings`, used from now on (the current one is flushed)."""
        if self._facets is not None:
            self._facets.flush()
        self._facets = FacetIndexer(self, settings)
        return self._facets

    def _document_stored(self, docid: int, document: dict[str, Any], external_id: str) -> None:
        self.search.add(docid, document)
        self.facets.add(docid, document, external_id)

    def _document_replaced(self, docid: int) -> None:
        self.search.remove(docid)
        self.facets.remove(docid)

    def _document_deleted(self, docid: int) -> None:
        self.embedding_status.remove_document(docid)
        self.search.remove(docid)
        self.facets.remove(docid)
        VectorStore.of(self.index).remove_document(self, docid)

    def _documents_cleared(self) -> None:
        self.search.clear()
        self.facets.clear()
        VectorStore.of(self.index).clear(self)
        if self._embedding_status is None:  # nothing to rebuild: every document is gone
            self._embedding_status = StatusWriter(self, rebuild=False)
        self._embedding_status.clear()

    def release(self) -> None:
        if self._search is not None:
            self._search.release()

    def _flush_structures(self) -> None:
        if self._search is not None:
            self._search.flush()
        if self._facets is not None:
            self._facets.flush()
        if self._embedding_status is not None:
            self._embedding_status.flush()


def indexing_threads(index: Index) -> int:
    """The threads a batch of added documents is tokenized on: `--max-indexing-threads`, else
    every CPU this process may run on."""
    if index.max_indexing_threads is not None:
        return max(1, index.max_indexing_threads)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def document_writer(writer: IndexWriter) -> DocumentWriter:
    """`writer` as the `DocumentWriter` it is once `install()` ran."""
    if not isinstance(writer, DocumentWriter):
        raise TypeError("index writers are DocumentWriters: hanzo_engine.engine installs them on import")
    return writer


def install() -> None:
    """Make `Index.write()` hand out `DocumentWriter`s."""
    Index.writer_type = DocumentWriter
