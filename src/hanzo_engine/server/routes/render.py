"""`POST /render-template` (= Meilisearch's `routes/render.rs`, experimental feature `renderRoute`).

Renders a document template (an embedder's, an index's chat template, or an inline one) against a stored
or inline document, so that a user can see the text an LLM or an embedder receives. The key needs both
`settings.get` and `documents.get`, and access to every index the body names.

Fragment kinds (`indexingFragment`, `searchFragment`, `inlineFragment`, and the `inlineSearch` input) are
gated by `multimodal` as in Meilisearch; this engine has no fragment embedders, so once that feature is on
an index's embedder "does not use fragments", and an inline fragment is refused as not supported.
"""

from __future__ import annotations

import json
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import (
    Field,
    InvalidValue,
    decode_json_body,
    deserialize_object,
    serde_unexpected,
)
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.vector.embedders import is_generating, make_prompt
from hanzo_engine.engine.vector.liquid_values import LiquidError
from hanzo_engine.engine.vector.prompt import DEFAULT_MAX_BYTES, Prompt

from ..app_state import state
from ..auth import INVALID_KEY, auth_filter, guard
from ..chats.gate import CHAT_DISCUSSION, check_render
from ..http import JSONResponse, read_body

TEMPLATE_KINDS: Final = (
    "documentTemplate",
    "chatDocumentTemplate",
    "indexingFragment",
    "searchFragment",
    "inlineDocumentTemplate",
    "inlineFragment",
)
INPUT_KINDS: Final = ("indexDocument", "inlineDocument", "inlineSearch")
MULTIMODAL_DISCUSSION: Final = "https://github.com/orgs/meilisearch/discussions/846"
_T: Final = "invalid_render_template"
_I: Final = "invalid_render_input"


def _non_zero(value: int) -> int:
    if value == 0:
        raise InvalidValue("a non-zero value is expected")
    return value


_TEMPLATE_FIELDS: Final = (
    Field("kind", "string", _T, required=True, missing_code=_T, choices=TEMPLATE_KINDS),
    Field("indexUid", "string", _T, nullable=True),
    Field("embedder", "string", _T, nullable=True),
    Field("fragment", "string", _T, nullable=True),
    Field("inline", "any", _T),
    Field("documentTemplateMaxBytes", "usize", _T, nullable=True, validate=_non_zero),
)
_INPUT_FIELDS: Final = (
    Field("kind", "string", _I, required=True, missing_code=_I, choices=INPUT_KINDS),
    Field("indexUid", "string", _I, nullable=True),
    Field("id", "string", _I, nullable=True),
    Field("inline", "any", _I),
)
_BODY_FIELDS: Final = (
    Field("template", "object", _T, required=True, fields=_TEMPLATE_FIELDS),
    Field("input", "object", _I, nullable=True, fields=_INPUT_FIELDS),
)


def _template_error(message: str, code: str = _T) -> MeiliError:
    return MeiliError(code, f"error while fetching template: {message}")


def _input_error(message: str, code: str = _I) -> MeiliError:
    return MeiliError(code, f"error while fetching input: {message}")


def _feature(request: Request, name: str, action: str, link: str, label: str | None = None) -> None:
    from ..features import feature_not_enabled, runtime_features

    if not runtime_features(request).enabled(name):
        raise feature_not_enabled(action, label or name, link)


def _check_params(
    kind: str, params: dict[str, Any], required: tuple[str, ...], forbidden: tuple[str, ...], error: Any
) -> None:
    """Meilisearch's order: what a kind forbids and requires, parameters named in snake_case."""
    snake = {"indexUid": "index_uid", "documentTemplateMaxBytes": "document_template_max_bytes"}
    for name in forbidden:
        if params.get(name) is not None:
            raise error(f"parameter `{snake.get(name, name)}` disallowed for kind `{kind}`")
    for name in required:
        if params.get(name) is None:
            raise error(f"parameter `{snake.get(name, name)}` missing for kind `{kind}`")


def _read(request: Request, uid: str, read: Any) -> Any:
    index = state(request).scheduler.index(uid)
    if index is None:
        raise _template_error(f"cannot open index `{uid}`: Index `{uid}` not found.", "index_not_found")
    with index.read() as reader:
        return read(reader)


