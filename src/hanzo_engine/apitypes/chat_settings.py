"""Chat settings (= Meilisearch's `meilisearch-types` `features.rs` chat part and `milli`'s `ChatConfig`).

Two models:

- a chat *workspace* (`/chats/{workspace}/settings`): which LLM to call (`source`, `baseUrl`, `apiKey`, ...)
  and the prompts that describe the search tool to it. Stored complete (every key, secrets in clear);
  answered with `workspace_view`, whose `apiKey` is masked like every Meilisearch secret.
- the *index* `chat` setting (`/indexes/{uid}/settings/chat`): the index's description for the LLM, the
  document template its hits are rendered with and the search parameters of the chat's searches.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from .deserr import Field, deserialize_object
from .errors import MeiliError

SOURCES: Final = ("openAi", "mistral", "azureOpenAi", "vLlm")

# Meilisearch's `DEFAULT_CHAT_*` prompts, byte for byte: the LLM sees them unless a workspace overrides them.
DEFAULT_SYSTEM_PROMPT: Final = (
    "You are a highly capable research assistant with access to powerful search tools. IMPORTANT INSTRUCTIONS:"
    "1. When answering questions, you MUST make multiple tool calls (at least 2-3) to gather comprehensive "
    "information.2. Use different search queries for each tool call - vary keywords, rephrase questions, and "
    "explore different semantic angles to ensure broad coverage.3. Always explicitly announce BEFORE making each "
    'tool call by saying: "I\'ll search for [specific information] now."4. Combine information from ALL tool '
    "calls to provide complete, nuanced answers rather than relying on a single source.5. For complex topics, "
    "break down your research into multiple targeted queries rather than using a single generic search. "
    "Meilisearch doesn't use the colon (:) syntax to filter but rather the equal (=) one. Separate filters from "
    "query and keep the q parameter empty if needed. Same for the filter parameter: keep it empty if need be. "
    "If you need to find documents that CONTAINS keywords simply put the keywords in the q parameter do no use "
    "a filter for this purpose. Whenever you get an error, read the error message and fix your error. "
)
DEFAULT_SEARCH_DESCRIPTION_PROMPT: Final = (
    "Query: 'best story about Rust before 2018' with year: 2018, 2020, 2021\nlabel: analysis, golang, "
    'javascript\ntype: story, link\nvote: 300, 298, 278\n: {"q": "", "filter": "category = Rust AND '
    "type = story AND year < 2018 AND vote > 100\"}\nQuery: 'A black or green car that can go fast with red "
    "brakes' with maxspeed_kmh: 200, 150, 130\ncolor: black, grey, red, green\nbrand: Toyota, Renault, Jeep, "
    'Ferrari\n: {"q": "red brakes", "filter": "maxspeed_kmh > 150 AND color IN [\'black\', green]"}\n'
    "Query: 'Superman movie released in 2018 or after' with year: 2018, 2020, 2021\ngenres: Drama, Comedy, "
    'Adventure, Fiction\n: {"q":"Superman","filter":"genres IN [Adventure, Fiction] AND year >= 2018"}'
)
DEFAULT_SEARCH_Q_PARAM_PROMPT: Final = (
    "The search query string used to find relevant documents in the index. This should contain keywords or "
    "phrases that best represent what the user is looking for. More specific queries will yield more precise "
    "results."
)
DEFAULT_SEARCH_FILTER_PARAM_PROMPT: Final = (
    "The search filter string used to find relevant documents in the index. It supports parentheses, `=`, "
    "`!=`, `>=`, `>`, `<=`, `<`, `IN`, `NOT IN`, `TO`, `EXISTS`, `NOT EXISTS`, `IS NULL`, `IS NOT NULL`, "
    '`IS EMPTY`, `IS NOT EMPTY`, `_geoRadius`, or `_geoBoundingBox`. Here is an example: "price > 100 AND '
    "category = 'electronics'\". The following is a list of fields that can be filtered on: "
)
DEFAULT_SEARCH_INDEX_UID_PARAM_PROMPT: Final = (
    "The name of the index to search within. An index is a collection of documents organized for search. "
    "Selecting the right index ensures the most relevant results for the user query."
)

DEFAULT_PROMPTS: Final[dict[str, str]] = {
    "system": DEFAULT_SYSTEM_PROMPT,
    "searchDescription": DEFAULT_SEARCH_DESCRIPTION_PROMPT,
    "searchQParam": DEFAULT_SEARCH_Q_PARAM_PROMPT,
    "searchFilterParam": DEFAULT_SEARCH_FILTER_PARAM_PROMPT,
    "searchIndexUidParam": DEFAULT_SEARCH_INDEX_UID_PARAM_PROMPT,
}
_STRING_KEYS: Final = ("orgId", "projectId", "apiVersion", "deploymentId", "baseUrl", "apiKey")

_PROMPT_FIELDS: Final = (
    Field("system", "string", "invalid_chat_completion_system_prompt", nullable=True),
    Field("searchDescription", "string", "invalid_chat_completion_search_description_prompt", nullable=True),
    Field("searchQParam", "string", "invalid_chat_completion_search_query_param_prompt", nullable=True),
    Field("searchFilterParam", "string", "invalid_chat_completion_search_filter_param_prompt", nullable=True),
    Field(
        "searchIndexUidParam",
        "string",
        "invalid_chat_completion_search_index_uid_param_prompt",
        nullable=True,
    ),
)
_WORKSPACE_FIELDS: Final = (
    Field("source", "string", "bad_request", nullable=True, choices=SOURCES),
    Field("orgId", "string", "invalid_chat_completion_org_id", nullable=True),
    Field("projectId", "string", "invalid_chat_completion_project_id", nullable=True),
    Field("apiVersion", "string", "invalid_chat_completion_api_version", nullable=True),
    Field("deploymentId", "string", "invalid_chat_completion_deployment_id", nullable=True),
    Field("baseUrl", "string", "invalid_chat_completion_base_api", nullable=True),
    Field("apiKey", "string", "invalid_chat_completion_api_key", nullable=True),
    Field("prompts", "object", "bad_request", nullable=True, fields=_PROMPT_FIELDS),
)


def default_workspace() -> dict[str, Any]:
    """A new workspace's settings: OpenAI, nothing configured, the built-in prompts."""
    out: dict[str, Any] = {"source": "openAi"}
    out.update(dict.fromkeys(_STRING_KEYS))
    out["prompts"] = dict(DEFAULT_PROMPTS)
    return out


