"""Federated search (Meilisearch's `meilisearch/src/search/federated/`): one ranked list out of the
queries of a multi-search, local and remote.

- `types`: the queries of a multi-search, their federation options, the errors naming a query;
- `perform`: the federated search itself (partition, per-index search, merge), and `useNetwork`;
- `remote`: the queries sent to remotes and their answers merged back;
- `merge`: ranking-rule canonicalization and compatibility, the weighted-score comparison and merge;
- `facets`: `facetsByIndex` and `mergeFacets`.
"""
