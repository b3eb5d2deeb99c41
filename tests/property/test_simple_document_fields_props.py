"""`simple_document_fields` (the indexer's path for documents of scalars and lists of scalars) gives
what `document_fields(flatten(document))` gives: the same fields and texts, and the same fids registered
in the same order (or None, registering nothing, for a document it does not take)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine._native.doc_fields import document_fields, simple_document_fields
from hanzo_engine.engine.documents.fields import flatten

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
names = st.sampled_from(["a", "b", "a.b", "_vectors", "_vectors.x", "_vectorsx", "é", "c.d.e"])
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
documents = st.lists(st.dictionaries(names, values, max_size=6), min_size=1, max_size=4)


@settings(max_examples=300)
@given(documents)
def test_same_fields_and_fids_as_flatten_then_document_fields(docs: list[dict[str, Any]]) -> None:
    fid_of: dict[str, int] = {}
    fields: list[str] = []
    ref_fid_of: dict[str, int] = {}
    ref_fields: list[str] = []
    for doc in docs:
        expected = document_fields(flatten(doc), ref_fid_of, ref_fields)
        before = (dict(fid_of), list(fields))
        got = simple_document_fields(doc, fid_of, fields)
        if got is None:
            assert (fid_of, fields) == before  # nothing registered
            assert any(
                type(v) is dict or (type(v) is list and any(type(x) in (dict, list) for x in v))
                for v in doc.values()
            )
            got = document_fields(flatten(doc), fid_of, fields)
        assert got == expected
        assert fid_of == ref_fid_of
        assert fields == ref_fields
