"""Document payloads: Content-Type negotiation and JSON / NDJSON / CSV conversion to NDJSON.

Expected messages come from Meilisearch's own integration-test snapshots where they exist
(`tests/documents/add_documents.rs`, `tests/documents/errors.rs`), otherwise from serde_json's
and the csv crate's error rules.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.documents.json_scan import JsonSyntaxError, scan_json
from hanzo_engine.engine.documents.payload import (
    PayloadFormat,
    convert_to_ndjson,
    payload_format,
    read_document_fields,
    read_documents,
)

ACCEPTED = "`application/json`, `application/x-ndjson`, `text/csv`"
JSON, NDJSON, CSV = PayloadFormat.JSON, PayloadFormat.NDJSON, PayloadFormat.CSV


def convert(body: bytes, fmt: PayloadFormat, delimiter: bytes = b",") -> list[dict[str, Any]]:
    out = io.BytesIO()
    count = convert_to_ndjson(body, fmt, out, delimiter)
    lines = out.getvalue().splitlines()
    assert len(lines) == count
    return [msgspec.json.decode(line) for line in lines]


def error_of(body: bytes, fmt: PayloadFormat, delimiter: bytes = b",") -> tuple[str, str]:
    with pytest.raises(MeiliError) as info:
        convert_to_ndjson(body, fmt, io.BytesIO(), delimiter)
    return info.value.code, info.value.message


def json_error(reason: str, fmt: str = "json") -> tuple[str, str]:
    return (
        "malformed_payload",
        f"The `{fmt}` payload provided is malformed. `Couldn't serialize document value: {reason}`.",
    )


NOT_AN_OBJECT = "data are neither an object nor a list of objects"


# -- Content-Type ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/json", JSON),
        ("application/x-ndjson", NDJSON),
        ("text/csv", CSV),
        ("application/json; charset=utf-8", JSON),
        ("text/csv;charset=UTF-8", CSV),
        ("Application/JSON", JSON),
        ('text/csv; charset="utf-8"; header=present', CSV),
    ],
)
def test_accepted_content_types(content_type: str, expected: PayloadFormat) -> None:
    assert payload_format(content_type, None) == (expected, b",")


def test_missing_content_type() -> None:
    with pytest.raises(MeiliError) as info:
        payload_format(None, None)
    assert info.value.code == "missing_content_type"
    assert info.value.status == 415
    assert info.value.message == (
        f"A Content-Type header is missing. Accepted values for the Content-Type header are: {ACCEPTED}"
    )


@pytest.mark.parametrize(
    ("content_type", "shown"),
    [
        ("doggo", "doggo"),  # not a mime type at all: the raw header is echoed
        ("text/plain", "text/plain"),
        ("text/plain; charset=utf-8", "text/plain"),  # parsed: only type/subtype are echoed
        ("TEXT/Plain", "text/plain"),
        ("", ""),
        ("application/json, text/csv", "application/json, text/csv"),
    ],
)
def test_invalid_content_type(content_type: str, shown: str) -> None:
    with pytest.raises(MeiliError) as info:
        payload_format(content_type, None)
    assert info.value.code == "invalid_content_type"
    assert info.value.status == 415
    assert info.value.message == (
        f"The Content-Type `{shown}` is invalid. Accepted values for the Content-Type header are: {ACCEPTED}"
    )


def test_csv_delimiter_is_returned_for_csv() -> None:
    assert payload_format("text/csv", ";") == (CSV, b";")
    assert payload_format("text/csv", "\t") == (CSV, b"\t")


@pytest.mark.parametrize(
    ("delimiter", "message"),
    [
        (
            "",
            "Invalid value in parameter `csvDelimiter`: expected a string of one character, but found an empty string",
        ),
        (
            "doggo",
            "Invalid value in parameter `csvDelimiter`: expected a string of one character, but found the "
            "following string of 5 characters: `doggo`",
        ),
        (
            "🍰🍰",
            "Invalid value in parameter `csvDelimiter`: expected a string of one character, but found the "
            "following string of 2 characters: `🍰🍰`",
        ),
        ("🍰", "csv delimiter must be an ascii character. Found: `🍰`"),
    ],
)
def test_bad_csv_delimiter(delimiter: str, message: str) -> None:
    # The query parameter is checked before the header, whatever the header says.
    for content_type in ("application/json", "text/csv", None):
        with pytest.raises(MeiliError) as info:
            payload_format(content_type, delimiter)
        assert info.value.code == "invalid_document_csv_delimiter"
        assert info.value.status == 400
        assert info.value.message == message


@pytest.mark.parametrize("content_type", ["application/json", "application/x-ndjson; charset=utf-8"])
def test_csv_delimiter_with_non_csv_content_type(content_type: str) -> None:
    with pytest.raises(MeiliError) as info:
        payload_format(content_type, "a")
    essence = content_type.split(";")[0]
    assert info.value.code == "invalid_content_type"
    assert info.value.status == 415
    assert info.value.message == (
        f"The Content-Type `{essence}` does not support the use of a csv delimiter. "
        "The csv delimiter can only be used with the Content-Type `text/csv`."
    )


# -- empty payloads ----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(PayloadFormat))
def test_empty_body_is_a_missing_payload(fmt: PayloadFormat) -> None:
    code, message = error_of(b"", fmt)
    assert code == "missing_payload"
    assert message == f"A {fmt.value} payload is missing."


def test_whitespace_only_body() -> None:
    # Meilisearch only treats a zero-length body as missing; serde_json then reads the rest.
    assert error_of(b"  \n", JSON) == json_error("EOF while parsing a value at line 2 column 0")
    assert convert(b" \n\r\n", NDJSON) == []
    assert convert(b"\n\n", CSV) == []


# -- JSON ------------------------------------------------------------------------------------


def test_json_array_and_single_object() -> None:
    body = b'[{"id": 1, "title": "a"}, {"id": 2, "nested": {"z": 1, "a": [1, 2.5, null, true]}}]'
    assert convert(body, JSON) == [
        {"id": 1, "title": "a"},
        {"id": 2, "nested": {"z": 1, "a": [1, 2.5, None, True]}},
    ]
    assert convert(b' {"id": "x"} ', JSON) == [{"id": "x"}]
    assert convert(b"[]", JSON) == []
    assert convert(b" [ ] ", JSON) == []


def test_output_is_compact_ndjson_in_key_order() -> None:
    out = io.BytesIO()
    count = convert_to_ndjson(b'[ {"z": 1,  "a": "\\u00e9\xc3\xa9", "m": {"y": 1, "b": 2}} ]', JSON, out)
    assert count == 1
    assert out.getvalue() == '{"z":1,"a":"éé","m":{"y":1,"b":2}}\n'.encode()


def test_meilisearch_malformed_json_snapshot() -> None:
    assert error_of(b'[{"id": 1}, {id: 2}]', JSON) == json_error("key must be a string at line 1 column 14")


def test_json_values_that_are_not_documents() -> None:
    long = "0123456789" * 10
    for body in [
        f'"{long}"',
        f'"{long}m"',
        "null",
        "42",
        "-1.5",
        "true",
        "[1, 2]",
        '[{"a": 1}, "x"]',
        "[[]]",
    ]:
        assert error_of(body.encode(), JSON) == json_error(NOT_AN_OBJECT), body


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[", "EOF while parsing a list at line 1 column 1"),
        (b'[{"a": 1}', "EOF while parsing a list at line 1 column 9"),
        (b'[{"a": 1},]', "trailing comma at line 1 column 11"),
        (b'[{"a": 1} {"b": 2}]', "expected `,` or `]` at line 1 column 11"),
        (b'[{"a" 1}]', "expected `:` at line 1 column 7"),
        (b'[{"a": 1,}]', "key must be a string at line 1 column 10"),
        (b'[{"a": 1 "b": 2}]', "expected `,` or `}` at line 1 column 10"),
        (b'[{"a": tru}]', "expected ident at line 1 column 11"),
        (b'[{"a": 01}]', "invalid number at line 1 column 9"),
        (b'[{"a": 1.}]', "invalid number at line 1 column 10"),
        (b'[{"a": -}]', "invalid number at line 1 column 9"),
        (b"[-", "invalid number at line 1 column 2"),
        (b'[{"a": "\\x"}]', "invalid escape at line 1 column 10"),
        (b'[{"a": "\\u12G4"}]', "invalid escape at line 1 column 13"),
        (b'[{"a": "b', "EOF while parsing a string at line 1 column 9"),
        (
            b'[{"a": "x\ny"}]',
            "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 9",
        ),
        (b'[{"a": "\xff"}]', "invalid unicode code point at line 1 column 11"),
        (b'[{"a": 1e400}]', "number out of range at line 1 column 12"),
        (b'[{"a": "\\udc00"}]', "lone leading surrogate in hex escape at line 1 column 14"),
        (b'[\n  {"a": 1},\n  {"b": 2,\n}]', "key must be a string at line 4 column 1"),
        (b'{"a": 1} x', "trailing characters at line 1 column 10"),
        (b'{"a": 1,}', "trailing comma at line 1 column 9"),
        (
            b'{"a": "x\ny"}',
            "control character (\\u0000-\\u001F) found while parsing a string at line 2 column 0",
        ),
        (b'{"a": 1e400}', "number out of range at line 1 column 11"),
        (b'{"a": "\\ud800"}', "unexpected end of hex escape at line 1 column 14"),
        (b'{"a": [1, 2,]}', "trailing comma at line 1 column 13"),
        (b"tru", "EOF while parsing a value at line 1 column 3"),
        (b"nulx", "expected ident at line 1 column 4"),
        (b'"abc', "EOF while parsing a string at line 1 column 4"),
        (b"\xef\xbb\xbf[]", "expected value at line 1 column 1"),
        (b"x", "expected value at line 1 column 1"),
    ],
)
def test_json_syntax_errors_match_serde_json(body: bytes, reason: str) -> None:
    assert error_of(body, JSON) == json_error(reason)


def test_bytes_after_the_top_level_array_are_ignored() -> None:
    # Meilisearch's read_json stops at the array's closing bracket.
    assert convert(b'[{"a": 1}] trailing garbage {', JSON) == [{"a": 1}]


def test_single_object_depth_limit() -> None:
    depth_ok = b'{"a": ' + b"[" * 126 + b"]" * 126 + b"}"
    assert len(convert(depth_ok, JSON)) == 1
    too_deep = b'{"a": ' + b"[" * 127 + b"]" * 127 + b"}"
    assert error_of(too_deep, JSON) == json_error("recursion limit exceeded at line 1 column 133")
    # Array elements are raw values for Meilisearch: no 128 limit there.
    element = b'[{"a": ' + b"[" * 200 + b"]" * 200 + b"}]"
    assert len(convert(element, JSON)) == 1


def big_array(count: int) -> bytes:
    return msgspec.json.encode(
        [{"id": i, "title": f"document {i}", "tags": [{"k": i}, {"k": -i}]} for i in range(count)]
    )


def test_error_late_in_a_large_array_matches_a_full_reread() -> None:
    body = big_array(5000)
    broken = body[:-2] + b",}]"  # the last object ends with a trailing comma
    expected = error_of(broken, JSON)
    with pytest.raises(JsonSyntaxError) as info:
        scan_json(broken)
    assert expected == json_error(str(info.value))
    assert info.value.reason == "key must be a string"
    assert info.value.column == len(broken) - 1


def test_large_array_with_trailing_garbage_keeps_every_document() -> None:
    documents = convert(big_array(3000) + b"\n}}garbage", JSON)
    assert len(documents) == 3000
    assert documents[-1] == {"id": 2999, "title": "document 2999", "tags": [{"k": 2999}, {"k": -2999}]}


def test_non_object_element_before_a_syntax_error_wins() -> None:
    body = b"[" + b",".join([b'{"id": 1}'] * 100 + [b"7"] + [b'{"id": 2}'] * 100) + b", {oops}]"
    assert error_of(body, JSON) == json_error(NOT_AN_OBJECT)


def test_large_output_is_flushed_completely() -> None:
    body = big_array(40_000)
    assert len(body) > 2 << 20
    out = io.BytesIO()
    assert convert_to_ndjson(body, JSON, out) == 40_000
    expected = b"".join(msgspec.json.encode(d) + b"\n" for d in msgspec.json.decode(body))
    assert out.getvalue() == expected


# -- NDJSON ----------------------------------------------------------------------------------


def test_ndjson_lines() -> None:
    body = b'{"id": 1}\r\n\n   \n{"id": 2, "a": [1, {"b": 2}]}\n{"id": 3}'
    assert convert(body, NDJSON) == [{"id": 1}, {"id": 2, "a": [1, {"b": 2}]}, {"id": 3}]


def test_ndjson_is_a_stream_of_values() -> None:
    # serde_json's StreamDeserializer: values may share a line or span several.
    body = b'{"a": 1}{"b": 2} {"c": 3}\n{"d":\n  [1,\n   2]\n}\n{"e": 5}\n'
    assert convert(body, NDJSON) == [{"a": 1}, {"b": 2}, {"c": 3}, {"d": [1, 2]}, {"e": 5}]


def test_meilisearch_malformed_ndjson_snapshot() -> None:
    assert error_of(b'{"id": 1}\n{id: 2}', NDJSON) == json_error(
        "key must be a string at line 2 column 2", "ndjson"
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"a": 1}\n{"b": 2', "EOF while parsing an object at line 2 column 7"),
        (b'{"a": 1}\n1x\n', "trailing characters at line 2 column 2"),
        (b'{"a": 1}\n{"b": 2} x\n', "expected value at line 2 column 10"),
        (b'{"a": 1},\n', "expected value at line 1 column 9"),
        (b'{"a": "\\ud800"}\n', "unexpected end of hex escape at line 1 column 14"),
    ],
)
def test_ndjson_syntax_errors(body: bytes, reason: str) -> None:
    assert error_of(body, NDJSON) == json_error(reason, "ndjson")


@pytest.mark.parametrize("body", [b'{"a": 1}\n1\n', b"[]\n", b'{"a": 1}\n"x"', b"null"])
def test_ndjson_values_that_are_not_documents(body: bytes) -> None:
    assert error_of(body, NDJSON) == json_error(NOT_AN_OBJECT, "ndjson")


# -- CSV -------------------------------------------------------------------------------------


def csv_error(detail: str) -> tuple[str, str]:
    return "malformed_payload", f"The `csv` payload provided is malformed: `{detail}`."


def test_meilisearch_malformed_csv_snapshots() -> None:
    assert error_of(b"id, content\n1234, hello, world\n12, hello world", CSV) == csv_error(
        "CSV error: record 1 (line: 2, byte: 12): found record with 3 fields, but the previous record has 2 fields"
    )
    assert error_of(b"#id:number,a:boolean,b:number\n0,doggo,1", CSV) == csv_error(
        'Error parsing boolean "doggo" at line 1: provided string was not `true` or `false`'
    )
    assert error_of(b"#id:number,a:boolean,b:number\n0,true,doggo", CSV) == csv_error(
        'Error parsing number "doggo" at line 1: invalid float literal'
    )


def test_csv_typed_columns() -> None:
    body = (
        b"id:number,name:string,ok:boolean,other:foo,price:number,plain\n"
        b" 1 ,  bob ,  true ,x,1.5,  kept  \n"
        b"2,,false,,+3,\n"
        b"-4,c,,,1e3,z\n"
    )
    assert convert(body, CSV) == [
        {"id": 1, "name": "  bob ", "ok": True, "other:foo": "x", "price": 1.5, "plain": "  kept  "},
        {"id": 2, "name": None, "ok": False, "other:foo": None, "price": 3, "plain": None},
        {"id": -4, "name": "c", "ok": None, "other:foo": None, "price": 1000.0, "plain": "z"},
    ]


def test_csv_number_parsing_follows_rust() -> None:
    body = b"n:number\n007\n9223372036854775807\n9223372036854775808\n.5\n5.\ninf\nNaN\n-0\n"
    values = [row["n"] for row in convert(body, CSV)]
    assert values == [7, 2**63 - 1, 9.223372036854776e18, 0.5, 5.0, None, None, 0]
    for bad in ["1_000", "0x10", "1e", ".", "١٢"]:
        assert error_of(f"n:number\n{bad}\n".encode(), CSV) == csv_error(
            f'Error parsing number "{bad}" at line 1: invalid float literal'
        )


def test_csv_error_quotes_the_untrimmed_value_like_rust_debug() -> None:
    assert error_of(b'n:boolean\n" yes\t"\n', CSV) == csv_error(
        'Error parsing boolean " yes\\t" at line 1: provided string was not `true` or `false`'
    )
    assert error_of(b'a,n:number\nx,"say ""hi"""\n', CSV) == csv_error(
        'Error parsing number "say \\"hi\\"" at line 1: invalid float literal'
    )


