"""Pure parts of sharding (issue 21): rendezvous hashing, the `_shard` clause, the leader check, the
origin headers and which routes are writes. The three-server behaviour is in
tests/integration/test_network_sharding.py."""

from __future__ import annotations

from typing import Any

import pytest

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.scheduler.network import NIL_VERSION, default_network
from hanzo_engine.scheduler.sharding import document_shard, ownership, shard_hash
from hanzo_engine.server.sharding import (
    check_write,
    network_targets,
    origin_from_headers,
    shard_filter,
    uses_network,
    write_route,
)

xxhash = pytest.importorskip("xxhash")


def _network(**fields: Any) -> dict[str, Any]:
    return {**default_network(), **fields}


SHARDED = _network(
    self="ms0",
    leader="ms0",
    version="0190a5b2-0000-7000-8000-000000000000",
    remotes={n: {"url": f"http://{n}:7700"} for n in ("ms0", "ms1", "ms2")},
    shards={"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}, "s2": {"remotes": ["ms1", "ms2"]}},
)


def test_rendezvous_hash_is_xxh3_of_rusts_tuple_encoding() -> None:
    # milli hashes `(shard, docid)` with XXH3-64 (seed 0); Rust writes each str followed by 0xff
    assert shard_hash("s0", "p1") == xxhash.xxh3_64_intdigest(b"s0\xffp1\xff") == 4911844158978457150
    assert shard_hash("shard-a", "42") == 4702346685311452767
    assert [document_shard(["s0", "s1", "s2"], f"p{i}") for i in range(8)] == [
        "s0",
        "s2",
        "s1",
        "s2",
        "s2",
        "s1",
        "s1",
        "s2",
    ]
    assert document_shard([], "p1") is None
    # the order the shards are given in does not matter
    assert all(
        document_shard(["s2", "s0", "s1"], f"p{i}") == document_shard(["s0", "s1", "s2"], f"p{i}")
        for i in range(200)
    )


def test_ownership() -> None:
    assert ownership(_network()) is None  # no leader: every document is kept
    keep = ownership(SHARDED)
    assert keep is not None
    assert all(keep(f"p{i}") == (document_shard(["s0", "s1", "s2"], f"p{i}") == "s0") for i in range(200))
    assert ownership({**SHARDED, "self": "ms1"}) is not None
    assert ownership({**SHARDED, "shards": {"s0": {"remotes": ["ms0"]}}}) is None  # owns every shard


def test_shard_filter_ands_a_quoted_clause() -> None:
    assert shard_filter(None, None) is None
    assert shard_filter("a = 1", None) == "a = 1"
    assert shard_filter(None, "s0") == '_shard = "s0"'
    assert shard_filter("a = 1", "s0") == ["a = 1", '_shard = "s0"']
    assert shard_filter(["a = 1", ["b = 2", "c = 3"]], 's"1') == [
        "a = 1",
        ["b = 2", "c = 3"],
        '_shard = "s\\"1"',
    ]


def test_targets_and_use_network_default() -> None:
    plain = _network(self="a", remotes={"a": {"url": "http://a"}, "b": {"url": "http://b"}})
    assert network_targets(plain) == [("a", None), ("b", None)]
    assert not uses_network(None, plain) and uses_network(True, plain)
    assert uses_network(None, SHARDED) and not uses_network(False, SHARDED)
    targets = network_targets(SHARDED)
    assert targets[:2] == [("ms0", "s0"), ("ms1", "s1")]
    assert targets[2][1] == "s2" and targets[2][0] in ("ms1", "ms2")
    # this node answers for the shards it owns
    assert network_targets({**SHARDED, "self": "ms1"})[2] == ("ms1", "s2")


def test_leader_check_and_origin_headers() -> None:
    assert check_write(_network(), None) is None
    assert check_write(SHARDED, None) == "leader"
    with pytest.raises(MeiliError) as err:
        check_write({**SHARDED, "self": "ms1"}, None)
    assert err.value.code == "not_leader" and "only the leader `ms0`" in err.value.message
    origin = origin_from_headers(
        {
            "x-meili-proxy-origin-remote": "ms0",
            "x-meili-proxy-origin-taskuid": "12",
            "x-meili-proxy-origin-network-version": SHARDED["version"],
        }
    )
    assert origin is not None and origin.to_json() == {
        "remoteName": "ms0",
        "taskUid": 12,
        "networkVersion": SHARDED["version"],
    }
    assert check_write({**SHARDED, "self": "ms1"}, origin) == "follower"
    old = origin_from_headers({"x-meili-proxy-origin-remote": "ms0", "x-meili-proxy-origin-taskuid": "12"})
    assert old is not None and old.network_version == NIL_VERSION
    with pytest.raises(MeiliError) as err:
        check_write(SHARDED, old)
    assert err.value.code == "network_version_too_old"
    assert origin_from_headers({}) is None
    with pytest.raises(MeiliError) as err:
        origin_from_headers({"x-meili-proxy-origin-taskuid": "1"})
    assert err.value.code == "inconsistent_document_change_headers"
    assert err.value.message.startswith(
        "Inconsistent `Origin` headers: X-Meili-Proxy-Origin-TaskUid was provided "
        "but X-Meili-Proxy-Origin-Remote is missing."
    )
    with pytest.raises(MeiliError) as err:
        origin_from_headers({"x-meili-proxy-origin-remote": "ms0", "x-meili-proxy-origin-taskuid": "x"})
    assert err.value.code == "invalid_header_value"


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/indexes", ("indexes.create", None)),
        ("PATCH", "/indexes/movies", ("indexes.update", "movies")),
        ("POST", "/indexes/movies/documents", ("documents.add", "movies")),
        ("DELETE", "/indexes/movies/documents/12", ("documents.delete", "movies")),
        ("POST", "/indexes/movies/documents/delete-batch", ("documents.delete", "movies")),
        ("POST", "/indexes/movies/documents/edit", ("documents.*", "movies")),
        ("PUT", "/indexes/movies/settings/synonyms", ("settings.update", "movies")),
        ("POST", "/swap-indexes", ("indexes.swap", None)),
        ("POST", "/indexes/movies/documents/fetch", None),
        ("POST", "/indexes/movies/search", None),
        ("GET", "/indexes/movies/documents", None),
        ("POST", "/multi-search", None),
    ],
)
def test_write_routes(method: str, path: str, expected: tuple[str, str | None] | None) -> None:
    assert write_route(method, path) == expected
