"""`POST /chats/{workspace}/chat/completions` (= Meilisearch's `chat_completions.rs`).

Before the stream starts (plain HTTP errors): the body is an OpenAI chat-completions request (`messages`,
`model`), the feature is on, `n` is 1, the request streams, the workspace exists and the client declares no
tool but Meilisearch's marker tools (`_meiliSearchProgress`, `_meiliSearchSources`,
`_meiliAppendConversationMessage`, which only opt in to the matching reports and are never sent on).

Then the request sent to the LLM gets the workspace's system prompt first and one function tool,
`_meiliSearchInIndex`, describing every index the caller may search (its `chat.description`, and the
top values of its filterable attributes within the caller's tenant-token filter). The answer is an SSE
stream (`retry: 10000`, `data: <json>` events, `data: [DONE]`):

- each LLM round is streamed from the provider (`llm.stream_chunks`); chunks carrying tool calls are
  accumulated (arguments concatenated per call index), the others are forwarded as they come;
- when a chunk without tool calls arrives while calls are pending, each `_meiliSearchInIndex` call runs a
  search on its index with the index's `chat.searchParameters` plus the LLM's `q` and `filter`, under the
  caller's key or tenant token (re-authenticated with the `search` action for that index, the tenant's
  filter AND-ed in), through the search queue; hits are rendered with the index's `chat.documentTemplate`
  and joined with newlines as the tool's answer; the reports the client opted in to are streamed as
  synthetic tool-call chunks (progress, the assistant message to append, the sources, the tool message);
- a new round starts while the LLM finishes with `tool_calls`, 20 rounds at most; an LLM failure is one
  error event and ends the conversation.

Beyond Meilisearch, each `_meiliSearchSources` payload also names the searched `index_uid`, its
`primary_key` and each source's `document_ids` (the primary-key values, even where displayedAttributes
hides them), so that a caller can cite the documents.

A client that disconnects cancels the streaming task, which closes the upstream LLM request.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import hmac
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from hanzo_engine.apitypes.deserr import decode_json_body
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.search import SearchQuery, parse_search_body
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.auth import ALLOW_ALL, AuthFilter
from hanzo_engine.engine.documents.primary_key import extract_document_id
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.search.facet_distribution import facet_distribution
from hanzo_engine.engine.vector.liquid_values import LiquidError, to_text
from hanzo_engine.engine.vector.prompt import (
    DEFAULT_TEMPLATE,
    VECTORS_FIELD,
    Prompt,
    is_searchable,
    truncate_utf8,
)
from hanzo_engine.scheduler import chats as chat_store

from ..app_state import state
from ..auth import FilteringResolver, auth_filter, bearer_token
from ..http import read_index
from ..search import (
    HitMaker,
    engine_request,
    filter_features,
    keyword_or_ai_search,
    parse_search_filter,
    prepare_query,
)
from ..search_queue import run_queued
from . import llm
from .gate import check_chat

log = logging.getLogger("hanzo_engine.chats")

SEARCH_IN_INDEX: Final = "_meiliSearchInIndex"
SEARCH_PROGRESS: Final = "_meiliSearchProgress"
SEARCH_SOURCES: Final = "_meiliSearchSources"
APPEND_MESSAGE: Final = "_meiliAppendConversationMessage"
MARKER_TOOLS: Final = (SEARCH_PROGRESS, SEARCH_SOURCES, APPEND_MESSAGE)
MAX_ROUNDS: Final = 20
FACET_VALUES: Final = 10  # values per filterable attribute shown to the LLM
# the reconnection delay Meilisearch announces; sent as a field of the first event, since a retry-only event
# carries no data and the official `openai` Python client fails on an event without data
RETRY: Final = b"retry: 10000\n"
DONE: Final = b"data: [DONE]\n\n"


# -- the request ----------------------------------------------------------------------------------------


def _serde_position(raw: bytes) -> str:
    """`line L column C` of the end of a JSON object, as serde reports a missing field."""
    text = raw.decode(errors="replace").rstrip()
    line = text.count("\n") + 1
    column = len(text) - (text.rfind("\n") + 1)
    return f"line {line} column {column}"


def _bad_json(message: str) -> MeiliError:
    return MeiliError("bad_request", f"Json deserialize error: {message}")


def parse_request(body: Any, raw: bytes) -> dict[str, Any]:
    """The checks serde's `CreateChatCompletionRequest` makes that matter here (its two required fields)."""
    if not isinstance(body, dict):
        raise _bad_json(
            f"invalid type: expected struct CreateChatCompletionRequest at {_serde_position(raw)}"
        )
    for name in ("messages", "model"):
        if name not in body:
            raise _bad_json(f"missing field `{name}` at {_serde_position(raw)}")
    if not isinstance(body["messages"], list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in body["messages"]
    ):
        raise _bad_json(f"invalid type: `messages` must be a sequence of messages at {_serde_position(raw)}")
    if not isinstance(body["model"], str):
        raise _bad_json(f"invalid type: `model` must be a string at {_serde_position(raw)}")
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list)
        and all(
            isinstance(t, dict)
            and isinstance(t.get("function"), dict)
            and isinstance(t["function"].get("name"), str)
            for t in tools
        )
    ):
        raise _bad_json(
            f"invalid type: `tools` must be a sequence of function tools at {_serde_position(raw)}"
        )
    return body


