"""Generating embedders (`rest`, and `openAi` / `ollama` as presets of the REST path): their runtime
from an embedder's settings, the per-source settings rules (checked on the PATCH body by the settings
route, then on the merged settings when the task runs, as Meilisearch does) and which settings changes
make Meilisearch regenerate embeddings.

Presets (Meilisearch's `openai.rs`, `ollama.rs`):
- `openAi`: `model` (default `text-embedding-3-small`) among `OPENAI_MODELS`; `url` default
  `OPENAI_URL`; the key is `apiKey`, else `MEILI_OPENAI_API_KEY`, else `OPENAI_API_KEY`; batched
  request `{"model", "input": [texts]}` (plus `dimensions` when set and the model can shorten its
  vectors), response `{"data": [{"embedding"}]}`; dimensions are the model's unless overridden, and
  its score distribution applies when none is set.
- `ollama`: `model` (mandatory); `url` default `MEILI_OLLAMA_URL`, else `OLLAMA_URL`; a URL ending in
  `/api/embeddings` sends one `{"model", "prompt"}` per text and reads `{"embedding"}`, one ending in
  `/api/embed` sends `{"model", "input": [texts]}` and reads `{"embeddings": [...]}`; any other URL is
  refused. A 404 means the model is not pulled.

Without `dimensions`, `rest` and `ollama` embedders learn them from a test embedding of `test`.

`composite` (Meilisearch's `composite.rs`): documents are embedded by its `indexingEmbedder` (with that
embedder's template), queries by its `searchEmbedder`; both are `openAi`, `ollama` or `rest` sources.
Before its first use (`check_composite`) both must give the same dimensions and, on three test texts,
embeddings within a cosine distance of `MAX_COMPOSITE_DISTANCE` of each other.

`huggingFace` embedders are refused when their settings are sent: this build cannot download a model
from the hub nor run one locally. Fragments (`indexingFragments`, `searchFragments`) are refused too:
their REST embedding is not implemented here.
"""

from __future__ import annotations

import json
import math
import os
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.vector.liquid_values import TemplateSyntaxError
from hanzo_engine.engine.vector.prompt import DEFAULT_MAX_BYTES, DEFAULT_TEMPLATE, Prompt
from hanzo_engine.engine.vector.rest import (
    SOURCE_OLLAMA,
    SOURCE_OPENAI,
    SOURCE_USER,
    EmbedderError,
    RestEmbedder,
    RestOptions,
    parse_request,
    parse_response,
)

SOURCES: Final = ("openAi", "huggingFace", "ollama", "userProvided", "rest", "composite")
GENERATING: Final = ("openAi", "ollama", "rest", "composite")
FIELDS: Final = (
    "source",
    "model",
    "revision",
    "pooling",
    "apiKey",
    "dimensions",
    "documentTemplate",
    "documentTemplateMaxBytes",
    "url",
    "indexingFragments",
    "searchFragments",
    "request",
    "response",
    "headers",
    "searchEmbedder",
    "indexingEmbedder",
    "distribution",
    "binaryQuantized",
)
_CHECK_ORDER: Final = (
    "model",
    "revision",
    "pooling",
    "dimensions",
    "apiKey",
    "url",
    "indexingFragments",
    "searchFragments",
    "request",
    "response",
    "documentTemplate",
    "documentTemplateMaxBytes",
    "headers",
    "searchEmbedder",
    "indexingEmbedder",
    "binaryQuantized",
    "distribution",
)
_ALLOWED: Final[dict[str, tuple[str, ...]]] = {
    "openAi": (
        "source",
        "model",
        "apiKey",
        "documentTemplate",
        "documentTemplateMaxBytes",
        "dimensions",
        "url",
    ),
    "huggingFace": ("source", "model", "revision", "pooling", "documentTemplate", "documentTemplateMaxBytes"),
    "ollama": ("source", "documentTemplate", "documentTemplateMaxBytes", "url", "apiKey", "dimensions"),
    "userProvided": ("source",),
    "rest": (
        "source",
        "apiKey",
        "dimensions",
        "documentTemplate",
        "documentTemplateMaxBytes",
        "headers",
        "indexingFragments",
        "searchFragments",
    ),
    "composite": ("source",),
}
_MANDATORY: Final[dict[str, tuple[str, ...]]] = {
    "ollama": ("model",),
    "userProvided": ("dimensions",),
    "rest": ("url", "request", "response"),
    "composite": ("searchEmbedder", "indexingEmbedder"),
}

