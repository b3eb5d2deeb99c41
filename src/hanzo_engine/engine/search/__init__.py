"""Keyword search over an index (query terms, bucket sort, ranking score). See engine.py."""