@dataclass
class Support:
    """Which reports the client opted in to by declaring the marker tools."""

    progress: bool = False
    sources: bool = False
    append: bool = False


def take_marker_tools(completion: dict[str, Any]) -> Support:
    """Refuse tools Meilisearch does not run; remove the marker tools, noting which were declared."""
    tools = completion.get("tools") or []
    for tool in tools:
        name = tool["function"]["name"]
        if name == SEARCH_IN_INDEX:
            raise MeiliError("bad_request", f"{SEARCH_IN_INDEX} function is already defined.")
        if name not in MARKER_TOOLS:
            raise MeiliError(
                "unimplemented_external_function_calling",
                f"{name}: External functions are not supported yet.",
            )
    names = {tool["function"]["name"] for tool in tools}
    completion["tools"] = [t for t in tools if t["function"]["name"] not in MARKER_TOOLS]
    return Support(SEARCH_PROGRESS in names, SEARCH_SOURCES in names, APPEND_MESSAGE in names)


# -- the search tool ------------------------------------------------------------------------------------


def _facet_lines(reader: IndexReader, uid: str, settings: dict[str, Any], rule_filter: Any) -> str:
    """One `attr: v1, v2, ….` line per filterable attribute: its most frequent values among the
    documents the caller may see."""
    universe = reader.documents_ids()
    if rule_filter is not None:
        try:
            prepared = prepare_query(reader, uid, SearchQuery(filter=rule_filter))
        except MeiliError:
            return ""
        if prepared.universe is not None:
            universe = prepared.universe
    try:
        distribution, _ = facet_distribution(reader, settings, universe, ["*"])
    except Exception:  # a facet the engine cannot count must not keep the LLM from searching
        return ""
    out = []
    for name, values in distribution.items():
        top = sorted(values.items(), key=lambda item: -item[1])[:FACET_VALUES]
        if top:
            out.append(f"{name}: " + ", ".join(str(v) for v, _ in top) + ".\n")
    return "".join(out)


def _describe_index(reader: IndexReader, uid: str, rule_filter: Any) -> tuple[str, str]:
    settings = complete_settings(reader.settings())
    return str(settings["chat"].get("description") or ""), _facet_lines(reader, uid, settings, rule_filter)


