"""Chat completions (`POST /chats/{workspace}/chat/completions`) end to end, against a scripted LLM.

The engine runs with a master key and `--experimental-allowed-ip-networks 127.0.0.0/8` (so it may reach the
loopback LLM); the LLM (`scripted_llm.ScriptedLlm`) answers each round from a script and records what the
engine sent. Covered: the request the LLM receives (system prompt, the `_meiliSearchInIndex` tool over the
caller's indexes, facet values, headers), searches run with the index's chat parameters and rendered with its
template, the SSE stream (forwarded chunks in order, progress/sources/append-message tool chunks, `[DONE]`),
keys and tenant tokens restricting what the model can search, LLM failures as error events, a client that
disconnects stopping the upstream call, and the errors answered before the stream starts. The official
`openai` client drives the route as an application would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, Final

import httpx
import pytest

from hanzo_engine.auth import encode_token
from tests.conftest import MASTER_KEY, ServerProcess, wait_task
from tests.http.scripted_llm import MODEL, Reply, ScriptedLlm, chunk, text_reply, tool_reply, usage

WS: Final = "assistant"
MOVIES: Final = "chat_movies"
BOOKS: Final = "chat_books"
MARKERS: Final = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("_meiliSearchProgress", "_meiliSearchSources", "_meiliAppendConversationMessage")
]
MOVIE_DOCS: Final = [
    {"id": 1, "title": "Carol", "genre": "drama", "tenant": "a", "secret": "s1"},
    {"id": 2, "title": "Wonder Woman", "genre": "action", "tenant": "b", "secret": "s2"},
    {"id": 3, "title": "Life of Pi", "genre": "adventure", "tenant": "a", "secret": "s3"},
    {"id": 4, "title": "Mad Max", "genre": "action", "tenant": "a", "secret": "s4"},
]


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLlm]:
    server = ScriptedLlm().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLlm) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("chats") / "data.ms",
        extra_args=[
            "--master-key",
            MASTER_KEY,
            "--experimental-allowed-ip-networks",
            "127.0.0.0/8",
            "--http-workers",
            "2",
        ],
        env={"HANZO_CHAT_LLM_READ_TIMEOUT": "3"},
    ).start()
    with httpx.Client(base_url=srv.url, timeout=30, headers=auth(MASTER_KEY)) as admin:
        assert admin.patch("/experimental-features", json={"chatCompletions": True}).status_code == 200
        r = admin.patch(
            f"/chats/{WS}/settings",
            json={"source": "vLlm", "baseUrl": llm.base_url, "apiKey": "sk-scripted-llm-key-0123456789"},
        )
        assert r.status_code == 200, r.text
        tasks = [
            admin.patch(
                f"/indexes/{MOVIES}/settings",
                json={
                    "filterableAttributes": ["genre", "tenant"],
                    "displayedAttributes": ["id", "title", "genre"],
                    "chat": {
                        "description": "Movies with their genre",
                        "documentTemplate": "{{ doc.title }} ({{ doc.genre }})",
                        "searchParameters": {"limit": 2},
                    },
                },
            ).json()["taskUid"],
            admin.post(f"/indexes/{MOVIES}/documents", json=MOVIE_DOCS).json()["taskUid"],
            admin.patch(f"/indexes/{BOOKS}/settings", json={"chat": {"description": "Books"}}).json()[
                "taskUid"
            ],
            admin.post(f"/indexes/{BOOKS}/documents", json=[{"id": "b1", "title": "Dune"}]).json()["taskUid"],
        ]
        for uid in tasks:
            assert wait_task(admin, uid)["status"] == "succeeded"
    yield srv
    srv.stop()


@pytest.fixture
def admin(engine: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=engine.url, timeout=30, headers=auth(MASTER_KEY)) as client:
        yield client


def events(response: httpx.Response) -> list[Any]:
    """The `data:` payloads of an SSE body, JSON-decoded (`[DONE]` kept as the string)."""
    out: list[Any] = []
    for block in response.text.split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data: "):
                data = line[len("data: ") :]
                out.append(data if data == "[DONE]" else json.loads(data))
    return out


def chat(
    client: httpx.Client,
    messages: list[dict[str, Any]] | None = None,
    *,
    token: str = MASTER_KEY,
    tools: list[dict[str, Any]] | None = None,
    ws: str = WS,
    **extra: Any,
) -> httpx.Response:
    body: dict[str, Any] = {
        "model": MODEL,
        "stream": True,
        "messages": messages or [{"role": "user", "content": "Which action movies?"}],
    }
    if tools is not None:
        body["tools"] = tools
    body.update(extra)
    return client.post(f"/chats/{ws}/chat/completions", json=body, headers=auth(token))


def tool_calls_of(event: Any) -> list[dict[str, Any]]:
    if not isinstance(event, dict) or "choices" not in event:
        return []
    return list(event["choices"][0]["delta"].get("tool_calls") or [])


def marker_payloads(evts: list[Any], name: str) -> list[dict[str, Any]]:
    return [
        json.loads(call["function"]["arguments"])
        for e in evts
        for call in tool_calls_of(e)
        if call["function"]["name"] == name
    ]


def content_of(evts: list[Any]) -> str:
    return "".join(
        e["choices"][0]["delta"].get("content") or ""
        for e in evts
        if isinstance(e, dict) and e.get("choices") and not tool_calls_of(e)
    )


# -- the conversation ------------------------------------------------------------------------------------


def test_search_round_then_streamed_answer(admin: httpx.Client, llm: ScriptedLlm) -> None:
    llm.play(
        tool_reply(("call_1", {"index_uid": MOVIES, "q": "", "filter": "genre = action"})),
        text_reply("Wonder ", "Woman and ", "Mad Max."),
    )
    r = chat(admin, tools=MARKERS)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["cache-control"] == "no-cache"
    assert r.headers["x-accel-buffering"] == "no"
    assert r.text.startswith("retry: 10000\ndata: ")
    evts = events(r)
    assert evts[-1] == "[DONE]"
    assert not [e for e in evts if isinstance(e, dict) and e.get("type") == "error"]

    # what the LLM was sent: system prompt first, the search tool only, the workspace's key
    first, second = llm.requests
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["authorization"] == "Bearer sk-scripted-llm-key-0123456789"
    sent = first["body"]
    assert sent["messages"][0]["role"] == "system"  # vLlm: always `system`
    assert sent["messages"][0]["content"].startswith("You are a highly capable research assistant")
    assert sent["messages"][1] == {"role": "user", "content": "Which action movies?"}
    assert "stream_options" not in sent and sent["stream"] is True and sent["model"] == MODEL
    [tool] = sent["tools"]
    function = tool["function"]
    assert function["name"] == "_meiliSearchInIndex" and function["strict"] is True
    params = function["parameters"]
    assert params["required"] == ["index_uid", "q", "filter"] and params["additionalProperties"] is False
    assert params["properties"]["index_uid"]["enum"] == [BOOKS, MOVIES]
    assert f"\n\n - {MOVIES}: Movies with their genre\n\n" in function["description"]
    assert f"\n\n - {BOOKS}: Books\n\n" in function["description"]
    filter_text = params["properties"]["filter"]["description"]
    assert f"\n## Facet distributions of the {MOVIES} index\n" in filter_text
    assert "genre: action, " in filter_text and "tenant: a, b.\n" in filter_text

    # the second round carries the search: the assistant's call and the rendered hits
    messages = second["body"]["messages"]
    assert messages[-2]["role"] == "assistant"
    [call] = messages[-2]["tool_calls"]
    assert call["id"] == "call_1" and call["function"]["name"] == "_meiliSearchInIndex"
    assert json.loads(call["function"]["arguments"]) == {
        "index_uid": MOVIES,
        "q": "",
        "filter": "genre = action",
    }
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Wonder Woman (action)\nMad Max (action)",
    }

    # the client's stream: progress, the call to append, sources, the tool message, then the answer
    progress = marker_payloads(evts, "_meiliSearchProgress")
    assert progress == [
        {
            "call_id": "call_1",
            "function_name": "_meiliSearchInIndex",
            "function_arguments": call["function"]["arguments"],
        }
    ]
    appended = marker_payloads(evts, "_meiliAppendConversationMessage")
    assert appended[0]["role"] == "assistant" and appended[0]["tool_calls"][0]["id"] == "call_1"
    assert appended[1] == messages[-1]
    [sources] = marker_payloads(evts, "_meiliSearchSources")
    assert sources["call_id"] == "call_1"
    # displayed attributes only (no `tenant`, no `secret`), with the index and primary keys to cite
    assert sources["sources"] == [
        {"id": 2, "title": "Wonder Woman", "genre": "action"},
        {"id": 4, "title": "Mad Max", "genre": "action"},
    ]
    assert sources["index_uid"] == MOVIES and sources["primary_key"] == "id"
    assert sources["document_ids"] == ["2", "4"]
    assert content_of(evts) == "Wonder Woman and Mad Max."
    names = [c["function"]["name"] for e in evts for c in tool_calls_of(e)]
    assert names == [
        "_meiliSearchProgress",
        "_meiliAppendConversationMessage",
        "_meiliSearchSources",
        "_meiliAppendConversationMessage",
    ]
    synthetic = next(e for e in evts if tool_calls_of(e))
    assert synthetic["choices"][0]["delta"]["role"] == "assistant"
    assert synthetic["choices"][0]["finish_reason"] is None and synthetic["object"] == "chat.completion.chunk"


def test_without_markers_only_the_answer_streams(admin: httpx.Client, llm: ScriptedLlm) -> None:
    llm.play(
        tool_reply(
            ("c1", {"index_uid": BOOKS, "q": "dune", "filter": ""}),
            ("c2", {"index_uid": MOVIES, "q": "carol", "filter": ""}),
        ),
        text_reply("Dune", " and Carol"),
    )
    evts = events(chat(admin))
    assert not [e for e in evts if tool_calls_of(e)]
    assert content_of(evts) == "Dune and Carol"
    messages = llm.requests[1]["body"]["messages"]
    assert [c["id"] for c in messages[-3]["tool_calls"]] == ["c1", "c2"]
    # the books index has the default template: every searchable field, one per line
    assert messages[-2] == {"role": "tool", "tool_call_id": "c1", "content": "id: b1\ntitle: Dune\n"}
    assert messages[-1] == {"role": "tool", "tool_call_id": "c2", "content": "Carol (drama)"}


def test_tenant_token_restricts_searches_and_facets(admin: httpx.Client, llm: ScriptedLlm) -> None:
    parent = admin.post(
        "/keys", json={"actions": ["chatCompletions", "search"], "indexes": [MOVIES], "expiresAt": None}
    ).json()
    token = encode_token(
        {
            "apiKeyUid": parent["uid"],
            "searchRules": {MOVIES: {"filter": "tenant = a"}},
            "exp": int(time.time()) + 600,
        },
        parent["key"],
    )
    llm.play(
        tool_reply(("t1", {"index_uid": MOVIES, "q": "", "filter": "genre = action"})), text_reply("Mad Max")
    )
    evts = events(chat(admin, token=token, tools=MARKERS))
    [tool] = llm.requests[0]["body"]["tools"]
    params = tool["function"]["parameters"]["properties"]
    assert params["index_uid"]["enum"] == [MOVIES]  # the key does not cover the books
    assert "tenant: a.\n" in params["filter"]["description"]  # facet values within the tenant's documents
    [sources] = marker_payloads(evts, "_meiliSearchSources")
    assert [d["id"] for d in sources["sources"]] == [4]  # Wonder Woman belongs to tenant b
    assert llm.requests[1]["body"]["messages"][-1]["content"] == "Mad Max (action)"


def test_search_outside_the_key_fails_the_tool_call(admin: httpx.Client, llm: ScriptedLlm) -> None:
    key = admin.post(
        "/keys", json={"actions": ["chatCompletions", "search"], "indexes": [MOVIES], "expiresAt": None}
    ).json()["key"]
    llm.play(tool_reply(("x1", {"index_uid": BOOKS, "q": "dune", "filter": ""})), text_reply("sorry"))
    evts = events(chat(admin, token=key, tools=MARKERS))
    assert not marker_payloads(evts, "_meiliSearchSources")
    tool_message = llm.requests[1]["body"]["messages"][-1]
    assert tool_message["content"].startswith("the search tool call failed with ")
    errors = [e for e in evts if isinstance(e, dict) and e.get("type") == "error"]
    assert errors[0]["error"]["type"] == "response_error" and errors[0]["error"]["code"] == "invalid_api_key"
    assert content_of(evts) == "sorry" and evts[-1] == "[DONE]"


def test_search_errors_reach_the_llm(admin: httpx.Client, llm: ScriptedLlm) -> None:
    llm.play(
        tool_reply(
            ("e1", {"index_uid": MOVIES, "q": "", "filter": "title = Carol"}),
            ("e2", {"index_uid": MOVIES, "q": "", "filter": "genre = = ="}),
        ),
        text_reply("done"),
    )
    evts = events(chat(admin))
    messages = llm.requests[1]["body"]["messages"]
    # not filterable: a user error of the search, the message alone and no error event
    assert messages[-2]["content"].startswith("Attribute `title` is not filterable.")
    # a filter that does not parse fails before the search: prefixed, and an error event
    assert messages[-1]["content"].startswith("the search tool call failed with ")
    errors = [e for e in evts if isinstance(e, dict) and e.get("type") == "error"]
    assert [e["error"]["code"] for e in errors] == ["invalid_search_filter"]


def test_the_official_openai_client(engine: ServerProcess, llm: ScriptedLlm) -> None:
    openai = pytest.importorskip("openai")
    llm.play(tool_reply(("o1", {"index_uid": MOVIES, "q": "pi", "filter": ""})), text_reply("Life ", "of Pi"))
    client = openai.OpenAI(base_url=f"{engine.url}/chats/{WS}", api_key=MASTER_KEY)
    stream = client.chat.completions.create(
        model=MODEL, stream=True, tools=MARKERS, messages=[{"role": "user", "content": "a tiger in a boat?"}]
    )
    text, sources = "", []
    for part in stream:
        delta = part.choices[0].delta if part.choices else None
        if delta is None:
            continue
        for call in delta.tool_calls or []:
            if call.function.name == "_meiliSearchSources":
                sources.append(json.loads(call.function.arguments))
        text += delta.content or ""
    client.close()
    assert text == "Life of Pi"
    assert [d["title"] for s in sources for d in s["sources"]] == ["Life of Pi"]


# -- LLM failures ----------------------------------------------------------------------------------------


def _error_events(r: httpx.Response) -> list[dict[str, Any]]:
    assert r.status_code == 200
    evts = events(r)
    assert evts[-1] == "[DONE]"
    return [e for e in evts if isinstance(e, dict) and e.get("type") == "error"]


def test_llm_http_error_is_the_providers(admin: httpx.Client, llm: ScriptedLlm) -> None:
    llm.play(
        Reply(
            status=401,
            body={
                "error": {
                    "message": "Incorrect API key provided: sk-XX.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
        )
    )
    [err] = _error_events(chat(admin))
    assert err["error"] == {
        "type": "invalid_request_error",
        "code": "invalid_api_key",
        "message": "Incorrect API key provided: sk-XX.",
        "param": None,
        "event_id": None,
    }
    assert err["event_id"]


def test_llm_server_error_without_json(admin: httpx.Client, llm: ScriptedLlm) -> None:
    llm.play(Reply(status=502, body="bad gateway"))
    [err] = _error_events(chat(admin))
    assert err["error"]["type"] == "reqwest_error"


def test_stream_cut_before_done(admin: httpx.Client, llm: ScriptedLlm) -> None:
    llm.play(Reply([chunk({"role": "assistant", "content": "Hel"})], done=False))
    r = chat(admin)
    [err] = _error_events(r)
    assert err["error"]["type"] == "stream_ended" and err["error"]["message"] == "Stream ended"
    assert content_of(events(r)) == "Hel"


def test_malformed_chunk(admin: httpx.Client, llm: ScriptedLlm) -> None:
    llm.play(Reply(["{not json"]))
    [err] = _error_events(chat(admin))
    assert err["error"]["type"] == "json_deserialize_error" and err["error"]["code"] == "internal"


def test_unreachable_llm(admin: httpx.Client, llm: ScriptedLlm) -> None:
    assert (
        admin.patch(
            "/chats/unreachable/settings", json={"source": "vLlm", "baseUrl": "http://127.0.0.1:9/v1"}
        ).status_code
        == 200
    )
    [err] = _error_events(chat(admin, ws="unreachable"))
    assert err["error"]["type"] == "transport_error"


def test_denied_destination(admin: httpx.Client, llm: ScriptedLlm) -> None:
    # 10.0.0.0/8 is outside `--experimental-allowed-ip-networks`: refused before any connection
    assert (
        admin.patch(
            "/chats/private/settings", json={"source": "vLlm", "baseUrl": "http://10.255.255.1:9/v1"}
        ).status_code
        == 200
    )
    [err] = _error_events(chat(admin, ws="private"))
    assert "Rejected URI" in err["error"]["message"]


def test_llm_timeout_is_a_transport_error(admin: httpx.Client, llm: ScriptedLlm) -> None:
    llm.play(Reply(hang=True))
    started = time.monotonic()
    [err] = _error_events(chat(admin))  # the engine waits 3 s (HANZO_CHAT_LLM_READ_TIMEOUT) for a byte
    assert err["error"]["type"] == "transport_error" and "timed out" in err["error"]["message"]
    assert 2.5 < time.monotonic() - started < 20
    assert llm.aborted.wait(10)


def test_mistral_error_shape(admin: httpx.Client, llm: ScriptedLlm) -> None:
    assert (
        admin.patch(
            "/chats/mistral/settings", json={"source": "mistral", "baseUrl": llm.base_url, "apiKey": "m"}
        ).status_code
        == 200
    )
    llm.play(
        Reply(
            status=401,
            body={"message": "Unauthorized", "type": "invalid_request_error", "param": None, "code": "1000"},
        )
    )
    [err] = _error_events(chat(admin, ws="mistral"))
    assert err["error"] == {
        "type": "invalid_request_error",
        "code": "1000",
        "message": "Unauthorized",
        "param": None,
        "event_id": None,
    }
    # Mistral gets the system prompt as `system` and no `stream_options`
    sent = llm.requests[0]["body"]
    assert sent["messages"][0]["role"] == "system" and "stream_options" not in sent


def test_slow_stream_arrives_in_order(admin: httpx.Client, llm: ScriptedLlm) -> None:
    llm.play(text_reply("one ", "two ", "three", delay=0.05))
    with admin.stream(
        "POST",
        f"/chats/{WS}/chat/completions",
        headers=auth(MASTER_KEY),
        json={"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "x"}]},
    ) as r:
        seen = []
        for line in r.iter_lines():
            if line.startswith("data: {"):
                delta = json.loads(line[6:])["choices"][0]["delta"]
                if delta.get("content"):
                    seen.append((delta["content"], time.monotonic()))
    assert [s for s, _ in seen] == ["one ", "two ", "three"]
    assert seen[-1][1] - seen[0][1] >= 0.08  # streamed as produced, not buffered to the end


def test_client_disconnect_stops_the_upstream_call(engine: ServerProcess, llm: ScriptedLlm) -> None:
    llm.play(Reply(hang=True))
    with (
        httpx.Client(base_url=engine.url, timeout=30) as client,
        client.stream(
            "POST",
            f"/chats/{WS}/chat/completions",
            headers=auth(MASTER_KEY),
            json={"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "x"}]},
        ) as r,
    ):
        assert r.status_code == 200
        deadline = time.monotonic() + 10
        while not llm.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        assert llm.requests
    assert llm.aborted.wait(10), "the engine kept the LLM request open after its client left"


def test_openai_source_sends_usage_option_and_developer_role(admin: httpx.Client, llm: ScriptedLlm) -> None:
    assert (
        admin.patch(
            "/chats/oai/settings",
            json={
                "source": "openAi",
                "baseUrl": llm.base_url,
                "apiKey": "k",
                "orgId": "org-1",
                "projectId": "proj-1",
            },
        ).status_code
        == 200
    )
    llm.play(text_reply("hi"))
    evts = events(chat(admin, ws="oai", model="gpt-5"))
    assert content_of(evts) == "hi"
    sent = llm.requests[0]
    assert sent["body"]["stream_options"] == {"include_usage": True}
    assert sent["body"]["messages"][0]["role"] == "developer"
    assert sent["headers"]["openai-organization"] == "org-1" and sent["headers"]["openai-project"] == "proj-1"
    llm.play(text_reply("hi"))
    chat(admin, ws="oai", model="gpt-4o-mini")
    assert llm.requests[0]["body"]["messages"][0]["role"] == "system"


def test_azure_endpoint(admin: httpx.Client, llm: ScriptedLlm) -> None:
    base = llm.base_url.removesuffix("/v1")
    assert (
        admin.patch(
            "/chats/azure/settings",
            json={
                "source": "azureOpenAi",
                "baseUrl": base,
                "apiKey": "az",
                "deploymentId": "dep",
                "apiVersion": "2024-02-01",
            },
        ).status_code
        == 200
    )
    llm.play(text_reply("hi"))
    chat(admin, ws="azure")
    sent = llm.requests[0]
    assert (
        sent["path"] == "/openai/deployments/dep/chat/completions"
        and sent["query"] == "api-version=2024-02-01"
    )
    assert sent["headers"]["api-key"] == "az"


# -- errors before the stream ----------------------------------------------------------------------------


def error(message: str, code: str, type_: str = "invalid_request") -> dict[str, str]:
    return {
        "message": message,
        "code": code,
        "type": type_,
        "link": f"https://docs.meilisearch.com/errors#{code}",
    }


def test_request_errors(admin: httpx.Client) -> None:
    r = chat(admin, stream=False)
    assert (r.status_code, r.json()) == (
        501,
        error(
            "Non-streamed chat completions is not implemented", "unimplemented_non_streaming_chat_completions"
        ),
    )
    r = chat(admin, n=2)
    assert (r.status_code, r.json()) == (
        501,
        error(
            "You tried to specify n = 2 but only single choices are supported (n = 1).",
            "unimplemented_multi_choice_chat_completions",
        ),
    )
    r = chat(admin, ws="nope")
    assert (r.status_code, r.json()) == (404, error("Chat `nope` not found", "chat_not_found"))
    r = chat(admin, tools=[{"type": "function", "function": {"name": "_meiliSearchInIndex"}}])
    assert (r.status_code, r.json()) == (
        400,
        error("_meiliSearchInIndex function is already defined.", "bad_request"),
    )
    r = chat(admin, tools=[{"type": "function", "function": {"name": "weather"}}])
    assert (r.status_code, r.json()) == (
        501,
        error(
            "weather: External functions are not supported yet.", "unimplemented_external_function_calling"
        ),
    )
    r = admin.post(
        f"/chats/{WS}/chat/completions", content=b"{}", headers={"content-type": "application/json"}
    )
    assert (r.status_code, r.json()) == (
        400,
        error("Json deserialize error: missing field `messages` at line 1 column 2", "bad_request"),
    )


def test_search_key_without_chat_action_is_refused(admin: httpx.Client) -> None:
    key = admin.post("/keys", json={"actions": ["search"], "indexes": ["*"], "expiresAt": None}).json()["key"]
    r = chat(admin, token=key)
    assert r.status_code == 403 and r.json()["code"] == "invalid_api_key"


# -- rendering -------------------------------------------------------------------------------------------


def test_default_template_fast_path_renders_as_liquid() -> None:
    """The default chat template is rendered without the Liquid interpreter: same text for any document."""
    import random

    from hanzo_engine.engine.vector.prompt import DEFAULT_TEMPLATE, Prompt
    from hanzo_engine.server.chats.conversation import render_hit

    rng = random.Random(3)

    def value(depth: int = 0) -> Any:
        kind = rng.randrange(9 if depth < 2 else 7)
        simple: list[Any] = [
            None,
            rng.random() < 0.5,
            rng.randrange(-5, 10**6),
            rng.random() * 1e6,
            "é漢x" * rng.randrange(3),
            2.0,
            "",
        ]
        if kind < 7:
            return simple[kind]
        if kind == 7:
            return [value(depth + 1) for _ in range(rng.randrange(3))]
        return {f"k{i}": value(depth + 1) for i in range(rng.randrange(3))}

    for _ in range(2000):
        document = {f"f{i}": value() for i in range(rng.randrange(6))}
        if rng.random() < 0.3:
            document["_vectors"] = {"e": [1.0]}
        order = list(document)[::-1] if rng.random() < 0.5 else []
        searchable = None if rng.random() < 0.5 else [k for k in document if rng.random() < 0.5]
        prompt = Prompt(DEFAULT_TEMPLATE, rng.choice([None, 400, 10]))
        assert render_hit(prompt, document, searchable, order) == prompt.render(document, searchable, order)


def test_the_meilisearch_python_sdk(engine: ServerProcess, llm: ScriptedLlm) -> None:
    meilisearch = pytest.importorskip("meilisearch")
    client = meilisearch.Client(engine.url, MASTER_KEY)
    settings = client.update_chat_workspace_settings(
        "sdk", {"source": "vLlm", "baseUrl": llm.base_url, "apiKey": "sdk-key-123456789"}
    )
    assert settings["source"] == "vLlm" and settings["apiKey"] == "sdXXXX..."
    assert client.get_chat_workspace_settings("sdk")["baseUrl"] == llm.base_url
    assert {"uid": "sdk"} in client.get_chat_workspaces(limit=100)["results"]
    llm.play(tool_reply(("s1", {"index_uid": MOVIES, "q": "carol", "filter": ""})), text_reply("Carol", "!"))
    chunks = list(
        client.create_chat_completion(
            "sdk", [{"role": "user", "content": "a film about Carol?"}], model=MODEL
        )
    )
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
    assert text == "Carol!"
    assert llm.requests[1]["body"]["messages"][-1]["content"] == "Carol (drama)"


def test_hybrid_chat_search(admin: httpx.Client, llm: ScriptedLlm) -> None:
    """An index whose chat parameters name an embedder: the LLM's query is embedded and searched hybrid."""
    uid = "chat_hybrid"
    embedder = {
        "source": "rest",
        "url": f"http://127.0.0.1:{llm.port}/embed",
        "request": "{{text}}",
        "response": {"data": "{{embedding}}"},
        "dimensions": 3,
        "documentTemplate": "{{doc.title}}",
    }
    tasks = [
        admin.patch(
            f"/indexes/{uid}/settings",
            json={
                "embedders": {"default": embedder},
                "chat": {
                    "documentTemplate": "{{ doc.title }}",
                    "searchParameters": {"hybrid": {"embedder": "default", "semanticRatio": 1.0}, "limit": 1},
                },
            },
        ).json(),
        admin.post(
            f"/indexes/{uid}/documents", json=[{"id": 1, "title": "aaaa"}, {"id": 2, "title": "1234"}]
        ).json(),
    ]
    for task in tasks:
        assert wait_task(admin, task["taskUid"])["status"] == "succeeded"
    llm.embedded.clear()
    llm.play(tool_reply(("h1", {"index_uid": uid, "q": "5678", "filter": ""})), text_reply("digits"))
    evts = events(chat(admin, tools=MARKERS))
    assert "5678" in llm.embedded  # the query went through the embedder
    [sources] = marker_payloads(evts, "_meiliSearchSources")
    assert [d["id"] for d in sources["sources"]] == [2]  # nearest by meaning, no shared word
    assert llm.requests[1]["body"]["messages"][-1]["content"] == "1234"


