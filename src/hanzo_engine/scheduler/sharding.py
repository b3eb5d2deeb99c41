"""Sharding (Meilisearch Enterprise Edition's `milli::sharding`, docs/api-contract.md §14): which documents
a node keeps, the `_shard` filter, the `network` details of tasks and the `networkTopologyChange` task.

A network is sharded when it has a `leader`. Every node then receives every write (the leader forwards
it, `server.sharding`) and keeps only the documents of the shards it owns. The shard of a document is
chosen by rendezvous hashing over all the network's shards: the shard whose name maximizes XXH3-64
(seed 0) of `name 0xff docid 0xff` (the Rust `Hash` encoding of the pair `(name, docid)` that milli
hashes), so a node of this engine and a Meilisearch node agree on every document's shard.

A `networkTopologyChange` task moves the documents a node keeps but no longer owns to the owners of
their shard (`apply_topology_change`).

The `network` of a task (Meilisearch's `DbTaskNetwork`) is stored in the task record: on the leader
`{"remoteTasks": {name: {"taskUid", "error"}}, "networkVersion"}`, on a follower `{"origin":
{"remoteName", "taskUid", "networkVersion"}}`.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import xxhash
from pyroaring import BitMap

from .network import Network, read_network

if TYPE_CHECKING:
    from hanzo_engine.engine.index import IndexReader

    from .processing import BatchOutcome
    from .scheduler import Scheduler
    from .store import Task, TaskStore


def shard_hash(shard: str, docid: str) -> int:
    return xxhash.xxh3_64_intdigest(shard.encode() + b"\xff" + docid.encode() + b"\xff")


def document_shard(shards: Iterable[str], docid: str) -> str | None:
    """The shard owning `docid` among `shards` (rendezvous hashing); None without shards."""
    best: str | None = None
    best_hash = -1
    for shard in shards:
        value = shard_hash(shard, docid)
        if value >= best_hash:  # Rust's `max_by_key` keeps the last maximum
            best, best_hash = shard, value
    return best


def is_sharded(network: Network) -> bool:
    return network["leader"] is not None and bool(network["shards"])


def own_shards(network: Network) -> frozenset[str]:
    me = network["self"]
    return frozenset(
        name for name, shard in network["shards"].items() if me is not None and me in shard["remotes"]
    )


def ownership(network: Network) -> Callable[[str], bool] | None:
    """Whether this node keeps the document of a given id; None when every document is kept."""
    if not is_sharded(network):
        return None
    shards = sorted(network["shards"])
    mine = own_shards(network)
    if set(shards) <= mine:
        return None
    return lambda docid: document_shard(shards, docid) in mine


def owned_documents(
    store: TaskStore,
    ids: list[str],
    documents: list[dict[str, Any]],
) -> tuple[list[str], list[dict[str, Any]]]:
    """The documents of a payload this node keeps (all of them when the network is not sharded)."""
    keep = ownership(read_network(store))
    if keep is None or not ids:
        return ids, documents
    pairs = [(i, d) for i, d in zip(ids, documents, strict=True) if keep(i)]
    return [i for i, _ in pairs], [d for _, d in pairs]


def shard_docids(reader: IndexReader, network: Network, shard: str, all_docids: BitMap) -> BitMap | None:
    """The documents of `reader` (`all_docids`) in `shard`; None when the network has no such shard."""
    if not is_sharded(network) or shard not in network["shards"]:
        return None
    mine = own_shards(network)
    if shard not in mine:
        return BitMap()
    if len(mine) == 1:  # a node only keeps documents of its shards
        return BitMap(all_docids)
    shards = sorted(network["shards"])
    out = BitMap()
    with reader.txn.cursor(db=reader.index.db_external) as cursor:
        for key, value in cursor:
            if document_shard(shards, bytes(key).decode()) == shard:
                out.add(int.from_bytes(bytes(value)[:4], "big"))
    return out


# -- task network -------------------------------------------------------------------------------------


def set_task_network(
    store: TaskStore, uid: int, update: Callable[[dict[str, Any] | None], dict[str, Any]]
) -> None:
    """Replace the `network` of task `uid` by `update(current)` (one write transaction: the scheduler
    re-reads tasks inside its own, so neither loses the other's change)."""
    with store.env.begin(write=True) as txn:
        task = store.get_task_txn(txn, uid)
        if task is None:
            return
        store.put_task(txn, dict(task, network=update(task.get("network"))), task)


def remote_task_done(
    store: TaskStore, uid: int, remote: str, task_uid: int | None, error: dict[str, str] | None
) -> None:
    def update(current: dict[str, Any] | None) -> dict[str, Any]:
        current = dict(current or {"remoteTasks": {}, "networkVersion": None})
        tasks = dict(current.get("remoteTasks") or {})
        entry: dict[str, Any] = {} if task_uid is None else {"taskUid": task_uid}
        entry["error"] = error
        tasks[remote] = entry
        current["remoteTasks"] = dict(sorted(tasks.items()))
        return current

    set_task_network(store, uid, update)


# -- networkTopologyChange ------------------------------------------------------------------------------

ORIGIN_REMOTE = "X-Meili-Proxy-Origin-Remote"
ORIGIN_TASK_UID = "X-Meili-Proxy-Origin-TaskUid"
ORIGIN_NETWORK_VERSION = "X-Meili-Proxy-Origin-Network-Version"
EXPORT_BATCH = 10_000
_SETTINGS_GATED = ("chat", "foreignKeys")  # refused by an instance whose experimental feature is off


def apply_topology_change(sched: Scheduler, task: Task) -> BatchOutcome:
    """Move the documents this node keeps but no longer owns in the new network to the owners of their
    shard (Meilisearch's export/import, simplified): per index, its settings then its documents go to
    each owner as writes carrying this task as their origin, and the documents are deleted here once
    every owner took them (a failed send keeps them here, named in the task's `message`)."""
    from .processing import BatchOutcome, succeeded

    network = read_network(sched.store)
    # a node owning every shard keeps every document
    moved, failures = (0, []) if ownership(network) is None else _export(sched, task, network)
    message = "Finished" if not failures else "Finished with errors: " + "; ".join(failures)
    details = dict(task.get("details") or {}, movedDocuments=moved, message=message)
    return BatchOutcome({task["uid"]: succeeded(details)})


def _export(sched: Scheduler, task: Task, network: Network) -> tuple[int, list[str]]:
    import httpx

    from hanzo_engine.apitypes.settings import complete_settings
    from hanzo_engine.engine import net_guard
    from hanzo_engine.engine.documents.primary_key import extract_document_id

    shards = sorted(network["shards"])
    mine = own_shards(network)
    moved, failures = 0, []
    headers = {
        ORIGIN_REMOTE: network["self"] or "",
        ORIGIN_TASK_UID: str(task["uid"]),
        ORIGIN_NETWORK_VERSION: network["version"],
        "Content-Type": "application/json",
    }

    def send(client: httpx.Client, owner: str, method: str, path: str, body: Any) -> None:
        remote = network["remotes"][owner]
        url = remote["url"].rstrip("/") + path
        net_guard.check_url(url)
        auth = {"Authorization": f"Bearer {remote['writeApiKey']}"} if remote.get("writeApiKey") else {}
        response = client.request(method, url, content=json.dumps(body).encode(), headers={**headers, **auth})
        if response.status_code != 202:
            raise OSError(f"`{owner}` answered {response.status_code}")

    with httpx.Client(timeout=httpx.Timeout(30.0, connect=3.0), trust_env=False) as client:
        for uid, index in sched.indexes():
            with index.read() as r:
                pk = r.primary_key
                settings = {
                    k: v for k, v in complete_settings(r.settings()).items() if k not in _SETTINGS_GATED
                }
                leaving: dict[str, list[dict[str, Any]]] = {}
                if pk is not None:
                    for document in r.iter_documents():
                        docid = extract_document_id(document, pk)
                        shard = document_shard(shards, docid)
                        if shard is not None and shard not in mine:
                            leaving.setdefault(shard, []).append(document)
            if not leaving:
                continue
            path = "/indexes/" + urllib.parse.quote(uid, safe="")
            done: list[str] = []
            for shard, documents in leaving.items():
                try:
                    for owner in network["shards"][shard]["remotes"]:
                        send(client, owner, "PATCH", f"{path}/settings", settings)
                        for start in range(0, len(documents), EXPORT_BATCH):
                            send(
                                client,
                                owner,
                                "POST",
                                f"{path}/documents?primaryKey={urllib.parse.quote(pk or '')}",
                                documents[start : start + EXPORT_BATCH],
                            )
                except (OSError, httpx.HTTPError) as err:
                    failures.append(f"index `{uid}`, shard `{shard}`: {err}")
                    continue
                done.extend(extract_document_id(d, pk or "") for d in documents)
            if done:
                with index.write() as w:
                    moved += w.delete_documents(done)
                    w.touch()
    return moved, failures
