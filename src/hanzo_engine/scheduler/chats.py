"""Chat workspaces: their durable settings, in the `chat-workspaces` database of the tasks environment.

Every process of the server opens the tasks environment, so a workspace written by one is read by all;
snapshots copy the environment whole, so they carry the workspaces. Dumps hold one
`chat-completions-settings/<workspace>.json` per workspace (settings with the API key in clear), as
Meilisearch's dump v6 does.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Final

import lmdb
import msgspec

from hanzo_engine.apitypes.chat_settings import complete_workspace

from .store import TaskStore

log = logging.getLogger("hanzo_engine.chats")

DUMP_DIR: Final = "chat-completions-settings"
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


def _db(store: TaskStore) -> Any:
    db = getattr(store, "db_chats", None)
    if db is None:  # a read-only view opened before the database existed
        raise lmdb.NotFoundError("the chat-workspaces database does not exist yet")
    return db


def get_workspace(store: TaskStore, uid: str) -> dict[str, Any] | None:
    """The complete settings of workspace `uid` (secrets in clear), None when it does not exist."""
    with store.env.begin() as txn:
        raw = txn.get(uid.encode(), db=_db(store))
    return None if raw is None else complete_workspace(_decode(raw))


def put_workspace(store: TaskStore, uid: str, settings: dict[str, Any]) -> None:
    with store.env.begin(write=True) as txn:
        txn.put(uid.encode(), _encode(settings), db=_db(store))


def delete_workspace(store: TaskStore, uid: str) -> bool:
    with store.env.begin(write=True) as txn:
        return bool(txn.delete(uid.encode(), db=_db(store)))


def list_workspaces(store: TaskStore) -> list[str]:
    """Every workspace uid, in byte order."""
    with store.env.begin() as txn, txn.cursor(db=_db(store)) as cursor:
        return [bytes(k).decode() for k in cursor.iternext(keys=True, values=False)]


def all_workspaces(store: TaskStore) -> dict[str, dict[str, Any]]:
    with store.env.begin() as txn, txn.cursor(db=_db(store)) as cursor:
        return {bytes(k).decode(): complete_workspace(_decode(v)) for k, v in cursor}


def dump_members(store: TaskStore) -> list[tuple[str, dict[str, Any]]]:
    """`(member name, settings)` of each workspace for a dump."""
    return [(f"{DUMP_DIR}/{uid}.json", settings) for uid, settings in all_workspaces(store).items()]


def import_dump_dir(store: TaskStore, root: Path) -> int:
    """Replace the workspaces with those of an unpacked dump's `chat-completions-settings/`; how many."""
    folder = root / DUMP_DIR
    found: dict[str, dict[str, Any]] = {}
    if folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            try:
                value = _decode(path.read_bytes())
            except msgspec.DecodeError as exc:
                log.warning("dump: chat workspace `%s` skipped: %s", path.stem, exc)
                continue
            if isinstance(value, dict):
                found[path.stem] = complete_workspace(value)
    with store.env.begin(write=True) as txn:
        db = _db(store)
        txn.drop(db, delete=False)
        for uid, settings in found.items():
            txn.put(uid.encode(), _encode(settings), db=db)
    return len(found)
