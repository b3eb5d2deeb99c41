"""Sharded writes and searches (Meilisearch Enterprise Edition's `proxy` module, docs/api-contract.md §14).

A network is sharded when it has a `leader`. Then:

- every write route (`is_write_route`: index, document, settings, swap and dynamic-search-rule writes)
  must reach the leader: another node answers 400 `not_leader`, unless the request carries the
  `X-Meili-Proxy-Origin-*` headers the leader sends (`ShardedWrites`, an ASGI middleware);
- the leader registers its task as usual, then hands the same method, path, query and body to the
  `Forwarder`, which stores it in the outbox (`outbox`, one `fdatasync`) before the leader answers, then
  sends it to every other remote with the remote's `writeApiKey` and the origin headers. The HTTP answer
  never waits for the remotes: one sender thread per remote keeps the leader's task order, retries
  transient failures with exponential backoff (connect timeout 3 s, request 30 s, error reported after
  25 s; `MEILI_EXPERIMENTAL_PROXY_{CONNECT,REQUEST,BACKOFF}_TIMEOUT_SECONDS`) and records the remote's
  task uid or its error in the task's `network.remoteTasks`. A write stays in the outbox until its remote
  answered, and a restarted leader resumes the ones left;
- a follower receiving a forwarded write records `network.origin` on its task; a request whose network
  version is older than the node's is refused (400 `network_version_too_old`);
- every node keeps only the documents of the shards it owns (`scheduler.sharding`), and a search with
  `useNetwork` (the default with a leader) sends one query per shard to one of its owners, with
  `_shard = "<shard>"` AND-ed to its filter (`network_targets`, `shard_filter`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import heapq
import itertools
import json
import logging
import os
import random
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
from pyroaring import BitMap
from starlette.requests import Request

from hanzo_engine.apitypes.errors import MeiliError, error_json
from hanzo_engine.engine import net_guard
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.search import filter as filter_module
from hanzo_engine.scheduler import sharding
from hanzo_engine.scheduler.network import NIL_VERSION, Network, read_network
from hanzo_engine.scheduler.store import TaskStore

from . import outbox, remotes
from .auth import guard

log = logging.getLogger("hanzo_engine.server.sharding")

ORIGIN_REMOTE: Final = "X-Meili-Proxy-Origin-Remote"
ORIGIN_TASK_UID: Final = "X-Meili-Proxy-Origin-TaskUid"
ORIGIN_NETWORK_VERSION: Final = "X-Meili-Proxy-Origin-Network-Version"

# (path, {method: the route's API key action})
_WRITE_ROUTES: Final = (
    (re.compile(r"^/indexes$"), {"POST": "indexes.create"}),
    (re.compile(r"^/indexes/(?P<uid>[^/]+)$"), {"PATCH": "indexes.update", "DELETE": "indexes.delete"}),
    (
        re.compile(r"^/indexes/(?P<uid>[^/]+)/documents$"),
        {"POST": "documents.add", "PUT": "documents.add", "DELETE": "documents.delete"},
    ),
    (re.compile(r"^/indexes/(?P<uid>[^/]+)/documents/(delete|delete-batch)$"), {"POST": "documents.delete"}),
    (re.compile(r"^/indexes/(?P<uid>[^/]+)/documents/edit$"), {"POST": "documents.*"}),
    (re.compile(r"^/indexes/(?P<uid>[^/]+)/documents/[^/]+$"), {"DELETE": "documents.delete"}),
    (
        re.compile(r"^/indexes/(?P<uid>[^/]+)/settings(/[^/]+)?$"),
        {"PATCH": "settings.update", "PUT": "settings.update", "DELETE": "settings.update"},
    ),
    (re.compile(r"^/swap-indexes$"), {"POST": "indexes.swap"}),
    (
        re.compile(r"^/dynamic-search-rules(/[^/]+)?$"),
        {"PATCH": "dynamicSearchRules.update", "DELETE": "dynamicSearchRules.delete"},
    ),
)


def write_route(method: str, path: str) -> tuple[str, str | None] | None:
    """The API key action and index uid of a write route (None: not a write route)."""
    for pattern, methods in _WRITE_ROUTES:
        found = pattern.match(path)
        if found is not None and method in methods:
            return methods[method], found.groupdict().get("uid")
    return None


def is_write_route(method: str, path: str) -> bool:
    return write_route(method, path) is not None


def _env_seconds(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


# -------------------------------------------------------------------------------------------------
# Origin headers
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Origin:
    remote_name: str
    task_uid: int
    network_version: str

    def to_json(self) -> dict[str, Any]:
        return {
            "remoteName": self.remote_name,
            "taskUid": self.task_uid,
            "networkVersion": self.network_version,
        }


def origin_from_headers(headers: dict[str, str]) -> Origin | None:
    """The origin a forwarded request declares (None when it declares none)."""
    remote, task_uid = headers.get(ORIGIN_REMOTE.lower()), headers.get(ORIGIN_TASK_UID.lower())
    if remote is None and task_uid is None:
        return None
    if remote is None or task_uid is None:
        present, missing = (
            (ORIGIN_TASK_UID, ORIGIN_REMOTE) if remote is None else (ORIGIN_REMOTE, ORIGIN_TASK_UID)
        )
        raise MeiliError(
            "inconsistent_document_change_headers",
            f"Inconsistent `Origin` headers: {present} was provided but {missing} is missing.\n"
            "  - Hint: Either both headers should be provided, or none of them",
        )
    if not task_uid.isdigit() or int(task_uid) >= 1 << 32:
        raise MeiliError(
            "invalid_header_value",
            f"Invalid value for header `{ORIGIN_TASK_UID}`: could not parse `{task_uid}` as a task uid",
        )
    version = headers.get(ORIGIN_NETWORK_VERSION.lower()) or NIL_VERSION
    return Origin(remote, int(task_uid), version.lower())


def check_write(network: Network, origin: Origin | None) -> str | None:
    """Refuse a write this node may not take; returns the role it takes it in: "leader" (forward it),
    "follower" (record its origin) or None (no sharding)."""
    if origin is None:
        leader = network["leader"]
        if leader is None:
            return None
        if leader != network["self"]:
            raise MeiliError(
                "not_leader",
                "This remote is not the leader of the network.\n  - Note: only the "
                f"leader `{leader}` can receive new tasks.",
            )
        role = "leader"
        version = network["version"]
    else:
        role, version = "follower", origin.network_version
    if version < network["version"]:  # UUIDv7s in their text form order as their timestamps
        raise MeiliError(
            "network_version_too_old",
            "The network version in request is too old.\n"
            f"  - Received: {version}\n  - Expected at least: {network['version']}",
        )
    return role


# -------------------------------------------------------------------------------------------------
# The forwarder
# -------------------------------------------------------------------------------------------------


@dataclass
class Job:
    task_uid: int
    method: str
    path: str  # path and query, as received
    headers: dict[str, str]  # content-type / content-encoding
    body: bytes
    network_version: str
    origin_name: str


@dataclass
class _Pending:
    """A job waiting for one remote; its body is read back from the outbox when it is stored there."""

    job: Job
    remote: dict[str, Any]  # the remote's `url` and `writeApiKey` when the write was taken
    entry: outbox.Entry | None  # None: kept in memory only (the outbox could not store it)
    barrier: frozenset[int]  # writes in flight at submission: one of them may hold a smaller task uid
    seq: int
    deadline: float | None = None  # of the retries before the remote is reported failing
    delay: float = 0.5
    error_recorded: bool = False

    def __lt__(self, other: _Pending) -> bool:
        return (self.job.task_uid, self.seq) < (other.job.task_uid, other.seq)


class Forwarder:
    """A durable queue (`outbox.Outbox`) and one sender thread per remote (see the module doc).

    A remote receives the writes in the leader's task order: each queue is a heap on task uids, and its
    head waits until every write that was in flight when it was submitted (and could hold a smaller task
    uid) has been submitted or has failed (`begin_write` / `end_write`). An entry leaves the outbox only
    once its remote answered (a task uid, or an error that retrying cannot fix). While a remote does not
    answer, its head is retried forever; once its first retries are over, its error is recorded in the
    `remoteTasks` of every queued write, and replaced by the remote's task uid when it answers.
    """

    def __init__(self, store: TaskStore, directory: Path | None) -> None:
        self.store = store
        self.outbox = outbox.Outbox(directory) if directory is not None else None
        self._cond = threading.Condition()
        self._queues: dict[str, list[_Pending]] = {}
        self._in_flight: set[int] = set()
        self._tickets = itertools.count()
        self._seqs = itertools.count()
        self._pending = 0
        self._open_lock = threading.Lock()
        self._opened = False
        self._closed = False

    def open(self) -> None:
        """Load the outbox (once) and resume its pending forwards, in task order per remote."""
        with self._open_lock:
            if self._opened:
                return
            self._opened = True
            if self.outbox is None:
                return
            pending = self.outbox.load()
        if pending:
            log.info("resuming %d pending forwards of the network outbox", len(pending))
        for name, entry in pending:
            job = Job(
                entry.task_uid,
                entry.method,
                entry.path,
                entry.headers,
                b"",
                entry.network_version,
                entry.origin_name,
            )
            self._enqueue(name, _Pending(job, entry.remote, entry, frozenset(), 0))

    def close(self) -> None:
        """Stop the senders (at their next wait) and close the outbox; what is pending stays stored."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self.outbox is not None:
            self.outbox.close()

    def begin_write(self) -> int:
        with self._cond:
            ticket = next(self._tickets)
            self._in_flight.add(ticket)
            return ticket

    def end_write(self, ticket: int) -> None:
        with self._cond:
            self._in_flight.discard(ticket)
            self._cond.notify_all()

    def submit(self, job: Job, targets: dict[str, tuple[dict[str, Any], bytes]]) -> None:
        """Store `job` for every remote of `targets` (`name: (remote, body)`), then queue it."""
        self.open()
        entries: dict[str, outbox.Entry] | None = None
        if self.outbox is not None:
            try:
                entries = self.outbox.append(
                    job.task_uid,
                    job.method,
                    job.path,
                    job.headers,
                    job.network_version,
                    job.origin_name,
                    targets,
                )
            except OSError:
                log.exception(
                    "the network outbox could not store the forward of task %d: kept in memory only",
                    job.task_uid,
                )
        with self._cond:
            barrier = frozenset(self._in_flight)
        for name, (remote, body) in targets.items():
            entry = entries.get(name) if entries is not None else None
            stored = dataclasses.replace(job, body=b"" if entry is not None else body)
            self._enqueue(name, _Pending(stored, remote, entry, barrier, 0))

    def _enqueue(self, name: str, item: _Pending) -> None:
        with self._cond:
            item.seq = next(self._seqs)
            q = self._queues.get(name)
            if q is None:
                q = self._queues[name] = []
                threading.Thread(
                    target=self._run, args=(name,), name=f"hanzo-forward-{name}", daemon=True
                ).start()
            heapq.heappush(q, item)
            self._pending += 1
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Block until every submitted job was answered or dropped (tests)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)

    def _head(self, name: str) -> _Pending | None:
        with self._cond:
            while not self._closed:
                q = self._queues[name]
                if q and not q[0].barrier & self._in_flight:
                    return q[0]
                self._cond.wait(1.0)
            return None

    def _pause(self, name: str, seconds: float, failing: dict[str, str] | None) -> None:
        """Wait before a retry; while the remote is failing, its newly queued writes record the error."""
        until = time.monotonic() + seconds
        while True:
            with self._cond:
                fresh = [] if failing is None else [i for i in self._queues[name] if not i.error_recorded]
                for item in fresh:
                    item.error_recorded = True
            for item in fresh:
                sharding.remote_task_done(self.store, item.job.task_uid, name, None, failing)
            left = until - time.monotonic()
            if left <= 0 or self._closed:
                return
            with self._cond:
                self._cond.wait(left)

    def _remote(self, name: str, item: _Pending) -> tuple[dict[str, Any], bool]:
        """The remote as the current network knows it (its url or key may have changed), and whether the
        network still has it."""
        current = read_network(self.store)["remotes"].get(name)
        return (current, True) if current is not None else (item.remote, False)

    def _run(self, name: str) -> None:
        with httpx.Client(follow_redirects=False, trust_env=False) as client:
            failing: dict[str, str] | None = None
            while True:
                item = self._head(name)
                if item is None:
                    return
                try:
                    result, failing = self._attempt(client, name, item, failing)
                except Exception:
                    log.exception("forwarding task %d to remote `%s` failed", item.job.task_uid, name)
                    result = None
                if result is None:
                    self._pause(name, item.delay * random.uniform(0.5, 1.5), failing)
                    item.delay = min(item.delay * 1.5, _retry_cap())
                    continue
                try:
                    sharding.remote_task_done(self.store, item.job.task_uid, name, *result)
                    if item.entry is not None and self.outbox is not None:
                        self.outbox.done(name, item.entry)
                except Exception:
                    log.exception(
                        "recording the forward of task %d to remote `%s` failed", item.job.task_uid, name
                    )
                with self._cond:
                    q = self._queues[name]
                    q.remove(item)
                    heapq.heapify(q)
                    self._pending -= 1
                    self._cond.notify_all()

    def _attempt(
        self,
        client: httpx.Client,
        name: str,
        item: _Pending,
        failing: dict[str, str] | None,
    ) -> tuple[tuple[int | None, dict[str, str] | None] | None, dict[str, str] | None]:
        """One send: `(the answer to record, or None to retry later; the remote's failing error)`."""
        remote, in_network = self._remote(name, item)
        job = item.job
        if item.entry is not None and self.outbox is not None:
            job = dataclasses.replace(job, body=self.outbox.body(item.entry))
        url = remotes.remote_url(remote["url"], "/")[:-1] + job.path
        try:
            return (_send_once(client, url, remote, job), None), None
        except _Failure as failure:
            error = failure.error.to_json()
            if not failure.transient:
                return (None, error), None
            now = time.monotonic()
            if item.deadline is None:
                item.deadline = now + _env_seconds("MEILI_EXPERIMENTAL_PROXY_BACKOFF_TIMEOUT_SECONDS", 25.0)
            if now < item.deadline:
                log.warning(
                    "forwarding task %d to `%s` failed (%s), retrying",
                    job.task_uid,
                    name,
                    failure.error.message,
                )
                return None, failing
            if not in_network:  # a remote that left the network is not waited for
                return (None, error), None
            return None, error


