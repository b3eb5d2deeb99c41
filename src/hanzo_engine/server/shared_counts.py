"""Counters every process of a multi-process server can read: one slot per process, in a shared file
(and `SharedGeneration`, one counter that a single process bumps).

Each process writes only its own slot and reads the others' (a word-sized store is atomic on the
platforms we run on, and a reading that is a moment old is good enough for an admission limit). The
search queue keeps its number of waiting searches here, so that `--experimental-search-queue-size`
bounds the waiting searches of the whole instance, not of each process.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Final

MAX_SLOTS: Final = 256
_WORD: Final = 8


def _map_words(path: Path, n: int) -> tuple[mmap.mmap, memoryview]:
    """`n` signed 64-bit words of the file at `path` (created, or extended, with zeros), mapped shared."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_size < n * _WORD:
            os.ftruncate(fd, n * _WORD)
        mapped = mmap.mmap(fd, n * _WORD)
    finally:
        os.close(fd)
    return mapped, memoryview(mapped).cast("q")


class SharedCounts:
    """`MAX_SLOTS` signed 64-bit counters in a file mapped by every process of the server."""

    def __init__(self, path: Path, slot: int) -> None:
        if not 0 <= slot < MAX_SLOTS:
            raise ValueError(f"slot {slot} out of range")
        self.slot = slot
        self._map, self._words = _map_words(path, MAX_SLOTS)
        self._words[slot] = 0

    def set(self, value: int) -> None:
        self._words[self.slot] = value

    def others(self) -> int:
        """The sum of every other process's counter."""
        return sum(self._words) - self._words[self.slot]

    def close(self) -> None:
        self._words[self.slot] = 0
        self._words.release()
        self._map.close()


class SharedGeneration:
    """A counter in a file mapped by every process of the server, bumped by the one process that
    changes what it stands for; the others compare it with what they saw, instead of a `stat` of
    the file that holds the data."""

    def __init__(self, path: Path) -> None:
        self._map, self._word = _map_words(path, 1)

    def value(self) -> int:
        return int(self._word[0])

    def bump(self) -> None:
        self._word[0] += 1
