"""Property tests of the full-text indexer (engine/update/indexer.py over _native/indexing).

After random add / replace / update / delete / clear / reindex sequences, spread over one or several
write transactions, every search structure must equal what a brute-force rebuild from the stored
documents gives: the forward index (byte for byte what msgspec encodes for the pure-Python reference
analysis), word-docids, word-fid-docids and field-stats. The native bitmap merge is checked against
pyroaring's set operations.
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from hanzo_engine._native.indexing import (
    MAX_POSITION,
    PostingAccumulator,
    analyze,
    merge_bitmap,
    next_word_bits,
)
from hanzo_engine._native.tokenizer import TokenizerConfig
from hanzo_engine.engine.documents.fields import flatten
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.storage.codecs import word_fid_key
from hanzo_engine.engine.storage.keys import (
    DB_DOCID_WORDS,
    DB_WORD_DOCIDS,
    DB_WORD_FID_DOCIDS,
    FIRST_WORD_FID,
    NEXT_WORD_FID,
    NEXT_WORD_MAX_LEN,
    SECOND_WORD_FID,
    SOLE_WORD_FID,
)
from hanzo_engine.engine.update.indexer import field_stats, field_text, search_fields, tokenizer_for

_U32 = struct.Struct(">I")
_pack = msgspec.msgpack.Encoder().encode


def reference_analyze(
    tokenizer: TokenizerConfig, document: dict[str, Any], fid_of: dict[str, int]
) -> tuple[dict[int, int], dict[str, list[int]]]:
    """The indexer's documented analysis, in plain Python: positions `fid << 16 | pos`, +8 between
    array elements, nothing past MAX_POSITION."""
    lengths: dict[int, int] = {}
    postings: dict[str, list[int]] = {}
    for name, value in flatten(document).items():
        if name == "_vectors" or name.startswith("_vectors."):
            continue
        fid = fid_of[name]
        offset = 0
        count = 0
        for item in value if isinstance(value, list) else (value,):
            text = field_text(item)
            if not text:
                continue
            last = -1
            for word, pos in tokenizer.word_positions(text):
                p = offset + pos
                if p > MAX_POSITION:
                    break
                postings.setdefault(word, []).append(fid << 16 | p)
                last = p
                count += 1
            offset = last + 8 if last >= 0 else offset
        if count:
            lengths[fid] = count
    return lengths, postings


# -- documents and operations -------------------------------------------------------------------

WORDS = [
    "the",
    "Quick",
    "brown",
    "fox",
    "café",
    "CAFE",
    "東京",
    "straße",
    "x" * 40,
    "über",
    "ok.",
    "a-b",
    "1984",
    "naïve",
    "hello, world",
    "Jump! Over",
    "",
]
text = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)
scalar = st.one_of(
    text,
    st.integers(-5, 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
)
value = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "title"]), inner, max_size=3)
    ),
    max_leaves=8,
)
document = st.dictionaries(
    st.sampled_from(["title", "overview", "tags", "info", "n", "_vectors", "a.b"]), value, max_size=5
)
ids = st.sampled_from(["1", "2", "3", "4", "5"])
operation = st.one_of(
    st.tuples(st.just("put"), ids, document, st.booleans()),
    st.tuples(st.just("delete"), ids),
    st.tuples(st.just("commit")),
    st.just(("clear",)) | st.just(("reindex",)),
)
index_settings = st.sampled_from(
    [
        {},
        {"stopWords": ["the", "fox"]},
        {"separatorTokens": ["ü"]},
        {"nonSeparatorTokens": ["-"], "dictionary": ["a-b"]},
    ]
)


@contextmanager
def new_index() -> Iterator[Index]:
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.create(Path(tmp) / "index", primary_key="id", created_at=0)
        try:
            yield index
        finally:
            index.close()


def check_consistent(index: Index, settings_: dict[str, Any]) -> None:
    """Every search structure equals its rebuild from the stored documents."""
    tokenizer = tokenizer_for(settings_)
    with index.read() as reader:
        txn = reader.txn
        names = search_fields(reader)
        fid_of = {name: i for i, name in enumerate(names)}
        assert len(fid_of) == len(names)
        documents = {docid: msgspec.json.decode(raw) for docid, raw in reader.iter_raw_documents()}

        expected_words: dict[bytes, set[int]] = {}
        expected_fids: dict[bytes, set[int]] = {}
        expected_stats: dict[int, list[int]] = {}
        for docid, doc in documents.items():
            lengths, postings = reference_analyze(tokenizer, doc, fid_of)
            raw = txn.get(_U32.pack(docid), db=index.db(DB_DOCID_WORDS))
            assert raw is not None, docid
            assert bytes(raw) == _pack((lengths, postings))
            for word, positions in postings.items():
                expected_words.setdefault(word.encode(), set()).add(docid)
                for fid in {p >> 16 for p in positions}:
                    expected_fids.setdefault(word_fid_key(word, fid), set()).add(docid)
                for fid in {p >> 16 for p in positions if p & 0xFFFF == 1}:
                    # the word at position 1: under fid | FIRST_WORD_FID | SECOND_WORD_FID
                    expected_fids.setdefault(
                        word_fid_key(word, fid | FIRST_WORD_FID | SECOND_WORD_FID), set()
                    ).add(docid)
                for fid in {p >> 16 for p in positions if p & 0xFFFF == 0}:
                    # the field starts with the word: also under the pseudo field fid | FIRST_WORD_FID
                    expected_fids.setdefault(word_fid_key(word, fid | FIRST_WORD_FID), set()).add(docid)
                    if lengths[fid] == 1:
                        # ... and holds it alone: under fid | FIRST_WORD_FID | SOLE_WORD_FID too
                        expected_fids.setdefault(
                            word_fid_key(word, fid | FIRST_WORD_FID | SOLE_WORD_FID), set()
                        ).add(docid)
            # a word directly followed by another in the same field: under NEXT_WORD_FID | its bits
            at: dict[int, list[str]] = {}
            for word, positions in postings.items():
                for p in positions:
                    at.setdefault(p, []).append(word)
            for p, words in at.items():
                if (p + 1) >> 16 == p >> 16:
                    for word in (w for w in words if len(w.encode()) <= NEXT_WORD_MAX_LEN):
                        for after in at.get(p + 1, ()):
                            key = word_fid_key(word, NEXT_WORD_FID | next_word_bits(after.encode()))
                            expected_fids.setdefault(key, set()).add(docid)
            for fid, n in lengths.items():
                st_ = expected_stats.setdefault(fid, [0, 0])
                st_[0] += 1
                st_[1] += n

        def stored(db_name: bytes) -> dict[bytes, set[int]]:
            with txn.cursor(db=index.db(db_name)) as cursor:
                return {bytes(k): set(BitMap.deserialize(bytes(v))) for k, v in cursor}

        assert {_U32.unpack(bytes(k))[0] for k, _ in txn.cursor(db=index.db(DB_DOCID_WORDS))} == set(
            documents
        )
        assert stored(DB_WORD_DOCIDS) == expected_words
        assert stored(DB_WORD_FID_DOCIDS) == expected_fids
        assert {fid: v for fid, v in field_stats(reader).items() if v != [0, 0]} == expected_stats


def run(
    index: Index, settings_: dict[str, Any], ops: list[tuple[Any, ...]], *, max_memory: int | None = None
) -> None:
    """Applies `ops`, a "commit" ending each write transaction; `max_memory` = 0 makes the indexer
    flush after every document (the memory bound)."""
    ops = [("commit",), *ops]  # the settings go in first, before any document
    first = True
    while ops:
        with index.write() as writer:
            if first:
                writer.set_settings(settings_)
                first = False
            elif max_memory is not None:
                writer.search.max_memory = max_memory
            while ops:
                op = ops.pop(0)
                if op[0] == "commit":
                    break
                if op[0] == "put":
                    _, ext, doc, merge = op
                    writer.put_document(ext, {"id": ext, **doc}, merge=merge)
                elif op[0] == "delete":
                    writer.delete_document(op[1])
                elif op[0] == "clear":
                    writer.clear_documents()
                else:
                    stored = [(docid, msgspec.json.decode(raw)) for docid, raw in writer.iter_raw_documents()]
                    writer.search.reindex_all(stored)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index_settings, st.lists(operation, max_size=25), st.sampled_from([None, 0]))
def test_structures_equal_a_rebuild_from_the_stored_documents(
    settings_: dict[str, Any], ops: list[tuple[Any, ...]], max_memory: int | None
) -> None:
    with new_index() as index:
        run(index, settings_, list(ops), max_memory=max_memory)
        check_consistent(index, settings_)


def test_replacing_a_document_twice_in_one_transaction() -> None:
    # add, then remove of a docid added in the same transaction: the `pending` flush path
    with new_index() as index:
        run(
            index,
            {},
            [
                ("put", "1", {"title": "alpha beta"}, False),
                ("commit",),
                ("put", "1", {"title": "gamma"}, False),
                ("put", "1", {"title": "beta delta"}, False),
                ("put", "2", {"title": "alpha"}, True),
                ("delete", "2"),
                ("put", "1", {"tags": ["gamma"]}, True),
            ],
        )
        check_consistent(index, {})
        with index.read() as reader:
            keys = {bytes(k) for k, _ in reader.txn.cursor(db=index.db(DB_WORD_DOCIDS))}
        assert keys == {b"1", b"beta", b"delta", b"gamma"}


# -- the analysis --------------------------------------------------------------------------------

field_texts = st.lists(
    st.tuples(st.integers(0, 0xFFFF), st.lists(text, max_size=4)), max_size=5, unique_by=lambda f: f[0]
)


@settings(max_examples=300, deadline=None)
@given(field_texts)
def test_analyze_matches_the_reference_and_msgspec(fields: list[tuple[int, list[str]]]) -> None:
    tokenizer = tokenizer_for({})
    document = {f"f{fid}": texts for fid, texts in fields}
    fid_of = {f"f{fid}": fid for fid, _ in fields}
    lengths, postings, per_field = analyze(tokenizer, fields)
    assert (lengths, postings) == reference_analyze(tokenizer, document, fid_of)
    first = {
        fid: {
            w: min(p for p in ps if p >> 16 == fid)
            for w, ps in postings.items()
            if any(p >> 16 == fid for p in ps)
        }
        for fid in lengths
    }
    assert per_field == [(fid, sorted(first[fid], key=first[fid].__getitem__)) for fid in lengths]
    forward = PostingAccumulator().add(tokenizer, 7, fields)
    assert forward == _pack((lengths, postings))
    assert msgspec.msgpack.decode(forward) == [lengths, postings]


def test_position_cap_and_long_containers() -> None:
    # 10,000 array elements of 7 words: positions pass 0xFFFF, which ends the field; words of 32..250
    # bytes (str8), over 15 words (map16) and positions (array16), fids needing u8/u16 encodings.
    tokenizer = tokenizer_for({})
    long_words = " ".join(chr(ord("a") + i % 26) * (31 + i) for i in range(20))
    fields = [
        (0, ["one two three four five six seven"] * 10_000),
        (200, [long_words]),
        (0xFFFF, ["last word"]),
    ]
    document = {"a": fields[0][1], "b": fields[1][1], "c": fields[2][1]}
    reference = reference_analyze(tokenizer, document, {"a": 0, "b": 200, "c": 0xFFFF})
    lengths, postings, _ = analyze(tokenizer, fields)
    assert (lengths, postings) == reference
    assert max(p & 0xFFFF for p in postings["one"]) <= MAX_POSITION
    assert lengths[0] < 10_000 * 7
    assert PostingAccumulator().add(tokenizer, 1, fields) == _pack(reference)


def test_bad_input_is_rejected() -> None:
    acc = PostingAccumulator()
    tokenizer = tokenizer_for({})
    with pytest.raises(OverflowError):
        acc.add(tokenizer, 1, [(0x10000, ["x"])])
    with pytest.raises(TypeError):
        acc.add(tokenizer, 1, [(0, [3])])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="malformed forward"):
        acc.remove(1, b"\x92\x80")
    with pytest.raises(ValueError, match="malformed roaring"):
        merge_bitmap(b"\x01\x02\x03\x04", [1], [])


# -- the bitmap merge ----------------------------------------------------------------------------


def u32_sets(max_size: int) -> st.SearchStrategy[list[int]]:
    chunky = st.integers(0, 3).flatmap(lambda hi: st.integers(hi << 16, (hi << 16) + 0xFFFF))
    ranges = st.tuples(st.integers(0, 200_000), st.integers(1, 9000)).map(
        lambda t: list(range(t[0], t[0] + t[1]))
    )
    return st.one_of(
        st.lists(chunky, max_size=max_size),
        st.lists(st.integers(0, 2**32 - 1), max_size=max_size),
        st.lists(ranges, max_size=3).map(lambda rs: [x for r in rs for x in r]),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(u32_sets(6000), st.booleans(), st.booleans(), u32_sets(6000), u32_sets(6000), st.booleans())
def test_merge_bitmap_is_stored_minus_removed_or_added(
    old: list[int],
    run_optimize: bool,
    absent: bool,
    added: list[int],
    removed: list[int],
    remove_stored: bool,
) -> None:
    stored = BitMap(old)
    if run_optimize:
        stored.run_optimize()
    else:
        stored = BitMap(old, optimize=False)
    if remove_stored:
        removed = removed + old[::2]
    raw = None if absent else stored.serialize()
    base = BitMap() if absent else stored
    expected = (base - BitMap(removed)) | BitMap(added)
    out = merge_bitmap(raw, added, removed)
    assert (BitMap.deserialize(out) if out else BitMap()) == expected
    assert (out == b"") == (not expected)
    if out:
        # containers are rebuilt in their smallest form and untouched ones copied: never larger than
        # the plain (array/bitmap) form, but for the run-flag bytes of the header
        plain = BitMap(expected, optimize=False).serialize()
        assert len(out) <= len(plain) + len({x >> 16 for x in expected}) // 8 + 1
        if not added and not removed and raw is not None:
            assert out == raw  # nothing touched: the stored bytes come back as they were