def _fetch_template(request: Request, t: dict[str, Any]) -> tuple[Any, Prompt | None]:
    """(the template as answered, the parsed document template; None for a fragment)."""
    kind = t["kind"]
    max_bytes = t.get("documentTemplateMaxBytes")
    if kind == "documentTemplate":
        _check_params(kind, t, ("indexUid", "embedder"), ("fragment", "inline"), _template_error)
        uid, name = t["indexUid"], t["embedder"]

        def embedder_prompt(reader: IndexReader) -> Prompt:
            embedders = complete_settings(reader.settings())["embedders"]
            if name not in embedders:
                raise _template_error(f"cannot find embedder `{name}` in index `{uid}`")
            conf = embedders[name]
            if not is_generating(conf):
                raise _template_error(f"embedder `{name}` in index `{uid}` does not use a document template.")
            prompt = make_prompt(conf)
            return Prompt(prompt.template, max_bytes or prompt.max_bytes)

        prompt = _read(request, uid, embedder_prompt)
        return prompt.template, prompt
    if kind == "chatDocumentTemplate":
        _feature(request, "chatCompletions", "accessing chat settings", CHAT_DISCUSSION, "chat completions")
        _check_params(kind, t, ("indexUid",), ("embedder", "fragment", "inline"), _template_error)
        uid = t["indexUid"]

        def chat_prompt(reader: IndexReader) -> Prompt:
            chat = complete_settings(reader.settings())["chat"]
            return Prompt(chat["documentTemplate"], max_bytes or chat["documentTemplateMaxBytes"])

        prompt = _read(request, uid, chat_prompt)
        return prompt.template, prompt
    if kind in ("indexingFragment", "searchFragment"):
        _feature(request, "multimodal", "accessing fragments", MULTIMODAL_DISCUSSION)
        _check_params(kind, t, ("indexUid", "embedder", "fragment"), (), _template_error)
        _check_params(kind, t, (), ("inline", "documentTemplateMaxBytes"), _template_error)
        uid, name = t["indexUid"], t["embedder"]

        def no_fragments(reader: IndexReader) -> None:
            if name not in complete_settings(reader.settings())["embedders"]:
                raise _template_error(f"cannot find embedder `{name}` in index `{uid}`")
            raise _template_error(f"embedder `{name}` in index `{uid}` does not use fragments.")

        _read(request, uid, no_fragments)
    if kind == "inlineDocumentTemplate":
        _check_params(kind, t, (), ("indexUid", "embedder", "fragment"), _template_error)
        _check_params(kind, t, ("inline",), (), _template_error)
        if not isinstance(t["inline"], str):
            raise _template_error("inline document templates must be strings")
        try:
            prompt = Prompt(t["inline"], max_bytes or DEFAULT_MAX_BYTES)
        except LiquidError as exc:
            raise _template_error(
                f"user error: cannot parse template: {exc}", "template_parsing_error"
            ) from None
        return prompt.template, prompt
    # inlineFragment
    _feature(request, "multimodal", "rendering an inline fragment", MULTIMODAL_DISCUSSION)
    _check_params(kind, t, (), ("indexUid", "embedder", "fragment"), _template_error)
    _check_params(kind, t, ("inline",), ("documentTemplateMaxBytes",), _template_error)
    raise _template_error("inline fragments are not supported by this engine")


def _render(request: Request, prompt: Prompt, i: dict[str, Any]) -> str:
    kind = i["kind"]
    if kind == "indexDocument":
        _check_params(kind, i, ("indexUid", "id"), (), _input_error)
        _check_params(kind, i, (), ("inline",), _input_error)
        uid, doc_id = i["indexUid"], i["id"]

        def render_stored(reader: IndexReader) -> str:
            document = reader.get_document(doc_id)
            if document is None:
                raise _input_error(f"document `{doc_id}` not found in `{uid}`", "render_document_not_found")
            searchable = complete_settings(reader.settings()).get("searchableAttributes")
            return _render_document(
                prompt, document, None if searchable is None else list(searchable), reader.fields_ids_map()
            )

        index = state(request).scheduler.index(uid)
        if index is None:
            raise MeiliError("index_not_found", f"Cannot open index `{uid}`: Index `{uid}` not found.")
        with index.read() as reader:
            return render_stored(reader)
    if kind == "inlineSearch":
        _feature(request, "multimodal", "rendering search", MULTIMODAL_DISCUSSION)
        _check_params(kind, i, (), ("indexUid", "id"), _input_error)
        _check_params(kind, i, ("inline",), (), _input_error)
        inline = i["inline"]
        if not isinstance(inline, dict):
            raise _input_error(
                f"parsing inline search: invalid type: {serde_unexpected(inline)}, expected a map at "
                f"line 1 column {len(_compact(inline))}\n  - Note: the inline search query must "
                "be a JSON map containing `q` and/or `media`"
            )
        if "q" in inline and not isinstance(inline["q"], str):
            raise _input_error("`q` is not a string")
        raise MeiliError(
            "template_rendering_error",
            "error while rendering template: cannot render a document template with a search query",
        )
    # inlineDocument
    _check_params(kind, i, (), ("indexUid", "id"), _input_error)
    _check_params(kind, i, ("inline",), (), _input_error)
    inline = i["inline"]
    if not isinstance(inline, dict):
        raise _input_error(
            f"parsing inline document: invalid type: {serde_unexpected(inline)}, expected a map at line 1 "
            f"column {len(_compact(inline))}\n  - Note: the inline document must be a JSON map"
        )
    return _render_document(prompt, inline, None, list(inline))


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _render_document(
    prompt: Prompt, document: dict[str, Any], searchable: list[str] | None, order: list[str]
) -> str:
    try:
        return prompt.render(document, searchable, order)
    except LiquidError as exc:
        raise MeiliError("template_rendering_error", f"error while rendering template: {exc}") from None


def _render_all(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    template, prompt = _fetch_template(request, body["template"])
    i = body.get("input")
    rendered = None if i is None or prompt is None else _render(request, prompt, i)
    return {"template": template, "rendered": rendered}


async def render_template(request: Request) -> Response:
    guard(request, "documents.get")  # both actions are needed (Meilisearch's `DoubleActionPolicy`)
    body = deserialize_object(
        decode_json_body(await read_body(request), request.headers.get("content-type")), _BODY_FIELDS
    )
    check_render(request)
    caller = auth_filter(request)
    for part in (body["template"], body.get("input") or {}):
        uid = part.get("indexUid")
        if uid is not None and not caller.is_index_authorized(uid):
            raise INVALID_KEY
    return JSONResponse(await run_in_threadpool(_render_all, request, body))
