"""The client side of remote federated search (Meilisearch's `search/federated/proxy.rs`).

`proxy_search(name, remote, body, include_metadata, deadline)` sends one federated multi-search to a
remote of the network, as Meilisearch's `proxy_search`:

- `POST <remote url with its path replaced by /multi-search>` (document reads: `/indexes/{uid}/documents/fetch`), JSON body, `Authorization: Bearer
  <searchApiKey>` (omitted when the remote has none), `Meili-Proxy-Search: true`, and
  `Meili-Include-Metadata: true` when the caller asked for metadata;
- one deadline for the whole exchange: `MEILI_EXPERIMENTAL_REMOTE_SEARCH_TIMEOUT_SECONDS` (default 25)
  from the start of the search; each attempt gets the time left;
- up to 3 retries (4 attempts) with a pause of 10^attempt ns (at most 100 ms) plus up to as much
  again at random, on a connection failure, a 5xx or a body that is not a federated search result;
  never on a timeout, a 401/403 or another 4xx.

Failures are `RemoteSearchError`s holding the MeiliError Meilisearch reports for them in
`remoteErrors` (codes `remote_could_not_send_request`, `remote_invalid_api_key`, `remote_bad_request`,
`remote_remote_error`, `remote_timeout`, `remote_bad_response`). Outgoing connections go through the
server's IP policy (`engine.net_guard`): a remote resolving to a loopback or private address is refused
(as a request that could not be sent) unless `--experimental-allowed-ip-networks` allows it.

Remote availability (Meilisearch's `RemoteAvailability`): when the network has shards, a remote whose
search failed with a 5xx-class error is marked unavailable for 30 s, doubled at each new failure up to
5 minutes; `/network` shows it as `"status": "unavailable"` meanwhile. Shared by the server's processes
through `<db>/remote-availability.json`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import httpx

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine import net_guard

log = logging.getLogger("hanzo_engine.server.remotes")

PROXY_SEARCH_HEADER: Final = "Meili-Proxy-Search"
INCLUDE_METADATA_HEADER: Final = "Meili-Include-Metadata"
TIMEOUT_ENV: Final = "MEILI_EXPERIMENTAL_REMOTE_SEARCH_TIMEOUT_SECONDS"
DEFAULT_TIMEOUT_SECONDS: Final = 25.0
TRY_COUNT: Final = 3

_BAD_REQUEST_HINTS: Final = (
    "\n  - hint: check that the remote instance has the correct index configuration for that request"
    "\n  - hint: check that the `network` experimental feature is enabled on the remote instance"
)
_VERSION_HINT: Final = (
    "\n  - hint: check that the remote instance is a Meilisearch instance running the same version"
)


class RemoteSearchError(Exception):
    """A failed remote search: `error` is what `remoteErrors` shows; `retry` whether to try again."""

    def __init__(self, error: MeiliError, retry: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry = retry


def remote_timeout_seconds() -> float:
    try:
        return float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_SECONDS))
    except ValueError:
        return DEFAULT_TIMEOUT_SECONDS


def deadline_from_env() -> float:
    """The monotonic time by which every remote of one search must have answered."""
    return time.monotonic() + remote_timeout_seconds()


def remote_url(base: str, path: str) -> str:
    """The remote's URL with its path (and query) replaced by `path` (Meilisearch's `url_from_base_and_route`)."""
    parts = urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _response_text(raw: bytes) -> str:
    """A remote's body as Meilisearch quotes it: compact JSON when it parses, else the text."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def bad_response(message: str) -> MeiliError:
    return MeiliError("remote_bad_response", message)


def missing_path(path: str) -> MeiliError:
    return bad_response(f"remote hit does not contain `{path}`{_VERSION_HINT}")


def unexpected_value(path: str, expected: str, value: Any) -> MeiliError:
    received = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return bad_response(
        f"remote hit contains an unexpected value at path `{path}`: expected {expected}, "
        f"received `{received}`{_VERSION_HINT}"
    )


