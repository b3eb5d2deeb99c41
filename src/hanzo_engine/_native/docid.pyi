"""Document identifier validation (native). See docid.pyx."""

def is_valid_document_id(s: str) -> bool:
    """True when `s` is 1..511 bytes of ASCII letters, digits, `-` and `_`."""

def validate_document_ids(ids: list[str]) -> int:
    """Index of the first element that is not a valid id string, or -1 if all are valid."""