def search_tool(request: Request, prompts: dict[str, str], caller: AuthFilter) -> dict[str, Any]:
    """The `_meiliSearchInIndex` function tool over every index `caller` may search."""
    description = prompts["searchDescription"]
    filter_description = prompts["searchFilterParam"]
    uids = []
    for uid, _index in state(request).scheduler.indexes():
        if not caller.is_index_authorized(uid):
            continue
        rules = caller.index_search_rules(uid)
        rule_filter = None if rules is None else rules.filter
        try:
            index_description, facets = read_index(
                state(request).scheduler,
                uid,
                functools.partial(_describe_index, uid=uid, rule_filter=rule_filter),
            )
        except MeiliError:
            continue  # deleted meanwhile
        description += f"\n\n - {uid}: {index_description}\n\n"
        uids.append(uid)
        filter_description += f"\n## Facet distributions of the {uid} index\n{facets}\n"
    return {
        "type": "function",
        "function": {
            "name": SEARCH_IN_INDEX,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "index_uid": {
                        "type": "string",
                        "enum": uids,
                        "description": prompts["searchIndexUidParam"],
                    },
                    "q": {"type": "string", "description": prompts["searchQParam"]},
                    "filter": {"type": "string", "description": filter_description},
                },
                "required": ["index_uid", "q", "filter"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }


def render_hit(
    prompt: Prompt, document: dict[str, Any], searchable: list[str] | None, order: list[str]
) -> str:
    """`prompt.render(...)`, with the default template rendered directly: it is what most indexes use,
    and the general Liquid interpreter costs most of a chat search's time."""
    if prompt.template != DEFAULT_TEMPLATE:
        return prompt.render(document, searchable, order)
    rank = {name: i for i, name in enumerate(order)}
    names = sorted((k for k in document if k != VECTORS_FIELD), key=lambda n: rank.get(n, len(rank)))
    text = "".join(
        f"{name}: {to_text(document[name])}\n"
        for name in names
        if document[name] is not None and is_searchable(name, searchable)
    )
    return text if prompt.max_bytes is None else truncate_utf8(text, prompt.max_bytes)


class ToolFailure(Exception):
    """A search that failed before running: the tool answer and the error streamed to the client."""

    def __init__(self, error: MeiliError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass
class SearchOutcome:
    text: str  # the tool's answer to the LLM
    documents: list[dict[str, Any]] = field(default_factory=list)  # displayed attributes only
    document_ids: list[str] = field(default_factory=list)
    primary_key: str | None = None
    ok: bool = True


def _strip_index_prefix(message: str, uid: str) -> str:
    prefix = f"Index `{uid}`: "
    return message[len(prefix) :] if message.startswith(prefix) else message


def run_chat_search(reader: IndexReader, uid: str, query: SearchQuery, features: Any) -> SearchOutcome:
    """One chat search in `reader`'s transaction: hits rendered with the index's chat template."""
    try:
        prepared = prepare_query(reader, uid, query, features)
        settings = prepared.settings
        max_total_hits = (settings.get("pagination") or {}).get("maxTotalHits") or 1000
        offset = min(query.offset, max_total_hits)
        limit = min(query.limit, max(max_total_hits - offset, 0))
        request = engine_request(prepared, query, offset=offset, limit=limit, exhaustive=False)
        result, _ = keyword_or_ai_search(reader, request, settings, query)
    except MeiliError as err:
        if err.code == "invalid_search_embedder" or err.code.startswith("feature_"):
            raise ToolFailure(err) from None
        # a user error of the search itself: the LLM reads it and may fix its call (the sources, if reported,
        # are then empty, as Meilisearch reports them)
        return SearchOutcome(_strip_index_prefix(err.message, uid))
    chat = settings["chat"]
    try:
        prompt = Prompt(chat["documentTemplate"], chat["documentTemplateMaxBytes"])
    except LiquidError as exc:
        raise ToolFailure(MeiliError("invalid_chat_setting_document_template", str(exc))) from None
    maker = HitMaker(reader, query, settings, result)
    searchable = settings.get("searchableAttributes")
    searchable_list = None if searchable is None else list(searchable)
    order = reader.fields_ids_map()
    primary_key = reader.primary_key
    out = SearchOutcome("", primary_key=primary_key)
    texts = []
    for docid, score, details in zip(result.docids, result.scores, result.details, strict=True):
        document = reader.document_by_internal_id(docid)
        if document is None:
            continue
        try:
            texts.append(render_hit(prompt, document, searchable_list, order))
        except LiquidError as exc:
            raise ToolFailure(MeiliError("invalid_chat_setting_document_template", str(exc))) from None
        out.documents.append(maker.make(document, score, details))
        if primary_key is not None:
            try:
                out.document_ids.append(extract_document_id(document, primary_key))
            except Exception:
                out.document_ids.append("")
    out.text = "\n".join(texts)
    return out


# -- the stream -----------------------------------------------------------------------------------------


def _event(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def _tool_chunk(template: dict[str, Any], name: str, arguments: str) -> bytes:
    """A copy of the last LLM chunk whose only choice is a call to the marker tool `name`."""
    chunk = copy.deepcopy(template)
    choice = {
        "index": 0,
        "delta": {
            "content": None,
            "function_call": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": str(uuid.uuid4()),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
            "role": "assistant",
            "refusal": None,
        },
        "finish_reason": None,
        "logprobs": None,
    }
    choices = chunk.get("choices") or [{}]
    choices[0] = choice
    chunk["choices"] = choices
    return _event(chunk)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Conversation:
    request: Request
    settings: dict[str, Any]
    completion: dict[str, Any]
    support: Support
    token: str | None
    features: Any
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)

    def search_filter(self, uid: str) -> AuthFilter:
        """The caller's rights on `uid` for a search, re-authenticated as Meilisearch does."""
        app_state = self.request.app.state
        master_key: str | None = app_state.master_key
        if master_key is None or self.token is None:
            return ALLOW_ALL
        if hmac.compare_digest(self.token.encode(), master_key.encode()):
            return ALLOW_ALL
        resolver = getattr(app_state, "key_resolver", None)
        if isinstance(resolver, FilteringResolver):
            return resolver.authenticate(self.token, "search", uid)
        return auth_filter(self.request)

    async def search(self, arguments: str) -> SearchOutcome:
        try:
            args = json.loads(arguments)
            if not isinstance(args, dict) or not isinstance(args.get("index_uid"), str):
                raise ValueError("missing field `index_uid`")
            q, flt = args.get("q"), args.get("filter")
            if (q is not None and not isinstance(q, str)) or (flt is not None and not isinstance(flt, str)):
                raise ValueError("invalid type: expected a string")
        except ValueError as exc:
            return SearchOutcome(str(exc), ok=False)
        uid = args["index_uid"]
        try:
            caller = self.search_filter(uid)
        except MeiliError as err:
            raise ToolFailure(err) from None

        def search(reader: IndexReader) -> SearchOutcome:
            try:
                body = dict(complete_settings(reader.settings())["chat"]["searchParameters"])
                if q:
                    body["q"] = q
                if flt:
                    body["filter"] = flt
                query = parse_search_body(body)
                fused = caller.fuse_filter(uid, query.filter)
                if fused is not query.filter:
                    query = dataclasses.replace(query, filter=fused)
                parse_search_filter(query.filter, self.features)
            except MeiliError as err:
                raise ToolFailure(err) from None
            return run_chat_search(reader, uid, query, self.features)

        try:
            return await run_queued(self.request, read_index, state(self.request).indexes, uid, search)
        except MeiliError as err:  # the index does not exist, the search queue is full
            raise ToolFailure(err) from None

    async def handle_calls(self, template: dict[str, Any]) -> AsyncIterator[bytes]:
        pending = [self.calls[i] for i in sorted(self.calls)]
        self.calls = {}
        meili_calls = [c for c in pending if c["name"] == SEARCH_IN_INDEX]
        self.completion["messages"].append(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in meili_calls
                ],
            }
        )
        for call in meili_calls:
            call_id, arguments = call["id"], call["arguments"]
            if self.support.progress:
                yield _tool_chunk(
                    template,
                    SEARCH_PROGRESS,
                    _compact(
                        {"call_id": call_id, "function_name": call["name"], "function_arguments": arguments}
                    ),
                )
            if self.support.append:
                yield _tool_chunk(
                    template,
                    APPEND_MESSAGE,
                    _compact(
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "id": call_id,
                                    "type": "function",
                                    "function": {"name": call["name"], "arguments": arguments},
                                }
                            ],
                        }
                    ),
                )
            failure: MeiliError | None = None
            try:
                outcome = await self.search(arguments)
            except ToolFailure as exc:
                failure = exc.error
                outcome = SearchOutcome(f"the search tool call failed with {exc.error.message}", ok=False)
            if outcome.ok and self.support.sources:
                args = json.loads(arguments)
                yield _tool_chunk(
                    template,
                    SEARCH_SOURCES,
                    _compact(
                        {
                            "call_id": call_id,
                            "sources": outcome.documents,
                            "index_uid": args["index_uid"],
                            "primary_key": outcome.primary_key,
                            "document_ids": outcome.document_ids,
                        }
                    ),
                )
            tool_message = {"role": "tool", "content": outcome.text, "tool_call_id": call_id}
            if self.support.append:
                yield _tool_chunk(template, APPEND_MESSAGE, _compact(tool_message))
            self.completion["messages"].append(tool_message)
            if failure is not None:
                yield _event(llm.error_event("response_error", failure.message, failure.code))

    async def round(self, client: Any, url: str, headers: dict[str, str]) -> AsyncIterator[bytes | str]:
        """One LLM round: its events, then the round's finish reason (a `str`, `""` for none)."""
        finish: str | None = None
        source = self.settings["source"]
        body = dict(self.completion)
        if source in ("openAi", "azureOpenAi"):
            body["stream_options"] = {"include_usage": True}
        else:
            body.pop("stream_options", None)
        last: dict[str, Any] | None = None
        async with contextlib.aclosing(llm.stream_chunks(client, url, headers, body, source)) as chunks:
            async for chunk in chunks:
                choices = chunk["choices"]
                if not choices:
                    break  # the usage chunk ends the round
                last = chunk
                choice = choices[0] if isinstance(choices[0], dict) else {}
                finish = choice.get("finish_reason")
                delta = choice.get("delta")
                tool_calls = delta.get("tool_calls") if isinstance(delta, dict) else None
                if isinstance(tool_calls, list) and tool_calls:
                    self.accumulate(tool_calls)
                elif self.calls:
                    async for event in self.handle_calls(chunk):
                        yield event
                else:
                    yield _event(chunk)
        if self.calls and finish == "tool_calls" and last is not None:
            # the calls and the finish reason came in the same chunk (Meilisearch would call the LLM again
            # without answering them): they are answered now
            async for event in self.handle_calls(last):
                yield event
        yield finish or ""

    def accumulate(self, tool_calls: list[Any]) -> None:
        """Tool-call fragments: a new index opens a call, later fragments extend its arguments."""
        for part in tool_calls:
            if not isinstance(part, dict):
                continue
            raw_index, function = part.get("index"), part.get("function")
            index = raw_index if isinstance(raw_index, int) else 0
            if not isinstance(function, dict):
                function = {}
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = ""
            call = self.calls.get(index)
            if call is None:
                self.calls[index] = {
                    "id": str(part.get("id") or ""),
                    "name": str(function.get("name") or ""),
                    "arguments": arguments,
                }
            elif call["name"] == SEARCH_IN_INDEX:
                call["arguments"] += arguments

    async def events(self) -> AsyncIterator[bytes]:
        first = True
        async for event in self._events():
            yield RETRY + event if first else event
            first = False

    async def _events(self) -> AsyncIterator[bytes]:
        url, headers = llm.endpoint(self.settings)
        try:
            await llm.check_destination(url)
        except llm.LlmError as err:
            yield _event(err.event)
            yield DONE
            return
        async with llm.new_client() as client:
            for _ in range(MAX_ROUNDS):
                finish = ""
                try:
                    async for item in self.round(client, url, headers):
                        if isinstance(item, str):
                            finish = item
                        else:
                            yield item
                except llm.LlmError as err:
                    yield _event(err.event)
                    break
                except Exception as exc:  # a fault of the engine: the client still gets an event and the end
                    log.exception("a chat completion round failed")
                    yield _event(
                        llm.error_event(
                            "internal", f"An internal error occurred: {type(exc).__name__}.", "internal"
                        )
                    )
                    break
                if finish != "tool_calls":
                    break
        yield DONE


