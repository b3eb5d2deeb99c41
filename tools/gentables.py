"""Generator of csrc/tokenizer_tables.h (the Unicode tables of csrc/tokenizer.c), and the Python reference
model they encode.

`python tools/gentables.py` rewrites csrc/tokenizer_tables.h; `--check` only reports whether it is
current (tests/unit/test_tokenizer.py checks it too, and tests/property/test_tokenizer_props.py holds the
C tokenizer to `reference_normalize`). The tables come from the running interpreter's `unicodedata` (its
version is written into the header), so regenerate with the same Python minor version the project targets.
Not part of the shipped package: the header is committed.

What is tabulated, per code point:
- a *class*: the script used to split words where the script changes (as charabia groups text by
  script), `MARK` for nonspacing/enclosing marks, `OTHER` for digits, symbols and punctuation (they
  join the word they touch, so `3°F` or `2020` stay whole);
- a *role* for scripts segmented below the word (CJK, Hangul, Thai, Lao, Khmer, Myanmar): `LEAD`
  (Thai/Lao prefix vowels, glued to the next letter) or `FOLLOW` (post vowels, spacing marks,
  Hangul medial/final jamo, the katakana prolonged sound mark, glued to the previous cluster);
- a *mapping*, only inside `MAPPED_RANGES`: NFKD, controls removed, lowercased, charabia's lossy
  folds (’‘‛ -> ', œ/æ -> oe/ae, final sigma, katakana -> hiragana, Arabic alef/yeh/teh marbuta and
  tatweel, Russian ё -> е), then combining marks dropped when the character's script is one whose
  diacritics charabia strips (Latin, Greek, Hebrew, Arabic, Thai and script-less characters).

A combining mark met in the text keeps or loses itself by the same rule, decided by the last base
character before it in the word (`reference_normalize` is the executable statement of the rule and
the property tests hold the C code to it).

Default separators follow charabia's list: every punctuation character (Pc Pd Ps Pe Pi Pf Po) except
the non-breaking hyphen, the Tibetan non-breaking tsheg and the Arabic decimal/thousands marks; the
space separators, tab, CR, LF, paragraph separator; NUL, backtick, `+ ± × ÷` and the operators
U+2212..U+22FF; plus the strings ". ", ", " and "។ល។". Deliberate extension: the other White_Space
characters (NBSP, narrow NBSP, figure space, line separator, VT, FF, NEL) are separators here, where
charabia would glue the words around them into one token. Hard separators (a proximity gap of 8) are
charabia's "context" separators.
"""

from __future__ import annotations

import argparse
import functools
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

# Classes; the same numbers are #defined in csrc/tokenizer.c.
OTHER, LATIN, GREEK, CYRILLIC, ARMENIAN, HEBREW, ARABIC, GEORGIAN, THAI, CJ, HANGUL = range(11)
DEVANAGARI, BENGALI, GURMUKHI, GUJARATI, ORIYA, TAMIL, TELUGU, KANNADA = range(11, 19)
MALAYALAM, SINHALA, LAO, TIBETAN, MYANMAR, ETHIOPIC, KHMER, MISC, MARK = range(19, 28)
ROLE_LEAD, ROLE_FOLLOW = 1, 2

# Scripts whose combining marks are dropped (charabia's NonspacingMarkNormalizer scripts).
STRIP_CLASSES = frozenset({OTHER, LATIN, GREEK, HEBREW, ARABIC, THAI})

