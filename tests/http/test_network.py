"""`GET/PATCH /network` and `POST /network/control` against a real server, field by field as
Meilisearch's `tests/network/mod.rs` snapshots (re-derived), plus what those tests cannot show: the
network survives a restart, search workers see it, dumps carry it (`network.json`, imported without
`self`), and the API-key actions `network.get` / `network.update`.
"""

from __future__ import annotations

import json
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from tests.conftest import MASTER_KEY, ServerProcess, wait_task

NIL: Final = "00000000-0000-0000-0000-000000000000"
UUID7: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
LINK: Final = "https://docs.meilisearch.com/errors#"


def error(code: str, message: str, type_: str = "invalid_request") -> dict[str, str]:
    return {"message": message, "code": code, "type": type_, "link": LINK + code}


def remote(url: str, search: str | None = None, write: str | None = None) -> dict[str, Any]:
    return {"url": url, "searchApiKey": search, "writeApiKey": write, "status": "available"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("network")
    server = ServerProcess(
        root / "data.ms", extra_args=["--master-key", MASTER_KEY, "--dump-dir", str(root / "dumps")]
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture
def admin(srv: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=srv.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}) as c:
        yield c


def patch(c: httpx.Client, body: Any) -> tuple[int, Any]:
    r = c.patch("/network", json=body)
    return r.status_code, r.json()


def without_version(body: dict[str, Any]) -> dict[str, Any]:
    assert UUID7.fullmatch(body["version"]), body["version"]
    return {k: v for k, v in body.items() if k != "version"}


def test_network_routes_need_the_feature(admin: httpx.Client) -> None:
    admin.patch("/experimental-features", json={"network": False})
    message = (
        "Using the /network route requires enabling the `network` experimental feature. See "
        "https://github.com/orgs/meilisearch/discussions/805"
    )
    r = admin.get("/network")
    assert (r.status_code, r.json()) == (400, error("feature_not_enabled", message))
    assert patch(admin, {"self": "myself"}) == (400, error("feature_not_enabled", message))
    r = admin.post("/network/control", json={})
    assert r.json()["message"] == message.replace("/network route", "/network/control route")


def test_errors_on_param(admin: httpx.Client) -> None:
    assert admin.patch("/experimental-features", json={"network": True}).json()["network"] is True
    assert admin.get("/network").json() == {
        "self": None,
        "remotes": {},
        "shards": {},
        "leader": None,
        "version": NIL,
    }
    cases: list[tuple[Any, str, str]] = [
        (
            {"selfie": "myself"},
            "bad_request",
            "Unknown field `selfie`: expected one of `remotes`, `shards`, "
            "`previousShards`, `self`, `leader`, `previousRemotes`",
        ),
        (
            {"self": 42},
            "invalid_network_self",
            "Invalid value type at `.self`: expected a string, but found a positive integer: `42`",
        ),
        (
            {"remotes": 42},
            "invalid_network_remotes",
            "Invalid value type at `.remotes`: expected an object, but found a positive integer: `42`",
        ),
        (
            {"remotes": {"new": {"searchApiKey": "http://localhost:7700"}}},
            "missing_network_url",
            "Missing field `.remotes.new.url`",
        ),
        (
            {"remotes": {"new": {"url": 7700}}},
            "invalid_network_url",
            "Invalid value type at `.remotes.new.url`: expected a string, but found a positive integer: `7700`",
        ),
        (
            {"remotes": {"new": {"url": "no-http-scheme"}}},
            "invalid_network_url",
            "Invalid `.remotes.new.url` (`no-http-scheme`): relative URL without a base",
        ),
        (
            {"remotes": {"new": {"url": "http://localhost:7700", "doggo": "Intel the Beagle"}}},
            "invalid_network_remotes",
            "Unknown field `doggo` inside `.remotes.new`: expected one of `url`, `searchApiKey`, `writeApiKey`",
        ),
        (
            {"remotes": {"new": {"url": "http://localhost:7700", "searchApiKey": 1204664602099962445}}},
            "invalid_network_search_api_key",
            "Invalid value type at `.remotes.new.searchApiKey`: expected a string, "
            "but found a positive integer: `1204664602099962445`",
        ),
        (
            {"remotes": {"new": {"url": "http://localhost:7700", "writeApiKey": True}}},
            "invalid_network_write_api_key",
            "Invalid value type at `.remotes.new.writeApiKey`: expected a string, but found a boolean: `true`",
        ),
        (
            {"shards": {"a": {"remotes": "ms0"}}},
            "invalid_network_remotes",
            'Invalid value type at `.shards.a.remotes`: expected an array, but found a string: `"ms0"`',
        ),
        (
            {"previousRemotes": {}},
            "unexpected_network_previous_remotes",
            "Unexpected `previousRemotes` in network call.\n  - Note: `previousRemote` is reserved for internal use.",
        ),
    ]
    for body, code, message in cases:
        assert patch(admin, body) == (400, error(code, message)), body
    status, body = patch(admin, {"remotes": {"kefir": {"url": "http://localhost:7700"}}})
    assert status == 200
    assert without_version(body) == {
        "self": None,
        "remotes": {"kefir": remote("http://localhost:7700")},
        "shards": {},
        "leader": None,
    }
    assert patch(admin, {"remotes": {"kefir": {"url": None}}}) == (
        400,
        error("invalid_network_url", "Field `.remotes.kefir.url` cannot be set to `null`"),
    )
    # Enterprise Edition's checks of a leader (sharding: tests/integration/test_network_sharding.py)
    assert patch(admin, {"self": "kefir", "leader": "other"}) == (
        400,
        error(
            "not_leader",
            "This remote is not the leader of the network.\n  - Note: only the leader `other` can "
            "receive new tasks.",
        ),
    )
    assert patch(admin, {"self": "nobody", "leader": "nobody"}) == (
        400,
        error("invalid_network_remotes", "leader `nobody` is missing from remotes"),
    )
    assert patch(admin, {"self": "kefir", "leader": "kefir"}) == (
        400,
        error("invalid_network_shards", "there must be at least one shard owned by at least one remote"),
    )
    assert patch(admin, {"self": "kefir", "leader": "kefir", "shards": {"a": {"remotes": ["ghost"]}}}) == (
        400,
        error("invalid_network_shards", "unknown remote `ghost` in `.a.remotes`"),
    )
    assert admin.get("/network").json()["leader"] is None
    r = admin.post("/network/control", json={})
    assert (r.status_code, r.json()) == (
        451,
        error("requires_enterprise_edition", "Meilisearch Enterprise Edition is required to call this route"),
    )
    assert patch(admin, {"remotes": None})[0] == 200


def test_get_and_set_network(admin: httpx.Client, srv: ServerProcess) -> None:
    admin.patch("/experimental-features", json={"network": True})
    patch(admin, {"remotes": None, "shards": None, "self": None})
    status, body = patch(admin, {"self": "myself"})
    assert (status, without_version(body)) == (
        200,
        {"self": "myself", "remotes": {}, "shards": {}, "leader": None},
    )
    status, body = patch(
        admin,
        {
            "remotes": {
                "thy": {"url": "http://localhost:7701", "searchApiKey": "foo"},
                "myself": {"url": "http://localhost:7700"},
            }
        },
    )
    assert list(body) == ["self", "remotes", "shards", "leader", "version"]
    assert list(body["remotes"]) == ["myself", "thy"]
    assert body["remotes"]["thy"] == remote("http://localhost:7701", "foo")
    versions = {body["version"]}
    _, body = patch(admin, {"remotes": {"thy": {"searchApiKey": "bar", "writeApiKey": "w"}}})
    assert body["remotes"]["thy"] == remote("http://localhost:7701", "bar", "w")
    _, body = patch(
        admin,
        {
            "remotes": {"them": {"url": "http://localhost:7702", "searchApiKey": "baz"}},
            "shards": {"s1": {"remotes": ["thy", "myself"]}, "s2": {"remotes": ["them"]}},
        },
    )
    assert body["shards"] == {"s1": {"remotes": ["myself", "thy"]}, "s2": {"remotes": ["them"]}}
    _, body = patch(admin, {"shards": {"s1": {"addRemotes": ["them"], "removeRemotes": ["thy"]}}})
    assert body["shards"]["s1"] == {"remotes": ["myself", "them"]}
    # deleting a remote removes it from every shard; a shard left without remotes goes
    _, body = patch(admin, {"remotes": {"myself": None, "them": None}})
    assert list(body["remotes"]) == ["thy"] and body["shards"] == {}
    versions.add(body["version"])
    _, body = patch(admin, {"self": None})
    assert body["self"] is None
    _, empty = patch(admin, {})
    versions.add(empty["version"])
    assert len(versions) == 3  # every PATCH gives a new version, `{}` included
    assert admin.get("/network").json() == empty
    # stored durably: a restarted server answers the same network
    srv.stop()
    srv.start()
    with httpx.Client(
        base_url=srv.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}
    ) as again:
        assert again.get("/network").json() == empty
        _, body = patch(again, {"remotes": None})
        assert body["remotes"] == {}