def _is_federated_result(value: Any) -> bool:
    """Whether `value` deserializes as Meilisearch's `FederatedSearchResult` (hits, time, hits info)."""
    if not isinstance(value, dict) or not isinstance(value.get("hits"), list):
        return False
    if not all(isinstance(hit, dict) for hit in value["hits"]):
        return False
    if not isinstance(value.get("processingTimeMs"), int):
        return False
    offset_limit = all(isinstance(value.get(k), int) for k in ("limit", "offset", "estimatedTotalHits"))
    paginated = all(isinstance(value.get(k), int) for k in ("hitsPerPage", "page", "totalPages", "totalHits"))
    return offset_limit or paginated


def _is_documents_result(value: Any) -> bool:
    """Whether `value` deserializes as Meilisearch's `DocumentsResult` (results, offset, limit, total)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("results"), list)
        and all(isinstance(doc, dict) for doc in value["results"])
        and all(isinstance(value.get(k), int) for k in ("offset", "limit", "total"))
    )


# -------------------------------------------------------------------------------------------------
# The HTTP exchange
# -------------------------------------------------------------------------------------------------

_clients: dict[int, httpx.AsyncClient] = {}
_clients_lock = threading.Lock()


def _client() -> httpx.AsyncClient:
    """One client per event loop (connections are reused across searches)."""
    loop = asyncio.get_running_loop()
    with _clients_lock:
        client = _clients.get(id(loop))
        if client is None:
            client = httpx.AsyncClient(
                follow_redirects=False,
                trust_env=False,
                limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            )
            _clients[id(loop)] = client
        return client


async def _attempt(
    url: str, headers: dict[str, str], content: bytes, deadline: float, valid: Callable[[Any], bool]
) -> dict[str, Any]:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise RemoteSearchError(
            MeiliError("remote_timeout", "remote host did not answer before the deadline"), False
        )
    try:
        await asyncio.to_thread(net_guard.check_url, url)
    except OSError:
        raise RemoteSearchError(
            MeiliError("remote_could_not_send_request", "error sending request"), True
        ) from None
    try:
        response = await asyncio.wait_for(
            _client().post(url, content=content, headers=headers, timeout=httpx.Timeout(remaining)), remaining
        )
        raw = response.content
    except (httpx.TimeoutException, TimeoutError):
        raise RemoteSearchError(
            MeiliError("remote_timeout", "remote host did not answer before the deadline"), False
        ) from None
    except httpx.HTTPError:
        raise RemoteSearchError(
            MeiliError("remote_could_not_send_request", "error sending request"), True
        ) from None
    status = response.status_code
    if status in (401, 403):
        raise RemoteSearchError(
            MeiliError(
                "remote_invalid_api_key",
                "could not authenticate against the remote host\n  - hint: check that the "
                "remote instance was registered with a valid API key having the `search` action",
            ),
            False,
        )
    if 400 <= status < 500:
        raise RemoteSearchError(
            MeiliError(
                "remote_bad_request",
                f"remote host responded with code {status}:\n  - response from remote: "
                f"{_response_text(raw)}{_BAD_REQUEST_HINTS}",
            ),
            False,
        )
    if status >= 500:
        raise RemoteSearchError(
            MeiliError(
                "remote_remote_error",
                f"remote host responded with code {status}:\n  - response from remote: {_response_text(raw)}",
            ),
            True,
        )
    if not 200 <= status < 300:
        log.warning("remote replied with unexpected status code %d", status)
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not valid(value):
        raise RemoteSearchError(
            bad_response(
                "could not parse response from the remote host as a federated search response:\n  - response from "
                f"remote: {_response_text(raw)}{_VERSION_HINT}"
            ),
            True,
        )
    result: dict[str, Any] = value
    return result


async def proxy_search(
    remote: dict[str, Any], body: dict[str, Any], include_metadata: bool, deadline: float
) -> dict[str, Any]:
    """The remote's federated search result for `body`; RemoteSearchError when it cannot be had."""
    return await json_proxy(remote, "/multi-search", body, include_metadata, deadline, _is_federated_result)


