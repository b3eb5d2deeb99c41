"""The ranking rules, one module each (milli's `ranking_rules.rs` and `ranking_rule_graph/`).

Each module holds the rule's cost (how a document's value is computed in Python, per
interpretation), its score details (`score_details.RuleScore`), and the native block computing the
same value for a whole bucket (`_native/bucket.pyx`, `_native/bm25.pyx`), named by `NATIVE_CODE`:

- `words`: words buckets by removed terms (bitmaps only)       -> no native block
- `typo`: typo buckets by cheapest path cost (bitmaps), per document as a cost
- `proximity`: pair distances of consecutive terms               -> `BucketQuery.proximity`
- `attribute_rank`: best field weight (and the legacy `attribute`) -> `BucketQuery.fid_cost`
- `word_position`: bucketed distance to the query position       -> `BucketQuery.position`
- `exactness`: exact attribute, then exact words                 -> `BucketQuery.exact_attribute`
- `sort`: `field:asc|desc` rules                                  -> a column of `sorting.Ordering`
- `bm25`: BM25 in levels (ours)                                   -> `_native.bm25.bm25_scores`

Rules run as milli's (`search/new/mod.rs`): `words` is inserted before the first of typo,
proximity, attribute(Rank), wordPosition, exactness (not `bm25`), unless the matching strategy is
`all` (then there is no words rule at all); `sort` stands for the request's sort rules.
"""

from __future__ import annotations

GRAPH_RULES = ("typo", "proximity", "attribute", "attributeRank", "wordPosition", "exactness")


def effective_rules(rules: list[str], strategy: str, sort_rules: list[str] | None = None) -> list[str]:
    """The rule pipeline milli builds from the settings (`get_ranking_rules_for_query_graph_search`);
    `sort` stands for the request's sort rules (`sorting.Ordering.sort_names`)."""
    words = strategy == "all"
    out: list[str] = []
    sorted_fields: set[str] = set()
    for rule in rules:
        if rule in GRAPH_RULES and not words:
            out.append("words")
            words = True
        if rule == "words":
            if not words:
                out.append(rule)
                words = True
            continue
        if rule == "sort":
            for name in sort_rules or ():
                field = "\0geo" if name.startswith("_geoPoint(") else name.rpartition(":")[0]
                if field not in sorted_fields:
                    sorted_fields.add(field)
                    out.append(name)
            continue
        if rule.endswith((":asc", ":desc")):
            name = rule.rpartition(":")[0]
            if name in sorted_fields:
                continue
            sorted_fields.add(name)
        elif rule in out or (rule == "attribute" and ("attributeRank" in out or "wordPosition" in out)):
            continue
        out.append(rule)
    return out
