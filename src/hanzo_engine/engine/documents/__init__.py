"""Documents: payload parsing, primary keys and external ids, field flattening and selection."""

from hanzo_engine.engine.documents.fields import field_names, flatten, select_fields
from hanzo_engine.engine.documents.payload import (
    ACCEPTED_CONTENT_TYPES,
    PayloadFormat,
    check_csv_delimiter,
    convert_to_ndjson,
    payload_format,
)
from hanzo_engine.engine.documents.primary_key import (
    document_id_json,
    extract_document_id,
    infer_primary_key,
    invalid_document_id_error,
    normalize_document_id,
)

__all__ = [
    "ACCEPTED_CONTENT_TYPES",
    "PayloadFormat",
    "check_csv_delimiter",
    "convert_to_ndjson",
    "document_id_json",
    "extract_document_id",
    "field_names",
    "flatten",
    "infer_primary_key",
    "invalid_document_id_error",
    "normalize_document_id",
    "payload_format",
    "select_fields",
]
