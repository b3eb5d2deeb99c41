"""Tenant tokens: HS256/HS384/HS512 JSON Web Tokens signed with a parent API key's value.

Decoding follows Meilisearch's `jsonwebtoken` use step by step, so each failure gives the same text:

1. Anything that does not split as `header.payload.signature` (at least two dots, split from the
   right) is not a tenant token at all: the caller then treats the bearer token as an API key.
2. Header and claims are read *without* checking the signature to learn `apiKeyUid` (base64url
   without padding, then JSON: the header needs a known `alg`; the claims need `searchRules` and
   `apiKeyUid`, `exp` is optional, other claims are ignored; a present `aud` is refused).
3. The parent key value is derived from that uid (a uid without a key still derives one; the key's
   existence is checked afterwards, by the caller), the algorithm must be an HMAC one, and the
   signature must equal the HMAC of `header.payload` under the parent key value.
4. `exp`, when present, must not be in the past (`now > exp` fails; standard validation is off).

Errors are `TokenError(text)`; the 403 message is "Could not decode tenant token, <text>." for the
decoding ones and the text itself for expiry (`TokenExpired`).

Search rules: an array of index patterns (`["*"]`, `["books", "movies_*"]`), or an object mapping
patterns to `null`, `{}` or `{"filter": <filter>}`. Patterns in a token are not validated (as in
Meilisearch) and match like key patterns. For an index several patterns may match: the most specific
wins, exact patterns before prefix ones, then the longest. Its `filter` is AND-ed with the user's
filter by `fuse_filters`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from hanzo_engine.apitypes.deserr import InvalidValue, serde_unexpected
from hanzo_engine.apitypes.errors import MeiliError

from .keys import parse_uuid, pattern_matches

HMAC_ALGORITHMS: Final[dict[str, Callable[..., Any]]] = {
    "HS256": hashlib.sha256,
    "HS384": hashlib.sha384,
    "HS512": hashlib.sha512,
}
# `jsonwebtoken::Algorithm`, the values a header's `alg` may name at all
KNOWN_ALGORITHMS: Final = (
    "HS256",
    "HS384",
    "HS512",
    "ES256",
    "ES384",
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "EdDSA",
)
_I64_MIN: Final = -(1 << 63)
_I64_MAX: Final = (1 << 63) - 1


class TokenError(Exception):
    """A tenant token that cannot be decoded; str() is the reason after "Could not decode tenant token, "."""


class TokenExpired(Exception):
    def __init__(self, exp: int, now: int) -> None:
        super().__init__(f"Tenant token expired. Was valid up to `{exp}` and we're now `{now}`.")
        self.exp = exp
        self.now = now


# --------------------------------------------------------------------------------------------------
# Search rules
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexSearchRules:
    """The rules applied to one index: an extra filter (any JSON filter value), or none."""

    filter: Any = None


@dataclass(frozen=True)
class SearchRules:
    """`searchRules`: a set of patterns (no filters) or a map pattern -> rules (None for `null`)."""

    patterns: tuple[str, ...]
    rules: Mapping[str, IndexSearchRules | None] | None = None

    @classmethod
    def from_set(cls, patterns: Sequence[str]) -> SearchRules:
        return cls(tuple(dict.fromkeys(patterns)))

    @classmethod
    def from_map(cls, rules: Mapping[str, IndexSearchRules | None]) -> SearchRules:
        return cls(tuple(rules), dict(rules))

    def all_indexes_authorized(self) -> bool:
        return "*" in self.patterns

    def is_index_authorized(self, index_uid: str) -> bool:
        return any(pattern_matches(p, index_uid) for p in self.patterns)

    def allowed(self) -> list[str]:
        """The patterns, sorted (the list shown in error messages)."""
        return sorted(self.patterns)

    def index_rules(self, index_uid: str) -> IndexSearchRules | None:
        """The rules of the most specific matching pattern (exact first, then longest); None if none."""
        if not self.is_index_authorized(index_uid):
            return None
        if self.rules is None:
            return IndexSearchRules()
        best = max(
            (p for p in self.patterns if pattern_matches(p, index_uid)),
            key=lambda p: (not p.endswith("*"), len(p)),
        )
        return self.rules[best]


def fuse_filters(user: Any, rule: Any) -> Any:
    """AND a user's filter with a rule's: both as arrays (a string becomes a one-item array), concatenated.

    None stands for "no filter" on either side; the other side is then returned unchanged.
    """
    if user is None:
        return rule
    if rule is None:
        return user
    left = user if isinstance(user, list) else [user]
    right = rule if isinstance(rule, list) else [rule]
    return [*left, *right]


# --------------------------------------------------------------------------------------------------
# Base64url and JSON, with the messages of the `base64` crate and `serde_json`
# --------------------------------------------------------------------------------------------------

_B64_ALPHABET: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    """Strict URL-safe base64 without padding (`URL_SAFE_NO_PAD`); TokenError("Base64 error: ...")."""
    raw = text.encode()
    for index, byte in enumerate(raw):
        if byte not in _B64_ALPHABET:
            if byte == ord("=") and raw[index:].strip(b"=") == b"":
                raise TokenError("Base64 error: Invalid padding")
            raise TokenError(f"Base64 error: Invalid symbol {byte}, offset {index}.")
    if len(raw) % 4 == 1:
        raise TokenError(f"Base64 error: Invalid input length: {len(raw)}")
    try:
        decoded = base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4))
    except (binascii.Error, ValueError):  # pragma: no cover - the checks above leave nothing to fail
        raise TokenError("Base64 error: Invalid padding") from None
    if b64url_encode(decoded).encode() != raw:
        # the last symbol carries bits beyond the data, which the crate refuses
        raise TokenError(f"Base64 error: Invalid last symbol {raw[-1]}, offset {len(raw) - 1}.")
    return decoded


def _line_col(text: str, index: int) -> tuple[int, int]:
    """serde_json's position of the character at `index` (1-based line, column = offset in line + 1)."""
    line = text.count("\n", 0, index) + 1
    start = text.rfind("\n", 0, index) + 1
    return line, index - start + 1


