"""hanzo-engine: a Meilisearch-compatible search engine with a native core."""

__version__ = "0.1.0"
# The Meilisearch version whose HTTP API we speak; reported by GET /version and written in dumps.
MEILISEARCH_COMPAT_VERSION = "1.50.0"