# model -> (default dimensions, can shorten its vectors, score distribution)
OPENAI_MODELS: Final[dict[str, tuple[int, bool, dict[str, float]]]] = {
    "text-embedding-ada-002": (1536, False, {"mean": 0.90, "sigma": 0.08}),
    "text-embedding-3-small": (1536, True, {"mean": 0.75, "sigma": 0.1}),
    "text-embedding-3-large": (3072, True, {"mean": 0.70, "sigma": 0.1}),
}
OPENAI_DEFAULT_MODEL: Final = "text-embedding-3-small"
OPENAI_URL: Final = "https://api.openai.com/v1/embeddings"
OLLAMA_URL: Final = "http://localhost:11434/api/embeddings"


def source_of(conf: dict[str, Any]) -> str:
    """An embedder's source; Meilisearch's default is `openAi`."""
    return str(conf.get("source") or "openAi")


def is_generating(conf: Any) -> bool:
    return isinstance(conf, dict) and source_of(conf) in GENERATING


# where an embedder's settings sit: top level, or a composite's `searchEmbedder` / `indexingEmbedder`
NOT_NESTED: Final = ""
SEARCH: Final = "search"
INDEXING: Final = "indexing"
_IN_CONTEXT: Final = {
    NOT_NESTED: "",
    SEARCH: " for the search embedder",
    INDEXING: " for the indexing embedder",
}
_NESTED_KEY: Final = {SEARCH: "searchEmbedder", INDEXING: "indexingEmbedder"}
MAX_COMPOSITE_DISTANCE: Final = 0.01
_COMPOSITE_TEXTS: Final = ("test", "a brave dog", "This is a sample text. It is meant to compare similarity.")


def _status(source: str, name: str, context: str = NOT_NESTED) -> str:
    """Meilisearch's `field_status`: `allowed`, `mandatory` or `disallowed`."""
    if name in ("distribution", "binaryQuantized"):
        return "allowed" if context == NOT_NESTED else "disallowed"
    if name in ("documentTemplate", "documentTemplateMaxBytes") and context == SEARCH:
        return "disallowed"
    if source == "rest" and (name, context) in (("indexingFragments", SEARCH), ("searchFragments", INDEXING)):
        return "disallowed"
    if name in _MANDATORY.get(source, ()):
        return "mandatory"
    return "allowed" if name in _ALLOWED[source] else "disallowed"


def effective_distribution(conf: dict[str, Any]) -> dict[str, Any] | None:
    """`distribution`, else an OpenAI model's own; a composite's falls back on its search embedder's,
    then its indexing embedder's."""
    distribution = conf.get("distribution")
    if isinstance(distribution, dict):
        return distribution
    source = source_of(conf)
    if source == "openAi":
        model = OPENAI_MODELS.get(str(conf.get("model") or OPENAI_DEFAULT_MODEL))
        return dict(model[2]) if model is not None else None
    if source == "composite":
        for key in ("searchEmbedder", "indexingEmbedder"):
            sub_conf = conf.get(key)
            if isinstance(sub_conf, dict) and (found := effective_distribution(sub_conf)) is not None:
                return found
    return None


