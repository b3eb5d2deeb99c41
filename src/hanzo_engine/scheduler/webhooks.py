"""Task webhooks: their durable settings and the background sender of finished-task notifications.

Storage (two databases of the tasks environment, see `store.py`):

- `webhooks`         webhook uuid (hyphenated, lowercase) -> `{"url", "headers"}` of the webhooks created
                     through `/webhooks`. The CLI webhook (`--task-webhook-url`) is never stored: it comes
                     from the options of each run and is shown with the nil uuid, as in Meilisearch.
- `webhook-pending`  `<uuid>/<u64 BE sequence>` -> `{"tasks": [task uids]}`: one notification not yet
                     delivered to one webhook. `~next` holds the next sequence number.

Every process reads the webhooks from LMDB, so a change made by any process is seen by all of them.

Delivery, as Meilisearch: after a batch, each webhook receives one `POST` whose body is the NDJSON of the
batch's finished tasks (each line the task as `GET /tasks/{uid}` shows it), gzip-compressed and sent
chunked, with `Content-Encoding: gzip`, `Content-Type: application/x-ndjson` and the webhook's headers.

Beyond Meilisearch (which sends once and drops the notification on failure):

- the scheduler writes the pending notifications in the same transaction as the tasks' final status
  (`record`), so a notification survives a crash or a restart while its receiver is down;
- one sender thread, started with the scheduler (so only in the process that runs it), delivers them in
  order per webhook and never blocks the writer; a failed delivery (network error, timeout, non-2xx
  answer) is logged and retried with exponential backoff (`BACKOFF_BASE` doubling up to `BACKOFF_CAP`)
  while the other webhooks go on;
- the backlog is bounded: past `MAX_PENDING` undelivered notifications the oldest one of the webhook
  (else of the first webhook waiting) is dropped, with an error logged;
- a destination refused by the IP policy (`net_guard`) can never succeed: that notification is dropped
  with an error logged; so is the backlog of a webhook that was deleted;
- `/metrics` shows the backlog and the sender's deliveries, failed attempts and drops (`metrics`).

Header values are sent as UTF-8; a webhook's own `Content-Length`, `Transfer-Encoding`, `Host` or
`Connection` header is not sent (it would break the request's framing), its other headers replace the
sender's of the same name.
"""

from __future__ import annotations

import gzip
import http.client
import logging
import ssl
import struct
import threading
import time
from typing import Any, Final
from urllib.parse import urlsplit

import lmdb
import msgspec

from hanzo_engine import __version__
from hanzo_engine.engine import net_guard

from .store import Task, TaskStore
from .views import task_view

log = logging.getLogger("hanzo_engine.webhooks")

NIL_UUID: Final = "00000000-0000-0000-0000-000000000000"
MAX_WEBHOOKS: Final = 20
MAX_HEADERS: Final = 200
MAX_PENDING: Final = 100_000
BACKOFF_BASE: Final = 0.5  # seconds before the first retry
BACKOFF_CAP: Final = 60.0  # longest wait between two attempts
REQUEST_TIMEOUT: Final = 30.0  # Meilisearch's global timeout of a webhook request
IDLE_WAIT: Final = 5.0
DELIVERIES_PER_PASS: Final = 64  # per webhook, so that a long backlog does not starve the others
GZIP_LEVEL: Final = 6  # flate2's `Compression::default()`

_NEXT_KEY: Final = b"~next"  # sorts after every uuid key
_U64 = struct.Struct(">Q")
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode
# headers the sender sets itself: a webhook's own value would break the request framing
_FRAMING_HEADERS: Final = frozenset({"content-length", "transfer-encoding", "host", "connection"})

Webhook = dict[str, Any]  # {"url": str, "headers": {name: value}}


# -- settings ----------------------------------------------------------------------------------------


def cli_webhook(url: str | None, authorization: str | None) -> Webhook | None:
    """The webhook of `--task-webhook-url` / `--task-webhook-authorization-header`, if set."""
    if not url:
        return None
    headers = {"Authorization": authorization} if authorization is not None else {}
    return {"url": normalize_url(url), "headers": headers}


