"""A hit served as the stored JSON (`HitMaker.raw_hit`) encodes to exactly the bytes of the hit made from
the decoded document (`HitMaker.make`), on random documents written by the real writer into LMDB, with
and without `_rankingScore` / `_rankingScoreDetails`; and the raw path is only taken when the page shows
every stored field as stored (no top-level name with a dot, which `select_fields` reads as a path too)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanzo_engine.apitypes.search import parse_search_body
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search.types import MatchingWords, SearchResult
from hanzo_engine.server.search import HitMaker

KEYS = st.text(alphabet='abcé_.😀 "\\\n', min_size=1, max_size=6).filter(lambda k: k != "id")
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
DOCUMENTS = st.lists(st.dictionaries(KEYS, VALUES, max_size=5), min_size=1, max_size=6)
SCORES = st.floats(min_value=0.0, max_value=1.0)
DETAILS = st.dictionaries(
    st.sampled_from(["words", "typo", "proximity"]), st.fixed_dictionaries({"score": SCORES})
)

encode = msgspec.json.Encoder().encode


def _hit_pairs(
    docs: list[dict[str, Any]], body: dict[str, Any], score: float, details: dict[str, Any]
) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.create(Path(tmp) / "index", primary_key="id", created_at=0)
        try:
            with index.write() as writer:
                for i, doc in enumerate(docs):
                    writer.put_document(str(i), {"id": i, **doc}, merge=False)
            with index.read() as reader:
                query = parse_search_body(body)
                result = SearchResult([], [], [], 0, MatchingWords())
                maker = HitMaker(reader, query, complete_settings(reader.settings()), result)
                pairs = []
                for docid in reader.documents_ids():
                    stored = reader.stored_document(docid)
                    document = reader.document_by_internal_id(docid)
                    assert stored is not None and document is not None
                    pairs.append((maker, stored, document))
                return [
                    (m.stored_as_is, encode(m.raw_hit(s, score, details)), encode(m.make(d, score, details)))
                    for m, s, d in pairs
                ]
        finally:
            index.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=DOCUMENTS,
    show_score=st.booleans(),
    show_details=st.booleans(),
    score=SCORES,
    details=DETAILS,
)
def test_raw_hits_encode_as_made_hits(
    docs: list[dict[str, Any]], show_score: bool, show_details: bool, score: float, details: dict[str, Any]
) -> None:
    body = {"q": "", "showRankingScore": show_score, "showRankingScoreDetails": show_details}
    dotted = any("." in key for doc in docs for key in doc)
    for stored_as_is, raw, made in _hit_pairs(docs, body, score, details):
        assert stored_as_is != dotted
        if stored_as_is:
            assert raw == made


@settings(max_examples=20, deadline=None)
@given(docs=DOCUMENTS)
def test_a_narrower_page_is_made_from_the_decoded_document(docs: list[dict[str, Any]]) -> None:
    for body in (
        {"attributesToRetrieve": ["id"]},
        {"attributesToHighlight": ["*"]},
        {"showMatchesPosition": True},
        {"retrieveVectors": True},
    ):
        names = {key for doc in docs for key in doc}
        for stored_as_is, _, _ in _hit_pairs(docs, body, 1.0, {}):
            # a page showing only `id` can still be the whole document when nothing else is stored
            assert not stored_as_is or (body == {"attributesToRetrieve": ["id"]} and not names)
