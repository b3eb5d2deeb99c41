"""Federated search (Meilisearch's `meilisearch/src/search/federated/`): one ranked list out of the
queries of a multi-search, local and remote.

- `merge`: ranking-rule canonicalization and compatibility, the weighted-score comparison and merge;
- `facets`: `facetsByIndex` and `mergeFacets`.
"""
