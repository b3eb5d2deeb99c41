"""Document reads and facet search over the network (`useNetwork` on `GET /documents`, `POST
/documents/fetch`, `GET /documents/{id}` and `POST /facet-search`; Meilisearch's
`retrieve_documents_federated` and facet search's `search_federated`, docs/api-contract.md §14).

- Browse: the request goes to every remote of the network (the one named like `self` is read here) as
  `POST /indexes/{uid}/documents/fetch` with `offset: 0, limit: offset + limit` and
  `Meili-Proxy-Search: true`, in parallel. In proxy mode each document carries
  `_federation.weightedScoreValues`, its values for the request's `sort` (`{"sort": {"asc", "value"}}`,
  the value ranking first among the field's values, strings lowercased, `null` when missing). The
  lists are merged by those values (remote order on ties, so without `sort` they follow each other in
  remote name order), `offset`/`limit` are cut from the merged list, `total` adds up, and a remote that
  fails appears in `remoteErrors` (present only when some remote failed).
- One document: read here first; only when it is not found here is it looked for on the network.
- Facet search: the same body goes to every remote (`POST /indexes/{uid}/facet-search`), the facet
  values of all answers are merged by value (counts added, values in byte order) or, when this
  instance's index sorts the facet by count, by decreasing count; `remoteErrors` is always present.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.search import parse_sort
from hanzo_engine.scheduler.network import Network

from . import remotes, sharding
from .federation.merge import Ranked, merge_ranked, sort_value_order

FEDERATION = "_federation"


def _values(document: dict[str, Any], path: str) -> list[Any]:
    """The facet values of `path` in `document` (arrays flattened, nested objects followed)."""
    current: list[Any] = [document]
    for part in path.split("."):
        found: list[Any] = []
        for value in current:
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, dict) and part in item:
                    found.append(item[part])
        current = found
    out: list[Any] = []
    for value in current:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, bool):
                out.append(str(item).lower())
            elif isinstance(item, str):
                out.append(item.lower())
            elif isinstance(item, (int, float)):
                out.append(item)
    return out


def weighted_score_values(document: dict[str, Any], sort: list[str] | None) -> list[dict[str, Any]]:
    """`_federation.weightedScoreValues` of a document read in proxy mode (see the module doc)."""
    out: list[dict[str, Any]] = []
    for criterion in parse_sort(sort) if sort else []:
        if criterion.field is None:
            out.append({"geoSort": {"asc": criterion.ascending, "distance": None}})
            continue
        best: Any = None
        for value in _values(document, criterion.field):
            if best is None or sort_value_order(criterion.ascending, value, best) > 0:
                best = value
        out.append({"sort": {"asc": criterion.ascending, "value": best}})
    return out


def _ranked(document: dict[str, Any], position: int) -> Ranked:
    federation = document.pop(FEDERATION, None) or {}
    values: list[tuple[Any, ...]] = []
    for item in federation.get("weightedScoreValues") or []:
        ((kind, value),) = item.items()
        if kind == "sort":
            values.append(("sort", value["asc"], value.get("value")))
        elif kind in ("weightedScore", "vectorSort"):
            values.append(("score", value))
        else:
            values.append(("geo", value.get("asc"), value.get("distance")))
    return Ranked(values, 0.0, position)


async def browse(
    network: Network, uid: str, params: dict[str, Any], local: Callable[[dict[str, Any]], Any]
) -> dict[str, Any]:
    """The browse of `params` over the network; `local(params)` runs it here, in proxy mode, and
    returns its result (awaitable)."""
    offset, limit = params["offset"], params["limit"]
    proxied = {**params, "offset": 0, "limit": offset + limit}
    proxied.pop("useNetwork", None)
    if sharding.proxied_use_network(network) is not None:
        proxied["useNetwork"] = False
    targets = sharding.network_targets(network)
    names = [name or "" for name, _ in targets]
    deadline = remotes.deadline_from_env()

    async def one(name: str | None, shard: str | None) -> dict[str, Any]:
        body = {**proxied, "filter": sharding.shard_filter(proxied.get("filter"), shard)}
        if name == network["self"]:
            body.pop("useNetwork", None)
            result: dict[str, Any] = await local(body)
            return result
        return await remotes.proxy_documents(network["remotes"][name], uid, body, deadline)

    answers = await asyncio.gather(*(one(name, shard) for name, shard in targets), return_exceptions=True)
    lists: list[list[tuple[Ranked, dict[str, Any]]]] = []
    errors: dict[str, dict[str, str]] = {}
    total = 0
    for position, (name, answer) in enumerate(zip(names, answers, strict=True)):
        if isinstance(answer, remotes.RemoteSearchError):
            errors[name] = answer.error.to_json()
        elif isinstance(answer, MeiliError):
            if name == network["self"]:
                raise answer
            errors[name] = answer.to_json()
        elif isinstance(answer, BaseException):
            raise answer
        else:
            total += answer["total"]
            for remote_name, remote_error in (answer.get("remoteErrors") or {}).items():
                errors[remote_name] = remote_error
            try:
                lists.append([(_ranked(doc, position), doc) for doc in answer["results"]])
            except (ValueError, AttributeError, KeyError, TypeError):
                errors[name] = remotes.missing_path("._federation.weightedScoreValues").to_json()
    merged = [doc for _, doc in merge_ranked(lists)][offset : offset + limit]
    body: dict[str, Any] = {"results": merged, "offset": offset, "limit": limit, "total": total}
    if errors:
        body["remoteErrors"] = dict(sorted(errors.items()))
    return body


async def facet_search(
    network: Network, uid: str, body: dict[str, Any], local: Callable[[], Any], by_count: Callable[[], Any]
) -> dict[str, Any]:
    """The facet search of `body` over the network; `local()` runs it here (awaitable, its result),
    `by_count()` (awaitable) tells whether this instance's index sorts the facet's values by count."""
    targets = sharding.network_targets(network)
    names = [name or "" for name, _ in targets]
    deadline = remotes.deadline_from_env()
    use_network = sharding.proxied_use_network(network)

    local_done = False

    async def one(name: str | None, shard: str | None) -> dict[str, Any]:
        nonlocal local_done
        if name == network["self"]:
            # this node holds only the documents of its shards: its facet values once, whatever it owns
            if local_done:
                return {"facetHits": [], "processingTimeMs": 0}
            local_done = True
            result: dict[str, Any] = await local()
            return result
        proxied = {**body, "filter": sharding.shard_filter(body.get("filter"), shard)}
        if use_network is not None:
            proxied["useNetwork"] = use_network
        assert name is not None
        return await remotes.proxy_facet_search(network["remotes"][name], uid, proxied, deadline)

    answers = await asyncio.gather(*(one(name, shard) for name, shard in targets), return_exceptions=True)
    counts: dict[str, int] = {}
    errors: dict[str, dict[str, str]] = {}
    local_result: dict[str, Any] | None = None
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, remotes.RemoteSearchError):
            errors[name] = answer.error.to_json()
        elif isinstance(answer, BaseException):
            raise answer
        else:
            if name == network["self"]:
                local_result = answer
            for hit in answer["facetHits"]:
                counts[hit["value"]] = counts.get(hit["value"], 0) + hit["count"]
    items = sorted(counts.items())
    if await by_count():
        items.sort(key=lambda item: -item[1])
    hits = [{"value": value, "count": count} for value, count in items]
    return {
        "facetHits": hits,
        "facetQuery": body.get("facetQuery"),
        "processingTimeMs": local_result["processingTimeMs"] if local_result is not None else 0,
        "remoteErrors": dict(sorted(errors.items())),
    }
