"""The remote queries of a federated search (the network's `remotes`): what each remote is sent,
and its answer merged back (`weightedScoreValues`, totals, facets, errors)."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.search import SearchQuery

from .. import remotes
from .facets import ComputedFacets
from .merge import Ranked

if TYPE_CHECKING:
    from .perform import Federated


def query_json(uid: str, query: SearchQuery, weight: float, position: int) -> dict[str, Any]:
    """A query as a remote is sent it: its search parameters (the tenant token's filter included),
    `federationOptions` reduced to its weight and its position in the caller's request."""
    out: dict[str, Any] = {"indexUid": uid}
    if query.q is not None:
        out["q"] = query.q
    if query.vector is not None:
        out["vector"] = query.vector
    if query.media is not None:
        out["media"] = query.media
    if query.hybrid is not None:
        hybrid: dict[str, Any] = {
            "embedder": query.hybrid.embedder,
            "semanticRatio": query.hybrid.semantic_ratio,
        }
        if query.hybrid.fusion is not None:
            hybrid["fusion"] = query.hybrid.fusion
        out["hybrid"] = hybrid
    optional = (
        ("attributesToRetrieve", query.attributes_to_retrieve),
        ("attributesToCrop", query.attributes_to_crop),
        ("attributesToHighlight", query.attributes_to_highlight),
        ("filter", query.filter),
        ("sort", query.sort),
        ("distinct", query.distinct),
        ("attributesToSearchOn", query.attributes_to_search_on),
        ("rankingScoreThreshold", query.ranking_score_threshold),
        ("locales", query.locales),
    )
    out.update((key, value) for key, value in optional if value is not None)
    out.update(
        retrieveVectors=query.retrieve_vectors,
        cropLength=query.crop_length,
        cropMarker=query.crop_marker,
        highlightPreTag=query.highlight_pre_tag,
        highlightPostTag=query.highlight_post_tag,
        showMatchesPosition=query.show_matches_position,
        matchingStrategy=query.matching_strategy,
        showRankingScore=query.show_ranking_score,
        showRankingScoreDetails=query.show_ranking_score_details,
    )
    if (
        query.use_network is not None
    ):  # explicitly false in a sharded network: the remote must not fan out again
        out["useNetwork"] = query.use_network
    out["federationOptions"] = {"weight": weight, "queryPosition": position}
    return out


def score_values_json(rank: Ranked) -> list[dict[str, Any]]:
    """`_federation.weightedScoreValues` of a hit answered in proxy mode (Meilisearch's
    `WeightedScoreValue`: `{"weightedScore": f}` or `{"sort": {"asc", "value"}}`)."""
    out: list[dict[str, Any]] = []
    for value in rank.values:
        if value[0] == "score":
            out.append({"weightedScore": value[1]})
        elif value[0] == "sort":
            out.append({"sort": {"asc": value[1], "value": value[2]}})
        else:
            out.append({"geoSort": {"asc": value[1], "distance": value[2]}})
    return out


def _score_values(values: Any) -> list[tuple[Any, ...]]:
    """A remote hit's `weightedScoreValues` as `Ranked.values`; ValueError when malformed."""
    if not isinstance(values, list):
        raise ValueError("expected a list")
    out: list[tuple[Any, ...]] = []
    for item in values:
        if not isinstance(item, dict) or len(item) != 1:
            raise ValueError("expected a single-key object")
        ((kind, value),) = item.items()
        if kind in ("weightedScore", "vectorSort") and isinstance(value, (int, float)):
            out.append(("score", float(value)))
        elif kind == "sort" and isinstance(value, dict) and isinstance(value.get("asc"), bool):
            out.append(("sort", value["asc"], value.get("value")))
        elif kind == "geoSort" and isinstance(value, dict) and isinstance(value.get("asc"), bool):
            out.append(("geo", value["asc"], value.get("distance")))
        else:
            raise ValueError(f"unknown variant `{kind}`")
    return out


@dataclass
class RemoteResults:
    """What the remotes answered, ready to merge (Meilisearch's `RemoteSearch::finish`)."""

    hits: list[list[tuple[Ranked, dict[str, Any]]]] = dataclasses.field(default_factory=list)
    total: int = 0
    facets_by_index: dict[str, list[ComputedFacets]] = dataclasses.field(default_factory=dict)
    primary_keys: dict[tuple[str | None, str], str | None] = dataclasses.field(default_factory=dict)
    errors: dict[str, MeiliError] = dataclasses.field(default_factory=dict)

    def add(self, name: str, result: dict[str, Any]) -> None:
        """Take one remote's answer, or record why it cannot be used (its hits are then all dropped)."""
        entries: list[tuple[Ranked, dict[str, Any]]] = []
        for hit in result["hits"]:
            federation = hit.get("_federation")
            if federation is None:
                self.errors[name] = remotes.missing_path("._federation")
                return
            if not isinstance(federation, dict):
                self.errors[name] = remotes.unexpected_value("._federation", "map", federation)
                return
            if "weightedScoreValues" not in federation:
                self.errors[name] = remotes.missing_path("._federation.weightedScoreValues")
                return
            if "weightedRankingScore" not in federation:
                self.errors[name] = remotes.missing_path("._federation.weightedRankingScore")
                return
            values = federation.pop("weightedScoreValues")
            federation.pop("extra_document", None)
            federation.pop("pinnedPosition", None)
            federation["remote"] = name
            weighted, position = federation.get("weightedRankingScore"), federation.get("queriesPosition")
            try:
                if not isinstance(weighted, (int, float)) or not isinstance(position, int):
                    raise ValueError("bad score or position")
                rank = Ranked(_score_values(values), float(weighted), position)
            except ValueError:
                continue  # Meilisearch skips such a hit (with a warning) and keeps the others
            entries.append((rank, hit))
        self.hits.append(entries)
        self.total += int(result.get("estimatedTotalHits", result.get("totalHits", 0)) or 0)
        by_index = result.get("facetsByIndex")
        if isinstance(by_index, dict):
            for uid, facets in by_index.items():
                if isinstance(facets, dict):
                    computed = (facets.get("distribution") or {}, facets.get("stats") or {})
                    self.facets_by_index.setdefault(uid, []).append(computed)
        for meta in result.get("metadata") or []:
            if isinstance(meta, dict) and isinstance(meta.get("indexUid"), str):
                self.primary_keys[(name, meta["indexUid"])] = meta.get("primaryKey")


async def search_remotes(
    searcher: Federated, include_metadata: bool, deadline: float, db_path: Path
) -> RemoteResults:
    """Every remote's queries, in parallel, merged into one `RemoteResults` (in remote name order)."""
    names = sorted(searcher.remote_queries)
    answers = await asyncio.gather(
        *(
            remotes.proxy_search(
                searcher.remote_queries[name][0],
                searcher.remote_body(searcher.remote_queries[name][1]),
                include_metadata,
                deadline,
            )
            for name in names
        ),
        return_exceptions=True,
    )
    out = RemoteResults()
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, remotes.RemoteSearchError):
            out.errors[name] = answer.error
        elif isinstance(answer, BaseException):
            out.errors[name] = MeiliError("internal", str(answer))
        else:
            out.add(name, answer)
    if searcher.network["shards"]:
        for name, error in out.errors.items():
            if error.status >= 500:
                await asyncio.to_thread(remotes.mark_unavailable, db_path, name)
    return out
