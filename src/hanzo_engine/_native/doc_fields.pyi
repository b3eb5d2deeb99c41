"""A document's searchable fields as the indexer takes them. See doc_fields.pyx."""

from typing import Any

Fields = list[tuple[int, list[str]]]

def document_fields(flat: dict[str, object], fid_of: dict[str, int], names: list[str]) -> Fields: ...
def simple_document_fields(
    document: dict[str, Any], fid_of: dict[str, int], names: list[str]
) -> Fields | None: ...
