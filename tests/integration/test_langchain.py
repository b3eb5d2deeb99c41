"""LangChain's Meilisearch vector store (`langchain-community`) against a real server.

The store is used as a RAG pipeline uses it: a `userProvided` embedder, `add_texts` with metadata, then
`similarity_search[_with_score]`, filters on metadata, and hybrid search through the same client. Each
answer is compared with the same search sent straight to the HTTP API, and with a cosine ranking
computed here from the fake embeddings.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("langchain_community", reason="needs langchain-community (the test extra)")

import meilisearch
from langchain_community.vectorstores import Meilisearch
from langchain_core.embeddings import Embeddings

from tests.conftest import ServerProcess

DIMENSIONS = 16
WAIT = {"X-Hanzo-Wait-For-Task": "20000"}

TEXTS: list[tuple[str, dict[str, Any]]] = [
    ("the rocket reached orbit around the moon", {"topic": "space", "year": 1969}),
    ("astronauts walked on the moon surface", {"topic": "space", "year": 1969}),
    ("a probe flew past saturn and its rings", {"topic": "space", "year": 1980}),
    ("the telescope found a planet around a distant star", {"topic": "space", "year": 2009}),
    ("bake the bread in a hot oven for forty minutes", {"topic": "cooking", "year": 2001}),
    ("the soup simmers with onions and carrots", {"topic": "cooking", "year": 2010}),
    ("knead the dough until it is smooth", {"topic": "cooking", "year": 2015}),
    ("the striker scored a goal in the final minute", {"topic": "sport", "year": 2014}),
    ("the marathon runner crossed the finish line", {"topic": "sport", "year": 2016}),
    ("the moon rose over the stadium during the final", {"topic": "sport", "year": 2018}),
    ("rings of onions fried in hot oil", {"topic": "cooking", "year": 2020}),
    ("a rocket launch was delayed by the storm", {"topic": "space", "year": 2021}),
]


class HashingEmbeddings(Embeddings):
    """Deterministic bag-of-words vectors: each word adds ±1 to a coordinate picked by its hash."""

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * DIMENSIONS
        for word in text.lower().split():
            digest = hashlib.sha256(word.encode()).digest()
            vector[digest[0] % DIMENSIONS] += 1.0 if digest[1] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def cosine(a: list[float], b: list[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb) if na and nb else 0.0


@pytest.fixture
def store(server: ServerProcess) -> Iterator[tuple[Meilisearch, str, dict[str, str]]]:
    """A vector store on a fresh index, its texts added; yields (store, index uid, text -> id)."""
    index_uid = f"langchain-{uuid.uuid4().hex[:8]}"
    # Each write waits for its task, so what add_texts wrote is searchable when it returns.
    client = meilisearch.Client(server.url, custom_headers=WAIT)
    vectorstore = Meilisearch(
        embedding=HashingEmbeddings(),
        client=client,
        index_name=index_uid,
        embedders={"default": {"source": "userProvided", "dimensions": DIMENSIONS}},
    )
    client.index(index_uid).update_filterable_attributes(["metadata.topic", "metadata.year"])
    ids = vectorstore.add_texts([t for t, _ in TEXTS], metadatas=[dict(m) for _, m in TEXTS])
    yield vectorstore, index_uid, {text: id_ for (text, _), id_ in zip(TEXTS, ids, strict=True)}
    client.delete_index(index_uid)


def http_search(server: ServerProcess, index_uid: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = httpx.post(f"{server.url}/indexes/{index_uid}/search", json=body, timeout=30)
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


def semantic_body(query: str, limit: int, **extra: Any) -> dict[str, Any]:
    return {
        "vector": HashingEmbeddings().embed_query(query),
        "limit": limit,
        "showRankingScore": True,
        "hybrid": {"embedder": "default", "semanticRatio": 1.0},
        **extra,
    }


def test_the_store_configures_the_index_and_stores_the_texts(
    server: ServerProcess, store: tuple[Meilisearch, str, dict[str, str]]
) -> None:
    _, index_uid, ids = store
    settings = httpx.get(f"{server.url}/indexes/{index_uid}/settings").json()
    assert settings["embedders"] == {"default": {"source": "userProvided", "dimensions": DIMENSIONS}}
    docs = httpx.get(
        f"{server.url}/indexes/{index_uid}/documents", params={"limit": 100, "retrieveVectors": "true"}
    ).json()["results"]
    assert len(docs) == len(TEXTS)
    embeddings = HashingEmbeddings()
    for doc in docs:
        text = doc["metadata"]["text"]
        assert ids[text] == doc["id"]
        [stored] = doc["_vectors"]["default"]["embeddings"]
        assert stored == pytest.approx(embeddings.embed_query(text), abs=1e-6)
        assert doc["_vectors"]["default"]["regenerate"] is False


def test_similarity_search_matches_the_http_api_and_the_cosine_ranking(
    server: ServerProcess, store: tuple[Meilisearch, str, dict[str, str]]
) -> None:
    vectorstore, index_uid, ids = store
    embeddings = HashingEmbeddings()
    for query in ("rocket to the moon", "hot oven bread", "final goal of the match", "rings"):
        found = vectorstore.similarity_search(query, k=4)
        direct = http_search(server, index_uid, semantic_body(query, 4))
        assert [ids[d.page_content] for d in found] == [h["id"] for h in direct]
        # the metadata comes back as it was given, without the text
        assert all(d.metadata == dict(TEXTS)[d.page_content] for d in found)
        q = embeddings.embed_query(query)
        similarities = sorted((cosine(q, embeddings.embed_query(t)) for t, _ in TEXTS), reverse=True)[:4]
        assert [cosine(q, embeddings.embed_query(d.page_content)) for d in found] == pytest.approx(
            similarities
        )


def test_similarity_search_with_score_gives_the_ranking_scores(
    server: ServerProcess, store: tuple[Meilisearch, str, dict[str, str]]
) -> None:
    vectorstore, index_uid, ids = store
    query = "a planet around a star seen by the telescope"
    found = vectorstore.similarity_search_with_score(query, k=5)
    direct = http_search(server, index_uid, semantic_body(query, 5))
    assert [(ids[d.page_content], score) for d, score in found] == [
        (h["id"], h["_rankingScore"]) for h in direct
    ]
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True) and 0.0 <= scores[-1] <= scores[0] <= 1.0
    assert found[0][0].page_content == "the telescope found a planet around a distant star"


def test_filters_on_metadata(server: ServerProcess, store: tuple[Meilisearch, str, dict[str, str]]) -> None:
    vectorstore, index_uid, ids = store
    query = "the moon and the rings"
    for flt in (
        "metadata.topic = space",
        "metadata.topic = cooking AND metadata.year >= 2010",
        "metadata.year < 1990 OR metadata.topic = sport",
    ):
        found = vectorstore.similarity_search(query, k=10, filter=flt)
        direct = http_search(server, index_uid, semantic_body(query, 10, filter=flt))
        assert [ids[d.page_content] for d in found] == [h["id"] for h in direct]
        assert found, flt
    found = vectorstore.similarity_search(query, k=10, filter="metadata.topic = space")
    assert {d.page_content for d in found} == {t for t, m in TEXTS if m["topic"] == "space"}


def test_hybrid_search_on_the_store_index(
    server: ServerProcess, store: tuple[Meilisearch, str, dict[str, str]]
) -> None:
    """The store fixes semanticRatio at 1.0; hybrid retrieval goes through the same client and index."""
    vectorstore, index_uid, ids = store
    client = meilisearch.Client(server.url)
    query = "moon rocket"
    vector = HashingEmbeddings().embed_query(query)
    by_id = {v: k for k, v in ids.items()}
    results = {}
    for ratio in (0.0, 0.5, 1.0):
        body = {"vector": vector, "hybrid": {"embedder": "default", "semanticRatio": ratio}, "limit": 5}
        hits = client.index(index_uid).search(query, body)["hits"]
        assert [h["id"] for h in hits] == [
            h["id"] for h in http_search(server, index_uid, {"q": query, **body})
        ]
        results[ratio] = [h["id"] for h in hits]
    # ratio 0 is the keyword search; ratio 1 is what the LangChain store answers
    keyword = [h["id"] for h in http_search(server, index_uid, {"q": query, "limit": 5})]
    assert results[0.0] == keyword
    assert results[1.0] == [ids[d.page_content] for d in vectorstore.similarity_search(query, k=5)]
    # every keyword hit holds a query word
    assert all({"moon", "rocket"} & set(by_id[i].split()) for i in keyword)


def test_from_texts_builds_a_searchable_store(server: ServerProcess) -> None:
    index_uid = f"langchain-{uuid.uuid4().hex[:8]}"
    client = meilisearch.Client(server.url, custom_headers=WAIT)
    texts = [t for t, _ in TEXTS[:6]]
    vectorstore = Meilisearch.from_texts(
        texts,
        HashingEmbeddings(),
        metadatas=[dict(m) for _, m in TEXTS[:6]],
        client=client,
        index_name=index_uid,
        embedders={"default": {"source": "userProvided", "dimensions": DIMENSIONS}},
    )
    try:
        [first] = vectorstore.similarity_search(texts[2], k=1)
        assert first.page_content == texts[2]
        assert first.metadata == TEXTS[2][1]
    finally:
        client.delete_index(index_uid)
