"""Document payloads: Content-Type negotiation and conversion of JSON / NDJSON / CSV to NDJSON.

`payload_format` maps a request's Content-Type and `csvDelimiter` to a `PayloadFormat` with
Meilisearch's errors (the delimiter is checked first, as Meilisearch parses query parameters
before looking at the header).

`convert_to_ndjson` validates a whole payload synchronously, before any task exists, and writes it
as normalized NDJSON: one compact JSON object per line, keys in document order, encoded by msgspec.
It returns the number of documents. Errors are Meilisearch's:

* empty body: 400 `missing_payload` ("A json payload is missing.", ...);
* JSON / NDJSON: 400 `malformed_payload` with serde_json's message and position (see
  `json_scan`), or "data are neither an object nor a list of objects" for well-formed values that
  are not documents. msgspec does the reading; only a payload msgspec refuses is re-read by the
  slower `json_scan` model to phrase the error exactly. Meilisearch quirks kept on purpose: bytes
  after a top-level JSON array are ignored, an empty array is 0 documents, NDJSON is a stream of
  whitespace-separated values (one per line in practice), and a whitespace-only body is
  "EOF while parsing a value" for JSON but 0 documents for NDJSON and CSV.
* CSV: Meilisearch's `read_csv` over the `csv` crate: a header row of field names, optionally typed
  `name:number`, `name:boolean` or `name:string` (split on the last `:`; an unknown type keeps the
  whole header as the name); RFC 4180 quoting; empty lines skipped; every record must have as many
  fields as the header. Empty cells are null; numbers and booleans are trimmed, parsed as i64 then
  f64 (non-finite floats become null, as serde_json does) and `true`/`false`; strings are kept
  verbatim.

Where Meilisearch itself answers 500 (an array element or NDJSON value that is not an object), this
module answers the `malformed_payload` "neither an object nor a list of objects" error instead.

`read_documents` reads such a file back a chunk of documents at a time.
"""

from __future__ import annotations

import csv
import enum
import io
import re
import sys
import typing
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Final

import msgspec

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.documents.json_scan import NotAnObject, scan_json, scan_ndjson, scan_value_strict
from hanzo_engine.rustcompat.floats import parse_f64
from hanzo_engine.rustcompat.serde_json import INVALID_UNICODE, JsonSyntaxError, syntax_error_at
from hanzo_engine.rustcompat.strings import debug_str, trim

__all__ = [
    "ACCEPTED_CONTENT_TYPES",
    "PayloadFormat",
    "check_csv_delimiter",
    "convert_to_ndjson",
    "payload_format",
    "read_document_fields",
    "read_documents",
]


class PayloadFormat(enum.Enum):
    """The document payload formats Meilisearch accepts; the value is its name in messages."""

    JSON = "json"
    NDJSON = "ndjson"
    CSV = "csv"


ACCEPTED_CONTENT_TYPES: Final = ("application/json", "application/x-ndjson", "text/csv")
_ACCEPTED: Final = ", ".join(f"`{t}`" for t in ACCEPTED_CONTENT_TYPES)
_FORMATS: Final = {
    ("application", "json"): PayloadFormat.JSON,
    ("application", "x-ndjson"): PayloadFormat.NDJSON,
    ("text", "csv"): PayloadFormat.CSV,
}

# RFC 7230 token: what the `mime` crate accepts in a type, subtype or parameter name.
_TOKEN: Final = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_ESSENCE_RE: Final = re.compile(rf"({_TOKEN})/({_TOKEN})")
_PARAM_RE: Final = re.compile(rf"\s*{_TOKEN}=(?:{_TOKEN}|\"(?:[^\"\\]|\\.)*\")\s*")

_FLUSH_BYTES: Final = 1 << 20
# Lines of an update file decoded at a time by `read_documents`.
_READ_BYTES: Final = 1 << 20

_decoder: Final = msgspec.json.Decoder()
_raw_list_decoder: Final = msgspec.json.Decoder(list[msgspec.Raw])
_encoder: Final = msgspec.json.Encoder()
# Everything msgspec may raise on bad input (UnicodeDecodeError: invalid UTF-8 in a string).
_DECODE_ERRORS: Final = (msgspec.DecodeError, UnicodeDecodeError, RecursionError, ValueError)


# -- Content-Type ----------------------------------------------------------------------------


