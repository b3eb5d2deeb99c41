"""The network topology of `/network` (Meilisearch's `meilisearch_types::network::Network`), stored durably.

The topology lives under the key `network` of the `meta` database of the tasks environment: every
process of the server reads the same LMDB environment (search workers open it read-only), a snapshot
copies it with the task queue, and a dump carries it as `network.json`.

Stored shape (the public one without the computed `status` of each remote)::

    {"self": str | None,
     "remotes": {name: {"url": str, "searchApiKey": str | None, "writeApiKey": str | None}},
     "shards": {name: {"remotes": [remote names, sorted]}},
     "leader": str | None,
     "version": uuid}

Maps are kept sorted by key, as Meilisearch's `BTreeMap`s. A database that never stored a network
answers the default: no self, no remote, no shard, no leader, the nil version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

if TYPE_CHECKING:
    from .store import TaskStore

KEY_NETWORK: Final = b"network"
NIL_VERSION: Final = "00000000-0000-0000-0000-000000000000"

Network = dict[str, Any]

_encode = msgspec.json.Encoder().encode


def default_network() -> Network:
    return {"self": None, "remotes": {}, "shards": {}, "leader": None, "version": NIL_VERSION}


def normalize(value: Any) -> Network:
    """A stored or dumped network in canonical form (unknown keys dropped, maps sorted, statuses removed)."""
    out = default_network()
    if not isinstance(value, dict):
        return out
    for key in ("self", "leader"):
        if isinstance(value.get(key), str):
            out[key] = value[key]
    if isinstance(value.get("version"), str):
        out["version"] = value["version"]
    remotes = value.get("remotes")
    if isinstance(remotes, dict):
        for name in sorted(remotes):
            remote = remotes[name]
            if isinstance(remote, dict) and isinstance(remote.get("url"), str):
                out["remotes"][name] = {
                    "url": remote["url"],
                    "searchApiKey": remote.get("searchApiKey")
                    if isinstance(remote.get("searchApiKey"), str)
                    else None,
                    "writeApiKey": remote.get("writeApiKey")
                    if isinstance(remote.get("writeApiKey"), str)
                    else None,
                }
    shards = value.get("shards")
    if isinstance(shards, dict):
        for name in sorted(shards):
            shard = shards[name]
            members = shard.get("remotes") if isinstance(shard, dict) else None
            if isinstance(members, list):
                out["shards"][name] = {"remotes": sorted({m for m in members if isinstance(m, str)})}
    return out


def read_network(store: TaskStore) -> Network:
    """The stored network (the default when none was ever stored)."""
    if store.db_meta is None:
        return default_network()
    with store.env.begin() as txn:
        raw = txn.get(KEY_NETWORK, db=store.db_meta)
    return normalize(msgspec.json.decode(bytes(raw))) if raw is not None else default_network()


def write_network(store: TaskStore, network: Network) -> None:
    """Store `network` durably (the write transaction's commit is synced by LMDB)."""
    with store.env.begin(write=True) as txn:
        txn.put(KEY_NETWORK, _encode(normalize(network)), db=store.db_meta)


def public_view(network: Network, unavailable: frozenset[str] = frozenset()) -> Network:
    """The GET/PATCH body: keys in Meilisearch's order, each remote with its computed `status`."""
    return {
        "self": network["self"],
        "remotes": {
            name: {**remote, "status": "unavailable" if name in unavailable else "available"}
            for name, remote in network["remotes"].items()
        },
        "shards": {name: {"remotes": list(shard["remotes"])} for name, shard in network["shards"].items()},
        "leader": network["leader"],
        "version": network["version"],
    }


def dump_view(store: TaskStore) -> Network:
    """`network.json` of a dump (Meilisearch writes the network as GET shows it)."""
    return public_view(read_network(store))


def import_dump_view(store: TaskStore, value: Any) -> None:
    """Load a dump's `network.json` (absent: the default network). As Meilisearch, the imported
    network loses its `self` and its `leader`: a dump is usually loaded on another machine."""
    network = normalize(value) if value is not None else default_network()
    network["self"] = None
    network["leader"] = None
    write_network(store, network)