def _retry_cap() -> float:
    """The longest pause between two sends to a failing remote: how late it hears of writes once back."""
    return max(1.0, min(60.0, _env_seconds("MEILI_EXPERIMENTAL_PROXY_BACKOFF_TIMEOUT_SECONDS", 25.0)))


class _Failure(Exception):
    def __init__(self, error: MeiliError, transient: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.transient = transient


_WRITE_HINTS: Final = (
    "\n  - hint: check that the remote instance has the correct index configuration for that "
    "request\n  - hint: check that the `network` experimental feature is enabled on the remote "
    "instance"
)


def _quoted(raw: bytes) -> str:
    try:
        return json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return raw.decode("utf-8", errors="replace")


def _send_once(client: httpx.Client, url: str, remote: dict[str, Any], job: Job) -> int:
    headers = dict(job.headers)
    if remote.get("writeApiKey") is not None:
        headers["Authorization"] = f"Bearer {remote['writeApiKey']}"
    headers[ORIGIN_REMOTE] = job.origin_name
    headers[ORIGIN_TASK_UID] = str(job.task_uid)
    headers[ORIGIN_NETWORK_VERSION] = job.network_version
    timeout = httpx.Timeout(
        _env_seconds("MEILI_EXPERIMENTAL_PROXY_REQUEST_TIMEOUT_SECONDS", 30.0),
        connect=_env_seconds("MEILI_EXPERIMENTAL_PROXY_CONNECT_TIMEOUT_SECONDS", 3.0),
    )
    try:
        net_guard.check_url(url)
    except OSError as err:
        raise _Failure(
            MeiliError("remote_could_not_send_request", f"error sending request: {err}"), False
        ) from None
    try:
        response = client.request(job.method, url, content=job.body or None, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        raise _Failure(
            MeiliError("remote_timeout", "remote host did not answer before the deadline"), True
        ) from None
    except httpx.HTTPError:
        raise _Failure(MeiliError("remote_could_not_send_request", "error sending request"), True) from None
    status, raw = response.status_code, response.content
    if status in (401, 403):
        raise _Failure(
            MeiliError(
                "remote_invalid_api_key",
                "could not authenticate against the remote host\n  - "
                "hint: check that the remote instance was registered with a valid API key having "
                "the `documents.add` action",
            ),
            False,
        )
    if 400 <= status < 500:
        raise _Failure(
            MeiliError(
                "remote_bad_request",
                f"remote host responded with code {status}:\n  - response "
                f"from remote: {_quoted(raw)}{_WRITE_HINTS}",
            ),
            False,
        )
    if status >= 500:
        raise _Failure(
            MeiliError(
                "remote_remote_error",
                f"remote host responded with code {status}:\n  - response from remote: {_quoted(raw)}",
            ),
            True,
        )
    try:
        value = json.loads(raw)
        task_uid = value["taskUid"]
        if not isinstance(task_uid, int):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise _Failure(
            MeiliError(
                "remote_bad_response",
                "could not parse response from the remote host as a "
                f"document addition response:\n  - response from remote: {_quoted(raw)}\n  - hint: "
                "check that the remote instance is a Meilisearch instance running the same version",
            ),
            False,
        ) from None
    return task_uid


_forwarders: dict[str, Forwarder] = {}
_forwarders_lock = threading.Lock()


def forwarder(store: TaskStore) -> Forwarder:
    """The forwarder of the node whose task store is `store` (its outbox is in the same data directory)."""
    path = store.env.path()
    with _forwarders_lock:
        found = _forwarders.get(path)
        if found is None:
            found = _forwarders[path] = Forwarder(store, Path(path).parent / outbox.DIRECTORY)
        found.store = store
    return found


def resume_forwards(store: TaskStore) -> None:
    """At startup: send the forwards a previous run of this node stored but did not finish."""
    forwarder(store).open()


def forward(
    store: TaskStore,
    network: Network,
    task_uid: int,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    bodies: dict[str, bytes] | None = None,
) -> None:
    """Store, then send, a write of task `task_uid` to every remote but this node (`bodies` overrides the
    body per remote). Returns once the write is durable in the outbox (one `fdatasync`)."""
    me = network["self"]
    targets = {
        name: (remote, bodies.get(name, body) if bodies is not None else body)
        for name, remote in network["remotes"].items()
        if name != me
    }
    if targets:
        forwarder(store).submit(
            Job(task_uid, method, path, headers, b"", network["version"], me or ""), targets
        )


# -------------------------------------------------------------------------------------------------
# The middleware
# -------------------------------------------------------------------------------------------------


async def _send_error(send: Any, err: MeiliError) -> None:
    payload = json.dumps(error_json(err.code, err.message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": err.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class ShardedWrites:
    """Routes the writes of a sharded network (see the module doc); everything else passes through."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        write = write_route(scope["method"], scope["path"]) if scope["type"] == "http" else None
        if write is None:
            await self.app(scope, receive, send)
            return
        store: TaskStore = scope["app"].state.hanzo.scheduler.store
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            network = await asyncio.to_thread(read_network, store)
            origin = origin_from_headers(headers)
            if origin is None and network["leader"] not in (None, network["self"]):
                guard(Request(scope), *write)  # the API key is checked first, as by Meilisearch's extractors
            role = check_write(network, origin)
        except MeiliError as err:
            await _send_error(send, err)
            return
        if role is None:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        # a forwarded write keeps the leader's task order (`Forwarder`): the leader's writes in flight are
        # known until their forward is queued (not until answered: `WaitForTask` may hold the answer)
        fw = forwarder(store) if role == "leader" else None
        ticket = fw.begin_write() if fw is not None else None
        try:
            start, payload = await self._write(scope, store, headers, network, role, origin, body, replay)
        finally:
            if fw is not None and ticket is not None:
                fw.end_write(ticket)
        await send(start)
        await send({"type": "http.response.body", "body": payload})

    async def _write(
        self,
        scope: Any,
        store: TaskStore,
        headers: dict[str, str],
        network: Network,
        role: str,
        origin: Origin | None,
        body: bytes,
        replay: Any,
    ) -> tuple[dict[str, Any], bytes]:
        """Run the write, record its `network` and, on the leader, store its forward; its answer."""
        start: dict[str, Any] = {}
        response: list[bytes] = []

        async def capture(message: Any) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                response.append(message.get("body", b""))

        await self.app(scope, replay, capture)
        payload = b"".join(response)
        if start.get("status") == 202:
            task_uid = _task_uid(payload)
            if task_uid is not None:
                if role == "follower":
                    assert origin is not None
                    await asyncio.to_thread(
                        sharding.set_task_network, store, task_uid, lambda _: {"origin": origin.to_json()}
                    )
                else:
                    await asyncio.to_thread(
                        sharding.set_task_network,
                        store,
                        task_uid,
                        lambda _: {"remoteTasks": {}, "networkVersion": network["version"]},
                    )
                    path = scope.get("raw_path") or scope["path"].encode()
                    if scope.get("query_string"):
                        path += b"?" + scope["query_string"]
                    kept = {k: v for k, v in headers.items() if k in ("content-type", "content-encoding")}
                    # durable before the answer: an acknowledged write reaches every remote, even after a crash
                    await asyncio.to_thread(
                        forward, store, network, task_uid, scope["method"], path.decode("latin-1"), kept, body
                    )
        return start, payload


def _task_uid(payload: bytes) -> int | None:
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    uid = value.get("taskUid") if isinstance(value, dict) else None
    return uid if isinstance(uid, int) else None


# -------------------------------------------------------------------------------------------------
# Searches
# -------------------------------------------------------------------------------------------------


def uses_network(use_network: bool | None, network: Network) -> bool:
    """`useNetwork` with its default: true in a sharded network, else false."""
    return use_network if use_network is not None else network["leader"] is not None


async def request_uses_network(feature_enabled: bool, store: TaskStore, use_network: bool | None) -> bool:
    """`uses_network` for a request, reading the network only when the answer depends on it."""
    if use_network is not None or not feature_enabled:
        return bool(use_network)
    return uses_network(None, await asyncio.to_thread(read_network, store))


def proxied_use_network(network: Network) -> bool | None:
    """The `useNetwork` of a query sent to a remote: explicitly false in a sharded network (the remote
    would otherwise fan it out again), absent otherwise."""
    return False if network["leader"] is not None else None


def network_targets(network: Network, db_path: Path | None = None) -> list[tuple[str | None, str | None]]:
    """Where a networked query goes: `(remote, shard)` pairs. Without a leader every remote searches
    everything (shard None); with one, each shard goes to this node when it owns it, else to a random
    available owner."""
    if network["leader"] is None:
        return [(name, None) for name in network["remotes"]]
    unavailable = remotes.unavailable_remotes(db_path, network) if db_path is not None else frozenset()
    targets: list[tuple[str | None, str | None]] = []
    for shard, value in network["shards"].items():
        owners = value["remotes"]
        if network["self"] in owners:
            targets.append((network["self"], shard))
            continue
        available = [name for name in owners if name not in unavailable] or list(owners)
        targets.append((random.choice(available), shard))
    return targets


def shard_filter(existing: Any, shard: str | None) -> Any:
    """`existing` (a filter as sent: string, array or null) AND `_shard = "<shard>"`."""
    if shard is None:
        return existing
    clause = '_shard = "' + shard.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if existing is None or existing == [] or existing == "":
        return clause
    if isinstance(existing, list):
        return [*existing, clause]
    return [existing, clause]


# -------------------------------------------------------------------------------------------------
# The `_shard` filter
# -------------------------------------------------------------------------------------------------


def install_filter(store: TaskStore) -> None:
    """Let the filters of this process resolve `_shard` against the network stored in `store`."""

    def resolve(reader: IndexReader, shard: str, all_docids: BitMap) -> BitMap | None:
        return sharding.shard_docids(reader, read_network(store), shard, all_docids)

    filter_module.SHARD_RESOLVER = resolve
