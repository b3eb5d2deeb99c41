"""A federated search (Meilisearch's `perform_federated_search`): the queries of a multi-search
with `federation`, local and remote, merged into one ranked list.

The steps (docs/api-contract.md §3.10):
1. partition: per query, refuse pagination, facets, `personalize`, `showPerformanceDetails`, `distinct`
   beside `federation.distinct`, `remote`/`queryPosition` without the `network` feature; group the
   queries by index;
2. per index in uid order, in one read transaction: the facet-order check of `mergeFacets`, then per
   query the search kind, the ranking-rule compatibility with the queries before it, the search
   checks, and the search itself for `offset + limit` hits (page mode: `page ×
   hitsPerPage`, exhaustive count) capped by the index's `maxTotalHits`. The index's lists are merged
   by weighted score (each query's order kept), a document found by several queries keeping its first
   place; each hit gets `_federation` (after the document's fields, before `_formatted`). Last, the
   index's `facetsByIndex` facets, counted over the union of its queries' candidates;
3. `facetsByIndex` of indexes no query names are still checked (not counted: Meilisearch leaves them
   out of the response); the indexes' lists are merged the same way and `offset`/`limit` (or the page)
   cut from the merged list; the facets are given per index or merged (`federation/facets.py`).

Hits are compared by weighted score as `federation.merge.compare` documents (Meilisearch's
`WeightedScoreValue`); ranking-rule compatibility is `federation.merge.RankingRules`.

Remote queries (`federationOptions.remote`, or `useNetwork` fanning a query out to every remote of the
network; docs/api-contract.md §14): a query naming `self` runs here; the others are grouped per remote and sent as
one federated search each (`remotes.proxy_search`) while the local queries run. Their hits carry
`weightedScoreValues` (a remote answers in proxy mode when `Meili-Proxy-Search: true`) and merge with the
local ones by the same comparison; every hit gets `_federation.remote`, the body `remoteErrors` (a remote
that fails only loses its hits), totals add up and the remotes' `facetsByIndex` join the local ones.

`estimatedTotalHits` sums, over the indexes, the number of documents any of the index's queries
matched (the union of their candidates, the set the facets are counted on), not capped by
`maxTotalHits`, as Meilisearch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import Any, Final

from pyroaring import BitMap
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.search import SearchQuery, parse_sort
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.search.types import SearchRequest
from hanzo_engine.rustcompat.strings import debug_list
from hanzo_engine.scheduler.network import Network, default_network, read_network

from .. import remotes, sharding
from ..app_state import state
from ..features import ExperimentalFeatures, feature_not_enabled, runtime_features
from ..foreign_keys import ForeignIndexes, hydrate_hits
from ..http import IndexSource, read_index
from ..index_fields import facet_sort_order
from ..pins import apply_pins, plan_pins
from ..search import (
    DEFAULT_MAX_TOTAL_HITS,
    NETWORK_DISCUSSION,
    HitMaker,
    PreparedQuery,
    check_search_kind,
    duration_text,
    facet_distribution,
    fused_query,
    include_metadata,
    keyword_or_ai_search,
    prepare_query,
    uuid7,
)
from ..search_queue import run_search, search_queue
from .facets import ComputedFacets, FederatedFacets
from .merge import Ranked, RankingRules, incompatibility, merge_ranked, ranked
from .remote import RemoteResults, query_json, score_values_json, search_remotes
from .types import (
    DEFAULT_LIMIT,
    QUERY_PREFIX,
    FederationOptions,
    MultiQuery,
    MultiSearchError,
    check_use_network,
    inside,
    query_where,
)

# -------------------------------------------------------------------------------------------------
# Federated search
# -------------------------------------------------------------------------------------------------

_AFTER_FEDERATION: Final = ("_formatted", "_matchesPosition", "_rankingScore", "_rankingScoreDetails")


@dataclass
class IndexQuery:
    query: SearchQuery
    weight: float
    query_index: int  # the query's position, or its `federationOptions.queryPosition`


@dataclass
class IndexResult:
    uid: str
    primary_key: str | None
    hits: list[tuple[Ranked, dict[str, Any]]]
    total: int


def _with_federation(hit: dict[str, Any], federation: dict[str, Any]) -> dict[str, Any]:
    """`_federation` after the document's fields, before the formatting and score fields."""
    tail: list[tuple[str, Any]] = []
    while hit and next(reversed(hit)) in _AFTER_FEDERATION:
        key = next(reversed(hit))
        tail.append((key, hit.pop(key)))
    hit["_federation"] = federation
    hit.update(reversed(tail))
    return hit


