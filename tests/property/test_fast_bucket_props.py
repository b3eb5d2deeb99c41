"""The bucket sort's native fast path (`engine/search/native_bucket_keys.py`) ranks exactly as the Python ranker.

Random documents over a small vocabulary built for collisions (typo neighbours, words that split into
two indexed words, repeated words, several fields), random settings (searchable attribute order,
ranking rule order with the old and new rule names and `bm25`, `proximityPrecision`, synonyms,
typo tolerance off on a field) and random queries: the search with the fast path forced on every
bucket (no minimum size) must return the same hits, ranking scores, score details and totals as the
search with the fast path off. The first-words narrowing of large one-node buckets is forced too.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from hanzo_engine.apitypes.search import parse_sort
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search import bucket_sort, derivations, native_bucket_keys
from hanzo_engine.engine.search.context import SearchContext
from hanzo_engine.engine.search.engine import search
from hanzo_engine.engine.search.plan_cache import PlanCache
from hanzo_engine.engine.search.ranking_rules import bm25
from hanzo_engine.engine.search.sorting import Ordering
from hanzo_engine.engine.search.types import SearchRequest
from hanzo_engine.engine.storage.keys import FIRST_WORD_FID, KEY_FIRST_WORDS, SECOND_WORD_FID, SOLE_WORD_FID
from hanzo_engine.engine.update.indexer import read_forward
from hanzo_engine.engine.update.settings_hook import reindex_for_settings

VOCAB = [
    "sun",
    "flower",
    "sunflower",
    "flowers",
    "sunn",
    "new",
    "news",
    "york",
    "newyork",
    "s",
    "light",
    "lights",
    "night",
    "knight",
    "dark",
    "darkness",
    "the",
    "he",
    "t",
    "here",
    "her",
    "house",
    "houses",
    "mouse",
    "ocean",
    "oceans",
    "blue",
    "glue",
    "red",
    "bed",
]
FIELDS = ["title", "body", "tags"]
RULE_SETS = [
    ["words", "typo", "proximity", "attributeRank", "sort", "wordPosition", "exactness"],
    ["words", "typo", "proximity", "attribute", "sort", "exactness"],
    ["words", "typo", "exactness", "proximity", "wordPosition", "attributeRank"],
    ["words", "typo", "bm25", "proximity", "exactness"],
    ["typo", "words", "wordPosition", "exactness", "proximity"],
    ["words", "typo", "rank:desc", "proximity", "sort", "exactness"],
    ["words", "typo", "proximity", "attributeRank", "wordPosition", "exactness"],  # every narrowing tier
]
SORTS = [None, ["rank:asc"], ["rank:desc", "title:asc"], ["title:desc"]]

text = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=9).map(" ".join)
document = st.fixed_dictionaries(
    {"title": text, "body": text, "tags": st.lists(text, max_size=2)},
    optional={
        "rank": st.one_of(
            st.integers(-3, 3), st.sampled_from(["x", "Y", "z"]), st.lists(st.integers(0, 5), max_size=2)
        )
    },
)
query = st.lists(
    st.sampled_from([*VOCAB, "sunfl", "flowe", "ne", "houze", "lihgt"]), min_size=1, max_size=4
).map(" ".join)
config = st.fixed_dictionaries(
    {
        "rankingRules": st.sampled_from(RULE_SETS),
        "searchableAttributes": st.sampled_from(
            [["*"], ["title", "body", "tags"], ["body", "title"], ["tags", "title", "body"]]
        ),
        "proximityPrecision": st.sampled_from(["byWord", "byAttribute"]),
        "synonyms": st.sampled_from(
            [
                {},
                {"sun": ["light", "blue ocean"], "night": ["dark"]},
                {"new york": ["newyork"], "newyork": ["new york"]},
            ]
        ),
        "typoTolerance": st.sampled_from(
            [{}, {"disableOnAttributes": ["title"]}, {"minWordSizeForTypos": {"oneTypo": 3, "twoTypos": 5}}]
        ),
        "sortableAttributes": st.just(["rank", "title"]),
    }
)


def record_sizes(monkeypatch: pytest.MonkeyPatch, method: str, arg: int) -> list[int]:
    """The sizes of the document sets `NativeBuckets.<method>` gets (positional argument `arg`)."""
    sizes: list[int] = []
    original = getattr(native_bucket_keys.NativeBuckets, method)

    def recorded(self: native_bucket_keys.NativeBuckets, *args: Any) -> Any:
        sizes.append(len(args[arg]))
        return original(self, *args)

    monkeypatch.setattr(native_bucket_keys.NativeBuckets, method, recorded)
    return sizes


def run(
    index: Index,
    q: str,
    strategy: str,
    fast: bool,
    monkeypatch: pytest.MonkeyPatch,
    sort: list[str] | None = None,
    walk: bool = False,
    lean: bool = False,
) -> list[Any]:
    with monkeypatch.context() as m:
        if fast:
            m.setattr(bucket_sort, "NATIVE_MIN_DOCS", 0)
            m.setattr(native_bucket_keys, "PREFILTER_MIN", 0)
            if walk:  # sorted scans walk the sort field's values instead of partitioning the bucket
                m.setattr(native_bucket_keys, "WALK_MIN", 0)
                m.setattr(native_bucket_keys, "WALK_SHARE", 1)
        else:
            m.setattr(
                native_bucket_keys.NativeBuckets,
                "applicable",
                staticmethod(lambda rules, ordering=None: False),
            )
        with index.read() as r:
            settings_view = complete_settings(r.settings())
            custom = any(rule.endswith((":asc", ":desc")) for rule in settings_view["rankingRules"])
            ordering = Ordering(r, settings_view, parse_sort(sort or [])) if sort or custom else None
            request = SearchRequest(
                q=q, limit=7, offset=1, matching_strategy=strategy, ordering=ordering, scores_needed=not lean
            )
            res = search(r, request, settings_view)
    return [res.docids, res.scores, res.details, res.candidates]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    docs=st.lists(document, min_size=1, max_size=40),
    cfg=config,
    queries=st.lists(query, min_size=1, max_size=4),
    strategy=st.sampled_from(["last", "all", "frequency"]),
    sort=st.sampled_from(SORTS),
    walk=st.booleans(),
)
def test_fast_path_ranks_as_python(
    docs: list[dict[str, Any]],
    cfg: dict[str, Any],
    queries: list[str],
    strategy: str,
    sort: list[str] | None,
    walk: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(Path(tmp) / "i", [{"id": i, **doc} for i, doc in enumerate(docs)], cfg)
        for q in queries:
            fast = run(index, q, strategy, True, monkeypatch, sort, walk)
            slow = run(index, q, strategy, False, monkeypatch, sort)
            assert fast == slow, q
            # without scores (nobody shows them) the hits and their order stay the same
            for lean_fast in (True, False):
                lean = run(index, q, strategy, lean_fast, monkeypatch, sort, walk, lean=True)
                assert (lean[0], lean[3]) == (slow[0], slow[3]), q
        index.close()


def test_fast_path_is_taken_for_a_large_bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # guards the property above: the buckets of a common word do go through the native keyer
    index = Index.create(tmp_path / "i", primary_key="id", created_at=0)
    with index.write() as w:
        for i in range(300):
            words = [VOCAB[(i * 7 + k * 3) % len(VOCAB)] for k in range(i % 9 + 1)]
            w.put_document(
                str(i), {"id": i, "title": " ".join(words[:3]), "body": " ".join(words)}, merge=False
            )
        w.touch()
    calls = record_sizes(monkeypatch, "best", 4)
    for q in ("sun", "flower light", "news", "the dark"):
        assert run(index, q, "last", True, monkeypatch) == run(index, q, "last", False, monkeypatch), q
    assert calls and max(calls) >= bucket_sort.NATIVE_MIN_DOCS
    index.close()


def test_first_words_narrow_a_large_bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a third of the documents start a field with `sun` (the best word-position bucket): only those
    # are keyed, and the page is still the Python ranker's
    index = Index.create(tmp_path / "i", primary_key="id", created_at=0)
    with index.write() as w:
        for i in range(600):
            words = [VOCAB[(i * 5 + k * 7) % len(VOCAB)] for k in range(i % 7 + 2)]
            title = " ".join(["sun", *words[:2]] if i % 3 == 0 else [*words[:2], "sun", "sunn"])
            w.put_document(str(i), {"id": i, "title": title, "body": " ".join(words)}, merge=False)
        w.touch()
    keyed = record_sizes(monkeypatch, "_key", 2)
    monkeypatch.setattr(native_bucket_keys, "PREFILTER_MIN", 100)
    for q in ("sun", "sunn", "sun blue"):
        assert run(index, q, "last", True, monkeypatch) == run(index, q, "last", False, monkeypatch), q
    assert 200 in keyed  # the documents starting with `sun`, not the whole bucket
    index.close()


def test_exact_first_words_narrow_further(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `sun` is a prefix of `sunflower` and `sunn`: every title below starts with one of them (the best
    # word position), a third with `sun` itself (exactness: `matchesStart`) and a sixth is `sun` alone
    # (`exactMatch`); exactness comes right after word position, so the tiers are keyed narrowest first
    index = Index.create(tmp_path / "i", primary_key="id", created_at=0)
    others = [w for w in VOCAB if not w.startswith("sun")]
    with index.write() as w:
        for i in range(600):
            words = [others[(i * 5 + k * 7) % len(others)] for k in range(i % 7 + 2)]
            first = ["sun", "sunflower", "sunn"][i % 3]
            title = "sun" if i % 6 == 0 else " ".join([first, *words[:2]])
            w.put_document(str(i), {"id": i, "title": title, "body": " ".join(words)}, merge=False)
        w.touch()
    keyed = record_sizes(monkeypatch, "_key", 2)
    monkeypatch.setattr(native_bucket_keys, "PREFILTER_MIN", 100)
    expected = run(index, "sun", "last", False, monkeypatch)
    keyed.clear()
    assert run(index, "sun", "last", True, monkeypatch) == expected
    assert keyed == [100]  # the titles that are `sun` alone
    # a page past them: the next tier holding enough documents is keyed whole (the `sun ...` titles,
    # then every title)
    for limit_past in (100, 200):
        with index.read() as r:
            settings_view = complete_settings(r.settings())
            keyed.clear()
            with monkeypatch.context() as m:
                m.setattr(bucket_sort, "NATIVE_MIN_DOCS", 0)
                fast = search(r, SearchRequest(q="sun", limit=10, offset=limit_past), settings_view)
                m.setattr(
                    native_bucket_keys.NativeBuckets,
                    "applicable",
                    staticmethod(lambda rules, ordering=None: False),
                )
                slow = search(r, SearchRequest(q="sun", limit=10, offset=limit_past), settings_view)
        assert [fast.docids, fast.scores, fast.details] == [slow.docids, slow.scores, slow.details]
        assert keyed == ([200] if limit_past == 100 else [600])
    index.close()


ADJACENT_THIRD = ["{x} sun light {y}", "sun {x} light", "light {y} sun {x}"]  # adjacent, never at the start


def sun_light_index(path: Path, titles: list[str], settings: dict[str, Any] | None = None) -> Index:
    """600 documents whose titles cycle through `titles` (`{x}`, `{y}`: other words of VOCAB), each
    with a body and a `rank`."""
    others = [w for w in VOCAB if not w.startswith(("sun", "light"))]
    docs = []
    for i in range(600):
        x, y = others[i % len(others)], others[(i * 7) % len(others)]
        docs.append(
            {
                "id": i,
                "title": titles[i % len(titles)].format(x=x, y=y),
                "body": f"{y} {x}",
                "rank": (i * 37) % 101,
            }
        )
    return build_index(path, docs, settings)


def build_index(path: Path, docs: list[dict[str, Any]], settings: dict[str, Any] | None = None) -> Index:
    """An index of `docs` (external id = position) with `settings` applied first (None: defaults)."""
    index = Index.create(path, primary_key="id", created_at=0)
    with index.write() as w:
        if settings is not None:
            new = complete_settings(settings)
            reindex_for_settings(w, complete_settings({}), new)
            w.set_settings(new)
        for i, doc in enumerate(docs):
            w.put_document(str(i), doc, merge=False)
        w.touch()
    return index


def test_first_pairs_narrow_a_two_word_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `sun light`: three quarters of the titles start with `sun`, only half with `sun light` or
    # `sun lights` (the best keys need the words adjacent from position 0): only those are keyed;
    # for `sun light` only the quarter starting with the exact words (they alone can have an exact
    # attribute match, which exactness ranks first)
    index = sun_light_index(
        tmp_path / "i", ["sun light {x} {y}", "sun {x} light", "{x} sun light", "sun lights {y}"]
    )
    keyed = record_sizes(monkeypatch, "_key", 2)
    monkeypatch.setattr(native_bucket_keys, "PREFILTER_MIN", 100)
    for q in ("sun light", "sun lig"):
        expected = run(index, q, "last", False, monkeypatch)
        keyed.clear()
        assert run(index, q, "last", True, monkeypatch) == expected, q
        assert keyed == ([150] if q == "sun light" else [300]), q
    # with proximity by attribute, adjacency is not needed for the best keys: no pair tier
    with index.write() as w:
        new = complete_settings({"proximityPrecision": "byAttribute"})
        reindex_for_settings(w, complete_settings({}), new)
        w.set_settings(new)
    expected = run(index, "sun light", "last", False, monkeypatch)
    keyed.clear()
    assert run(index, "sun light", "last", True, monkeypatch) == expected
    assert 300 not in keyed
    index.close()


def test_next_words_narrow_to_adjacent_documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # every title holds `sun` and `light`, a third of them adjacent (never at the start): with
    # proximity first only those (and the few the next-word bits confuse with them) are keyed, sorted or not
    index = sun_light_index(tmp_path / "i", ADJACENT_THIRD, {"sortableAttributes": ["rank"]})
    keyed = record_sizes(monkeypatch, "_key", 2)
    monkeypatch.setattr(native_bucket_keys, "PREFILTER_MIN", 100)
    for sort in (None, ["rank:asc"]):
        for q in ("sun light", "sun ligh"):
            expected = run(index, q, "last", False, monkeypatch, sort)
            keyed.clear()
            assert run(index, q, "last", True, monkeypatch, sort) == expected, (q, sort)
            assert keyed and sum(keyed) < 400, (q, sort, keyed)  # not the 600 documents of the bucket
    index.close()


def test_next_words_of_an_older_index_are_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # level 3 next-word keys hashed the whole next word, level 4 the first two bytes: an index marked
    # 3 keys the whole bucket (still right) instead of reading keys that no longer mean the same
    index = sun_light_index(tmp_path / "i", ADJACENT_THIRD)
    keyed = record_sizes(monkeypatch, "_key", 2)
    monkeypatch.setattr(native_bucket_keys, "PREFILTER_MIN", 100)
    expected = run(index, "sun ligh", "last", False, monkeypatch)
    keyed.clear()
    assert run(index, "sun ligh", "last", True, monkeypatch) == expected
    assert keyed and sum(keyed) < 400
    with index.write() as w:
        w.txn.put(KEY_FIRST_WORDS, b"3", db=index.db_main)
        w.touch()
    keyed.clear()
    assert run(index, "sun ligh", "last", True, monkeypatch) == expected
    assert sum(keyed) == 600
    index.close()


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(document, min_size=1, max_size=30),
    left=st.sampled_from(VOCAB),
    right=st.sampled_from(VOCAB),
)
def test_adjacent_words_as_the_forward_index_says(docs: list[dict[str, Any]], left: str, right: str) -> None:
    # split words (`sunflower` -> `sun flower`) keep the documents where the halves are adjacent
    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(Path(tmp) / "i", [{"id": i, **doc} for i, doc in enumerate(docs)])
        with index.read() as r:
            s = SearchContext(r, complete_settings({}), SearchRequest(q=""))
            expected = BitMap()
            for docid in r.documents_ids():
                fwd = read_forward(r, docid)
                assert fwd is not None
                after = set(fwd[1].get(right, ()))
                if any(p + 1 in after for p in fwd[1].get(left, ())):
                    expected.add(docid)
            assert derivations.adjacent_docs(s, r.documents_ids(), left, right) == expected
        index.close()


def test_sort_narrows_a_large_bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # with `sort` right after proximity and attribute rank (one weight), documents are keyed in sort
    # order up to a cut; ties at the cut (rank 3 below) are all kept
    index = Index.create(tmp_path / "i", primary_key="id", created_at=0)
    new = complete_settings({"sortableAttributes": ["rank"]})
    with index.write() as w:
        reindex_for_settings(w, complete_settings({}), new)
        w.set_settings(new)
        for i in range(400):
            doc: dict[str, Any] = {
                "id": i,
                "title": f"sun {VOCAB[i % len(VOCAB)]}",
                "body": VOCAB[i * 7 % len(VOCAB)],
            }
            if i % 5:
                doc["rank"] = 3 if i % 11 == 0 else 100 + (i * 37) % 400
            w.put_document(str(i), doc, merge=False)
        w.touch()
    keyed = record_sizes(monkeypatch, "_key", 2)
    monkeypatch.setattr(native_bucket_keys, "PREFILTER_MIN", 100)
    for sort in (["rank:asc"], ["rank:desc"]):
        for walk in (False, True):
            expected = run(index, "sun", "last", False, monkeypatch, sort)
            keyed.clear()
            assert run(index, "sun", "last", True, monkeypatch, sort, walk) == expected
            assert keyed and min(keyed) < 150  # not the 400 documents of the bucket
    index.close()


def test_native_queries_are_shared_between_searches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a search takes the native tables an earlier search of the same derivations built and puts them
    # back (`plan_cache`); other searchable fields build others; the answers stay the Python ranker's
    monkeypatch.setattr(native_bucket_keys, "BUCKET_QUERIES", PlanCache(64))
    monkeypatch.setattr(bm25, "QUERY_WORDS", PlanCache(64))
    built: list[int] = []
    original = native_bucket_keys.NativeBuckets._new_query

    def counted(self: native_bucket_keys.NativeBuckets, *args: Any) -> Any:
        built.append(1)
        return original(self, *args)

    monkeypatch.setattr(native_bucket_keys.NativeBuckets, "_new_query", counted)
    titles = ["sun light {x} {y}", "sun {x} light", "{x} sun light"]
    index = sun_light_index(tmp_path / "i", titles)
    expected = run(index, "sun l", "last", False, monkeypatch)
    assert run(index, "sun l", "last", True, monkeypatch) == expected
    first = len(built)
    assert first and len(native_bucket_keys.BUCKET_QUERIES._entries) == first  # every taken query is back
    assert len(bm25.QUERY_WORDS._entries) == 1
    for _ in range(2):
        assert run(index, "sun l", "last", True, monkeypatch) == expected
    assert len(built) == first
    narrower = sun_light_index(tmp_path / "j", titles, {"searchableAttributes": ["title"]})
    assert run(narrower, "sun l", "last", True, monkeypatch) == run(
        narrower, "sun l", "last", False, monkeypatch
    )
    assert len(built) > first


def test_plan_cache_hands_a_taken_entry_to_one_search() -> None:
    cache = PlanCache(2)
    cache.put("a", 1)
    assert cache.take("a") == 1 and cache.take("a") is None and cache.get("a") is None
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # now the most recent: `b` goes first
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_plan_cache_weight_bound_evicts_least_recent() -> None:
    cache = PlanCache(100, max_weight=10)
    for key in "abcd":
        cache.put(key, key, 3)
    assert cache.weight == 9 and len(cache) == 3 and cache.get("a") is None  # 12 > 10: `a` went
    cache.put("e", "e", 50)  # heavier than the bound alone: kept, every other entry out
    assert len(cache) == 1 and cache.get("e") == "e" and cache.weight == 50
    assert cache.take("e") == "e" and cache.weight == 0
    cache.put("f", "f", 2)
    cache.put("f", "f", 4)  # replaced: counted once
    assert cache.weight == 4
    weighed = PlanCache(100, max_weight=10, weigh=lambda key, value: len(value))
    weighed.put("g", "abcdef")
    weighed.put("h", "abcdef")  # 12 > 10: `g` out
    assert weighed.get("g") is None and weighed.weight == 6


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(document, min_size=1, max_size=30),
    asked=st.dictionaries(st.sampled_from([*VOCAB, "zzz"]), st.sets(st.integers(0, 5)), max_size=6),
    flag=st.sampled_from(
        [0, FIRST_WORD_FID, FIRST_WORD_FID | SECOND_WORD_FID, FIRST_WORD_FID | SOLE_WORD_FID]
    ),
)
def test_scanned_unions_read_the_keys_lookups_read(
    docs: list[dict[str, Any]], asked: dict[str, set[int]], flag: int
) -> None:
    # the cursor walk over each word's keys unions, per field, exactly the bitmaps the point lookups find
    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(Path(tmp) / "i", [{"id": i, **doc} for i, doc in enumerate(docs)])
        with index.read() as r:
            s = SearchContext(r, complete_settings({}), SearchRequest(q=""))
            fast = native_bucket_keys.NativeBuckets(s, [], [], 1, 1.0)
            expected: dict[int, BitMap] = {}
            for word, fids in asked.items():
                for fid in fids:
                    found = fast.prefilter.word_fid_docs(word, fid | flag)
                    if found:
                        expected[fid] = expected.get(fid, BitMap()) | found
            assert fast.prefilter.scan_fid_docs(asked, flag) == expected
        index.close()
