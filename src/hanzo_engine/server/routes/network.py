"""`GET/PATCH /network` and `POST /network/control` (contract §14; Meilisearch's `routes/network`).

The network names this instance (`self`), the other instances it may query (`remotes`, each with its
URL and its search and write API keys) and the `shards` they own. Community Edition semantics, as
Meilisearch built without the `enterprise` feature: `leader` cannot be set (451) and `/network/control`
always answers 451, so shards are stored but never route anything.

Order of the checks, as actix runs Meilisearch's extractors: the API key, the body (deserr, first
problem in key order), the `network` feature, then the Community Edition refusals (`leader`,
`previousRemotes`), then the merge of `merge_network`, whose errors come from walking shards then
remotes in name order. A successful PATCH (even `{}`) stores the merged network with a new UUIDv7
`version` and answers it. The network is stored in the tasks environment (`scheduler.network`), so the
search workers and snapshots see it.
"""

from __future__ import annotations

from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import Field, decode_json_body, deserialize_object
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.scheduler.network import Network, public_view, read_network, write_network

from .. import remotes
from ..app_state import route, state
from ..features import feature_not_enabled, runtime_features
from ..http import JSONResponse, read_body
from ..search import NETWORK_DISCUSSION, uuid7
from ..urls import url_error

_REMOTE_FIELDS: Final = (
    Field("url", "string", "invalid_network_url", nullable=True),
    Field("searchApiKey", "string", "invalid_network_search_api_key", nullable=True),
    Field("writeApiKey", "string", "invalid_network_write_api_key", nullable=True),
)
_SHARD_FIELDS: Final = (
    Field("remotes", "string_array", "invalid_network_remotes", nullable=True),
    Field("addRemotes", "string_array", "invalid_network_remotes", nullable=True),
    Field("removeRemotes", "string_array", "invalid_network_remotes", nullable=True),
)


_NETWORK_FIELDS: Final = (
    Field("remotes", "object", "invalid_network_remotes", nullable=True),
    Field("shards", "object", "invalid_network_shards", nullable=True),
    Field("previousShards", "object", "invalid_network_shards", nullable=True),
    Field("self", "string", "invalid_network_self", nullable=True),
    Field("leader", "string", "invalid_network_leader", nullable=True),
    Field("previousRemotes", "object", "invalid_network_remotes", nullable=True),
)


def _check_map(value: dict[str, Any] | None, path: str, fields: tuple[Field, ...], code: str,
               ) -> dict[str, dict[str, Any] | None] | None:
    """Each entry of `{name: object | null}` typed against `fields` (absent keys left out)."""
    if value is None:
        return None
    out: dict[str, dict[str, Any] | None] = {}
    for name, item in value.items():
        if item is None:
            out[name] = None
            continue
        out[name] = deserialize_object(item, fields, unknown_code=code, path=f"{path}.{name}")
    return out


def parse_patch(body: Any) -> dict[str, Any]:
    """The PATCH body: present keys only, `None` for an explicit `null` (Meilisearch's `Setting`).
    Keys are checked in the body's order, each one's nested objects before the next key."""
    if not isinstance(body, dict):
        deserialize_object(body, _NETWORK_FIELDS)  # raises the type error
    patch: dict[str, Any] = {}
    for key, item in body.items():
        value = deserialize_object({key: item}, _NETWORK_FIELDS)[key]  # unknown key: bad_request
        if key in ("remotes", "previousRemotes"):
            value = _check_map(value, f".{key}", _REMOTE_FIELDS, "invalid_network_remotes")
        elif key in ("shards", "previousShards"):
            value = _check_map(value, f".{key}", _SHARD_FIELDS, "invalid_network_shards")
        patch[key] = value
    return patch


def _valid_url(name: str, url: str) -> str:
    error = url_error(url)
    if error is not None:
        raise MeiliError("invalid_network_url", f"Invalid `.remotes.{name}.url` (`{url}`): {error}")
    return url


