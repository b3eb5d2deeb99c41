"""Read side of the facet structures (`engine/update/facets.py` writes them).

`FacetStore(reader)` answers point lookups straight from the databases (a value's documents, the
exists / null / empty bitmaps, a document's forward entry). Everything that walks the values of a
field in order — ranges, prefix and substring matches, sort, facet distribution, facet search — goes
through a `Column`: the field's values of one kind (numbers or strings) in key order with their
documents, plus milli's facet *levels* (groups of 4 consecutive entries, a level kept while it has
at least 5 groups, as milli's bulk builder makes them). The levels let a walk skip, with one bitmap
intersection, every value a set of candidates does not touch, and give facet counts the order of
milli's level-by-level heap. `SortValues` (each document's smallest and largest value as ranks in
key order) gives the ranker of a keyword search one array lookup per document and sort rule.

Columns, sort values and the `_geo` points are built from one cursor scan of the field's keys and
cached on the `Index` per committed version (`updated_at`, written by every batch), so a search
reads each field's database once per write, never the documents.
"""

from __future__ import annotations

import bisect
import heapq
import threading
from array import array
from collections.abc import Iterator
from typing import Any, Final

import numpy as np
from pyroaring import BitMap

from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.storage.codecs import CBO_THRESHOLD, decode_bitmap, decode_f64, encode_f64, fid_key
from hanzo_engine.engine.storage.keys import DB_FACET_FLAGS, DB_FACET_NUMBERS, DB_FACET_STRINGS
from hanzo_engine.engine.update.facets import GEO_LAT, GEO_LNG, facet_fields, read_doc_entry
from hanzo_engine.engine.update.writer import DocumentWriter as IndexWriter

GROUP_SIZE: Final = 4
CACHED_ENTRY_SIZE: Final = 64
LOOSE_UNION_SIZE: Final = 4096  # docids of a short range built into one bitmap directly
EAGER_SPAN: Final = 256  # groups of at least this many values get their bitmaps when the column is built
MIN_LEVEL_SIZE: Final = 5
NUMBERS: Final = "n"
STRINGS: Final = "s"
_CACHE_LOCK = threading.Lock()
_MAX_CACHED = 256