def _url_error(url: str) -> str | None:
    """The `url` crate's parse error for `url`, for the cases it commonly meets."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as err:
        return "invalid port number" if "port" in str(err).lower() else "invalid international domain name"
    if not parts.scheme or ":" not in url:
        return "relative URL without a base"
    if parts.scheme in ("http", "https", "ws", "wss", "ftp") and not parts.hostname:
        return "empty host"
    if port is not None and not 0 <= port <= 65535:
        return "invalid port number"
    return None


# -- runtime ------------------------------------------------------------------------------------------


@dataclass
class Runtime:
    """A generating embedder ready to embed: its REST client, document template and known dimensions
    (None: learned from a test embedding)."""

    name: str
    source: str
    client: RestEmbedder
    prompt: Prompt
    dimensions: int | None
    search: Runtime | None = None  # a composite's query embedder (documents go through this runtime)

    def _translate(self, err: EmbedderError) -> EmbedderError:
        if self.source == SOURCE_OLLAMA and err.status == 404:
            body = "" if err.body is None else f"\n  - server replied with `{err.body}`"
            return EmbedderError(
                "user",
                "model not found. Meilisearch will not automatically download models from "
                f"the Ollama library, please pull the model manually{body}",
            )
        return err

    def embed_many(self, texts: list[str], dimensions: int) -> list[list[float]]:
        try:
            return self.client.embed_many(texts, dimensions)
        except EmbedderError as err:
            raise self._translate(err) from None

    def embed_query(self, text: str, dimensions: int, deadline: float | None) -> list[float]:
        if self.search is not None:
            return self.search.embed_query(text, dimensions, deadline)
        try:
            return self.client.embed([text], dimensions, deadline)[0]
        except EmbedderError as err:
            raise self._translate(err) from None

    def infer_dimensions(self) -> int:
        """Dimensions from a test embedding (EmbedderError: could not determine model dimensions)."""
        try:
            return len(self.client.embed(["test"], None)[0])
        except EmbedderError as err:
            raise EmbedderError(
                "runtime",
                "could not determine model dimensions:\n  - test embedding failed with "
                f"{self._translate(err)}",
            ) from None


def make_prompt(conf: dict[str, Any]) -> Prompt:
    """The embedder's document template (a composite's: its indexing embedder's); TemplateSyntaxError
    when it does not parse."""
    if source_of(conf) == "composite" and isinstance(conf.get("indexingEmbedder"), dict):
        conf = conf["indexingEmbedder"]
    template = conf.get("documentTemplate")
    max_bytes = conf.get("documentTemplateMaxBytes")
    return Prompt(
        DEFAULT_TEMPLATE if template is None else str(template),
        DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes),
    )


def build(name: str, conf: dict[str, Any]) -> Runtime:
    """The runtime of a generating embedder (EmbedderError for a template or an Ollama URL it refuses)."""
    source = source_of(conf)
    if source == "composite":
        search, indexing = conf.get("searchEmbedder"), conf.get("indexingEmbedder")
        if not isinstance(search, dict) or not isinstance(indexing, dict):
            raise EmbedderError(
                "user", "a composite embedder needs a `searchEmbedder` and an `indexingEmbedder`"
            )
        index_runtime = build(name, indexing)
        return replace(index_runtime, search=build(name, search))
    if source not in GENERATING:
        raise EmbedderError("user", f"source `{source}` cannot embed in this build")
    dims = conf.get("dimensions")
    api_key = conf.get("apiKey")
    if source == "openAi":
        model = str(conf.get("model") or OPENAI_DEFAULT_MODEL)
        default_dims, shortens, _ = OPENAI_MODELS.get(model, OPENAI_MODELS[OPENAI_DEFAULT_MODEL])
        request: dict[str, Any] = {"model": model, "input": ["{{text}}", "{{..}}"]}
        if shortens and dims is not None:
            request["dimensions"] = int(dims)
        key = (
            api_key
            if api_key is not None
            else (os.environ.get("MEILI_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY") or "")
        )
        options = RestOptions(
            url=str(conf.get("url") or OPENAI_URL),
            request=request,
            response={"data": [{"embedding": "{{embedding}}"}, "{{..}}"]},
            api_key=key or None,
            dimensions=int(dims) if shortens and dims else default_dims,
            source=SOURCE_OPENAI,
        )
    elif source == "ollama":
        url = str(conf.get("url") or os.environ.get("MEILI_OLLAMA_URL") or OLLAMA_URL)
        model = str(conf.get("model") or "nomic-embed-text")
        if url.endswith("/api/embeddings"):
            req: Any = {"model": model, "prompt": "{{text}}"}
            resp: Any = {"embedding": "{{embedding}}"}
        elif url.endswith("/api/embed"):
            req = {"model": model, "input": ["{{text}}", "{{..}}"]}
            resp = {"embeddings": ["{{embedding}}", "{{..}}"]}
        else:
            raise EmbedderError(
                "user",
                "unsupported Ollama URL.\n  - For `ollama` sources, the URL must end with "
                f"`/api/embed` or `/api/embeddings`\n  - Got `{url}`",
            )
        options = RestOptions(
            url=url,
            request=req,
            response=resp,
            api_key=api_key,
            dimensions=int(dims) if dims else None,
            source=SOURCE_OLLAMA,
        )
    else:
        options = RestOptions(
            url=str(conf.get("url") or ""),
            request=conf.get("request"),
            response=conf.get("response"),
            headers=dict(conf.get("headers") or {}),
            api_key=api_key,
            dimensions=int(dims) if dims else None,
            source=SOURCE_USER,
        )
    try:
        prompt = make_prompt(conf)
    except TemplateSyntaxError as err:
        raise EmbedderError("user", f"cannot parse template: {err}") from None
    return Runtime(name, source, RestEmbedder(options), prompt, options.dimensions)


def _cosine_distance(left: list[float], right: list[float]) -> float:
    """arroy's cosine distance, `(1 - cos) / 2` (0 when a vector is null)."""
    norms = math.sqrt(sum(x * x for x in left)) * math.sqrt(sum(y * y for y in right))
    if norms <= 1.1920929e-07:
        return 0.0
    cos = max(-1.0, min(1.0, sum(x * y for x, y in zip(left, right, strict=False)) / norms))
    return (1.0 - cos) / 2.0