def test_search_workers_see_the_network(admin: httpx.Client) -> None:
    """Searches run in every process of the server: a query naming `self` must run locally in a worker
    too (an unknown remote would be refused)."""
    admin.patch("/experimental-features", json={"network": True})
    task = admin.post("/indexes/things/documents", json=[{"id": 1, "name": "thing"}]).json()
    assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    patch(admin, {"self": "here", "remotes": None})
    served_by = set()
    for _ in range(12):
        r = admin.post(
            "/multi-search",
            json={
                "federation": {},
                "queries": [{"indexUid": "things", "federationOptions": {"remote": "here"}}],
            },
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["hits"] == [
            {
                "id": 1,
                "name": "thing",
                "_federation": {
                    "indexUid": "things",
                    "queriesPosition": 0,
                    "weightedRankingScore": 1.0,
                    "remote": "here",
                },
            }
        ]
        assert body["remoteErrors"] == {}
        served_by.add(r.headers.get("x-hanzo-worker"))
    r = admin.post(
        "/multi-search",
        json={
            "federation": {},
            "queries": [{"indexUid": "things", "federationOptions": {"remote": "there"}}],
        },
    )
    assert r.json()["message"] == (
        "Inside `.queries[0]`: Invalid `.federation_options.remote`: remote `there` is not registered"
    )


def test_keys_actions(admin: httpx.Client, srv: ServerProcess) -> None:
    admin.patch("/experimental-features", json={"network": True})

    def key(actions: list[str]) -> str:
        r = admin.post("/keys", json={"actions": actions, "indexes": ["*"], "expiresAt": None})
        assert r.status_code == 201
        value: str = r.json()["key"]
        return value

    get_key, update_key, search_key = key(["network.get"]), key(["network.update"]), key(["search"])
    invalid = error("invalid_api_key", "The provided API key is invalid.", "auth")
    with httpx.Client(base_url=srv.url, timeout=30) as c:

        def as_(k: str) -> dict[str, str]:
            return {"Authorization": f"Bearer {k}"}

        assert c.get("/network", headers=as_(get_key)).status_code == 200
        r = c.patch("/network", json={"self": "get_api_key"}, headers=as_(get_key))
        assert (r.status_code, r.json()) == (403, invalid)
        r = c.patch("/network", json={"self": "api_key"}, headers=as_(update_key))
        assert (r.status_code, r.json()["self"]) == (200, "api_key")
        r = c.get("/network", headers=as_(update_key))
        assert (r.status_code, r.json()) == (403, invalid)
        for method in ("GET", "PATCH"):
            r = c.request(method, "/network", json={} if method == "PATCH" else None, headers=as_(search_key))
            assert (r.status_code, r.json()) == (403, invalid)


def test_dumps_carry_the_network(admin: httpx.Client, srv: ServerProcess, tmp_path: Path) -> None:
    admin.patch("/experimental-features", json={"network": True})
    _, network = patch(
        admin,
        {
            "self": "ms0",
            "remotes": {"ms1": {"url": "http://ms1.example:7700", "searchApiKey": "s", "writeApiKey": "w"}},
            "shards": {"a": {"remotes": ["ms0", "ms1"]}},
        },
    )
    done = wait_task(admin, admin.post("/dumps").json()["taskUid"], timeout=60)
    assert done["status"] == "succeeded", done
    dump = srv.db_path.parent / "dumps" / f"{done['details']['dumpUid']}.dump"
    with tarfile.open(dump) as tar:
        member = next(m for m in tar.getmembers() if m.name.lstrip("./") == "network.json")
        file = tar.extractfile(member)
        assert file is not None
        assert json.loads(file.read()) == network
    target = ServerProcess(tmp_path / "imported.ms", extra_args=["--import-dump", str(dump)]).start()
    try:
        with httpx.Client(base_url=target.url, timeout=30) as c:
            # imported without `self` (and `leader`), as Meilisearch does
            assert c.get("/network").json() == {**network, "self": None}
    finally:
        target.stop()


def test_snapshots_carry_the_network(tmp_path: Path) -> None:
    source = ServerProcess(
        tmp_path / "data.ms", extra_args=["--snapshot-dir", str(tmp_path / "snaps")]
    ).start()
    try:
        with httpx.Client(base_url=source.url, timeout=30) as c:
            c.patch("/experimental-features", json={"network": True})
            _, network = patch(c, {"self": "ms0", "remotes": {"ms1": {"url": "http://ms1.example:7700"}}})
            done = wait_task(c, c.post("/snapshots").json()["taskUid"], timeout=60)
            assert done["status"] == "succeeded", done
    finally:
        source.stop()
    target = ServerProcess(
        tmp_path / "restored.ms",
        extra_args=["--import-snapshot", str(tmp_path / "snaps" / "data.ms.snapshot")],
    ).start()
    try:
        with httpx.Client(base_url=target.url, timeout=30) as c:
            assert c.get("/network").json() == network
    finally:
        target.stop()


def test_shard_filter(admin: httpx.Client) -> None:
    """`_shard` needs the feature; as in Meilisearch's Community Edition no document belongs to a shard,
    so a named shard does not exist, and only `=`, `!=`, `IN` are allowed."""
    task = admin.post("/indexes/sharded/documents", json=[{"id": 1}]).json()
    assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    admin.patch("/experimental-features", json={"network": True})

    def search(filter_: str) -> tuple[int, Any]:
        r = admin.post("/indexes/sharded/search", json={"filter": filter_})
        return r.status_code, r.json()

    # milli's errors are named by their index in a search, as Meilisearch does
    assert search("_shard = a") == (
        400,
        error("invalid_search_filter", "Index `sharded`: Shard `a` does not exist"),
    )
    assert search("_shard != b")[1]["message"] == "Index `sharded`: Shard `b` does not exist"
    assert search("_shard IN [c, d]")[1]["message"] == "Index `sharded`: Shard `c` does not exist"
    assert search("_shard > 1") == (
        400,
        error(
            "invalid_search_filter",
            "Index `sharded`: Filter operator `> is not allowed for the special attribute `_shard`.\n  - Note: "
            "allowed operators: =, !=, IN. \n  - Note: other operators are not allowed for the special attribute "
            "`_shard`.",
        ),
    )
    admin.patch("/experimental-features", json={"network": False})
    status, body = search("_shard = a")
    assert (status, body["code"]) == (400, "feature_not_enabled")
    assert "using a shard filter requires enabling the `network` experimental feature" in body["message"]


def test_official_python_sdk_network_methods(srv: ServerProcess) -> None:
    """What meilisearch-python's `test_client_network.py` does: get, upsert remotes, `leader: null`."""
    import meilisearch

    client = meilisearch.Client(srv.url, MASTER_KEY)
    client.update_experimental_features({"network": True})
    assert isinstance(client.get_all_networks(), dict)
    response = client.add_or_update_networks(
        body={
            "remotes": {
                "ms_1": {
                    "url": "http://localhost:7700",
                    "searchApiKey": "xxxxxxxxxxxxxx",
                    "writeApiKey": "xxxxxxxxx",
                },
                "ms_2": {
                    "url": "http://localhost:7720",
                    "searchApiKey": "xxxxxxxxxxxxxxx",
                    "writeApiKey": "xxxxxxxx",
                },
            }
        }
    )
    assert {"ms_1", "ms_2"} <= set(response["remotes"])
    response = client.add_or_update_networks(
        {
            "remotes": {"ms_1": {"url": "http://localhost:7701", "searchApiKey": "remoteSearchKey"}},
            "leader": None,
        }
    )
    assert response["remotes"]["ms_1"] == remote("http://localhost:7701", "remoteSearchKey", "xxxxxxxxx")
    client.add_or_update_networks({"remotes": None, "self": None})
