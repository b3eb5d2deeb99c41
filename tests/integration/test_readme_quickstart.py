"""The README's `## Quick start` runs verbatim against a real server and prints what the README says.

The Python blocks of the section are executed in order in one namespace (as a user pastes them into one
interpreter), with only the server URL replaced by the test server's. Every `print(...)  # shown` line
must print what its comment shows; the results are then checked again from the server's own data.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess

README = Path(__file__).resolve().parents[2] / "README.md"
README_URL = "http://127.0.0.1:7700"


def quick_start_section() -> str:
    text = README.read_text()
    start = text.index("\n## Quick start\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def python_blocks(section: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", section, re.S | re.M)


def shown_outputs(block: str) -> list[str]:
    """The comments of the block's `print(...)  # ...` lines: what the README says each one prints."""
    return [m.group(1).strip() for m in re.finditer(r"^\s*print\(.*\)\s+#\s*(.+)$", block, re.M)]


def matches_shown(printed: str, shown: str) -> bool:
    """`shown` is the printed text, optionally followed by a remark in parentheses."""
    return printed != "" and (shown == printed or shown.startswith(printed + " ("))


@pytest.fixture(scope="module")
def master_key() -> str:
    found = re.search(r"--master-key '([^']+)'", quick_start_section())
    assert found, "the quick start starts the server with a master key"
    return found.group(1)


@pytest.fixture(scope="module")
def quick_server(tmp_path_factory: pytest.TempPathFactory, master_key: str) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("quickstart") / "data.ms", extra_args=["--master-key", master_key]
    ).start()
    yield srv
    srv.stop()


def test_the_section_has_the_promised_steps() -> None:
    code = "\n".join(python_blocks(quick_start_section()))
    for needle in (
        "add_documents",
        "wait_for_task",
        "update_filterable_attributes",
        '"filter"',
        '"sort"',
        "create_key",
        "userProvided",
        "_vectors",
        '"hybrid"',
        "semanticRatio",
        '"vector"',
        "X-Hanzo-Wait-For-Task",
        "custom_headers",
    ):
        assert needle in code, needle


def test_quick_start_runs_verbatim(quick_server: ServerProcess, master_key: str) -> None:
    blocks = python_blocks(quick_start_section())
    assert len(blocks) >= 4
    namespace: dict[str, Any] = {"__name__": "__quickstart__"}
    for number, block in enumerate(blocks, 1):
        assert README_URL in block or "http" not in block, f"block {number} talks to another URL"
        code = block.replace(README_URL, quick_server.url)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README.md quick start block {number}", "exec"), namespace)
        printed = out.getvalue().splitlines()
        shown = shown_outputs(block)
        assert len(printed) == len(shown), (number, printed, shown)
        for got, expected in zip(printed, shown, strict=True):
            assert matches_shown(got, expected), (number, got, expected)

    # The same results, derived from what the server holds rather than from the README's comments.
    headers = {"Authorization": f"Bearer {master_key}"}
    with httpx.Client(base_url=quick_server.url, headers=headers, timeout=30) as http:
        movies = http.get("/indexes/movies/documents", params={"limit": 100}).json()["results"]
        action_since_2000 = sorted(
            (m for m in movies if m["genre"] == "Action" and m["year"] > 2000), key=lambda m: m["year"]
        )
        newest = sorted(movies, key=lambda m: -m["year"])[:2]
        filtered = http.post(
            "/indexes/movies/search", json={"filter": "genre = Action AND year > 2000", "sort": ["year:asc"]}
        ).json()["hits"]
        assert [h["id"] for h in filtered] == [m["id"] for m in action_since_2000]
        by_year = http.post("/indexes/movies/search", json={"sort": ["year:desc"], "limit": 2}).json()["hits"]
        assert [h["id"] for h in by_year] == [m["id"] for m in newest]

        key = namespace["key"]
        assert (key.actions, key.indexes) == (["search"], ["movies"])
        assert http.get(f"/keys/{key.key}").json()["actions"] == ["search"]

        # the chunks' vectors were stored: a vectors-only search ranks them by cosine similarity
        query = namespace["query_vector"]
        chunks = http.get(
            "/indexes/chunks/documents", params={"retrieveVectors": "true", "limit": 100}
        ).json()["results"]
        semantic = http.post(
            "/indexes/chunks/search",
            json={"vector": query, "hybrid": {"embedder": "default", "semanticRatio": 1.0}, "limit": 100},
        ).json()["hits"]

        def cosine(vector: list[float]) -> float:
            dot = sum(a * b for a, b in zip(query, vector, strict=True))
            return dot / (math.hypot(*query) * math.hypot(*vector))

        by_cosine = sorted(chunks, key=lambda c: -cosine(c["_vectors"]["default"]["embeddings"][0]))
        assert [h["id"] for h in semantic] == [c["id"] for c in by_cosine]

        # the write sent with X-Hanzo-Wait-For-Task had finished when its response came back
        last = http.get("/tasks", params={"indexUids": "chunks", "limit": 1}).json()["results"][0]
        assert (last["type"], last["status"], last["details"]["receivedDocuments"]) == (
            "documentAdditionOrUpdate",
            "succeeded",
            1,
        )
