"""`tests.datasets`: the lookup order (`$HANZO_DATASETS` before the repository's copy), transparent
decompression of `.xz`/`.gz` files, and missing files raising in tests but skipping benchmarks."""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path

import numpy as np
import pytest

from tests import datasets


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path))
    return tmp_path


def test_default_root_is_the_repository_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    assert datasets.roots() == [Path(__file__).resolve().parents[1] / "assets" / "datasets"]
    assert datasets.path("meilisearch/movies_1688.json").name == "movies_1688.json.xz"
    movies = datasets.load_json("meilisearch/movies_1688.json")
    assert len(movies) == 1688 and {"id", "title", "overview", "genres"} <= set(movies[0])


def test_compressed_and_plain_files_read_alike(root: Path) -> None:
    docs = [{"id": 1, "title": "été"}, {"id": 2, "title": "b"}]
    text = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
    (root / "x").mkdir()
    (root / "x" / "plain.ndjson").write_text(text, encoding="utf-8")
    (root / "x" / "xz.ndjson.xz").write_bytes(lzma.compress(text.encode()))
    (root / "x" / "gz.ndjson.gz").write_bytes(gzip.compress(text.encode()))
    for name in ("x/plain.ndjson", "x/xz.ndjson", "x/gz.ndjson"):
        assert datasets.load_ndjson(name) == docs
        assert datasets.read_text(name) == text
    arr = np.arange(6, dtype=np.float16).reshape(2, 3)
    np.save(root / "x" / "a.npy", arr)
    (root / "x" / "b.npy.xz").write_bytes(lzma.compress((root / "x" / "a.npy").read_bytes()))
    assert (
        np.array_equal(datasets.load_npy("x/b.npy"), arr) and datasets.load_npy("x/b.npy").dtype == np.float16
    )


def test_env_root_comes_first_and_repository_copy_fills_in(root: Path) -> None:
    (root / "meilisearch").mkdir()
    (root / "meilisearch" / "movies_1688.json").write_text('[{"id": 1}]')
    assert datasets.load_json("meilisearch/movies_1688.json") == [{"id": 1}]
    # a file the fuller copy lacks still comes from the repository
    assert datasets.path("meilisearch/meteorites.json").is_relative_to(datasets.REPO_DATASETS)


def test_missing_file_raises_in_tests_and_skips_benchmarks(root: Path) -> None:
    with pytest.raises(datasets.DatasetMissing, match=r"dataset missing: ir/none/file \(looked in "):
        datasets.read_bytes("ir/none/file")
    assert datasets.find("ir/none/file") is None
    assert datasets.missing("meilisearch/movies_1688.json", "ir/none/file") == datasets.missing_message(
        "ir/none/file"
    )
    assert str(root / "ir/none/file") in datasets.missing_message("ir/none/file")
    datasets.require("meilisearch/movies_1688.json")  # present: no skip
    with pytest.raises(pytest.skip.Exception, match="dataset missing: ir/none/file"):
        datasets.require("meilisearch/movies_1688.json", "ir/none/file")