def merge_network(old: Network, patch: dict[str, Any]) -> Network:
    """`old` with `patch` applied (Meilisearch's `merge_networks`, no leader possible here)."""
    merged_self = patch["self"] if "self" in patch else old["self"]
    merged_leader = patch["leader"] if "leader" in patch else old["leader"]
    if merged_leader is not None and merged_leader != merged_self:
        raise MeiliError("not_leader", "This remote is not the leader of the network.\n  - Note: only the leader "
                         f"`{merged_leader}` can receive new tasks.")

    shards: dict[str, list[str]] = {name: list(s["remotes"]) for name, s in old["shards"].items()}
    if "shards" in patch:
        new_shards = patch["shards"]
        if new_shards is None:
            shards = {}
        else:
            for name in sorted(new_shards):
                change = new_shards[name]
                if change is None:
                    shards.pop(name, None)
                    continue
                owners = set(shards.get(name, []))
                if change.get("remotes") is not None:
                    owners = set(change["remotes"])
                if change.get("addRemotes") is not None:
                    owners |= set(change["addRemotes"])
                if change.get("removeRemotes") is not None:
                    owners -= set(change["removeRemotes"])
                shards[name] = sorted(owners)

    remotes_: dict[str, dict[str, Any]] = {name: dict(r) for name, r in old["remotes"].items()}
    if "remotes" in patch:
        new_remotes = patch["remotes"]
        if new_remotes is None:
            remotes_ = {}
        else:
            for name in sorted(set(remotes_) | set(new_remotes)):
                if name not in new_remotes:
                    continue
                change = new_remotes[name]
                if change is None:
                    remotes_.pop(name, None)
                    for members in shards.values():
                        if name in members:
                            members.remove(name)
                    continue
                if name in remotes_:
                    remote = remotes_[name]
                    if "url" in change:
                        if change["url"] is None:
                            raise MeiliError("invalid_network_url",
                                             f"Field `.remotes.{name}.url` cannot be set to `null`")
                        remote["url"] = _valid_url(name, change["url"])
                else:
                    if change.get("url") is None:
                        raise MeiliError("missing_network_url", f"Missing field `.remotes.{name}.url`")
                    remote = {"url": _valid_url(name, change["url"]), "searchApiKey": None, "writeApiKey": None}
                    remotes_[name] = remote
                for key in ("searchApiKey", "writeApiKey"):
                    if key in change:
                        remote[key] = change[key]

    shards = {name: members for name, members in shards.items() if members}
    if merged_leader is not None:
        if merged_leader not in remotes_:
            raise MeiliError("invalid_network_remotes", f"leader `{merged_leader}` is missing from remotes")
        if not shards:
            raise MeiliError("invalid_network_shards",
                             "there must be at least one shard owned by at least one remote")
        for name, members in shards.items():
            for member in members:
                if member not in remotes_:
                    raise MeiliError("invalid_network_shards", f"unknown remote `{member}` in `.{name}.remotes`")
    return {
        "self": merged_self,
        "remotes": dict(sorted(remotes_.items())),
        "shards": {name: {"remotes": members} for name, members in sorted(shards.items())},
        "leader": merged_leader,
        "version": uuid7(),
    }


def _check_feature(request: Request, action: str) -> None:
    if not runtime_features(request).enabled("network"):
        raise feature_not_enabled(action, "network", NETWORK_DISCUSSION)


def network_view(request: Request, network: Network) -> Network:
    return public_view(network, remotes.unavailable_remotes(state(request).options.db_path, network))


@route("GET", "/network", action="network.get")
async def get_network(request: Request) -> Response:
    _check_feature(request, "Using the /network route")
    network = await run_in_threadpool(read_network, state(request).indexes.store)
    return JSONResponse(network_view(request, network))


@route("PATCH", "/network", action="network.update")
async def patch_network(request: Request) -> Response:
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    patch = parse_patch(body)
    _check_feature(request, "Using the /network route")
    if patch.get("leader") is not None:
        raise MeiliError("requires_enterprise_edition",
                         "Meilisearch Enterprise Edition is required to set `network.leader`")
    if "previousRemotes" in patch:
        raise MeiliError("unexpected_network_previous_remotes", "Unexpected `previousRemotes` in network call.\n"
                         "  - Note: `previousRemote` is reserved for internal use.")
    store = state(request).scheduler.store

    def update() -> Network:
        merged = merge_network(read_network(store), patch)
        write_network(store, merged)
        return merged

    return JSONResponse(network_view(request, await run_in_threadpool(update)))


@route("POST", "/network/control", action="network.update")
async def network_control(request: Request) -> Response:
    decode_json_body(await read_body(request), request.headers.get("content-type"))
    _check_feature(request, "Using the /network/control route")
    raise MeiliError("requires_enterprise_edition", "Meilisearch Enterprise Edition is required to call this route")
