"""Document routes: add/replace (POST), add/update (PUT), browse, fetch, get one, delete."""

from __future__ import annotations

import os
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import Field, QueryField, decode_json_body, deserialize_object, parse_query
from hanzo_engine.apitypes.errors import MeiliError, index_not_found
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.engine.documents.fields import select_fields
from hanzo_engine.engine.documents.payload import convert_to_ndjson, payload_format
from hanzo_engine.engine.documents.primary_key import normalize_document_id
from hanzo_engine.engine.index import Index

from ..app_state import route, state
from ..http import JSONResponse, query_pairs, read_body

ADD_QUERY = (
    QueryField("primaryKey", "string", "invalid_index_primary_key", None),
    QueryField("csvDelimiter", "string", "invalid_document_csv_delimiter", None),
    QueryField("customMetadata", "string", "invalid_index_custom_metadata", None),
    QueryField("skipCreation", "bool", "invalid_skip_creation", False),
)
WRITE_QUERY = (QueryField("customMetadata", "string", "invalid_index_custom_metadata", None),)
BROWSE_QUERY = (
    QueryField("offset", "usize", "invalid_document_offset", 0),
    QueryField("limit", "usize", "invalid_document_limit", 20),
    QueryField("fields", "csv", "invalid_document_fields", None),
    QueryField("retrieveVectors", "bool", "invalid_document_retrieve_vectors", False),
    QueryField("ids", "csv", "invalid_document_ids", None),
    QueryField("filter", "string", "invalid_document_filter", None),
    QueryField("sort", "csv", "invalid_document_sort", None),
)
FETCH_BODY = (
    Field("offset", "usize", "invalid_document_offset", default=0),
    Field("limit", "usize", "invalid_document_limit", default=20),
    Field("fields", "string_array", nullable=True, code="invalid_document_fields", default=None),
    Field("retrieveVectors", "boolean", "invalid_document_retrieve_vectors", default=False),
    Field("ids", "string_or_integer_array", nullable=True, code="invalid_document_ids", default=None),
    Field("filter", "any", "invalid_document_filter", default=None),
    Field("sort", "string_array", nullable=True, code="invalid_document_sort", default=None),
)
GET_ONE_QUERY = (
    QueryField("fields", "csv", "invalid_document_fields", None),
    QueryField("retrieveVectors", "bool", "invalid_document_retrieve_vectors", False),
)


def _index_or_404(request: Request, uid: str) -> Index:
    index = state(request).scheduler.index(uid)
    if index is None:
        raise index_not_found(uid)
    return index


def _present(document: dict[str, Any], fields: list[str] | None, retrieve_vectors: bool) -> dict[str, Any]:
    if not retrieve_vectors and "_vectors" in document:
        document = {k: v for k, v in document.items() if k != "_vectors"}
    if fields is not None and "*" not in fields:
        document = select_fields(document, fields)
    return document


async def _add_or_update(request: Request, method: str) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    q = parse_query(query_pairs(request), ADD_QUERY)
    fmt, delimiter = payload_format(request.headers.get("content-type"), q["csvDelimiter"])
    body = await read_body(request)
    st = state(request)
    file_uuid, path = st.scheduler.new_update_file()

    def persist() -> int:
        # The payload is validated and fsynced before the task exists: an acknowledged task has its data.
        try:
            with open(path, "wb") as out:
                count = convert_to_ndjson(body, fmt, out, delimiter)
                out.flush()
                os.fsync(out.fileno())
            return count
        except BaseException:
            path.unlink(missing_ok=True)
            raise

    count = await run_in_threadpool(persist)
    kind = {
        "method": method, "primaryKey": q["primaryKey"], "contentFile": file_uuid,
        "contentSize": os.path.getsize(path), "documentsCount": count, "allowIndexCreation": True,
        "skipCreation": q["skipCreation"],
    }
    try:
        return await st.enqueue(
            "documentAdditionOrUpdate", uid, details={"receivedDocuments": count, "indexedDocuments": None},
            kind=kind, custom_metadata=q["customMetadata"],
        )
    except BaseException:
        path.unlink(missing_ok=True)
        raise


@route("POST", "/indexes/{index_uid}/documents", action="documents.add")
async def replace_documents(request: Request) -> Response:
    return await _add_or_update(request, "replace")


@route("PUT", "/indexes/{index_uid}/documents", action="documents.add")
async def update_documents(request: Request) -> Response:
    return await _add_or_update(request, "update")