class Column:
    """One field's values of one kind, in key (= value) order.

    The documents of every value are kept as one array (`postings`, each value's docids between
    `offsets[i]` and `offsets[i + 1]`), so that a field with a million distinct values costs two
    arrays, not a million bitmaps. Level `k` groups `4^k` consecutive values, like milli's bulk
    levels (a level exists while it has at least 5 groups); a group's bitmap is built from the
    postings the first time a walk or a range needs it, then kept with the column.
    """

    def __init__(self, kind: str, keys: list[bytes], offsets: np.ndarray, postings: np.ndarray) -> None:
        self.kind = kind
        # a tuple of bytes is untracked by the cyclic GC once it has seen it: a list of a million keys
        # would be traversed by every full collection, which a search would then pay as tail latency
        self.keys: tuple[bytes, ...] = tuple(keys)
        self.offsets = offsets
        self.postings = postings
        sizes = [len(keys)]
        while True:
            groups = -(-sizes[-1] // GROUP_SIZE)
            if groups < MIN_LEVEL_SIZE:
                break
            sizes.append(groups)
        self.sizes = sizes  # number of entries of each level; the top is the last
        self._groups: dict[tuple[int, int], BitMap] = {}
        self._numbers: np.ndarray | None = None
        self._texts: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def numbers(self) -> np.ndarray:
        if self._numbers is None:
            self._numbers = np.array([decode_f64(k) for k in self.keys], dtype=np.float64)
        return self._numbers

    @property
    def texts(self) -> tuple[str, ...]:
        if self._texts is None:
            self._texts = tuple(k.decode() for k in self.keys)
        return self._texts

    def value(self, i: int) -> float | str:
        return decode_f64(self.keys[i]) if self.kind == NUMBERS else self.keys[i].decode()

    def docids(self, lo: int, hi: int) -> np.ndarray:
        """The postings of the entries `lo..hi` (docids may repeat across entries)."""
        return self.postings[self.offsets[lo] : self.offsets[hi]]

    def bitmap(self, i: int) -> BitMap:
        """The documents of entry `i` (kept when it has many: few entries can, and each walk needs
        them again, while the many small entries of a high-cardinality field build in no time)."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        if hi - lo < CACHED_ENTRY_SIZE:
            return _bitmap_of(self.postings[lo:hi])
        found = self._groups.get((0, i))
        if found is None:
            found = self._groups[(0, i)] = _bitmap_of(self.postings[lo:hi])
        return found

    def group(self, level: int, j: int) -> BitMap:
        """The documents of group `j` of `level` (level 0: entry `j`)."""
        if level == 0:
            return self.bitmap(j)
        found = self._groups.get((level, j))
        if found is None:
            span = GROUP_SIZE**level
            found = self._groups[(level, j)] = _bitmap_of(
                self.docids(j * span, min((j + 1) * span, len(self.keys)))
            )
        return found

    def prebuild(self) -> None:
        """Builds the bitmaps of the groups of at least EAGER_SPAN values: the lowest such level from
        the postings, each level above as unions of its children, so that no range filter pays for
        building a large group it is the first to need; the small groups below stay lazy (a range
        needs a few, each cheap to build)."""
        level = next((k for k in range(1, len(self.sizes)) if GROUP_SIZE**k >= EAGER_SPAN), None)
        if level is None:
            return
        span = GROUP_SIZE**level
        for j in range(self.sizes[level]):
            if (level, j) not in self._groups:
                self._groups[(level, j)] = _bitmap_of(
                    self.docids(j * span, min((j + 1) * span, len(self.keys)))
                )
        for up in range(level + 1, len(self.sizes)):
            for j in range(self.sizes[up]):
                if (up, j) not in self._groups:
                    self._groups[(up, j)] = BitMap.union(
                        *(self._groups[(up - 1, c)] for c in self._children(up, j))
                    )

    def _children(self, level: int, j: int) -> range:
        return range(j * GROUP_SIZE, min((j + 1) * GROUP_SIZE, self.sizes[level - 1]))

    def union(self, lo: int, hi: int) -> BitMap:
        """Documents of the entries `lo..hi` (level groups stand for whole runs of entries)."""
        parts: list[BitMap] = []
        i = lo
        if hi - lo <= GROUP_SIZE * GROUP_SIZE:
            parts, i = self._loose(lo, hi), hi
        while i < hi:
            level, span = 0, 1
            # climb while `i` starts a group of the next level that ends before `hi`
            while (
                level + 1 < len(self.sizes) and i % (span * GROUP_SIZE) == 0 and i + span * GROUP_SIZE <= hi
            ):
                level += 1
                span *= GROUP_SIZE
            end = i + span
            while end < hi and (level == 0 or end % span):  # gather loose entries into one piece
                end += 1
                if level == 0 and end % GROUP_SIZE == 0:
                    break
            if level:
                parts.append(self.group(level, i // span))
            else:
                parts.extend(self._loose(i, end))
            i = end if level == 0 else i + span
        # a fresh bitmap: the group bitmaps are cached and callers may change what they get
        return BitMap.union(*parts) if len(parts) > 1 else parts[0].copy()

    def _loose(self, lo: int, hi: int) -> list[BitMap]:
        """The documents of the consecutive entries `lo..hi`, as bitmaps to merge: one built from their
        docids when they are few, else each entry's kept bitmap (a few values holding many documents,
        a low-cardinality field: merging kept bitmaps is cheaper than building one from many docids)."""
        if self.offsets[hi] - self.offsets[lo] <= LOOSE_UNION_SIZE:
            return [_bitmap_of(self.docids(lo, hi))]
        return [self.bitmap(i) for i in range(lo, hi)]

    def bounds(
        self, lo: bytes | None, lo_inclusive: bool, hi: bytes | None, hi_inclusive: bool
    ) -> tuple[int, int]:
        """Entry range of the keys between `lo` and `hi` (None: unbounded)."""
        start = (
            0 if lo is None else (bisect.bisect_left if lo_inclusive else bisect.bisect_right)(self.keys, lo)
        )
        end = (
            len(self.keys)
            if hi is None
            else (bisect.bisect_right if hi_inclusive else bisect.bisect_left)(self.keys, hi)
        )
        return start, max(start, end)

    def walk(
        self, candidates: BitMap, reverse: bool = False, coarse: int = 0
    ) -> Iterator[tuple[int, BitMap]]:
        """(entry, its documents among `candidates`) for every entry touching them, in key order
        (descending with `reverse`); a group no candidate touches is skipped whole. With `coarse`, a
        group holding at most that many candidates comes whole, as entry -1: whole runs of values in
        order, for callers that need the order of runs only (they skip one bitmap per value)."""
        top = len(self.sizes) - 1
        entries = range(self.sizes[top])
        stack: list[tuple[int, int, BitMap]] = [
            (top, j, candidates) for j in (entries if reverse else reversed(entries))
        ]
        while stack:
            level, j, within = stack.pop()
            common = self.group(level, j) & within
            if not common:
                continue
            if level == 0 or len(common) <= coarse:
                yield (j if level == 0 else -1), common
                continue
            children = self._children(level, j)
            stack.extend((level - 1, c, common) for c in (children if reverse else reversed(children)))

    def by_count(self, candidates: BitMap) -> Iterator[tuple[int, int, int]]:
        """(entry, count among `candidates`, smallest such docid), by decreasing count: milli's
        `count_iterate_over_facet_distribution` heap over the levels (on equal counts a value pops
        before a group, and a larger key before a smaller one)."""
        top = len(self.sizes) - 1
        heap: list[tuple[int, int, bytes, int, int]] = []

        def push(level: int, j: int) -> None:
            common = self.group(level, j) & candidates
            if common:
                first = self.keys[j * GROUP_SIZE**level]
                # heapq is a min-heap: negate what Rust's max-heap compares
                heapq.heappush(heap, (-len(common), level, _Inverted(first), j, common.min()))

        for j in range(self.sizes[top]):
            push(top, j)
        while heap:
            neg, level, _, j, first_docid = heapq.heappop(heap)
            if level == 0:
                yield j, -neg, first_docid
                continue
            for c in self._children(level, j):
                push(level - 1, c)


def _bitmap_of(docids: np.ndarray) -> BitMap:
    return BitMap(array("I", docids.tobytes())) if len(docids) else BitMap()


class _Inverted(bytes):
    """Bytes that sort in reverse, so that the min-heap pops the larger key first."""

    def __lt__(self, other: bytes) -> bool:
        return bytes.__gt__(self, other)


class FacetStore:
    """Facet lookups in one transaction. In a write transaction (delete by filter) the pending facet
    changes are merged first and nothing is cached: the data differs from the committed version."""

    def __init__(self, reader: IndexReader) -> None:
        self.cached = not isinstance(reader, IndexWriter)
        if isinstance(reader, IndexWriter) and reader._facets is not None:
            reader._facets.flush()
        self.reader = reader
        self.txn = reader.txn
        self.fields = facet_fields(reader)
        self.fid_of = {name: i for i, name in enumerate(self.fields)}
        index = reader.index
        self._db = {name: index.db(name) for name in (DB_FACET_STRINGS, DB_FACET_NUMBERS, DB_FACET_FLAGS)}
        self._version = (reader.updated_at, len(self.fields))

    def fid(self, name: str) -> int | None:
        return self.fid_of.get(name)

    def _bitmap(self, db: bytes, key: bytes) -> BitMap:
        raw = self.txn.get(key, db=self._db[db])
        return decode_bitmap(raw) if raw is not None else BitMap()

    def string_docids(self, fid: int, normalized: str) -> BitMap:
        return self._bitmap(DB_FACET_STRINGS, fid_key(fid) + normalized.encode())

    def number_docids(self, fid: int, number: float) -> BitMap:
        return self._bitmap(DB_FACET_NUMBERS, fid_key(fid) + encode_f64(number))

    def flag_docids(self, kind: bytes, fid: int) -> BitMap:
        return self._bitmap(DB_FACET_FLAGS, kind + fid_key(fid))

    def doc_entry(self, docid: int) -> dict[int, list[Any]] | None:
        return read_doc_entry(self.reader, docid)

    def doc_values(self, docid: int, fid: int) -> tuple[list[float], list[list[str]]]:
        """(numbers, [[normalized, original], ...]) of a document's field."""
        entry = read_doc_entry(self.reader, docid)
        if entry is None:
            return [], []
        found = entry.get(fid)
        return ([], []) if found is None else (found[1], found[2])

    def column(self, fid: int, kind: str) -> Column:
        """The cached column of a field (see the module docstring)."""
        if not self.cached:
            return self._build(fid, kind)
        index = self.reader.index
        key = (kind, fid)
        with _CACHE_LOCK:
            cache: dict[tuple[str, int], tuple[Any, Column]] = index.__dict__.setdefault("_facet_columns", {})
            found = cache.get(key)
        if found is not None and found[0] == self._version:
            return found[1]
        column = self._build(fid, kind)
        column.prebuild()
        with _CACHE_LOCK:
            if len(cache) >= _MAX_CACHED:
                cache.clear()
            cache[key] = (self._version, column)
        return column

    def _build(self, fid: int, kind: str) -> Column:
        prefix = fid_key(fid)
        keys: list[bytes] = []
        chunks: list[bytes] = []
        lengths: list[int] = []
        small = CBO_THRESHOLD * 4
        with self.txn.cursor(
            db=self._db[DB_FACET_NUMBERS if kind == NUMBERS else DB_FACET_STRINGS]
        ) as cursor:
            if cursor.set_range(prefix):
                for k, v in cursor.iternext(keys=True, values=True):
                    kb = bytes(k)
                    if not kb.startswith(prefix):
                        break
                    keys.append(kb[2:])
                    raw = bytes(v)
                    if len(raw) > small:  # roaring: its docids as plain u32s
                        raw = BitMap.deserialize(raw).to_array().tobytes()
                    chunks.append(raw)
                    lengths.append(len(raw) >> 2)
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        postings = np.frombuffer(b"".join(chunks), dtype=np.uint32)
        return Column(kind, keys, offsets, postings)

    def sort_values(self, fid: int) -> SortValues:
        """Every document's smallest and largest value of a field (cached like columns)."""
        if not self.cached:
            return SortValues(self, fid)
        index = self.reader.index
        key = ("sort", fid)
        with _CACHE_LOCK:
            cache: dict[tuple[str, int], tuple[Any, Any]] = index.__dict__.setdefault("_facet_columns", {})
            found = cache.get(key)
        if found is not None and found[0] == self._version:
            values: SortValues = found[1]
            return values
        values = SortValues(self, fid)
        with _CACHE_LOCK:
            cache[key] = (self._version, values)
        return values

    def geo_points(self) -> GeoPoints:
        """Every document's `_geo` point, as dense arrays indexed by docid (cached like columns)."""
        if not self.cached:
            return GeoPoints(self)
        index = self.reader.index
        with _CACHE_LOCK:
            found = index.__dict__.get("_facet_geo")
        if found is not None and found[0] == self._version:
            points: GeoPoints = found[1]
            return points
        points = GeoPoints(self)
        with _CACHE_LOCK:
            index.__dict__["_facet_geo"] = (self._version, points)
        return points


