"""Tenant isolation: two tenants' documents in one index, each tenant holding a tenant token whose
`searchRules` filter selects its own documents (docs/api-contract.md §0.2, issue 5).

A tenant must never see the other's documents, nor learn anything about them, through any route a
tenant token opens: search (POST and GET), its facet distribution and stats, the page-mode totals,
multi-search (plain and federated, `facetsByIndex` included), facet search and similar documents when
those routes are registered. Its own filter can only narrow the rule's (the two are AND-ed): filters
naming the other tenant, negations and ORs return nothing of the other tenant.

Every claim form is exercised: object form with a string and an array filter, the `*` and prefix
patterns, several matching patterns (the most specific wins), HS256/HS384/HS512. A token without a
filter is the control: it sees both tenants, so the data is there to leak. Last, the refusals over HTTP:
expired token, token signed with the master key, deleted parent key, parent key not covering the index.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import httpx
import pytest

from hanzo_engine.auth import encode_token
from hanzo_engine.server import app as _app  # noqa: F401  (importing the app registers every route)
from hanzo_engine.server.route_table import ROUTES
from tests.conftest import MASTER_KEY, ServerProcess, wait_task

PREFIX: Final = "tenancy"
INDEX: Final = f"{PREFIX}_shared"
OTHER: Final = f"{PREFIX}_other"  # covered by the parent key, not by the tokens' rules
TENANTS: Final = {"acme": ("red", "green"), "bolt": ("blue", "black")}
PRICES: Final = {"acme": range(1, 7), "bolt": range(100, 106)}


def _documents() -> list[dict[str, Any]]:
    docs = []
    ids = itertools.count(1)
    for tenant, colors in TENANTS.items():
        for n, price in enumerate(PRICES[tenant]):
            docs.append(
                {
                    "id": next(ids),
                    "tenant": tenant,
                    "title": f"shared widget {tenant} {n}",
                    "color": colors[n % 2],
                    "price": price,
                }
            )
    return docs


DOCUMENTS: Final = _documents()
IDS: Final = {t: {d["id"] for d in DOCUMENTS if d["tenant"] == t} for t in TENANTS}


def registered(method: str, path: str) -> bool:
    return any((r.method, r.path) == (method, path) for r in ROUTES)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Setup:
    url: str
    admin: httpx.Client
    parent_uid: str
    parent_key: str

    def token(self, rules: Any, algorithm: str = "HS256", **claims: Any) -> str:
        return encode_token(
            {"apiKeyUid": self.parent_uid, "searchRules": rules, **claims}, self.parent_key, algorithm
        )


@pytest.fixture(scope="module")
def setup(secured_server: ServerProcess) -> Iterator[Setup]:
    with httpx.Client(base_url=secured_server.url, timeout=30, headers=bearer(MASTER_KEY)) as admin:
        settings = {"filterableAttributes": ["tenant", "color", "price"], "sortableAttributes": ["price"]}
        for uid in (INDEX, OTHER):
            r = admin.patch(f"/indexes/{uid}/settings", json=settings)
            assert wait_task(admin, r.json()["taskUid"])["status"] == "succeeded"
            r = admin.post(f"/indexes/{uid}/documents", json=DOCUMENTS)
            assert wait_task(admin, r.json()["taskUid"])["status"] == "succeeded"
        parent = admin.post(
            "/keys", json={"actions": ["search"], "indexes": [INDEX, OTHER], "expiresAt": None}
        )
        assert parent.status_code == 201, parent.text
        yield Setup(secured_server.url, admin, parent.json()["uid"], parent.json()["key"])


# -------------------------------------------------------------------------------------------------
# Every claim form, for tenant `acme` (and one for `bolt`, to show it is symmetric)
# -------------------------------------------------------------------------------------------------

FORMS: Final[dict[str, tuple[str, Any, str]]] = {
    # name: (tenant, searchRules, algorithm)
    "object_string": ("acme", {INDEX: {"filter": "tenant = acme"}}, "HS256"),
    "object_array": ("acme", {INDEX: {"filter": ["tenant = acme"]}}, "HS256"),
    "object_nested_array": ("acme", {INDEX: {"filter": [["tenant = acme", "tenant = acme"]]}}, "HS256"),
    "wildcard_pattern": ("acme", {"*": {"filter": "tenant = acme"}}, "HS256"),
    "prefix_pattern": ("acme", {f"{PREFIX}_*": {"filter": "tenant = acme"}}, "HS256"),
    "most_specific_wins": (
        "acme",
        {"*": {"filter": "tenant = bolt"}, f"{PREFIX}_*": None, INDEX: {"filter": "tenant = acme"}},
        "HS256",
    ),
    "longest_prefix_wins": (
        "acme",
        {f"{PREFIX}*": None, f"{PREFIX}_sh*": {"filter": "tenant = acme"}},
        "HS256",
    ),
    "hs384": ("acme", {INDEX: {"filter": "tenant = acme"}}, "HS384"),
    "hs512": ("acme", {INDEX: {"filter": "tenant = acme"}}, "HS512"),
    "other_tenant": ("bolt", {INDEX: {"filter": "tenant = bolt"}}, "HS256"),
}


@pytest.fixture(params=list(FORMS), ids=list(FORMS))
def tenant(request: pytest.FixtureRequest, setup: Setup) -> Iterator[tuple[str, httpx.Client]]:
    """(tenant name, a client holding that tenant's token in one claim form)."""
    name, rules, algorithm = FORMS[request.param]
    token = setup.token(rules, algorithm, exp=int(time.time()) + 3600)
    with httpx.Client(base_url=setup.url, timeout=30, headers=bearer(token)) as client:
        yield name, client


def other(name: str) -> str:
    return next(t for t in TENANTS if t != name)


def ok(r: httpx.Response) -> Any:
    assert r.status_code == 200, r.text
    return r.json()


def hit_ids(hits: list[dict[str, Any]]) -> set[int]:
    return {h["id"] for h in hits}


def assert_only(name: str, hits: list[dict[str, Any]]) -> None:
    assert {h["tenant"] for h in hits} <= {name}, hits
    assert hit_ids(hits) <= IDS[name]


# the user's own filters, each trying to reach the other tenant: (filter builder, sees own documents)
ESCAPES: Final = [
    (lambda o: f"tenant = {o}", False),
    (lambda o: f"tenant = {o} OR tenant != {o}", True),
    (lambda o: f"NOT tenant != {o}", False),
    (lambda o: [f"tenant = {o}"], False),
    (lambda o: [[f"tenant = {o}", "price > 0"]], True),
    (lambda o: f"tenant IN [{o}, acme, bolt]", True),
    (lambda o: "price >= 0", True),
]


def test_control_token_without_filter_sees_both_tenants(setup: Setup) -> None:
    token = setup.token([INDEX])
    body = ok(httpx.post(f"{setup.url}/indexes/{INDEX}/search", json={"limit": 100}, headers=bearer(token)))
    assert hit_ids(body["hits"]) == IDS["acme"] | IDS["bolt"]


def test_search(tenant: tuple[str, httpx.Client]) -> None:
    name, client = tenant
    for body in (
        {"limit": 100},
        {"q": "shared widget", "limit": 100},
        {"q": other(name), "limit": 100},
        {"sort": ["price:desc"], "limit": 100},
    ):
        hits = ok(client.post(f"/indexes/{INDEX}/search", json=body))["hits"]
        assert_only(name, hits)
        if body.get("q") != other(name):
            assert hit_ids(hits) == IDS[name], body
    # the other tenant's name is in its titles: searching it finds nothing
    assert ok(client.post(f"/indexes/{INDEX}/search", json={"q": other(name)}))["estimatedTotalHits"] == 0


def test_search_get(tenant: tuple[str, httpx.Client]) -> None:
    name, client = tenant
    assert hit_ids(ok(client.get(f"/indexes/{INDEX}/search", params={"limit": 100}))["hits"]) == IDS[name]
    hits = ok(client.get(f"/indexes/{INDEX}/search", params={"filter": f"tenant = {other(name)}"}))["hits"]
    assert hits == []


@pytest.mark.parametrize(("escape", "sees_own"), ESCAPES, ids=[str(i) for i in range(len(ESCAPES))])
def test_user_filters_cannot_escape(tenant: tuple[str, httpx.Client], escape: Any, sees_own: bool) -> None:
    name, client = tenant
    body = ok(client.post(f"/indexes/{INDEX}/search", json={"filter": escape(other(name)), "limit": 100}))
    assert_only(name, body["hits"])
    assert hit_ids(body["hits"]) == (IDS[name] if sees_own else set())
    assert body["estimatedTotalHits"] == len(body["hits"])


def test_facets_and_totals(tenant: tuple[str, httpx.Client]) -> None:
    name, client = tenant
    body = ok(
        client.post(
            f"/indexes/{INDEX}/search", json={"facets": ["color", "tenant", "price"], "hitsPerPage": 100}
        )
    )
    assert body["totalHits"] == len(IDS[name])
    distribution = body["facetDistribution"]
    assert set(distribution["color"]) == set(TENANTS[name])
    assert distribution["tenant"] == {name: len(IDS[name])}
    assert set(distribution["price"]) == {str(p) for p in PRICES[name]}
    assert body["facetStats"]["price"] == {"min": min(PRICES[name]), "max": max(PRICES[name])}


def test_multi_search(tenant: tuple[str, httpx.Client]) -> None:
    name, client = tenant
    queries = [
        {"indexUid": INDEX, "limit": 100},
        {"indexUid": INDEX, "filter": f"tenant = {other(name)}"},
        {"indexUid": INDEX, "q": other(name)},
        {"indexUid": INDEX, "facets": ["color", "tenant"]},
    ]
    results = ok(client.post("/multi-search", json={"queries": queries}))["results"]
    assert hit_ids(results[0]["hits"]) == IDS[name]
    assert results[1]["hits"] == [] and results[2]["hits"] == []
    assert set(results[3]["facetDistribution"]["color"]) == set(TENANTS[name])
    assert results[3]["facetDistribution"]["tenant"] == {name: len(IDS[name])}


def test_federated_multi_search(tenant: tuple[str, httpx.Client]) -> None:
    name, client = tenant
    queries = [
        {"indexUid": INDEX},
        {"indexUid": INDEX, "filter": f"tenant = {other(name)}"},
        {"indexUid": INDEX, "q": other(name)},
    ]
    body = ok(client.post("/multi-search", json={"queries": queries, "federation": {"limit": 100}}))
    assert_only(name, body["hits"])
    assert hit_ids(body["hits"]) == IDS[name]
    assert body["estimatedTotalHits"] == len(IDS[name])


def test_federated_facets_by_index(setup: Setup) -> None:
    token = setup.token({INDEX: {"filter": "tenant = acme"}})
    queries = [{"indexUid": INDEX}, {"indexUid": INDEX, "filter": "tenant = bolt"}]
    federation = {"facetsByIndex": {INDEX: ["color", "tenant"]}}
    body = ok(
        httpx.post(
            f"{setup.url}/multi-search",
            headers=bearer(token),
            json={"queries": queries, "federation": federation},
        )
    )
    facets = body["facetsByIndex"][INDEX]["distribution"]
    assert set(facets["color"]) == set(TENANTS["acme"])
    assert facets["tenant"] == {"acme": len(IDS["acme"])}


def test_federated_facets_of_an_index_no_query_names(setup: Setup) -> None:
    # `facetsByIndex` may name an index without a query: Meilisearch only checks its facets (counted
    # over no document) and leaves it out of the response, so nothing of either tenant shows
    token = setup.token({INDEX: {"filter": "tenant = acme"}, OTHER: {"filter": "tenant = acme"}})
    federation = {"facetsByIndex": {INDEX: ["tenant", "color"], OTHER: ["tenant"]}}
    body = ok(
        httpx.post(
            f"{setup.url}/multi-search",
            headers=bearer(token),
            json={"queries": [{"indexUid": OTHER}], "federation": federation},
        )
    )
    assert_only("acme", body["hits"])
    assert body["facetsByIndex"] == {
        OTHER: {"distribution": {"tenant": {"acme": len(IDS["acme"])}}, "stats": {}}
    }


@pytest.mark.skipif(
    not registered("POST", "/indexes/{index_uid}/facet-search"),
    reason="POST /indexes/{index_uid}/facet-search is not registered",
)
@pytest.mark.parametrize(
    "body",
    [
        {"facetName": "color"},
        {"facetName": "tenant"},
        {"facetName": "color", "facetQuery": "b"},
        {"facetName": "color", "q": "shared"},
        {"facetName": "price"},
        {"facetName": "tenant", "filter": "tenant = bolt OR tenant = acme"},
    ],
    ids=["color", "tenant", "color_prefix", "with_q", "numbers", "or_filter"],
)
def test_facet_search(tenant: tuple[str, httpx.Client], body: dict[str, Any]) -> None:
    name, client = tenant
    result = ok(client.post(f"/indexes/{INDEX}/facet-search", json=body))
    values = {h["value"] for h in result["facetHits"]}
    own = {"color": set(TENANTS[name]), "tenant": {name}, "price": {str(p) for p in PRICES[name]}}[
        body["facetName"]
    ]
    assert values <= own, result
    assert sum(h["count"] for h in result["facetHits"]) <= len(IDS[name])
    result = ok(
        client.post(f"/indexes/{INDEX}/facet-search", json={**body, "filter": f"tenant = {other(name)}"})
    )
    assert result["facetHits"] == []


@pytest.mark.skipif(
    not registered("POST", "/indexes/{index_uid}/similar"),
    reason="POST /indexes/{index_uid}/similar is not registered",
)
def test_similar(setup: Setup) -> None:
    # similar needs an embedder: give the index user-provided vectors (the tenant fields are unchanged)
    index = f"{PREFIX}_similar"
    r = setup.admin.patch(
        f"/indexes/{index}/settings",
        json={
            "filterableAttributes": ["tenant"],
            "embedders": {"default": {"source": "userProvided", "dimensions": 2}},
        },
    )
    assert wait_task(setup.admin, r.json()["taskUid"])["status"] == "succeeded"
    docs = [{**d, "_vectors": {"default": [float(d["id"]), 1.0]}} for d in DOCUMENTS]
    r = setup.admin.post(f"/indexes/{index}/documents", json=docs)
    assert wait_task(setup.admin, r.json()["taskUid"])["status"] == "succeeded"
    key = setup.admin.post(
        "/keys", json={"actions": ["search"], "indexes": [index], "expiresAt": None}
    ).json()
    token = encode_token(
        {"apiKeyUid": key["uid"], "searchRules": {index: {"filter": "tenant = acme"}}}, key["key"]
    )
    url = f"{setup.url}/indexes/{index}/similar"
    for source in sorted(IDS["acme"] | IDS["bolt"]):
        body = ok(
            httpx.post(url, headers=bearer(token), json={"id": source, "embedder": "default", "limit": 100})
        )
        assert_only("acme", body["hits"])
        assert hit_ids(body["hits"]) == IDS["acme"] - {source}
        body = ok(
            httpx.post(
                url,
                headers=bearer(token),
                json={"id": source, "embedder": "default", "filter": "tenant = bolt"},
            )
        )
        assert body["hits"] == []
        if registered("GET", "/indexes/{index_uid}/similar"):
            body = ok(
                httpx.get(
                    url, headers=bearer(token), params={"id": source, "embedder": "default", "limit": 100}
                )
            )
            assert hit_ids(body["hits"]) == IDS["acme"] - {source}


# -------------------------------------------------------------------------------------------------
# Refused tokens, over HTTP (the decoding itself is unit-tested in tests/unit/test_tenant_tokens.py)
# -------------------------------------------------------------------------------------------------


def search_as(setup: Setup, token: str, index: str = INDEX) -> httpx.Response:
    return httpx.post(f"{setup.url}/indexes/{index}/search", json={}, headers=bearer(token))


def refused(r: httpx.Response) -> str:
    assert r.status_code == 403, r.text
    body = r.json()
    assert (body["code"], body["type"]) == ("invalid_api_key", "auth")
    assert body["link"] == "https://docs.meilisearch.com/errors#invalid_api_key"
    message: str = body["message"]
    return message


def test_expired_token(setup: Setup) -> None:
    past = int(time.time()) - 10
    message = refused(search_as(setup, setup.token(["*"], exp=past)))
    prefix = f"Tenant token expired. Was valid up to `{past}` and we're now `"
    assert message.startswith(prefix) and message.endswith("`."), message
    assert int(message[len(prefix) : -2]) >= past + 10


def test_token_signed_with_the_master_key(setup: Setup) -> None:
    token = encode_token({"apiKeyUid": setup.parent_uid, "searchRules": ["*"]}, MASTER_KEY)
    assert refused(search_as(setup, token)) == "Could not decode tenant token, InvalidSignature."


def test_token_of_a_deleted_parent_key(setup: Setup) -> None:
    created = setup.admin.post(
        "/keys", json={"actions": ["search"], "indexes": ["*"], "expiresAt": None}
    ).json()
    token = encode_token({"apiKeyUid": created["uid"], "searchRules": ["*"]}, created["key"])
    assert search_as(setup, token).status_code == 200
    assert setup.admin.delete(f"/keys/{created['uid']}").status_code == 204
    assert refused(search_as(setup, token)) == "The provided API key is invalid."


def test_parent_key_must_cover_the_index_and_hold_search(setup: Setup) -> None:
    token = setup.token(["*"])
    assert refused(search_as(setup, token, "tenancy_elsewhere")) == (
        "The API key used to generate this tenant token cannot acces the index `tenancy_elsewhere`."
    )
    assert refused(search_as(setup, setup.token([INDEX]), OTHER)) == (
        f'The provided tenant token cannot acces the index `{OTHER}`, allowed indexes are ["{INDEX}"].'
    )
    created = setup.admin.post(
        "/keys", json={"actions": ["documents.get"], "indexes": ["*"], "expiresAt": None}
    ).json()
    token = encode_token({"apiKeyUid": created["uid"], "searchRules": ["*"]}, created["key"])
    assert refused(search_as(setup, token)) == "The provided API key is invalid."
