"""Search equals a brute-force scan, whatever the history of the index.

After random adds, replacements, partial updates and deletes of small documents over a small
vocabulary (spread over one or several write transactions, the in-process `Index`), the documents
a query matches with `matchingStrategy: all` and typos disabled are exactly those whose tokenized
words contain every query word (the last one as a prefix unless the query ends with a space), minus
those containing a negated word; a placeholder search returns every document. No word of the
vocabulary is a concatenation of two others, so split words and ngrams cannot add matches.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.documents.fields import flatten
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search.engine import search
from hanzo_engine.engine.search.types import SearchRequest
from hanzo_engine.engine.tokenizer import Tokenizer

VOCABULARY = ["alpha", "Bravo", "charlie", "délta", "echo", "golf", "hotel", "kilo", "lima", "oscar"]
TOKENIZER = Tokenizer()
WORDS = [TOKENIZER.normalize(w) for w in VOCABULARY]

text = st.lists(st.sampled_from(VOCABULARY), max_size=5).map(" ".join)
fields = st.fixed_dictionaries(
    {},
    optional={
        "title": text,
        "body": st.one_of(text, st.lists(text, max_size=3)),
        "meta": st.fixed_dictionaries({"note": text}),
        "count": st.integers(0, 3),
    },
)
doc_id = st.integers(0, 7)
operation: st.SearchStrategy[tuple[str, int, dict[str, Any]]] = st.one_of(
    st.tuples(st.just("put"), doc_id, fields),
    st.tuples(st.just("update"), doc_id, fields),
    st.tuples(st.just("delete"), doc_id, st.just({})),
)
batches = st.lists(st.lists(operation, min_size=1, max_size=6), min_size=1, max_size=4)
queries = st.tuples(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.booleans(),
    st.lists(st.sampled_from(WORDS), max_size=1),
    st.integers(1, 4),
)


def apply(state: dict[str, dict[str, Any]], op: tuple[str, int, dict[str, Any]]) -> None:
    kind, i, body = op
    key = str(i)
    if kind == "put":
        state[key] = {"id": i, **body}
    elif kind == "update":
        state[key] = {**state.get(key, {}), "id": i, **body}
    else:
        state.pop(key, None)


def words_of(document: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for value in flatten(document).values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                out.extend(TOKENIZER.words(item))
            elif isinstance(item, int) and not isinstance(item, bool):
                out.append(str(item))
    return out


def brute_force(
    state: dict[str, dict[str, Any]], terms: list[str], prefix: bool, negated: list[str]
) -> set[int]:
    found = set()
    for doc in state.values():
        words = words_of(doc)
        exact = terms[:-1] if prefix else terms
        if not all(t in words for t in exact):
            continue
        if prefix and not any(w.startswith(terms[-1]) for w in words):
            continue
        if any(n in words for n in negated):
            continue
        found.add(doc["id"])
    return found


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=batches, checks=st.lists(queries, min_size=1, max_size=6))
def test_search_matches_brute_force(
    batches: list[list[tuple[str, int, dict[str, Any]]]], checks: list[tuple[list[str], bool, list[str], int]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.create(Path(tmp) / "idx", primary_key="id", created_at=0)
        try:
            with index.write() as w:
                w.set_settings({"typoTolerance": {"enabled": False}})
            state: dict[str, dict[str, Any]] = {}
            for batch in batches:
                with index.write() as w:
                    for op in batch:
                        apply(state, op)
                        kind, i, body = op
                        if kind == "delete":
                            w.delete_document(str(i))
                        else:
                            w.put_document(str(i), {"id": i, **body}, merge=kind == "update")
            with index.read() as reader:
                cfg = complete_settings(reader.settings())

                def run(q: str | None, limit: int = 100) -> tuple[set[int], int]:
                    result = search(reader, SearchRequest(q=q, limit=limit, matching_strategy="all"), cfg)
                    ids = {reader.document_by_internal_id(d)["id"] for d in result.docids}  # type: ignore[index]
                    return ids, result.candidates

                everything, count = run(None)
                assert everything == {d["id"] for d in state.values()}
                assert count == len(state)
                for terms, prefix, negated, slice_len in checks:
                    q = " ".join(terms) + ("" if prefix else " ")
                    if negated:
                        q = f"-{negated[0]} {q}"
                    expected = brute_force(state, terms, prefix, negated)
                    ids, candidates = run(q)
                    assert ids == expected, q
                    assert candidates == len(expected), q
                    # a shorter page is the head of the same ranking
                    head, _ = run(q, slice_len)
                    assert head <= ids and len(head) == min(slice_len, len(ids))
        finally:
            index.close()