def _parse_mime(content_type: str) -> tuple[str, str] | None:
    """(type, subtype) lowercased, or None when the `mime` crate would refuse the header."""
    essence, *params = content_type.strip().split(";")
    m = _ESSENCE_RE.fullmatch(essence.rstrip())
    if m is None:
        return None
    for param in params:
        if param.strip() and not _PARAM_RE.fullmatch(param):
            return None
    return m.group(1).lower(), m.group(2).lower()


def check_csv_delimiter(csv_delimiter: str) -> bytes:
    """The `csvDelimiter` query value as one byte: deserr's `char` parsing, then Meilisearch's ASCII check."""
    # lengths count characters, not bytes
    if not csv_delimiter:
        raise MeiliError(
            "invalid_document_csv_delimiter",
            "Invalid value in parameter `csvDelimiter`: expected a string of one character, "
            "but found an empty string",
        )
    if len(csv_delimiter) > 1:
        raise MeiliError(
            "invalid_document_csv_delimiter",
            "Invalid value in parameter `csvDelimiter`: expected a string of one character, but "
            f"found the following string of {len(csv_delimiter)} characters: `{csv_delimiter}`",
        )
    if not csv_delimiter.isascii():
        raise MeiliError(
            "invalid_document_csv_delimiter",
            f"csv delimiter must be an ascii character. Found: `{csv_delimiter}`",
        )
    return csv_delimiter.encode("ascii")


def payload_format(content_type: str | None, csv_delimiter: str | None) -> tuple[PayloadFormat, bytes]:
    """The payload format named by a Content-Type header, and the CSV delimiter byte (default `,`).

    `content_type` is the raw header value (None when absent); parameters such as `charset` are
    accepted and ignored. `csv_delimiter` is the raw `csvDelimiter` query value (None when absent).
    """
    delimiter = None if csv_delimiter is None else check_csv_delimiter(csv_delimiter)
    if content_type is None:
        raise MeiliError(
            "missing_content_type",
            f"A Content-Type header is missing. Accepted values for the Content-Type header are: {_ACCEPTED}",
        )
    mime = _parse_mime(content_type)
    fmt = None if mime is None else _FORMATS.get(mime)
    if fmt is None:
        shown = content_type if mime is None else f"{mime[0]}/{mime[1]}"
        raise MeiliError(
            "invalid_content_type",
            f"The Content-Type `{shown}` is invalid. Accepted values for the Content-Type header are: {_ACCEPTED}",
        )
    if delimiter is not None and fmt is not PayloadFormat.CSV:
        assert mime is not None
        raise MeiliError(
            "invalid_content_type",
            f"The Content-Type `{mime[0]}/{mime[1]}` does not support the use of a csv delimiter. "
            "The csv delimiter can only be used with the Content-Type `text/csv`.",
        )
    return fmt, delimiter or b","


# -- errors ----------------------------------------------------------------------------------


def _missing_payload(fmt: PayloadFormat) -> MeiliError:
    return MeiliError("missing_payload", f"A {fmt.value} payload is missing.")


def _json_malformed(fmt: PayloadFormat, reason: str) -> MeiliError:
    # Meilisearch shortens long serde messages (issue #2107): keep 50 bytes, "...", the last 85.
    if len(reason) > 50 + 85 + 3:
        reason = reason[:50] + "..." + reason[-85:]
    return MeiliError(
        "malformed_payload",
        f"The `{fmt.value}` payload provided is malformed. `Couldn't serialize document value: {reason}`.",
    )


def _not_an_object(fmt: PayloadFormat) -> MeiliError:
    return _json_malformed(fmt, "data are neither an object nor a list of objects")


def _csv_malformed(detail: str) -> MeiliError:
    return MeiliError("malformed_payload", f"The `csv` payload provided is malformed: `{detail}`.")


# -- writing ---------------------------------------------------------------------------------


class _NdjsonWriter:
    """Buffers encoded documents and hands them to `out` in ~1 MiB writes."""

    __slots__ = ("buf", "count", "out")

    def __init__(self, out: typing.BinaryIO) -> None:
        self.out = out
        self.buf = bytearray()
        self.count = 0

    def write(self, document: dict[str, Any]) -> None:
        _encoder.encode_into(document, self.buf, -1)
        self.buf += b"\n"
        self.count += 1
        if len(self.buf) >= _FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.out.write(self.buf)
            self.buf = bytearray()


