"""Highlighting, cropping and match positions of search hits (= milli's `Matcher` and Meilisearch's
`format_fields`), producing `_formatted` and `_matchesPosition` exactly as Meilisearch does.

One text value
--------------
`Highlighter.analyze` tokenizes the value with the index tokenizer and finds the *matches*, left to
right over the word tokens (separators are skipped; a word's position is its rank among the words):

- phrases are tried first: a phrase whose first word equals the token's normalized word is followed
  over the next words; when all its words match, the whole run is one match and scanning resumes
  after it. A one-word phrase is a plain word match.
- otherwise the token matches `MatchingWords` as a whole word (exact or typo derivation: the whole
  token) or by prefix (only the characters of the original text that produce the matched prefix).
  Stop-word tokens never match a word (the formatting tokenizer normally has no stop words, as
  Meilisearch's `HitMaker` tokenizer has none).

`_matchesPosition` bounds are `{start, length}`: `start` is the byte offset of the match in the
original value; `length` is, as milli computes it for tokens without a char map, the UTF-8 length of
the matched characters of the *normalized* words (equal to the original bytes unless normalization
changed them: `pésti` reports 5, a prefix `world` of `Ŵôřlḑôle` reports 5).

Cropping (`crop_bounds`) keeps `crop` words: it picks the best interval of matches that fits —
ranked by (distinct query terms, -sum of gaps capped at 7, ordered pairs), phrases counting as
ordered adjacent words — then grows the window from that interval word by word, both sides in turn;
when both neighbours are separators of different kinds it grows on the soft side, and it never ends
on a trailing separator. A single match longer than the window is cut from its end. The crop marker
is added on each side where text was cut. Highlighting wraps each match inside the window with the
tags (a prefix match wraps only its prefix).

Query-term ids (which query word a match stands for) drive the interval ranking. They come from
`MatchingWords.ids` when the engine provides it (`{normalized word | prefix | "phrase words": (first,
last) term position}`, a phrase spanning its words' positions); otherwise every distinct matched
word and prefix counts as one term and a phrase as one per word, in the order phrases, prefixes, words.

Documents
---------
`formatted_options` is Meilisearch's `compute_formatted_options` on field names instead of field ids;
`format_document` is `format_fields`: leaves under displayed attributes are visited (arrays through
their elements, recording `indices`), strings are highlighted/cropped by the rules on their path,
a parent or a child of it, numbers always become strings, other values are copied. As in Meilisearch,
the positions of a key are those of the last array element that had matches (each leaf replaces the
key's entry).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from hanzo_engine.apitypes.deserr import parse_uint_param, to_json
from hanzo_engine.engine.attribute_patterns import contained_in as _contained_in
from hanzo_engine.engine.attribute_patterns import is_faceted_by
from hanzo_engine.engine.documents.fields import select_fields
from hanzo_engine.engine.tokenizer import Token, Tokenizer

from .types import MatchingWords

__all__ = [
    "FormatOptions",
    "Highlighter",
    "Match",
    "format_document",
    "formatted_options",
    "is_faceted_by",
]

DEFAULT_CROP_MARKER: Final = "…"
MAX_GAP: Final = 7  # distance between two matches counts at most this much in the interval score


@dataclass(frozen=True)
class FormatOptions:
    highlight: bool = False
    crop: int | None = None

    def merge(self, other: FormatOptions) -> FormatOptions:
        return FormatOptions(
            self.highlight or other.highlight, self.crop if self.crop is not None else other.crop
        )

    @property
    def should_format(self) -> bool:
        return self.highlight or self.crop is not None


@dataclass(frozen=True)
class Match:
    """One match: word positions and token indices of its first and last word, the query-term ids
    it stands for, how many characters of the original text (from its first token) it highlights,
    and the `length` its `_matchesPosition` entry reports."""

    first_word: int
    last_word: int
    first_token: int
    last_token: int
    ids: tuple[int, ...]
    char_count: int
    length: int

    @property
    def is_phrase(self) -> bool:
        return self.last_token != self.first_token

    @property
    def word_count(self) -> int:
        return self.last_word - self.first_word + 1


def _char_len(lead: int) -> int:
    """Length of the UTF-8 sequence starting with byte `lead`."""
    if lead < 0x80:
        return 1
    if lead >= 0xF0:
        return 4
    if lead >= 0xE0:
        return 3
    return 2


def _advance_chars(data: bytes, start: int, count: int, limit: int) -> int:
    """Byte offset `count` characters after `start`, at most `limit`."""
    pos = start
    while count > 0 and pos < len(data):
        pos += _char_len(data[pos])
        count -= 1
    return min(pos, limit)


def _count_chars(data: bytes) -> int:
    return sum(1 for byte in data if byte & 0xC0 != 0x80)


def _lemma_bytes(lemma: str, chars: int) -> int:
    """UTF-8 length of the first `chars` characters of a normalized lemma.

    What Meilisearch reports as a match's `length`: charabia keeps no char map for these tokens, so
    milli sums the normalized lemma's character widths (`pésti` -> 5, as its `formatted.rs` shows).
    """
    return len(lemma[:chars].encode())


def _term_ids(matching: MatchingWords) -> dict[str, tuple[int, ...]]:
    provided = getattr(matching, "ids", None)
    out: dict[str, tuple[int, ...]] = {}
    if isinstance(provided, Mapping) and provided:
        for key, (first, last) in provided.items():
            out[str(key)] = tuple(range(int(first), int(last) + 1))
        return out
    # without the engine's positions: a phrase stands for as many query words as it has, any other
    # distinct matched word or prefix for one
    next_id = 0
    for key, width in [
        *((" ".join(p), len(p)) for p in matching.phrases),
        *((p, 1) for p in matching.prefixes),
        *((w, 1) for w in sorted(matching.words)),
    ]:
        if key not in out:
            out[key] = tuple(range(next_id, next_id + max(width, 1)))
            next_id += max(width, 1)
    return out


class Highlighter:
    """Meilisearch's `MatcherBuilder`: the query's matching words, the tokenizer and the tags."""

    __slots__ = ("crop_marker", "ids", "matching", "post_tag", "pre_tag", "tokenizer")

    def __init__(
        self,
        matching: MatchingWords,
        tokenizer: Tokenizer,
        *,
        crop_marker: str = DEFAULT_CROP_MARKER,
        highlight_pre_tag: str = "<em>",
        highlight_post_tag: str = "</em>",
    ) -> None:
        self.matching = matching
        self.tokenizer = tokenizer
        self.crop_marker = crop_marker.encode()
        self.pre_tag = highlight_pre_tag.encode()
        self.post_tag = highlight_post_tag.encode()
        self.ids = _term_ids(matching)

    # -- matching ---------------------------------------------------------------------------------

    def analyze(self, text: str) -> tuple[bytes, list[Token], list[Match]]:
        """The UTF-8 text, its tokens and its matches in text order."""
        data = text.encode()
        tokens = self.tokenizer.tokenize(text)
        words = [(i, tok) for i, tok in enumerate(tokens) if not tok.is_separator]
        matches: list[Match] = []
        w = 0
        while w < len(words):
            w = self._match_at(data, tokens, words, w, matches)
        return data, tokens, matches

    def _match_at(
        self, data: bytes, tokens: list[Token], words: list[tuple[int, Token]], w: int, out: list[Match]
    ) -> int:
        """Record the match starting at word `w` (if any); the index of the next word to look at."""
        token_index, token = words[w]
        word = token.word
        for phrase in self.matching.phrases:
            if not phrase or phrase[0] != word:
                continue
            ids = self.ids.get(" ".join(phrase), ())
            end = w
            for expected in phrase[1:]:
                if end + 1 >= len(words) or words[end + 1][1].word != expected:
                    break
                end += 1
            else:
                last_index, last = words[end]
                chars = _count_chars(data[token.start : last.end])
                lemma = "".join(t.word for t in tokens[token_index : last_index + 1])
                out.append(Match(w, end, token_index, last_index, ids, chars, _lemma_bytes(lemma, chars)))
                return end + 1
        if token.is_stop_word:
            return w + 1
        length = self.matching.match_length(word)
        if length is None:
            return w + 1
        if word in self.matching.words:
            ids = self.ids.get(word, ())
            chars = _count_chars(data[token.start : token.end])
            reported = _lemma_bytes(word, chars)
        else:
            prefix = word[:length]
            ids = self.ids.get(prefix, ())
            original = data[token.start : token.end].decode()
            prefix_bytes = Tokenizer.original_prefix_length(original, len(prefix.encode()))
            chars = _count_chars(data[token.start : token.start + prefix_bytes])
            reported = len(prefix.encode())
        out.append(Match(w, w, token_index, token_index, ids, chars, reported))
        return w + 1

    def match_bounds(self, text: str, indices: Sequence[int] = ()) -> list[dict[str, Any]]:
        """`_matchesPosition` entries of one value: byte `start` and `length` (+ array `indices`)."""
        data, tokens, matches = self.analyze(text)
        return self._bounds(data, tokens, matches, indices)

    @staticmethod
    def _bounds(
        data: bytes, tokens: list[Token], matches: list[Match], indices: Sequence[int]
    ) -> list[dict[str, Any]]:
        out = []
        for m in matches:
            bound: dict[str, Any] = {"start": tokens[m.first_token].start, "length": m.length}
            if indices:
                bound["indices"] = list(indices)
            out.append(bound)
        return out

    # -- formatting -------------------------------------------------------------------------------

    def format(self, text: str, options: FormatOptions) -> str:
        """The value highlighted and/or cropped; unchanged when neither is asked."""
        if not options.should_format:
            return text
        data, tokens, matches = self.analyze(text)
        return self._format(data, tokens, matches, options)

    def format_and_bounds(
        self,
        text: str,
        options: FormatOptions | None,
        indices: Sequence[int] = (),
    ) -> tuple[str, list[dict[str, Any]]]:
        """Both results from one analysis (what a formatted leaf with `showMatchesPosition` needs)."""
        data, tokens, matches = self.analyze(text)
        formatted = (
            text
            if options is None or not options.should_format
            else self._format(data, tokens, matches, options)
        )
        return formatted, self._bounds(data, tokens, matches, indices)

    def _format(self, data: bytes, tokens: list[Token], matches: list[Match], options: FormatOptions) -> str:
        if options.crop is not None and options.crop > 0:
            crop_start, crop_end = crop_bounds(tokens, matches, options.crop, len(data))
        else:
            crop_start, crop_end = 0, len(data)
        parts: list[bytes] = []
        if crop_start > 0 and self.crop_marker:
            parts.append(self.crop_marker)
        index = crop_start
        if options.highlight:
            for m in matches:
                m_start, m_end = tokens[m.first_token].start, tokens[m.last_token].end
                if m_end < crop_start or m_start > crop_end:
                    continue
                m_start, m_end = max(m_start, crop_start), min(m_end, crop_end)
                if index < m_start:
                    parts.append(data[index:m_start])
                # a prefix match wraps only the characters that produced the prefix
                highlight_end = max(_advance_chars(data, m_start, m.char_count, m_end), m_start)
                parts += (self.pre_tag, data[m_start:highlight_end], self.post_tag)
                if highlight_end < m_end:
                    parts.append(data[highlight_end:m_end])
                index = m_end
        if index < crop_end:
            parts.append(data[index:crop_end])
        if crop_end < len(data) and self.crop_marker:
            parts.append(self.crop_marker)
        return b"".join(parts).decode()


# --------------------------------------------------------------------------------------------------
# Crop window
# --------------------------------------------------------------------------------------------------


def _interval_score(matches: Sequence[Match]) -> tuple[int, int, int]:
    """(distinct query terms, -sum of gaps capped at 7, ordered pairs) of consecutive matches."""
    ids: set[int] = set()
    order = distance = 0
    for k, m in enumerate(matches):
        if m.is_phrase:
            # a phrase's words are in order and adjacent
            order += m.last_word - m.first_word
            distance -= m.last_word - m.first_word
        if k + 1 < len(matches):
            nxt = matches[k + 1]
            if min(nxt.ids, default=-1) > min(m.ids, default=-1):
                order += 1
            distance -= min(nxt.first_word - m.last_word, MAX_GAP)
        ids.update(m.ids)
    return len(ids), distance, order


def best_match_interval(matches: Sequence[Match], crop_size: int) -> tuple[Match, Match]:
    """First and last match of the best-scoring run of matches spanning fewer than `crop_size` words."""
    best: tuple[tuple[int, int, int], int, int] | None = None

    def consider(first: int, last: int) -> None:
        nonlocal best
        score = _interval_score(matches[first : last + 1])
        if best is None or score > best[0]:
            best = (score, first, last)

    first = 0
    first_position = matches[0].first_word
    for index, m in enumerate(matches):
        last_position = m.last_word
        if last_position - first_position >= crop_size:
            if index != 0:
                consider(first, index - 1)
            # move the interval start until this match fits
            while True:
                first += 1
                if first == len(matches):
                    first -= 1
                    break
                first_position = matches[first].first_word
                if first_position > last_position or last_position - first_position < crop_size:
                    break
    last = len(matches) - 1
    # a lone phrase longer than the window is not a candidate
    if first != last or matches[first].word_count < crop_size:
        consider(first, last)
    if best is None:
        return matches[0], matches[0]
    return matches[best[1]], matches[best[2]]


def crop_bounds(
    tokens: Sequence[Token], matches: Sequence[Match], crop_size: int, text_length: int
) -> tuple[int, int]:
    """Byte bounds of the crop window (milli's `Matcher::crop_bounds`)."""
    if matches:
        first, last = best_match_interval(matches, crop_size)
        matches_size = last.last_word - first.first_word + 1
        forward = crop_size >= matches_size
        remaining = crop_size - matches_size if forward else matches_size - crop_size
        after_start = min(last.last_token + 1, len(tokens))
        before_start = first.first_token if forward else 0
    else:
        remaining, forward, before_start, after_start = crop_size, True, 0, 0

    before = list(range(before_start - 1, -1, -1))  # token indices, walking left
    if forward:
        after = list(range(after_start, len(tokens)))
    else:
        # the window is smaller than the match: walk back from the match's end, dropping words
        after = list(range(min(after_start, len(tokens) - 1), -1, -1))
    b = a = 0  # how many tokens of `before` / `after` were taken

    while remaining > 0:
        left = tokens[before[b]] if b < len(before) else None
        right = tokens[after[a]] if a < len(after) else None
        if left is not None and right is not None:
            if left.is_separator and right.is_separator:
                if left.hard == right.hard:
                    b += 1
                    if remaining > 1:  # never end the window on a separator
                        a += 1
                elif left.hard:
                    a += 1
                else:
                    b += 1
            elif not left.is_separator and right.is_separator:
                b += 1
                remaining -= 1
            elif left.is_separator:
                a += 1
                remaining -= 1
            else:
                b += 1
                remaining -= 1
                if remaining > 0:
                    a += 1
                    remaining -= 1
        elif left is not None:
            b += 1
            if not left.is_separator:
                remaining -= 1
        elif right is not None:
            a += 1
            if not right.is_separator:
                remaining -= 1
        else:
            break

    start = tokens[before[b]].end if b < len(before) else 0
    end = tokens[after[a]].start if a < len(after) else text_length
    return start, end


# --------------------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------------------


def formatted_options(
    *,
    attributes_to_highlight: Sequence[str] | None,
    attributes_to_crop: Sequence[str] | None,
    crop_length: int,
    to_retrieve: Sequence[str],
    displayed: Sequence[str],
    fields: Sequence[str],
) -> dict[str, FormatOptions]:
    """Which attributes `_formatted` holds and how each is formatted (empty: no `_formatted`).

    `fields` are the index's field names (top-level and nested) in field-id order, `displayed` and
    `to_retrieve` the displayed and retrieved ones among them. Highlight/crop rules name displayed
    fields (`*`: all of them; `attr:N` crops `attr` to N words); when any applies, every retrieved
    field is added unformatted. The result follows `fields` order, as Meilisearch's field-id map.
    """
    known, shown = set(fields), set(displayed)
    options: dict[str, FormatOptions] = {}
    for attr in attributes_to_highlight or ():
        if attr == "*":
            options.update(dict.fromkeys(displayed, FormatOptions(highlight=True)))
            break
        if attr in known and attr in shown:
            options[attr] = FormatOptions(highlight=True)
    for attr in attributes_to_crop or ():
        name, sep, length_text = attr.rpartition(":")
        if sep:
            parsed = parse_uint_param(length_text)
            length = crop_length if parsed is None else parsed
        else:
            name, length = attr, crop_length
        targets = list(displayed) if name == "*" else ([name] if name in known and name in shown else [])
        for target in targets:
            current = options.get(target)
            options[target] = FormatOptions(current.highlight if current else False, length)
    if options:
        for name in to_retrieve:
            options.setdefault(name, FormatOptions())
    rank = {name: i for i, name in enumerate(fields)}
    return {name: options[name] for name in sorted(options, key=lambda n: rank.get(n, len(rank)))}


def format_document(
    document: dict[str, Any],
    highlighter: Highlighter,
    options: Mapping[str, FormatOptions],
    *,
    displayed: Sequence[str],
    show_matches_position: bool,
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]] | None]:
    """`_formatted` (`{}` when there is nothing to format) and `_matchesPosition` (None unless asked).

    `document` is the stored document; `displayed` the displayed field names (positions are computed
    on all of them, `_formatted` keeps the attributes of `options`). The hits of one search share a
    `DocumentFormatter` instead."""
    return DocumentFormatter(highlighter, options, displayed, show_matches_position).format(document)


