"""The engine: indexes (storage, updates), search, vectors, tokenizer.

Importing it wires the update layer's writer into the storage layer (`engine/update/writer.py`): every
`Index.write()` then keeps the search, facet and vector structures in step with the documents.
"""

from hanzo_engine.engine.update.writer import install

install()
