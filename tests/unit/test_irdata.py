"""`benchmarks.irdata`: the ranking metrics against hand-computed values and their properties, the
record parsers on small inputs, and the shipped collections loading with their known sizes."""

from __future__ import annotations

import math

import pytest
from benchmarks import irdata
from hypothesis import given
from hypothesis import strategies as st

from tests import datasets

LOG2_3 = math.log2(3)


# -- NDCG@k ------------------------------------------------------------------------------------------


def test_ndcg_hand_computed() -> None:
    rels = {"a": 3, "b": 1}
    # DCG = 1/log2(2) + 3/log2(4) = 2.5; ideal [3, 1]: 3 + 1/log2(3)
    assert irdata.ndcg_at_k(["b", "x", "a"], rels) == pytest.approx(2.5 / (3 + 1 / LOG2_3))
    assert irdata.ndcg_at_k(["a", "b"], rels) == pytest.approx(1.0)
    assert irdata.ndcg_at_k(["x", "a"], {"a": 1}) == pytest.approx(1 / LOG2_3)
    # graded gains are linear (trec_eval), not 2^g - 1: [1, 3] scores 1 + 3/log2(3) over 3 + 1/log2(3)
    assert irdata.ndcg_at_k(["b", "a"], rels) == pytest.approx((1 + 3 / LOG2_3) / (3 + 1 / LOG2_3))


def test_ndcg_cutoff_and_ideal_limited_to_k() -> None:
    assert irdata.ndcg_at_k([*"xxxxxxxxxx", "a"], {"a": 1}) == 0.0  # rank 11 is outside the top 10
    assert irdata.ndcg_at_k(["x", "a"], {"a": 1}, k=1) == 0.0
    # twelve relevant documents: the ideal DCG holds only the top k, so a perfect top 2 scores 1
    rels = {f"d{i}": 1 for i in range(12)}
    assert irdata.ndcg_at_k(["d0", "d1"], rels, k=2) == pytest.approx(1.0)


def test_ndcg_repeated_document_counts_once() -> None:
    assert irdata.ndcg_at_k(["a", "a"], {"a": 1, "b": 1}) == pytest.approx(1 / (1 + 1 / LOG2_3))


def test_ndcg_without_relevant_documents_is_zero() -> None:
    assert irdata.ndcg_at_k(["a"], {}) == 0.0
    assert irdata.ndcg_at_k([], {"a": 2}) == 0.0


# -- Recall@k and MRR@k --------------------------------------------------------------------------------


def test_recall_hand_computed() -> None:
    rels = dict.fromkeys("abcd", 1)
    assert irdata.recall_at_k(["a", "x", "c"], rels) == 0.5
    assert irdata.recall_at_k(["a", "x", "c"], rels, k=1) == 0.25
    assert irdata.recall_at_k(["a", "a", "a"], rels) == 0.25
    assert irdata.recall_at_k(["x"] * 100 + ["a"], rels) == 0.0  # default k is 100
    assert irdata.recall_at_k(["a"], {}) == 0.0


def test_mrr_hand_computed() -> None:
    rels = {"a": 1, "b": 2}
    assert irdata.mrr_at_k(["x", "y", "a", "b"], rels) == pytest.approx(1 / 3)
    assert irdata.mrr_at_k(["b"], rels) == 1.0
    assert irdata.mrr_at_k(["x", "y", "a"], rels, k=2) == 0.0
    assert irdata.mrr_at_k(["x"] * 10 + ["a"], rels) == 0.0  # default k is 10
    assert irdata.mrr_at_k(["a"], {"a": 0}) == 0.0  # a zero gain is not relevant


def test_evaluate_means_over_judged_queries() -> None:
    qrels = {"1": {"a": 1}, "2": {"b": 1, "c": 1}, "3": {}}  # query 3 has no relevant document
    run = {"1": ["a"], "3": ["a"]}
    metrics = irdata.evaluate(run, qrels)
    # query 2 is judged but missing from the run: it counts as an empty ranking
    assert metrics == {"ndcg@10": 0.5, "recall@100": 0.5, "mrr@10": 0.5, "n_queries": 1}
    run["2"] = ["x", "b", "c"]
    metrics = irdata.evaluate(run, qrels)
    ndcg_2 = (1 / LOG2_3 + 1 / 2) / (1 + 1 / LOG2_3)
    assert metrics["ndcg@10"] == pytest.approx((1 + ndcg_2) / 2)
    assert metrics["recall@100"] == 1.0
    assert metrics["mrr@10"] == pytest.approx((1 + 1 / 2) / 2)
    assert metrics["n_queries"] == 2


# -- properties --------------------------------------------------------------------------------------

doc_ids = st.sampled_from([f"d{i}" for i in range(30)])
gains = st.dictionaries(doc_ids, st.integers(0, 4), max_size=20)
rankings = st.lists(doc_ids, max_size=40)


@given(rankings, gains, st.integers(1, 20))
def test_metrics_lie_in_unit_interval(ranked: list[str], rels: dict[str, int], k: int) -> None:
    for value in (
        irdata.ndcg_at_k(ranked, rels, k),
        irdata.recall_at_k(ranked, rels, k),
        irdata.mrr_at_k(ranked, rels, k),
    ):
        assert 0.0 <= value <= 1.0 + 1e-12