class DocumentFormatter:
    """`format_document` for the hits of one search: what each path of the documents gets (whether it
    is displayed, its merged format options) is worked out once per path, not once per hit."""

    def __init__(
        self,
        highlighter: Highlighter,
        options: Mapping[str, FormatOptions],
        displayed: Sequence[str],
        show_matches_position: bool,
    ) -> None:
        self.highlighter = highlighter
        self.options = options
        self.displayed = displayed
        self.show_matches_position = show_matches_position
        self.rules = [(name, opt) for name, opt in options.items() if opt.should_format]
        self.option_names = list(options)
        self.selectors = list(displayed) if show_matches_position else self.option_names
        self._shown: dict[str, bool] = {}
        self._formats: dict[str, FormatOptions | None] = {}

    def _is_shown(self, path: str) -> bool:
        shown = self._shown.get(path)
        if shown is None:
            shown = self._shown[path] = any(
                _contained_in(s, path) or _contained_in(path, s) for s in self.displayed
            )
        return shown

    def _format_of(self, path: str) -> FormatOptions | None:
        if path in self._formats:
            return self._formats[path]
        fmt: FormatOptions | None = None
        for name, opt in self.rules:
            if is_faceted_by(name, path) or is_faceted_by(path, name):
                fmt = opt if fmt is None else fmt.merge(opt)
        self._formats[path] = fmt
        return fmt

    def format(
        self, document: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]] | None]:
        options = self.options
        matches: dict[str, list[dict[str, Any]]] | None = {} if self.show_matches_position else None
        if not options and matches is None:
            return {}, None
        highlighter = self.highlighter
        selected = select_fields(document, self.selectors)

        def leaf(key: str, indices: tuple[int, ...], value: Any) -> Any:
            if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
                return value
            text = (
                value
                if isinstance(value, str)
                else to_json(value)
                if isinstance(value, (int, float))
                else None
            )
            if text is None:
                return value
            fmt = self._format_of(key)
            if matches is None:
                return highlighter.format(text, fmt) if fmt is not None else text
            formatted, bounds = highlighter.format_and_bounds(text, fmt, indices)
            if bounds:
                matches[key] = bounds  # a later array element replaces an earlier one, as in Meilisearch
            return formatted

        def walk_object(obj: dict[str, Any], base: str, indices: tuple[int, ...]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for key, value in obj.items():
                path = key if not base else f"{base}.{key}"
                if not self._is_shown(path):
                    out[key] = value
                elif isinstance(value, dict):
                    out[key] = walk_object(value, path, indices)
                elif isinstance(value, list):
                    out[key] = walk_array(value, path, indices)
                else:
                    out[key] = leaf(path, indices, value)
            return out

        def walk_array(values: list[Any], base: str, indices: tuple[int, ...]) -> list[Any]:
            out: list[Any] = []
            for i, value in enumerate(values):
                here = (*indices, i)
                if isinstance(value, dict):
                    out.append(walk_object(value, base, here))
                elif isinstance(value, list):
                    out.append(walk_array(value, base, here))
                else:
                    out.append(leaf(base, here, value))
            return out

        mapped = walk_object(selected, "", ())
        formatted = select_fields(mapped, self.option_names) if options else {}
        if matches is not None:
            matches = {key: matches[key] for key in sorted(matches)}
        return formatted, matches
