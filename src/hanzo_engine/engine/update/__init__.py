"""Index updates: indexing pipeline, settings changes, facets, vectors."""
