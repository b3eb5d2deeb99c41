"""What a multi-search request is made of (its queries and their federation options), and its
errors naming the query they come from."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.search import SearchQuery

from ..features import ExperimentalFeatures, feature_not_enabled
from ..search import NETWORK_DISCUSSION

DEFAULT_LIMIT: Final = 20


@dataclass
class FederationOptions:
    weight: float = 1.0
    remote: str | None = None
    query_position: int | None = None


@dataclass
class MultiQuery:
    """One item of `queries`: its index, the search, and what only multi-search looks at."""

    index_uid: str
    query: SearchQuery
    options: FederationOptions | None
    pagination: str | None  # the first pagination parameter given (`offset`, `limit`, `page`, `hitsPerPage`)
    show_performance_details: bool | None


# -------------------------------------------------------------------------------------------------
# Errors naming the query
# -------------------------------------------------------------------------------------------------


class MultiSearchError(MeiliError):
    """A MeiliError whose HTTP status is not its code's (a missing index answers 400 here)."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(code, message)
        self._status = status

    @property
    def status(self) -> int:
        return self._status


def inside(err: MeiliError, where: str, note: str = "", code: str | None = None) -> MultiSearchError:
    status = 400 if err.code == "index_not_found" else err.status
    return MultiSearchError(code or err.code, f"Inside `{where}`: {err.message}{note}", status)


QUERY_PREFIX: Final = re.compile(r"^Inside `\.queries\[\d+\]`: ")


def query_where(i: int) -> str:
    return f".queries[{i}]"


def check_use_network(query: SearchQuery, features: ExperimentalFeatures) -> None:
    if query.use_network is not None and not features.enabled("network"):
        raise feature_not_enabled("passing `useNetwork` in a search query", "network", NETWORK_DISCUSSION)