_composite_checked: dict[str, int] = {}  # a composite's settings -> its dimensions, once checked
_composite_lock = threading.Lock()


def check_composite(runtime: Runtime, conf: dict[str, Any]) -> int:
    """Meilisearch's checks before a composite embedder is used: its two embedders give embeddings of the
    same dimensions and, on three test texts, within `MAX_COMPOSITE_DISTANCE` of each other. Returns the
    dimensions; EmbedderError otherwise. A configuration passes once per process (Meilisearch builds an
    embedder once per configuration too)."""
    key = json.dumps(conf, sort_keys=True)
    with _composite_lock:
        known = _composite_checked.get(key)
    if known is not None:
        return known
    search = runtime.search
    assert search is not None
    search_dims = search.dimensions or search.infer_dimensions()
    index_dims = runtime.dimensions or runtime.infer_dimensions()
    if search_dims != index_dims:
        raise EmbedderError(
            "user",
            "error while generating test embeddings.\n  - the dimensions of embeddings produced "
            "at search time and at indexing time don't match.\n  - Search time dimensions: "
            f"{search_dims}\n  - Indexing time dimensions: {index_dims}\n  - Note: Dimensions of "
            "embeddings produced by both embedders are required to match.",
        )
    texts = list(_COMPOSITE_TEXTS)
    try:
        search_embeddings = search.client.embed_many(texts, None)
    except EmbedderError as err:
        raise _test_failure(search._translate(err), "search") from None
    try:
        index_embeddings = runtime.client.embed_many(texts, None)
    except EmbedderError as err:
        raise _test_failure(runtime._translate(err), "indexing") from None
    if len(search_embeddings) != len(index_embeddings):
        raise EmbedderError(
            "runtime",
            "error while generating test embeddings.\n  - the number of generated embeddings "
            f"differs.\n  - {len(search_embeddings)} embeddings for the search time embedder.\n  - "
            f"{len(index_embeddings)} embeddings for the indexing time embedder.",
        )
    for left, right in zip(search_embeddings, index_embeddings, strict=True):
        distance = _cosine_distance(left, right)
        if distance > MAX_COMPOSITE_DISTANCE:
            raise EmbedderError(
                "user",
                "error while generating test embeddings.\n  - the embeddings produced at search "
                "time and indexing time are not similar enough.\n  - angular distance "
                f"{distance:.2f}\n  - Meilisearch requires a maximum distance of "
                f"{MAX_COMPOSITE_DISTANCE}.\n  - Note: check that both embedders produce similar "
                "embeddings.",
            )
    with _composite_lock:
        _composite_checked[key] = index_dims
    return index_dims


def _test_failure(err: EmbedderError, failing: str) -> EmbedderError:
    return EmbedderError(
        "runtime",
        "error while generating test embeddings.\n  - could not generate test embedding "
        f"with embedder at {failing} time.\n  - Embedding failed with {err}",
    )


# -- settings rules -----------------------------------------------------------------------------------