def normalize_url(url: str) -> str:
    """The URL as the `url` crate serializes it: scheme and host lowercased, the scheme's default port
    dropped, `/` as the empty path of a hierarchical URL (`HTTP://A.com:80` -> `http://a.com/`)."""
    parts = urlsplit(url.strip())
    if not parts.netloc:
        return url.strip()
    host = parts.netloc.rsplit("@", 1)
    netloc = host[0] + "@" + host[1].lower() if len(host) == 2 else host[0].lower()
    default_port = {"http": ":80", "https": ":443", "ws": ":80", "wss": ":443", "ftp": ":21"}.get(
        parts.scheme.lower()
    )
    if default_port is not None and netloc.endswith(default_port):
        netloc = netloc[: -len(default_port)]
    out = f"{parts.scheme.lower()}://{netloc}{parts.path or '/'}"
    if parts.query or url.rstrip().endswith("?"):
        out += f"?{parts.query}"
    if parts.fragment:
        out += f"#{parts.fragment}"
    return out


def runtime_webhooks(store: TaskStore, txn: lmdb.Transaction) -> dict[str, Webhook]:
    """The webhooks created through the API, by uuid (in uuid order)."""
    with txn.cursor(db=store.db_webhooks) as cursor:
        return {bytes(k).decode(): _decode(v) for k, v in cursor}


def put_webhook(store: TaskStore, txn: lmdb.Transaction, uuid: str, webhook: Webhook) -> None:
    txn.put(
        uuid.encode(), _encode({"url": webhook["url"], "headers": webhook["headers"]}), db=store.db_webhooks
    )


def delete_webhook(store: TaskStore, txn: lmdb.Transaction, uuid: str) -> bool:
    return bool(txn.delete(uuid.encode(), db=store.db_webhooks))


def dump_view(store: TaskStore) -> dict[str, Any]:
    """`webhooks.json` of a dump (Meilisearch's `WebhooksDumpView`): the API webhooks, never the CLI one."""
    with store.env.begin() as txn:
        return {"webhooks": runtime_webhooks(store, txn)}


def import_dump_view(store: TaskStore, view: Any) -> int:
    """Replace the API webhooks with those of a dump's `webhooks.json`; returns how many."""
    hooks = (view or {}).get("webhooks") or {}
    with store.env.begin(write=True) as txn:
        txn.drop(store.db_webhooks, delete=False)
        for uuid, hook in hooks.items():
            put_webhook(
                store,
                txn,
                str(uuid).lower(),
                {"url": str(hook["url"]), "headers": dict(hook.get("headers") or {})},
            )
    return len(hooks)


def pending_notifications(store: TaskStore) -> int:
    """Notifications not yet delivered, from LMDB (any process can tell)."""
    with store.env.begin() as txn:
        entries = int(txn.stat(store.db_webhook_pending)["entries"])
        return entries - (1 if txn.get(_NEXT_KEY, db=store.db_webhook_pending) is not None else 0)


def metrics(store: TaskStore, notifier: WebhookNotifier | None) -> list[tuple[str, str, str, int]]:
    """`(name, kind, help, value)` of the webhook samples of `/metrics`: the backlog, and this process's
    deliveries, failed attempts and dropped notifications since it started."""
    out = [
        (
            "hanzo_webhook_notifications_pending",
            "gauge",
            "Task notifications waiting for delivery to a webhook",
            pending_notifications(store),
        )
    ]
    if notifier is not None:
        out += [
            (
                "hanzo_webhook_deliveries_total",
                "counter",
                "Task notifications delivered to a webhook",
                notifier.delivered,
            ),
            (
                "hanzo_webhook_failed_attempts_total",
                "counter",
                "Webhook deliveries that failed and will be retried",
                notifier.failed_attempts,
            ),
            (
                "hanzo_webhook_dropped_total",
                "counter",
                "Task notifications given up (refused address, backlog full)",
                notifier.dropped,
            ),
        ]
    return out


# -- delivery ----------------------------------------------------------------------------------------