def convert_to_ndjson(body: bytes, fmt: PayloadFormat, out: typing.BinaryIO, delimiter: bytes = b",") -> int:
    """Validate the whole payload and write it to `out` as NDJSON; the number of documents.

    Documents are decoded, checked and written one at a time, so memory stays proportional to one
    document plus a 1 MiB write buffer. On `MeiliError` (`missing_payload` / `malformed_payload`)
    `out` may already hold part of the conversion: write to a temporary file and discard it on
    error, as Meilisearch does with its update file.
    """
    if not body:
        raise _missing_payload(fmt)
    if fmt is PayloadFormat.CSV:
        documents = _csv_documents(body, delimiter)
    elif fmt is PayloadFormat.JSON:
        documents = _json_documents(body)
    else:
        documents = _ndjson_documents(body)
    writer = _NdjsonWriter(out)
    for document in documents:
        writer.write(document)
    writer.flush()
    return writer.count


def _line_blocks(path: Path, chunk_bytes: int) -> Iterator[bytes]:
    """The bytes of an update file, about `chunk_bytes` at a time, each cut at a line end."""
    with open(path, "rb") as f:
        pending: list[bytes] = []  # the start of the line the last block ended in
        while block := f.read(chunk_bytes):
            cut = block.rfind(b"\n") + 1
            if not cut:
                pending.append(block)
                continue
            pending.append(block[:cut])
            yield b"".join(pending)
            pending = [block[cut:]]
        tail = b"".join(pending)
        if tail.strip():
            yield tail


def read_documents(path: Path, chunk_bytes: int = _READ_BYTES) -> Iterator[list[dict[str, Any]]]:
    """The documents of an update file (`convert_to_ndjson`'s output: one object per line), decoded
    about `chunk_bytes` of lines at a time, so a task holds one chunk of its payload decoded, never all
    of it."""
    for block in _line_blocks(path, chunk_bytes):
        if documents := _decoder.decode_lines(block):
            yield documents


@lru_cache(maxsize=16)
def _fields_decoder(names: tuple[str, ...]) -> tuple[msgspec.json.Decoder[Any], tuple[str, ...]]:
    """A decoder of objects into a struct of the top-level fields `names` (attributes f0, f1, ...,
    UNSET when absent): msgspec skips every other field without building its value."""
    attrs = tuple(f"f{i}" for i in range(len(names)))
    struct = msgspec.defstruct(
        "DocumentFields",
        [(a, Any, msgspec.UNSET) for a in attrs],
        rename=dict(zip(attrs, names, strict=True)),
    )
    return msgspec.json.Decoder(struct), attrs


def read_document_fields(
    path: Path, names: tuple[str, ...], chunk_bytes: int = _READ_BYTES
) -> Iterator[list[dict[str, Any]]]:
    """`read_documents`, each document reduced to those of its top-level fields named in `names`:
    several times faster when a pass needs a few fields of every document (ids, `_geo`, `_vectors`)."""
    names = tuple(dict.fromkeys(names))  # one attribute per field
    decoder, attrs = _fields_decoder(names)
    named = tuple(zip(names, attrs, strict=True))
    unset = msgspec.UNSET
    for block in _line_blocks(path, chunk_bytes):
        if structs := decoder.decode_lines(block):
            yield [
                {name: value for name, attr in named if (value := getattr(s, attr)) is not unset}
                for s in structs
            ]


# -- JSON / NDJSON ---------------------------------------------------------------------------

_LEADING_WS: Final = re.compile(rb"[ \t\n\r]*")
_SERDE_RECURSION_LIMIT: Final = 128
_MSGSPEC_BYTE_RE: Final = re.compile(r"\(byte (\d+)\)")
_NEXT_ELEMENT: Final = re.compile(rb"[ \t\n\r]*,[ \t\n\r]*\{")
# Each attempt re-decodes the prefix (C speed); give up before that costs more than a re-read.
_RESUME_ATTEMPTS: Final = 4
_RESUME_CANDIDATES: Final = 1000


