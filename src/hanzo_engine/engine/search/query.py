"""Query string -> located query terms (Meilisearch's query semantics).

A port of milli's `located_query_terms_from_tokens`, run on the index tokenizer's tokens (the same
tokenizer documents went through, so query words and document words normalize alike):

- Every word or stop word advances the query position by 1, a hard separator by 7 more (as in
  documents, where words across `. ` are 8 apart). Positions drive the proximity (only terms at
  consecutive positions are paired), ngrams, wordPosition and exactness rules.
- `"quoted phrase"`: its words must appear consecutively; stop words inside keep their slot
  (`None`); an unclosed quote runs to the end; a hard separator inside a phrase starts a new one.
- `-word` / `-"phrase"` (the `-` at the start or after whitespace): documents containing it are
  excluded. A lone `-` is ignored.
- The last token of the query, when it is a word, is a prefix (if prefix search is on), stop word
  or not; any other stop word is dropped (its position is still consumed).
- At most 10 terms are kept (a phrase counts as one): tokens after the 10th term are ignored.

The bm25-first ranking mode (`bm25_first.py`) ORs the terms and sums BM25 over them, so a long
natural-language question (a RAG pipeline's whole question or passage) keeps every word: it parses
with `distinct=True` and `max_terms=MAX_TERMS_BM25` (1,024). A term met again (the same normalized
word, the same phrase, the same prefix flag) is not a new term: its `count` (query-term frequency)
goes up, and BM25 weighs it by that count as bm25s and SQLite FTS5 do (a repeated word is summed once
per occurrence). Up to 1,024 distinct terms are kept; tokens bringing a 1,025th are ignored, repeats
of kept terms after it still count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hanzo_engine.engine.tokenizer import Tokenizer

MAX_TERMS = 10
MAX_TERMS_BM25 = 1024  # distinct terms of the bm25-first mode
MAX_WORD_BYTES = 250


@dataclass
class QueryTerm:
    """One located term: a word (maybe a prefix) or a phrase, at query positions `qstart..qend`."""

    index: int
    word: str  # the normalized word; for a phrase its words joined by spaces
    qstart: int
    qend: int
    is_prefix: bool = False
    phrase: list[str | None] | None = None  # `None`: a stop word's slot
    count: int = 1  # query-term frequency: occurrences merged into this term (`distinct` parsing)

    @property
    def phrase_words(self) -> list[str]:
        return [w for w in self.phrase or () if w is not None]


@dataclass
class ParsedQuery:
    terms: list[QueryTerm] = field(default_factory=list)
    negative_words: list[str] = field(default_factory=list)
    negative_phrases: list[list[str | None]] = field(default_factory=list)

    @property
    def is_placeholder(self) -> bool:
        return not self.terms


class _Phrase:
    def __init__(self) -> None:
        self.words: list[str | None] = []
        self.start = self.end = 0

    def push(self, word: str | None, position: int) -> None:
        if all(w is None for w in self.words):
            self.start = position
        self.end = position
        self.words.append(word)

    def build(self, index: int) -> QueryTerm | None:
        if all(w is None for w in self.words):
            return None
        words = [w for w in self.words if w is not None]
        return QueryTerm(
            index=index, word=" ".join(words), qstart=self.start, qend=self.end, phrase=list(self.words)
        )


def parse_query(
    q: str | None,
    tokenizer: Tokenizer,
    *,
    prefix_search: bool = True,
    max_terms: int = MAX_TERMS,
    distinct: bool = False,
) -> ParsedQuery:
    """The query's terms. With `distinct`, a term equal to an earlier one is merged into it (its
    `count` goes up) and `max_terms` bounds the distinct terms (see the module docstring)."""
    parsed = ParsedQuery()
    if not q or not q.strip():
        return parsed
    raw = q.encode()
    tokens = tokenizer.tokenize(q)
    terms: list[QueryTerm] = _DistinctTerms(max_terms) if distinct else parsed.terms
    position = -1
    phrase: _Phrase | None = None
    negative_phrase = False
    negative_next = False
    encountered_whitespace = True

    def close(p: _Phrase, negative: bool) -> None:
        term = p.build(len(terms))
        if term is None:
            return
        if negative:
            parsed.negative_phrases.append(list(term.phrase or ()))
        else:
            terms.append(term)

    for i, tok in enumerate(tokens):
        text = raw[tok.start : tok.start + tok.length].decode(errors="replace")
        lemma = text if tok.is_separator else tok.word
        if not lemma:
            continue
        if len(terms) >= max_terms and not distinct:
            return parsed
        if not tok.is_separator:
            position += 1
            word = tok.word
            if len(word.encode()) > MAX_WORD_BYTES:
                word = ""
            if phrase is not None:
                phrase.push(None if tok.is_stop_word or not word else word, position)
            elif negative_next:
                if word:
                    parsed.negative_words.append(word)
                negative_next = False
            elif i + 1 < len(tokens):
                if not tok.is_stop_word and word:
                    terms.append(QueryTerm(index=len(terms), word=word, qstart=position, qend=position))
            elif word:
                terms.append(
                    QueryTerm(
                        index=len(terms), word=word, qstart=position, qend=position, is_prefix=prefix_search
                    )
                )
        else:
            if tok.hard:
                position += 7
                if phrase is not None:
                    # a hard separator inside a phrase closes it and opens the next one
                    close(phrase, negative_phrase)
                    phrase = _Phrase()
            quotes = lemma.count('"')
            if quotes:
                if phrase is not None:
                    quotes -= 1
                    close(phrase, negative_phrase)
                    negative_phrase = False
                    phrase = None
                if quotes % 2 == 1:
                    negative_phrase = negative_next
                    phrase = _Phrase()
            negative_next = phrase is None and lemma == "-" and encountered_whitespace
        encountered_whitespace = lemma[-1].isspace()
    if phrase is not None:
        close(phrase, negative_phrase)
    if distinct:
        parsed.terms = list(terms)
    return parsed


class _DistinctTerms(list[QueryTerm]):
    """The term list of `distinct` parsing: appending a term equal to a kept one counts it there;
    a new term past `limit` distinct ones is dropped."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.seen: dict[tuple[str, tuple[str | None, ...] | None, bool], QueryTerm] = {}

    def append(self, term: QueryTerm) -> None:
        key = (term.word, tuple(term.phrase) if term.phrase is not None else None, term.is_prefix)
        kept = self.seen.get(key)
        if kept is not None:
            kept.count += 1
        elif len(self) < self.limit:
            term.index = len(self)
            self.seen[key] = term
            super().append(term)
