"""Document routes: add/replace (POST), add/update (PUT), browse, fetch, get one, delete.

Validation happens in the order actix runs Meilisearch's extractors and handler: query parameters
(or the JSON body) first, then the path's index uid, then the Content-Type, then the payload, then
the index lookup. Every check runs before a task is registered, so a refused request changes nothing.
"""

from __future__ import annotations

import os
from typing import Any, Final

import msgspec
from pyroaring import BitMap
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import (
    Field,
    QueryField,
    check_json_content_type,
    decode_json_body,
    deserialize_object,
    parse_json,
    parse_query,
)
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.apitypes.search import _get_filter, fix_sort_query_parameters, parse_sort
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.documents.fields import select_fields
from hanzo_engine.engine.documents.payload import (
    check_csv_delimiter,
    convert_to_ndjson,
    payload_format,
)
from hanzo_engine.engine.documents.primary_key import invalid_document_id_error, normalize_document_id
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.search.filter import FilterContext, FilterOperatorError
from hanzo_engine.engine.search.sorting import Ordering
from hanzo_engine.engine.search.types import SearchRequest
from hanzo_engine.filter_parser import (
    FilterError,
    FilterFeatures,
    check_features,
    parse_filter_value,
    reject_foreign,
)
from hanzo_engine.rustcompat.strings import debug_str
from hanzo_engine.scheduler.network import read_network

from .. import network_documents, remotes, sharding
from ..app_state import state
from ..auth import auth_filter
from ..features import feature_not_enabled, runtime_features
from ..http import JSONResponse, query_pairs, read_body, read_index
from ..network_documents import weighted_score_values
from ..search import NETWORK_DISCUSSION, filter_features, parse_search_filter, unsortable_message
from ..search_queue import run_queued


def _csv_delimiter(text: str) -> str:
    check_csv_delimiter(text)  # raises Meilisearch's error; the payload format is chosen later
    return text


def _skip_creation(text: str) -> bool:
    # Meilisearch compares case-insensitively, with its own message
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise MeiliError(
        "invalid_skip_creation", f"skipCreation must be either `true` or `false`. Found: `{text}`"
    )


ADD_QUERY = (
    QueryField("primaryKey", "string", "invalid_index_primary_key", None),
    QueryField("csvDelimiter", "string", "invalid_document_csv_delimiter", None, parse=_csv_delimiter),
    QueryField("customMetadata", "string", "invalid_index_custom_metadata", None),
    QueryField("skipCreation", "string", "invalid_skip_creation", False, parse=_skip_creation),
)
WRITE_QUERY = (QueryField("customMetadata", "string", "invalid_index_custom_metadata", None),)
BROWSE_QUERY = (
    QueryField("offset", "usize", "invalid_document_offset", 0),
    QueryField("limit", "usize", "invalid_document_limit", 20),
    QueryField("fields", "csv", "invalid_document_fields", None),
    QueryField("retrieveVectors", "bool", "invalid_document_retrieve_vectors", False),
    QueryField("ids", "csv", "invalid_document_ids", None),
    QueryField("filter", "string", "invalid_document_filter", None),
    QueryField("sort", "string", "invalid_document_sort", None),
    QueryField("useNetwork", "bool", "invalid_document_use_network", None),
)
FETCH_BODY = (
    Field("offset", "usize", "invalid_document_offset", default=0),
    Field("limit", "usize", "invalid_document_limit", default=20),
    Field("fields", "string_array", nullable=True, code="invalid_document_fields", default=None),
    Field("retrieveVectors", "boolean", "invalid_document_retrieve_vectors", default=False),
    Field("ids", "array", nullable=True, code="invalid_document_ids", default=None),
    Field("filter", "any", "invalid_document_filter", default=None),
    Field("sort", "string_array", nullable=True, code="invalid_document_sort", default=None),
    Field("useNetwork", "boolean", "invalid_document_use_network", nullable=True, default=None),
)
GET_ONE_QUERY = (
    QueryField("fields", "csv", "invalid_document_fields", None),
    QueryField("retrieveVectors", "bool", "invalid_document_retrieve_vectors", False),
    QueryField("useNetwork", "bool", "invalid_document_use_network", None),
)
VECTORS: Final = "_vectors"
# Sub-resources of `/documents`: actix matches them before `/documents/{document_id}`, so another
# method on them is a 405, never a document lookup.
RESERVED_DOCUMENT_PATHS: Final = frozenset({"delete-batch", "delete", "edit", "fetch"})