def _json_documents(body: bytes) -> Iterator[dict[str, Any]]:
    m = _LEADING_WS.match(body)
    first = m.end() if m else 0
    if first < len(body) and body[first] == 0x5B:  # `[`
        # Raw elements: msgspec checks the whole array's syntax at C speed without building
        # every document at once; each element is then decoded, checked and written in turn.
        try:
            raws = _raw_list_decoder.decode(body)
        except _DECODE_ERRORS as exc:
            yield from _json_array_after_error(body, _error_offset(exc, body))
            return
        yield from _raw_documents(body, raws, rest=None)
        return
    try:
        value = _decoder.decode(body)
    except _DECODE_ERRORS:
        yield from _slow_documents(body, PayloadFormat.JSON)
        return
    if type(value) is not dict:
        raise _not_an_object(PayloadFormat.JSON)
    if _nesting_exceeds(value, _SERDE_RECURSION_LIMIT):
        # A single object is read by serde_json's full parser, which stops at 128 levels.
        yield from _slow_documents(body, PayloadFormat.JSON)
        return
    yield value


def _error_offset(exc: Exception, body: bytes) -> int:
    m = _MSGSPEC_BYTE_RE.search(str(exc))
    return int(m.group(1)) if m else len(body)


def _raw_documents(
    body: bytes, raws: list[msgspec.Raw], rest: Callable[[], object] | None
) -> Iterator[dict[str, Any]]:
    """Decode array elements msgspec found well-formed; each must be an object.

    `rest` re-reads whatever follows these elements in the payload (None: nothing does).
    """
    for index, raw in enumerate(raws):
        try:
            document = _decoder.decode(raw)
        except _DECODE_ERRORS as exc:
            # An identical earlier text would have failed first: the first occurrence is this one.
            data = bytes(raw)
            start = body.find(data)
            end = start + len(data)
            if isinstance(exc, UnicodeDecodeError):
                # serde_json checks a raw element's UTF-8 as a whole once it has read all of it.
                raise _json_malformed(
                    PayloadFormat.JSON, str(syntax_error_at(body, INVALID_UNICODE, end))
                ) from None
            # Meilisearch keeps such a value raw and would go on: its own later errors come first.
            for later in raws[index + 1 :]:
                if memoryview(later)[0] != 0x7B:
                    raise _not_an_object(PayloadFormat.JSON) from None
            if rest is not None:
                rest()
            raise _value_error(body, start, end, PayloadFormat.JSON, exc) from None
        if type(document) is not dict:
            raise _not_an_object(PayloadFormat.JSON)
        yield document


def _value_error(body: bytes, start: int, end: int, fmt: PayloadFormat, exc: Exception) -> MeiliError:
    """The error for a well-formed value msgspec refused (lone surrogate, huge number, depth).

    Meilisearch keeps values raw and accepts these; a decoded document cannot hold them, so they
    are refused with serde_json's full-parser message.
    """
    if start >= 0:
        try:
            scan_value_strict(body, start, end)
        except JsonSyntaxError as syntax:
            return _json_malformed(fmt, str(syntax))
    return _json_malformed(fmt, str(exc))


def _json_array_after_error(body: bytes, error_at: int) -> Iterator[dict[str, Any]]:
    """Documents of a top-level array msgspec refused (Meilisearch may still accept it).

    Re-reading from the start in Python is slow on a large payload, so first look for an element
    boundary shortly before the reported error (`}`, `,`, `{`: documents are objects); if the
    prefix up to it is a valid array, its elements come from msgspec and only the rest is re-read
    by the serde_json model.
    """
    pos = error_at
    attempts = 0
    for _ in range(_RESUME_CANDIDATES):
        pos = body.rfind(b"}", 0, pos)
        if pos < 0 or attempts == _RESUME_ATTEMPTS:
            break
        if not _NEXT_ELEMENT.match(body, pos + 1):
            continue
        attempts += 1
        try:
            prefix = _raw_list_decoder.decode(body[: pos + 1] + b"]")
        except _DECODE_ERRORS:
            continue  # a nested object, or a `}` inside a string
        resume_at = pos + 1
        yield from _raw_documents(body, prefix, rest=partial(_scan, body, PayloadFormat.JSON, resume_at))
        yield from _documents_from_spans(body, _scan(body, PayloadFormat.JSON, resume_at), PayloadFormat.JSON)
        return
    yield from _slow_documents(body, PayloadFormat.JSON)