class DeliveryError(Exception):
    """A failed delivery; `permanent` ones are dropped rather than retried."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


def post_notification(
    url: str,
    headers: dict[str, str],
    body: bytes,
    *,
    timeout: float = REQUEST_TIMEOUT,
    policy: net_guard.IpPolicy | None = None,
) -> None:
    """POST one gzip-compressed NDJSON `body` to `url`, chunked; DeliveryError unless answered 2xx."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DeliveryError(f"unsupported URL `{url}`", permanent=True)
    conn: http.client.HTTPConnection
    try:
        port = parts.port
    except ValueError:
        raise DeliveryError(f"invalid port in `{url}`", permanent=True) from None
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(
            parts.hostname, port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname, port, timeout=timeout)
    net_guard.guard(conn, policy)
    sent: dict[str, str | bytes] = {
        "Content-Encoding": "gzip",
        "Content-Type": "application/x-ndjson",
        "Accept-Encoding": "gzip",
        "User-Agent": f"hanzo-engine/{__version__}",
    }
    for name, value in headers.items():
        if name.lower() not in _FRAMING_HEADERS:
            sent = {k: v for k, v in sent.items() if k.lower() != name.lower()}
            sent[name] = (
                value.encode()
            )  # UTF-8, as the http crate sends a value (http.client would use latin-1)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        # an iterable body without Content-Length is sent with `Transfer-Encoding: chunked`
        conn.request("POST", target, body=iter((body,)), headers=sent)
        response = conn.getresponse()
        response.read(65536)
        status = response.status
    except net_guard.DeniedAddress:
        raise DeliveryError(
            "bad uri: Rejected URI (the destination address is not allowed: see "
            "`--experimental-allowed-ip-networks`)",
            permanent=True,
        ) from None
    except (OSError, http.client.HTTPException) as exc:
        raise DeliveryError(f"{type(exc).__name__}: {exc}") from None
    except ValueError as exc:  # a header or URL http.client refuses: retrying cannot help
        raise DeliveryError(f"{type(exc).__name__}: {exc}", permanent=True) from None
    finally:
        conn.close()
    if not 200 <= status <= 299:
        raise DeliveryError(f"http status: {status}")