def _browse(request: Request, uid: str, params: dict[str, Any]) -> dict[str, Any]:
    if params.get("filter") is not None:
        raise MeiliError("invalid_document_filter",
                         "Filtering documents is not available in this build yet (see the filters issue).")
    if params.get("sort"):
        raise MeiliError("invalid_document_sort",
                         "Sorting documents is not available in this build yet (see the filters issue).")
    index = _index_or_404(request, uid)
    offset, limit, fields = params["offset"], params["limit"], params["fields"]
    vectors = params["retrieveVectors"]
    with index.read() as r:
        if params.get("ids") is not None:
            found = []
            seen: set[int] = set()
            docids = []
            for raw in params["ids"]:
                ext = normalize_document_id(raw)
                docid = r.internal_id(ext) if ext is not None else None
                if docid is not None and docid not in seen:
                    seen.add(docid)
                    docids.append(docid)
            docids.sort()  # Meilisearch returns them in internal id order
            total = len(docids)
            for docid in docids[offset : offset + limit]:
                doc = r.document_by_internal_id(docid)
                if doc is not None:
                    found.append(_present(doc, fields, vectors))
            results = found
        else:
            total = r.number_of_documents()
            results = []
            if limit > 0:
                for doc in r.iter_documents(offset):
                    results.append(_present(doc, fields, vectors))
                    if len(results) >= limit:
                        break
    return {"results": results, "offset": offset, "limit": limit, "total": total}


@route("GET", "/indexes/{index_uid}/documents", action="documents.get")
async def browse_documents(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    params = parse_query(query_pairs(request), BROWSE_QUERY)
    return JSONResponse(await run_in_threadpool(_browse, request, uid, params))


@route("POST", "/indexes/{index_uid}/documents/fetch", action="documents.get")
async def fetch_documents(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    params = deserialize_object(body, FETCH_BODY)
    return JSONResponse(await run_in_threadpool(_browse, request, uid, params))


@route("GET", "/indexes/{index_uid}/documents/{document_id}", action="documents.get")
async def get_document(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    params = parse_query(query_pairs(request), GET_ONE_QUERY)
    index = _index_or_404(request, uid)
    doc_id = request.path_params["document_id"]
    ext = normalize_document_id(doc_id)
    with index.read() as r:
        doc = r.get_document(ext) if ext is not None else None
    if doc is None:
        raise MeiliError("document_not_found", f"Document `{doc_id}` not found.")
    return JSONResponse(_present(doc, params["fields"], params["retrieveVectors"]))


@route("DELETE", "/indexes/{index_uid}/documents/{document_id}", action="documents.delete")
async def delete_document(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    q = parse_query(query_pairs(request), WRITE_QUERY)
    doc_id = request.path_params["document_id"]
    return await state(request).enqueue(
        "documentDeletion", uid,
        details={"providedIds": 1, "deletedDocuments": None, "originalFilter": None},
        kind={"op": "ids", "ids": [doc_id]}, custom_metadata=q["customMetadata"],
    )


@route("POST", "/indexes/{index_uid}/documents/delete-batch", action="documents.delete")
async def delete_documents_batch(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    q = parse_query(query_pairs(request), WRITE_QUERY)
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    if not isinstance(body, list):
        raise MeiliError("bad_request", "Invalid value type: expected an array, but found an object: `{...}`"
                         if isinstance(body, dict) else "Invalid value type: expected an array")
    # Non-string ids are stringified, as Meilisearch does; an id that can match nothing deletes nothing.
    ids = [v if isinstance(v, str) else _stringify(v) for v in body]
    return await state(request).enqueue(
        "documentDeletion", uid,
        details={"providedIds": len(ids), "deletedDocuments": None, "originalFilter": None},
        kind={"op": "ids", "ids": ids}, custom_metadata=q["customMetadata"],
    )


@route("DELETE", "/indexes/{index_uid}/documents", action="documents.delete")
async def clear_documents(request: Request) -> Response:
    uid = validate_index_uid(request.path_params["index_uid"])
    q = parse_query(query_pairs(request), WRITE_QUERY)
    return await state(request).enqueue(
        "documentDeletion", uid, details={"deletedDocuments": None}, kind={"op": "clear"},
        custom_metadata=q["customMetadata"],
    )


def _stringify(value: Any) -> str:
    import msgspec

    return msgspec.json.encode(value).decode()