def _star_or_list(fields: list[str] | None) -> list[str] | None:
    """GET `fields`: a list holding `*` means every field (Meilisearch's `OptionStarOrList`)."""
    return None if fields is None or "*" in fields else fields


def _present(document: dict[str, Any], fields: list[str] | None, retrieve_vectors: bool) -> dict[str, Any]:
    """A stored document as Meilisearch serves it.

    `_vectors` is taken out of the document with serde_json's `swap_remove` (Meilisearch's maps keep
    insertion order, and `remove` moves the last key into the freed slot). With `retrieveVectors` it
    is put back last, as an object (`{}` when the document had none), and always survives `fields`.
    """
    if VECTORS in document:
        keys = list(document)
        position = keys.index(VECTORS)
        vectors = document[VECTORS]
        if position == len(keys) - 1:
            document = {k: document[k] for k in keys[:-1]}
        else:
            last = keys[-1]
            document = {
                (last if k == VECTORS else k): document[last if k == VECTORS else k] for k in keys[:-1]
            }
    else:
        vectors = None
    if retrieve_vectors:
        document = dict(document)
        document[VECTORS] = vectors if isinstance(vectors, dict) else {}
    if fields is not None:
        document = select_fields(document, [*fields, VECTORS] if retrieve_vectors else fields)
    return document


def _external_ids(values: list[Any]) -> list[str]:
    """`ids` of a browse request as external ids; an invalid one is refused with its position."""
    ids = []
    for i, value in enumerate(values):
        ext = normalize_document_id(value)
        if ext is None:
            raise MeiliError(
                "invalid_document_ids", f"In `.ids[{i}]`: {invalid_document_id_error(value).message}"
            )
        ids.append(ext)
    return ids


async def _add_or_update(request: Request, method: str) -> Response:
    q = parse_query(query_pairs(request), ADD_QUERY)
    uid = validate_index_uid(request.path_params["index_uid"])
    fmt, delimiter = payload_format(request.headers.get("content-type"), q["csvDelimiter"])
    body = await read_body(request)
    scheduler = state(request).scheduler
    file_uuid, path = scheduler.new_update_file()
    # a missing index is created only for callers that may create it (else the task fails)
    allow_creation = auth_filter(request).allow_index_creation(uid)

    def persist_and_register() -> dict[str, Any]:
        # The payload is validated and fsynced before the task exists: an acknowledged task has its data.
        # Both steps in one trip off the event loop (each trip costs a thread hand-off both ways).
        try:
            with open(path, "wb") as out:
                count = convert_to_ndjson(body, fmt, out, delimiter)
                out.flush()
                os.fsync(out.fileno())
            kind = {
                "method": method,
                "primaryKey": q["primaryKey"],
                "contentFile": file_uuid,
                "contentSize": os.path.getsize(path),
                "documentsCount": count,
                "allowIndexCreation": allow_creation,
                "skipCreation": q["skipCreation"],
                # how GET /tasks/{uid}/documents serves the stored payload back (routes/tasks.py)
                "payloadFormat": fmt.value,
            }
            return scheduler.register(
                "documentAdditionOrUpdate",
                uid,
                details={"receivedDocuments": count, "indexedDocuments": None},
                kind=kind,
                custom_metadata=q["customMetadata"],
            )
        except BaseException:
            path.unlink(missing_ok=True)
            raise

    return JSONResponse(await run_in_threadpool(persist_and_register), status_code=202)


async def replace_documents(request: Request) -> Response:
    return await _add_or_update(request, "replace")


async def update_documents(request: Request) -> Response:
    return await _add_or_update(request, "update")


def _document_sort(sort: list[str], settings: dict[str, Any]) -> list[Any]:
    """The parsed `sort` of a browse request; every attribute must be sortable."""
    try:
        criteria = parse_sort(sort)
    except MeiliError as err:
        raise MeiliError("invalid_document_sort", err.message) from None
    message = unsortable_message(criteria, settings)
    if message is not None:
        raise MeiliError("invalid_document_sort", message)
    return criteria