def test_every_llm_connection_goes_through_the_ip_policy() -> None:
    """The chat client's network backend refuses a private address itself (not only the first check)."""
    import asyncio

    from hanzo_engine.engine import net_guard
    from hanzo_engine.server.chats.llm import GuardedBackend

    async def connect(host: str) -> None:
        await GuardedBackend(net_guard.IpPolicy()).connect_tcp(host, 9, timeout=1)

    with pytest.raises(net_guard.DeniedAddress):
        asyncio.run(connect("10.255.255.1"))
    with pytest.raises(net_guard.DeniedAddress):
        asyncio.run(connect("localhost"))


def test_calls_finishing_in_their_own_chunk_are_answered(admin: httpx.Client, llm: ScriptedLlm) -> None:
    """Some providers send the last tool-call fragment and `finish_reason: tool_calls` in one chunk."""
    arguments = json.dumps({"index_uid": MOVIES, "q": "carol", "filter": ""})
    call = {
        "index": 0,
        "id": "f1",
        "type": "function",
        "function": {"name": "_meiliSearchInIndex", "arguments": arguments},
    }
    llm.play(
        Reply(
            [
                chunk({"role": "assistant", "content": None}),
                chunk({"tool_calls": [call]}, "tool_calls"),
                usage(),
            ]
        ),
        text_reply("Carol"),
    )
    evts = events(chat(admin))
    assert content_of(evts) == "Carol" and len(llm.requests) == 2
    assert llm.requests[1]["body"]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "f1",
        "content": "Carol (drama)",
    }
