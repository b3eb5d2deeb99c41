"""Hybrid relevance: NDCG@10 on Cranfield and NPL with their shipped MiniLM vectors as a
`userProvided` embedder, in process.

One index per collection (documents `{id, title, body, _vectors: {minilm: [...]}}` written through
the same validation and vector-store path as the document route; searchableAttributes `[title, body]`,
an English `stopWords` list). Runs per collection:

- `keyword`: the engine's keyword search (Meilisearch's default rules, matchingStrategy `frequency`).
- `semantic`: semantic-only search on the query's MiniLM vector.
- `hybrid@r`: Meilisearch's hybrid merge (ranking scores weighted by the semantic ratio r).
- `rrf/engine`, `convex/engine`: reciprocal-rank (k=60) and convex (min-max, 0.3 keyword / 0.7
  semantic) fusion of the engine's keyword list and the semantic list.
- `rrf/bm25`, `convex/bm25`: the same fusions with a BM25 keyword side over OR-ed query words (bm25s,
  English stop words: the engine's keyword search has no OR-of-all-words BM25 retrieval yet).

Targets (issue 6): hybrid >= 0.40 on Cranfield, >= 0.44 on NPL. Metrics are reported, not asserted
(the tests only check they were computed); the table is written to
`benchmarks/results/hybrid_relevance.json` (smoke runs: under pytest's temp dir).
Smoke mode (`HANZO_BENCH_SCALE=smoke`): 20 Cranfield queries.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.corpus import DATASETS
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import Index, IndexReader
from hanzo_engine.engine.search.engine import search
from hanzo_engine.engine.search.types import SearchRequest
from hanzo_engine.engine.vector.documents import configure_embedders, prepare_documents, write_vectors
from hanzo_engine.engine.vector.hybrid import ai_search, fuse_convex, fuse_rrf, semantic

os.environ.setdefault("IR_DATA", str(DATASETS))
sys.path.insert(0, str(DATASETS.parent / "tools"))
irdata: Any = importlib.import_module("irdata")

SMOKE = os.environ.get("HANZO_BENCH_SCALE", "full") == "smoke"
COLLECTIONS = ["cranfield"] if SMOKE else ["cranfield", "npl"]
TOP_K = 100
RATIOS = (0.3, 0.5, 0.7, 0.9)
CONVEX_WEIGHTS = (0.3, 0.7)
TARGETS = {"cranfield": 0.40, "npl": 0.44}
RESULTS_FILE = Path(__file__).resolve().parent / "results" / "hybrid_relevance.json"
STOP_WORDS = sorted(set("""a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just may me might
more most must my myself no nor not now of off on once only or other our ours ourselves out over own same
shall she should so some such than that the their theirs them themselves then there these they this those
through to too under until up upon very was we were what when where which while who whom why will with would
you your yours yourself yourselves""".split()))
SETTINGS = {"searchableAttributes": ["title", "body"], "stopWords": STOP_WORDS,
            "embedders": {"minilm": {"source": "userProvided", "dimensions": 384}}}

Run = dict[str, list[str]]
RESULTS: dict[str, dict[str, float]] = {}


class Collection:
    def __init__(self, name: str, root: Path) -> None:
        docs, queries, qrels = irdata.IR_LOADERS[name]()
        if SMOKE:
            queries = queries[:20]
            qrels = {qid: qrels[qid] for qid, _ in queries}
        self.name, self.queries, self.qrels = name, queries, qrels
        self.docs = docs
        folder = DATASETS / "ir" / name
        doc_ids = (folder / "minilm_doc_ids.txt").read_text().split()
        query_ids = (folder / "minilm_query_ids.txt").read_text().split()
        doc_vectors = np.load(folder / "minilm_docs.f16.npy").astype(np.float32)
        query_vectors = np.load(folder / "minilm_queries.f16.npy").astype(np.float32)
        self.doc_vectors = dict(zip(doc_ids, doc_vectors, strict=True))
        self.query_vectors = {qid: v.tolist() for qid, v in zip(query_ids, query_vectors, strict=True)}
        self.settings = complete_settings(SETTINGS)
        self.index = Index.create(root / name, primary_key="id", created_at=0)
        with self.index.write() as w:
            w.set_settings(self.settings)
            configure_embedders(w, complete_settings({}), self.settings)
            items = [(i, {"id": i, "title": t, "body": b, "_vectors": {"minilm": self.doc_vectors[i].tolist()}})
                     for i, t, b in docs]
            for ext_id, doc, vectors in prepare_documents(w, name, self.settings, items, merge=False):
                w.put_document(ext_id, doc, merge=False)
                write_vectors(w, ext_id, vectors)
        self._bm25: Any = None

    def external(self, reader: IndexReader, docids: list[int]) -> list[str]:
        return [str((reader.document_by_internal_id(d) or {}).get("id")) for d in docids]

    def keyword(self, reader: IndexReader, text: str) -> list[tuple[str, float]]:
        res = search(reader, SearchRequest(q=text, limit=TOP_K, matching_strategy="frequency"), self.settings)
        return list(zip(self.external(reader, res.docids), res.scores, strict=True))

    def semantic(self, reader: IndexReader, qid: str) -> list[tuple[str, float]]:
        res = semantic(reader, self.settings, "minilm", self.query_vectors[qid], 0, TOP_K, None, None)
        return list(zip(self.external(reader, res.docids), res.scores, strict=True))

    def hybrid(self, reader: IndexReader, qid: str, text: str, ratio: float) -> list[str]:
        request = SearchRequest(q=text, limit=TOP_K, matching_strategy="frequency")
        out = ai_search(reader, request, self.settings, "minilm", ratio, self.query_vectors[qid])
        assert out is not None
        return self.external(reader, out.result.docids)

    def bm25(self, text: str) -> list[tuple[str, float]]:
        bm25s: Any = importlib.import_module("bm25s")
        if self._bm25 is None:
            self._bm25 = bm25s.BM25()
            corpus = [f"{t} {b}" for _, t, b in self.docs]
            self._bm25.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
        ids, scores = self._bm25.retrieve(bm25s.tokenize([text], stopwords="en", show_progress=False),
                                          k=TOP_K, show_progress=False)
        return [(self.docs[int(i)][0], float(s)) for i, s in zip(ids[0], scores[0], strict=True)]


@pytest.fixture(scope="module")
def collections(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Collection]]:
    root = tmp_path_factory.mktemp("hybrid")
    out = {name: Collection(name, root) for name in COLLECTIONS}
    yield out
    for coll in out.values():
        coll.index.close()
    _write(tmp_path_factory)


def _write(tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.getbasetemp() / "hybrid_relevance.json" if SMOKE else RESULTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"scale": "smoke" if SMOKE else "full", "targets": TARGETS, "ndcg@10": RESULTS},
                               indent=2) + "\n")
    print("\nNDCG@10", json.dumps(RESULTS, indent=1))


def _names(lst: list[tuple[str, float]]) -> list[str]:
    return [name for name, _ in lst]


def _hybrid(ratio: float) -> Callable[[Collection, IndexReader, str, str], list[str]]:
    return lambda c, r, qid, text: c.hybrid(r, qid, text, ratio)


RUNS: dict[str, Callable[[Collection, IndexReader, str, str], list[str]]] = {
    "keyword": lambda c, r, qid, text: _names(c.keyword(r, text)),
    "semantic": lambda c, r, qid, text: _names(c.semantic(r, qid)),
    **{f"hybrid@{ratio}": _hybrid(ratio) for ratio in RATIOS},
    "rrf/engine": lambda c, r, qid, text: fuse_rrf([_names(c.keyword(r, text)), _names(c.semantic(r, qid))]),
    "convex/engine": lambda c, r, qid, text: fuse_convex([c.keyword(r, text), c.semantic(r, qid)], CONVEX_WEIGHTS),
    "bm25": lambda c, r, qid, text: _names(c.bm25(text)),
    "rrf/bm25": lambda c, r, qid, text: fuse_rrf([_names(c.bm25(text)), _names(c.semantic(r, qid))]),
    "convex/bm25": lambda c, r, qid, text: fuse_convex([c.bm25(text), c.semantic(r, qid)], CONVEX_WEIGHTS),
}


@pytest.mark.parametrize("run_name", list(RUNS))
@pytest.mark.parametrize("coll_name", COLLECTIONS)
def test_hybrid_relevance(collections: dict[str, Collection], coll_name: str, run_name: str) -> None:
    coll = collections[coll_name]
    make = RUNS[run_name]
    run: Run = {}
    with coll.index.read() as reader:
        for qid, text in coll.queries:
            run[qid] = make(coll, reader, qid, text)[:TOP_K]
    metrics = irdata.evaluate(run, coll.qrels)
    assert metrics["n_queries"] == len(coll.queries)
    assert 0.0 <= metrics["ndcg@10"] <= 1.0
    RESULTS.setdefault(coll_name, {})[run_name] = round(metrics["ndcg@10"], 4)