def _first_entries(column: Column, size: int, last: bool) -> np.ndarray:
    """For each docid, the entry of its first (or last) posting in key order; -1 without any."""
    out = np.full(size, -1, dtype=np.int64)
    if not len(column.postings):
        return out
    entry_of = np.repeat(np.arange(len(column), dtype=np.int64), np.diff(column.offsets))
    postings = column.postings[::-1] if last else column.postings
    docids, first = np.unique(postings, return_index=True)
    out[docids] = (entry_of[::-1] if last else entry_of)[first]
    return out


class SortValues:
    """A field's per-document sort values: the entries (ranks in key order) of each document's
    smallest and largest number and string, -1 when it has none. Sorting compares ranks."""

    def __init__(self, store: FacetStore, fid: int) -> None:
        self.numbers = store.column(fid, NUMBERS)
        self.strings = store.column(fid, STRINGS)
        size = 0
        for column in (self.numbers, self.strings):
            if len(column.postings):
                size = max(size, int(column.postings.max()) + 1)
        self.size = size
        self.number_min = _first_entries(self.numbers, size, last=False)
        self.number_max = _first_entries(self.numbers, size, last=True)
        self.string_min = _first_entries(self.strings, size, last=False)
        self.string_max = _first_entries(self.strings, size, last=True)


class GeoPoints:
    """`lat[docid]`, `lng[docid]` (NaN without a point) and the bitmap of documents with a point."""

    def __init__(self, store: FacetStore) -> None:
        columns = []
        size = 0
        for name in (GEO_LAT, GEO_LNG):
            fid = store.fid(name)
            column = store.column(fid, NUMBERS) if fid is not None else None
            columns.append(column)
            if column is not None and len(column.postings):
                size = max(size, int(column.postings.max()) + 1)
        self.lat = np.full(size, np.nan)
        self.lng = np.full(size, np.nan)
        for target, column in zip((self.lat, self.lng), columns, strict=True):
            if column is not None and len(column):
                # every posting takes the value of its entry
                values = np.repeat(column.numbers, np.diff(column.offsets))
                target[column.postings] = values
        has = np.flatnonzero(~np.isnan(self.lat) & ~np.isnan(self.lng)).astype(np.uint32)
        self.docids = _bitmap_of(has)

    def point(self, docid: int) -> tuple[float, float] | None:
        if docid >= len(self.lat) or np.isnan(self.lat[docid]) or np.isnan(self.lng[docid]):
            return None
        return float(self.lat[docid]), float(self.lng[docid])
