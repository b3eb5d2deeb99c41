"""Every route of the HTTP API in one table: method, path template, handler, and the API key action
it needs (None: public), as starlette's `routes=[...]` list.

Starlette tries the routes in this order and takes the first whose method and path both match.
`starlette_route` wraps each handler in the auth guard of its action and in `errors.safe` (every
failure becomes a Meilisearch error body). `worker=True` marks the read-only search family, which the
search workers answer themselves (`server.worker_app`); every process serves the rest through the
primary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hanzo_engine.apitypes.settings import PATCH_SUB_ROUTES, SETTING_NAMES, sub_route_path

from .auth import guard
from .errors import Endpoint, safe
from .routes import (
    backups,
    chats,
    compaction,
    documents,
    dynamic_search_rules,
    experimental_features,
    facet_search,
    fields,
    indexes,
    keys,
    logs,
    meta,
    metrics,
    multi_search,
    network,
    render,
    search,
    settings,
    similar,
    tasks,
    webhooks,
)


@dataclass(frozen=True)
class RouteSpec:
    method: str
    path: str
    endpoint: Endpoint
    action: str | None
    worker: bool = False


def _setting_routes() -> list[RouteSpec]:
    out: list[RouteSpec] = []
    for name in SETTING_NAMES:
        path = f"{settings.SETTINGS_PATH}/{sub_route_path(name)}"
        get_one, update_one, reset_one = settings.sub_route_handlers(name)
        out += [
            RouteSpec("GET", path, get_one, "settings.get"),
            RouteSpec("PATCH" if name in PATCH_SUB_ROUTES else "PUT", path, update_one, "settings.update"),
            RouteSpec("DELETE", path, reset_one, "settings.update"),
        ]
    return out


ROUTES: Final[tuple[RouteSpec, ...]] = (
    # routes/backups.py
    RouteSpec("POST", "/dumps", backups.create_dump, "dumps.create"),
    RouteSpec("POST", "/snapshots", backups.create_snapshot, "snapshots.create"),
    # routes/chats.py
    RouteSpec("GET", "/chats", chats.list_chats, "chats.get"),
    RouteSpec("GET", "/chats/{workspace}", chats.get_chat, "chats.get"),
    RouteSpec("DELETE", "/chats/{workspace}", chats.delete_chat, "chats.delete"),
    RouteSpec("GET", "/chats/{workspace}/settings", chats.get_chat_settings, "chatsSettings.get"),
    RouteSpec("PATCH", "/chats/{workspace}/settings", chats.patch_chat_settings, "chatsSettings.update"),
    RouteSpec("DELETE", "/chats/{workspace}/settings", chats.reset_chat_settings, "chatsSettings.update"),
    RouteSpec("POST", "/chats/{workspace}/chat/completions", chats.chat_completions, "chatCompletions"),
    # routes/compaction.py
    RouteSpec("POST", "/indexes/{index_uid}/compact", compaction.compact_index, "indexes.compact"),
    RouteSpec("POST", "/tasks/compact", compaction.compact_task_queue, "tasks.compact"),
    # routes/documents.py
    RouteSpec("POST", "/indexes/{index_uid}/documents", documents.replace_documents, "documents.add"),
    RouteSpec("PUT", "/indexes/{index_uid}/documents", documents.update_documents, "documents.add"),
    RouteSpec("GET", "/indexes/{index_uid}/documents", documents.browse_documents, "documents.get"),
    RouteSpec("POST", "/indexes/{index_uid}/documents/fetch", documents.fetch_documents, "documents.get"),
    RouteSpec("GET", "/indexes/{index_uid}/documents/{document_id}", documents.get_document, "documents.get"),
    RouteSpec(
        "DELETE",
        "/indexes/{index_uid}/documents/{document_id}",
        documents.delete_document,
        "documents.delete",
    ),
    RouteSpec(
        "POST",
        "/indexes/{index_uid}/documents/delete-batch",
        documents.delete_documents_batch,
        "documents.delete",
    ),
    RouteSpec(
        "POST",
        "/indexes/{index_uid}/documents/delete",
        documents.delete_documents_by_filter,
        "documents.delete",
    ),
    RouteSpec(
        "POST", "/indexes/{index_uid}/documents/edit", documents.edit_documents_by_function, "documents.*"
    ),
    RouteSpec("DELETE", "/indexes/{index_uid}/documents", documents.clear_documents, "documents.delete"),
    # routes/dynamic_search_rules.py
    RouteSpec("POST", "/dynamic-search-rules", dynamic_search_rules.list_rules, "dynamicSearchRules.get"),
    RouteSpec(
        "DELETE", "/dynamic-search-rules", dynamic_search_rules.clear_rules, "dynamicSearchRules.delete"
    ),
    RouteSpec(
        "GET", "/dynamic-search-rules/{rule_uid}", dynamic_search_rules.get_rule, "dynamicSearchRules.get"
    ),
    RouteSpec(
        "PATCH",
        "/dynamic-search-rules/{rule_uid}",
        dynamic_search_rules.update_rule,
        "dynamicSearchRules.update",
    ),
    RouteSpec(
        "DELETE",
        "/dynamic-search-rules/{rule_uid}",
        dynamic_search_rules.delete_rule,
        "dynamicSearchRules.delete",
    ),
    # routes/experimental_features.py
    RouteSpec("GET", "/experimental-features", experimental_features.get_features, "experimental.get"),
    RouteSpec("PATCH", "/experimental-features", experimental_features.patch_features, "experimental.update"),
    # routes/facet_search.py
    RouteSpec(
        "POST", "/indexes/{index_uid}/facet-search", facet_search.search_facet_values, "search", worker=True
    ),
    # routes/fields.py
    RouteSpec("POST", "/indexes/{index_uid}/fields", fields.post_index_fields, "fields.post"),
    # routes/indexes.py
    RouteSpec("GET", "/indexes", indexes.list_indexes, "indexes.get"),
    RouteSpec("POST", "/indexes", indexes.create_index, "indexes.create"),
    RouteSpec("GET", "/indexes/{index_uid}", indexes.get_index, "indexes.get"),
    RouteSpec("PATCH", "/indexes/{index_uid}", indexes.update_index, "indexes.update"),
    RouteSpec("DELETE", "/indexes/{index_uid}", indexes.delete_index, "indexes.delete"),
    RouteSpec("POST", "/swap-indexes", indexes.swap_indexes, "indexes.swap"),
    # routes/keys.py
    RouteSpec("GET", "/keys", keys.list_keys, "keys.get"),
    RouteSpec("POST", "/keys", keys.create_key, "keys.create"),
    RouteSpec("GET", "/keys/{key_or_uid}", keys.get_key, "keys.get"),
    RouteSpec("PATCH", "/keys/{key_or_uid}", keys.update_key, "keys.update"),
    RouteSpec("DELETE", "/keys/{key_or_uid}", keys.delete_key, "keys.delete"),
    # routes/logs.py
    RouteSpec("POST", "/logs/stderr", logs.logs_stderr, "metrics.get"),
    RouteSpec("POST", "/logs/stream", logs.logs_stream, "metrics.get"),
    RouteSpec("DELETE", "/logs/stream", logs.delete_logs_stream, "metrics.get"),
    # routes/meta.py
    RouteSpec("GET", "/indexes/{index_uid}/stats", meta.get_index_stats, "stats.get"),
    RouteSpec("GET", "/stats", meta.get_stats, "stats.get"),
    RouteSpec("GET", "/health", meta.health, None),
    RouteSpec("GET", "/version", meta.version, "version"),
    RouteSpec("GET", "/", meta.root, None),
    RouteSpec("GET", "/dashboard/{asset:path}", meta.dashboard_asset, None),
    # routes/metrics.py
    RouteSpec("GET", "/metrics", metrics.get_metrics, "metrics.get"),
    # routes/multi_search.py
    RouteSpec("POST", "/multi-search", multi_search.multi_search, "search", worker=True),
    # routes/network.py
    RouteSpec("GET", "/network", network.get_network, "network.get"),
    RouteSpec("PATCH", "/network", network.patch_network, "network.update"),
    RouteSpec("POST", "/network/control", network.network_control, "network.update"),
    # routes/render.py
    RouteSpec("POST", "/render-template", render.render_template, "settings.get"),
    # routes/search.py
    RouteSpec("POST", "/indexes/{index_uid}/search", search.search_with_post, "search", worker=True),
    RouteSpec("GET", "/indexes/{index_uid}/search", search.search_with_get, "search", worker=True),
    # routes/settings.py
    RouteSpec("GET", "/indexes/{index_uid}/settings", settings.get_settings, "settings.get"),
    RouteSpec("PATCH", "/indexes/{index_uid}/settings", settings.update_settings, "settings.update"),
    RouteSpec("DELETE", "/indexes/{index_uid}/settings", settings.delete_settings, "settings.update"),
    *_setting_routes(),  # GET, update and reset of each setting's own sub-route
    # routes/similar.py
    RouteSpec("POST", "/indexes/{index_uid}/similar", similar.similar_post, "search", worker=True),
    RouteSpec("GET", "/indexes/{index_uid}/similar", similar.similar_get, "search", worker=True),
    # routes/tasks.py
    RouteSpec("GET", "/tasks", tasks.list_tasks, "tasks.get"),
    RouteSpec("GET", "/tasks/{task_uid}", tasks.get_task, "tasks.get"),
    RouteSpec("GET", "/tasks/{task_uid}/documents", tasks.get_task_documents, "tasks.get"),
    RouteSpec("POST", "/tasks/cancel", tasks.cancel_tasks, "tasks.cancel"),
    RouteSpec("DELETE", "/tasks", tasks.delete_tasks, "tasks.delete"),
    RouteSpec("GET", "/batches", tasks.list_batches, "tasks.get"),
    RouteSpec("GET", "/batches/{batch_uid}", tasks.get_batch, "tasks.get"),
    # routes/webhooks.py
    RouteSpec("GET", "/webhooks", webhooks.list_webhooks, "webhooks.get"),
    RouteSpec("POST", "/webhooks", webhooks.create_webhook, "webhooks.create"),
    RouteSpec("GET", "/webhooks/{uuid}", webhooks.get_webhook, "webhooks.get"),
    RouteSpec("PATCH", "/webhooks/{uuid}", webhooks.update_webhook, "webhooks.update"),
    RouteSpec("DELETE", "/webhooks/{uuid}", webhooks.delete_webhook, "webhooks.delete"),
)


def starlette_route(spec: RouteSpec) -> Route:
    """The route as starlette serves it: the auth guard of `spec.action` first (with the path's index
    uid), then the handler, errors answered as Meilisearch does."""
    endpoint, action = spec.endpoint, spec.action

    async def guarded(request: Request) -> Response:
        guard(request, action, request.path_params.get("index_uid"))
        return await endpoint(request)

    guarded.__name__ = endpoint.__name__
    return Route(spec.path, safe(guarded), methods=[spec.method])
