"""Random filters over random documents select exactly what a plain Python predicate selects.

The predicate below is written from docs/api-contract.md (§5.3), independently of the engine: strings are
compared on their normalized form (NFKD of the trimmed value, lowercased), a literal that parses as
a finite number also compares with numbers, comparisons cover numbers numerically and strings in
byte order, booleans are the strings `true`/`false`, `!=` and `NOT` are complements over every
document, `EXISTS` is "the key is there", `IS NULL` a direct `null`, `IS EMPTY` a direct `""`, `[]`
or `{}`. The engine answers from its facet structures only; the documents are written through
several transactions (adds, replacements, deletions) so that the structures' maintenance is exercised
too.
"""

from __future__ import annotations

import math
import tempfile
import unicodedata
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search.filter import FilterContext
from hanzo_engine.engine.update.settings_hook import reindex_for_settings
from hanzo_engine.filter_parser import parse_filter, quote

FIELDS = ("a", "b", "c", "o.x")
WORDS = ("apple", "Apple", " apple ", "Éclair", "eclair", "b", "ba", "12", "12.5", "-3", "true", "zz")
NUMBERS = (-3, 0, 1, 2, 12, 12.5, 100)

scalar = st.one_of(st.sampled_from(WORDS), st.sampled_from(NUMBERS), st.booleans(), st.none())
value: st.SearchStrategy[Any] = st.one_of(
    scalar,
    st.just(""),
    st.just([]),
    st.just({}),
    st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(NUMBERS), st.booleans()), max_size=3),
)


@st.composite
def documents(draw: Any) -> list[dict[str, Any]]:
    docs = []
    for i in range(draw(st.integers(1, 12))):
        doc: dict[str, Any] = {"id": i}
        for name in ("a", "b", "c"):
            if draw(st.booleans()):
                doc[name] = draw(value)
        if draw(st.booleans()):
            doc["o"] = {"x": draw(scalar)} if draw(st.booleans()) else {}
        docs.append(doc)
    return docs


literal = st.one_of(st.sampled_from(WORDS), st.sampled_from([str(n) for n in NUMBERS]), st.just("1e1"))


@st.composite
def conditions(draw: Any) -> tuple[str, Any]:
    """(filter text, node description for the reference)."""
    field = draw(st.sampled_from(FIELDS))
    op = draw(
        st.sampled_from(
            [
                "=",
                "!=",
                ">",
                ">=",
                "<",
                "<=",
                "TO",
                "IN",
                "NOT IN",
                "EXISTS",
                "NOT EXISTS",
                "IS NULL",
                "IS NOT NULL",
                "IS EMPTY",
                "IS NOT EMPTY",
                "STARTS WITH",
                "NOT STARTS WITH",
                "CONTAINS",
                "NOT CONTAINS",
            ]
        )
    )
    if op in ("=", "!=", ">", ">=", "<", "<="):
        lit = draw(literal)
        return f"{field} {op} {quote(lit)}", (op, field, lit)
    if op == "TO":
        lo, hi = draw(literal), draw(literal)
        return f"{field} {quote(lo)} TO {quote(hi)}", (op, field, (lo, hi))
    if op in ("IN", "NOT IN"):
        lits = draw(st.lists(literal, max_size=3))
        return f"{field} {op} [{', '.join(quote(x) for x in lits)}]", (op, field, lits)
    if op in ("STARTS WITH", "NOT STARTS WITH", "CONTAINS", "NOT CONTAINS"):
        lit = draw(st.sampled_from(["a", "ap", "ÉC", "", "2", "ue", "zzz"]))
        return f"{field} {op} {quote(lit)}", (op, field, lit)
    return f"{field} {op}", (op, field, None)


def filters() -> st.SearchStrategy[tuple[str, Any]]:
    def extend(inner: st.SearchStrategy[tuple[str, Any]]) -> st.SearchStrategy[tuple[str, Any]]:
        binary = st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
            lambda t: (f"({t[0][0]}) {t[1]} ({t[2][0]})", (t[1], t[0][1], t[2][1]))
        )
        negated = inner.map(lambda t: (f"NOT ({t[0]})", ("NOT", t[1])))
        return st.one_of(binary, negated)

    return st.recursive(conditions(), extend, max_leaves=6)


# -- the reference ------------------------------------------------------------------------------


def norm(text: str) -> str:
    return unicodedata.normalize("NFKD", text.strip()).lower()


def number(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) and text.strip() == text and "_" not in text else None


MISSING = object()


def raw(doc: dict[str, Any], field: str) -> Any:
    if field == "o.x":
        o = doc.get("o", MISSING)
        return o.get("x", MISSING) if isinstance(o, dict) else MISSING
    return doc.get(field, MISSING)


def values(doc: dict[str, Any], field: str) -> tuple[list[float], list[str]]:
    """(numbers, normalized strings) a document has for a field."""
    v = raw(doc, field)
    items = v if isinstance(v, list) else [v]
    nums: list[float] = []
    strs: list[str] = []
    for item in items:
        if isinstance(item, bool):
            strs.append("true" if item else "false")
        elif isinstance(item, (int, float)):
            nums.append(float(item))
        elif isinstance(item, str) and item != "":
            strs.append(norm(item))
    return nums, strs