def _check(name: str, conf: dict[str, Any], source: str | None) -> None:
    """Meilisearch's `validate_embedding_settings` on one embedder, in its order: template, dimensions,
    url, request/response templates, then (only when the source is known) the per-source field rules
    and the OpenAI model checks. A field present with `null` counts as given (a reset), so it is refused
    for a source that does not allow it and does not satisfy a mandatory field."""
    code = "invalid_settings_embedders"
    template = conf.get("documentTemplate")
    if template is not None:
        if conf.get("documentTemplateMaxBytes") == 0:
            raise MeiliError(
                code,
                f"`.embedders.{name}.documentTemplateMaxBytes`: `documentTemplateMaxBytes` cannot be zero",
            )
        try:
            Prompt(str(template), None)
        except TemplateSyntaxError as err:
            raise MeiliError(
                code,
                f"`.embedders.{name}.documentTemplate`: Invalid template: user error: cannot parse "
                f"template: {err}.",
            ) from None
    if conf.get("dimensions") == 0:
        raise MeiliError(code, f"`.embedders.{name}.dimensions`: `dimensions` cannot be zero")
    url = conf.get("url")
    if url is not None:
        problem = _url_error(str(url))
        if problem is not None:
            raise MeiliError(code, f"`.embedders.{name}.url`: could not parse `{url}`: {problem}")
    if conf.get("request") is not None:
        try:
            request = parse_request(conf["request"])
            if conf.get("response") is not None:
                parse_response(conf["response"], request)
        except EmbedderError as err:
            raise MeiliError("vector_embedding_error", f"Error while generating embeddings: {err}") from None
    if source is None:
        return
    _check_fields(name, conf, source, NOT_NESTED)
    if source == "openAi" and conf.get("model") is not None:
        model = str(conf["model"])
        if model not in OPENAI_MODELS:
            supported = ", ".join(f'"{m}"' for m in OPENAI_MODELS)
            raise MeiliError(
                code,
                f"`.embedders.{name}.model`: Invalid model `{model}` for OpenAI. Supported "
                f"models: [{supported}]",
            )
        dims = conf.get("dimensions")
        default_dims, shortens, _ = OPENAI_MODELS[model]
        if dims is not None and not shortens and dims != default_dims:
            raise MeiliError(
                code,
                f"`.embedders.{name}.dimensions`: Model `{model}` does not support overriding its "
                f"native dimensions of {default_dims}. Found {dims}",
            )
        if dims is not None and dims > default_dims:
            raise MeiliError(
                code,
                f"`.embedders.{name}.dimensions`: Model `{model}` does not support overriding its "
                f"dimensions to a value higher than {default_dims}. Found {dims}",
            )
    if source == "composite":
        for context in (SEARCH, INDEXING):
            _check_nested(name, conf.get(_NESTED_KEY[context]), context)
    _refuse_unsupported(name, conf, source)
    if source == "composite":  # after every Meilisearch rule, so that its errors come first
        for context in (SEARCH, INDEXING):
            nested = conf.get(_NESTED_KEY[context])
            if isinstance(nested, dict):
                _refuse_unsupported(f"{name}.{_NESTED_KEY[context]}", nested, source_of(nested))


def _check_fields(name: str, conf: dict[str, Any], source: str, context: str) -> None:
    """Meilisearch's `check_settings`: each field allowed for the source in its context, mandatory ones given."""
    code = "invalid_settings_embedders"
    where = name if context == NOT_NESTED else f"{name}.{_NESTED_KEY[context]}"
    in_context = _IN_CONTEXT[context]
    for field in _CHECK_ORDER:
        status = _status(source, field, context)
        if status == "disallowed" and field in conf:
            sources = [s for s in SOURCES if _status(s, field, context) != "disallowed"]
            allowed = [f for f in FIELDS if _status(source, f, context) != "disallowed"]
            note = (
                f"\n  - note: `{field}` is available for sources: " + ", ".join(f"`{s}`" for s in sources)
                if sources
                else ""
            )
            elsewhere = (
                f"\n  - note: `{field}` is available when source `{source}` is not{in_context}"
                if context != NOT_NESTED and _status(source, field) != "disallowed"
                else ""
            )
            raise MeiliError(
                code,
                f"`.embedders.{where}`: Field `{field}` unavailable for source `{source}`"
                f"{in_context}.{note}\n  - note: available fields for source `{source}`{in_context}: "
                + ", ".join(f"`{f}`" for f in allowed)
                + elsewhere,
            )
        if status == "mandatory" and conf.get(field) is None:
            raise MeiliError(
                code,
                f"`.embedders.{name}`: Missing field `{field}` (note: this field is mandatory for "
                f"source `{source}`)",
            )


