"""The labelled IR collections (Cranfield, NPL, CISI) and the ranking metrics the relevance benchmarks report.

Files are read through `tests.datasets` (the repository's `tests/assets/datasets`, or `$HANZO_DATASETS`),
compressed or not. Every loader returns `(docs, queries, qrels)`:

- docs: `[(doc id, title, body)]` in file order (NPL has no titles: `""`);
- queries: `[(query id, text)]`, only the queries that have at least one judged relevant document;
- qrels: `{query id: {doc id: gain}}`, gains > 0 (binary 1 for NPL and CISI, graded 1-4 for Cranfield).

Formats: Cranfield and CISI are SMART files (`.I <id>` opens a record, a line `.T`/`.W`/`.A`/... opens a
field); NPL ("vaswani") lists records as an id line, text lines and a `/` line. Cranfield's `cranqrel`
numbers the queries 1..225 by their position in `cran.qry`, not by the `.I` numbers there (which skip
values), so query ids are positions; its Cleverdon codes run from 1 (complete answer) to 4 (minimum
interest), -1 or 5 meaning not relevant, and the gain is `5 - code`.

Metrics (linear gains, as trec_eval): `ndcg_at_k` (log2 discount, ideal ordering of the judged gains),
`recall_at_k` (relevant documents in the top k over all relevant), `mrr_at_k` (reciprocal rank of the first
relevant document in the top k, else 0). A document id repeated in a ranking counts at its first rank only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tests import datasets

Doc = tuple[str, str, str]
Query = tuple[str, str]
Qrels = dict[str, dict[str, int]]
Loaded = tuple[list[Doc], list[Query], Qrels]

IR_FILES: dict[str, tuple[str, ...]] = {
    "cranfield": ("ir/cranfield/cran.all.1400", "ir/cranfield/cran.qry", "ir/cranfield/cranqrel"),
    "npl": ("ir/npl/doc-text", "ir/npl/query-text", "ir/npl/rlv-ass"),
    "cisi": ("ir/cisi/CISI.ALL", "ir/cisi/CISI.QRY", "ir/cisi/CISI.REL"),
}
MINILM_FILES: dict[str, tuple[str, ...]] = {
    name: tuple(
        f"ir/{name}/{f}"
        for f in (
            "minilm_doc_ids.txt",
            "minilm_docs.f16.npy",
            "minilm_query_ids.txt",
            "minilm_queries.f16.npy",
        )
    )
    for name in ("cranfield", "npl")
}

_FIELD = re.compile(r"\.([A-Z])\s*$")


def _lines(name: str) -> Iterator[str]:
    # the collections predate UTF-8: latin-1 reads every byte
    with datasets.open_text(name, encoding="latin-1") as f:
        yield from f


def _squash(text: str) -> str:
    """Runs of whitespace (line breaks included) as one space, trimmed."""
    return " ".join(text.split())


def smart_records(lines: Iterable[str]) -> list[dict[str, str]]:
    """SMART-format records: `{"I": id, field letter: text}`; lines before the first `.I` are ignored."""
    records: list[dict[str, str]] = []
    field: str | None = None
    for line in lines:
        if line.startswith(".I"):
            records.append({"I": line[2:].strip()})
            field = None
        elif records and (m := _FIELD.match(line)):
            field = m.group(1)
            records[-1].setdefault(field, "")
        elif records and field is not None:
            records[-1][field] += line
    return records


def slash_records(lines: Iterable[str]) -> list[tuple[str, str]]:
    """NPL records: `(id, text)`, the id on the record's first non-blank line, `/` alone ending it."""
    records: list[tuple[str, str]] = []
    current: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped == "/":
            if current:
                records.append((current[0], " ".join(current[1:])))
            current = []
        elif stripped:
            current.append(stripped)
    if current:
        records.append((current[0], " ".join(current[1:])))
    return records


def _judged(queries: list[Query], qrels: Qrels) -> tuple[list[Query], Qrels]:
    """Only the queries with a relevant document, and only their judgments."""
    qrels = {qid: rels for qid, rels in qrels.items() if rels}
    return [q for q in queries if q[0] in qrels], qrels


def load_cranfield() -> Loaded:
    """1,400 aeronautics abstracts, 225 queries, graded judgments (gain 1-4)."""
    docs_file, queries_file, qrels_file = IR_FILES["cranfield"]
    docs = [
        (r["I"], _squash(r.get("T", "")), _squash(r.get("W", ""))) for r in smart_records(_lines(docs_file))
    ]
    queries = [
        (str(pos), _squash(r.get("W", ""))) for pos, r in enumerate(smart_records(_lines(queries_file)), 1)
    ]
    qrels: Qrels = {}
    for line in _lines(qrels_file):
        parts = line.split()
        if len(parts) < 3:
            continue
        qid, doc, code = parts[0], parts[1], int(parts[2])
        if 1 <= code <= 4:
            qrels.setdefault(qid, {})[doc] = 5 - code
    queries, qrels = _judged(queries, qrels)
    return docs, queries, qrels


