"""The bucket sort's fast path: a whole bucket keyed natively, only its best documents scored in Python.

`ranking.Ranker` scores a document on the rules after words and typo in ~50-130 µs of Python; a
bucket of a common word holds tens of thousands of documents. When every rule left is one the native
keyer implements (proximity, attribute rank, word position, exactness, bm25) and the bucket has one
path of word nodes (derivations: words, split words, synonyms), `_native.bucket.BucketQuery` computes the same
sort keys for every document from the raw forward entries (one LMDB get and one in-place parse each),
and `_native.bm25` the BM25 tie-break. The best `need + MARGIN` documents by those keys are then
scored by the `Ranker` itself, which gives the details and the final order: the page is exactly the
Python ranker's as long as the native keys agree with it (tests/unit/test_fast_bucket.py compares
both on random corpora), and the margin absorbs float rounding differences of BM25 at the cut.

Not taken (the caller scores per document): a bucket without a typo split, several paths (ngrams),
quoted phrases, sort rules, `distinct`, a ranking score threshold.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from pyroaring import BitMap

from hanzo_engine._native.bucket import BucketQuery

from .disjunctive import _field_arrays, _Scorer, forward_entries
from .engine import Node, Path, Searcher

RULE_CODES = {"proximity": 1, "attributeRank": 2, "attribute": 3, "wordPosition": 4, "exactness": 5, "bm25": 6}
MIN_DOCS = 48  # smaller buckets are scored in Python directly
MARGIN = 8  # documents scored in Python past the ones needed
CHUNK = 16_384  # documents keyed between two looks at the clock
S_EXACT, S_RAW = 3, 4  # BucketQuery's node sets past the typo levels
MAX_SLOTS = 8  # bucket.pyx's MAX_SLOTS

Scored = tuple[tuple[Any, ...], float, dict[str, Any]]


def _supported(node: Node) -> bool:
    """A word or ngram node whose derivations are words or phrase-like word sequences (split words,
    synonyms) of at most MAX_SLOTS words, without the `None` slots of quoted stop words."""
    return node.kind != "phrase" and len(node.alts) <= 3 and all(
        len(alt.words) <= MAX_SLOTS and None not in alt.words for level in node.alts for alt in level)


class FastBuckets:
    """Per search: which buckets the native keyer can take, and their best documents."""

    def __init__(self, s: Searcher, nodes: list[Node], rules: list[str], levels: int, half: float) -> None:
        self.s = s
        self.nodes = nodes
        self.codes = [RULE_CODES[r] for r in rules]
        self.levels = levels
        self.half = half
        self._scorers: dict[tuple[int, ...], _Scorer] = {}
        self._queries: dict[Path, BucketQuery | None] = {}
        self._fields: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @staticmethod
    def applicable(rules: list[str]) -> bool:
        return all(r in RULE_CODES for r in rules)

    def query(self, path: Path, bm25_terms: tuple[int, ...]) -> BucketQuery | None:
        """The native query of a single-path bucket (BM25 over the nodes `bm25_terms`), or None
        when the keyer cannot take it."""
        del bm25_terms  # `_Scorer` rescores the documents of phrase-like derivations itself
        if path not in self._queries:
            self._queries[path] = self._build(path)
        return self._queries[path]

    def _build(self, path: Path) -> BucketQuery | None:
        s = self.s
        nodes = [self.nodes[i] for i in path]
        if not nodes or len(nodes) > 64 or not all(_supported(n) for n in nodes):
            return None
        entries: dict[bytes, set[tuple[int, int, bool, bool, int, int]]] = {}
        phrases: list[tuple[int, int, int]] = []
        spec: list[tuple[int, int, int, int, bool, bool]] = []
        prev: Node | None = None
        for k, node in enumerate(nodes):
            for level, alts in enumerate(node.alts):
                for alt in alts:
                    if len(alt.words) == 1:
                        word = alt.words[0]
                        assert word is not None
                        entries.setdefault(word.encode(), set()).add((k, level, alt.tolerant, alt.phrase, -1, 0))
                        continue
                    for slot, word in enumerate(alt.words):
                        assert word is not None
                        entries.setdefault(word.encode(), set()).add((k, level, alt.tolerant, True, len(phrases), slot))
                    phrases.append((k, level, len(alt.words)))
            exact = node.exact
            if exact is not None:
                word = exact.words[0]
                assert word is not None and len(exact.words) == 1
                entries.setdefault(word.encode(), set()).add((k, S_EXACT, exact.tolerant, exact.phrase, -1, 0))
                entries[word.encode()].add((k, S_RAW, False, False, -1, 0))
            contiguous = prev is not None and prev.qend + 1 == node.qstart
            spec.append((node.qstart, node.length, node.first, node.qend - node.qstart + 1, contiguous,
                         exact is not None))
            prev = node
        if self._fields is None:
            self._fields = _field_arrays(s)
        allowed, allowed_tol, _ = self._fields
        weight = np.full(len(allowed), -1, dtype=np.int32)
        for fid, w in s.weight.items():
            if fid < len(weight):
                weight[fid] = w
        words = sorted(entries)
        return BucketQuery(words, [sorted(entries[w]) for w in words], phrases, spec, self.codes, allowed,
                           allowed_tol, weight, s.max_weight, s.by_attribute)

    def best(self, bq: BucketQuery, bm25_terms: tuple[int, ...], docs: BitMap, need: int, deadline: float,
             ) -> tuple[list[int], BitMap]:
        """The docids of `docs` to score in Python (the best `need + MARGIN` by the native keys,
        best first) and the documents left unkeyed when `deadline` (time.monotonic) passed."""
        scorer = self._scorers.get(bm25_terms)
        if scorer is None:
            scorer = self._scorers[bm25_terms] = _Scorer(self.s, [self.nodes[i] for i in bm25_terms])
        keys: list[np.ndarray] = []
        raws: list[np.ndarray] = []
        ids: list[np.ndarray] = []
        rest = BitMap()
        n = len(docs)
        for start in range(0, n, CHUNK):
            if start and time.monotonic() > deadline:
                rest = BitMap(docs[start:])
                break
            chunk = BitMap(docs[start : start + CHUNK]) if n > CHUNK else docs
            entries = forward_entries(self.s, chunk)
            keys.append(bq.keys(entries))
            raws.append(scorer.score_entries(chunk, entries))
            ids.append(np.fromiter(chunk, dtype=np.int64, count=len(chunk)))
        key = np.concatenate(keys) if len(keys) > 1 else keys[0]
        raw = np.concatenate(raws) if len(raws) > 1 else raws[0]
        docids = np.concatenate(ids) if len(ids) > 1 else ids[0]
        columns = [key[:, c] for c in range(bq.n_cols)]
        col = 0
        for code in self.codes:
            if code == RULE_CODES["bm25"]:
                norm = raw / (raw + self.half)
                columns[col] = -(1 + np.rint(norm * (self.levels - 1))).astype(np.int64)
            col += 2 if code in (RULE_CODES["attribute"], RULE_CODES["exactness"]) else 1
        order = np.lexsort((docids, -raw, *reversed(columns)))
        take = order[: need + MARGIN]
        return [int(d) for d in docids[take]], rest
