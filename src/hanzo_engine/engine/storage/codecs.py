"""The byte forms of an index's keys and values.

- Ids in keys are big-endian, so cursor order is numeric order: docids u32 (`U32`), field ids u16
  (`FID`), versions and timestamps u64 (`U64`).
- `word-fid-docids` keys are `word 0x00 fid`; facet number keys hold an order-preserving f64.
- Facet bitmaps are stored as milli's `CboRoaringBitmapCodec` does: up to 7 docids as plain
  little-endian u32s (a unique value, the common case of a high-cardinality field, costs 4 bytes and
  no roaring decoding), larger sets in the portable roaring format (never 28 bytes or less for 8
  docids or more).
- Forward entries are msgpack: `docid-words` holds `[lengths, postings]` (written by
  `_native.indexing`), `facet-docs` holds `{fid: [flags, numbers, strings(, shape)]}`.
"""

from __future__ import annotations

import struct
import sys
from array import array
from typing import Any, Final

import msgspec
from pyroaring import BitMap

U32: Final = struct.Struct(">I")
U64: Final = struct.Struct(">Q")
FID: Final = struct.Struct(">H")
_F64: Final = struct.Struct(">d")
CBO_THRESHOLD: Final = 7  # at most this many docids are stored as plain u32s
# The plain-u32 form is little-endian, as milli's (and `array("I")` on every platform this runs on).
assert sys.byteorder == "little" and array("I").itemsize == 4

# (fid -> number of words of the field, word -> packed positions `fid << 16 | position`)
Forward = tuple[dict[int, int], dict[str, list[int]]]
# fid -> [flags, [numbers], [[normalized, original], ...](, shape)]
FacetEntry = dict[int, list[Any]]

_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode


def docid_key(docid: int) -> bytes:
    return U32.pack(docid)


def fid_key(fid: int) -> bytes:
    return FID.pack(fid)


def word_fid_key(word: str, fid: int) -> bytes:
    return word.encode() + b"\x00" + FID.pack(fid)


def encode_f64(value: float) -> bytes:
    """8 bytes whose byte order is the numeric order (sign bit flipped, negatives inverted)."""
    bits: int = U64.unpack(_F64.pack(value + 0.0))[0]  # + 0.0 folds -0.0 into 0.0
    bits = bits ^ 0xFFFF_FFFF_FFFF_FFFF if bits >> 63 else bits | 1 << 63
    return U64.pack(bits)


def decode_f64(raw: bytes) -> float:
    bits: int = U64.unpack(raw)[0]
    bits = bits ^ 1 << 63 if bits >> 63 else bits ^ 0xFFFF_FFFF_FFFF_FFFF
    value: float = _F64.unpack(U64.pack(bits))[0]
    return value


def encode_bitmap(bitmap: BitMap) -> bytes:
    """milli's `CboRoaringBitmapCodec`: a few docids as plain u32s, else the roaring format."""
    if len(bitmap) <= CBO_THRESHOLD:
        return array("I", bitmap).tobytes()
    serialized: bytes = bitmap.serialize()
    if len(serialized) <= CBO_THRESHOLD * 4:
        # only run containers are that small: rebuild without them (`add` never makes one; bulk
        # constructors do), array and bitmap containers of 8 docids or more take over 28 bytes
        plain = BitMap()
        for docid in bitmap:
            plain.add(docid)
        serialized = plain.serialize()
    return serialized


def decode_bitmap(raw: bytes | memoryview) -> BitMap:
    if len(raw) <= CBO_THRESHOLD * 4:
        return BitMap(array("I", bytes(raw)))
    return BitMap.deserialize(bytes(raw))


def decode_forward(raw: bytes | memoryview) -> Forward:
    """A `docid-words` value."""
    lengths, postings = _unpack(raw)
    return lengths, postings


def encode_facet_entry(entry: FacetEntry) -> bytes:
    """A `facet-docs` value."""
    return _pack(entry)


def decode_facet_entry(raw: bytes | memoryview) -> FacetEntry:
    entry: FacetEntry = _unpack(raw)
    return entry