SCRIPT_BLOCKS: tuple[tuple[int, int, int], ...] = (
    (0x0041, 0x024F, LATIN),
    (0x0250, 0x02FF, LATIN),
    (0x0370, 0x03FF, GREEK),
    (0x0400, 0x052F, CYRILLIC),
    (0x0530, 0x058F, ARMENIAN),
    (0x0590, 0x05FF, HEBREW),
    (0x0600, 0x06FF, ARABIC),
    (0x0750, 0x077F, ARABIC),
    (0x0870, 0x08FF, ARABIC),
    (0x0900, 0x097F, DEVANAGARI),
    (0x0980, 0x09FF, BENGALI),
    (0x0A00, 0x0A7F, GURMUKHI),
    (0x0A80, 0x0AFF, GUJARATI),
    (0x0B00, 0x0B7F, ORIYA),
    (0x0B80, 0x0BFF, TAMIL),
    (0x0C00, 0x0C7F, TELUGU),
    (0x0C80, 0x0CFF, KANNADA),
    (0x0D00, 0x0D7F, MALAYALAM),
    (0x0D80, 0x0DFF, SINHALA),
    (0x0E00, 0x0E7F, THAI),
    (0x0E80, 0x0EFF, LAO),
    (0x0F00, 0x0FFF, TIBETAN),
    (0x1000, 0x109F, MYANMAR),
    (0x10A0, 0x10FF, GEORGIAN),
    (0x1100, 0x11FF, HANGUL),
    (0x1200, 0x139F, ETHIOPIC),
    (0x1780, 0x17FF, KHMER),
    (0x19E0, 0x19FF, KHMER),
    (0x1C80, 0x1C8F, CYRILLIC),
    (0x1C90, 0x1CBF, GEORGIAN),
    (0x1D00, 0x1DBF, LATIN),
    (0x1E00, 0x1EFF, LATIN),
    (0x1F00, 0x1FFF, GREEK),
    (0x2C60, 0x2C7F, LATIN),
    (0x2D00, 0x2D2F, GEORGIAN),
    (0x2DE0, 0x2DFF, CYRILLIC),
    (0x2E80, 0x2FDF, CJ),
    (0x3005, 0x3007, CJ),
    (0x3021, 0x3029, CJ),
    (0x3031, 0x3035, CJ),
    (0x3038, 0x303C, CJ),
    (0x3040, 0x30FF, CJ),
    (0x3130, 0x318F, HANGUL),
    (0x31C0, 0x31FF, CJ),
    (0x3400, 0x4DBF, CJ),
    (0x4E00, 0x9FFF, CJ),
    (0xA640, 0xA69F, CYRILLIC),
    (0xA720, 0xA7FF, LATIN),
    (0xA8E0, 0xA8FF, DEVANAGARI),
    (0xA960, 0xA97F, HANGUL),
    (0xAB30, 0xAB6F, LATIN),
    (0xAC00, 0xD7FF, HANGUL),
    (0xF900, 0xFAFF, CJ),
    (0xFB13, 0xFB17, ARMENIAN),
    (0xFB1D, 0xFB4F, HEBREW),
    (0xFB50, 0xFDFF, ARABIC),
    (0xFE70, 0xFEFF, ARABIC),
    (0xFF66, 0xFF9F, CJ),
    (0xFFA0, 0xFFDC, HANGUL),
    (0x10780, 0x107BF, LATIN),
    (0x1B000, 0x1B16F, CJ),
    (0x1DF00, 0x1DFFF, LATIN),
)
# Code points >= TABLE_LIMIT are not tabulated: the C code maps 0x20000..0x3FFFF to CJ, the rest to
# OTHER (or MARK for the variation selectors supplement), all unmapped.
TABLE_LIMIT = 0x20000

MAPPED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x058F),
    (0x0600, 0x06FF),
    (0x0E00, 0x0EFF),
    (0x10A0, 0x10FF),
    (0x1C80, 0x1CBF),
    (0x1D00, 0x1DBF),
    (0x1E00, 0x1FFF),
    (0x2000, 0x24FF),
    (0x2C00, 0x2D2F),
    (0x3000, 0x30FF),
    (0x31F0, 0x31FF),
    (0xA640, 0xA69F),
    (0xA720, 0xA7FF),
    (0xAB30, 0xAB6F),
    (0xFB00, 0xFB4F),
    (0xFF00, 0xFFEF),
)

