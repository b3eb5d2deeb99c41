"""Query string -> query terms (Meilisearch's query semantics, contract §3.4).

- Words are normalized by the index tokenizer (the same one documents went through).
- `"quoted phrase"`: its words must appear consecutively; an unclosed quote runs to the end.
- `-word` / `-"phrase"` (the `-` at the start or after whitespace): documents containing it are
  excluded. A lone `-` is ignored.
- The last word is a prefix when the query does not end with a separator and prefix search is on.
- Stop words are dropped, except the last word when it is a prefix.
- At most 10 terms are kept (a phrase counts as one term).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hanzo_engine.engine.tokenizer import Tokenizer

MAX_TERMS = 10


@dataclass
class QueryTerm:
    """One term: a word (maybe a prefix) or a phrase. `index` is its position among the terms."""

    index: int
    word: str
    original: str
    is_prefix: bool = False
    phrase: list[str] | None = None


@dataclass
class ParsedQuery:
    terms: list[QueryTerm] = field(default_factory=list)
    negative_words: list[str] = field(default_factory=list)
    negative_phrases: list[list[str]] = field(default_factory=list)

    @property
    def is_placeholder(self) -> bool:
        return not self.terms


def _segments(q: str) -> list[tuple[str, bool, bool]]:
    """Split the raw query into (text, is_phrase, negated) segments, left to right."""
    out: list[tuple[str, bool, bool]] = []
    i, n = 0, len(q)
    buf: list[str] = []

    def flush() -> None:
        if buf:
            out.append(("".join(buf), False, False))
            buf.clear()

    while i < n:
        c = q[i]
        at_word_start = i == 0 or q[i - 1].isspace()
        if c == "-" and at_word_start and i + 1 < n and not q[i + 1].isspace():
            flush()
            if q[i + 1] == '"':
                end = q.find('"', i + 2)
                end = n if end < 0 else end
                out.append((q[i + 2 : end], True, True))
                i = end + 1
            else:
                end = i + 1
                while end < n and not q[end].isspace():
                    end += 1
                out.append((q[i + 1 : end], False, True))
                i = end
            continue
        if c == '"':
            flush()
            end = q.find('"', i + 1)
            end = n if end < 0 else end
            out.append((q[i + 1 : end], True, False))
            i = end + 1
            continue
        buf.append(c)
        i += 1
    flush()
    return out


def parse_query(q: str | None, tokenizer: Tokenizer, *, prefix_search: bool = True) -> ParsedQuery:
    parsed = ParsedQuery()
    if not q or not q.strip():
        return parsed
    segments = _segments(q)
    positive: list[tuple[str, str, list[str] | None, bool]] = []  # (word, original, phrase, is_last_open)
    for seg_no, (text, is_phrase, negated) in enumerate(segments):
        words = [t for t in tokenizer.tokenize(text) if not t.is_separator and t.word]
        if negated:
            if is_phrase:
                if words:
                    parsed.negative_phrases.append([t.word for t in words])
            else:
                parsed.negative_words.extend(t.word for t in words)
            continue
        if is_phrase:
            if words:
                phrase_words = [t.word for t in words]
                positive.append((" ".join(phrase_words), text, phrase_words, False))
            continue
        encoded = text.encode()
        last_seg = seg_no == len(segments) - 1
        for k, tok in enumerate(words):
            is_last_token = last_seg and k == len(words) - 1
            # A prefix only when the query ends right after the word (no separator after it).
            open_end = is_last_token and tok.start + tok.length == len(encoded)
            original = encoded[tok.start : tok.start + tok.length].decode(errors="replace")
            positive.append((tok.word, original, None, open_end))
    kept: list[QueryTerm] = []
    for pos, (word, original, phrase, open_end) in enumerate(positive):
        is_last = pos == len(positive) - 1
        is_prefix = prefix_search and is_last and open_end and phrase is None
        if phrase is None and tokenizer.is_stop_word(word) and not is_prefix:
            continue
        kept.append(QueryTerm(index=len(kept), word=word, original=original, is_prefix=is_prefix,
                              phrase=phrase))
        if len(kept) == MAX_TERMS:
            break
    parsed.terms = kept
    return parsed