def _nesting_exceeds(value: dict[str, Any], limit: int) -> bool:
    """True when containers nest `limit` deep or more (the outermost object counts as 1)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        container, depth = stack.pop()
        if depth >= limit:
            return True
        for child in container.values() if type(container) is dict else container:
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))
    return False


def _ndjson_documents(body: bytes) -> Iterator[dict[str, Any]]:
    decode = _decoder.decode
    size = len(body)
    pos = 0
    while pos < size:
        newline = body.find(b"\n", pos)
        end = size if newline < 0 else newline + 1
        line = body[pos:end]
        if line.strip(b" \t\r\n"):
            try:
                document = decode(line)
            except _DECODE_ERRORS:
                # Not exactly one value on this line: an error, or values spread over lines or
                # sharing one. The stream model reads from here until a value ends its line.
                try:
                    spans, end = scan_ndjson(body, pos, stop_at_line_end=True)
                except JsonSyntaxError as exc:
                    raise _json_malformed(PayloadFormat.NDJSON, str(exc)) from None
                except NotAnObject:
                    raise _not_an_object(PayloadFormat.NDJSON) from None
                yield from _documents_from_spans(
                    body, spans, PayloadFormat.NDJSON, rest=partial(_scan, body, PayloadFormat.NDJSON, end)
                )
                pos = end
                continue
            if type(document) is not dict:
                raise _not_an_object(PayloadFormat.NDJSON)
            yield document
        pos = end


def _scan(body: bytes, fmt: PayloadFormat, resume_at: int | None = None) -> list[tuple[int, int]]:
    """Document spans by the serde_json model, its errors turned into Meilisearch's.

    `resume_at` continues a JSON array after an element, or an NDJSON stream between values.
    """
    try:
        if fmt is PayloadFormat.JSON:
            return scan_json(body, resume_at)
        return scan_ndjson(body, resume_at or 0)[0]
    except JsonSyntaxError as exc:
        raise _json_malformed(fmt, str(exc)) from None
    except NotAnObject:
        raise _not_an_object(fmt) from None


def _documents_from_spans(
    body: bytes,
    spans: list[tuple[int, int]],
    fmt: PayloadFormat,
    rest: Callable[[], object] | None = None,
) -> Iterator[dict[str, Any]]:
    """Decode spans the serde_json model read; `rest` re-reads what follows them, if anything."""
    view = memoryview(body)
    for start, end in spans:
        try:
            document = _decoder.decode(view[start:end])
        except _DECODE_ERRORS as exc:
            # Meilisearch would go on reading (the value is fine raw): its later errors come first.
            if rest is not None:
                rest()
            raise _value_error(body, start, end, fmt, exc) from None
        yield document


def _slow_documents(body: bytes, fmt: PayloadFormat) -> Iterator[dict[str, Any]]:
    """Meilisearch's reading of a whole payload msgspec refused: its exact error, or its documents."""
    yield from _documents_from_spans(body, _scan(body, fmt), fmt)


# -- CSV -------------------------------------------------------------------------------------

_I64_RE: Final = re.compile(r"[+-]?[0-9]+", re.ASCII)
_I64_MIN: Final = -(2**63)
_I64_MAX: Final = 2**63 - 1
_SURROGATE_RE: Final = re.compile("[\udc80-\udcff]")

# A huge quoted cell is data, not an attack vector: the body size limit already bounds it.
csv.field_size_limit(sys.maxsize)


def _parse_number(value: str, line: int) -> Any:
    if value.isascii() and value.isdigit():  # the common case: a plain non-negative integer
        integer = int(value)
        if integer <= _I64_MAX:
            return integer
    trimmed = trim(value)
    if not trimmed:
        return None
    if _I64_RE.fullmatch(trimmed):
        integer = int(trimmed)
        if _I64_MIN <= integer <= _I64_MAX:
            return integer
    number = parse_f64(trimmed)
    if number is not None:
        # serde_json turns a non-finite f64 into null.
        return number if number - number == 0.0 else None
    raise _csv_malformed(f"Error parsing number {debug_str(value)} at line {line}: invalid float literal")


def _parse_boolean(value: str, line: int) -> Any:
    trimmed = trim(value)
    if not trimmed:
        return None
    if trimmed == "true":
        return True
    if trimmed == "false":
        return False
    raise _csv_malformed(
        f"Error parsing boolean {debug_str(value)} at line {line}: provided string was not `true` or `false`"
    )