FOLLOW_CODE_POINTS = frozenset(
    [
        0x0E2F,
        0x0E30,
        0x0E32,
        0x0E33,
        0x0E45,
        0x0E46,
        0x0EB0,
        0x0EB2,
        0x0EB3,
        0x0EC6,
        0x309D,
        0x309E,
        0x30FC,
        0x30FD,
        0x30FE,
        0xFF70,
        *range(0x1160, 0x1200),
        *range(0xD7B0, 0xD7C7),
        *range(0xD7CB, 0xD7FC),
    ]
)
LEAD_CODE_POINTS = frozenset([*range(0x0E40, 0x0E45), *range(0x0EC0, 0x0EC5)])

# Rust's `char::is_whitespace` (White_Space): controls among them survive charabia's control removal.
WHITE_SPACE = frozenset(
    [
        0x09,
        0x0A,
        0x0B,
        0x0C,
        0x0D,
        0x20,
        0x85,
        0xA0,
        0x1680,
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
        *range(0x2000, 0x200B),
    ]
)
# charabia's "context" separators: the ones that put a proximity gap of 8 between words.
HARD_SEPARATOR_RANGES: tuple[tuple[int, int], ...] = tuple(
    (r, r) if isinstance(r, int) else r
    for r in (
        0x0,
        0x21,
        0x3B,
        0x3F,
        0xA1,
        0xA7,
        0xB4,
        0xB6,
        0xBF,
        0x37E,
        (0x55C, 0x55E),
        0x589,
        0x5C3,
        0x60C,
        0x61B,
        0x61F,
        0x6D4,
        (0x700, 0x709),
        (0x7F7, 0x7F9),
        (0x830, 0x835),
        (0x838, 0x83E),
        0x85E,
        (0x964, 0x965),
        0xDF4,
        (0xE5A, 0xE5B),
        (0xF04, 0xF0A),
        (0xF0D, 0xF12),
        0xF14,
        (0xFD0, 0xFD4),
        (0x104A, 0x104B),
        0x10FB,
        (0x1362, 0x1368),
        (0x169B, 0x169C),
        (0x16EB, 0x16ED),
        (0x1735, 0x1736),
        (0x17D4, 0x17D6),
        0x17D8,
        0x17DA,
        (0x1800, 0x1806),
        (0x1808, 0x1809),
        (0x1944, 0x1945),
        0x1A1F,
        (0x1AA8, 0x1AAD),
        (0x1B5A, 0x1B60),
        (0x1BFC, 0x1BFF),
        (0x1C3B, 0x1C3F),
        (0x1C7E, 0x1C7F),
        (0x1CC0, 0x1CC7),
        (0x2024, 0x2026),
        (0x203B, 0x203D),
        (0x2047, 0x2049),
        0x204F,
        0x2056,
        0x205A,
        (0x2CF9, 0x2CFC),
        0x2CFE,
        0x2E18,
        0x2E2E,
        0x2E41,
        (0x3001, 0x3002),
        (0xA4FE, 0xA4FF),
        (0xA60D, 0xA60F),
        (0xA6F2, 0xA6F7),
        (0xA876, 0xA877),
        (0xA8CE, 0xA8CF),
        0xA92F,
        0xA95F,
        (0xA9C3, 0xA9CD),
        (0xAA5C, 0xAA5F),
        0xAADF,
        (0xAAF0, 0xAAF1),
        0xABEB,
        (0xFE10, 0xFE16),
        0xFE19,
        0xFE30,
        0xFE45,
        (0xFE50, 0xFE52),
        (0xFE54, 0xFE57),
        0xFF01,
        0xFF0C,
        0xFF0E,
        (0xFF1A, 0xFF1B),
        0xFF1F,
        0xFF61,
        0xFF64,
        0x10857,
        (0x10A50, 0x10A58),
        (0x10AF0, 0x10AF5),
        (0x10B3A, 0x10B3F),
        (0x10B99, 0x10B9C),
        (0x10F55, 0x10F59),
        (0x11047, 0x1104D),
        (0x110BE, 0x110C1),
        (0x11140, 0x11143),
        0x11175,
        (0x111C5, 0x111C6),
        0x111CD,
        (0x111DE, 0x111DF),
        (0x11238, 0x11239),
        (0x1123B, 0x1123C),
        0x112A9,
        (0x1144B, 0x1144D),
        0x1145A,
        (0x115C2, 0x115C3),
        (0x115C9, 0x115D7),
        (0x11641, 0x11642),
        (0x11660, 0x1166C),
        (0x1173C, 0x1173E),
        0x11944,
        0x11946,
        (0x11A3F, 0x11A46),
        (0x11A9A, 0x11A9C),
        (0x11A9E, 0x11AA2),
        (0x11C41, 0x11C42),
        (0x11C70, 0x11C71),
        (0x11EF7, 0x11EF8),
        0x11FFF,
        (0x12471, 0x12474),
        (0x16A6E, 0x16A6F),
        0x16AF5,
        (0x16B37, 0x16B39),
        0x16B44,
        (0x16E97, 0x16E9A),
        0x1BC9F,
        (0x1DA87, 0x1DA8A),
        (0x1E95E, 0x1E95F),
    )
)
MULTI_SEPARATORS: tuple[tuple[str, bool], ...] = ((". ", True), (", ", True), ("\u17d4\u179b\u17d4", True))
_PUNCTUATION = frozenset({"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"})
_NOT_SEPARATORS = frozenset({0x2011, 0x0F0C, 0x066B, 0x066C})
_EXTRA_SEPARATORS = [0x00, 0x09, 0x0A, 0x0D, 0x60, 0x2B, 0xB1, 0xD7, 0xF7, 0x2029] + [
    cp for cp in range(0x2212, 0x2300) if cp not in (0x2226, 0x228E)
]
_EXTENDED_WHITE_SPACE = (0x0B, 0x0C, 0x85, 0xA0, 0x2007, 0x2028, 0x202F)