class WebhookNotifier:
    """Records the notifications of finished batches and delivers them from a background thread."""

    def __init__(
        self,
        store: TaskStore,
        cli: Webhook | None = None,
        *,
        policy: net_guard.IpPolicy | None = None,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self.store = store
        self.cli = cli
        self.policy = policy
        self.max_pending = max_pending
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        # per webhook: consecutive failures and when the next attempt is due (time.monotonic())
        self._failures: dict[str, int] = {}
        self._retry_at: dict[str, float] = {}
        self.delivered = 0
        self.failed_attempts = 0
        self.dropped = 0

    def webhooks(self, txn: lmdb.Transaction) -> dict[str, Webhook]:
        """Every webhook in uuid order, the CLI one (nil uuid) first."""
        out: dict[str, Webhook] = {NIL_UUID: self.cli} if self.cli is not None else {}
        out.update(runtime_webhooks(self.store, txn))
        return out

    # -- the writer's side -------------------------------------------------------------------------

    def record(self, txn: lmdb.Transaction, tasks: list[Task]) -> None:
        """In the transaction that finishes `tasks`: one pending notification per webhook. A failure here
        is logged and loses the notification, never the tasks' commit (LMDB errors excepted: the
        transaction is then unusable anyway)."""
        if not tasks:
            return
        try:
            self._record(txn, tasks)
        except lmdb.Error:
            raise
        except Exception:
            log.exception("could not record the webhook notification of tasks %s", [t["uid"] for t in tasks])

    def _record(self, txn: lmdb.Transaction, tasks: list[Task]) -> None:
        hooks = self.webhooks(txn)
        if not hooks:
            return
        raw = txn.get(_NEXT_KEY, db=self.store.db_webhook_pending)
        seq = _U64.unpack(raw)[0] if raw is not None else 0
        value = _encode({"tasks": sorted(t["uid"] for t in tasks)})
        for uuid in hooks:
            if txn.stat(self.store.db_webhook_pending)["entries"] > self.max_pending:
                self._drop_oldest(txn, uuid)
            txn.put(uuid.encode() + b"/" + _U64.pack(seq), value, db=self.store.db_webhook_pending)
            seq += 1
        txn.put(_NEXT_KEY, _U64.pack(seq), db=self.store.db_webhook_pending)

    def _drop_oldest(self, txn: lmdb.Transaction, uuid: str) -> None:
        """Make room: the oldest notification of `uuid`, else that of the first webhook waiting."""
        prefix = uuid.encode() + b"/"
        with txn.cursor(db=self.store.db_webhook_pending) as cursor:
            found = cursor.set_range(prefix) and bytes(cursor.key()).startswith(prefix)
            if not found:
                found = cursor.first() and bytes(cursor.key()) != _NEXT_KEY
            if found:
                victim = bytes(cursor.key()).split(b"/", 1)[0].decode()
                cursor.delete()
                self.dropped += 1
                log.error(
                    "webhook %s: more than %d notifications waiting, the oldest one is dropped",
                    victim,
                    self.max_pending,
                )

    def notify(self) -> None:
        """After the commit of `record`: wake the sender."""
        self._wake.set()

    # -- the sender thread -------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="hanzo-webhooks", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def pending(self) -> int:
        """Notifications not yet delivered."""
        return pending_notifications(self.store)

    def _waiting_uuids(self, txn: lmdb.Transaction) -> list[str]:
        """The webhooks with notifications waiting: one seek per webhook, whatever the backlog."""
        out: list[str] = []
        with txn.cursor(db=self.store.db_webhook_pending) as cursor:
            found = cursor.first()
            while found:
                key = bytes(cursor.key())
                if key == _NEXT_KEY:
                    break
                uuid = key.split(b"/", 1)[0]
                out.append(uuid.decode())
                found = cursor.set_range(uuid + b"0")  # `0` sorts right after the `/` separator
        return out

    def _run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                wait = self.deliver_due()
            except lmdb.Error:
                if self._stopping:  # the environment closed under us at shutdown
                    return
                log.exception("webhook delivery failed")
                wait = 1.0
            except Exception:  # a bug must not kill the sender: the notifications stay pending
                log.exception("webhook delivery failed")
                wait = 1.0
            if wait > 0:
                self._wake.wait(timeout=wait)

    def _head(self, uuid: str) -> tuple[bytes, list[int]] | None:
        prefix = uuid.encode() + b"/"
        with self.store.env.begin() as txn, txn.cursor(db=self.store.db_webhook_pending) as cursor:
            if cursor.set_range(prefix) and bytes(cursor.key()).startswith(prefix):
                return bytes(cursor.key()), list(_decode(cursor.value())["tasks"])
        return None

    def deliver_due(self) -> float:
        """One pass: deliver what is due; returns how long to wait before the next pass."""
        with self.store.env.begin() as txn:
            hooks = self.webhooks(txn)
            waiting = self._waiting_uuids(txn)
        wait = IDLE_WAIT
        for uuid in waiting:
            if self._stopping:
                return 0.0
            hook = hooks.get(uuid)
            if hook is None:
                self._drop_all(uuid)
                continue
            for _ in range(DELIVERIES_PER_PASS):
                now = time.monotonic()
                due = self._retry_at.get(uuid, 0.0)
                if due > now:
                    wait = min(wait, due - now)
                    break
                head = self._head(uuid)
                if head is None or self._stopping:
                    break
                if not self._deliver(uuid, hook, *head):
                    wait = min(wait, max(self._retry_at.get(uuid, 0.0) - time.monotonic(), 0.0))
                    break
            else:
                wait = 0.0  # more is waiting for this webhook
        return wait

    def payload(self, uids: list[int]) -> bytes | None:
        """The gzip-compressed NDJSON of the tasks still stored among `uids` (None when none is)."""
        lines: list[bytes] = []
        with self.store.env.begin() as txn:
            for task in self.store.iter_tasks(txn, uids):
                lines.append(_encode(task_view(task)) + b"\n")
        return gzip.compress(b"".join(lines), compresslevel=GZIP_LEVEL) if lines else None

    def _deliver(self, uuid: str, hook: Webhook, key: bytes, uids: list[int]) -> bool:
        """Send one notification; True when it is done with (delivered or dropped)."""
        body = self.payload(uids)
        if body is not None:
            try:
                post_notification(hook["url"], dict(hook.get("headers") or {}), body, policy=self.policy)
            except DeliveryError as exc:
                if not exc.permanent:
                    self.failed_attempts += 1
                    failures = self._failures.get(uuid, 0) + 1
                    self._failures[uuid] = failures
                    delay = min(BACKOFF_BASE * 2 ** (failures - 1), BACKOFF_CAP)
                    self._retry_at[uuid] = time.monotonic() + delay
                    log.error(
                        "While sending data to the webhook %s: %s (attempt %d, next in %.1fs)",
                        uuid,
                        exc,
                        failures,
                        delay,
                    )
                    return False
                self.dropped += 1
                log.error(
                    "While sending data to the webhook %s: %s; the notification of tasks %s is dropped",
                    uuid,
                    exc,
                    uids,
                )
            else:
                self.delivered += 1
                if self._failures.pop(uuid, 0):
                    log.info("webhook %s reachable again", uuid)
        self._retry_at.pop(uuid, None)
        with self.store.env.begin(write=True) as txn:
            txn.delete(key, db=self.store.db_webhook_pending)
        return True

    def _drop_all(self, uuid: str) -> None:
        """The webhook is gone: its waiting notifications go with it."""
        prefix = uuid.encode() + b"/"
        with self.store.env.begin(write=True) as txn, txn.cursor(db=self.store.db_webhook_pending) as cursor:
            if not cursor.set_range(prefix):
                return
            while bytes(cursor.key()).startswith(prefix):
                if not cursor.delete():
                    break
        self._failures.pop(uuid, None)
        self._retry_at.pop(uuid, None)