def _parse_header(header: str) -> tuple[str, Callable[[str, int], Any] | None]:
    name, sep, kind = header.rpartition(":")
    if sep:
        if kind == "number":
            return name, _parse_number
        if kind == "boolean":
            return name, _parse_boolean
        if kind == "string":
            return name, None
    return header, None


class _LineSource:
    """Feeds `csv.reader` one line at a time and remembers how many characters it consumed.

    `csv.reader` pulls lines only as it needs them, so the count taken before a `next()` is where
    the next record starts. Only used to locate an error, so the hot path stays in C.
    """

    __slots__ = ("consumed", "lines")

    def __init__(self, text: str) -> None:
        self.lines = iter(io.StringIO(text, newline=""))
        self.consumed = 0

    def __iter__(self) -> _LineSource:
        return self

    def __next__(self) -> str:
        line = next(self.lines)
        self.consumed += len(line)
        return line


def _csv_reader(lines: Iterable[str], delimiter: str) -> Iterator[list[str]]:
    # csv-core's dialect: `"` quotes, `""` escapes a quote, no escape character, no trimming.
    return csv.reader(lines, delimiter=delimiter, quotechar='"', doublequote=True, strict=False)


def _record_position(text: str, delimiter: str, record: int) -> tuple[int, int]:
    """(line, byte) where the `record`-th non-empty record of `text` starts, as the csv crate says.

    The csv crate counts lines by `\n` and offsets in bytes, and a record's position is taken
    where the previous record ended (before any empty lines it then skips).
    """
    source = _LineSource(text)
    start = 0
    seen = 0
    for row in _csv_reader(source, delimiter):
        if not row:
            continue
        if seen == record:
            break
        seen += 1
        start = source.consumed
    prefix = text[:start]
    return prefix.count("\n") + 1, len(prefix.encode("utf-8", errors="surrogateescape"))


def _csv_documents(body: bytes, delimiter: bytes) -> Iterator[dict[str, Any]]:
    try:
        text = body.decode("utf-8")
        check_utf8 = False
    except UnicodeDecodeError:
        # Decode anyway so the records before the bad bytes are read (and checked) in order.
        text = body.decode("utf-8", errors="surrogateescape")
        check_utf8 = True
    if text.startswith("\ufeff"):  # the csv crate skips a UTF-8 byte order mark
        text = text[1:]
    sep = delimiter.decode("ascii")
    try:
        reader = _csv_reader(io.StringIO(text, newline=""), sep)
    except (TypeError, csv.Error) as exc:
        raise _csv_malformed(f"CSV error: {exc}") from None

    record = 0
    names: list[str] | None = None
    converters: list[tuple[int, Callable[[str, int], Any]]] = []
    expected = 0
    line = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            at_line, byte = _record_position(text, sep, record)
            raise _csv_malformed(
                f"CSV error: record {record} (line: {at_line}, byte: {byte}): {exc}"
            ) from None
        if not row:
            continue  # an empty line, which the csv crate skips too
        if names is not None and len(row) != expected:
            at_line, byte = _record_position(text, sep, record)
            raise _csv_malformed(
                f"CSV error: record {record} (line: {at_line}, byte: {byte}): found record with {len(row)} "
                f"fields, but the previous record has {expected} fields"
            )
        if check_utf8:
            _check_record_utf8(row, record, text, sep)
        if names is None:
            expected = len(row)
            typed = [_parse_header(header) for header in row]
            names = [name for name, _ in typed]
            converters = [(i, convert) for i, (_, convert) in enumerate(typed) if convert is not None]
        else:
            line += 1
            values: list[Any] = [cell if cell else None for cell in row]
            for i, convert in converters:
                values[i] = convert(row[i], line)
            yield dict(zip(names, values, strict=True))
        record += 1


def _check_record_utf8(row: list[str], record: int, text: str, sep: str) -> None:
    for field, cell in enumerate(row):
        m = _SURROGATE_RE.search(cell)
        if m is not None:
            line, byte = _record_position(text, sep, record)
            valid_up_to = len(cell[: m.start()].encode("utf-8"))
            raise _csv_malformed(
                f"CSV parse error: record {record} (line {line}, field: {field}, byte: {byte}): "
                f"invalid utf-8: invalid UTF-8 in field {field} near byte index {valid_up_to}"
            )