def complete_workspace(stored: dict[str, Any] | None) -> dict[str, Any]:
    """`stored` with every key, in Meilisearch's order (defaults where absent)."""
    base = default_workspace()
    stored = stored or {}
    for key in ("source", *_STRING_KEYS):
        if key in stored:
            base[key] = stored[key]
    prompts = stored.get("prompts") or {}
    base["prompts"] = {
        k: prompts.get(k, v) if isinstance(prompts.get(k, v), str) else v for k, v in DEFAULT_PROMPTS.items()
    }
    return base


def parse_workspace_patch(body: Any) -> dict[str, Any]:
    """Validate a `PATCH /chats/{ws}/settings` body; keys sent only, `None` meaning reset."""
    return deserialize_object(body, _WORKSPACE_FIELDS)


def apply_workspace_patch(current: dict[str, Any] | None, patch: dict[str, Any]) -> dict[str, Any]:
    """The settings after `patch` (absent keeps, null resets, prompts merged per key), validated."""
    new = complete_workspace(current)
    for key in ("source", *_STRING_KEYS):
        if key in patch:
            new[key] = patch[key] if patch[key] is not None or key != "source" else "openAi"
    if "prompts" in patch:
        prompts = patch["prompts"]
        if prompts is None:
            new["prompts"] = dict(DEFAULT_PROMPTS)
        else:
            for key, value in prompts.items():
                new["prompts"][key] = DEFAULT_PROMPTS[key] if value is None else value
    validate_workspace(new)
    return new


def validate_workspace(settings: dict[str, Any]) -> None:
    """Meilisearch's `ChatCompletionSettings::validate`: what a source needs to be set (any string, even
    empty: nothing else is checked)."""
    source = settings["source"]
    if source == "azureOpenAi" and None in (
        settings["baseUrl"],
        settings["deploymentId"],
        settings["apiVersion"],
    ):
        raise MeiliError(
            "bad_request", "azureOpenAi requires setting a valid `baseUrl`, `deploymentId`, and `apiVersion`"
        )
    if source == "vLlm" and settings["baseUrl"] is None:
        raise MeiliError("bad_request", "vLlm requires setting a valid `baseUrl`")


def mask_secret(secret: str) -> str:
    """Meilisearch's `hide_secret` (by UTF-8 byte length): keep 0/2/3/5 leading characters."""
    size = len(secret.encode())
    if size < 10:
        return "XXX..."
    if size < 20:
        return secret[:2] + "XXXX..."
    if size < 30:
        return secret[:3] + "XXXXX..."
    return secret[:5] + "XXXXXX..."


def workspace_view(settings: dict[str, Any]) -> dict[str, Any]:
    """What the API answers: the complete settings with the API key masked."""
    view = complete_workspace(settings)
    if isinstance(view["apiKey"], str):
        view["apiKey"] = mask_secret(view["apiKey"])
    return view