def _json_error(text: str, message: str, index: int) -> TokenError:
    line, col = _line_col(text, index)
    return TokenError(f"JSON error: {message} at line {line} column {col}")


_WS: Final = " \t\n\r"
_DECODER: Final = json.JSONDecoder()


def _members(data: bytes, what: str) -> tuple[str, list[tuple[str, int, Any, int]], int]:
    """Parse a JSON object into (text, [(key, key_end, value, value_end)], closing_brace_index).

    Syntax errors are reported like serde_json; a non-object is "invalid type: ..., expected `what`".
    """
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise TokenError(f"UTF-8 error: {exc}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(text, _serde_syntax_message(exc), exc.pos) from None
    if not isinstance(value, dict):
        end = len(text.rstrip(_WS))
        raise _json_error(text, f"invalid type: {serde_unexpected(value)}, expected {what}", end)
    members: list[tuple[str, int, Any, int]] = []
    i = text.index("{") + 1
    while True:
        while text[i] in _WS:
            i += 1
        if text[i] == "}":
            return text, members, i
        if text[i] == ",":
            i += 1
            continue
        key, key_end = _DECODER.raw_decode(text, i)
        i = text.index(":", key_end) + 1
        while text[i] in _WS:
            i += 1
        item, value_end = _DECODER.raw_decode(text, i)
        members.append((key, key_end, item, value_end))
        i = value_end


def _serde_syntax_message(exc: json.JSONDecodeError) -> str:
    if exc.msg.startswith("Expecting value") and not exc.doc[exc.pos :].strip():
        return "EOF while parsing a value"
    if exc.msg.startswith("Extra data"):
        return "trailing characters"
    return "expected value"


# --------------------------------------------------------------------------------------------------
# Header and claims
# --------------------------------------------------------------------------------------------------

_HEADER_STRINGS: Final = ("typ", "cty", "jku", "kid", "x5u", "x5t", "x5t#S256")


def _parse_header(part: str) -> str:
    """The `alg` of an encoded JOSE header (as `jsonwebtoken::Header`)."""
    text, members, close = _members(b64url_decode(part), "struct Header")
    alg: str | None = None
    for key, _key_end, value, value_end in members:
        if key == "alg":
            if not isinstance(value, str):
                raise _json_error(
                    text, f"invalid type: {serde_unexpected(value)}, expected variant identifier", value_end
                )
            if value not in KNOWN_ALGORITHMS:
                accepted = ", ".join(f"`{a}`" for a in KNOWN_ALGORITHMS)
                raise _json_error(text, f"unknown variant `{value}`, expected one of {accepted}", value_end)
            alg = value
        elif key in _HEADER_STRINGS and value is not None and not isinstance(value, str):
            raise _json_error(text, f"invalid type: {serde_unexpected(value)}, expected a string", value_end)
    if alg is None:
        raise _json_error(text, "missing field `alg`", close)
    return alg


@dataclass(frozen=True)
class Claims:
    api_key_uid: uuid.UUID
    search_rules: SearchRules
    exp: int | None


_UNTAGGED: Final = "data did not match any variant of untagged enum SearchRules"


def _search_rules(value: Any) -> SearchRules | None:
    """`SearchRules` (untagged: a set of strings, else a map to null/rules); None when neither fits."""
    if isinstance(value, list):
        return SearchRules.from_set(value) if all(isinstance(p, str) for p in value) else None
    if not isinstance(value, dict):
        return None
    rules: dict[str, IndexSearchRules | None] = {}
    for pattern, rule in value.items():
        if rule is None:
            rules[pattern] = None
        elif isinstance(rule, dict):
            rules[pattern] = IndexSearchRules(rule.get("filter"))
        elif isinstance(rule, list) and len(rule) == 1:
            rules[pattern] = IndexSearchRules(rule[0])  # serde also reads a struct from a 1-item sequence
        else:
            return None
    return SearchRules.from_map(rules)


def parse_claims(payload: str) -> Claims:
    """Decode the claims part: `searchRules` and `apiKeyUid` required, `exp` an optional i64."""
    text, members, close = _members(b64url_decode(payload), "struct Claims")
    found: dict[str, Any] = {}
    for key, key_end, value, value_end in members:
        if key not in ("searchRules", "exp", "apiKeyUid"):
            continue
        if key in found:
            raise _json_error(text, f"duplicate field `{key}`", key_end)
        if key == "searchRules":
            rules = _search_rules(value)
            if rules is None:
                raise _json_error(text, _UNTAGGED, value_end)
            found[key] = rules
        elif key == "exp":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise _json_error(text, f"invalid type: {serde_unexpected(value)}, expected i64", value_end)
            if value is not None and value > _I64_MAX:
                raise _json_error(text, f"invalid value: {serde_unexpected(value)}, expected i64", value_end)
            if value is not None and value < _I64_MIN:
                # serde_json reads integers below i64's range as floats
                raise _json_error(
                    text, f"invalid type: {serde_unexpected(float(value))}, expected i64", value_end
                )
            found[key] = value
        else:
            if not isinstance(value, str):
                raise _json_error(
                    text, f"invalid type: {serde_unexpected(value)}, expected a UUID string", value_end
                )
            try:
                found[key] = parse_uuid(value)
            except InvalidValue as exc:
                raise _json_error(text, f"UUID parsing failed: {exc}", value_end) from None
    for required in ("searchRules", "apiKeyUid"):
        if required not in found:
            raise _json_error(text, f"missing field `{required}`", close)
    # jsonwebtoken refuses an audience when none is expected
    if any(key == "aud" and value is not None for key, _, value, _ in members):
        raise TokenError("InvalidAudience")
    return Claims(found["apiKeyUid"], found["searchRules"], found.get("exp"))


# --------------------------------------------------------------------------------------------------
# Encoding and decoding
# --------------------------------------------------------------------------------------------------


def encode_token(claims: Mapping[str, Any], secret: str, algorithm: str = "HS256") -> str:
    """A signed JWT (compact JSON, `{"typ":"JWT","alg":...}` header), as the SDKs generate them."""
    digest = HMAC_ALGORITHMS[algorithm]
    header = b64url_encode(json.dumps({"typ": "JWT", "alg": algorithm}, separators=(",", ":")).encode())
    payload = b64url_encode(json.dumps(claims, separators=(",", ":")).encode())
    signature = hmac.new(secret.encode(), f"{header}.{payload}".encode(), digest).digest()
    return f"{header}.{payload}.{b64url_encode(signature)}"


def split_token(token: str) -> tuple[str, str, str] | None:
    """`(header, payload, signature)` split from the right, or None when it is not JWT-shaped."""
    message, dot, signature = token.rpartition(".")
    if not dot:
        return None
    header, dot, payload = message.rpartition(".")
    if not dot:
        return None
    return header, payload, signature


def decode_token(
    token: str, parent_secret: Callable[[uuid.UUID], str], now: int | None = None
) -> Claims | None:
    """The verified claims of a tenant token; None if `token` is not JWT-shaped (an API key then).

    `parent_secret(uid)` gives the value of the parent key named by the unverified claims. Raises
    TokenError (undecodable, bad algorithm or signature) or TokenExpired.
    """
    parts = split_token(token)
    if parts is None:
        return None
    header, payload, signature = parts
    alg = _parse_header(header)
    claims = parse_claims(payload)
    if alg not in HMAC_ALGORITHMS:
        raise TokenError("InvalidAlgorithm")
    secret = parent_secret(claims.api_key_uid)
    expected = hmac.new(secret.encode(), f"{header}.{payload}".encode(), HMAC_ALGORITHMS[alg]).digest()
    if not hmac.compare_digest(b64url_encode(expected).encode(), signature.encode()):
        raise TokenError("InvalidSignature")
    if claims.exp is not None:
        current = int(time.time()) if now is None else now
        if current > claims.exp:
            raise TokenExpired(claims.exp, current)
    return claims


def decode_error(exc: TokenError) -> MeiliError:
    return MeiliError("invalid_api_key", f"Could not decode tenant token, {exc}.")
