"""Every database name and stored key of an index environment, and the flags inside its keys.

The modules that own a structure document its layout: `engine/index.py` (documents and metadata),
`engine/update/indexer.py` (full-text), `engine/update/facets.py` (filter, sort, distinct),
`engine/vector/store.py` and `engine/vector/status.py` (vectors).
"""

from __future__ import annotations

from typing import Final

# -- databases ----------------------------------------------------------------------------------------

DB_MAIN: Final = b"main"
DB_DOCUMENTS: Final = b"documents"
DB_EXTERNAL: Final = b"external"
DB_WORD_DOCIDS: Final = b"word-docids"
DB_WORD_FID_DOCIDS: Final = b"word-fid-docids"
DB_DOCID_WORDS: Final = b"docid-words"
DB_VECTORS: Final = b"vectors"
DB_FACET_STRINGS: Final = b"facet-strings"
DB_FACET_NUMBERS: Final = b"facet-numbers"
DB_FACET_FLAGS: Final = b"facet-flags"
DB_FACET_DOCS: Final = b"facet-docs"
FACET_DBS: Final = (DB_FACET_STRINGS, DB_FACET_NUMBERS, DB_FACET_FLAGS, DB_FACET_DOCS)
# The databases besides main, documents and external, all opened with the environment.
EXTRA_DBS: Final = (DB_WORD_DOCIDS, DB_WORD_FID_DOCIDS, DB_DOCID_WORDS, DB_VECTORS, *FACET_DBS)

# -- keys of the main database ------------------------------------------------------------------------

KEY_PRIMARY_KEY: Final = b"primary-key"
KEY_CREATED_AT: Final = b"created-at"
KEY_UPDATED_AT: Final = b"updated-at"
KEY_FIELDS_IDS_MAP: Final = b"fields-ids-map"
KEY_FIELD_DISTRIBUTION: Final = b"field-distribution"
KEY_FREE_DOCIDS: Final = b"free-docids"
KEY_APPLIED_BATCH: Final = b"applied-batch"
# Roaring bitmap of every docid in use: the universe of placeholder search and filters.
KEY_DOCUMENTS_IDS: Final = b"documents-ids"
# The index settings as one JSON object (`apitypes.settings` shape); absent = every setting at its default.
KEY_SETTINGS: Final = b"settings"
# full-text: flattened field names (the index of a name is its search fid) and per-field statistics
KEY_SEARCH_FIELDS: Final = b"search-fields"
KEY_FIELD_STATS: Final = b"field-stats"
# Set once every document's first words are under FIRST_WORD_FID keys: indexes made before those keys
# existed lack them until they are reindexed, and search must not trust a partial set. The value is
# the level of completeness: b"1" first words, b"2" also sole and second words, fields below
# PSEUDO_FID_LIMIT only, b"3" also next words.
KEY_FIRST_WORDS: Final = b"first-words"
FIRST_WORDS_LEVEL: Final = 4  # what this version writes
# The word dictionary's version (u64 BE) and, per version, the words a write added and removed.
KEY_DICTIONARY_VERSION: Final = b"dictionary-version"
KEY_DICTIONARY_DELTA: Final = b"dictionary-delta/"
# The forward index's version (u64 BE, bumped by every flush that changes `docid-words`) and, per
# version, the docids whose forward entry changed (a roaring bitmap; absent: too many, or all).
KEY_FORWARD_VERSION: Final = b"forward-version"
KEY_FORWARD_DELTA: Final = b"forward-delta/"
# facets: faceted field names (the index of a name is its facet fid)
KEY_FACET_FIELDS: Final = b"facet-fields"

# -- pseudo field ids of `word-fid-docids` (csrc/postings.h) -------------------------------------------

FIRST_WORD_FID: Final = 0x8000  # | fid: the field starts with the word (HZ_FIRST_WORD_FID)
SOLE_WORD_FID: Final = 0x4000  # with FIRST_WORD_FID: the field holds that word alone (HZ_SOLE_WORD_FID)
SECOND_WORD_FID: Final = 0x2000  # with FIRST_WORD_FID: the word at position 1 (HZ_SECOND_WORD_FID)
PSEUDO_FID_LIMIT: Final = 0x2000  # fields from this one on have no pseudo keys (HZ_PSEUDO_FID_LIMIT)
NEXT_WORD_FID: Final = 0xE000  # | the next word's `next_word_bits` (HZ_NEXT_WORD_FID)
NEXT_WORD_MAX_LEN: Final = 4  # bytes: longer words have no next-word keys (HZ_NEXT_WORD_MAX_LEN)

# -- facet-flags keys: kind byte + fid ------------------------------------------------------------------

FLAG_EXISTS: Final = 1
FLAG_NULL: Final = 2
FLAG_EMPTY: Final = 4
FLAG_KINDS: Final = ((FLAG_EXISTS, b"e"), (FLAG_NULL, b"n"), (FLAG_EMPTY, b"m"))

# -- keys of the vectors database (E = embedder id, u16 BE) --------------------------------------------

KEY_REGISTRY: Final = b"\xff\xffembedders"
TAG_META: Final = b"\x00"  # E 00: the embedder's meta JSON
TAG_NODE: Final = b"\x01"  # E 01 node: an HNSW node record
TAG_DOC: Final = b"\x03"  # E 03 docid: a document record
MAX_EMBEDDER_ID: Final = 0xFFFE  # 0xFFFF prefixes the registry and the statuses
KEY_STATUS_MARKER: Final = b"\xff\xffstatus"
STATUS_PREFIX: Final = b"\xff\xffstatus/"