def test_csv_header_type_splits_on_the_last_colon() -> None:
    assert convert(b"a:b:number,c:\n1,2\n", CSV) == [{"a:b": 1, "c:": "2"}]


def test_csv_quoting_delimiter_and_blank_lines() -> None:
    body = b'id;text\r\n1;"a;b"\r\n\r\n2;"multi\nline ""quoted"""\n3;plain"quote\n'
    assert convert(body, CSV, b";") == [
        {"id": "1", "text": "a;b"},
        {"id": "2", "text": 'multi\nline "quoted"'},
        {"id": "3", "text": 'plain"quote'},
    ]


def test_csv_header_only_bom_and_duplicate_columns() -> None:
    assert convert(b"id,name\n", CSV) == []
    assert convert(b"\xef\xbb\xbfid,name\n1,a\n", CSV) == [{"id": "1", "name": "a"}]
    assert convert(b"id,name,name\n1,a,b\n", CSV) == [{"id": "1", "name": "b"}]


def test_csv_record_position_counts_skipped_lines_and_multiline_fields() -> None:
    body = 'id,t\n1,"a\nb"\n\n2,é\n3\n'.encode()
    assert error_of(body, CSV) == csv_error(
        "CSV error: record 3 (line: 6, byte: 19): found record with 1 fields, but the previous record has 2 fields"
    )