def _browse_candidates(
    r: IndexReader, params: dict[str, Any], ids: list[str] | None, features: FilterFeatures
) -> tuple[BitMap | None, list[Any] | None, dict[str, Any]]:
    """(documents the filter and `ids` allow, or None for all; the sort criteria; the settings)."""
    settings = complete_settings(r.settings())
    candidates: BitMap | None = None
    if ids is not None:
        candidates = BitMap(docid for ext in ids if (docid := r.internal_id(ext)) is not None)
    node = parse_search_filter(params.get("filter"), features, code="invalid_document_filter")
    if node is not None:
        try:
            selected = FilterContext(r, settings).evaluate(node)
        except (FilterError, FilterOperatorError) as err:
            raise MeiliError("invalid_document_filter", err.message) from None
        candidates = selected if candidates is None else candidates & selected
    criteria = _document_sort(params["sort"], settings) if params.get("sort") is not None else None
    return candidates, criteria, settings


def _browse(request: Request, uid: str, params: dict[str, Any], proxy: bool = False) -> dict[str, Any]:
    """`proxy`: each document also carries `_federation.weightedScoreValues` (`network_documents`)."""
    ids = None if params.get("ids") is None else _external_ids(params["ids"])
    offset, limit, fields = params["offset"], params["limit"], params["fields"]
    vectors = params["retrieveVectors"]
    features = filter_features(request)

    def present(document: dict[str, Any]) -> dict[str, Any]:
        shown = _present(document, fields, vectors)
        if proxy:
            shown["_federation"] = {
                "weightedScoreValues": weighted_score_values(document, params.get("sort"))
            }
        return shown

    def run(r: IndexReader) -> dict[str, Any]:
        # the index is looked up before the filter and sort are read
        results: list[dict[str, Any]] = []
        if params.get("filter") is not None or params.get("sort") is not None:
            candidates, criteria, settings = _browse_candidates(r, params, ids, features)
            universe = r.documents_ids() if candidates is None else candidates
            if criteria:
                ordering = Ordering(r, settings, criteria)
                page = ordering.placeholder(
                    universe, SearchRequest(offset=offset, limit=limit), ["sort"]
                ).docids
            else:
                page = list(universe[offset : offset + limit]) if limit else []
            for position in page:
                found = r.document_by_internal_id(position)
                if found is not None:
                    results.append(present(found))
            return {"results": results, "offset": offset, "limit": limit, "total": len(universe)}
        if ids is not None:
            # the matching documents in internal-id order, whatever the order of `ids`
            docids = sorted({docid for ext in ids if (docid := r.internal_id(ext)) is not None})
            total = len(docids)
            for docid in docids[offset : offset + limit]:
                doc = r.document_by_internal_id(docid)
                if doc is not None:
                    results.append(present(doc))
        else:
            total = r.number_of_documents()
            if limit > 0:
                for doc in r.iter_documents(offset):
                    results.append(present(doc))
                    if len(results) >= limit:
                        break
        return {"results": results, "offset": offset, "limit": limit, "total": total}

    return read_index(state(request).scheduler, uid, run)


async def _queued_browse(
    request: Request, uid: str, params: dict[str, Any], proxy: bool = False
) -> dict[str, Any]:
    """A documents fetch holds a search-queue permit, as in Meilisearch, unless the
    `disableDocumentsFetchQueue` experimental feature is on."""
    if runtime_features(request).enabled("disableDocumentsFetchQueue"):
        return await run_in_threadpool(_browse, request, uid, params, proxy)
    return await run_queued(request, _browse, request, uid, params, proxy)


async def browse_documents(request: Request) -> Response:
    params = parse_query(query_pairs(request), BROWSE_QUERY)
    params["fields"] = _star_or_list(params["fields"])
    if params["filter"] is not None:
        params["filter"] = _get_filter(params["filter"])  # a JSON array is used as one
    if params["sort"] is not None:
        params["sort"] = fix_sort_query_parameters(params["sort"])
    uid = validate_index_uid(request.path_params["index_uid"])
    networked = await _network_browse(request, uid, params)
    if networked is not None:
        return JSONResponse(networked)
    return JSONResponse(await _queued_browse(request, uid, params))


async def fetch_documents(request: Request) -> Response:
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    params = deserialize_object(body, FETCH_BODY)
    params["fields"] = _star_or_list(params["fields"])
    uid = validate_index_uid(request.path_params["index_uid"])
    networked = await _network_browse(request, uid, params)
    if networked is not None:
        return JSONResponse(networked)
    proxy = request.headers.get(remotes.PROXY_SEARCH_HEADER) == "true"
    return JSONResponse(await _queued_browse(request, uid, params, proxy))


