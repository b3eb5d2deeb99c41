"""The API keys, in their own LMDB environment (`<db_path>/auth`, as Meilisearch's `auth` env).

One database, `api-keys`: key uid (16 raw bytes) -> key record (msgspec JSON, see `Key.to_record`).
Key values are never stored; they are derived from the master key when shown or checked.

Every write goes through this object, which keeps an in-memory snapshot of all keys (a dict replaced
wholesale after each committed write), so the per-request checks read no LMDB page and never see a
half-applied change. Writes are serialized by a lock; LMDB itself makes each one atomic and durable.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import lmdb
import msgspec

from .keys import Key, default_keys

DB_KEYS: Final = b"api-keys"
AUTH_MAP_SIZE: Final = 1 << 30  # 1 GiB, as Meilisearch

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


class KeyExists(Exception):
    """`put_new` found a key with the same uid."""


class KeyStore:
    """All reads and writes of the auth environment. Safe to use from several threads."""

    def __init__(self, path: Path, *, create_defaults: bool = True, readonly: bool = False) -> None:
        """`readonly`: a search worker's view of the keys another process of the server writes."""
        if not readonly:
            path.mkdir(parents=True, exist_ok=True)
        self.env = lmdb.open(
            str(path),
            map_size=AUTH_MAP_SIZE,
            max_dbs=2,
            subdir=True,
            max_readers=256,
            readonly=readonly,
            create=not readonly,
        )
        self.db = self.env.open_db(DB_KEYS, create=not readonly)
        self._lock = threading.Lock()
        self._txn_id = -1  # the last write transaction the snapshot reflects
        self._keys: dict[uuid.UUID, Key] = self._load()
        create_defaults = create_defaults and not readonly
        if create_defaults and not self._keys:
            # a new store gets Meilisearch's default keys, whether or not a master key is set
            with self._lock, self.env.begin(write=True) as txn:
                for key in default_keys(time.time_ns()):
                    txn.put(key.uid.bytes, _encode(key.to_record()), db=self.db)
            self._keys = self._load()

    def close(self) -> None:
        self.env.close()

    def _load(self) -> dict[uuid.UUID, Key]:
        # LMDB iterates in key order, i.e. by uid bytes: the order Meilisearch checks key values in
        with self.env.begin(db=self.db) as txn:
            self._txn_id = txn.id()
            return {
                uuid.UUID(bytes=bytes(raw_uid)): Key.from_record(_decode(raw))
                for raw_uid, raw in txn.cursor()
            }

    def _current(self) -> dict[uuid.UUID, Key]:
        """The snapshot, reloaded when another process of the server committed a change (a key deleted
        through one worker is refused by every worker from the next request on)."""
        if self.env.info()["last_txnid"] != self._txn_id:
            with self._lock:
                if self.env.info()["last_txnid"] != self._txn_id:
                    self._keys = self._load()
        return self._keys

    # -- reads (from the snapshot) ------------------------------------------------------------------

    @property
    def keys(self) -> Mapping[uuid.UUID, Key]:
        """Every key, by uid, in uid byte order. The mapping is never mutated: writes replace it."""
        return self._current()

    def get(self, uid: uuid.UUID) -> Key | None:
        return self._current().get(uid)

    def list(self) -> list[Key]:
        """All keys, most recently created first (as `GET /keys`)."""
        return sorted(self._current().values(), key=lambda k: k.created_at, reverse=True)

    # -- writes -------------------------------------------------------------------------------------

    def put_new(self, key: Key) -> Key:
        """Store a key whose uid is not taken yet; KeyExists otherwise."""
        with self._lock:
            with self.env.begin(write=True) as txn:
                if txn.get(key.uid.bytes, db=self.db) is not None:
                    raise KeyExists(str(key.uid))
                txn.put(key.uid.bytes, _encode(key.to_record()), db=self.db)
            self._keys = self._load()
        return key

    def put(self, key: Key) -> Key:
        """Insert or replace a key (updates, dump imports)."""
        with self._lock:
            with self.env.begin(write=True) as txn:
                txn.put(key.uid.bytes, _encode(key.to_record()), db=self.db)
            self._keys = self._load()
        return key

    def delete(self, uid: uuid.UUID) -> bool:
        """Remove a key; False when there was none."""
        with self._lock:
            with self.env.begin(write=True) as txn:
                existed = bool(txn.delete(uid.bytes, db=self.db))
            self._keys = self._load()
        return existed

    def delete_all(self) -> None:
        """Remove every key (a dump import replaces the whole set)."""
        with self._lock:
            with self.env.begin(write=True) as txn:
                txn.drop(self.db, delete=False)
            self._keys = self._load()