def _check_nested(name: str, conf: Any, context: str) -> None:
    """A composite's `searchEmbedder` or `indexingEmbedder` (absent or null: the mandatory-field rule already
    spoke): its source is given and can be nested, its fields suit that source in this context, and an
    indexing embedder's template parses."""
    if not isinstance(conf, dict):
        return
    code = "invalid_settings_embedders"
    where = f"{name}.{_NESTED_KEY[context]}"
    if context == INDEXING and conf.get("documentTemplate") is not None:
        if conf.get("documentTemplateMaxBytes") == 0:
            raise MeiliError(
                code,
                f"`.embedders.{name}.documentTemplateMaxBytes`: `documentTemplateMaxBytes` cannot be zero",
            )
        try:
            Prompt(str(conf["documentTemplate"]), None)
        except TemplateSyntaxError as err:
            raise MeiliError(
                code,
                f"`.embedders.{name}.documentTemplate`: Invalid template: user error: cannot parse "
                f"template: {err}.",
            ) from None
    source = conf.get("source")
    if source is None:
        raise MeiliError(
            code,
            f"`.embedders.{where}`: Missing field `source`.\n  - note: this field is mandatory for "
            "nested embedders",
        )
    if source in ("composite", "userProvided"):
        raise MeiliError(
            code, f"`.embedders.{where}.source`: Source `{source}` is not available in a nested embedder"
        )
    _check_fields(name, conf, str(source), context)


def _refuse_unsupported(where: str, conf: dict[str, Any], source: str) -> None:
    """What this build cannot run, refused when the settings are sent rather than accepted and ignored."""
    code = "invalid_settings_embedders"
    if source == "huggingFace":
        raise MeiliError(
            code,
            f"`.embedders.{where}.source`: Source `huggingFace` is not available in this build: "
            "it cannot download models from the Hugging Face hub nor run them locally.\n  - Hint: serve "
            "the model behind a `rest` or `ollama` embedder, or compute the vectors elsewhere and use "
            "a `userProvided` embedder.",
        )
    for field in ("indexingFragments", "searchFragments"):
        if conf.get(field) is not None:
            raise MeiliError(
                code,
                f"`.embedders.{where}.{field}`: fragments are not available in this build: "
                "multimodal embedding through fragments is not implemented.\n  - Hint: use a "
                "`documentTemplate` to embed the documents' text, or a `userProvided` embedder.",
            )


def check_embedder_features(embedders: dict[str, Any] | None, enabled: Callable[[str], bool]) -> None:
    """Meilisearch's `validate_settings`: the embedder fields that need an experimental feature
    (`compositeEmbedders`, `multimodal`), 400 `feature_not_enabled` when it is off. A reset (`null`)
    needs none."""
    gates = (
        ("source", "compositeEmbedders", 'using `"composite"` as source'),
        ("searchEmbedder", "compositeEmbedders", "setting `searchEmbedder`"),
        ("indexingEmbedder", "compositeEmbedders", "setting `indexingEmbedder`"),
        ("indexingFragments", "multimodal", "setting `indexingFragments`"),
        ("searchFragments", "multimodal", "setting `searchFragments`"),
    )
    labels = {
        "compositeEmbedders": ("composite embedders", "https://github.com/orgs/meilisearch/discussions/816"),
        "multimodal": ("multimodal", "https://github.com/orgs/meilisearch/discussions/846"),
    }
    for conf in (embedders or {}).values():
        if not isinstance(conf, dict):
            continue
        for field, feature, action in gates:
            value = conf.get(field)
            if value is None or (field == "source" and value != "composite") or enabled(feature):
                continue
            label, link = labels[feature]
            raise MeiliError(
                "feature_not_enabled",
                f"{action} requires enabling the `{label}` experimental feature. See {link}",
            )


def check_embedder(name: str, conf: dict[str, Any]) -> None:
    """The rules on one complete (merged) embedder, as a settings task checks them; MeiliError (unprefixed)."""
    _check(name, conf, source_of(conf))


def check_embedder_patch(name: str, conf: dict[str, Any]) -> None:
    """The rules the settings route checks on one embedder of a PATCH body before enqueuing (Meilisearch's
    partial-update validation): only what the patch itself carries. The per-source rules apply only when
    the patch names a `source`, since otherwise the source is the stored one, known when the task runs;
    with a `source`, the patch must repeat that source's mandatory fields."""
    source = conf.get("source")
    _check(name, conf, None if source is None else str(source))


