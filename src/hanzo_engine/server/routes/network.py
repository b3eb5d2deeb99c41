"""`GET/PATCH /network` and `POST /network/control` (docs/api-contract.md §14; Meilisearch's `routes/network`).

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

import json
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import Field, decode_json_body, deserialize_object
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.tasks import TaskQuery
from hanzo_engine.scheduler.network import Network, public_view, read_network, write_network
from hanzo_engine.scheduler.sharding import set_task_network

from .. import remotes, sharding
from ..app_state import state
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


def _check_map(
    value: dict[str, Any] | None,
    path: str,
    fields: tuple[Field, ...],
    code: str,
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
        raise MeiliError(
            "not_leader",
            "This remote is not the leader of the network.\n  - Note: only the leader "
            f"`{merged_leader}` can receive new tasks.",
        )
    if (
        merged_leader is not None
        and patch.get("self") is not None
        and old["self"] not in (None, patch["self"])
    ):
        raise MeiliError(
            "invalid_network_self",
            "Renaming a remote is not supported when a leader is defined.\n"
            f"  - Note: applying this change would rename `{old['self']}` to `{patch['self']}`.\n"
            f"  - Hint: Send this change to `{patch['self']}` if it already exists.",
        )

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
                            raise MeiliError(
                                "invalid_network_url", f"Field `.remotes.{name}.url` cannot be set to `null`"
                            )
                        remote["url"] = _valid_url(name, change["url"])
                else:
                    if change.get("url") is None:
                        raise MeiliError("missing_network_url", f"Missing field `.remotes.{name}.url`")
                    remote = {
                        "url": _valid_url(name, change["url"]),
                        "searchApiKey": None,
                        "writeApiKey": None,
                    }
                    remotes_[name] = remote
                for key in ("searchApiKey", "writeApiKey"):
                    if key in change:
                        remote[key] = change[key]

    shards = {name: members for name, members in shards.items() if members}
    if merged_leader is not None:
        if merged_leader not in remotes_:
            raise MeiliError("invalid_network_remotes", f"leader `{merged_leader}` is missing from remotes")
        if not shards:
            raise MeiliError(
                "invalid_network_shards", "there must be at least one shard owned by at least one remote"
            )
        for name, members in shards.items():
            for member in members:
                if member not in remotes_:
                    raise MeiliError(
                        "invalid_network_shards", f"unknown remote `{member}` in `.{name}.remotes`"
                    )
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


async def get_network(request: Request) -> Response:
    _check_feature(request, "Using the /network route")
    network = await run_in_threadpool(read_network, state(request).indexes.store)
    return JSONResponse(network_view(request, network))


async def patch_network(request: Request) -> Response:
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    patch = parse_patch(body)
    _check_feature(request, "Using the /network route")
    origin = sharding.origin_from_headers({k.lower(): v for k, v in request.headers.items()})
    if origin is not None:
        return await _patch_from_leader(request, patch, origin)
    if "previousRemotes" in patch:
        raise MeiliError(
            "unexpected_network_previous_remotes",
            "Unexpected `previousRemotes` in network call.\n"
            "  - Note: `previousRemote` is reserved for internal use.",
        )
    scheduler = state(request).scheduler
    store = scheduler.store

    def update() -> tuple[Network, Network, dict[str, Any] | None]:
        old = read_network(store)
        merged = merge_network(old, patch)
        if merged["leader"] is None:
            write_network(store, merged)
            return old, merged, None
        _check_no_pending_change(request)
        write_network(store, merged)
        task = _register_change(request, {"remoteTasks": {}, "networkVersion": merged["version"]})
        return old, merged, task

    old, merged, task = await run_in_threadpool(update)
    if task is None:
        return JSONResponse(network_view(request, merged))
    # every other remote gets the whole new network, named as itself (Meilisearch's proxied network)
    shared = {
        "remotes": {
            name: {k: v for k, v in r.items() if k in ("url", "searchApiKey", "writeApiKey")}
            for name, r in merged["remotes"].items()
        },
        "shards": {name: {"remotes": s["remotes"]} for name, s in merged["shards"].items()},
        "leader": merged["leader"],
        "previousRemotes": old["remotes"],
        "previousShards": old["shards"],
    }
    bodies = {name: json.dumps({**shared, "self": name}).encode() for name in merged["remotes"]}
    await run_in_threadpool(
        sharding.forward,
        store,
        merged,
        task["taskUid"],
        "PATCH",
        "/network",
        {"content-type": "application/json"},
        b"",
        bodies,
    )  # stored durably (an fsync)
    return JSONResponse(task, status_code=202)


def _check_no_pending_change(request: Request) -> None:
    """400 `unprocessed_network_task` while a `networkTopologyChange` task is enqueued or processing."""
    listing = state(request).scheduler.list_tasks(
        TaskQuery(types={"networkTopologyChange"}, statuses={"enqueued", "processing"}, limit=1)
    )
    if listing["results"]:
        uid = listing["results"][0]["uid"]
        raise MeiliError(
            "unprocessed_network_task",
            f"Already has a pending network task with uid {uid}.\n  - Note: "
            "No network task can be registered while any previous network task is not done processing."
            f"\n  - Hint: Wait for task {uid} to complete or cancel it.",
        )


def _register_change(request: Request, network: dict[str, Any]) -> dict[str, Any]:
    scheduler = state(request).scheduler
    task = scheduler.register(
        "networkTopologyChange",
        None,
        kind={},
        details={
            "movedDocuments": 0,
            "message": "Waiting for tasks enqueued before the network change to finish processing",
        },
    )
    set_task_network(scheduler.store, task["taskUid"], lambda _: network)
    return task


async def _patch_from_leader(request: Request, patch: dict[str, Any], origin: sharding.Origin) -> Response:
    """A network change the leader forwarded: the body is the whole new network (Meilisearch's
    `patch_network_with_origin`), stored with the leader's version, with a `networkTopologyChange` task."""
    if patch.get("leader") is None:
        raise MeiliError("invalid_network_leader", "Duplicated task without leader")
    network: Network = {
        "self": patch.get("self"),
        "remotes": {
            name: {
                "url": r["url"],
                "searchApiKey": r.get("searchApiKey"),
                "writeApiKey": r.get("writeApiKey"),
            }
            for name, r in (patch.get("remotes") or {}).items()
            if r is not None and r.get("url") is not None
        },
        "shards": {
            name: {"remotes": list(s.get("remotes") or [])}
            for name, s in (patch.get("shards") or {}).items()
            if s is not None
        },
        "leader": patch["leader"],
        "version": origin.network_version,
    }
    store = state(request).scheduler.store

    def update() -> dict[str, Any]:
        write_network(store, network)
        return _register_change(request, {"origin": origin.to_json()})

    return JSONResponse(await run_in_threadpool(update), status_code=202)


async def network_control(request: Request) -> Response:
    decode_json_body(await read_body(request), request.headers.get("content-type"))
    _check_feature(request, "Using the /network/control route")
    raise MeiliError(
        "requires_enterprise_edition", "Meilisearch Enterprise Edition is required to call this route"
    )