_SPECIAL = {
    "\u2019": "'",
    "\u2018": "'",
    "\u201b": "'",
    "\u0153": "oe",
    "\u00e6": "ae",
    "\u03c2": "\u03c3",
    "\u0640": "",
    "\u0671": "\u0627",
    "\u0649": "\u064a",
    "\u0629": "\u0647",
    "\u30fd": "\u309d",
    "\u30fe": "\u309e",
}


def _is_mark(cp: int) -> bool:
    return unicodedata.category(chr(cp)) in ("Mn", "Me")


def _decomposed(cp: int) -> str:
    s = unicodedata.normalize("NFKD", chr(cp))
    if len(s) > 1 and s[0] == " " and all(_is_mark(ord(ch)) for ch in s[1:]):
        s = s[1:]  # spacing accents (´ ¨ ゛): keep the accent, not the space
    return s


def _decomposes_to_marks(cp: int) -> bool:
    # Spacing accents behave as the combining accent they stand for.
    s = _decomposed(cp)
    return s != chr(cp) and bool(s) and all(_is_mark(ord(ch)) for ch in s)


def _block_script(cp: int) -> int:
    for first, last, script in SCRIPT_BLOCKS:
        if first <= cp <= last:
            return script
    return OTHER


@functools.cache
def class_of(cp: int) -> int:
    """Class of a code point (see the module docstring)."""
    if cp >= TABLE_LIMIT:
        if 0x20000 <= cp < 0x40000:
            return CJ
        return MARK if 0xE0100 <= cp <= 0xE01EF else OTHER
    if 0xD800 <= cp < 0xE000:
        return OTHER
    if _is_mark(cp) or _decomposes_to_marks(cp):
        return MARK
    category = unicodedata.category(chr(cp))
    script = _block_script(cp)
    if script == CJ and category[0] in "LNS" and category != "Nd":
        return CJ  # radicals (So) and Hangzhou numerals (Nl) are ideographs for segmentation
    if category[0] != "L" and category not in ("Mc", "Nl"):
        return OTHER
    if script != OTHER:
        return script
    decomposed = unicodedata.normalize("NFKD", chr(cp))
    if decomposed != chr(cp) and decomposed:
        inner = class_of(ord(decomposed[0]))
        if inner not in (OTHER, MARK):
            return inner
    return MISC


