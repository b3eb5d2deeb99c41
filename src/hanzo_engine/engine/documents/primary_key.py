"""Primary-key inference and external document ids, as Meilisearch (milli) does them.

Inference (`infer_primary_key`) looks at the *top-level* keys of the first document of a payload and
keeps those whose lowercase form ends with `id`; exactly one candidate is required.

Id extraction (`extract_document_id`) follows the current milli indexer (`FieldAndDocidExtractor`):
the primary key may be a dotted path (`product.sku`), and every way of splitting the path at a dot is
tried against the document's keys, so `{"product.sku": 1}` and `{"product": {"sku": 1}}` both match
`product.sku`. Intermediate values that are not objects are ignored; two matches fail with "too many
matching" ids. A match is then validated: an integer (i64 or u64, not a float, not a bool) becomes its
decimal string, a string must be 1..511 bytes of `[A-Za-z0-9_-]`; anything else is invalid. So `1`
and `"1"` name the same document. The byte check runs in native code (`_native/docid.pyx`).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from hanzo_engine._native.docid import is_valid_document_id
from hanzo_engine.apitypes.errors import MeiliError

__all__ = [
    "document_id_json",
    "extract_document_id",
    "infer_primary_key",
    "invalid_document_id_error",
    "normalize_document_id",
]

# Integers outside this range are floats for serde_json, hence invalid ids in Meilisearch.
_I64_MIN: Final = -(2**63)
_U64_MAX: Final = 2**64 - 1

_PK_HINT: Final = "Please specify the primary key manually using the `primaryKey` query parameter."

_encode = msgspec.json.Encoder().encode


def _compact_json(value: Any) -> str:
    # serde_json's compact form: no spaces, key order kept, non-ASCII left as is (msgspec agrees).
    return _encode(value).decode()


def infer_primary_key(first_document: dict[str, Any]) -> str:
    """The only top-level field of `first_document` whose lowercase name ends with `id`.

    Raises `index_primary_key_no_candidate_found` when there is none and
    `index_primary_key_multiple_candidates_found` when there are several (named in sorted order,
    the first two quoted, as Meilisearch's message).
    """
    candidates = sorted(name for name in first_document if name.lower().endswith("id"))
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise MeiliError(
            "index_primary_key_no_candidate_found",
            "The primary key inference failed as the engine did not find any field ending with `id` "
            f"in its name. {_PK_HINT}",
        )
    raise MeiliError(
        "index_primary_key_multiple_candidates_found",
        f"The primary key inference failed as the engine found {len(candidates)} fields ending with "
        f"`id` in their names: '{candidates[0]}' and '{candidates[1]}'. {_PK_HINT}",
    )


def normalize_document_id(value: Any) -> str | None:
    """The canonical external id for a JSON value, or None when it is not a valid id.

    Strings are returned unchanged when valid; integers (not bools) in the i64/u64 range become
    their decimal string. Used for delete-by-ids and the `ids` browse parameter.
    """
    if type(value) is str:
        return value if is_valid_document_id(value) else None
    if type(value) is int and _I64_MIN <= value <= _U64_MAX:
        return str(value)
    if isinstance(value, str):  # str subclasses: validate their plain-str value
        plain = str.__str__(value)
        return plain if is_valid_document_id(plain) else None
    if isinstance(value, int) and not isinstance(value, bool) and _I64_MIN <= value <= _U64_MAX:
        return str(int(value))
    return None


def document_id_json(value: Any) -> str:
    """How Meilisearch prints an offending id value in messages: its compact JSON."""
    return _compact_json(value)


def invalid_document_id_error(value: Any) -> MeiliError:
    """The `invalid_document_id` error for an id value that `normalize_document_id` rejected."""
    return MeiliError(
        "invalid_document_id",
        f"Document identifier `{document_id_json(value)}` is invalid. A document identifier can be "
        "of type integer or string, only composed of alphanumeric characters (a-z A-Z 0-9), "
        "hyphens (-) and underscores (_), and can not be more than 511 bytes.",
    )


class _TooManyIds(Exception):
    """Two values of one document match the primary key."""


_NOT_FOUND: Final = object()


def _right_part(path: str, key: str) -> str | None:
    """What remains of `path` once `key` matched one of its dot-separated prefixes.

    "" when `key` is the whole path, None when `key` is not a prefix ending at a dot. An empty key
    never matches (milli skips it).
    """
    if not key:
        return None
    if key == path:
        return ""
    if path.startswith(key) and path[len(key)] == ".":
        return path[len(key) + 1 :]
    return None


def _find_id(obj: dict[str, Any], path: str) -> object:
    """The canonical id found in `obj` for `path`, or `_NOT_FOUND`.

    Walks keys in document order, so the first invalid value met is the one reported.
    """
    found: object = _NOT_FOUND
    for key, value in obj.items():
        right = _right_part(path, key)
        if right is None:
            continue
        if right:
            if type(value) is not dict:
                continue  # milli: "we expected the field to be a map, but it was not and that's OK"
            candidate = _find_id(value, right)
            if candidate is _NOT_FOUND:
                continue
        else:
            candidate = normalize_document_id(value)
            if candidate is None:
                raise invalid_document_id_error(value)
        if found is not _NOT_FOUND:
            raise _TooManyIds
        found = candidate
    return found


def extract_document_id(document: dict[str, Any], primary_key: str) -> str:
    """The canonical external id of `document` under `primary_key` (possibly a dotted path).

    Raises `missing_document_id` when no value matches, `invalid_document_id` when the value is not
    a valid id or when several values match a nested primary key.
    """
    # Flat key fast path: one dict lookup, same outcome as the walk below.
    if "." not in primary_key and primary_key:
        if primary_key in document:
            value = document[primary_key]
            canonical = normalize_document_id(value)
            if canonical is None:
                raise invalid_document_id_error(value)
            return canonical
        found: object = _NOT_FOUND
    else:
        try:
            found = _find_id(document, primary_key)
        except _TooManyIds:
            raise MeiliError(
                "invalid_document_id",
                f"Document have too many matching `{primary_key}` attribute: `{_compact_json(document)}`.",
            ) from None
    if found is _NOT_FOUND:
        raise MeiliError(
            "missing_document_id",
            f"Document doesn't have a `{primary_key}` attribute: `{_compact_json(document)}`.",
        )
    assert isinstance(found, str)
    return found
