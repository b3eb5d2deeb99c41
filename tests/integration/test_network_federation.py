"""Three instances in a network (issue 21): documents split across them must search as one instance
holding them all, through federated multi-search with `federationOptions.remote` and through
`useNetwork`; remotes that are down, slow, refuse the key or answer garbage yield `remoteErrors` and the
other results, never a 5xx.

Each instance is a real server process on a loopback port, started with
`--experimental-allowed-ip-networks 127.0.0.0/8` (outgoing requests to loopback are refused by default);
a fourth one holds every document and is the reference.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from tests.conftest import MASTER_KEY, ServerProcess, free_port, wait_task

INDEX: Final = "movies"
ALLOW: Final = ["--experimental-allowed-ip-networks", "127.0.0.0/8"]
REMOTE_TIMEOUT: Final = "3"
GENRES: Final = ("drama", "comedy", "horror", "action", "documentary")
WORDS: Final = ("batman", "returns", "dark", "knight", "robin", "gotham", "joker", "night", "city", "hero")


def _documents(count: int = 600) -> list[dict[str, Any]]:
    docs = []
    for i in range(count):
        words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(1 + i % 4)]
        docs.append(
            {
                "id": i,
                "title": " ".join(words),
                "genre": GENRES[i % len(GENRES)],
                "rank": (i * 37) % count,
                "year": 1950 + i % 70,
            }
        )
    return docs


# `sort` first: with a sort, the order is the sort's (unique `rank`), without one a single relevancy group
SETTINGS: Final = {
    "filterableAttributes": ["genre", "year"],
    "sortableAttributes": ["rank", "year"],
    "rankingRules": ["sort", "words", "typo", "proximity", "attribute", "exactness"],
}


def _client(srv: ServerProcess, key: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=srv.url, timeout=30, headers=headers)


def _load(client: httpx.Client, docs: list[dict[str, Any]]) -> None:
    task = client.patch(f"/indexes/{INDEX}/settings", json=SETTINGS).json()
    assert wait_task(client, task["taskUid"])["status"] == "succeeded"
    task = client.post(f"/indexes/{INDEX}/documents", json=docs, params={"primaryKey": "id"}).json()
    assert wait_task(client, task["taskUid"], timeout=120)["status"] == "succeeded"


class _Fake(http.server.BaseHTTPRequestHandler):
    """A remote that answers garbage (`/garbage`) or too late (anything else after `delay` seconds)."""

    delay = 6.0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = b"this is not json"
        if self.server.server_port != _Fake.garbage_port:  # type: ignore[attr-defined]
            time.sleep(self.delay)
            body = b"{}"
        try:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass

    garbage_port = 0


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root: Path = tmp_path_factory.mktemp("network")
    env = {"MEILI_EXPERIMENTAL_REMOTE_SEARCH_TIMEOUT_SECONDS": REMOTE_TIMEOUT}
    servers = {
        "ms0": ServerProcess(root / "ms0" / "data.ms", extra_args=ALLOW, env=env),
        "ms1": ServerProcess(root / "ms1" / "data.ms", extra_args=ALLOW, env=env),
        "ms2": ServerProcess(
            root / "ms2" / "data.ms", extra_args=[*ALLOW, "--master-key", MASTER_KEY], env=env
        ),
        "single": ServerProcess(root / "single" / "data.ms", extra_args=ALLOW, env=env),
        "gone": ServerProcess(root / "gone" / "data.ms", extra_args=ALLOW, env=env),
    }
    for srv in servers.values():
        srv.db_path.parent.mkdir(parents=True, exist_ok=True)
        srv.start()
    fakes = []
    for _ in range(2):
        fake = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Fake)
        fake.daemon_threads = True
        threading.Thread(target=fake.serve_forever, daemon=True).start()
        fakes.append(fake)
    _Fake.garbage_port = fakes[1].server_port
    try:
        docs = _documents()
        clients = {name: _client(srv, MASTER_KEY if name == "ms2" else None) for name, srv in servers.items()}
        for n, name in enumerate(("ms0", "ms1", "ms2")):
            _load(clients[name], [d for d in docs if d["id"] % 3 == n])
        _load(clients["single"], docs)
        gone_url = servers["gone"].url
        servers["gone"].stop()
        remotes = {
            "ms0": {"url": servers["ms0"].url},
            "ms1": {"url": servers["ms1"].url},
            "ms2": {"url": servers["ms2"].url, "searchApiKey": MASTER_KEY},
        }
        for name in ("ms0", "ms1", "ms2"):
            c = clients[name]
            assert c.patch("/experimental-features", json={"network": True}).status_code == 200
            r = c.patch("/network", json={"self": name, "remotes": remotes})
            assert r.status_code == 200, r.text
        r = clients["ms0"].patch(
            "/network",
            json={
                "remotes": {
                    "down": {"url": gone_url},
                    "slow": {"url": f"http://127.0.0.1:{fakes[0].server_port}"},
                    "garbage": {"url": f"http://127.0.0.1:{fakes[1].server_port}/some/path"},
                    "badkey": {"url": servers["ms2"].url, "searchApiKey": "not-the-key"},
                }
            },
        )
        assert r.status_code == 200, r.text
        assert clients["single"].patch("/experimental-features", json={"network": True}).status_code == 200
        yield {"servers": servers, "clients": clients, "docs": docs}
        for c in clients.values():
            c.close()
    finally:
        for fake in fakes:
            fake.shutdown()
            fake.server_close()
        for srv in servers.values():
            srv.stop()


def _ids(hits: list[dict[str, Any]]) -> list[Any]:
    return [h["id"] for h in hits]


def _federated(client: httpx.Client, queries: list[dict[str, Any]], **federation: Any) -> dict[str, Any]:
    r = client.post("/multi-search", json={"federation": federation, "queries": queries})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def _on(remote: str, **query: Any) -> dict[str, Any]:
    return {"indexUid": INDEX, **query, "federationOptions": {"remote": remote}}


NETWORK3: Final = ("ms0", "ms1", "ms2")


@pytest.mark.parametrize(
    "query",
    [
        {"q": "", "sort": ["rank:asc"]},
        {"q": "batman", "sort": ["year:desc", "rank:asc"]},
        {"q": "dark knight", "sort": ["rank:desc"], "filter": "genre != horror"},
    ],
)
def test_federated_remote_search_equals_one_instance(net: dict[str, Any], query: dict[str, Any]) -> None:
    clients = net["clients"]
    facets = {"facetsByIndex": {INDEX: ["genre", "year"]}}
    expected = _federated(clients["single"], [{"indexUid": INDEX, **query}], limit=25, offset=10, **facets)
    for caller in NETWORK3:
        got = _federated(
            clients[caller], [_on(name, **query) for name in NETWORK3], limit=25, offset=10, **facets
        )
        assert _ids(got["hits"]) == _ids(expected["hits"])
        assert got["estimatedTotalHits"] == expected["estimatedTotalHits"]
        assert got["facetsByIndex"] == expected["facetsByIndex"]
        assert got["remoteErrors"] == {}
        for hit in got["hits"]:
            assert hit["_federation"]["remote"] == NETWORK3[hit["id"] % 3]
            assert list(hit["_federation"]) == [
                "indexUid",
                "queriesPosition",
                "weightedRankingScore",
                "remote",
            ]
            assert hit["_federation"]["queriesPosition"] == hit["id"] % 3


def test_federated_pages_and_merged_facets(net: dict[str, Any]) -> None:
    clients = net["clients"]
    query = {"q": "robin", "sort": ["rank:asc"]}
    expected = _federated(
        clients["single"],
        [{"indexUid": INDEX, **query}],
        page=3,
        hitsPerPage=7,
        facetsByIndex={INDEX: ["genre"]},
        mergeFacets={},
    )
    got = _federated(
        clients["ms1"],
        [_on(name, **query) for name in NETWORK3],
        page=3,
        hitsPerPage=7,
        facetsByIndex={INDEX: ["genre"]},
        mergeFacets={},
    )
    assert _ids(got["hits"]) == _ids(expected["hits"])
    for key in ("page", "hitsPerPage", "totalPages", "totalHits", "facetDistribution", "facetStats"):
        assert got.get(key) == expected.get(key), key


def test_relevancy_scores_merge_across_instances(net: dict[str, Any]) -> None:
    """Without a sort, hits are merged by ranking score: the same scores in the same order as one
    instance (documents of equal score may come in another order)."""
    clients = net["clients"]
    expected = _federated(clients["single"], [{"indexUid": INDEX, "q": "gotham joker"}], limit=60)
    got = _federated(clients["ms0"], [_on(name, q="gotham joker") for name in NETWORK3], limit=60)
    scores = [h["_federation"]["weightedRankingScore"] for h in got["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert scores == [h["_federation"]["weightedRankingScore"] for h in expected["hits"]]
    assert got["estimatedTotalHits"] == expected["estimatedTotalHits"]


def test_use_network_search_equals_one_instance(net: dict[str, Any]) -> None:
    clients = net["clients"]
    body = {"q": "batman", "sort": ["rank:asc"], "facets": ["genre"], "limit": 15, "offset": 5}
    expected = clients["single"].post(f"/indexes/{INDEX}/search", json=body).json()
    r = clients["ms2"].post(f"/indexes/{INDEX}/search", json={**body, "useNetwork": True})
    assert r.status_code == 200, r.text
    got = r.json()
    assert _ids(got["hits"]) == _ids(expected["hits"])
    for key in ("query", "limit", "offset", "estimatedTotalHits", "facetDistribution", "facetStats"):
        assert got[key] == expected[key], key
    assert got["remoteErrors"] == {}
    assert list(got)[-1] == "remoteErrors"
    assert all(h["_federation"]["remote"] == NETWORK3[h["id"] % 3] for h in got["hits"])
    # `useNetwork: false` stays local: a third of the documents
    local = clients["ms2"].post(f"/indexes/{INDEX}/search", json={**body, "useNetwork": False}).json()
    assert all(h["id"] % 3 == 2 for h in local["hits"]) and "remoteErrors" not in local


def test_failing_remotes_give_remote_errors_and_the_rest(net: dict[str, Any]) -> None:
    clients = net["clients"]
    query = {"q": "", "sort": ["rank:asc"]}
    names = ("ms0", "ms1", "down", "slow", "garbage", "badkey")
    started = time.monotonic()
    got = _federated(clients["ms0"], [_on(name, **query) for name in names], limit=30)
    elapsed = time.monotonic() - started
    assert elapsed < float(REMOTE_TIMEOUT) + 2.5  # remotes run in parallel, bounded by the deadline
    errors = got["remoteErrors"]
    assert sorted(errors) == ["badkey", "down", "garbage", "slow"]
    assert errors["down"]["code"] == "remote_could_not_send_request"
    assert errors["down"]["type"] == "system"
    assert errors["slow"] == {
        "message": "remote host did not answer before the deadline",
        "code": "remote_timeout",
        "type": "system",
        "link": "https://docs.meilisearch.com/errors#remote_timeout",
    }
    assert errors["badkey"] == {
        "message": "could not authenticate against the remote host\n  - hint: check that the remote instance was "
        "registered with a valid API key having the `search` action",
        "code": "remote_invalid_api_key",
        "type": "auth",
        "link": "https://docs.meilisearch.com/errors#remote_invalid_api_key",
    }
    assert errors["garbage"]["code"] == "remote_bad_response"
    assert errors["garbage"]["message"] == (
        "could not parse response from the remote host as a federated search response:\n  - response from remote: "
        "this is not json\n  - hint: check that the remote instance is a Meilisearch instance running the same "
        "version"
    )
    docs = sorted((d for d in net["docs"] if d["id"] % 3 in (0, 1)), key=lambda d: d["rank"])
    assert _ids(got["hits"]) == [d["id"] for d in docs[:30]]
    assert got["estimatedTotalHits"] == len(docs)


def test_remote_bad_request_is_quoted(net: dict[str, Any]) -> None:
    got = _federated(
        net["clients"]["ms0"], [_on("ms0"), {"indexUid": "nope", "federationOptions": {"remote": "ms1"}}]
    )
    error = got["remoteErrors"]["ms1"]
    assert error["code"] == "remote_bad_request"
    assert error["message"] == (
        'remote host responded with code 400:\n  - response from remote: {"message":"Inside `.queries[1]`: Index '
        '`nope` not found.","code":"index_not_found","type":"invalid_request","link":"https://docs.meilisearch.com/'
        'errors#index_not_found"}\n  - hint: check that the remote instance has the correct index configuration for '
        "that request\n  - hint: check that the `network` experimental feature is enabled on the remote instance"
    )
    assert len(got["hits"]) == 20


def test_unknown_remote_and_metadata(net: dict[str, Any]) -> None:
    c = net["clients"]["ms0"]
    r = c.post("/multi-search", json={"federation": {}, "queries": [_on("ms0"), _on("ms1"), _on("ms9")]})
    assert (r.status_code, r.json()["message"], r.json()["code"]) == (
        400,
        "Inside `.queries[2]`: Invalid `.federation_options.remote`: remote `ms9` is not registered",
        "invalid_multi_search_remote",
    )
    r = c.post(
        "/multi-search",
        json={"federation": {"limit": 1}, "queries": [_on("ms1"), {"indexUid": INDEX}]},
        headers={"Meili-Include-Metadata": "true"},
    )
    metadata = r.json()["metadata"]
    assert [(m["indexUid"], m.get("primaryKey"), m.get("remote")) for m in metadata] == [
        (INDEX, "id", "ms1"),
        (INDEX, "id", "ms0"),
    ]


def test_proxy_mode_answers_weighted_score_values(net: dict[str, Any]) -> None:
    r = net["clients"]["ms1"].post(
        "/multi-search",
        headers={"Meili-Proxy-Search": "true"},
        json={
            "federation": {"limit": 2},
            "queries": [{"indexUid": INDEX, "sort": ["rank:asc"], "federationOptions": {"queryPosition": 4}}],
        },
    )
    assert r.status_code == 200, r.text
    federation = r.json()["hits"][0]["_federation"]
    assert list(federation) == [
        "indexUid",
        "queriesPosition",
        "weightedRankingScore",
        "weightedScoreValues",
        "extra_document",
    ]
    assert federation["queriesPosition"] == 4
    assert federation["weightedScoreValues"] == [{"sort": {"asc": True, "value": 1}}]


def test_use_network_documents_equal_one_instance(net: dict[str, Any]) -> None:
    clients = net["clients"]
    body = {
        "offset": 7,
        "limit": 20,
        "sort": ["rank:desc"],
        "filter": "genre IN [drama, comedy]",
        "fields": ["id", "title"],
    }
    expected = clients["single"].post(f"/indexes/{INDEX}/documents/fetch", json=body).json()
    r = clients["ms1"].post(f"/indexes/{INDEX}/documents/fetch", json={**body, "useNetwork": True})
    assert r.status_code == 200, r.text
    assert r.json() == expected  # no `remoteErrors` when every remote answered
    params = {"offset": 3, "limit": 9, "sort": "year:asc,rank:asc", "fields": "id,year", "useNetwork": "true"}
    expected = (
        clients["single"].get(f"/indexes/{INDEX}/documents", params={**params, "useNetwork": "false"}).json()
    )
    got = clients["ms2"].get(f"/indexes/{INDEX}/documents", params=params).json()
    assert got == expected
    # without a sort, each remote's documents follow the others' (remote name order)
    got = (
        clients["ms1"]
        .post(f"/indexes/{INDEX}/documents/fetch", json={"limit": 1000, "useNetwork": True})
        .json()
    )
    assert got["total"] == len(net["docs"])
    assert [d["id"] % 3 for d in got["results"]] == sorted(d["id"] % 3 for d in net["docs"])


def test_use_network_one_document(net: dict[str, Any]) -> None:
    c = net["clients"]["ms0"]
    assert c.get(f"/indexes/{INDEX}/documents/4").status_code == 404  # it lives on ms1
    r = c.get(f"/indexes/{INDEX}/documents/4", params={"useNetwork": "true", "fields": "id,genre"})
    assert (r.status_code, r.json()) == (200, {"id": 4, "genre": "documentary"})
    r = c.get(f"/indexes/{INDEX}/documents/100000", params={"useNetwork": "true"})
    assert (r.status_code, r.json()["code"]) == (404, "document_not_found")


def test_use_network_documents_with_failing_remotes(net: dict[str, Any]) -> None:
    r = net["clients"]["ms0"].post(
        f"/indexes/{INDEX}/documents/fetch", json={"limit": 10, "sort": ["rank:asc"], "useNetwork": True}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert {name: e["code"] for name, e in body["remoteErrors"].items()} == {
        "badkey": "remote_invalid_api_key",
        "down": "remote_could_not_send_request",
        "garbage": "remote_bad_response",
        "slow": "remote_timeout",
    }
    # the three instances still answer every document
    assert body["total"] == len(net["docs"])
    assert [d["rank"] for d in body["results"]] == list(range(10))


def test_use_network_facet_search(net: dict[str, Any]) -> None:
    clients = net["clients"]
    body = {"facetName": "genre", "q": "batman", "filter": "year > 1960"}
    expected = clients["single"].post(f"/indexes/{INDEX}/facet-search", json=body).json()
    r = clients["ms1"].post(f"/indexes/{INDEX}/facet-search", json={**body, "useNetwork": True})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["facetHits"] == expected["facetHits"]
    assert (got["facetQuery"], got["remoteErrors"]) == (None, {})
    got = clients["ms0"].post(f"/indexes/{INDEX}/facet-search", json={**body, "useNetwork": True}).json()
    assert got["facetHits"] == expected["facetHits"]
    assert sorted(got["remoteErrors"]) == ["badkey", "down", "garbage", "slow"]


def test_use_network_in_a_multi_search(net: dict[str, Any]) -> None:
    clients = net["clients"]
    query = {"indexUid": INDEX, "q": "joker", "sort": ["rank:asc"], "limit": 12}
    expected = (
        clients["single"]
        .post(f"/indexes/{INDEX}/search", json={k: v for k, v in query.items() if k != "indexUid"})
        .json()
    )
    r = clients["ms2"].post("/multi-search", json={"queries": [{**query, "useNetwork": True}, query]})
    assert r.status_code == 200, r.text
    networked, local = r.json()["results"]
    assert networked["indexUid"] == INDEX and networked["remoteErrors"] == {}
    assert _ids(networked["hits"]) == _ids(expected["hits"])
    assert networked["estimatedTotalHits"] == expected["estimatedTotalHits"]
    assert all(h["id"] % 3 == 2 for h in local["hits"]) and "remoteErrors" not in local
    r = clients["ms2"].post(
        "/multi-search", json={"queries": [query, {**query, "useNetwork": True, "indexUid": "missing"}]}
    )
    assert (r.status_code, r.json()["code"]) == (400, "index_not_found")
    assert r.json()["message"].startswith("Inside `.queries[1]`: ")


def test_use_network_query_in_a_federated_search(net: dict[str, Any]) -> None:
    """A federated query with `useNetwork: true` becomes one query per remote (self's runs here), next
    to a plain local query; weights apply to both."""
    clients = net["clients"]
    networked = {
        "indexUid": INDEX,
        "q": "night",
        "sort": ["rank:asc"],
        "useNetwork": True,
        "federationOptions": {"weight": 0.5},
    }
    expected = _federated(clients["single"], [{**networked, "useNetwork": False}], limit=40)
    got = _federated(clients["ms1"], [networked], limit=40)
    assert _ids(got["hits"]) == _ids(expected["hits"])
    assert got["estimatedTotalHits"] == expected["estimatedTotalHits"]
    assert {h["_federation"]["remote"] for h in got["hits"]} == set(NETWORK3)
    scores = [h["_federation"]["weightedRankingScore"] for h in got["hits"]]
    assert scores == [h["_federation"]["weightedRankingScore"] for h in expected["hits"]]
    assert max(scores) <= 0.5


def test_proxy_mode_accepts_a_meilisearch_request(net: dict[str, Any]) -> None:
    """The body a Meilisearch node sends its remotes: every optional field of the query serialized,
    `null` when unset; the federation with `facetsByIndex` always present."""
    query = {
        "indexUid": INDEX,
        "q": "batman",
        "offset": None,
        "limit": None,
        "page": None,
        "hitsPerPage": None,
        "attributesToRetrieve": None,
        "attributesToCrop": None,
        "cropLength": 10,
        "cropMarker": "…",
        "attributesToHighlight": None,
        "highlightPreTag": "<em>",
        "highlightPostTag": "</em>",
        "showMatchesPosition": False,
        "filter": "genre = drama",
        "sort": ["rank:asc"],
        "distinct": None,
        "facets": None,
        "matchingStrategy": "last",
        "attributesToSearchOn": None,
        "rankingScoreThreshold": None,
        "locales": None,
        "hybrid": None,
        "vector": None,
        "retrieveVectors": False,
        "media": None,
        "useNetwork": None,
        "showRankingScore": False,
        "showRankingScoreDetails": False,
        "showPerformanceDetails": None,
        "federationOptions": {"weight": 1.0, "remote": None, "queryPosition": 3},
    }
    federation = {"limit": 5, "offset": 0, "facetsByIndex": {}, "showPerformanceDetails": False}
    r = net["clients"]["ms1"].post(
        "/multi-search",
        headers={"Meili-Proxy-Search": "true"},
        json={"queries": [query], "federation": federation},
    )
    assert r.status_code == 200, r.text
    hits = r.json()["hits"]
    assert hits and all(h["genre"] == "drama" and h["id"] % 3 == 1 for h in hits)
    assert all(h["_federation"]["queriesPosition"] == 3 for h in hits)


def test_failing_remote_is_marked_unavailable_when_sharded(net: dict[str, Any]) -> None:
    """Meilisearch marks a remote whose search failed with a 5xx-class error unavailable (30 s) when the
    network has shards; `/network` shows its status, whichever process of the server ran the search."""
    c = net["clients"]["ms0"]
    _federated(c, [_on("ms0"), _on("down")])
    statuses = {name: r["status"] for name, r in c.get("/network").json()["remotes"].items()}
    assert set(statuses.values()) == {"available"}  # no shards: nothing is marked
    assert (
        c.patch("/network", json={"shards": {"all": {"remotes": ["ms0", "ms1", "ms2"]}}}).status_code == 200
    )
    try:
        for _ in range(3):  # whichever process answers
            got = _federated(c, [_on("ms0"), _on("down"), _on("badkey")])
            assert sorted(got["remoteErrors"]) == ["badkey", "down"]
        statuses = {name: r["status"] for name, r in c.get("/network").json()["remotes"].items()}
        # `remote_invalid_api_key` is a 403: not a server error, not marked
        assert statuses["down"] == "unavailable" and statuses["badkey"] == "available"
        assert statuses["ms1"] == "available"
    finally:
        assert c.patch("/network", json={"shards": None}).status_code == 200
