"""Relevancy-test helpers: tiny indexes on the real server, and bucket-aware order assertions.

The datasets and expected orders are ported from milli's relevancy tests
(`crates/milli/src/search/new/tests/*.rs`, `crates/milli/tests/search/*.rs`). Documents are added
in id order, so internal docids equal the `id`s, as in milli's tests.

Milli returns documents that every ranking rule leaves tied in docid order; hanzo-engine orders
them by BM25 first. So expected orders are written as *buckets*: `[[9, 10], [4], ...]` means 9 and
10 are tied (same score details on every rule) and both come before 4. `assert_buckets` checks the
bucket sequence exactly: the hits grouped by equal `_rankingScoreDetails` (BM25 left out) must be
these groups, in this order — so it also checks that the rules tie exactly what milli ties.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests import datasets
from tests.conftest import ServerProcess

_counter = itertools.count()


class Idx:
    """One index on the test server."""

    def __init__(self, client: httpx.Client, uid: str) -> None:
        self.client = client
        self.uid = uid

    def wait(self, response: httpx.Response) -> dict[str, Any]:
        assert response.status_code == 202, response.text
        uid = response.json()["taskUid"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            task: dict[str, Any] = self.client.get(f"/tasks/{uid}").json()
            if task["status"] in ("succeeded", "failed", "canceled"):
                assert task["status"] == "succeeded", task
                return task
            time.sleep(0.005)
        raise TimeoutError(f"task {uid}")

    def settings(self, settings: dict[str, Any]) -> None:
        self.wait(self.client.patch(f"/indexes/{self.uid}/settings", json=settings))

    def add(self, documents: list[dict[str, Any]]) -> None:
        self.wait(self.client.post(f"/indexes/{self.uid}/documents", json=documents))

    def search(self, q: str | None, **params: Any) -> dict[str, Any]:
        body = {"q": q, "limit": 100, "showRankingScore": True, "showRankingScoreDetails": True, **params}
        response = self.client.post(f"/indexes/{self.uid}/search", json=body)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    def ids(self, q: str | None, **params: Any) -> list[Any]:
        return [hit["id"] for hit in self.search(q, **params)["hits"]]

    def buckets(self, q: str | None, **params: Any) -> list[list[Any]]:
        return buckets(self.search(q, **params)["hits"])


def _rules_key(hit: dict[str, Any]) -> Any:
    details = {k: v for k, v in hit["_rankingScoreDetails"].items() if k != "bm25"}
    return repr(sorted(details.items()))


def buckets(hits: list[dict[str, Any]]) -> list[list[Any]]:
    """Consecutive hits with equal score details (BM25 aside), as lists of ids."""
    return [[h["id"] for h in group] for _, group in itertools.groupby(hits, key=_rules_key)]


def assert_buckets(got: list[list[Any]], expected: list[list[Any]]) -> None:
    """The buckets match, each compared as a set (their inner order is BM25's)."""
    assert [sorted(g) for g in got] == [sorted(g) for g in expected], f"got {got}"


def flat(expected: list[list[Any]]) -> list[Any]:
    return [i for g in expected for i in g]


def assert_milli_order(hits: list[dict[str, Any]], expected: list[Any]) -> None:
    """`expected` is milli's order: ours must be the same up to ties, where milli's order is the
    docid order. Every group of our tied hits must hold exactly the ids at the same positions in
    `expected`, and `expected` must list them in ascending (docid) order there."""
    got = [h["id"] for h in hits]
    assert sorted(got) == sorted(expected), f"got {got}, expected {expected}"
    at = 0
    for group in buckets(hits):
        span = expected[at : at + len(group)]
        assert sorted(group) == sorted(span), f"got {got}, expected {expected}: bucket {group} vs {span}"
        assert span == sorted(span), f"milli orders {span} strictly, we tie them (got {got})"
        at += len(group)


MILLI_TEST_SET = "meilisearch/milli_test_set.ndjson"  # shipped in tests/assets/datasets
# milli's `tests/search/mod.rs` settings for its test set
MILLI_SETTINGS: dict[str, Any] = {
    "searchableAttributes": ["title", "description"],
    "synonyms": {"hello": ["good morning"], "world": ["earth"], "america": ["the united states"]},
}
MILLI_QUERY = "hello world america"
RANK_FIELDS = {
    "words": "word_rank",
    "typo": "typo_rank",
    "proximity": "proximity_rank",
    "attribute": "attribute_rank",
    "exactness": "exact_rank",
}


def milli_test_set() -> list[dict[str, Any]]:
    """milli's ranking test set: 17 documents with their expected rank for each rule."""
    raw = datasets.read_text(MILLI_TEST_SET)
    decoder = json.JSONDecoder()
    docs: list[dict[str, Any]] = []
    at = 0
    while True:
        while at < len(raw) and raw[at].isspace():
            at += 1
        if at >= len(raw):
            return docs
        doc, at = decoder.raw_decode(raw, at)
        docs.append(doc)


def milli_expected_groups(docs: list[dict[str, Any]], rules: list[str], strategy: str) -> list[list[str]]:
    """milli's `expected_order`: the documents grouped rule after rule by their expected ranks."""
    groups = [list(docs)]
    for rule in rules:
        name, _, direction = rule.partition(":")
        if rule in RANK_FIELDS:
            field, sign = RANK_FIELDS[rule], 1
        elif name == "asc_desc_rank":
            field, sign = name, -1 if direction == "desc" else 1
        else:
            continue

        def key(d: dict[str, Any], field: str = field, sign: int = sign) -> int:
            return sign * int(d[field])

        groups = [list(g) for group in groups for _, g in itertools.groupby(sorted(group, key=key), key=key)]
    if strategy == "all":
        groups = [[d for d in g if d["word_rank"] == 0] for g in groups]
    return [[d["id"] for d in g] for g in groups if g]


def assert_groups(hits: list[dict[str, Any]], expected: list[list[Any]]) -> None:
    """Our tied hits are exactly milli's expected groups, in the same order."""
    assert_buckets(buckets(hits), expected)


@pytest.fixture(scope="module")
def module_client(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def make_index(module_client: httpx.Client, request: pytest.FixtureRequest) -> Callable[..., Idx]:
    """`make_index(documents, settings)`: a fresh index with `settings` applied before the documents."""
    module = request.module.__name__.rpartition(".")[2]

    def make(documents: list[dict[str, Any]], settings: dict[str, Any] | None = None) -> Idx:
        uid = f"{module}_{next(_counter)}_{time.monotonic_ns() % 1_000_000}"
        idx = Idx(module_client, uid)
        idx.wait(module_client.post("/indexes", json={"uid": uid, "primaryKey": "id"}))
        if settings:
            idx.settings(settings)
        idx.add(documents)
        return idx

    return make