def check_embedders_patch(embedders: dict[str, Any] | None) -> None:
    """`check_embedder_patch` on every embedder a settings patch sets (`null` removes one: nothing to check)."""
    for name, conf in (embedders or {}).items():
        if isinstance(conf, dict):
            check_embedder_patch(name, conf)


def check_embedders(settings: dict[str, Any], uid: str) -> None:
    """`check_embedder` on every embedder of complete settings, errors prefixed with the index."""
    for name, conf in (settings.get("embedders") or {}).items():
        if isinstance(conf, dict):
            try:
                check_embedder(name, conf)
            except MeiliError as err:
                raise MeiliError(err.code, f"Index `{uid}`: {err.message}") from None


# -- what a settings change regenerates ---------------------------------------------------------------


def reindex_action(old: dict[str, Any] | None, new: dict[str, Any], searchable_changed: bool) -> str | None:
    """`full` (every regenerated embedding recomputed), `prompts` (only documents whose text changed)
    or None, after Meilisearch's `apply_and_diff` (a changed `searchableAttributes` changes the texts
    of the default template)."""
    if old is None or source_of(old) != source_of(new):
        return "full"
    source = source_of(new)
    if source == "composite":
        # documents are the indexing embedder's business: a change of the search embedder re-embeds none
        old_index, new_index = old.get("indexingEmbedder"), new.get("indexingEmbedder")
        if not isinstance(old_index, dict) or not isinstance(new_index, dict):
            return "full"
        return reindex_action(old_index, new_index, searchable_changed)
    changed = {key for key in FIELDS if old.get(key) != new.get(key)}
    if changed & {"model", "revision", "pooling", "request", "response"}:
        return "full"
    if "dimensions" in changed and source == "openAi":
        return "full"
    if "url" in changed and source != "openAi":
        return "full"
    if "documentTemplate" in changed or searchable_changed:
        return "prompts"
    old_max = old.get("documentTemplateMaxBytes") or DEFAULT_MAX_BYTES
    new_max = new.get("documentTemplateMaxBytes") or DEFAULT_MAX_BYTES
    return "prompts" if new_max > old_max else None


# -- display ------------------------------------------------------------------------------------------

HF_DEFAULT_MODEL: Final = "BAAI/bge-base-en-v1.5"
HF_DEFAULT_REVISION: Final = "617ca489d9e86b49b8167676d8220688b99db36e"


def _with_defaults(conf: dict[str, Any], prompt: bool) -> dict[str, Any]:
    """One embedder (or composite sub-embedder) as Meilisearch displays its configuration: the defaults it
    applied made explicit. `prompt` says whether the embedder renders documents (a composite's search
    embedder does not)."""
    source = source_of(conf)
    out = dict(conf)
    if source == "huggingFace":
        if "model" not in out:
            # the default model comes with its pinned revision; a model the user names has none unless given
            out["model"] = HF_DEFAULT_MODEL
            out.setdefault("revision", HF_DEFAULT_REVISION)
        out.setdefault("pooling", "useModel")
    elif source == "openAi":
        out.setdefault("model", OPENAI_DEFAULT_MODEL)
    elif source == "composite":
        for key, sub_prompt in (("searchEmbedder", False), ("indexingEmbedder", True)):
            if isinstance(out.get(key), dict):
                out[key] = _with_defaults(out[key], sub_prompt)
    fragments = bool(out.get("indexingFragments")) or bool(out.get("searchFragments"))
    if prompt and source in ("huggingFace", "openAi", "ollama", "rest") and not fragments:
        out.setdefault("documentTemplate", DEFAULT_TEMPLATE)
        out.setdefault("documentTemplateMaxBytes", DEFAULT_MAX_BYTES)
    return {key: out[key] for key in FIELDS if key in out}


def display_embedder(conf: dict[str, Any]) -> dict[str, Any]:
    """An embedder's settings as `GET /settings/embedders` shows them: Meilisearch rebuilds the settings
    from the configuration it runs, so the defaults it applied appear (a huggingFace model, revision and
    pooling, an openAi model, the document template and its byte limit of every embedder that renders
    documents without fragments)."""
    return _with_defaults(conf, prompt=True)
