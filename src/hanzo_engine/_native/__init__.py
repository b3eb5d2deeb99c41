"""The native core: Cython modules over the C in csrc/, built by setup.py (HANZO_SANITIZE=1: ASan/UBSan).

Each module does, faster, what a plain-Python twin does; a property test in tests/property holds the two
equal on random input (`./dev test` also runs tests/property against the sanitizer build).

- `bm25`: BM25 over raw forward entries (the bm25-first mode).
  Twin: `engine.search.ranking_rules.bm25.score`. Test: test_bm25_first_props.py.
- `bucket`: the sort keys of the rules after words and typo, for a whole bucket.
  Twin: `engine.search.bucket_sort.Ranker`. Test: test_fast_bucket_props.py.
- `docid`: document id validation.
  Twin: the regex in the test. Test: test_document_ids.py.
- `facets`: facet search's typo-tolerant prefix match.
  Twin: `engine.search.facet_distribution._prefix_within`. Test: test_facet_prefix_props.py.
- `filter_scan`: the whole-filter fast path of the filter parser.
  Twin: the general parser of `filter_parser.parser`. Test: test_filter_scan_props.py.
- `hnsw`: the HNSW vector graph.
  Twin: a dict model and an exact numpy scan (in the test). Test: test_hnsw_props.py.
- `indexing`: document analysis, postings and bitmap merges; next-word key bits.
  Twin: `reference_analyze` (in the test) and pyroaring. Tests: test_indexer_props.py,
  test_next_word_bits_props.py (a property of the bits alone).
- `typo_matcher`: typo matching over the sorted word dictionary (a trie walk).
  Twin: `full_scan_matches` (in the test). Test: test_typo_matcher_props.py.
- `tokenizer`: the tokenizer (charabia's rules, over csrc/tokenizer.c).
  Twin: `reference_normalize` of tools/gentables.py, which also generates csrc/tokenizer_tables.h.
  Test: test_tokenizer_props.py.
"""