def role_of(cp: int) -> int:
    if cp in LEAD_CODE_POINTS:
        return ROLE_LEAD
    if cp in FOLLOW_CODE_POINTS:
        return ROLE_FOLLOW
    if cp < TABLE_LIMIT and unicodedata.category(chr(cp)) == "Mc":
        return ROLE_FOLLOW
    return 0


def _in_mapped_ranges(cp: int) -> bool:
    return any(first <= cp <= last for first, last in MAPPED_RANGES)


def _fold(text: str) -> str:
    out = []
    for ch in text:
        ch = _SPECIAL.get(ch, ch)
        if len(ch) == 1 and 0x30A1 <= ord(ch) <= 0x30F6:
            ch = chr(ord(ch) - 0x60)  # katakana -> hiragana
        out.append(ch)
    return "".join(out).replace("\u0435\u0308", "\u0435")


@functools.cache
def mapping_of(cp: int) -> str:
    """Normalized form of one code point (itself when unmapped)."""
    c = chr(cp)
    if not _in_mapped_ranges(cp) or 0xD800 <= cp < 0xE000:
        return c
    s = _decomposed(cp)
    s = "".join(ch for ch in s if not (unicodedata.category(ch) == "Cc" and ord(ch) not in WHITE_SPACE))
    s = _fold(s.lower())
    if class_of(cp) in STRIP_CLASSES:
        s = "".join(ch for ch in s if not _is_mark(ord(ch)))
    elif s and _is_mark(ord(s[0])) and class_of(cp) != MARK:
        s = c  # Lao AM decomposes mark-first; a word must not start with a kept mark
    return s


_TRIM = " \t\n\r\x0b\x0c"


def reference_normalize(text: str, *, trim: bool = True) -> str:
    """The normalization the C code performs on one token, in Python (slow; for tests)."""
    out: list[str] = []
    strip = True
    for ch in text:
        cp = ord(ch)
        cls = class_of(cp)
        mapped = mapping_of(cp)
        if cls == MARK:
            # Russian ё written e + diaeresis folds to е like the precomposed letter.
            if strip or (cp == 0x0308 and out and out[-1][-1:] == "\u0435"):
                continue
        else:
            strip = cls in STRIP_CLASSES
        if mapped:
            out.append(mapped)
    result = "".join(out)
    return result.strip(_TRIM) if trim else result


def default_separator_code_points() -> list[int]:
    """Single code point default separators, sorted."""
    cps = {
        cp
        for cp in range(0x110000)
        if unicodedata.category(chr(cp)) in _PUNCTUATION and cp not in _NOT_SEPARATORS
    }
    cps |= {
        cp
        for cp in range(0x110000)
        if unicodedata.category(chr(cp)) == "Zs" and cp not in (0xA0, 0x2007, 0x202F)
    }
    cps |= set(_EXTRA_SEPARATORS) | set(_EXTENDED_WHITE_SPACE)
    return sorted(cps)


def hard_code_points() -> set[int]:
    return {cp for first, last in HARD_SEPARATOR_RANGES for cp in range(first, last + 1)}


