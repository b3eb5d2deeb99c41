"""The outgoing-request IP policy (`engine.net_guard`) and the webhook notifier (`scheduler.webhooks`) on
a real tasks environment: pending notifications, their bound, ordered delivery, backoff and drops."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from hanzo_engine.engine import net_guard
from hanzo_engine.engine.net_guard import DeniedAddress, IpPolicy
from hanzo_engine.engine.vector.rest import EmbedderError, RestEmbedder, RestOptions
from hanzo_engine.scheduler import webhooks
from hanzo_engine.scheduler.store import TaskStore
from hanzo_engine.scheduler.webhooks import NIL_UUID, WebhookNotifier
from tests.webhook_receiver import Receiver as SharedReceiver

LOOPBACK = IpPolicy.from_networks(["127.0.0.0/8"])


@pytest.mark.parametrize(
    ("address", "is_global"),
    [
        ("8.8.8.8", True),
        ("172.32.0.1", True),
        ("100.128.0.1", True),
        ("192.0.0.9", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.1.2.3", False),
        ("192.0.0.8", False),
        ("192.0.2.1", False),
        ("198.18.0.1", False),
        ("240.0.0.1", False),
        ("255.255.255.255", False),
        ("2606:4700::1111", True),
        ("2001:4860:4860::8888", True),
        ("2001:1::1", True),
        ("::1", False),
        ("::", False),
        ("::ffff:8.8.8.8", False),
        ("fe80::1", False),
        ("fd12::1", False),
        ("2001:db8::1", False),
        ("2001::1", False),
        ("2002::1", False),
        ("64:ff9b:1::1", False),
    ],
)
def test_global_addresses_as_rust_std(address: str, is_global: bool) -> None:
    assert net_guard.is_global(ipaddress.ip_address(address)) is is_global


def test_policy_from_the_option() -> None:
    deny = IpPolicy.from_networks(None)
    assert deny.allows(ipaddress.ip_address("1.1.1.1"))
    assert not deny.allows(ipaddress.ip_address("127.0.0.1"))
    assert LOOPBACK.allows(ipaddress.ip_address("127.0.0.2"))
    assert not LOOPBACK.allows(ipaddress.ip_address("10.0.0.1"))
    assert not LOOPBACK.allows(ipaddress.ip_address("::1"))
    anything = IpPolicy.from_networks(["10.0.0.0/8", "any"])
    assert anything.allows(ipaddress.ip_address("::1")) and anything.allows(
        ipaddress.ip_address("192.168.0.1")
    )
    with pytest.raises(DeniedAddress) as info:
        deny.check("fe80::1%eth0")
    assert str(info.value) == "Rejected URI"


def test_connections_are_checked_on_every_resolved_address() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        for host in ("127.0.0.1", "localhost"):
            with pytest.raises(DeniedAddress):
                net_guard.create_connection((host, port), 1.0, policy=IpPolicy())
        net_guard.create_connection(("127.0.0.1", port), 1.0, policy=LOOPBACK).close()
    with pytest.raises(DeniedAddress):
        net_guard.check_url("http://localhost:7700/search", IpPolicy())
    net_guard.check_url("http://localhost:7700/search", IpPolicy.from_networks(["any"]))
    net_guard.check_url("http://[::1]:7700/", IpPolicy.from_networks(["::1/128"]))


def test_rest_embedders_are_refused_a_private_address() -> None:
    previous = net_guard.set_policy(IpPolicy())
    try:
        client = RestEmbedder(
            RestOptions(url="http://127.0.0.1:1/", request="{{text}}", response="{{embedding}}")
        )
        client.max_retry = 0.0
        with pytest.raises(EmbedderError) as info:
            client.embed(["a"], 2)
        assert (
            str(info.value) == "runtime error: could not reach embedding server:\n  - bad uri: Rejected URI"
        )
    finally:
        net_guard.set_policy(previous)


# -- the notifier --------------------------------------------------------------------------------------


class Receiver(SharedReceiver):
    """The shared loopback receiver; `batches` are the task uids of each delivered notification."""

    @property
    def batches(self) -> list[list[int]]:
        with self.lock:
            return [[task["uid"] for task in lines] for lines in self.delivered]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TaskStore]:
    st = TaskStore(tmp_path / "tasks")
    yield st
    st.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rec = Receiver()
    yield rec
    rec.close()


def finish(store: TaskStore, notifier: WebhookNotifier, count: int) -> list[int]:
    """Register `count` finished tasks and record them as one batch, as the scheduler does."""
    with store.env.begin(write=True) as txn:
        tasks = []
        for _ in range(count):
            task = {
                "uid": -1,
                "batchUid": 0,
                "indexUid": "i",
                "status": "succeeded",
                "type": "documentAdditionOrUpdate",
                "canceledBy": None,
                "details": None,
                "error": None,
                "enqueuedAt": 1,
                "startedAt": 2,
                "finishedAt": 3,
                "kind": {},
            }
            tasks.append(store.register(txn, task))
        notifier.record(txn, tasks)
    return [t["uid"] for t in tasks]


def add_hook(store: TaskStore, uuid: str, url: str) -> None:
    with store.env.begin(write=True) as txn:
        webhooks.put_webhook(store, txn, uuid, {"url": url, "headers": {}})


def test_pending_notifications_are_bounded(store: TaskStore) -> None:
    notifier = WebhookNotifier(store, {"url": "http://127.0.0.1:1/", "headers": {}}, max_pending=3)
    assert finish(store, notifier, 1) == [0]
    add_hook(store, "11111111-1111-4111-8111-111111111111", "http://127.0.0.1:1/")
    finish(store, notifier, 2)
    assert notifier.pending() == 3
    finish(store, notifier, 1)
    assert notifier.pending() == 3 and notifier.dropped == 2
    # no webhook: nothing recorded
    empty = WebhookNotifier(store)
    with store.env.begin(write=True) as txn:
        txn.drop(store.db_webhooks, delete=False)
    finish(store, empty, 1)
    assert empty.pending() == 3


def test_delivery_in_order_with_backoff(store: TaskStore, receiver: Receiver) -> None:
    notifier = WebhookNotifier(store, {"url": receiver.url, "headers": {}}, policy=LOOPBACK)
    first, second = finish(store, notifier, 2), finish(store, notifier, 1)
    receiver.statuses = [500, 503]
    assert notifier.deliver_due() == pytest.approx(webhooks.BACKOFF_BASE, abs=0.1)
    assert receiver.batches == [] and notifier.pending() == 2
    assert notifier.deliver_due() > 0  # not due yet: no attempt
    assert notifier.failed_attempts == 1
    notifier._retry_at[NIL_UUID] = 0.0
    assert notifier.deliver_due() == pytest.approx(2 * webhooks.BACKOFF_BASE, abs=0.1)
    notifier._retry_at[NIL_UUID] = 0.0
    notifier.deliver_due()
    assert receiver.batches == [first, second] and notifier.pending() == 0 and notifier.delivered == 2


def test_refused_and_orphaned_notifications_are_dropped(store: TaskStore, receiver: Receiver) -> None:
    uuid = "22222222-2222-4222-8222-222222222222"
    add_hook(store, uuid, receiver.url)
    notifier = WebhookNotifier(store, policy=IpPolicy())  # loopback refused
    finish(store, notifier, 1)
    notifier.deliver_due()
    assert notifier.pending() == 0 and notifier.dropped == 1 and notifier.failed_attempts == 0
    assert receiver.batches == []
    finish(store, notifier, 1)
    with store.env.begin(write=True) as txn:
        webhooks.delete_webhook(store, txn, uuid)
    notifier.deliver_due()
    assert notifier.pending() == 0 and receiver.batches == []


def test_cli_webhook_url_is_shown_normalized() -> None:
    hook = webhooks.cli_webhook("HTTP://Example.COM:80", "Bearer x")
    assert hook == {"url": "http://example.com/", "headers": {"Authorization": "Bearer x"}}
    assert webhooks.cli_webhook("https://a.com/hook?x=1", None) == {
        "url": "https://a.com/hook?x=1",
        "headers": {},
    }
    assert webhooks.cli_webhook(None, "Bearer x") is None
    assert webhooks.normalize_url("https://a.com:8443") == "https://a.com:8443/"