# -- the index `chat` setting -------------------------------------------------------------------------

CHAT_SETTING_CODE: Final = "invalid_settings_index_chat"
DEFAULT_DOCUMENT_TEMPLATE: Final = (
    "{% for field in fields %}{% if field.is_searchable and field.value != nil %}{{ field.name }}: "
    "{{ field.value }}\n{% endif %}{% endfor %}"
)
DEFAULT_INDEX_CHAT: Final[dict[str, Any]] = {
    "description": "",
    "documentTemplate": DEFAULT_DOCUMENT_TEMPLATE,
    "documentTemplateMaxBytes": 400,
    "searchParameters": {},
}
SEARCH_PARAMETER_KEYS: Final = (
    "hybrid",
    "limit",
    "sort",
    "distinct",
    "matchingStrategy",
    "attributesToSearchOn",
    "rankingScoreThreshold",
)


def _ratio(value: float) -> float:
    from .deserr import InvalidValue

    if not 0.0 <= value <= 1.0:
        raise InvalidValue("the value must be between 0.0 and 1.0")
    return value


_HYBRID_FIELDS: Final = (
    Field("embedder", "string", CHAT_SETTING_CODE, required=True, missing_code=CHAT_SETTING_CODE),
    Field("semanticRatio", "number", CHAT_SETTING_CODE, validate=_ratio),
)
_SEARCH_PARAMETER_FIELDS: Final = (
    Field("hybrid", "object", CHAT_SETTING_CODE, nullable=True, fields=_HYBRID_FIELDS),
    Field("limit", "usize", CHAT_SETTING_CODE, nullable=True),
    Field("sort", "string_array", CHAT_SETTING_CODE, nullable=True),
    Field("distinct", "string", CHAT_SETTING_CODE, nullable=True),
    Field(
        "matchingStrategy", "string", CHAT_SETTING_CODE, nullable=True, choices=("last", "all", "frequency")
    ),
    Field("attributesToSearchOn", "string_array", CHAT_SETTING_CODE, nullable=True),
    Field("rankingScoreThreshold", "number", CHAT_SETTING_CODE, nullable=True, validate=_ratio),
)
_INDEX_CHAT_FIELDS: Final = (
    Field("description", "string", CHAT_SETTING_CODE, nullable=True),
    Field("documentTemplate", "string", CHAT_SETTING_CODE, nullable=True),
    Field("documentTemplateMaxBytes", "usize", CHAT_SETTING_CODE, nullable=True),
    Field("searchParameters", "object", CHAT_SETTING_CODE, nullable=True, fields=_SEARCH_PARAMETER_FIELDS),
)


def parse_index_chat(value: Any, path: str) -> dict[str, Any]:
    """Validate the index `chat` setting of a settings body (keys sent only, `None` = reset)."""
    parsed = deserialize_object(value, _INDEX_CHAT_FIELDS, unknown_code=CHAT_SETTING_CODE, path=path)
    hybrid = (parsed.get("searchParameters") or {}).get("hybrid")
    if isinstance(hybrid, dict):
        parsed["searchParameters"]["hybrid"] = {
            "semanticRatio": hybrid.get("semanticRatio", 0.5),
            "embedder": hybrid["embedder"],
        }
    return parsed


def merge_index_chat(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Merge at every level (absent keeps, null resets); a zero `documentTemplateMaxBytes` fails, as milli."""
    merged = {**copy.deepcopy(DEFAULT_INDEX_CHAT), **copy.deepcopy(current)}
    for key in ("description", "documentTemplate", "documentTemplateMaxBytes"):
        if key in patch:
            merged[key] = DEFAULT_INDEX_CHAT[key] if patch[key] is None else patch[key]
    if "searchParameters" in patch:
        params = patch["searchParameters"]
        if params is None:
            merged["searchParameters"] = {}
        else:
            current_params = dict(merged.get("searchParameters") or {})
            for key, value in params.items():
                if value is None:
                    current_params.pop(key, None)
                else:
                    current_params[key] = copy.deepcopy(value)
            merged["searchParameters"] = {
                k: current_params[k] for k in SEARCH_PARAMETER_KEYS if k in current_params
            }
    if merged["documentTemplateMaxBytes"] == 0:
        raise MeiliError(
            "invalid_settings_embedders",
            "`.chat.documentTemplateMaxBytes`: `documentTemplateMaxBytes` cannot be zero",
        )
    # the template's syntax is the engine's to check (`engine.chat.check_chat_template`)
    return {k: merged[k] for k in DEFAULT_INDEX_CHAT}
