"""Index uid rule: 1 to 400 bytes of ASCII letters, digits, `-` and `_` (the message still says 512)."""

from __future__ import annotations

import re

from .errors import invalid_index_uid

_VALID = re.compile(r"[A-Za-z0-9_-]{1,400}")


def is_valid_index_uid(uid: str) -> bool:
    return _VALID.fullmatch(uid) is not None


def validate_index_uid(uid: str) -> str:
    if not is_valid_index_uid(uid):
        raise invalid_index_uid(uid)
    return uid