class Federated:
    """One federated search (the steps of the module doc); not reusable."""

    def __init__(
        self,
        indexes: IndexSource,
        federation: dict[str, Any],
        features: ExperimentalFeatures,
        network: Network | None = None,
        is_proxy: bool = False,
    ) -> None:
        self.indexes = indexes
        self.features = features
        self.network = network if network is not None else default_network()
        self.is_proxy = is_proxy
        self.has_remote = False
        # remote name -> (its network entry, the queries it runs, as JSON)
        self.remote_queries: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self.index_settings: dict[str, dict[str, Any]] = {}  # settings of the indexes searched here
        self.federation = federation
        self.facets_by_index: dict[str, list[str] | None] = dict(federation["facetsByIndex"])
        self.facets = FederatedFacets(federation["mergeFacets"])
        self.distinct: str | None = federation["distinct"]
        self.previous: tuple[RankingRules, int, str] | None = None
        # the dynamic search rules to apply (None: feature off) and the hits they pinned, as
        # (position, query index, hit): placed at their absolute positions after the merge
        self.rules: list[dict[str, Any]] | None = None
        self.pinned: list[tuple[int, int, dict[str, Any]]] = []
        page, per_page, limit, offset = (
            federation["page"],
            federation["hitsPerPage"],
            federation["limit"],
            federation["offset"],
        )
        self.paginated = page is not None or per_page is not None
        self.page = 1 if page is None else page
        self.per_page = DEFAULT_LIMIT if per_page is None else per_page
        if not self.paginated:
            self.required, self.skip, self.take = limit + offset, offset, limit
        elif self.page == 0:  # page 0: no hits, the totals only
            self.required, self.skip, self.take = 0, 0, 0
        else:
            self.required = self.per_page * self.page
            self.skip, self.take = (self.page - 1) * self.per_page, self.per_page

    # -- 1. partition --------------------------------------------------------------------------------

    def partition(self, queries: list[MultiQuery]) -> dict[str, list[IndexQuery]]:
        groups: dict[str, list[IndexQuery]] = {}
        network = self.features.enabled("network")
        for i, q in enumerate(queries):
            query, options = q.query, q.options or FederationOptions()
            if q.pagination is not None:
                raise MultiSearchError(
                    "invalid_multi_search_query_pagination",
                    f"Inside `.queries[{i}]`: Using pagination options is not allowed in federated queries.\n"
                    f" - Hint: remove `{q.pagination}` from query #{i} or remove `federation` from the request\n"
                    " - Hint: pass `federation.limit` and `federation.offset` for pagination in federated search",
                    400,
                )
            if query.facets:
                raise MultiSearchError(
                    "invalid_multi_search_query_facets",
                    f"Inside `.queries[{i}]`: Using facet options is not allowed in federated queries.\n"
                    f" - Hint: remove `facets` from query #{i} or remove `federation` from the request\n"
                    f" - Hint: pass `federation.facetsByIndex.{q.index_uid}: {debug_list(query.facets)}` for "
                    "facets in federated search",
                    400,
                )
            if query.personalize is not None:
                raise MultiSearchError(
                    "invalid_multi_search_query_personalization",
                    f"Inside `.queries[{i}]`: Using `.personalize` is not allowed in federated queries.\n"
                    f" - Hint: remove `personalize` from query #{i} or remove `federation` from the request",
                    400,
                )
            if options.remote is not None and query.use_network:
                raise MultiSearchError(
                    "invalid_multi_search_federation_options",
                    f"Inside `.queries[{i}]`: Using `.useNetwork` is not allowed as the same time as "
                    "`.federationOptions.remote`.\n  - Hint: to perform an explicit query against a remote, remove "
                    "`.useNetwork`.\n  - Hint: to automatically perform queries against the entire network, remove "
                    "`.federationOptions.remote`.",
                    400,
                )
            if q.show_performance_details is not None:
                raise MultiSearchError(
                    "invalid_multi_search_query_show_performance_details",
                    f"Inside `.queries[{i}]`: Using `showPerformanceDetails` is not allowed in federated queries.\n"
                    f" - Hint: remove `showPerformanceDetails` from query #{i} or remove `federation` from the "
                    "request\n - Hint: pass `federation.showPerformanceDetails` for performance details in "
                    "federated search",
                    400,
                )
            if query.distinct is not None and self.distinct is not None:
                raise MultiSearchError(
                    "invalid_multi_search_distinct",
                    f"Inside `.queries[{i}]`: Using `distinct` in a federated query is not allowed when "
                    f"`federation.distinct` is set.\n - Hint: remove `distinct` from query #{i} or remove "
                    "`distinct` from `federation`",
                    400,
                )
            try:
                check_use_network(query, self.features)
            except MeiliError as err:
                raise inside(err, query_where(i)) from None
            # a networked query becomes one query per remote of the network (the one named like `self`
            # runs here), or in a sharded network one per shard (`sharding.network_targets`)
            targets: list[tuple[str | None, str | None]] = [(options.remote, None)]
            if network and options.remote is None and sharding.uses_network(query.use_network, self.network):
                targets = sharding.network_targets(self.network)
            base = dataclasses.replace(query, use_network=sharding.proxied_use_network(self.network))
            for target, shard in targets:
                query = dataclasses.replace(base, filter=sharding.shard_filter(base.filter, shard))
                if target is not None:
                    self.has_remote = True
                    if not network:
                        raise inside(
                            feature_not_enabled(
                                "Performing a remote federated search", "network", NETWORK_DISCUSSION
                            ),
                            query_where(i),
                        )
                    if target != self.network["self"]:
                        remote = self.network["remotes"].get(target)
                        if remote is None:
                            raise inside(
                                MeiliError(
                                    "invalid_multi_search_remote",
                                    "Invalid `.federation_options.remote`: remote "
                                    f"`{target}` is not registered",
                                ),
                                query_where(i),
                            )
                        self.remote_queries.setdefault(target, (remote, []))[1].append(
                            query_json(q.index_uid, query, options.weight, i)
                        )
                        continue
                position = i
                if options.query_position is not None:
                    if not network:
                        raise inside(
                            feature_not_enabled(
                                "Using `federationOptions.queryPosition`", "network", NETWORK_DISCUSSION
                            ),
                            query_where(i),
                        )
                    position = options.query_position
                groups.setdefault(q.index_uid, []).append(IndexQuery(query, options.weight, position))
        return groups

    # -- 2. one index --------------------------------------------------------------------------------

    def _check_facet_order(
        self, uid: str, facets: list[str] | None, settings: dict[str, Any], note: str
    ) -> None:
        if facets is None:
            return
        try:
            self.facets.check_order(uid, ((facet, facet_sort_order(facet, settings)) for facet in facets))
        except MeiliError as err:
            raise inside(err, f".federation.facetsByIndex.{uid}", note) from None

    @staticmethod
    def _facets(
        reader: IndexReader,
        uid: str,
        facets: list[str] | None,
        settings: dict[str, Any],
        candidates: BitMap,
        note: str,
    ) -> ComputedFacets | None:
        """The index's facets over `candidates`; a facet that is not filterable answers
        `invalid_multi_search_facets` (Meilisearch's `Route::MultiSearch`)."""
        if facets is None:
            return None
        try:
            return facet_distribution(facets, settings, uid, reader, candidates)
        except MeiliError as err:
            code = "invalid_multi_search_facets" if err.code == "invalid_search_facets" else None
            raise inside(err, f".federation.facetsByIndex.{uid}", note, code=code) from None

    def _query_entries(
        self, reader: IndexReader, uid: str, item: IndexQuery, settings: dict[str, Any], limit: int
    ) -> tuple[list[tuple[Ranked, Any]], BitMap]:
        """Run one query for `limit` hits: its entries (ranking, hit material) in rank order and every
        document it matched (its filter, the tenant token's included, applied)."""
        query = item.query
        if self.distinct is not None:  # `federation.distinct` is each query's distinct (they may not set one)
            query = dataclasses.replace(query, distinct=self.distinct)
        check_search_kind(query, settings, uid)
        sort = None if query.sort is None else parse_sort(query.sort)
        rules = RankingRules(
            list(settings.get("rankingRules") or []), sort, query.matching_strategy, keyword=bool(query.q)
        )
        if self.previous is not None:
            previous, previous_index, previous_uid = self.previous
            error = incompatibility(rules, item.query_index, uid, previous, previous_index, previous_uid)
            if error is not None:
                raise error
            if len(previous.rules()) <= len(rules.rules()):
                self.previous = (rules, item.query_index, uid)
        else:
            self.previous = (rules, item.query_index, uid)
        filters = self.features.filter_features()
        foreign = ForeignIndexes(self.indexes) if filters.foreign_keys else None
        prepared = prepare_query(reader, uid, query, filters, foreign)
        pins = (
            plan_pins(reader, uid, self.rules, query.q, prepared.universe, query.filter) if self.rules else []
        )
        request = self._request(query, limit + len(pins), prepared)
        result, _ = keyword_or_ai_search(reader, request, settings, query, multimodal=filters.multimodal)
        if pins:
            result = apply_pins(result, pins, 0, limit)
        maker = HitMaker(reader, query, settings, result)
        entries: list[tuple[Ranked, Any]] = []
        for docid, score, details in zip(result.docids, result.scores, result.details, strict=True):
            document = reader.document_by_internal_id(docid)
            if document is not None and "pin" in details:
                federation = {
                    "indexUid": uid,
                    "queriesPosition": item.query_index,
                    "weightedRankingScore": score * item.weight,
                }
                hit = _with_federation(maker.make(document, score, details), federation)
                self.pinned.append((details["pin"]["position"], item.query_index, hit))
            elif document is not None:
                rank = ranked(rules, document, score, details, item.weight, item.query_index)
                entries.append((rank, (docid, document, maker, score, details)))
        # every engine path fills `all_candidates`; the page's ids are the floor should one not
        candidates = result.all_candidates if result.all_candidates is not None else BitMap(result.docids)
        return entries, candidates

    def _request(self, query: SearchQuery, limit: int, prepared: PreparedQuery) -> SearchRequest:
        # the filter's documents and the sort come from `prepared`: without them a tenant token's
        # filter (AND-ed into the query's) would not restrict a federated search
        search_on = query.attributes_to_search_on
        threshold = query.ranking_score_threshold
        return SearchRequest(
            q=query.q,
            offset=0,
            limit=limit,
            matching_strategy=query.matching_strategy,
            attributes_to_search_on=None if search_on is None or "*" in search_on else list(search_on),
            ranking_score_threshold=None if threshold is None or threshold != threshold else threshold,
            exhaustive_count=self.paginated,
            locales=query.locales,
            filter_universe=prepared.universe,
            ordering=prepared.ordering,
        )

    def search_index(
        self, uid: str, group: list[IndexQuery], facets: list[str] | None, reader: IndexReader
    ) -> IndexResult:
        note = f"\n - Note: index `{uid}` used in `.queries[{group[0].query_index}]`"
        settings = complete_settings(reader.settings())
        self._check_facet_order(uid, facets, settings, note)
        max_total_hits = (settings.get("pagination") or {}).get("maxTotalHits") or DEFAULT_MAX_TOTAL_HITS
        limit = min(self.required, max_total_hits)
        lists = []
        candidates = BitMap()
        for item in group:
            try:
                entries, matched = self._query_entries(reader, uid, item, settings, limit)
            except MeiliError as err:
                raise inside(err, query_where(item.query_index)) from None
            lists.append(entries)
            candidates |= matched
        hits: list[tuple[Ranked, dict[str, Any]]] = []
        seen: set[int] = set()
        for rank, (docid, document, maker, score, details) in merge_ranked(lists):
            if len(hits) >= limit:
                break
            if docid in seen:
                continue
            seen.add(docid)
            federation: dict[str, Any] = {
                "indexUid": uid,
                "queriesPosition": rank.query_index,
                "weightedRankingScore": rank.weighted,
            }
            if self.has_remote and not self.is_proxy:
                federation["remote"] = self.network["self"]
            if self.is_proxy:
                federation["weightedScoreValues"] = score_values_json(rank)
                federation["extra_document"] = {}
            hits.append((rank, _with_federation(maker.make(document, score, details), federation)))
        self.index_settings[uid] = settings
        computed = self._facets(reader, uid, facets, settings, candidates, note)
        if computed is not None:
            self.facets.add(uid, computed)
        return IndexResult(uid, reader.primary_key, hits, len(candidates))

    def _check_unused_facets(self) -> None:
        """The indexes `facetsByIndex` names and no query uses: they must exist and their facets be
        valid; counted over no document, they are left out of the response (as Meilisearch)."""
        for uid in sorted(self.facets_by_index):
            facets = self.facets_by_index[uid]
            note = f"\n - Note: index `{uid}` is not used in queries"

            def check(
                reader: IndexReader, uid: str = uid, facets: list[str] | None = facets, note: str = note
            ) -> None:
                settings = complete_settings(reader.settings())
                self._check_facet_order(uid, facets, settings, note)
                self._facets(reader, uid, facets, settings, BitMap(), note)

            try:
                read_index(self.indexes, uid, check)
            except MultiSearchError:
                raise
            except MeiliError as err:
                raise inside(err, f".federation.facetsByIndex.{uid}", note) from None

    # -- 3. merge ------------------------------------------------------------------------------------

    def run_local(self, groups: dict[str, list[IndexQuery]]) -> list[IndexResult]:
        """Step 2: every index's queries, in uid order, then the check of the unused `facetsByIndex`."""
        results: list[IndexResult] = []
        for uid in sorted(groups):
            group = groups[uid]
            facets = self.facets_by_index.pop(uid, None)
            try:
                results.append(
                    read_index(self.indexes, uid, functools.partial(self.search_index, uid, group, facets))
                )
            except MultiSearchError:
                raise
            except MeiliError as err:
                raise inside(err, query_where(group[0].query_index)) from None
        self._check_unused_facets()
        return results

    def run(self, queries: list[MultiQuery], request_uid: str, with_metadata: bool) -> dict[str, Any]:
        """The whole search, for requests without remote queries."""
        started = time.perf_counter()
        results = self.run_local(self.partition(queries))
        return self.finish(results, RemoteResults(), queries, request_uid, with_metadata, started)

    def remote_body(self, queries: list[dict[str, Any]]) -> dict[str, Any]:
        """What a remote is sent: its queries and the federation, paginated so that the merge here can
        cut the page (`offset + limit` hits from offset 0, or page 1 of `page × hitsPerPage`), facets
        never merged there."""
        f = self.federation
        federation: dict[str, Any] = {"limit": f["limit"], "offset": f["offset"]}
        if not self.paginated:
            federation.update(limit=f["limit"] + f["offset"], offset=0)
        elif f["page"] == 0:
            federation.update(page=0)
            if f["hitsPerPage"] is not None:
                federation["hitsPerPage"] = f["hitsPerPage"]
        else:
            federation.update(page=1, hitsPerPage=self.page * self.per_page)
        federation["facetsByIndex"] = f["facetsByIndex"]
        if f["distinct"] is not None:
            federation["distinct"] = f["distinct"]
        federation["showPerformanceDetails"] = f["showPerformanceDetails"]
        return {"queries": queries, "federation": federation}

    def finish(
        self,
        results: list[IndexResult],
        remote: RemoteResults,
        queries: list[MultiQuery],
        request_uid: str,
        with_metadata: bool,
        started: float,
    ) -> dict[str, Any]:
        """Step 3: merge the local and remote hits, totals, facets and metadata into the response."""
        total = sum(r.total for r in results) + remote.total
        for uid, facets in remote.facets_by_index.items():
            self.facets.append(uid, facets)
        if self.has_remote and self.facets.merge is None:
            self.facets.sort_and_truncate(self.index_settings)
        lists: list[list[tuple[Ranked, dict[str, Any]]]] = [r.hits for r in results] + remote.hits
        if self.pinned:  # pins take absolute positions in the merged ranking (compacted past its end)
            organic = [hit for _, hit in list(merge_ranked(lists))[: self.skip + self.take]]
            pending = sorted(self.pinned, key=lambda p: (p[0], p[1]))
            merged: list[dict[str, Any]] = []
            while pending or organic:
                if pending and (pending[0][0] <= len(merged) or not organic):
                    merged.append(pending.pop(0)[2])
                else:
                    merged.append(organic.pop(0))
            page = merged[self.skip : self.skip + self.take]
        else:
            page = [hit for _, hit in list(merge_ranked(lists))[self.skip : self.skip + self.take]]
        if self.features.filter_features().foreign_keys:
            self._hydrate(page)
        body: dict[str, Any] = {"hits": page, "processingTimeMs": int((time.perf_counter() - started) * 1000)}
        if self.paginated:
            body.update(
                hitsPerPage=self.per_page,
                page=self.page,
                totalPages=-(-total // self.per_page) if self.per_page else 0,
                totalHits=total,
            )
        else:
            body.update(
                limit=self.federation["limit"], offset=self.federation["offset"], estimatedTotalHits=total
            )
        body.update(self.facets.fields())
        body["requestUid"] = request_uid
        if with_metadata:
            keys: dict[tuple[str | None, str], str | None] = {(None, r.uid): r.primary_key for r in results}
            keys.update(remote.primary_keys)
            local_name = self.network["self"] if self.has_remote else None
            metadata = []
            for q in queries:
                name = q.options.remote if q.options is not None else None
                item = _metadata(q.index_uid, keys.get((name, q.index_uid)))
                if name is not None or local_name is not None:
                    item["remote"] = name if name is not None else local_name
                metadata.append(item)
            body["metadata"] = metadata
        if self.has_remote:
            body["remoteErrors"] = {name: err.to_json() for name, err in sorted(remote.errors.items())}
        if self.federation["showPerformanceDetails"]:
            body["performanceDetails"] = {"federatedSearch": duration_text(time.perf_counter() - started)}
        return body

    def _hydrate(self, page: list[dict[str, Any]]) -> None:
        """Hydrate the page's local hits with the foreign keys of the index each comes from."""
        by_index: dict[str, list[dict[str, Any]]] = {}
        for hit in page:
            federation = hit.get("_federation") or {}
            if "remote" not in federation and federation.get("indexUid") in self.index_settings:
                by_index.setdefault(federation["indexUid"], []).append(hit)
        for uid, hits in by_index.items():
            hydrate_hits(hits, self.index_settings[uid], ForeignIndexes(self.indexes))


def _metadata(uid: str, primary_key: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"queryUid": uuid7(), "indexUid": uid}
    if primary_key is not None:
        out["primaryKey"] = primary_key
    return out


async def run_federated(
    request: Request,
    searcher: Federated,
    queries: list[MultiQuery],
    request_uid: str,
    with_metadata: bool,
    *,
    inline: bool = False,
) -> dict[str, Any]:
    """A federated search whose remote queries (if any) run while the local ones do. `inline`: the
    queries embed nothing, so without remotes they run on the event loop's thread (`run_search`)."""
    started = time.perf_counter()
    groups = searcher.partition(queries)
    if not searcher.remote_queries:
        # one trip off the event loop for both steps (each trip costs a thread hand-off both ways)
        def local_only() -> dict[str, Any]:
            results = searcher.run_local(groups)
            return searcher.finish(results, RemoteResults(), queries, request_uid, with_metadata, started)

        return await run_search(local_only, inline=inline)
    remote_task = asyncio.ensure_future(
        search_remotes(searcher, with_metadata, remotes.deadline_from_env(), state(request).options.db_path)
    )
    try:
        results = await run_in_threadpool(searcher.run_local, groups)
    except BaseException:
        remote_task.cancel()
        raise
    remote = await remote_task
    return await run_in_threadpool(
        searcher.finish, results, remote, queries, request_uid, with_metadata, started
    )


async def read_network_of(request: Request, features: ExperimentalFeatures) -> Network:
    """The stored network when the `network` feature is on (else the empty one, never used)."""
    if not features.enabled("network"):
        return default_network()
    store = state(request).indexes.store
    return await run_in_threadpool(read_network, store)


async def network_search(
    request: Request, uid: str, query: SearchQuery, request_uid: str
) -> dict[str, Any] | None:
    """`POST/GET /indexes/{uid}/search` with `useNetwork` (Meilisearch's `search` with `must_use_network`):
    None when the search stays local, else the body of the search fanned out to every remote as one
    federated search (pagination, facets, `distinct` and performance details moved to the federation)
    and answered in the search shape, each hit with its `_federation`, `remoteErrors` last."""
    features = runtime_features(request)
    if query.use_network is not None and not features.enabled("network"):
        raise feature_not_enabled("passing `useNetwork` in a search query", "network", NETWORK_DISCUSSION)
    network = await read_network_of(request, features)
    if not features.enabled("network") or not sharding.uses_network(query.use_network, network):
        return None
    async with search_queue(request).permit():
        return await search_over_network(
            request, uid, fused_query(request, uid, query), request_uid, features
        )


async def search_over_network(
    request: Request, uid: str, query: SearchQuery, request_uid: str, features: ExperimentalFeatures
) -> dict[str, Any]:
    """The body of `network_search` for a query already holding the tenant token's filter."""
    network = await read_network_of(request, features)
    federation: dict[str, Any] = {
        "limit": query.limit,
        "offset": query.offset,
        "page": query.page,
        "hitsPerPage": query.hits_per_page,
        "facetsByIndex": {uid: list(query.facets)} if query.facets else {},
        "mergeFacets": None,
        "distinct": query.distinct,
        "showPerformanceDetails": query.show_performance_details,
        "personalize": None,
    }
    local = dataclasses.replace(
        query,
        offset=0,
        limit=DEFAULT_LIMIT,
        page=None,
        hits_per_page=None,
        facets=None,
        distinct=None,
        show_performance_details=False,
        use_network=sharding.proxied_use_network(network),
    )
    queries = [
        MultiQuery(
            uid,
            dataclasses.replace(local, filter=sharding.shard_filter(local.filter, shard)),
            FederationOptions(1.0, name, None),
            None,
            None,
        )
        for name, shard in sharding.network_targets(network, state(request).options.db_path)
    ]
    with_metadata = include_metadata(request)
    searcher = Federated(state(request).indexes, federation, features, network)
    try:
        result = await run_federated(request, searcher, queries, request_uid, with_metadata)
    except MeiliError as err:
        # Meilisearch's `search` drops the query position of the federated search it ran
        raise MultiSearchError(err.code, QUERY_PREFIX.sub("", err.message, count=1), err.status) from None
    body: dict[str, Any] = {"hits": result.pop("hits"), "query": query.q or ""}
    body.update(
        (key, result.pop(key))
        for key in list(result)
        if key
        in (
            "processingTimeMs",
            "limit",
            "offset",
            "estimatedTotalHits",
            "hitsPerPage",
            "page",
            "totalPages",
            "totalHits",
        )
    )
    computed = (result.pop("facetsByIndex", None) or {}).get(uid)
    if computed is not None:
        body["facetDistribution"], body["facetStats"] = computed["distribution"], computed["stats"]
    body["requestUid"] = result.pop("requestUid")
    if "metadata" in result:
        metadata = result.pop("metadata")
        if metadata:
            body["metadata"] = metadata[-1]
    if "performanceDetails" in result:
        body["performanceDetails"] = result.pop("performanceDetails")
    if "remoteErrors" in result:
        body["remoteErrors"] = result.pop("remoteErrors")
    return body