def equal(doc: dict[str, Any], field: str, lit: str) -> bool:
    nums, strs = values(doc, field)
    n = number(lit)
    return norm(lit) in strs or (n is not None and n in nums)


def compare(a: Any, op: str, b: Any) -> bool:
    return {">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b}[op]


def matches(doc: dict[str, Any], node: Any, known: set[str]) -> bool:
    """Whether `doc` matches; `known` = the fields some document of the index ever had (a condition
    on another field selects nothing, even `!=`: Meilisearch stops at its fields map)."""
    op = node[0]
    if op in ("AND", "OR"):
        left, right = matches(doc, node[1], known), matches(doc, node[2], known)
        return (left and right) if op == "AND" else (left or right)
    if op == "NOT":
        return not matches(doc, node[1], known)
    _, field, arg = node
    if field not in known:
        return op in (
            "NOT IN",
            "NOT EXISTS",
            "IS NOT NULL",
            "IS NOT EMPTY",
            "NOT STARTS WITH",
            "NOT CONTAINS",
        )
    nums, strs = values(doc, field)
    v = raw(doc, field)
    if op == "=":
        return equal(doc, field, arg)
    if op == "!=":
        return not equal(doc, field, arg)
    if op in (">", ">=", "<", "<="):
        n = number(arg)
        return (n is not None and any(compare(x, op, n) for x in nums)) or any(
            compare(s.encode(), op, norm(arg).encode()) for s in strs
        )
    if op == "TO":
        lo, hi = number(arg[0]), number(arg[1])
        nlo, nhi = norm(arg[0]).encode(), norm(arg[1]).encode()
        return (lo is not None and hi is not None and any(lo <= x <= hi for x in nums)) or any(
            nlo <= s.encode() <= nhi for s in strs
        )
    if op in ("IN", "NOT IN"):
        found = any(equal(doc, field, x) for x in arg)
        return found if op == "IN" else not found
    if op in ("EXISTS", "NOT EXISTS"):
        return (v is not MISSING) == (op == "EXISTS")
    if op in ("IS NULL", "IS NOT NULL"):
        return (v is None) == (op == "IS NULL")
    if op in ("IS EMPTY", "IS NOT EMPTY"):
        empty = v is not MISSING and v is not None and not isinstance(v, (bool, int, float)) and len(v) == 0
        return empty == (op == "IS EMPTY")
    if op in ("STARTS WITH", "NOT STARTS WITH"):
        prefix = norm(arg)
        found = (v is not MISSING) if prefix == "" else any(s.startswith(prefix) for s in strs)
        return found == (op == "STARTS WITH")
    needle = norm(arg)
    found = any(needle in s for s in strs)
    return found == (op == "CONTAINS")


# -- the property -------------------------------------------------------------------------------

SETTINGS = complete_settings({"filterableAttributes": ["a", "b", "c", "o"]})


def build(path: Path, docs: list[dict[str, Any]], order: list[int]) -> Index:
    """The index of `docs`, written in three transactions with some churn on the way."""
    index = Index.create(path, primary_key="id", created_at=0)
    with index.write() as w:
        reindex_for_settings(w, complete_settings({}), SETTINGS)
        w.set_settings(SETTINGS)
        w.touch()
    with index.write() as w:
        for i in order:  # first a wrong version of some documents, then the right one
            w.put_document(str(docs[i]["id"]), {"id": docs[i]["id"], "a": "zz", "c": [1, "b"]}, merge=False)
        w.put_document("999", {"id": 999, "a": "apple"}, merge=False)
        w.touch()
    with index.write() as w:
        for doc in docs:
            w.put_document(str(doc["id"]), doc, merge=False)
        w.delete_document("999")
        w.touch()
    return index


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=documents(), cases=st.lists(filters(), min_size=1, max_size=8), data=st.data())
def test_random_filters_match_the_predicate(
    docs: list[dict[str, Any]], cases: list[tuple[str, Any]], data: st.DataObject
) -> None:
    order = data.draw(st.lists(st.integers(0, len(docs) - 1), max_size=len(docs)))
    with tempfile.TemporaryDirectory() as tmp:
        index = build(Path(tmp) / "idx", docs, order)
        try:
            with index.read() as r:
                context = FilterContext(r, SETTINGS)
                ids = {d: int((r.document_by_internal_id(d) or {})["id"]) for d in r.documents_ids()}
                known = {f for doc in docs for f in FIELDS if raw(doc, f) is not MISSING} | {"a"}
                if order:
                    known.add("c")
                for text, node in cases:
                    parsed = parse_filter(text)
                    assert parsed is not None
                    got = sorted(ids[d] for d in context.evaluate(parsed))
                    expected = [doc["id"] for doc in docs if matches(doc, node, known)]
                    assert got == expected, (text, docs)
        finally:
            index.close()
