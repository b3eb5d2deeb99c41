"""The storage layer of an index: what is stored where, and in which byte form.

- `keys`     every LMDB database name of an index environment, every key of its `main` database and
             of the `vectors` database's own records, and the pseudo field ids of `word-fid-docids`.
- `codecs`   the byte forms: big-endian ids in keys, order-preserving f64 keys, bitmaps, forward entries.
- `datadir`  the data directory around the environments: its format version and its lock.
- `environment` how an index's environment is opened (a writable memory map) and the disk space of
             its sparse data file.

`engine/index.py` (the environment, its reader and its storage-only writer) builds on these and
imports nothing from the layers above it; what keeps the search, facet and vector structures in step
with the documents is wired in by the update layer (`engine/update/writer.py`).
"""
