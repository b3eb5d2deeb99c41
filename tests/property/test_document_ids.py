"""Property tests: the native id validator against a reference regex, canonical ids, payload
conversions round-tripping random documents, and damaged payloads answered like a full re-read."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine._native.docid import is_valid_document_id, validate_document_ids
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.documents.json_scan import JsonSyntaxError, NotAnObject, scan_json, scan_ndjson
from hanzo_engine.engine.documents.payload import PayloadFormat, convert_to_ndjson
from hanzo_engine.engine.documents.primary_key import extract_document_id, normalize_document_id

REFERENCE_ID = re.compile(r"[A-Za-z0-9_-]{1,511}")
ID_ALPHABET = "abcXYZ019_-"

# Text that is mostly id characters, with a few that are not, at lengths around the 511 limit.
near_ids = st.one_of(
    st.text(alphabet=ID_ALPHABET, max_size=20),
    st.integers(505, 515).map(lambda n: "a" * n),
    st.text(alphabet=ID_ALPHABET + " é.\x00/\u0660", max_size=20),
    st.builds(lambda n, c: "x" * n + c, st.integers(0, 520), st.sampled_from(["", "a", " ", "é", "\x7f"])),
)
any_text = st.one_of(st.text(), near_ids)


def reference_valid(s: str) -> bool:
    return REFERENCE_ID.fullmatch(s) is not None


@given(any_text)
def test_native_validator_matches_the_reference(s: str) -> None:
    assert is_valid_document_id(s) == reference_valid(s)


@given(st.lists(st.one_of(any_text, st.integers()), max_size=30))
def test_batch_validator_returns_the_first_invalid_index(ids: list[Any]) -> None:
    expected = next((i for i, v in enumerate(ids) if not (isinstance(v, str) and reference_valid(v))), -1)
    assert validate_document_ids(ids) == expected


i64_or_u64 = st.integers(min_value=-(2**63), max_value=2**64 - 1)


@given(i64_or_u64)
def test_integer_ids_and_their_decimal_string_are_the_same_document(n: int) -> None:
    canonical = str(n)
    assert normalize_document_id(n) == canonical
    assert normalize_document_id(canonical) == canonical
    assert extract_document_id({"id": n}, "id") == extract_document_id({"id": canonical}, "id") == canonical
    assert extract_document_id({"a": {"b": n}}, "a.b") == extract_document_id({"a.b": canonical}, "a.b")


@given(st.one_of(i64_or_u64, any_text))
def test_canonical_ids_are_fixed_points(value: Any) -> None:
    canonical = normalize_document_id(value)
    if canonical is not None:
        assert is_valid_document_id(canonical)
        assert normalize_document_id(canonical) == canonical


# -- payload round trips ---------------------------------------------------------------------

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    i64_or_u64,
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(text, children, max_size=4)),
    max_leaves=12,
)
documents = st.lists(st.dictionaries(text, json_values, max_size=6), max_size=8)


def converted(body: bytes, fmt: PayloadFormat) -> list[dict[str, Any]]:
    out = io.BytesIO()
    count = convert_to_ndjson(body, fmt, out)
    lines = out.getvalue().splitlines()
    assert len(lines) == count
    # Normalized output: one compact object per line, exactly msgspec's encoding.
    decoded = [msgspec.json.decode(line) for line in lines]
    assert lines == [msgspec.json.encode(doc) for doc in decoded]
    return decoded


@settings(deadline=None)
@given(documents, st.sampled_from([None, 0, 2]), st.booleans())
def test_json_round_trip(docs: list[dict[str, Any]], indent: int | None, ascii_only: bool) -> None:
    body = json.dumps(docs, indent=indent, ensure_ascii=ascii_only).encode()
    result = converted(body, PayloadFormat.JSON)
    assert result == docs
    assert [list(d) for d in result] == [list(d) for d in docs]  # key order kept
    if len(docs) == 1:
        assert converted(json.dumps(docs[0]).encode(), PayloadFormat.JSON) == docs


@settings(deadline=None)
@given(documents, st.sampled_from(["\n", "\r\n", "\n\n  \n"]), st.booleans())
def test_ndjson_round_trip(docs: list[dict[str, Any]], separator: str, pretty: bool) -> None:
    # Pretty-printed objects span several lines: still one value each for the stream reader.
    lines = [json.dumps(doc, indent=2 if pretty else None) for doc in docs]
    body = separator.join(lines).encode()
    if not body:
        return  # an empty body is a missing payload, tested elsewhere
    assert converted(body, PayloadFormat.NDJSON) == docs


csv_cells = st.tuples(
    st.one_of(st.none(), st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=10)),
    st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1)),
    st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
    st.one_of(st.none(), st.booleans()),
)


@settings(deadline=None)
@given(st.lists(csv_cells, max_size=8), st.sampled_from([",", ";", "\t", "|"]))
def test_csv_round_trip(rows: list[tuple[Any, ...]], delimiter: str) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter)
    writer.writerow(["name", "count:number", "price:number", "ok:boolean"])
    for name, count, price, ok in rows:
        writer.writerow(
            [
                "" if name is None else name,
                "" if count is None else count,
                "" if price is None else repr(price),
                "" if ok is None else str(ok).lower(),
            ]
        )
    out = io.BytesIO()
    convert_to_ndjson(buffer.getvalue().encode(), PayloadFormat.CSV, out, delimiter.encode())
    result = [msgspec.json.decode(line) for line in out.getvalue().splitlines()]
    expected = [{"name": name, "count": count, "price": price, "ok": ok} for name, count, price, ok in rows]
    assert result == expected


# -- damaged payloads: the fast path must answer exactly what a full serde_json re-read answers --

MUTATION_BYTES = b'{}[],:"\\ 0a-e.\n'


def reread(body: bytes, fmt: PayloadFormat) -> tuple[str, object]:
    """What the pure serde_json model says of `body`: ("ok", documents) or ("error", message)."""
    prefix = f"The `{fmt.value}` payload provided is malformed. `Couldn't serialize document value: "
    try:
        spans = scan_json(body) if fmt is PayloadFormat.JSON else scan_ndjson(body)[0]
    except JsonSyntaxError as exc:
        return "error", f"{prefix}{exc}`."
    except NotAnObject:
        return "error", f"{prefix}data are neither an object nor a list of objects`."
    try:
        return "ok", [msgspec.json.decode(body[start:end]) for start, end in spans]
    except (msgspec.DecodeError, UnicodeDecodeError):
        return "value", None  # well-formed for Meilisearch, refused as a value: phrased elsewhere


@settings(deadline=None)
@given(
    st.lists(st.dictionaries(text, json_values, max_size=4), min_size=1, max_size=6),
    st.sampled_from([PayloadFormat.JSON, PayloadFormat.NDJSON]),
    st.data(),
)
def test_damaged_payloads_match_a_full_reread(
    docs: list[dict[str, Any]], fmt: PayloadFormat, data: Any
) -> None:
    if fmt is PayloadFormat.JSON:
        body = bytearray(json.dumps(docs, indent=data.draw(st.sampled_from([None, 1]))).encode())
    else:
        body = bytearray("\n".join(json.dumps(doc) for doc in docs).encode())
    for _ in range(data.draw(st.integers(1, 2))):
        at = data.draw(st.integers(0, len(body) - 1))
        byte = data.draw(st.sampled_from(MUTATION_BYTES))
        match data.draw(st.sampled_from(["delete", "insert", "replace"])):
            case "delete":
                del body[at]
            case "insert":
                body.insert(at, byte)
            case _:
                body[at] = byte
    payload = bytes(body)
    if not payload:
        return
    kind, expected = reread(payload, fmt)
    out = io.BytesIO()
    try:
        convert_to_ndjson(payload, fmt, out)
    except MeiliError as exc:
        assert exc.code == "malformed_payload"
        assert kind != "ok", exc.message
        if kind == "error":
            assert exc.message == expected
        return
    assert kind == "ok"
    assert [msgspec.json.decode(line) for line in out.getvalue().splitlines()] == expected
