"""Full-text tokenizer (native). See tokenizer.pyx and csrc/tokenizer.h."""

from collections.abc import Iterable, Sequence

UNICODE_VERSION: str
HARD_DISTANCE: int
MAX_WORD_BYTES: int
MAX_POSITIONS: int
DEFAULT_SEPARATORS: tuple[str, ...]
HARD_SEPARATORS: frozenset[str]

class Token:
    """A word (normalized) or a separator, with its byte span in the original UTF-8 text."""

    @property
    def word(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def length(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def position(self) -> int:
        """Word position (milli's: +1 per word, +8 across a hard separator); -1 for separators."""
    @property
    def is_separator(self) -> bool: ...
    @property
    def hard(self) -> bool: ...
    @property
    def is_stop_word(self) -> bool: ...
    def __hash__(self) -> int: ...

class TokenizerConfig:
    separators: tuple[str, ...]
    dictionary: tuple[str, ...]
    stop_words: frozenset[str]
    def __init__(
        self,
        separators: Iterable[str] | None = None,
        dictionary: Iterable[str] = (),
        stop_words: Iterable[str] = (),
    ) -> None: ...
    def tokenize(self, text: str) -> list[Token]: ...
    def word_positions(self, text: str, max_positions: int = ...) -> list[tuple[str, int]]: ...
    def words(self, text: str) -> list[str]: ...

def normalize(word: str) -> str: ...
def char_map(word: str) -> list[tuple[int, int]]: ...
def config(
    separators: Sequence[str] = (),
    non_separators: Sequence[str] = (),
    dictionary: Sequence[str] = (),
    stop_words: Sequence[str] = (),
) -> TokenizerConfig: ...
def tokenize(
    text: str,
    *,
    separators: Sequence[str] = (),
    non_separators: Sequence[str] = (),
    dictionary: Sequence[str] = (),
    stop_words: Sequence[str] = (),
) -> list[Token]: ...
def word_positions(
    text: str,
    *,
    separators: Sequence[str] = (),
    non_separators: Sequence[str] = (),
    dictionary: Sequence[str] = (),
    stop_words: Sequence[str] = (),
    max_positions: int = ...,
) -> list[tuple[str, int]]: ...
