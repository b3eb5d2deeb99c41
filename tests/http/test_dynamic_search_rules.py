"""Dynamic search rules (`/dynamic-search-rules`, experimental `dynamicSearchRules`) against a real server.

Bodies are compared field by field with the answers of Meilisearch's own tests
(`crates/meilisearch/tests/dynamic_search_rules/mod.rs`): the feature gate, listing (pagination, most
recently written first, `filter.query` / `filter.active`), create / get / PATCH merge and reset / delete /
clear as `dsrUpdate` / `dsrClear` tasks with their details, validation errors and API-key actions. The
server runs two HTTP workers, so a rule written through one process is read by the others, and it is
restarted to show the rules are durable.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import httpx
import pytest

from tests.conftest import MASTER_KEY, ServerProcess, wait_task

LINK: Final = "https://docs.meilisearch.com/errors#"
PIN0: Final = [{"selector": {"id": "0"}, "action": {"type": "pin", "position": 0}}]


def error(message: str, code: str, type_: str = "invalid_request") -> dict[str, str]:
    return {"message": message, "code": code, "type": type_, "link": LINK + code}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("dsr") / "data.ms",
        extra_args=["--master-key", MASTER_KEY, "--http-workers", "2"],
    ).start()
    yield srv
    srv.stop()


@pytest.fixture
def admin(engine: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=engine.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}
    ) as c:
        assert c.patch("/experimental-features", json={"dynamicSearchRules": True}).json()[
            "dynamicSearchRules"
        ]
        assert wait_task(c, c.delete("/dynamic-search-rules").json()["taskUid"])["status"] == "succeeded"
        yield c


def upsert(http: httpx.Client, uid: str, body: dict[str, Any]) -> dict[str, Any]:
    r = http.patch(f"/dynamic-search-rules/{uid}", json=body)
    assert r.status_code == 202, r.text
    task = wait_task(http, r.json()["taskUid"])
    assert task["status"] == "succeeded", task
    return task


def listing(http: httpx.Client, body: dict[str, Any] | None = None) -> dict[str, Any]:
    r = http.post("/dynamic-search-rules", json={} if body is None else body)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    for rule in out["results"]:
        assert isinstance(rule.pop("lastUpdatedAt"), str)
    return out


def simple(http: httpx.Client, uid: str, active: bool, doc_id: str) -> None:
    upsert(
        http,
        uid,
        {
            "description": uid,
            "active": active,
            "actions": [{"selector": {"id": doc_id}, "action": {"type": "pin", "position": 0}}],
        },
    )


def brief(uid: str, active: bool, doc_id: str) -> dict[str, Any]:
    return {
        "uid": uid,
        "description": uid,
        "active": active,
        "conditions": {},
        "actions": [{"selector": {"id": doc_id}, "action": {"type": "pin", "position": 0}}],
    }


def test_routes_are_disabled_by_default(engine: ServerProcess) -> None:
    with httpx.Client(
        base_url=engine.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}
    ) as c:
        assert c.patch("/experimental-features", json={"dynamicSearchRules": False}).status_code == 200
        r = c.post("/dynamic-search-rules", json={})
        assert r.status_code == 400
        assert r.json() == error(
            "Calling the `POST /dynamic-search-rules` route requires enabling the `dynamic search rules` "
            "experimental feature. See https://github.com/orgs/meilisearch/discussions/884",
            "feature_not_enabled",
        )
        r = c.get("/dynamic-search-rules/a")
        assert r.json()["message"].startswith(
            "Calling the `GET /dynamic-search-rules/{:ruleUid}` route requires"
        )
        for r in (
            c.patch("/dynamic-search-rules/a", json={}),
            c.delete("/dynamic-search-rules/a"),
            c.delete("/dynamic-search-rules"),
        ):
            assert r.status_code == 400
            assert r.json()["message"].startswith(
                "Using the `/dynamic-search-rules` routes requires enabling"
            )


def test_list_empty(admin: httpx.Client) -> None:
    assert admin.post("/dynamic-search-rules", json={}).json() == {
        "results": [],
        "offset": 0,
        "limit": 20,
        "total": 0,
    }


def test_list_pagination_newest_first(admin: httpx.Client) -> None:
    simple(admin, "rule-a", False, "0")
    simple(admin, "rule-b", True, "1")
    simple(admin, "rule-c", False, "2")
    assert listing(admin, {"offset": 1, "limit": 1}) == {
        "results": [brief("rule-b", True, "1")],
        "offset": 1,
        "limit": 1,
        "total": 3,
    }
    assert [r["uid"] for r in listing(admin)["results"]] == ["rule-c", "rule-b", "rule-a"]


def test_list_filters(admin: httpx.Client) -> None:
    simple(admin, "promo-active", True, "1")
    simple(admin, "promo-inactive", False, "2")
    simple(admin, "standard-active", True, "3")
    assert listing(admin, {"filter": {"query": "promo"}}) == {
        "results": [brief("promo-inactive", False, "2"), brief("promo-active", True, "1")],
        "offset": 0,
        "limit": 20,
        "total": 2,
    }
    assert listing(admin, {"filter": {"active": True}})["total"] == 2
    assert listing(admin, {"filter": {"query": "promo", "active": True}}) == {
        "results": [brief("promo-active", True, "1")],
        "offset": 0,
        "limit": 20,
        "total": 1,
    }
    assert listing(admin, {"filter": None})["total"] == 3
    assert listing(admin, {"filter": {"query": None, "active": None}})["total"] == 3


def test_create_full_rule_get_and_task(admin: httpx.Client) -> None:
    body = {
        "description": "Black Friday 2025 rules",
        "precedence": 10,
        "active": True,
        "conditions": {
            "query": {"isEmpty": True},
            "time": {"start": "2025-11-28T00:00:00Z", "end": "2025-11-28T23:59:59.5+01:00"},
        },
        "actions": [
            {"selector": {"indexUid": "products", "id": "123"}, "action": {"type": "pin", "position": 1}},
            {"selector": {"id": "456"}, "action": {"type": "pin", "position": 0}},
        ],
    }
    r = admin.patch("/dynamic-search-rules/black-friday?customMetadata=promo", json=body)
    assert r.status_code == 202
    summary = r.json()
    assert {k: summary[k] for k in ("indexUid", "status", "type", "customMetadata")} == {
        "indexUid": ".meili_dsr",
        "status": "enqueued",
        "type": "dsrUpdate",
        "customMetadata": "promo",
    }
    task = wait_task(admin, summary["taskUid"])
    assert task["status"] == "succeeded"
    assert task["details"] == {"rule": body, "updatedRules": 1}
    assert task["customMetadata"] == "promo"
    rule = admin.get("/dynamic-search-rules/black-friday").json()
    assert list(rule) == [
        "uid",
        "description",
        "lastUpdatedAt",
        "precedence",
        "active",
        "conditions",
        "actions",
    ]
    assert rule["lastUpdatedAt"].endswith("Z")
    del rule["lastUpdatedAt"]
    assert rule == dict(body, uid="black-friday")
    assert list(rule["conditions"]) == ["time", "query"]


def test_patch_merges_resets_and_replaces(admin: httpx.Client) -> None:
    upsert(
        admin,
        "updatable",
        {"actions": [{"selector": {"id": "42"}, "action": {"type": "pin", "position": 1}}]},
    )
    before = admin.get("/dynamic-search-rules/updatable").json()
    assert {k: v for k, v in before.items() if k != "lastUpdatedAt"} == {
        "uid": "updatable",
        "active": True,
        "conditions": {},
        "actions": [{"selector": {"id": "42"}, "action": {"type": "pin", "position": 1}}],
    }
    task = upsert(admin, "updatable", {"description": "Updated", "precedence": 10})
    assert task["details"] == {"rule": {"description": "Updated", "precedence": 10}, "updatedRules": 1}
    after = admin.get("/dynamic-search-rules/updatable").json()
    assert after["description"] == "Updated" and after["precedence"] == 10
    assert after["actions"] == before["actions"]
    assert after["lastUpdatedAt"] > before["lastUpdatedAt"]
    upsert(
        admin,
        "updatable",
        {
            "actions": [{"selector": {"id": "3"}, "action": {"type": "pin", "position": 4}}],
            "conditions": {"query": {"words": "mario"}},
        },
    )
    upsert(admin, "updatable", {"conditions": {"filter": {"values": {"genres": ["action", 3]}}}})
    rule = admin.get("/dynamic-search-rules/updatable").json()
    assert rule["conditions"] == {"filter": {"values": {"genres": ["action", 3]}}}  # replaced whole
    assert rule["actions"] == [{"selector": {"id": "3"}, "action": {"type": "pin", "position": 4}}]
    upsert(
        admin,
        "updatable",
        {"description": None, "precedence": None, "active": None, "conditions": None, "actions": None},
    )
    rule = admin.get("/dynamic-search-rules/updatable").json()
    del rule["lastUpdatedAt"]
    assert rule == {"uid": "updatable", "active": True, "conditions": {}, "actions": []}
    upsert(admin, "empty", {})
    rule = admin.get("/dynamic-search-rules/empty").json()
    assert list(rule) == ["uid", "lastUpdatedAt", "active", "conditions", "actions"]


def test_delete_and_clear(admin: httpx.Client) -> None:
    upsert(admin, "rule-a", {"actions": PIN0})
    upsert(admin, "rule-b", {"actions": PIN0})
    r = admin.delete("/dynamic-search-rules/rule-a?customMetadata=gone")
    assert r.status_code == 202 and r.json()["type"] == "dsrUpdate"
    task = wait_task(admin, r.json()["taskUid"])
    assert (task["status"], task["details"], task["customMetadata"]) == (
        "succeeded",
        {"updatedRules": 1},
        "gone",
    )
    r = admin.get("/dynamic-search-rules/rule-a")
    assert r.status_code == 404
    assert r.json() == error("Dynamic search rule `rule-a` not found.", "dynamic_search_rule_not_found")
    # deleting a rule that does not exist succeeds
    missing = wait_task(admin, admin.delete("/dynamic-search-rules/no-such-rule").json()["taskUid"])
    assert missing["status"] == "succeeded"
    upsert(admin, "rule-c", {"actions": PIN0})
    r = admin.delete("/dynamic-search-rules")
    assert r.status_code == 202 and r.json()["type"] == "dsrClear"
    assert admin.get(f"/tasks/{r.json()['taskUid']}").json()["details"] in (
        {"deletedDocuments": None},
        {"deletedDocuments": 2},
    )
    task = wait_task(admin, r.json()["taskUid"])
    assert task["details"] == {"deletedDocuments": 2}
    assert listing(admin)["total"] == 0


def test_validation_errors(admin: httpx.Client) -> None:
    cases: list[tuple[Any, str, str]] = [
        (
            {"conditions": {"query": {"isEmpty": True, "words": "batman"}}, "actions": PIN0},
            "Invalid value at `.conditions.query`: either `isEmpty` or `words` can be used, not both at once",
            "bad_request",
        ),
        (
            {"actions": PIN0, "unknownField": 1},
            "Unknown field `unknownField`: expected one of `description`, `precedence`, `active`, `conditions`, "
            "`actions`",
            "bad_request",
        ),
        (
            {"description": 1},
            "Invalid value type at `.description`: expected a string, but found a positive integer: `1`",
            "invalid_dynamic_search_rule_description",
        ),
        (
            {"precedence": "high"},
            'Invalid value type at `.precedence`: expected a positive integer, but found a string: `"high"`',
            "invalid_dynamic_search_rule_priority",
        ),
        (
            {"active": "yes"},
            'Invalid value type at `.active`: expected a boolean, but found a string: `"yes"`',
            "invalid_dynamic_search_rule_active",
        ),
        (
            {"conditions": {"time": {"start": "2025-11-29T00:00:00Z", "end": "2025-11-28T00:00:00Z"}}},
            "Invalid value at `.conditions.time`: `end` (`2025-11-28 0:00:00.0 +00:00:00`) should be later than "
            "`start` (`2025-11-29 0:00:00.0 +00:00:00`)",
            "bad_request",
        ),
        (
            {"actions": [{"selector": {"id": "1"}, "action": {"type": "boost", "position": 0}}]},
            "Unknown value `boost` at `.actions[0].action.type`: expected one of `pin`",
            "invalid_dynamic_search_rule_actions",
        ),
        (
            {"actions": {}},
            "Invalid value type at `.actions`: expected an array, but found an object: `{}`",
            "invalid_dynamic_search_rule_actions",
        ),
    ]
    for body, message, code in cases:
        r = admin.patch("/dynamic-search-rules/bad", json=body)
        assert r.status_code == 400, body
        assert r.json() == error(message, code), body
    r = admin.patch("/dynamic-search-rules/bad", json={"conditions": {"time": {"start": "yesterday"}}})
    assert r.json()["code"] == "invalid_dynamic_search_rule_conditions"
    r = admin.patch(
        "/dynamic-search-rules/bad",
        json={"actions": [{"selector": {"id": "1", "x": 1}, "action": {"type": "pin", "position": 0}}]},
    )
    assert r.json()["code"] == "invalid_dynamic_search_rule_actions"
    # list body errors
    for body, code in (
        ({"offset": -1}, "invalid_dynamic_search_rule_offset"),
        ({"limit": "x"}, "invalid_dynamic_search_rule_limit"),
        ({"filter": []}, "invalid_dynamic_search_rule_filter"),
        ({"filter": {"query": 1}}, "invalid_dynamic_search_rule_filter_query"),
        ({"filter": {"active": "x"}}, "invalid_dynamic_search_rule_filter_active"),
    ):
        r = admin.post("/dynamic-search-rules", json=body)
        assert (r.status_code, r.json()["code"]) == (400, code), body
    # an invalid rule uid fails path extraction: a bare 404
    assert admin.get("/dynamic-search-rules/bad%20uid").status_code == 404
    assert listing(admin)["total"] == 0  # nothing was enqueued


def test_api_key_actions(admin: httpx.Client, engine: ServerProcess) -> None:
    upsert(admin, "rule-a", {"actions": PIN0})
    key = admin.post(
        "/keys", json={"actions": ["dynamicSearchRules.get"], "indexes": ["*"], "expiresAt": None}
    ).json()["key"]
    with httpx.Client(base_url=engine.url, timeout=30, headers={"Authorization": f"Bearer {key}"}) as reader:
        assert reader.post("/dynamic-search-rules", json={}).status_code == 200
        assert reader.get("/dynamic-search-rules/rule-a").status_code == 200
        for r in (
            reader.patch("/dynamic-search-rules/rule-a", json={}),
            reader.delete("/dynamic-search-rules"),
        ):
            assert r.status_code == 403
            assert r.json()["code"] == "invalid_api_key"
    r = admin.post(
        "/keys", json={"actions": ["dynamicSearchRules.*"], "indexes": ["movies"], "expiresAt": None}
    )
    assert r.status_code == 400 and r.json()["code"] == "index_scoped_api_key_with_global_action"


def test_rules_survive_a_restart(admin: httpx.Client, engine: ServerProcess) -> None:
    upsert(admin, "durable", {"description": "kept", "actions": PIN0})
    engine.stop()
    engine.start()
    with httpx.Client(
        base_url=engine.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}
    ) as c:
        rule = c.get("/dynamic-search-rules/durable").json()
        assert rule["description"] == "kept"
        assert [r["uid"] for r in c.post("/dynamic-search-rules", json={}).json()["results"]] == ["durable"]


# -- pins applied to search ------------------------------------------------------------------------

MOVIES: Final = [
    {"id": "organic-match", "title": "Batman Returns", "kind": "keep"},
    {"id": "pinned-query-miss", "title": "The Matrix", "kind": "keep"},
    {"id": "filtered-pin", "title": "Batman Returns", "kind": "drop"},
]


@pytest.fixture
def movies(admin: httpx.Client) -> str:
    uid = "dsr_movies"
    wait_task(admin, admin.delete(f"/indexes/{uid}").json()["taskUid"])
    wait_task(
        admin,
        admin.patch(f"/indexes/{uid}/settings", json={"filterableAttributes": ["kind"]}).json()["taskUid"],
    )
    assert (
        wait_task(admin, admin.post(f"/indexes/{uid}/documents", json=MOVIES).json()["taskUid"])["status"]
        == "succeeded"
    )
    return uid


def search(http: httpx.Client, uid: str, body: dict[str, Any]) -> dict[str, Any]:
    r = http.post(f"/indexes/{uid}/search", json=body)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    del out["processingTimeMs"], out["requestUid"]
    return out


def test_search_counts_pins_that_miss_query(admin: httpx.Client, movies: str) -> None:
    upsert(
        admin,
        "pin-query-miss-but-filtered",
        {
            "active": True,
            "conditions": {"query": {"words": "returns"}},
            "actions": [
                {"selector": {"id": "pinned-query-miss"}, "action": {"type": "pin", "position": 0}},
                {"selector": {"id": "filtered-pin"}, "action": {"type": "pin", "position": 1}},
            ],
        },
    )
    assert search(admin, movies, {"q": "Batman Returns", "filter": "kind = keep"}) == {
        "hits": [MOVIES[1], MOVIES[0]],
        "query": "Batman Returns",
        "limit": 20,
        "offset": 0,
        "estimatedTotalHits": 2,
    }
    assert search(
        admin, movies, {"q": "Batman Returns", "filter": "kind = keep", "page": 2, "hitsPerPage": 1}
    ) == {
        "hits": [MOVIES[0]],
        "query": "Batman Returns",
        "hitsPerPage": 1,
        "page": 2,
        "totalPages": 2,
        "totalHits": 2,
    }
    details = search(
        admin,
        movies,
        {
            "q": "Batman Returns",
            "filter": "kind = keep",
            "showRankingScoreDetails": True,
            "showRankingScore": True,
        },
    )["hits"][0]
    assert (details["_rankingScore"], details["_rankingScoreDetails"]) == (
        1.0,
        {"pin": {"order": 0, "position": 0}},
    )
    # the rule's words must all be in the query
    assert [h["id"] for h in search(admin, movies, {"q": "Batman"})["hits"]] == [
        "organic-match",
        "filtered-pin",
    ]


def test_pins_follow_precedence_positions_and_the_feature(admin: httpx.Client, movies: str) -> None:
    upsert(
        admin,
        "late",
        {
            "precedence": 5,
            "conditions": {"query": {"isEmpty": True}},
            "actions": [
                {"selector": {"id": "organic-match"}, "action": {"type": "pin", "position": 10}},
                {"selector": {"id": "filtered-pin"}, "action": {"type": "pin", "position": 0}},
            ],
        },
    )
    upsert(
        admin,
        "first",
        {
            "precedence": 1,
            "conditions": {"query": {"isEmpty": True}},
            "actions": [
                {"selector": {"id": "filtered-pin"}, "action": {"type": "pin", "position": 20}},
                {
                    "selector": {"indexUid": "other", "id": "pinned-query-miss"},
                    "action": {"type": "pin", "position": 0},
                },
            ],
        },
    )
    upsert(
        admin,
        "inactive",
        {
            "active": False,
            "actions": [{"selector": {"id": "pinned-query-miss"}, "action": {"type": "pin", "position": 0}}],
        },
    )
    # placeholder search: organic order is insertion order; `first` pins filtered-pin at 20 (it wins over
    # `late`'s 0), `late` pins organic-match at 10: both beyond the organic hits, so compacted in order
    got = search(admin, movies, {})
    assert [h["id"] for h in got["hits"]] == ["pinned-query-miss", "organic-match", "filtered-pin"]
    assert got["estimatedTotalHits"] == 3
    assert [h["id"] for h in search(admin, movies, {"q": "matrix"})["hits"]] == ["pinned-query-miss"]
    assert admin.patch("/experimental-features", json={"dynamicSearchRules": False}).status_code == 200
    try:
        assert [h["id"] for h in search(admin, movies, {"q": "returns"})["hits"]] == [
            "organic-match",
            "filtered-pin",
        ]
    finally:
        admin.patch("/experimental-features", json={"dynamicSearchRules": True})


def test_multi_search_applies_pins(admin: httpx.Client, movies: str) -> None:
    upsert(
        admin,
        "pin-matrix",
        {
            "conditions": {"query": {"words": "returns"}},
            "actions": [{"selector": {"id": "pinned-query-miss"}, "action": {"type": "pin", "position": 1}}],
        },
    )
    r = admin.post(
        "/multi-search",
        json={"queries": [{"indexUid": movies, "q": "batman returns"}, {"indexUid": movies, "q": "batman"}]},
    )
    assert r.status_code == 200, r.text
    first, second = r.json()["results"]
    assert [h["id"] for h in first["hits"]] == ["organic-match", "pinned-query-miss", "filtered-pin"]
    assert first["estimatedTotalHits"] == 3
    assert [h["id"] for h in second["hits"]] == ["organic-match", "filtered-pin"]


def test_filter_conditions_need_one_and_branch(admin: httpx.Client) -> None:
    uid = "dsr_comics"
    wait_task(admin, admin.delete(f"/indexes/{uid}").json()["taskUid"])
    wait_task(
        admin,
        admin.patch(
            f"/indexes/{uid}/settings", json={"filterableAttributes": ["genres", "series", "year"]}
        ).json()["taskUid"],
    )
    docs = [
        {"id": 1, "genres": ["action"], "series": "batman", "year": 1989},
        {"id": 2, "genres": ["comedy"], "series": "batman", "year": 1966},
        {"id": 3, "genres": ["action"], "series": "superman", "year": 1978},
    ]
    assert (
        wait_task(admin, admin.post(f"/indexes/{uid}/documents", json=docs).json()["taskUid"])["status"]
        == "succeeded"
    )
    upsert(
        admin,
        "genre",
        {
            "precedence": 1,
            "conditions": {"filter": {"values": {"genres": "Action"}}},
            "actions": [{"selector": {"id": "3"}, "action": {"type": "pin", "position": 0}}],
        },
    )
    upsert(
        admin,
        "both",
        {
            "precedence": 2,
            "conditions": {"filter": {"values": {"genres": "action", "series": "batman"}}},
            "actions": [{"selector": {"id": "1"}, "action": {"type": "pin", "position": 0}}],
        },
    )
    upsert(
        admin,
        "old",
        {
            "precedence": 3,
            "conditions": {"filter": {"values": {"year": 1966}}},
            "actions": [{"selector": {"id": "2"}, "action": {"type": "pin", "position": 0}}],
        },
    )

    def ids(flt: Any) -> list[Any]:
        return [h["id"] for h in search(admin, uid, {"filter": flt} if flt is not None else {})["hits"]]

    assert ids(None) == [1, 2, 3]  # no filter: no filter rule fires
    # `genre` fires (genres = action in the branch) and `both` too: 3 then 1 at position 0, by precedence
    assert ids("genres = action AND series = batman") == [1]  # 3 is excluded by the filter itself
    assert ids("series = batman OR genres = action") == [3, 1, 2]  # `genre` fires, `both` does not
    assert ids(["genres = action", "series = batman"]) == [1]
    assert ids("genres IN [drama, action]") == [3, 1]
    assert ids("year 1960 TO 1970") == [2]
    assert ids("year > 1970") == [1, 3]  # `old` does not fire: 1966 is not above 1970
    assert ids("genres != action") == [2]


def test_federated_search_places_pins_in_the_merged_ranking(admin: httpx.Client, movies: str) -> None:
    upsert(
        admin,
        "pin-matrix",
        {
            "conditions": {"query": {"words": "batman"}},
            "actions": [{"selector": {"id": "pinned-query-miss"}, "action": {"type": "pin", "position": 1}}],
        },
    )
    body: dict[str, Any] = {
        "federation": {},
        "queries": [
            {"indexUid": movies, "q": "batman", "filter": "kind = keep"},
            {"indexUid": movies, "q": "returns", "filter": "kind = drop"},
        ],
    }
    r = admin.post("/multi-search", json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    assert [(h["id"], h["_federation"]["queriesPosition"]) for h in got["hits"]] == [
        ("organic-match", 0),
        ("pinned-query-miss", 0),
        ("filtered-pin", 1),
    ]
    assert got["estimatedTotalHits"] == 3
    body["federation"] = {"offset": 1, "limit": 1}
    assert [h["id"] for h in admin.post("/multi-search", json=body).json()["hits"]] == ["pinned-query-miss"]
