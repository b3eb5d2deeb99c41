"""Settings routes: `GET/PATCH/DELETE /indexes/{uid}/settings` and one sub-route per setting.

Every sub-route has GET (200, the current value), its update verb (PATCH for the object settings that
merge — typo tolerance, faceting, pagination, embedders — PUT for the others; the body is the bare
value and `null` resets it) and DELETE (reset). Updates enqueue a `settingsUpdate` task whose kind is
`{"settings": <patch JSON>, "isDeletion", "allowIndexCreation"}`; the scheduler applies the patch.

As in Meilisearch, updates on a missing index create it, but a deletion (DELETE of the settings or of a
sub-route) does not: the scheduler's autobatcher only allows index creation for non-deletions, so that
task fails with `index_not_found`. The body is validated before the path's uid, as actix runs the JSON
extractor before the handler checks the uid; the embedder rules a patch can break on its own (fields a
named source refuses or requires, templates, dimensions, URL, OpenAI model) are checked after the uid and
answer 400 without enqueuing, like Meilisearch's `validate_settings`.

Two settings belong to experimental features: `chat` (`chatCompletions`) and `foreignKeys`
(`foreignKeys`). Setting a value with the feature off is 400 `feature_not_enabled`; resetting needs no
feature, their sub-route GET answers either way, and `GET /settings` shows them only while it is on.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import decode_json_body
from hanzo_engine.apitypes.errors import index_not_found
from hanzo_engine.apitypes.index_uid import validate_index_uid
from hanzo_engine.apitypes.settings import (
    SettingsPatch,
    parse_setting_value,
    parse_settings_patch,
    patch_details,
    settings_view,
    sub_route_path,
)
from hanzo_engine.engine.vector.embedders import (
    check_embedder_features,
    check_embedders_patch,
    display_embedder,
)

from ..app_state import custom_metadata, state
from ..auth import auth_filter
from ..chats.gate import chat_enabled, check_chat
from ..errors import Endpoint
from ..http import JSONResponse, read_body

SETTINGS_PATH = "/indexes/{index_uid}/settings"
FOREIGN_KEYS_DISCUSSION = "https://github.com/orgs/meilisearch/discussions/873"


def foreign_keys_enabled(request: Request) -> bool:
    """Whether the `foreignKeys` experimental feature is on (the `foreignKeys` setting, `_foreign` filters)."""
    from ..features import runtime_features  # imported here: instance imports the route modules

    return runtime_features(request).enabled("foreignKeys")


def check_foreign_keys(request: Request, action: str) -> None:
    """400 `feature_not_enabled` unless `foreignKeys` is on; `action` names what was attempted."""
    from ..features import feature_not_enabled

    if not foreign_keys_enabled(request):
        raise feature_not_enabled(action, "foreign_keys", FOREIGN_KEYS_DISCUSSION)


def _current_settings(request: Request) -> dict[str, Any]:
    uid = validate_index_uid(request.path_params["index_uid"])
    index = state(request).scheduler.index(uid)
    if index is None:
        raise index_not_found(uid)
    with index.read() as r:
        return settings_view(r.settings(), display_embedder)


async def _body(request: Request) -> Any:
    return decode_json_body(await read_body(request), request.headers.get("content-type"))


async def _enqueue(request: Request, patch: SettingsPatch, *, is_deletion: bool) -> Response:
    meta = custom_metadata(request)
    uid = validate_index_uid(request.path_params["index_uid"])
    from ..features import runtime_features

    # Meilisearch's `validate_settings`: composite embedders and fragments need their feature
    check_embedder_features(patch.values.get("embedders"), runtime_features(request).enabled)
    if patch.values.get("chat") is not None:
        check_chat(request, "setting `chat` in the index settings")
    if patch.values.get("foreignKeys") is not None:
        check_foreign_keys(request, "setting `foreignKeys` in the index settings")
    # Meilisearch validates what the embedders patch carries before enqueuing (400, no task); rules that
    # need the stored settings (an embedder patched without `source`) wait for the task
    check_embedders_patch(patch.values.get("embedders"))
    # a missing index is created only by an update, and only for callers that may create it
    creatable = not is_deletion and auth_filter(request).allow_index_creation(uid)
    kind = {"settings": patch.to_json(), "isDeletion": is_deletion, "allowIndexCreation": creatable}
    return await state(request).enqueue(
        "settingsUpdate", uid, details=patch_details(patch), kind=kind, custom_metadata=meta
    )


async def get_settings(request: Request) -> Response:
    view = _current_settings(request)
    if not chat_enabled(request):
        del view["chat"]  # shown only while `chatCompletions` is on
    if not foreign_keys_enabled(request):
        del view["foreignKeys"]  # likewise with `foreignKeys`; its sub-route answers either way
    return JSONResponse(view)


async def update_settings(request: Request) -> Response:
    patch = parse_settings_patch(await _body(request))
    return await _enqueue(request, patch, is_deletion=False)


async def delete_settings(request: Request) -> Response:
    return await _enqueue(request, SettingsPatch.reset_all(), is_deletion=True)


def sub_route_handlers(name: str) -> tuple[Endpoint, Endpoint, Endpoint]:
    """The GET, update and reset handlers of the sub-route of the setting `name`."""
    snake = sub_route_path(name).replace("-", "_")

    async def get_one(request: Request) -> Response:
        return JSONResponse(_current_settings(request)[name])

    async def update_one(request: Request) -> Response:
        patch = parse_setting_value(name, await _body(request))
        return await _enqueue(request, patch, is_deletion=False)

    async def reset_one(request: Request) -> Response:
        return await _enqueue(request, SettingsPatch({name: None}), is_deletion=True)

    # distinct names keep tracebacks and route listings readable
    get_one.__name__, update_one.__name__, reset_one.__name__ = (
        f"get_{snake}",
        f"update_{snake}",
        f"reset_{snake}",
    )
    return get_one, update_one, reset_one
