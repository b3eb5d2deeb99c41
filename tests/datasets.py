"""Where tests and benchmarks find their dataset files, and how they read them.

A dataset is named by its path relative to a datasets root, e.g. `meilisearch/movies_1688.json` or
`ir/cranfield/cran.qry`. The roots searched, in order:

1. `$HANZO_DATASETS`, when set: a fuller copy (more collections, uncompressed files);
2. the repository's own `tests/assets/datasets`, which ships what `./dev test` needs, xz-compressed.

In each root the file is looked up as named, then with `.xz`, then with `.gz`; the readers here
decompress transparently. Tests read through `read_*`/`load_*`, which raise `DatasetMissing` (an
error: their data ships with the repository). Benchmarks call `require` first, which skips the test
when a file is in no root, so a benchmark over data the repository does not ship is skipped, not failed.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest

ENV_VAR = "HANZO_DATASETS"
REPO_DATASETS = Path(__file__).resolve().parent / "assets" / "datasets"
SUFFIXES = ("", ".xz", ".gz")


class DatasetMissing(FileNotFoundError):
    """A dataset file is in none of the roots."""


def roots() -> list[Path]:
    """The datasets roots searched, `$HANZO_DATASETS` first (read on every call: tests may set it)."""
    env = os.environ.get(ENV_VAR)
    return [Path(env), REPO_DATASETS] if env else [REPO_DATASETS]


def find(name: str) -> Path | None:
    """The file holding dataset `name` (possibly compressed), or None when no root has it."""
    for root in roots():
        for suffix in SUFFIXES:
            candidate = root / (name + suffix)
            if candidate.is_file():
                return candidate
    return None


def missing_message(name: str) -> str:
    return f"dataset missing: {name} (looked in {', '.join(str(r / name) for r in roots())}, also .xz/.gz)"


def path(name: str) -> Path:
    """Like `find`, but raises `DatasetMissing` naming the places looked in."""
    found = find(name)
    if found is None:
        raise DatasetMissing(missing_message(name))
    return found


def missing(*names: str) -> str | None:
    """The `missing_message` of the first named file in no root, or None when all exist."""
    for name in names:
        if find(name) is None:
            return missing_message(name)
    return None


def require(*names: str) -> None:
    """Skips the calling test (or module, when called at import) unless every named file exists."""
    message = missing(*names)
    if message is not None:
        pytest.skip(message, allow_module_level=True)


def open_binary(name: str) -> IO[bytes]:
    """The decompressed bytes of dataset `name` as a stream."""
    found = path(name)
    if found.suffix == ".xz":
        return lzma.open(found, "rb")
    if found.suffix == ".gz":
        return gzip.open(found, "rb")
    return found.open("rb")


def open_text(name: str, encoding: str = "utf-8") -> IO[str]:
    """The decompressed text of dataset `name` as a stream (universal newlines)."""
    return io.TextIOWrapper(open_binary(name), encoding=encoding)


def read_bytes(name: str) -> bytes:
    with open_binary(name) as f:
        return f.read()


def read_text(name: str, encoding: str = "utf-8") -> str:
    with open_text(name, encoding) as f:
        return f.read()


def load_json(name: str) -> Any:
    return json.loads(read_bytes(name))


def load_ndjson(name: str) -> list[Any]:
    """One JSON value per non-empty line (NDJSON / JSON Lines)."""
    with open_text(name) as f:
        return [json.loads(line) for line in f if line.strip()]


def load_npy(name: str) -> Any:
    """A NumPy array saved with `np.save` (no pickled objects allowed)."""
    return np.load(io.BytesIO(read_bytes(name)), allow_pickle=False)