def _ranges(cps: Iterable[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for cp in cps:
        if out and out[-1][1] + 1 == cp:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def _c_string(data: bytes) -> str:
    # Octal escapes are at most 3 digits, so a following digit can never be swallowed.
    parts = []
    for b in data:
        if 0x20 <= b < 0x7F and b not in (0x22, 0x5C, 0x3F):
            parts.append(chr(b))
        else:
            parts.append(f"\\{b:03o}")
    return '"' + "".join(parts) + '"'


def _wrap(items: list[str], indent: str = "    ", width: int = 100) -> Iterator[str]:
    line = indent
    for item in items:
        if len(line) + len(item) + 1 > width and line.strip():
            yield line.rstrip()
            line = indent
        line += item + " "
    if line.strip():
        yield line.rstrip()


def generate() -> str:
    """The C source of the generated block (without the markers)."""
    class_ranges: list[list[int]] = []
    for cp in range(TABLE_LIMIT):
        value = class_of(cp) | (role_of(cp) << 5)
        if class_ranges and class_ranges[-1][1] == cp - 1 and class_ranges[-1][2] == value:
            class_ranges[-1][1] = cp
        elif value:
            class_ranges.append([cp, cp, value])

    runs: list[list[int]] = []  # first, count, first output, step
    multi: list[tuple[int, bytes]] = []
    for first, last in MAPPED_RANGES:
        for cp in range(first, last + 1):
            mapped = mapping_of(cp)
            if mapped == chr(cp):
                continue
            if len(mapped) != 1:
                multi.append((cp, mapped.encode("utf-8", "surrogatepass")))
                continue
            out = ord(mapped)
            if runs and runs[-1][0] + runs[-1][1] == cp:
                run = runs[-1]
                if run[1] == 1 and out - run[2] in (0, 1):
                    run[1], run[3] = 2, out - run[2]
                    continue
                if run[1] > 1 and run[2] + run[1] * run[3] == out:
                    run[1] += 1
                    continue
            runs.append([cp, 1, out, 0])

    pool = b""
    multi_entries = []
    for cp, data in multi:
        offset = pool.find(data) if data else 0
        if offset < 0:
            offset = len(pool)
            pool += data
        multi_entries.append(f"{{0x{cp:X}, {offset}, {len(data)}}},")

    # Field widths of hz_map_multi / hz_map_run in csrc/tokenizer.c.
    assert len(pool) < 1 << 16 and all(len(data) < 1 << 8 for _, data in multi)
    assert all(n < 1 << 16 for _, n, _, _ in runs)
    seps = _ranges(default_separator_code_points())
    hard = _ranges(sorted(hard_code_points()))
    lines = [
        f"/* Unicode {unicodedata.unidata_version}; {len(class_ranges)} class ranges, {len(runs)} mapping runs,"
        f" {len(multi)} multi mappings. */",
        f'#define HZ_UNICODE_VERSION "{unicodedata.unidata_version}"',
        "static const hz_class_range HZ_CLASS_RANGES[] = {",
        *_wrap([f"{{0x{a:X}, 0x{b:X}, {v}}}," for a, b, v in class_ranges]),
        "};",
        "static const hz_map_run HZ_MAP_RUNS[] = {",
        *_wrap([f"{{0x{a:X}, {n}, 0x{o:X}, {s}}}," for a, n, o, s in runs]),
        "};",
        "static const hz_map_multi HZ_MAP_MULTI[] = {",
        *_wrap(multi_entries),
        "};",
        "static const char HZ_MAP_POOL[] =",
        *["    " + _c_string(pool[i : i + 24]) for i in range(0, len(pool), 24)],
        "    ;",
        "static const uint32_t HZ_SEPARATOR_RANGES[][2] = {",
        *_wrap([f"{{0x{a:X}, 0x{b:X}}}," for a, b in seps]),
        "};",
        "static const uint32_t HZ_HARD_RANGES[][2] = {",
        *_wrap([f"{{0x{a:X}, 0x{b:X}}}," for a, b in hard]),
        "};",
        "static const hz_multi_separator HZ_MULTI_SEPARATORS[] = {",
        *[f"    {{{_c_string(s.encode())}, {int(h)}}}," for s, h in MULTI_SEPARATORS],
        "};",
    ]
    return "\n".join(lines) + "\n"


HEADER_FILE = Path(__file__).resolve().parents[1] / "csrc" / "tokenizer_tables.h"


def header() -> str:
    """The whole text of csrc/tokenizer_tables.h."""
    return (
        "/* Generated by tools/gentables.py (python tools/gentables.py): do not edit. Included once, by\n"
        " * tokenizer.c, after the hz_* table types. */\n" + generate()
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=HEADER_FILE)
    parser.add_argument("--check", action="store_true", help="exit 1 when the tables are stale")
    args = parser.parse_args(argv)
    text = header()
    if args.check:
        stale = not args.path.exists() or args.path.read_text() != text
        print("stale" if stale else "current")
        return int(stale)
    args.path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