async def proxy_documents(
    remote: dict[str, Any], index_uid: str, body: dict[str, Any], deadline: float
) -> dict[str, Any]:
    """The remote's `POST /indexes/{uid}/documents/fetch` answer (proxy mode: each document with its
    `_federation.weightedScoreValues`); RemoteSearchError when it cannot be had."""
    return await json_proxy(
        remote,
        f"/indexes/{urllib.parse.quote(index_uid)}/documents/fetch",
        body,
        False,
        deadline,
        _is_documents_result,
    )


def _is_facet_search_result(value: Any) -> bool:
    """Whether `value` deserializes as Meilisearch's `FacetSearchResult`."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("facetHits"), list)
        and all(
            isinstance(h, dict) and isinstance(h.get("value"), str) and isinstance(h.get("count"), int)
            for h in value["facetHits"]
        )
        and isinstance(value.get("processingTimeMs"), int)
    )


async def proxy_facet_search(
    remote: dict[str, Any], index_uid: str, body: dict[str, Any], deadline: float
) -> dict[str, Any]:
    """The remote's `POST /indexes/{uid}/facet-search` answer; RemoteSearchError when it cannot be had."""
    return await json_proxy(
        remote,
        f"/indexes/{urllib.parse.quote(index_uid)}/facet-search",
        body,
        False,
        deadline,
        _is_facet_search_result,
    )


async def json_proxy(
    remote: dict[str, Any],
    path: str,
    body: dict[str, Any],
    include_metadata: bool,
    deadline: float,
    valid: Callable[[Any], bool],
) -> dict[str, Any]:
    """POST `body` to `path` of `remote` with the proxy headers and retries (see the module doc)."""
    url = remote_url(remote["url"], path)
    headers = {"Content-Type": "application/json", PROXY_SEARCH_HEADER: "true"}
    if remote.get("searchApiKey") is not None:
        headers["Authorization"] = f"Bearer {remote['searchApiKey']}"
    if include_metadata:
        headers[INCLUDE_METADATA_HEADER] = "true"
    content = json.dumps(body, ensure_ascii=False).encode()
    for attempt in range(TRY_COUNT + 1):
        try:
            return await _attempt(url, headers, content, deadline, valid)
        except RemoteSearchError as err:
            if not err.retry or attempt == TRY_COUNT:
                raise
            pause = min(10**attempt * 1e-9, 0.1)
            log.warning(
                "Attempt #%d, failed with %s, retrying after %.3fms.",
                attempt,
                err.error.message,
                pause * 2000,
            )
            await asyncio.sleep(pause + random.uniform(0, pause))
    raise AssertionError("unreachable")


# -------------------------------------------------------------------------------------------------
# Availability
# -------------------------------------------------------------------------------------------------

BASE_UNAVAILABILITY: Final = 30.0
MAX_UNAVAILABILITY: Final = 300.0
AVAILABILITY_FILE: Final = "remote-availability.json"

_availability_lock = threading.Lock()


def _read_availability(path: Path) -> dict[str, list[float]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        k: v
        for k, v in data.items()
        if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v)
    }


def mark_unavailable(db_path: Path, name: str) -> None:
    """Mark `name` unavailable for 30 s, or twice its last period (at most 5 minutes) when it was
    marked already. Kept in `<db>/remote-availability.json` (wall-clock times) so that every process
    of the server, search workers included, shares it; it is runtime state, in no dump or snapshot."""
    path = db_path / AVAILABILITY_FILE
    now = time.time()
    with _availability_lock:
        data = _read_availability(path)
        known = data.get(name)
        period = BASE_UNAVAILABILITY if known is None else min((known[1] - known[0]) * 2, MAX_UNAVAILABILITY)
        data[name] = [now, now + period]
        tmp = path.with_name(f"{AVAILABILITY_FILE}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(data))
            os.replace(tmp, path)
        except OSError:
            log.warning("could not record that remote `%s` is unavailable", name)


def unavailable_remotes(db_path: Path, network: dict[str, Any]) -> frozenset[str]:
    """The remotes of `network` inside an unavailability period."""
    data = _read_availability(db_path / AVAILABILITY_FILE)
    now = time.time()
    return frozenset(name for name in network["remotes"] if name in data and now <= data[name][1])