def test_csv_invalid_utf8() -> None:
    assert error_of(b"id,name\n1,ok\n2,ab\xffc\n", CSV) == csv_error(
        "CSV parse error: record 2 (line 3, field: 1, byte: 13): invalid utf-8: invalid UTF-8 in field 1 near byte index 2"
    )


def test_meilisearch_errors_after_a_refused_value_come_first() -> None:
    # Meilisearch keeps `"\ud800"` raw and reads on, so its own later error is the one reported.
    assert error_of(b'[{"a": "\\ud800"}, 5]', JSON) == json_error(NOT_AN_OBJECT)
    assert error_of(b'{"a": "\\ud800"}\n}', NDJSON) == json_error(
        "expected value at line 2 column 1", "ndjson"
    )
    body = big_array(2000)[:-1] + b', {"a": "\\ud800"}, {"b": 1} x]'
    assert error_of(body, JSON) == json_error(f"expected `,` or `]` at line 1 column {len(body) - 1}")


@pytest.mark.parametrize("chunk_bytes", [1, 7, 64, 1 << 20])
def test_read_documents_in_chunks(tmp_path: Path, chunk_bytes: int) -> None:
    # lines cut by the chunk boundaries, a line longer than a chunk, blank lines, no final newline
    documents = [{"id": i, "text": "x" * (i * 13 % 50)} for i in range(40)]
    lines = [msgspec.json.encode(d) for d in documents]
    path = tmp_path / "update"
    path.write_bytes(b"\n".join(lines[:20]) + b"\n\n" + b"\n".join(lines[20:]))
    chunks = list(read_documents(path, chunk_bytes))
    assert all(chunks)
    assert [d for chunk in chunks for d in chunk] == documents
    if chunk_bytes == 64:
        assert len(chunks) > 5
    path.write_bytes(b"")
    assert list(read_documents(path, chunk_bytes)) == []


_KEYS = st.sampled_from(["id", "_geo", "_vectors", "title", "my-id", "ïd", "a.b", ""])
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(
    documents=st.lists(st.dictionaries(_KEYS, _VALUES, max_size=5), min_size=1, max_size=30),
    names=st.lists(_KEYS, min_size=1, max_size=4),
    chunk_bytes=st.sampled_from([1, 50, 1 << 20]),
)
def test_read_document_fields_is_read_documents_keeping_those_fields(
    tmp_path_factory: pytest.TempPathFactory,
    documents: list[dict[str, Any]],
    names: list[str],
    chunk_bytes: int,
) -> None:
    path = tmp_path_factory.mktemp("fields") / "update"
    with open(path, "wb") as out:
        convert_to_ndjson(msgspec.json.encode(documents), JSON, out)
    whole = [d for chunk in read_documents(path, chunk_bytes) for d in chunk]
    fields = [d for chunk in read_document_fields(path, tuple(names), chunk_bytes) for d in chunk]
    assert fields == [{k: v for k, v in d.items() if k in names} for d in whole]
