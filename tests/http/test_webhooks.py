"""Task webhooks against real servers (Meilisearch's `tests/tasks/webhook.rs`, plus what goes beyond it).

CRUD bodies and errors are compared field by field with the answers of Meilisearch's webhook tests. The
delivery tests run a small HTTP receiver on loopback that records every request (headers, and the body
decoded from chunked transfer and gzip); the webhook servers run with
`MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS=127.0.0.0/8`, since loopback is refused by default. Covered
beyond Meilisearch: retries while the receiver fails or is down, a writer that never waits for a
receiver, notifications pending when the engine dies delivered after its restart, and the refusal of a
private destination without the flag (webhooks and REST embedders alike).
"""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from tests.conftest import ServerProcess, free_port, wait_task
from tests.webhook_receiver import Receiver as SharedReceiver

NIL: Final = "00000000-0000-0000-0000-000000000000"
ALLOW_LOOPBACK: Final = {"MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS": "127.0.0.0/8"}
CLI_AUTH: Final = "Bearer a-secret-token"


def error(message: str, code: str) -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": "invalid_request",
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


class Receiver(SharedReceiver):
    """The shared loopback receiver (`tests.webhook_receiver`), read notification by notification."""

    def next(self, timeout: float = 30.0) -> tuple[dict[str, str], list[dict[str, Any]]]:
        """The next delivered notification: its headers and its NDJSON lines as objects."""
        headers, body = self.received.get(timeout=timeout)
        text = body.decode()
        assert text.endswith("\n")
        return headers, [json.loads(line) for line in text.split("\n") if line]

    def tasks(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Task views of the notifications until `count` tasks came."""
        out: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while len(out) < count:
            out.extend(self.next(max(deadline - time.monotonic(), 0.01))[1])
        return out

    def assert_silent(self, seconds: float) -> None:
        with pytest.raises(queue.Empty):
            self.received.get(timeout=seconds)


@pytest.fixture(scope="module")
def cli_receiver() -> Iterator[Receiver]:
    rec = Receiver()
    yield rec
    rec.close()


@pytest.fixture(scope="module")
def hooks_server(tmp_path_factory: pytest.TempPathFactory, cli_receiver: Receiver) -> Iterator[ServerProcess]:
    """A server with a CLI webhook (given without its trailing slash) that may reach loopback."""
    srv = ServerProcess(
        Path(tmp_path_factory.mktemp("webhooks")) / "data.ms",
        env=dict(ALLOW_LOOPBACK),
        extra_args=[
            "--task-webhook-url",
            cli_receiver.url.rstrip("/"),
            "--task-webhook-authorization-header",
            CLI_AUTH,
        ],
    ).start()
    yield srv
    srv.stop()


@pytest.fixture
def http(hooks_server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=hooks_server.url, timeout=30) as client:
        yield client
        # every test leaves only the CLI webhook behind
        for hook in client.get("/webhooks").json()["results"]:
            if hook["isEditable"]:
                client.delete(f"/webhooks/{hook['uuid']}")


def drain(rec: Receiver) -> None:
    while True:
        try:
            rec.received.get_nowait()
        except queue.Empty:
            return


# -- CRUD ----------------------------------------------------------------------------------------


def test_cli_webhook_is_the_immutable_nil_entry(http: httpx.Client, cli_receiver: Receiver) -> None:
    cli_entry = {
        "uuid": NIL,
        "isEditable": False,
        "url": cli_receiver.url,
        "headers": {"Authorization": "Bearer a-XXXX..."},
    }
    res = http.get("/webhooks")
    assert res.status_code == 200
    assert res.json() == {"results": [cli_entry]}
    assert http.get(f"/webhooks/{NIL}").json() == cli_entry
    immutable = error(
        f"Webhook `{NIL}` is immutable. The webhook defined from the command line cannot be "
        "modified using the API.",
        "immutable_webhook",
    )
    res = http.patch(f"/webhooks/{NIL}", json={"url": "http://localhost:8080"})
    assert (res.status_code, res.json()) == (400, immutable)
    res = http.delete(f"/webhooks/{NIL}")
    assert (res.status_code, res.json()) == (400, immutable)


def test_post_get_delete(http: httpx.Client) -> None:
    res = http.post(
        "/webhooks", json={"url": "http://localhost:6666/hook", "headers": {"authorization": "TOKEN"}}
    )
    assert res.status_code == 201
    created = res.json()
    uuid = created["uuid"]
    assert created == {
        "uuid": uuid,
        "isEditable": True,
        "url": "http://localhost:6666/hook",
        "headers": {"authorization": "XXX..."},
    }
    assert http.get(f"/webhooks/{uuid}").json() == created
    assert http.get(f"/webhooks/{uuid.upper()}").json() == created  # uuids parse in any case
    assert [h["uuid"] for h in http.get("/webhooks").json()["results"]] == [NIL, uuid]
    res = http.delete(f"/webhooks/{uuid}")
    assert (res.status_code, res.content) == (204, b"")
    res = http.get(f"/webhooks/{uuid}")
    assert (res.status_code, res.json()) == (404, error(f"Webhook `{uuid}` not found.", "webhook_not_found"))
    for res in (http.delete(f"/webhooks/{uuid}"), http.patch(f"/webhooks/{uuid}", json={})):
        assert (res.status_code, res.json()["code"]) == (404, "webhook_not_found")


def test_create_and_patch(http: httpx.Client) -> None:
    res = http.post("/webhooks", json={"headers": {"authorization": "TOKEN"}})
    assert res.status_code == 400
    body = res.json()
    assert body["message"].startswith("The URL for the webhook `") and body["message"].endswith(
        "` is missing."
    )
    assert body == error(body["message"], "invalid_webhook_url")

    res = http.post("/webhooks", json={"url": "http://localhost:6666/hook"})
    assert res.status_code == 201
    uuid = res.json()["uuid"]
    assert res.json() == {
        "uuid": uuid,
        "isEditable": True,
        "url": "http://localhost:6666/hook",
        "headers": {},
    }

    def patch(body: dict[str, Any]) -> httpx.Response:
        return http.patch(f"/webhooks/{uuid}", json=body)

    res = patch({"headers": {"authorization": "TOKEN"}})
    assert (res.status_code, res.json()) == (
        200,
        {
            "uuid": uuid,
            "isEditable": True,
            "url": "http://localhost:6666/hook",
            "headers": {"authorization": "XXX..."},
        },
    )
    res = patch({"headers": {"authorization2": "TOKEN"}})
    assert res.json()["headers"] == {"authorization": "XXX...", "authorization2": "TOKEN"}
    res = patch({"headers": {"authorization": None}})
    assert (res.status_code, res.json()["headers"]) == (200, {"authorization2": "TOKEN"})
    res = patch({"url": None})
    assert (res.status_code, res.json()) == (
        400,
        error(f"The URL for the webhook `{uuid}` is missing.", "invalid_webhook_url"),
    )
    res = patch({"url": "https://example.com/other", "headers": None})
    assert res.json() == {"uuid": uuid, "isEditable": True, "url": "https://example.com/other", "headers": {}}
    assert http.get(f"/webhooks/{uuid}").json() == res.json()
    # a long bearer token keeps `Bearer ` and a few characters
    res = patch({"headers": {"Authorization": "Bearer a-secret-token-defined-in-test-cli"}})
    assert res.json()["headers"] == {"Authorization": "Bearer a-secXXXXXX..."}


def test_over_limits(http: httpx.Client) -> None:
    uuids = []
    for _ in range(20):
        res = http.post("/webhooks", json={"url": "http://localhost:8080"})
        assert res.status_code == 201
        uuids.append(res.json()["uuid"])
    res = http.post("/webhooks", json={"url": "http://localhost:8080"})
    assert (res.status_code, res.json()) == (
        400,
        error(
            "Defining too many webhooks would crush the server. Please limit the number of webhooks to 20. You may "
            "use a third-party proxy server to dispatch events to more than 20 endpoints.",
            "invalid_webhooks",
        ),
    )
    for uuid in uuids:
        assert http.delete(f"/webhooks/{uuid}").status_code == 204

    headers = {f"header_{i}": "" for i in range(200)}
    res = http.post("/webhooks", json={"url": "http://localhost:8080", "headers": headers})
    assert res.status_code == 201
    uuid = res.json()["uuid"]
    assert len(res.json()["headers"]) == 200
    too_many = (
        "Too many headers for the webhook `{}`. Please limit the number of headers to 200. Hint: To remove "
        "an already defined header set its value to `null`"
    )
    res = http.patch(f"/webhooks/{uuid}", json={"headers": {"header_200": ""}})
    assert (res.status_code, res.json()) == (400, error(too_many.format(uuid), "invalid_webhook_headers"))
    # replacing one header keeps the count at 200
    res = http.patch(f"/webhooks/{uuid}", json={"headers": {"header_0": None, "header_200": "x"}})
    assert res.status_code == 200 and len(res.json()["headers"]) == 200
    res = http.post(
        "/webhooks", json={"url": "http://localhost:8080", "headers": {**headers, "one_more": ""}}
    )
    assert res.status_code == 400
    assert res.json()["code"] == "invalid_webhook_headers" and res.json()["message"].startswith(
        "Too many headers"
    )


def test_invalid_url_and_headers(http: httpx.Client) -> None:
    cases = [
        (
            {"url": "not-a-valid-url"},
            error("Invalid URL `not-a-valid-url`: relative URL without a base", "invalid_webhook_url"),
        ),
        ({"url": "http://"}, error("Invalid URL `http://`: empty host", "invalid_webhook_url")),
        (
            {"url": "http://localhost:99999/"},
            error("Invalid URL `http://localhost:99999/`: invalid port number", "invalid_webhook_url"),
        ),
        ({"url": ""}, None),  # an empty URL is a missing one
        (
            {"url": "http://localhost:6666/hook", "headers": {"invalid header name": "value"}},
            error(
                "Invalid header name `invalid header name`: invalid HTTP header name",
                "invalid_webhook_headers",
            ),
        ),
        (
            {"url": "http://localhost:6666/hook", "headers": {"authorization": "token\nwith\nnewlines"}},
            error(
                "Invalid header value `authorization`: failed to parse header value",
                "invalid_webhook_headers",
            ),
        ),
        (
            {"url": 1},
            error(
                "Invalid value type at `.url`: expected a string, but found a positive integer: `1`",
                "invalid_webhook_url",
            ),
        ),
        (
            {"url": "http://a.com", "headers": []},
            error(
                "Invalid value type at `.headers`: expected an object, but found an array: `[]`",
                "invalid_webhook_headers",
            ),
        ),
        (
            {"url": "http://a.com", "headers": {"a": 1}},
            error(
                "Invalid value type at `.headers.a`: expected a string, but found a positive integer: `1`",
                "invalid_webhook_headers",
            ),
        ),
        (
            {"url": "http://a.com", "kefir": 1},
            error("Unknown field `kefir`: expected one of `url`, `headers`", "bad_request"),
        ),
    ]
    for body, expected in cases:
        res = http.post("/webhooks", json=body)
        assert res.status_code == 400, body
        if expected is None:
            assert res.json()["code"] == "invalid_webhook_url" and res.json()["message"].endswith(
                "is missing."
            )
        else:
            assert res.json() == expected, body
    assert http.get("/webhooks").json()["results"][1:] == []


def test_invalid_uuid(http: httpx.Client) -> None:
    expected = error("Invalid UUID: invalid character: found `i` at 0", "invalid_webhook_uuid")
    for res in (
        http.get("/webhooks/invalid-uuid"),
        http.delete("/webhooks/invalid-uuid"),
        http.patch("/webhooks/invalid-uuid", json={"url": "http://localhost:6666/hook"}),
    ):
        assert (res.status_code, res.json()) == (400, expected)
    res = http.get("/webhooks/0123")
    assert res.json() == error("Invalid UUID: invalid length: found 4", "invalid_webhook_uuid")
    res = http.get("/webhooks/01234567-89ab-cdef-0123-456789abcdef0")
    assert res.json() == error(
        "Invalid UUID: invalid group length in group 4: expected 12, found 13", "invalid_webhook_uuid"
    )


def test_forbidden_fields(http: httpx.Client) -> None:
    uuid_field = error("Immutable field `uuid`: expected one of `url`, `headers`", "immutable_webhook_uuid")
    editable_field = error(
        "Immutable field `isEditable`: expected one of `url`, `headers`", "immutable_webhook_is_editable"
    )
    res = http.post(
        "/webhooks",
        json={"url": "http://localhost:6666/hook", "uuid": NIL, "headers": {"authorization": "TOKEN"}},
    )
    assert (res.status_code, res.json()) == (400, uuid_field)
    res = http.post("/webhooks", json={"url": "http://localhost:6666/hook2", "isEditable": False})
    assert (res.status_code, res.json()) == (400, editable_field)
    # the body is checked before the uuid of the path
    res = http.patch("/webhooks/uuid-whatever", json={"uuid": NIL, "headers": {"new-header": "value"}})
    assert (res.status_code, res.json()) == (400, uuid_field)
    res = http.patch(
        "/webhooks/uuid-whatever", json={"isEditable": False, "headers": {"another-header": "value"}}
    )
    assert (res.status_code, res.json()) == (400, editable_field)


# -- delivery ------------------------------------------------------------------------------------


def test_delivery_payload_and_headers(http: httpx.Client, cli_receiver: Receiver, index_uid: str) -> None:
    rec = Receiver()
    try:
        res = http.post(
            "/webhooks",
            json={
                "url": rec.url,
                "headers": {"Authorization": "Bearer hook-token", "X-Custom": "yes", "X-Name": "Zoë"},
            },
        )
        assert res.status_code == 201
        drain(cli_receiver)
        uids = [
            http.post(
                f"/indexes/{index_uid}/documents",
                json=[{"id": i, "doggo": "bone"}],
                params={"customMetadata": "meta"} if i == 0 else None,
            ).json()["taskUid"]
            for i in range(5)
        ]
        tasks = rec.tasks(5)
        assert sorted(t["uid"] for t in tasks) == uids
        for task in tasks:
            # each line is the task exactly as GET /tasks/{uid} shows it
            assert task == http.get(f"/tasks/{task['uid']}").json()
            assert task["status"] == "succeeded" and task["details"] == {
                "receivedDocuments": 1,
                "indexedDocuments": 1,
            }
            assert (task.get("customMetadata") == "meta") == (task["uid"] == uids[0])
        assert rec.received.empty()  # nothing more than the five tasks
        # the CLI webhook got the same tasks, with its Authorization header
        assert sorted(t["uid"] for t in cli_receiver.tasks(5)) == uids

        # one more to look at the request's headers
        uid = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 9}]).json()["taskUid"]
        headers, lines = rec.next()
        assert [t["uid"] for t in lines] == [uid]
        assert headers["content-type"] == "application/x-ndjson"
        assert headers["content-encoding"] == "gzip"
        assert headers["transfer-encoding"] == "chunked"
        assert headers["accept-encoding"] == "gzip"
        assert headers["authorization"] == "Bearer hook-token"
        assert headers["x-custom"] == "yes"
        assert headers["x-name"].encode("latin-1").decode() == "Zoë"  # sent as UTF-8 bytes
        cli_headers, _ = cli_receiver.next()
        assert cli_headers["authorization"] == CLI_AUTH
    finally:
        rec.close()


def test_failed_tasks_and_deleted_webhooks(http: httpx.Client, index_uid: str) -> None:
    rec = Receiver()
    try:
        uuid = http.post("/webhooks", json={"url": rec.url}).json()["uuid"]
        uid = http.post(f"/indexes/{index_uid}/documents", json=[{"title": "no primary key"}]).json()[
            "taskUid"
        ]
        (task,) = rec.tasks(1)
        assert task["uid"] == uid and task["status"] == "failed"
        assert task == http.get(f"/tasks/{uid}").json()
        assert http.delete(f"/webhooks/{uuid}").status_code == 204
        wait_task(http, http.post(f"/indexes/{index_uid}/documents", json=[{"id": 1}]).json()["taskUid"])
        rec.assert_silent(1.0)
    finally:
        rec.close()


def test_retries_while_the_receiver_fails_or_is_down(http: httpx.Client, index_uid: str) -> None:
    rec = Receiver()
    rec.fail_next = 2
    try:
        http.post("/webhooks", json={"url": rec.url})
        uid = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 1}]).json()["taskUid"]
        (task,) = rec.tasks(1)
        assert task["uid"] == uid
        assert rec.attempts == 3  # two 503 answers, then the delivery
    finally:
        rec.close()
    # the receiver is gone (connection refused): the notification waits, then reaches it once it is back
    port = rec.port
    uid = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 2}]).json()["taskUid"]
    assert wait_task(http, uid)["status"] == "succeeded"
    time.sleep(1.0)
    back = Receiver(port)
    try:
        (task,) = back.tasks(1)
        assert task["uid"] == uid
    finally:
        back.close()
    # the failures are visible in /metrics, and nothing waits any more
    assert http.patch("/experimental-features", json={"metrics": True}).status_code == 200
    deadline = time.monotonic() + 10
    while True:
        samples = dict(
            line.rsplit(" ", 1)
            for line in http.get("/metrics").text.splitlines()
            if line.startswith("hanzo_webhook_")
        )
        if samples["hanzo_webhook_notifications_pending"] == "0" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert samples["hanzo_webhook_notifications_pending"] == "0"
    assert (
        int(samples["hanzo_webhook_failed_attempts_total"]) >= 3
    )  # two 503s, at least one refused connection
    assert int(samples["hanzo_webhook_deliveries_total"]) >= 2


def test_a_hanging_receiver_never_holds_the_writer(http: httpx.Client, index_uid: str) -> None:
    rec = Receiver()
    rec.gate.clear()  # every request hangs until the gate opens
    try:
        http.post("/webhooks", json={"url": rec.url})
        uids = [
            http.post(f"/indexes/{index_uid}/documents", json=[{"id": i}]).json()["taskUid"] for i in range(4)
        ]
        for uid in uids:
            assert wait_task(http, uid)["status"] == "succeeded"
        assert rec.received.empty()
        rec.gate.set()
        assert sorted(t["uid"] for t in rec.tasks(4)) == uids
    finally:
        rec.close()


def test_pending_notifications_survive_a_crash(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there yet: the receiver is down
    srv = ServerProcess(tmp_path / "data.ms", env=dict(ALLOW_LOOPBACK)).start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            http.post("/webhooks", json={"url": f"http://127.0.0.1:{port}/hook"})
            uids = [
                http.post("/indexes/crash/documents", json=[{"id": i}]).json()["taskUid"] for i in range(3)
            ]
            for uid in uids:
                assert wait_task(http, uid)["status"] == "succeeded"
        srv.kill9()
        rec = Receiver(port)
        try:
            rec.assert_silent(0.5)
            srv.start()
            assert sorted(t["uid"] for t in rec.tasks(3)) == uids
            # delivered once: nothing comes again after another restart
            srv.stop()
            srv.start()
            rec.assert_silent(1.5)
        finally:
            rec.close()
    finally:
        srv.stop()


def test_dump_carries_the_api_webhooks(tmp_path: Path) -> None:
    srv = ServerProcess(
        tmp_path / "data.ms", extra_args=["--task-webhook-url", "https://cli.example.com"]
    ).start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            http.post(
                "/webhooks", json={"url": "https://example.com/hook", "headers": {"authorization": "TOKEN"}}
            )
            http.post("/webhooks", json={"url": "https://third.com"})
            listed = http.get("/webhooks").json()["results"]
            assert listed[0]["url"] == "https://cli.example.com/"
            task = wait_task(http, http.post("/dumps").json()["taskUid"])
            assert task["status"] == "succeeded"
        dump = srv.db_path.parent / "dumps" / f"{task['details']['dumpUid']}.dump"
    finally:
        srv.stop()
    imported = ServerProcess(tmp_path / "imported.ms", extra_args=["--import-dump", str(dump)]).start()
    try:
        # the API webhooks come back with their uuids and secrets; the CLI one was never dumped
        assert httpx.get(f"{imported.url}/webhooks").json() == {"results": listed[1:]}
    finally:
        imported.stop()


# -- outgoing requests are guarded -----------------------------------------------------------------


def test_private_destinations_are_refused_without_the_flag(server: ServerProcess, index_uid: str) -> None:
    rec = Receiver()
    with httpx.Client(base_url=server.url, timeout=30) as http:
        uuid = http.post("/webhooks", json={"url": rec.url}).json()["uuid"]
        try:
            uid = http.post(f"/indexes/{index_uid}/documents", json=[{"id": 1, "title": "a"}]).json()[
                "taskUid"
            ]
            assert wait_task(http, uid)["status"] == "succeeded"
            rec.assert_silent(1.5)
            assert f"While sending data to the webhook {uuid}: bad uri: Rejected URI" in server.output()
            # a REST embedder on loopback is refused as well
            embedder = {
                "source": "rest",
                "url": rec.url,
                "request": "{{text}}",
                "response": "{{embedding}}",
                "dimensions": 2,
                "documentTemplate": "{{doc.title}}",
            }
            res = http.patch(f"/indexes/{index_uid}/settings", json={"embedders": {"default": embedder}})
            task = wait_task(http, res.json()["taskUid"])
            assert task["status"] == "failed"
            assert "could not reach embedding server:\n  - bad uri: Rejected URI" in task["error"]["message"]
            assert rec.attempts == 0
        finally:
            http.delete(f"/webhooks/{uuid}")
            rec.close()
