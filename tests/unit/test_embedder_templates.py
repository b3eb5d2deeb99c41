"""Embedder templates: the JSON `request`/`response` templates of REST embedders (Meilisearch's
`json_template` messages), document templates (the Liquid subset), the REST client's error and retry
rules, and the settings rules of generating embedders."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine import net_guard
from hanzo_engine.engine.vector.embedders import check_embedder, effective_distribution, reindex_action
from hanzo_engine.engine.vector.json_template import (
    REPEAT_PLACEHOLDER,
    REQUEST_PLACEHOLDER,
    RESPONSE_PLACEHOLDER,
    ExtractionError,
    InjectableValue,
    TemplateError,
    osa_distance,
)
from hanzo_engine.engine.vector.liquid_values import RenderError, TemplateSyntaxError
from hanzo_engine.engine.vector.prompt import DEFAULT_TEMPLATE, Prompt, truncate_utf8
from hanzo_engine.engine.vector.rest import (
    EmbedderError,
    RestEmbedder,
    RestOptions,
    retry_delay,
    status_error,
)
from hanzo_engine.rustcompat.floats import f64_display as format_float

# -- JSON templates -----------------------------------------------------------------------------------


def request_error(template: Any) -> str:
    with pytest.raises(TemplateError) as info:
        InjectableValue(template, REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER)
    return info.value.message("request", REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER)


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("54", 'in `request`: "{{text}}" not found'),
        (
            {"input": [{"input": ["{{text}}", "{{..}}"]}, "{{..}}"]},
            'in `request.input.input`: "{{..}}" appears nested inside of a value that is itself repeated',
        ),
        (
            {"input": {"input": "{{text}}", "repeat": "{{..}}"}},
            'in `request.input.repeat`: "{{..}}" appears outside of an array',
        ),
        (
            {"input": ["{{..}}", "{{text}}"]},
            'in `request.input`: "{{..}}" expected at position #1, but found at position #0',
        ),
        (
            {"input": ["{{text}}", "42", "{{..}}"]},
            'in `request.input`: "{{..}}" expected at position #1, but found at position #2',
        ),
        (
            {"input": ["42", "{{..}}"]},
            'in `request.input[0]`: Expected "{{text}}" inside of the repeated value',
        ),
        (
            {"input": ["{{text}}", "{{..}}"], "data": ["42", "{{..}}"]},
            'in `request.data`: Found "{{..}}", but it was already present in `request.input`',
        ),
        (
            {"input": "{{text}}", "data": "{{text}}"},
            'in `request.data`: Found "{{text}}", but it was already present in `request.input`',
        ),
        (
            {"repeated": [{"input": "{{text}}", "data": [42, "{{text}}"]}, "{{..}}"]},
            'in `request.repeated.data[1]`: Found "{{text}}", but it was already present in `request.repeated.input`',
        ),
        (
            {"input": ["{{text}}", "{{..}}"], "data": "{{text}}"},
            'in `request.data`: Found "{{text}}", but it was already present in `request.input[0]` (repeated)',
        ),
    ],
)
def test_template_parse_errors(template: Any, message: str) -> None:
    assert request_error(template) == message


def test_inject_single_and_repeated() -> None:
    single = InjectableValue(
        {"model": "m", "input": "{{text}}", "n": [1, 2]}, REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER
    )
    assert not single.has_array_value
    assert single.inject(["a", "b"]) == {"model": "m", "input": "a", "n": [1, 2]}
    batch = InjectableValue(
        {"input": [{"text": "{{text}}", "kind": "doc"}, "{{..}}"]}, REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER
    )
    assert batch.has_array_value
    assert batch.inject(["a", "b"]) == {"input": [{"text": "a", "kind": "doc"}, {"text": "b", "kind": "doc"}]}
    assert InjectableValue("{{text}}", REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER).inject(["x"]) == "x"
    with pytest.raises(ValueError):
        batch.inject([])


def extraction_error(template: Any, response: Any) -> str:
    value = InjectableValue(template, RESPONSE_PLACEHOLDER, REPEAT_PLACEHOLDER)
    with pytest.raises(ExtractionError) as info:
        value.extract(response)
    return info.value.message("response", RESPONSE_PLACEHOLDER, "an array of numbers")


def test_extract_embeddings() -> None:
    value = InjectableValue(
        {"output": [{"embedding": "{{embedding}}"}, "{{..}}"]}, RESPONSE_PLACEHOLDER, REPEAT_PLACEHOLDER
    )
    assert value.extract({"output": [{"embedding": [1, 2.5]}, {"embedding": [0, -1]}], "x": 1}) == [
        [1.0, 2.5],
        [0.0, -1.0],
    ]
    assert InjectableValue("{{embedding}}", RESPONSE_PLACEHOLDER, REPEAT_PLACEHOLDER).extract([3]) == [[3.0]]


@pytest.mark.parametrize(
    ("template", "response", "message"),
    [
        (
            "{{embedding}}",
            {"data": [1]},
            'in `response`, while extracting a single "{{embedding}}", expected `response` '
            "to be an array of numbers, but failed to parse server response:\n  - invalid type: map, expected a sequence",
        ),
        (
            ["{{embedding}}", "{{..}}"],
            {"output": []},
            'in `response`, while extracting the array of "{{embedding}}"s, '
            "configuration expects `response` to be an array with at least 1 item(s) but server sent an object with 1 "
            "field(s)",
        ),
        (
            {"output": ["{{embedding}}", "{{..}}"]},
            {"output": [{"a": 1}]},
            "in `response`, while extracting item #0 from "
            'the array of "{{embedding}}"s, expected `response` to be an array of numbers, but failed to parse server '
            "response:\n  - invalid type: map, expected a sequence",
        ),
        (
            {"output": "{{embedding}}"},
            {"output": [{"a": 1}]},
            "in `response.output`, while extracting a single "
            '"{{embedding}}", expected `output` to be an array of numbers, but failed to parse server response:\n  - '
            "invalid type: map, expected f32",
        ),
        (
            {"output": [{"embedding": {"data": "{{embedding}}"}}, "{{..}}"]},
            {"output": [{"embedding": [1, 2, 3]}]},
            'in `response.embedding`, while extracting item #0 from the array of "{{embedding}}"s, configuration expects '
            "`embedding` to be an object with key `data` but server sent an array of size 3",
        ),
        (
            {"output": [{"embeddings": {"data": "{{embedding}}"}}]},
            {"output": [{"embedding": [1]}]},
            'in `response.output[0]`, while extracting a single "{{embedding}}", configuration expects key "embeddings", '
            "which is missing in response\n  - Hint: item #0 inside `output` has key `embedding`, did you mean "
            "`response.output[0].embedding` in embedder configuration?",
        ),
        (
            {"data": [[0, 0, "{{embedding}}"]]},
            {"data": [[0]]},
            "in `response.data[0]`, while extracting a single "
            '"{{embedding}}", configuration expects item #2, which is missing in response',
        ),
        (
            "{{embedding}}",
            ["a"],
            'in `response`, while extracting a single "{{embedding}}", expected `response` to be an '
            'array of numbers, but failed to parse server response:\n  - invalid type: string "a", expected f32',
        ),
    ],
)
def test_extraction_errors(template: Any, response: Any, message: str) -> None:
    assert extraction_error(template, response) == message


def test_osa_distance() -> None:
    assert osa_distance("embedding", "embeddings") == 1
    assert osa_distance("_vectors", "_vetcors") == 1  # a transposition is one edit
    assert osa_distance("abc", "abc") == 0
    assert osa_distance("kitten", "sitting") == 3


# -- document templates -------------------------------------------------------------------------------

DOC = {
    "id": 1,
    "title": "Ariel",
    "genres": ["Drama", "Crime"],
    "rating": 7.5,
    "year": 1988.0,
    "missing": None,
    "meta": {"a": 1},
    "_vectors": {"e": [1.0]},
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("A movie called {{doc.title}}", "A movie called Ariel"),
        (
            "{{ doc.genres }}|{{ doc.genres | join: ', ' }}|{{ doc.genres.size }}|{{ doc.genres.first }}|{{ doc.genres[1] }}",
            "DramaCrime|Drama, Crime|2|Drama|Crime",
        ),
        ("{{ doc.rating }} {{ doc.year }} {{ doc.missing }}! {{ doc.meta }}", "7.5 1988 ! a1"),
        ("{% if doc.rating > 7 and doc.genres contains 'Crime' %}good{% else %}bad{% endif %}", "good"),
        ("{% if doc.absent %}yes{% elsif doc.title == 'Ariel' %}ariel{% endif %}", "ariel"),
        ("{% unless doc.missing %}none{% endunless %}", "none"),
        (
            "{% for g in doc.genres reversed %}{{ forloop.index }}:{{ g | downcase }} {% endfor %}",
            "1:crime 2:drama ",
        ),
        ("{% for f in fields limit: 2 %}{{ f.name }}={{ f.value }};{% endfor %}", "id=1;title=Ariel;"),
        (
            "{%- assign t = doc.title | upcase -%}\n  {{ t }}  {%- capture c %}x{{t}}{% endcapture %} {{ c }}",
            "ARIEL xARIEL",
        ),
        ("{% case doc.id %}{% when 2, 1 %}one{% else %}other{% endcase %}", "one"),
        (
            "{{ doc.title | truncate: 4 }} {{ 'a b c' | truncatewords: 2 }} {{ doc.rating | plus: 1 | times: 2 }}",
            "A... a b... 17",
        ),
        ("{% raw %}{{ doc.title }}{% endraw %}{% comment %}{{ nope }}{% endcomment %}", "{{ doc.title }}"),
    ],
)
def test_prompt_rendering(template: str, expected: str) -> None:
    assert Prompt(template).render(DOC) == expected


def test_default_template_renders_searchable_non_null_fields() -> None:
    prompt = Prompt()
    assert prompt.template == DEFAULT_TEMPLATE
    assert prompt.render(DOC, ["title", "genres"]) == "title: Ariel\ngenres: DramaCrime\n"
    assert prompt.render({"b": 2, "a": 1}, ["*"], ["a", "b"]) == "a: 1\nb: 2\n"  # index field order
    assert prompt.render(DOC, None).startswith("id: 1\ntitle: Ariel\n")
    assert "_vectors" not in prompt.render(DOC)


def test_prompt_errors_are_liquid_rust_messages() -> None:
    with pytest.raises(RenderError) as info:
        Prompt("{{ doc.name }}").render({"id": 1, "title": "x"})
    assert str(info.value) == (
        "liquid: Unknown index\n  with:\n    variable=doc\n    requested index=name\n"
        "    available indexes=id, title\n"
    )
    with pytest.raises(RenderError) as info:
        Prompt("{{ title }}").render({})
    assert str(info.value).startswith("liquid: Unknown variable\n  with:\n    requested variable=title\n")
    with pytest.raises(RenderError):
        Prompt("{{ doc.name | default: 'x' }}").render({})  # strict even under `default`, as liquid-rust
    for bad in (
        "{{ doc.title",
        "{% if doc.a %}x",
        "{% nope %}",
        "{{ doc.a | nofilter }}",
        "{% for %}{% endfor %}",
    ):
        with pytest.raises(TemplateSyntaxError):
            Prompt(bad)


def test_max_bytes_truncates_on_a_character_boundary() -> None:
    text = "インテル ザー ビーグル"
    assert truncate_utf8(text, 42) == text and truncate_utf8(text, 32) == text
    assert truncate_utf8(text, 31) == "インテル ザー ビーグ"
    assert truncate_utf8(text, 25) == "インテル ザー ビ"
    assert truncate_utf8("イ", 2) == ""
    assert Prompt("{{doc.t}}", 5).render({"t": "abcdefgh"}) == "abcde"
    assert Prompt("{{doc.t}}", None).render({"t": "x" * 1000}) == "x" * 1000


def test_floats_render_as_rust() -> None:
    assert [format_float(x) for x in (2.0, 0.1, -0.0, 1e20, 1e-7, 1.5e300)] == [
        "2",
        "0.1",
        "-0",
        "100000000000000000000",
        "0.0000001",
        "15" + "0" * 299,
    ]


# -- REST client --------------------------------------------------------------------------------------


def test_retry_policy() -> None:
    assert [retry_delay("retry", a) for a in range(4)] == [0.001, 0.01, 0.1, 1.0]
    assert retry_delay("rate_limited", 2) == pytest.approx(0.2)
    for status, strategy in (
        (500, "retry"),
        (503, "retry"),
        (429, "rate_limited"),
        (400, "give_up"),
        (401, "give_up"),
        (404, "give_up"),
        (302, "retry"),
    ):
        assert status_error(status, "x", "user")[1] == strategy
    error, _ = status_error(401, '{"e":1}', "openAi")
    assert str(error) == (
        "user error: could not authenticate against OpenAI server\n  - server replied with "
        '`{"e":1}`\n  - Hint: Check the `apiKey` parameter in the embedder configuration, and the '
        "`MEILI_OPENAI_API_KEY` and `OPENAI_API_KEY` environment variables"
    )
    assert (
        str(status_error(404, None, "user")[0]) == "error: received unexpected HTTP 404 from embedding server"
    )


class _Flaky(BaseHTTPRequestHandler):
    failures: ClassVar[list[int]] = []
    times: ClassVar[list[float]] = []

    def do_POST(self) -> None:
        text = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Flaky.times.append(time.monotonic())
        status = _Flaky.failures.pop(0) if _Flaky.failures else 200
        raw = json.dumps([float(len(text)), 1.0] if status == 200 else {"error": "down"}).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def flaky() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Flaky.failures, _Flaky.times = [], []
    # the service listens on loopback, which the outgoing-request policy refuses by default
    previous = net_guard.set_policy(net_guard.IpPolicy.from_networks(["127.0.0.0/8"]))
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    net_guard.set_policy(previous)
    server.shutdown()
    server.server_close()


def test_client_backs_off_between_retries(flaky: str) -> None:
    client = RestEmbedder(RestOptions(url=flaky, request="{{text}}", response="{{embedding}}"))
    _Flaky.failures = [500, 500, 500]
    assert client.embed(["abc"], 2) == [[3.0, 1.0]]
    gaps = [b - a for a, b in zip(_Flaky.times, _Flaky.times[1:], strict=False)]
    assert len(gaps) == 3 and gaps[2] >= 0.05  # waits of 1, 10, then 100 ms, each times [0.5, 1]
    client.max_retry = 0.0
    _Flaky.failures = [500] * 20
    with pytest.raises(EmbedderError) as info:
        client.embed(["abc"], 2)
    assert len(_Flaky.failures) == 9  # ten retries and a last attempt: 11 requests
    assert info.value.fault == "runtime"
    with pytest.raises(EmbedderError) as info:
        client.embed(["abc"], 3)
    assert str(info.value) == (
        "runtime error: was expecting embeddings of dimension `3`, got embeddings of dimensions `2`"
    )
    unreachable = RestEmbedder(
        RestOptions(url="http://127.0.0.1:1/", request="{{text}}", response="{{embedding}}")
    )
    unreachable.max_retry = 0.0
    with pytest.raises(EmbedderError) as info:
        unreachable.embed(["a"], 2)
    assert str(info.value).startswith("runtime error: could not reach embedding server:\n  - io: ")


# -- settings rules -----------------------------------------------------------------------------------


def check_error(conf: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(MeiliError) as info:
        check_embedder("e", conf)
    return info.value.code, info.value.message


def test_settings_rules() -> None:
    check_embedder(
        "e", {"source": "rest", "url": "http://x/", "request": "{{text}}", "response": "{{embedding}}"}
    )
    check_embedder("e", {"source": "ollama", "model": "m"})
    check_embedder("e", {"source": "openAi"})
    assert check_error({"source": "ollama"}) == (
        "invalid_settings_embedders",
        "`.embedders.e`: Missing field `model` (note: this field is mandatory for source `ollama`)",
    )
    assert check_error({"source": "userProvided", "dimensions": 2, "documentTemplate": "x"}) == (
        "invalid_settings_embedders",
        "`.embedders.e`: Field `documentTemplate` unavailable for source "
        "`userProvided`.\n  - note: `documentTemplate` is available for sources: `openAi`, `huggingFace`, `ollama`, "
        "`rest`\n  - note: available fields for source `userProvided`: `source`, `dimensions`, `distribution`, "
        "`binaryQuantized`",
    )
    assert check_error(
        {
            "source": "rest",
            "url": "http://x/",
            "request": {"a": ["{{text}}", "{{..}}"]},
            "response": "{{embedding}}",
        }
    )[1] == (
        "Error while generating embeddings: user error: in `response`: `response` has a single embedding, but "
        "`request` has multiple texts to embed"
    )
    assert check_error({"source": "openAi", "model": "text-embedding-ada-002", "dimensions": 12})[1] == (
        "`.embedders.e.dimensions`: Model `text-embedding-ada-002` does not support overriding its native dimensions "
        "of 1536. Found 12"
    )
    assert check_error({"source": "openAi", "model": "text-embedding-3-small", "dimensions": 4096})[1] == (
        "`.embedders.e.dimensions`: Model `text-embedding-3-small` does not support overriding its dimensions to a "
        "value higher than 1536. Found 4096"
    )
    assert check_error({"source": "rest", "documentTemplate": "x", "documentTemplateMaxBytes": 0})[1] == (
        "`.embedders.e.documentTemplateMaxBytes`: `documentTemplateMaxBytes` cannot be zero"
    )
    assert (
        check_error({"source": "openAi", "url": "http://"})[1]
        == "`.embedders.e.url`: could not parse `http://`: empty host"
    )
    assert effective_distribution({"source": "openAi"}) == {"mean": 0.75, "sigma": 0.1}
    assert effective_distribution({"source": "rest"}) is None


def test_reindex_actions() -> None:
    rest = {"source": "rest", "url": "http://a/", "request": "{{text}}", "response": "{{embedding}}"}
    assert reindex_action(None, rest, False) == "full"
    assert reindex_action(rest, {**rest, "url": "http://b/"}, False) == "full"
    assert reindex_action(rest, {**rest, "apiKey": "k", "headers": {"a": "b"}}, False) is None
    assert reindex_action(rest, {**rest, "documentTemplate": "{{doc.a}}"}, False) == "prompts"
    assert reindex_action(rest, {**rest, "documentTemplateMaxBytes": 500}, False) == "prompts"
    assert reindex_action(rest, {**rest, "documentTemplateMaxBytes": 300}, False) is None
    assert reindex_action(rest, rest, True) == "prompts"
    openai = {"source": "openAi"}
    assert reindex_action(openai, {**openai, "url": "http://x/"}, False) is None
    assert reindex_action(openai, {**openai, "dimensions": 512}, False) == "full"
