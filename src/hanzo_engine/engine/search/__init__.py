"""Keyword search over an index, by concept as milli's `search/new/` (`docs/search-walk.md`):

- `engine`: a search from request to page; `query`: query string -> located terms;
- `context`: fields, settings and docid lookups of one search; `dictionary`: the word table;
- `query_graph`: nodes, derivations, paths; `derivations`: building them;
- `features`: where a node occurs in one document; `matching_words`: what to highlight;
- `bucket_sort`: buckets of the bitmap rules, documents scored on the rest; `native_bucket_keys`:
  whole buckets keyed natively, narrowed first by `native_prefilter`; `ranking_rules/`: one module
  per rule; `score_details`: ranks;
- `bm25_first`: the bm25-first mode; `sorting`: sort rules and distinct on facets;
- `plan_cache`, `union_cache`: structures shared between searches.
"""