def load_npl() -> Loaded:
    """11,426 short electronics abstracts (no titles), 93 queries (lowercased: the file is upper case)."""
    docs_file, queries_file, qrels_file = IR_FILES["npl"]
    docs = [(doc_id, "", _squash(text)) for doc_id, text in slash_records(_lines(docs_file))]
    queries = [(qid, _squash(text).lower()) for qid, text in slash_records(_lines(queries_file))]
    qrels = {qid: dict.fromkeys(text.split(), 1) for qid, text in slash_records(_lines(qrels_file))}
    queries, qrels = _judged(queries, qrels)
    return docs, queries, qrels


def load_cisi() -> Loaded:
    """1,460 library-science abstracts, 76 judged queries (title and text of the query), binary judgments."""
    docs_file, queries_file, qrels_file = IR_FILES["cisi"]
    docs = [
        (r["I"], _squash(r.get("T", "")), _squash(r.get("W", ""))) for r in smart_records(_lines(docs_file))
    ]
    queries = [
        (r["I"], _squash(r.get("T", "") + " " + r.get("W", ""))) for r in smart_records(_lines(queries_file))
    ]
    qrels: Qrels = {}
    for line in _lines(qrels_file):
        parts = line.split()
        if len(parts) >= 2:
            qrels.setdefault(parts[0], {})[parts[1]] = 1
    queries, qrels = _judged(queries, qrels)
    return docs, queries, qrels


IR_LOADERS: dict[str, Callable[[], Loaded]] = {
    "cranfield": load_cranfield,
    "npl": load_npl,
    "cisi": load_cisi,
}


@dataclass
class MiniLM:
    """all-MiniLM-L6-v2 embeddings (384 dimensions, L2-normalised) of a collection, as float32 rows."""

    doc_ids: list[str]
    docs: Any  # np.ndarray (documents, 384)
    query_ids: list[str]  # query ids as the loaders number them
    queries: Any  # np.ndarray (queries, 384)


def load_minilm(name: str) -> MiniLM:
    doc_ids, docs, query_ids, queries = MINILM_FILES[name]
    return MiniLM(
        datasets.read_text(doc_ids).split(),
        np.asarray(datasets.load_npy(docs), dtype=np.float32),
        datasets.read_text(query_ids).split(),
        np.asarray(datasets.load_npy(queries), dtype=np.float32),
    )


# -- metrics ---------------------------------------------------------------------------------------


def _first_ranks(ranked: Sequence[str], k: int) -> Iterator[tuple[int, str]]:
    """(0-based rank, doc id) of the top k, a repeated id yielded at its first rank only."""
    seen: set[str] = set()
    for rank, doc in enumerate(ranked[:k]):
        if doc not in seen:
            seen.add(doc)
            yield rank, doc


def ndcg_at_k(ranked: Sequence[str], rels: dict[str, int], k: int = 10) -> float:
    """DCG of the top k (gain / log2(rank + 1), ranks from 1) over the DCG of the ideal top k; 0 without relevant."""
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    if idcg == 0:
        return 0.0
    dcg = sum(rels[d] / math.log2(i + 2) for i, d in _first_ranks(ranked, k) if rels.get(d, 0) > 0)
    return dcg / idcg


def recall_at_k(ranked: Sequence[str], rels: dict[str, int], k: int = 100) -> float:
    """Share of the relevant documents found in the top k; 0 without relevant documents."""
    relevant = {d for d, g in rels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], rels: dict[str, int], k: int = 10) -> float:
    """1 / rank of the first relevant document in the top k (ranks from 1), else 0."""
    for rank, doc in enumerate(ranked[:k]):
        if rels.get(doc, 0) > 0:
            return 1.0 / (rank + 1)
    return 0.0


def evaluate(run: dict[str, list[str]], qrels: Qrels) -> dict[str, float]:
    """Means of NDCG@10, Recall@100 and MRR@10 over every judged query (one with a relevant document).

    A judged query missing from `run` scores 0 (an empty ranking), so a partial run never looks better;
    `n_queries` counts the judged queries the run answered (callers assert it covers them all).
    """
    judged = [qid for qid, rels in qrels.items() if any(g > 0 for g in rels.values())]
    n = len(judged) or 1
    return {
        "ndcg@10": sum(ndcg_at_k(run.get(q, []), qrels[q], 10) for q in judged) / n,
        "recall@100": sum(recall_at_k(run.get(q, []), qrels[q], 100) for q in judged) / n,
        "mrr@10": sum(mrr_at_k(run.get(q, []), qrels[q], 10) for q in judged) / n,
        "n_queries": sum(1 for q in judged if q in run),
    }