async def start_completion(
    request: Request, workspace: str, raw: bytes, not_found: Callable[[str], MeiliError]
) -> Response:
    """Check the request (plain HTTP errors), then answer with the conversation's event stream."""
    body = decode_json_body(raw, request.headers.get("content-type"))
    completion = parse_request(body, raw)
    check_chat(request, "using the /chats chat completions route")
    n = completion.get("n")
    if n is not None and n != 1:
        raise MeiliError(
            "unimplemented_multi_choice_chat_completions",
            f"You tried to specify n = {n} but only single choices are supported (n = 1).",
        )
    if not completion.get("stream"):
        raise MeiliError(
            "unimplemented_non_streaming_chat_completions", "Non-streamed chat completions is not implemented"
        )
    settings = await run_in_threadpool(chat_store.get_workspace, state(request).scheduler.store, workspace)
    if settings is None:
        raise not_found(workspace)
    token = bearer_token(request)
    caller = auth_filter(request)
    completion = copy.deepcopy(completion)
    support = take_marker_tools(completion)
    tool = await run_in_threadpool(search_tool, request, settings["prompts"], caller)
    completion["tools"].append(tool)
    role = llm.system_role(settings["source"], completion["model"])
    completion["messages"].insert(0, {"role": role, "content": settings["prompts"]["system"]})
    conversation = Conversation(request, settings, completion, support, token, filter_features(request))
    headers = {"Cache-Control": "no-cache", "Content-Encoding": "identity", "X-Accel-Buffering": "no"}
    return EventStream(conversation.events(), media_type="text/event-stream", headers=headers)


class EventStream(StreamingResponse):
    """A streaming response that stops its producer as soon as the client disconnects, whatever the
    ASGI version (Starlette only watches for the disconnect before ASGI 2.4; after, it notices at the next
    write, which may be a long LLM wait away)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:

            async def produce() -> None:
                try:
                    await self.stream_response(send)
                except OSError:
                    pass  # the client went away mid-write
                group.cancel_scope.cancel()

            group.start_soon(produce)
            await self.listen_for_disconnect(receive)
            group.cancel_scope.cancel()
