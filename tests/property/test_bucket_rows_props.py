"""`_native.bucket_rows.rank_rows` and `order_rows` (the native selection of a keyed bucket's best rows,
`native_bucket_keys.NativeBuckets._select`) against a plain-Python reference: sorted by the keys then
docid, cut after `want` rows plus the rows tying the want-th on every key; then ties put in order by
BM25 descending, then docid."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine._native.bucket_rows import order_rows, rank_rows


@st.composite
def keyed(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    n = draw(st.integers(0, 120))
    n_cols = draw(st.integers(1, 4))
    spread = draw(st.integers(1, 4))  # few distinct key values: many ties
    cols = np.array(
        draw(
            st.lists(
                st.lists(st.integers(-spread, spread), min_size=n_cols, max_size=n_cols),
                min_size=n,
                max_size=n,
            )
        ),
        dtype=np.int64,
    ).reshape(n, n_cols)
    docids = np.array(
        draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True)), dtype=np.int64
    )
    raw = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.25, 3.0]), min_size=n, max_size=n)))
    want = draw(st.integers(0, 40))
    return cols, docids, raw, want


def reference_rank(cols: np.ndarray, docids: np.ndarray, want: int) -> tuple[list[int], list[bool]]:
    order = sorted(range(len(docids)), key=lambda i: (tuple(cols[i]), docids[i]))
    if want <= 0:
        return [], []
    if len(order) > want:
        cut = tuple(cols[order[want - 1]])
        order = [i for i in order if tuple(cols[i]) <= cut]
    tied = [sum(tuple(cols[j]) == tuple(cols[i]) for j in order) > 1 for i in order]
    return order, tied


@settings(max_examples=300, deadline=None)
@given(keyed())
def test_rank_rows_matches_reference(case: tuple[np.ndarray, np.ndarray, np.ndarray, int]) -> None:
    cols, docids, _, want = case
    rows, tied = rank_rows(cols, docids, want)
    expected_rows, expected_tied = reference_rank(cols, docids, want)
    assert rows.tolist() == expected_rows
    assert tied.tolist() == expected_tied


@settings(max_examples=300, deadline=None)
@given(keyed())
def test_order_rows_matches_reference(case: tuple[np.ndarray, np.ndarray, np.ndarray, int]) -> None:
    cols, docids, raw, want = case
    rows, _ = rank_rows(cols, docids, want)
    got = order_rows(cols, raw, docids, rows, want).tolist()
    full = sorted(range(len(docids)), key=lambda i: (tuple(cols[i]), -raw[i], docids[i]))
    assert got == full[: max(want, 0)]
