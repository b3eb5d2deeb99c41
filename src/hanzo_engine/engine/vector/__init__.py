"""Vectors of an index: the native HNSW store (embedders and hybrid search build on it)."""

from hanzo_engine.engine.vector.store import DISTANCES, EmbedderConfig, Vectors, VectorStore, as_matrix

__all__ = ["DISTANCES", "EmbedderConfig", "VectorStore", "Vectors", "as_matrix"]
