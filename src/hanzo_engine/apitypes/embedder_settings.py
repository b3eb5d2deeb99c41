"""Embedder settings (= meilisearch-types' `EmbeddingSettings`): their shape, merge and masked view.

Only the shape and the `source` are checked here; the per-source field rules are
`engine.vector.embedders`' (on the patch by the settings route, on the merged settings by the task).
An embedder patch merges field by field into the stored one unless its `source` changes.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from .chat_settings import mask_secret
from .deserr import Field
from .errors import MeiliError
from .settings_checks import parse_fields, parse_object, parse_string, setting_code

MAX_EMBEDDERS: Final = 256

_EMBEDDERS = setting_code("embedders")
EMBEDDER_SOURCES: Final = ("openAi", "huggingFace", "ollama", "userProvided", "rest", "composite")
_EMBEDDER_FIELDS: Final = (
    Field("source", "string", _EMBEDDERS, nullable=True, choices=EMBEDDER_SOURCES),
    Field("model", "string", _EMBEDDERS, nullable=True),
    Field("revision", "string", _EMBEDDERS, nullable=True),
    Field("pooling", "string", _EMBEDDERS, nullable=True, choices=("useModel", "forceMean", "forceCls")),
    Field("apiKey", "string", _EMBEDDERS, nullable=True),
    Field("dimensions", "usize", _EMBEDDERS, nullable=True),
    Field("binaryQuantized", "boolean", _EMBEDDERS, nullable=True),
    Field("documentTemplate", "string", _EMBEDDERS, nullable=True),
    Field("documentTemplateMaxBytes", "usize", _EMBEDDERS, nullable=True),
    Field("url", "string", _EMBEDDERS, nullable=True),
    Field("indexingFragments", "object", _EMBEDDERS, nullable=True),
    Field("searchFragments", "object", _EMBEDDERS, nullable=True),
    Field("request", "any", _EMBEDDERS, nullable=True),
    Field("response", "any", _EMBEDDERS, nullable=True),
    Field("headers", "object", _EMBEDDERS, nullable=True),
    Field("searchEmbedder", "object", _EMBEDDERS, nullable=True),
    Field("indexingEmbedder", "object", _EMBEDDERS, nullable=True),
    Field(
        "distribution",
        "object",
        _EMBEDDERS,
        nullable=True,
        fields=(
            Field("mean", "number", _EMBEDDERS, required=True, missing_code=_EMBEDDERS),
            Field("sigma", "number", _EMBEDDERS, required=True, missing_code=_EMBEDDERS),
        ),
    ),
)
EMBEDDER_FIELD_NAMES: Final = tuple(f.name for f in _EMBEDDER_FIELDS)
# a composite's `searchEmbedder` / `indexingEmbedder` (Meilisearch's `SubEmbeddingSettings`): the same fields,
# unknown ones refused; its own nested embedders stay raw (the engine refuses them by source)
_NESTED: Final = ("searchEmbedder", "indexingEmbedder")
_SUB_EMBEDDER_FIELDS: Final = tuple(
    Field(f.name, "any", _EMBEDDERS, nullable=True) if f.name in _NESTED else f for f in _EMBEDDER_FIELDS
)


def parse_embedders(value: Any, path: str) -> dict[str, Any]:
    """`{name: settings | null}`; null removes that embedder. Per-source field rules: vectors issue."""
    mapping = parse_object(value, path, _EMBEDDERS)
    out: dict[str, Any] = {}
    for name, config in mapping.items():
        at = f"{path}.{name}"
        if config is None:
            out[name] = None
            continue
        parsed = parse_fields(parse_object(config, at, _EMBEDDERS), at, _EMBEDDERS, _EMBEDDER_FIELDS)
        for header, header_value in (parsed.get("headers") or {}).items():
            parse_string(header_value, f"{at}.headers.{header}", _EMBEDDERS)
        for nested in _NESTED:
            if isinstance(parsed.get(nested), dict):
                sub = parse_fields(parsed[nested], f"{at}.{nested}", _EMBEDDERS, _SUB_EMBEDDER_FIELDS)
                parsed[nested] = {k: sub[k] for k in EMBEDDER_FIELD_NAMES if k in sub}
        out[name] = {k: parsed[k] for k in EMBEDDER_FIELD_NAMES if k in parsed}
    return {name: out[name] for name in sorted(out)}  # a BTreeMap: names sorted


def merge_embedders(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Each embedder of `patch` merged into `current`: `null` removes one, a field set to `null` drops it."""
    merged = copy.deepcopy(current)
    for name, config in patch.items():
        if config is None:
            merged.pop(name, None)
            continue
        old = merged.get(name)
        if old is None or ("source" in config and config["source"] != old.get("source")):
            # a new embedder, or a new source: the other fields of the old one do not carry over
            old = {}
        new = dict(old)
        for key, value in config.items():
            if value is None:
                new.pop(key, None)
            else:
                new[key] = copy.deepcopy(value)
        merged[name] = {key: new[key] for key in EMBEDDER_FIELD_NAMES if key in new}
    if len(merged) > MAX_EMBEDDERS:
        raise MeiliError(
            _EMBEDDERS,
            f"Too many embedders in the configuration. Found {len(merged)}, but limited to {MAX_EMBEDDERS}.",
        )
    return {name: merged[name] for name in sorted(merged)}


def mask_embedders(embedders: dict[str, Any]) -> dict[str, Any]:
    """The embedders with their `apiKey`s masked, for views and task details."""
    out: dict[str, Any] = {}
    for name, config in embedders.items():
        if isinstance(config, dict) and isinstance(config.get("apiKey"), str):
            config = dict(config, apiKey=mask_secret(config["apiKey"]))
        out[name] = config
    return out
