"""Fuzz campaign against a real server (issue 5, "How it is shown"): random and malformed requests to
every route for a bounded time; zero 5xx, every error a Meilisearch error object, and no stored
document changed by what was refused.

Requests are drawn by hypothesis: a route of `ROUTES` (sometimes another method, sometimes a random
path) with random path parameters, random query pairs (known parameter names and random ones, numbers
past 64 bits, empty values), and a body that is either a mutation of a valid seed body, random JSON
(deep, huge numbers, NaN/Infinity tokens, lone surrogates), a pathological document (100 000 nested
arrays, a 5 000-digit number, a payload over the size limit, a compression bomb) or random bytes; with
random content types and content encodings (the body compressed to match or not).

Three campaigns share one server (payload limit 64 KiB so that limits are reached cheaply):

1. `restricted`: a key that may only `search` on one index, and tenant tokens derived from it with
   random `searchRules`, on every route and on every index (the integrity index included);
2. `master`: the master key on throwaway indexes only (the routes that write backups or open a log
   stream are left out: they take no input worth fuzzing and cost seconds each);
3. `hostile_auth`: random Authorization headers (junk, JWT-shaped junk, `Bearer` variants).

Before them, documents and settings are stored in an integrity index and in the restricted key's
index; after them (and after the task queue drained) both must be byte-identical, and no task may have
been registered for either index.

Duration: `HANZO_FUZZ_SECONDS` (default 20 s in CI; 120 s for the full campaign), split 40/40/20.
The request sequence is deterministic (fixed seeds); only its length depends on the machine's speed.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

import brotli
import httpx
import pytest
import zstandard
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from hanzo_engine.apitypes.errors import ERROR_TABLE
from hanzo_engine.auth import encode_token
from hanzo_engine.server import app as _app  # noqa: F401  (importing the app registers every route)
from hanzo_engine.server.route_table import ROUTES, RouteSpec
from tests.conftest import MASTER_KEY, ServerProcess, wait_task

FUZZ_SECONDS: Final = float(os.environ.get("HANZO_FUZZ_SECONDS", "20"))
PAYLOAD_LIMIT: Final = 65_536
INTEGRITY: Final = "fuzz_integrity"
SEARCHABLE: Final = "fuzz_searchable"  # the only index the restricted key may search
THROWAWAY: Final = ("fuzz_tmp_a", "fuzz_tmp_b", "fuzz_tmp_c", "fuzz_tmp_1")
ERROR_KEYS: Final = {"message", "code", "type", "link"}
ERROR_TYPES: Final = {"invalid_request", "internal", "auth", "system"}
LINK: Final = "https://docs.meilisearch.com/errors#"

# routes the master-key campaign leaves out (see the module doc)
MASTER_SKIPPED: Final = {
    ("POST", "/dumps"),
    ("POST", "/snapshots"),
    ("POST", "/logs/stream"),
    ("DELETE", "/logs/stream"),
    ("POST", "/logs/stderr"),
    ("POST", "/tasks/compact"),
}
METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


# -------------------------------------------------------------------------------------------------
# Vocabulary: parameter and field names the routes know, so that random values reach the validators
# -------------------------------------------------------------------------------------------------

QUERY_NAMES: Final = (
    "offset",
    "limit",
    "fields",
    "filter",
    "q",
    "sort",
    "facets",
    "uids",
    "batchUids",
    "statuses",
    "types",
    "indexUids",
    "canceledBy",
    "from",
    "reverse",
    "beforeEnqueuedAt",
    "afterEnqueuedAt",
    "beforeStartedAt",
    "afterStartedAt",
    "beforeFinishedAt",
    "afterFinishedAt",
    "primaryKey",
    "csvDelimiter",
    "customMetadata",
    "skipCreation",
    "showInternalDatabaseSizes",
    "sizeFormat",
    "retrieveVectors",
    "ids",
    "attributesToRetrieve",
    "attributesToCrop",
    "cropLength",
    "cropMarker",
    "attributesToHighlight",
    "highlightPreTag",
    "highlightPostTag",
    "showMatchesPosition",
    "page",
    "hitsPerPage",
    "matchingStrategy",
    "rankingScoreThreshold",
    "showRankingScore",
    "showRankingScoreDetails",
    "vector",
    "hybridEmbedder",
    "hybridSemanticRatio",
    "locales",
    "distinct",
    "id",
    "embedder",
    "attributesToSearchOn",
    "dryRun",
)
FIELD_NAMES: Final = (
    *QUERY_NAMES,
    "uid",
    "actions",
    "indexes",
    "expiresAt",
    "name",
    "description",
    "queries",
    "federation",
    "indexUid",
    "federationOptions",
    "weight",
    "facetsByIndex",
    "mergeFacets",
    "maxValuesPerFacet",
    "hybrid",
    "semanticRatio",
    "facetName",
    "facetQuery",
    "exhaustiveFacetCount",
    "target",
    "mode",
    "rename",
    "displayedAttributes",
    "searchableAttributes",
    "filterableAttributes",
    "sortableAttributes",
    "rankingRules",
    "stopWords",
    "nonSeparatorTokens",
    "separatorTokens",
    "dictionary",
    "synonyms",
    "distinctAttribute",
    "proximityPrecision",
    "typoTolerance",
    "faceting",
    "pagination",
    "embedders",
    "searchCutoffMs",
    "localizedAttributes",
    "facetSearch",
    "prefixSearch",
    "metrics",
    "logsRoute",
    "containsFilter",
    "editDocumentsByFunction",
    "network",
    "_geo",
    "_vectors",
    "lat",
    "lng",
    "minWordSizeForTypos",
    "oneTypo",
    "twoTypos",
    "disableOnWords",
    "disableOnAttributes",
    "enabled",
    "sortFacetValuesBy",
    "maxTotalHits",
    "source",
    "dimensions",
    "documentTemplate",
    "attributePatterns",
    "features",
    "personalize",
    "userContext",
    "media",
    "retrieveVectors",
    "showPerformanceDetails",
    "useNetwork",
)

huge_ints = st.sampled_from(
    [2**31, 2**32, 2**53 + 1, 2**63, 2**64, 2**64 + 1, -(2**63) - 1, 10**40, -(10**40)]
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    huge_ints,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "*",
            "",
            "id",
            "title",
            "a = 1",
            "title:asc",
            "_geo(0, 0)",
            "_geoRadius(0,0,1)",
            "NOT a",
            "a IN [1,2]",
            "a EXISTS",
            "a IS NULL",
            "a 1 TO 2",
            "words",
            "typo",
            "attribute:asc",
            "last",
            "all",
            "frequency",
            "alpha",
            "count",
            "default",
            "userProvided",
            "1e999",
            "-0",
        ]
    ),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=6),
        st.dictionaries(st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=12)), children, max_size=6),
    ),
    max_leaves=25,
)


def dumps(value: Any) -> bytes:
    # allow_nan: NaN/Infinity come out as bare tokens, which is malformed JSON worth sending
    return json.dumps(value, allow_nan=True).encode()


# -------------------------------------------------------------------------------------------------
# Seeds: one valid-looking body per route family, mutated by the campaign
# -------------------------------------------------------------------------------------------------

SEARCH_SEED: Final = {
    "q": "shared",
    "offset": 0,
    "limit": 5,
    "filter": "color = red",
    "sort": ["price:asc"],
    "facets": ["color"],
    "attributesToRetrieve": ["*"],
    "attributesToCrop": ["title"],
    "cropLength": 3,
    "attributesToHighlight": ["*"],
    "showMatchesPosition": True,
    "matchingStrategy": "last",
    "rankingScoreThreshold": 0.1,
    "showRankingScore": True,
    "showRankingScoreDetails": True,
    "page": 1,
    "hitsPerPage": 3,
    "distinct": "color",
    "locales": ["eng"],
    "attributesToSearchOn": ["title"],
    "hybrid": {"embedder": "default", "semanticRatio": 0.5},
    "vector": [0.1, 0.2],
}
SETTINGS_SEED: Final = {
    "displayedAttributes": ["*"],
    "searchableAttributes": ["title"],
    "filterableAttributes": ["color", "price"],
    "sortableAttributes": ["price"],
    "rankingRules": ["words", "typo", "price:asc"],
    "stopWords": ["the"],
    "synonyms": {"a": ["b"]},
    "distinctAttribute": "color",
    "typoTolerance": {"enabled": True},
    "faceting": {"maxValuesPerFacet": 10},
    "pagination": {"maxTotalHits": 50},
    "proximityPrecision": "byWord",
    "searchCutoffMs": 100,
    "dictionary": ["J.R.R."],
    "separatorTokens": ["|"],
    "nonSeparatorTokens": ["-"],
    "localizedAttributes": [{"attributePatterns": ["*"], "locales": ["eng"]}],
    "facetSearch": True,
    "prefixSearch": "indexingTime",
    "embedders": {"default": {"source": "userProvided", "dimensions": 2}},
}
DOCUMENT_SEED: Final = [
    {"id": 1, "title": "shared one", "color": "red", "price": 3, "_geo": {"lat": 1.5, "lng": 2.5}},
    {
        "id": "b-2",
        "title": "shared two",
        "nested": {"a": [1, {"b": None}]},
        "_vectors": {"default": [0.1, 0.2]},
    },
]


def seeds(uids: tuple[str, ...]) -> dict[str, Any]:
    a, b = uids[0], uids[1]
    return {
        "search": SEARCH_SEED,
        "settings": SETTINGS_SEED,
        "documents": DOCUMENT_SEED,
        "fetch": {
            "offset": 0,
            "limit": 3,
            "fields": ["title"],
            "filter": "price > 1",
            "ids": [1, "b-2"],
            "sort": ["price:desc"],
            "retrieveVectors": True,
        },
        "keys": {
            "actions": ["search", "documents.*"],
            "indexes": [f"{a}*"],
            "expiresAt": "2099-01-01",
            "name": "fuzz",
            "description": None,
        },
        "multi": {
            "queries": [
                {**SEARCH_SEED, "indexUid": a},
                {"indexUid": b, "q": "x", "federationOptions": {"weight": 2.0}},
            ],
            "federation": {
                "limit": 5,
                "offset": 0,
                "facetsByIndex": {a: ["color"]},
                "mergeFacets": {"maxValuesPerFacet": 3},
            },
        },
        "swap": [{"indexes": [a, b], "rename": False}],
        "index": {"uid": a, "primaryKey": "id"},
        "facet": {
            "facetName": "color",
            "facetQuery": "r",
            "q": "shared",
            "filter": "price > 0",
            "exhaustiveFacetCount": True,
        },
        "similar": {"id": 1, "embedder": "default", "limit": 3, "filter": "price > 0"},
        "features": {"metrics": True, "containsFilter": True},
        "fields": {"offset": 0, "limit": 5, "filter": {"attributePatterns": ["*"], "filterable": True}},
        "delete_batch": [1, "b-2"],
        "delete_filter": {"filter": "price > 100"},
    }


def seed_for(spec: RouteSpec) -> str | None:
    path = spec.path
    if path.endswith(("/search", "/multi-search")):
        return "multi" if path == "/multi-search" else "search"
    if "/settings" in path:
        return "settings"
    table = {
        "/documents/fetch": "fetch",
        "/documents/delete-batch": "delete_batch",
        "/documents/delete": "delete_filter",
        "/facet-search": "facet",
        "/similar": "similar",
        "/fields": "fields",
        "/documents": "documents",
    }
    for suffix, name in table.items():
        if path.endswith(suffix):
            return name
    return {
        "/keys": "keys",
        "/swap-indexes": "swap",
        "/indexes": "index",
        "/experimental-features": "features",
    }.get(path, "index" if path == "/indexes/{index_uid}" else None)


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """`base` with a few random edits: a value replaced, a field added or removed, a list item changed."""
    value = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(0, 3))):
        if isinstance(value, dict) and value:
            key = draw(st.sampled_from(sorted(value)))
            action = draw(st.sampled_from(["replace", "delete", "add", "recurse"]))
            if action == "replace":
                value[key] = draw(json_values)
            elif action == "delete":
                del value[key]
            elif action == "add":
                value[draw(st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=10)))] = draw(json_values)
            else:
                value[key] = draw(mutated(value[key]))
        elif isinstance(value, list) and value:
            i = draw(st.integers(0, len(value) - 1))
            value[i] = draw(st.one_of(json_values, mutated(value[i])))
        else:
            value = draw(json_values)
    return value


# -------------------------------------------------------------------------------------------------
# Pathological bodies
# -------------------------------------------------------------------------------------------------


def _bomb(size: int) -> bytes:
    return b"[" + b"0," * (size // 2) + b"0]"


PATHOLOGICAL: Final[tuple[bytes, ...]] = (
    b"[" * 100_000 + b"]" * 100_000,
    b"[" * 1_000 + b"]" * 1_000,
    b'{"a":' * 20_000 + b"1" + b"}" * 20_000,
    b"[" * 60_000,  # unbalanced
    b"1" * 5_000,
    b'{"limit": ' + b"9" * 5_000 + b"}",
    b'{"limit": 1e999999}',
    b'{"offset": -0, "limit": 18446744073709551616}',
    b'{"q": "\\ud800"}',
    b'"\\udfff\\ud800"',
    b"\xef\xbb\xbf{}",  # UTF-8 BOM
    b'{"q": "a\x00b"}',
    b"\xff\xfe\xfd",
    b'{"q": "' + b"x" * (PAYLOAD_LIMIT + 10) + b'"}',  # over the size limit
    b"null",
    b"[]",
    b"{}",
    b'""',
    b"0",
    b"true",
    b"[null]",
    b"[{}]",
    b"{" * 3,
    b'{"filter": "' + b"(" * 2_000 + b"a = 1" + b")" * 2_000 + b'"}',
    b'{"filter": "' + b"NOT " * 5_000 + b'a = 1"}',
    b'{"filter": "' + b" OR ".join([b"a = 1"] * 3_000) + b'"}',
    b'{"sort": ["' + b"a" * 10_000 + b':asc"]}',
    b'{"queries": [' + b",".join([b'{"indexUid": "x"}'] * 2_000) + b"]}",
)
BOMB_SIZE: Final = 4 * PAYLOAD_LIMIT  # decompresses past the limit


def encode_body(body: bytes, encoding: str | None, compress: bool) -> bytes:
    if not compress or encoding is None:
        return body
    if encoding == "gzip":
        return gzip.compress(body)
    if encoding == "deflate":
        return zlib.compress(body)
    if encoding == "br":
        return bytes(brotli.compress(body))
    if encoding == "zstd":
        return zstandard.ZstdCompressor().compress(body)
    return body


# -------------------------------------------------------------------------------------------------
# Requests
# -------------------------------------------------------------------------------------------------


@dataclass
class FuzzRequest:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes

    def __repr__(self) -> str:  # shown by hypothesis on failure: keep it readable
        shown = self.body[:300] + (b"..." if len(self.body) > 300 else b"")
        return f"{self.method} {self.path} query={self.query} headers={self.headers} body={shown!r}"


def path_values(uids: tuple[str, ...]) -> dict[str, st.SearchStrategy[str]]:
    random_text = st.text(max_size=40)
    return {
        "index_uid": st.one_of(
            st.sampled_from(uids),
            st.sampled_from(uids),
            random_text,
            st.just("a" * 401),
            st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True),
        ),
        "document_id": st.one_of(st.integers().map(str), random_text, st.just("b-2")),
        "task_uid": st.one_of(st.integers(-(2**70), 2**70).map(str), random_text),
        "batch_uid": st.one_of(st.integers(-(2**70), 2**70).map(str), random_text),
        "key_or_uid": st.one_of(
            st.uuids().map(str), random_text, st.text("0123456789abcdef", min_size=64, max_size=64)
        ),
        "uuid": st.one_of(st.uuids().map(str), random_text),
    }


query_values = st.one_of(
    st.text(max_size=30),
    st.integers().map(str),
    huge_ints.map(str),
    st.floats().map(repr),
    st.sampled_from(
        [
            "true",
            "false",
            "",
            "*",
            "1,2,3",
            "a,,b",
            "succeeded,failed",
            "documentAdditionOrUpdate",
            "2024-01-01",
            "2024-01-01T00:00:00Z",
            "raw",
            "human",
            "a = 1",
            "title:asc",
            "-1",
            "0",
        ]
    ),
)
# mostly JSON, so that bodies get past the content-type check to the validators
content_types = st.one_of(
    st.just("application/json"),
    st.sampled_from(
        [
            None,
            "application/json",
            "application/json; charset=utf-8",
            "application/x-ndjson",
            "text/csv",
            "text/plain",
            "application/xml",
            "multipart/form-data; boundary=x",
            "",
            "application/json; charset=latin1",
            "application/JSON",
            "text/csv; charset=utf-8",
        ]
    ),
    st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=30),
)
encodings = st.sampled_from(
    [None, None, None, "gzip", "deflate", "br", "zstd", "identity", "gzip, br", "x-bogus"]
)


@st.composite
def fuzz_requests(
    draw: st.DrawFn,
    routes: list[RouteSpec],
    uids: tuple[str, ...],
    auth: st.SearchStrategy[dict[str, str]],
    focus: list[RouteSpec] | None = None,
) -> FuzzRequest:
    """One request on `routes` (half of the time on `focus`, the routes the credentials open, if given)."""
    values = path_values(uids)
    if draw(st.integers(0, 19)) == 0:
        segments = draw(
            st.lists(
                st.one_of(
                    st.sampled_from(["indexes", "documents", "settings", "keys", "tasks", *uids]),
                    st.text(max_size=10),
                ),
                max_size=6,
            )
        )
        spec = None
        path = "/" + "/".join(quote(s, safe="") for s in segments)
    else:
        spec = draw(st.sampled_from(focus if focus and draw(st.booleans()) else routes))
        path = spec.path
        for name, strategy in values.items():
            if "{" + name + "}" in path:
                path = path.replace("{" + name + "}", quote(draw(strategy), safe=""))
        if draw(st.integers(0, 9)) == 0:
            path += "/"  # trimmed by the server
    method = spec.method if spec is not None and draw(st.integers(0, 6)) else draw(st.sampled_from(METHODS))
    query = draw(
        st.lists(
            st.tuples(st.one_of(st.sampled_from(QUERY_NAMES), st.text(max_size=10)), query_values), max_size=4
        )
    )

    kind = draw(
        st.sampled_from(
            ["seed", "seed", "seed", "json", "json", "pathological", "bytes", "empty", "ndjson", "csv"]
        )
    )
    seed_name = seed_for(spec) if spec is not None else None
    if kind == "seed" and seed_name is not None:
        body = dumps(draw(mutated(seeds(uids)[seed_name])))
    elif kind in ("seed", "json"):
        body = dumps(draw(json_values))
    elif kind == "pathological":
        body = draw(st.sampled_from(PATHOLOGICAL))
    elif kind == "bytes":
        body = draw(st.binary(max_size=200))
    elif kind == "ndjson":
        body = b"\n".join(dumps(v) for v in draw(st.lists(json_values, max_size=4)))
    elif kind == "csv":
        body = draw(
            st.sampled_from(
                [
                    b"id,title\n1,a\n",
                    b"id\n",
                    b'"unclosed\n',
                    b"id:number,x\nabc,1\n",
                    b"id,id\n1,2\n",
                    b",,,\n\n",
                    b"id;title\n1;a\n",
                ]
            )
        )
    else:
        body = b""

    headers = dict(draw(auth))
    content_type = draw(content_types)
    if content_type is not None:
        headers["content-type"] = content_type
    encoding = draw(encodings)
    if encoding is not None:
        headers["content-encoding"] = encoding
        if draw(st.booleans()) and draw(st.booleans()):
            body = _bomb(BOMB_SIZE)  # compressed below: small on the wire, over the limit once decoded
            body = encode_body(body, encoding, True)
        else:
            body = encode_body(body, encoding, draw(st.booleans()))
    if draw(st.integers(0, 9)) == 0:
        headers["Meili-Include-Metadata"] = draw(st.sampled_from(["true", "1", "false", "yes", ""]))
    return FuzzRequest(method, path, query, headers, body)


# -------------------------------------------------------------------------------------------------
# Checks
# -------------------------------------------------------------------------------------------------


@dataclass
class Stats:
    sent: int = 0
    unsendable: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)


def check_response(req: FuzzRequest, r: httpx.Response) -> None:
    """No 5xx but a 503 `too_many_search_requests`; every error is a Meilisearch error object."""
    context = f"{req!r}\n-> {r.status_code} {r.headers.get('content-type')} {r.content[:500]!r}"
    assert b"Traceback" not in r.content, context
    if req.method == "HEAD" or r.status_code < 400:
        assert r.status_code < 500, context
        return
    if not r.content:
        # unknown path / method: actix's empty 404 / 405
        assert r.status_code in (404, 405), context
        return
    assert r.headers.get("content-type", "").startswith("application/json"), context
    body = r.json()
    assert isinstance(body, dict) and set(body) == ERROR_KEYS, context
    assert all(isinstance(body[k], str) for k in ERROR_KEYS), context
    code = body["code"]
    assert code in ERROR_TABLE, context
    expected = ERROR_TABLE[code]
    if code == "index_not_found" and req.path.rstrip("/") == "/multi-search":
        expected = ("invalid_request", 400)  # Meilisearch answers a missing index of a multi-search 400
    assert (body["type"], r.status_code) == expected, context
    assert body["type"] in ERROR_TYPES and body["link"] == LINK + code, context
    if r.status_code >= 500:
        assert (r.status_code, code) == (503, "too_many_search_requests"), context


def run_campaign(
    client: httpx.Client, strategy: st.SearchStrategy[FuzzRequest], seconds: float, base_seed: int
) -> Stats:
    """Send requests drawn from `strategy` for `seconds`, in rounds of 100 examples with fixed seeds.

    Past the deadline, examples are no longer sent, unless a failure was seen: hypothesis then
    replays and shrinks it, which must not be cut short.
    """
    stats = Stats()
    deadline = time.monotonic() + seconds
    failing = [False]

    def attempt(req: FuzzRequest) -> None:
        if time.monotonic() >= deadline and not failing[0]:
            return
        try:
            r = client.request(
                req.method, req.path, params=tuple(req.query), headers=req.headers, content=req.body
            )
        except (httpx.InvalidURL, httpx.LocalProtocolError):
            stats.unsendable += 1  # a URL or header the client refuses to send (h11's own checks)
            return
        stats.sent += 1
        stats.statuses[r.status_code] += 1
        try:
            check_response(req, r)
        except AssertionError:
            failing[0] = True
            raise
        if r.status_code >= 400 and r.content and req.method != "HEAD":
            stats.codes[r.json()["code"]] += 1

    round_no = 0
    while time.monotonic() < deadline:
        test = seed(base_seed + round_no)(
            settings(
                max_examples=100,
                deadline=None,
                database=None,
                phases=[Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck),
            )(given(strategy)(attempt))
        )
        test()
        round_no += 1
    return stats


# -------------------------------------------------------------------------------------------------
# The server, the data to keep intact, the campaigns
# -------------------------------------------------------------------------------------------------

INTEGRITY_DOCUMENTS: Final = [
    {
        "id": i,
        "title": f"shared document {i} ünïcødé 東京",
        "color": ["red", "blue", "green"][i % 3],
        "price": i * 1.5,
        "nested": {"deep": [i, {"x": str(i)}]},
        "_geo": {"lat": i % 90, "lng": i % 180},
        "big": 2**53 + i,
        "flag": i % 2 == 0,
        "none": None,
    }
    for i in range(40)
]
INTEGRITY_SETTINGS: Final = {
    "filterableAttributes": ["color", "price", "_geo"],
    "sortableAttributes": ["price"],
    "searchableAttributes": ["title", "nested"],
    "synonyms": {"shared": ["common"]},
}


@dataclass
class Fuzz:
    server: ServerProcess
    admin: httpx.Client
    restricted_uid: str
    restricted_key: str
    before: dict[str, bytes]
    last_setup_task: int
    report: dict[str, Stats] = field(default_factory=dict)


def snapshot(admin: httpx.Client) -> dict[str, bytes]:
    out = {}
    for uid in (INTEGRITY, SEARCHABLE):
        for suffix in ("", "/documents?limit=1000", "/settings", "/stats"):
            r = admin.get(f"/indexes/{uid}{suffix}")
            assert r.status_code == 200, r.text
            out[uid + suffix] = r.content
        r = admin.post(f"/indexes/{uid}/search", json={"q": "shared", "limit": 1000, "facets": ["color"]})
        assert r.status_code == 200, r.text
        out[uid + " search"] = json.dumps(
            {k: v for k, v in r.json().items() if k not in ("processingTimeMs", "requestUid")}
        ).encode()
    return out


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzz]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("fuzz") / "data.ms",
        extra_args=["--master-key", MASTER_KEY, "--http-payload-size-limit", str(PAYLOAD_LIMIT)],
    )
    srv.start()
    try:
        with httpx.Client(
            base_url=srv.url, timeout=30, headers={"Authorization": f"Bearer {MASTER_KEY}"}
        ) as admin:
            last = 0
            for uid in (INTEGRITY, SEARCHABLE):
                for r in (
                    admin.patch(f"/indexes/{uid}/settings", json=INTEGRITY_SETTINGS),
                    admin.post(f"/indexes/{uid}/documents", json=INTEGRITY_DOCUMENTS),
                ):
                    task = wait_task(admin, r.json()["taskUid"])
                    assert task["status"] == "succeeded", task
                    last = max(last, task["uid"])
            key = admin.post(
                "/keys", json={"actions": ["search"], "indexes": [SEARCHABLE], "expiresAt": None}
            )
            assert key.status_code == 201, key.text
            yield Fuzz(srv, admin, key.json()["uid"], key.json()["key"], snapshot(admin), last)
    finally:
        srv.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def report(fz: Fuzz, name: str, stats: Stats, capsys: pytest.CaptureFixture[str]) -> None:
    fz.report[name] = stats
    with capsys.disabled():
        top = ", ".join(f"{c}:{n}" for c, n in stats.codes.most_common(6))
        print(
            f"\nfuzz[{name}]: {stats.sent} requests ({stats.unsendable} unsendable), statuses {dict(sorted(stats.statuses.items()))}; "
            f"top error codes {top}"
        )
    assert stats.sent >= 20, "the campaign sent almost nothing: is the server answering?"


def test_fuzz_restricted_key(fuzz: Fuzz, capsys: pytest.CaptureFixture[str]) -> None:
    rules = st.one_of(
        json_values,
        st.dictionaries(
            st.sampled_from([SEARCHABLE, "*", "fuzz_*", INTEGRITY]),
            st.one_of(st.none(), st.fixed_dictionaries({"filter": json_values})),
            max_size=3,
        ),
    )
    tokens = st.builds(
        lambda r, alg: encode_token(
            {"apiKeyUid": fuzz.restricted_uid, "searchRules": r}, fuzz.restricted_key, alg
        ),
        rules,
        st.sampled_from(["HS256", "HS384", "HS512"]),
    )
    auth = st.one_of(
        st.just(bearer(fuzz.restricted_key)), st.just(bearer(fuzz.restricted_key)), tokens.map(bearer)
    )
    uids = (SEARCHABLE, INTEGRITY, *THROWAWAY)
    search_routes = [r for r in ROUTES if r.action == "search"]
    with httpx.Client(base_url=fuzz.server.url, timeout=30) as client:
        stats = run_campaign(
            client, fuzz_requests(list(ROUTES), uids, auth, search_routes), FUZZ_SECONDS * 0.4, 1_000
        )
    report(fuzz, "restricted", stats, capsys)


def test_fuzz_master_key_on_throwaway_indexes(fuzz: Fuzz, capsys: pytest.CaptureFixture[str]) -> None:
    routes = [r for r in ROUTES if (r.method, r.path) not in MASTER_SKIPPED]
    with httpx.Client(base_url=fuzz.server.url, timeout=30) as client:
        stats = run_campaign(
            client, fuzz_requests(routes, THROWAWAY, st.just(bearer(MASTER_KEY))), FUZZ_SECONDS * 0.4, 2_000
        )
    report(fuzz, "master", stats, capsys)


def test_fuzz_hostile_authorization_headers(fuzz: Fuzz, capsys: pytest.CaptureFixture[str]) -> None:
    b64 = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/", max_size=60)
    # no leading/trailing blanks: h11 refuses to send those
    visible = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80).map(str.strip)
    values = st.one_of(
        visible,
        visible.map(lambda t: ("Bearer " + t).strip()),
        st.just("Bearer"),
        st.tuples(b64, b64, b64).map(lambda p: "Bearer " + ".".join(p)),
        st.tuples(json_values, json_values).map(
            lambda p: "Bearer " + ".".join([_b64(p[0]), _b64(p[1]), "c2ln"])
        ),
        st.text("0123456789abcdefABCDEF", min_size=63, max_size=65).map(lambda t: "Bearer " + t),
    )
    auth = values.map(lambda v: {"Authorization": v})
    with httpx.Client(base_url=fuzz.server.url, timeout=30) as client:
        stats = run_campaign(
            client,
            fuzz_requests(list(ROUTES), (INTEGRITY, SEARCHABLE, *THROWAWAY), auth),
            FUZZ_SECONDS * 0.2,
            3_000,
        )
    report(fuzz, "hostile_auth", stats, capsys)


def _b64(value: Any) -> str:
    return base64.urlsafe_b64encode(dumps(value)).rstrip(b"=").decode()


def drain(admin: httpx.Client, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = admin.get("/tasks", params={"statuses": "enqueued,processing", "limit": 1})
        if r.json()["total"] == 0:
            return
        time.sleep(0.1)
    raise TimeoutError("the task queue did not drain")


def test_stored_documents_unchanged(fuzz: Fuzz, capsys: pytest.CaptureFixture[str]) -> None:
    assert fuzz.server.proc is not None and fuzz.server.proc.poll() is None, "the server died"
    drain(fuzz.admin)
    assert snapshot(fuzz.admin) == fuzz.before
    tasks = fuzz.admin.get("/tasks", params={"indexUids": f"{INTEGRITY},{SEARCHABLE}", "limit": 1000}).json()
    assert [t["uid"] for t in tasks["results"] if t["uid"] > fuzz.last_setup_task] == []
    total = sum(s.sent for s in fuzz.report.values())
    with capsys.disabled():
        print(
            f"\nfuzz total: {total} requests in {FUZZ_SECONDS:.0f} s; integrity index and searchable index "
            "byte-identical"
        )


def test_server_log_has_no_unexpected_exceptions(fuzz: Fuzz) -> None:
    # `safe` logs an unexpected exception before answering 500, uvicorn one escaping the app
    log = fuzz.server.output()
    for marker in ("internal error on", "Exception in ASGI application", "Traceback"):
        assert marker not in log, log[-5000:]
