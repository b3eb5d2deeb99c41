"""The tokenizer an index uses for its documents and for queries (Meilisearch's charabia, in C).

`Tokenizer.from_settings(settings)` gives the tokenizer of an index's settings (`separatorTokens`,
`nonSeparatorTokens`, `dictionary`, `stopWords`); compiled configurations are cached, so asking again
for the same settings is a dictionary lookup. The same object must serve indexing and search: the
words a query produces are only found when the documents were cut and normalized alike.

Behaviour (details and the exact tables: csrc/tokenizer.c and tools/gentables.py, which generates them):
- Separators are charabia's default list (punctuation, spaces, `+`, math operators, ...), plus
  `separatorTokens`, minus `nonSeparatorTokens`; dictionary words are matched with them, longest
  first, case-sensitively on the original text, and are never split (`"J. R. R."`).
- Between separators the text is split where the script changes; CJK ideographs and kana, Hangul
  syllables, Thai/Lao/Khmer/Myanmar character clusters are one token each (charabia segments
  Chinese, Japanese, Korean and Thai with dictionaries instead); digit runs are never split, but
  `.` and `,` are separators, so `3.14` is `3`, `14` as in charabia.
- Words are NFKD-decomposed, lowercased, stripped of diacritics in Latin, Greek, Hebrew, Arabic and
  Thai (not Cyrillic: `й` stays distinct from `и`; `ё` folds to `е`), width-folded (fullwidth Latin,
  halfwidth katakana) and katakana is folded to hiragana; `’` becomes `'`, `œ`/`æ` become `oe`/`ae`.
- Positions: +1 per word, +8 across a hard separator (`. `, `, `, `!`, `?`, `;`, `。`, ...), capped at
  65536 per attribute for indexing, as milli.
- Stop words: compared on the normalized word, so `The` is a stop word when `the` is listed
  (Meilisearch compares them before lowercasing, which makes its stop words case-sensitive). They keep
  their position, are flagged in `tokenize`, and are left out of `word_positions`, as milli does.
- `locales` / `localizedAttributes` change nothing here: they only choose between charabia's
  language-specific segmenters and normalizers, which this tokenizer does not have.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, Final

from hanzo_engine._native import tokenizer as _native
from hanzo_engine._native.tokenizer import Token, TokenizerConfig

__all__ = [
    "DEFAULT_SEPARATORS",
    "HARD_DISTANCE",
    "HARD_SEPARATORS",
    "MAX_POSITIONS",
    "MAX_WORD_BYTES",
    "Token",
    "Tokenizer",
    "normalize",
]

DEFAULT_SEPARATORS: Final = _native.DEFAULT_SEPARATORS
HARD_SEPARATORS: Final = _native.HARD_SEPARATORS
HARD_DISTANCE: Final = _native.HARD_DISTANCE
MAX_POSITIONS: Final = _native.MAX_POSITIONS
MAX_WORD_BYTES: Final = _native.MAX_WORD_BYTES


def normalize(word: str) -> str:
    """Normalized form of `word` as one token (query words, synonyms, stop words, dictionary)."""
    return _native.normalize(word)


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(sorted({v for v in value if isinstance(v, str)}))


@functools.lru_cache(maxsize=128)
def _compile(
    separator_tokens: tuple[str, ...],
    non_separator_tokens: tuple[str, ...],
    dictionary: tuple[str, ...],
    stop_words: tuple[str, ...],
) -> TokenizerConfig:
    if separator_tokens or non_separator_tokens:
        removed = set(non_separator_tokens)
        separators: list[str] | None = [
            s for s in (*DEFAULT_SEPARATORS, *separator_tokens) if s not in removed
        ]
    else:
        separators = None
    return TokenizerConfig(separators, dictionary, stop_words)


class Tokenizer:
    """Tokenizer of one set of index settings. Immutable and thread-safe; the C loops release the GIL."""

    __slots__ = ("_config", "dictionary", "non_separator_tokens", "separator_tokens", "stop_words_setting")

    def __init__(
        self,
        *,
        separator_tokens: Iterable[str] = (),
        non_separator_tokens: Iterable[str] = (),
        dictionary: Iterable[str] = (),
        stop_words: Iterable[str] = (),
    ) -> None:
        self.separator_tokens = _strings(separator_tokens)
        self.non_separator_tokens = _strings(non_separator_tokens)
        self.dictionary = _strings(dictionary)
        self.stop_words_setting = _strings(stop_words)
        self._config = _compile(
            self.separator_tokens, self.non_separator_tokens, self.dictionary, self.stop_words_setting
        )

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Tokenizer:
        """The tokenizer of stored index settings (camelCase keys; missing keys mean defaults)."""
        return _from_settings(
            _strings(settings.get("separatorTokens")),
            _strings(settings.get("nonSeparatorTokens")),
            _strings(settings.get("dictionary")),
            _strings(settings.get("stopWords")),
        )

    @property
    def separators(self) -> tuple[str, ...]:
        """The separator strings in force (milli's `allowed_separators`)."""
        return self._config.separators

    @property
    def stop_words(self) -> frozenset[str]:
        """The stop words, normalized."""
        return self._config.stop_words

    def tokenize(self, text: str) -> list[Token]:
        """Every token, separators included, with byte spans in the UTF-8 text and word positions."""
        return self._config.tokenize(text)

    def word_positions(self, text: str, max_positions: int = MAX_POSITIONS) -> list[tuple[str, int]]:
        """What milli indexes for one attribute value: (normalized word, position), stop words and
        words over 250 bytes left out but still counted, positions below `max_positions`."""
        return self._config.word_positions(text, max_positions)

    def words(self, text: str) -> list[str]:
        """Normalized words of `text` in order, stop words included (multi-word synonyms, phrases)."""
        return self._config.words(text)

    def normalize(self, word: str) -> str:
        """Normalized form of `word` taken as one token."""
        return _native.normalize(word)

    def is_stop_word(self, normalized_word: str) -> bool:
        return normalized_word in self._config.stop_words

    @staticmethod
    def original_prefix_length(original: str, normalized_bytes: int) -> int:
        """Bytes of `original` (a token's text) that produce its first `normalized_bytes` normalized
        bytes, rounded up to whole characters: what a highlighter wraps for a prefix match."""
        consumed = produced = 0
        for original_len, normalized_len in _native.char_map(original):
            if produced >= normalized_bytes:
                break
            consumed += original_len
            produced += normalized_len
        return consumed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tokenizer) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[tuple[str, ...], ...]:
        return (self.separator_tokens, self.non_separator_tokens, self.dictionary, self.stop_words_setting)

    def __repr__(self) -> str:
        return (
            f"Tokenizer(separator_tokens={list(self.separator_tokens)}, "
            f"non_separator_tokens={list(self.non_separator_tokens)}, dictionary={list(self.dictionary)}, "
            f"stop_words={list(self.stop_words_setting)})"
        )


@functools.lru_cache(maxsize=128)
def _from_settings(
    separator_tokens: tuple[str, ...],
    non_separator_tokens: tuple[str, ...],
    dictionary: tuple[str, ...],
    stop_words: tuple[str, ...],
) -> Tokenizer:
    return Tokenizer(
        separator_tokens=separator_tokens,
        non_separator_tokens=non_separator_tokens,
        dictionary=dictionary,
        stop_words=stop_words,
    )