@given(gains, st.integers(1, 20))
def test_ideal_ranking_scores_one(rels: dict[str, int], k: int) -> None:
    ideal = sorted((d for d, g in rels.items() if g > 0), key=lambda d: -rels[d])
    if not ideal:
        return
    assert irdata.ndcg_at_k(ideal, rels, k) == pytest.approx(1.0)
    assert irdata.mrr_at_k(ideal, rels, k) == 1.0
    assert irdata.recall_at_k(ideal, rels, len(ideal)) == 1.0


@given(rankings, gains)
def test_recall_grows_with_k(ranked: list[str], rels: dict[str, int]) -> None:
    values = [irdata.recall_at_k(ranked, rels, k) for k in range(1, 42)]
    assert values == sorted(values)


@given(rankings, gains, st.integers(1, 20))
def test_mrr_is_the_first_relevant_rank(ranked: list[str], rels: dict[str, int], k: int) -> None:
    ranks = [i + 1 for i, d in enumerate(ranked[:k]) if rels.get(d, 0) > 0]
    assert irdata.mrr_at_k(ranked, rels, k) == (1 / ranks[0] if ranks else 0.0)


@given(rankings, gains)
def test_irrelevant_suffix_changes_nothing_in_the_top_k(ranked: list[str], rels: dict[str, int]) -> None:
    padded = ranked + ["zz"] * 5
    assert irdata.ndcg_at_k(padded, rels) == irdata.ndcg_at_k(ranked, rels)
    assert irdata.mrr_at_k(padded, rels) == irdata.mrr_at_k(ranked, rels)


# -- parsers and the shipped collections ----------------------------------------------------------------


def test_smart_records() -> None:
    lines = [
        "ignored preamble\n",
        ".I 7\n",
        ".T \n",
        "A title\n",
        "on two lines\n",
        ".W\n",
        "body\n",
        ".I 8\n",
        ".W\n",
        "other\n",
    ]
    assert irdata.smart_records(lines) == [
        {"I": "7", "T": "A title\non two lines\n", "W": "body\n"},
        {"I": "8", "W": "other\n"},
    ]


def test_slash_records() -> None:
    lines = ["\n", "1\n", "first line\n", "  second  \n", "   /\n", "2\n", "text\n", "/\n", "3\n", "last\n"]
    assert irdata.slash_records(lines) == [("1", "first line second"), ("2", "text"), ("3", "last")]


@pytest.mark.parametrize(
    ("name", "n_docs", "n_queries", "n_judgments"),
    [("cranfield", 1400, 225, 1612), ("npl", 11426, 93, 2083), ("cisi", 1460, 76, 3114)],
)
def test_shipped_collections(name: str, n_docs: int, n_queries: int, n_judgments: int) -> None:
    docs, queries, qrels = irdata.IR_LOADERS[name]()
    assert (len(docs), len(queries), sum(len(r) for r in qrels.values())) == (n_docs, n_queries, n_judgments)
    doc_ids = {d for d, _, _ in docs}
    assert len(doc_ids) == n_docs
    assert {q for q, _ in queries} == set(qrels)
    assert all(text for _, text in queries)
    assert all(set(rels) <= doc_ids and all(g > 0 for g in rels.values()) for rels in qrels.values())


def test_cranfield_queries_are_numbered_by_position() -> None:
    """cranqrel numbers queries 1..225 by their order in cran.qry, whose `.I` numbers skip values."""
    _, queries, qrels = irdata.load_cranfield()
    assert [q for q, _ in queries] == [str(i) for i in range(1, 226)]
    # the third query of the file is `.I 004`: ids follow the position, not the `.I` number
    assert queries[2] == (
        "3",
        "what problems of heat conduction in composite slabs have been solved so far .",
    )
    assert qrels["1"]["184"] == 3  # "1 184 2": Cleverdon code 2, gain 5 - 2
    assert max(g for rels in qrels.values() for g in rels.values()) == 4


def test_npl_queries_lowercased() -> None:
    _, queries, _ = irdata.load_npl()
    assert queries[0] == (
        "1",
        "measurement of dielectric constant of liquids by the use of microwave techniques",
    )


@pytest.mark.parametrize("name", ["cranfield", "npl"])
def test_minilm_vectors_match_the_collection(name: str) -> None:
    docs, queries, _ = irdata.IR_LOADERS[name]()
    vectors = irdata.load_minilm(name)
    assert vectors.docs.shape == (len(docs), 384) and vectors.docs.dtype.name == "float32"
    assert vectors.doc_ids == [d for d, _, _ in docs]
    assert {q for q, _ in queries} <= set(vectors.query_ids)
    assert vectors.queries.shape == (len(vectors.query_ids), 384)
    norms = (vectors.docs[:50] ** 2).sum(axis=1)
    assert norms == pytest.approx([1.0] * 50, abs=1e-2)  # L2-normalised (float16 rounding)


def test_collection_files_are_known_datasets() -> None:
    for files in (*irdata.IR_FILES.values(), *irdata.MINILM_FILES.values()):
        assert datasets.missing(*files) is None
