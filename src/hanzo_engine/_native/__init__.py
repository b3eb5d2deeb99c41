"""The native core: Cython modules over the C in csrc/, built by setup.py (HANZO_SANITIZE=1: with ASan/UBSan).

Each module does, faster, what a plain-Python twin does; a property test in tests/property holds the two
equal on random input (`./dev test` also runs tests/property against the sanitizer build).

module        what it does                               Python twin -> property test (tests/property/)
`bm25`        BM25 over raw forward entries (bm25-first) `engine.search.ranking_rules.bm25.score`
                                                         -> test_bm25_first_props.py
`bucket`      the rules' sort keys for a whole bucket    `engine.search.bucket_sort.Ranker` -> test_fast_bucket_props.py
`docid`       document id validation                     the regex in the test -> test_document_ids.py
`facets`      facet search's typo-tolerant prefix match  `engine.search.facet_distribution._prefix_within`
                                                         -> test_facet_prefix_props.py
`filter_scan` the whole-filter fast path of the parser   `filter_parser.parser`'s general parser
                                                         -> test_filter_scan_props.py
`hnsw`        the HNSW vector graph                      a dict model and an exact numpy scan -> test_hnsw_props.py
`indexing`    document analysis, postings, bitmap merge  `reference_analyze` and pyroaring -> test_indexer_props.py;
              next-word key bits                         (a property of the bits) -> test_next_word_bits_props.py
`scoring`     typo matching over the sorted dictionary   `full_scan_matches` -> test_typo_matcher_props.py
`tokenizer`   the charabia-rules tokenizer               `reference_normalize` of tools/gentables.py (which
                                                         generates csrc/tokenizer_tables.h) -> test_tokenizer_props.py
"""