async def _network_browse(request: Request, uid: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The browse fanned out over the network when `useNetwork` is true (`network_documents`), else None."""
    use_network = params.pop("useNetwork", None)
    enabled = runtime_features(request).enabled("network")
    if use_network is not None and not enabled:
        raise feature_not_enabled("passing `useNetwork` in a search query", "network", NETWORK_DISCUSSION)
    if not await sharding.request_uses_network(enabled, state(request).scheduler.store, use_network):
        return None  # true by default with a leader
    network = await run_in_threadpool(read_network, state(request).scheduler.store)
    return await network_documents.browse(
        network, uid, params, lambda local: run_in_threadpool(_browse, request, uid, local, True)
    )


async def get_document(request: Request) -> Response:
    doc_id = request.path_params["document_id"]
    if doc_id in RESERVED_DOCUMENT_PATHS:
        return Response(status_code=405)
    params = parse_query(query_pairs(request), GET_ONE_QUERY)
    uid = validate_index_uid(request.path_params["index_uid"])
    ext = normalize_document_id(doc_id)
    doc = read_index(
        state(request).scheduler, uid, lambda r: r.get_document(ext) if ext is not None else None
    )
    if doc is None and ext is not None:
        # not here: looked for on the network when `useNetwork` asks for it
        browse = {
            "offset": 0,
            "limit": 1,
            "fields": _star_or_list(params["fields"]),
            "retrieveVectors": params["retrieveVectors"],
            "ids": [ext],
            "filter": None,
            "sort": None,
            "useNetwork": params["useNetwork"],
        }
        networked = await _network_browse(request, uid, browse)
        if networked is not None and networked["results"]:
            return JSONResponse(networked["results"][-1])
    elif params["useNetwork"] is not None and not runtime_features(request).enabled("network"):
        raise feature_not_enabled("passing `useNetwork` in a search query", "network", NETWORK_DISCUSSION)
    if doc is None:
        raise MeiliError("document_not_found", f"Document `{doc_id}` not found.")
    return JSONResponse(_present(doc, _star_or_list(params["fields"]), params["retrieveVectors"]))


async def delete_document(request: Request) -> Response:
    doc_id = request.path_params["document_id"]
    if doc_id in RESERVED_DOCUMENT_PATHS:
        return Response(status_code=405)
    q = parse_query(query_pairs(request), WRITE_QUERY)
    uid = validate_index_uid(request.path_params["index_uid"])
    return await state(request).enqueue(
        "documentDeletion",
        uid,
        details={"providedIds": 1, "deletedDocuments": None, "originalFilter": None},
        kind={"op": "ids", "ids": [doc_id]},
        custom_metadata=q["customMetadata"],
    )


async def delete_documents_batch(request: Request) -> Response:
    # actix's `web::Json<Vec<Value>>` extractor runs first, then the query, then the uid check
    check_json_content_type(request.headers.get("content-type"))
    raw = await read_body(request)
    body = parse_json(raw)
    if not isinstance(body, list):
        raise MeiliError("bad_request", f"Json deserialize error: {_serde_not_a_sequence(body, raw)}")
    q = parse_query(query_pairs(request), WRITE_QUERY)
    uid = validate_index_uid(request.path_params["index_uid"])
    # Non-string ids are stringified, as Meilisearch does; an id that can match nothing deletes nothing.
    ids = [v if isinstance(v, str) else msgspec.json.encode(v).decode() for v in body]
    return await state(request).enqueue(
        "documentDeletion",
        uid,
        details={"providedIds": len(ids), "deletedDocuments": None, "originalFilter": None},
        kind={"op": "ids", "ids": ids},
        custom_metadata=q["customMetadata"],
    )


DELETE_BY_FILTER_BODY = (
    Field("filter", "any", "invalid_document_filter", required=True, missing_code="missing_document_filter"),
)


async def delete_documents_by_filter(request: Request) -> Response:
    """`documentDeletion` of the documents a filter selects; the filter is parsed before enqueueing
    (syntax, experimental operators, empty filter), its attributes are checked when the task runs."""
    q = parse_query(query_pairs(request), WRITE_QUERY)
    body = deserialize_object(
        decode_json_body(await read_body(request), request.headers.get("content-type")), DELETE_BY_FILTER_BODY
    )
    uid = validate_index_uid(request.path_params["index_uid"])
    value = body["filter"]
    try:
        node = parse_filter_value(value)
        check_features(node, filter_features(request))
        reject_foreign(node)
    except FilterError as err:
        raise MeiliError(
            "feature_not_enabled" if err.feature else "invalid_document_filter", err.message
        ) from None
    if node is None:
        raise MeiliError("invalid_document_filter", "Sending an empty filter is forbidden.")
    return await state(request).enqueue(
        "documentDeletion",
        uid,
        details={
            "providedIds": 0,
            "deletedDocuments": None,
            "originalFilter": msgspec.json.encode(value).decode(),
        },
        kind={"op": "filter", "filter": value},
        custom_metadata=q["customMetadata"],
    )


EDIT_BODY = (
    Field("filter", "any", "invalid_document_filter", default=None),
    Field("context", "any", "invalid_document_edition_context", default=None),
    Field(
        "function",
        "string",
        "invalid_document_edition_function_filter",
        required=True,
        missing_code="missing_document_edition_function",
    ),
)
EDIT_LINK: Final = "https://github.com/orgs/meilisearch/discussions/762"


async def edit_documents_by_function(request: Request) -> Response:
    """`documentEdition`: a Rhai function run on the documents a filter selects (`editDocumentsByFunction`).

    Checked now, in Meilisearch's order: query, body, feature, index uid, the function's syntax (400
    `bad_request` with the parser's message), the filter, the context. The documents change when the
    task runs (`scheduler/edit_documents.py`)."""
    from hanzo_engine.engine.documents.edit_function import CompileError, compile_script

    from ..features import feature_not_enabled, runtime_features

    q = parse_query(query_pairs(request), WRITE_QUERY)
    body = deserialize_object(
        decode_json_body(await read_body(request), request.headers.get("content-type")), EDIT_BODY
    )
    if not runtime_features(request).enabled("editDocumentsByFunction"):
        raise feature_not_enabled("Using the documents edit route", "edit documents by function", EDIT_LINK)
    uid = validate_index_uid(request.path_params["index_uid"])
    function: str = body["function"]
    try:
        await run_in_threadpool(compile_script, function)
    except CompileError as err:
        raise MeiliError("bad_request", err.message) from None
    value = body["filter"]
    if value is not None:
        try:
            node = parse_filter_value(value)
            check_features(node, filter_features(request))
            reject_foreign(node)
        except FilterError as err:
            raise MeiliError(
                "feature_not_enabled" if err.feature else "invalid_document_filter", err.message
            ) from None
        if node is None:
            raise MeiliError("invalid_document_filter", "Sending an empty filter is forbidden.")
    context = body["context"]
    if context is not None and not isinstance(context, dict):
        raise MeiliError("invalid_document_edition_context", "The context must be an object")
    return await state(request).enqueue(
        "documentEdition",
        uid,
        details={
            "editedDocuments": None,
            "deletedDocuments": None,
            "originalFilter": None if value is None else msgspec.json.encode(value).decode(),
            "context": context,
            "function": function,
        },
        kind={"filter": value, "context": context, "function": function},
        custom_metadata=q["customMetadata"],
    )


async def clear_documents(request: Request) -> Response:
    q = parse_query(query_pairs(request), WRITE_QUERY)
    uid = validate_index_uid(request.path_params["index_uid"])
    return await state(request).enqueue(
        "documentDeletion",
        uid,
        details={"deletedDocuments": None},
        kind={"op": "clear"},
        custom_metadata=q["customMetadata"],
    )


def _serde_not_a_sequence(value: Any, raw: bytes) -> str:
    """serde_json's "invalid type" error for a well-formed body that is not an array.

    serde_json reports the position it stands at: before an object (it only peeked at the `{`), after
    a scalar (it parsed it). The body holds one value, so a scalar ends where the trailing
    whitespace starts.
    """
    if isinstance(value, dict):
        found, at = "map", len(raw) - len(raw.lstrip(b" \t\n\r"))
    else:
        at = len(raw.rstrip(b" \t\n\r"))
        if isinstance(value, str):
            found = f"string {debug_str(value)}"
        elif isinstance(value, bool):
            found = f"boolean `{'true' if value else 'false'}`"
        elif value is None:
            found = "null"
        elif isinstance(value, int):
            found = f"integer `{value}`"
        else:
            number = float(value)
            # serde prints floats with a decimal point (`WithDecimalPoint`)
            text = f"{int(number)}.0" if number.is_integer() and abs(number) < 1e16 else repr(number)
            found = f"floating point `{text}`"
    line_start = raw.rfind(b"\n", 0, at) + 1
    line = raw.count(b"\n", 0, line_start) + 1
    return f"invalid type: {found}, expected a sequence at line {line} column {at - line_start}"
