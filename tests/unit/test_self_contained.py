"""The repository is self-contained: no tracked source, test, benchmark, document or build file refers to a path
outside it (a sibling folder of the datasets and tools, an absolute path into the machine's work root, `__file__`
climbed above the root).

A fresh clone must run `./dev test` with nothing beside it; the data it needs ships in
`tests/assets/datasets` (see `tests/datasets.py`). Recorded benchmark results (`benchmarks/results/`) are
left out: they describe past runs, they are not read as paths.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = [
    "src",
    "tests",
    "benchmarks",
    "workloads",
    "csrc",
    "tools",
    "docs",
    "README.md",
    "dev",
    ".ci",
    "Dockerfile",
    "setup.py",
    "pyproject.toml",
]
SKIPPED_PREFIXES = ("benchmarks/results/",)
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()

# The sibling folder's name and the machine's work root, spelled apart so that this file's own
# patterns and examples do not read as references to them.
S = "sha" + "red"
W = "/" + "work/"
# (pattern, why it points outside the repository)
PATTERNS = [
    (re.compile(rf"\.\./+{S}\b"), f"a sibling `{S}` folder"),
    (re.compile(rf"(?<![\w-]){S}/(?:datasets|tools)\b"), f"the `{S}` datasets/tools folder"),
    (
        re.compile(rf"""/\s*["']{S}["']|["']{S}["']\s*,\s*["'](?:datasets|tools)["']"""),
        f"a path through a `{S}` folder",
    ),
    (re.compile(rf"(?<![\w.]){W}"), "an absolute work-root path"),
    (re.compile(r"""__file__.*["']\.\.["']"""), "`..` joined to the file's own path"),
]
# Path(__file__)[.resolve()|.absolute()] followed by .parent / .parents[N] steps
FILE_CHAIN = re.compile(
    r"__file__\s*\)(?:\.resolve\(\)|\.absolute\(\))?(?P<chain>(?:\.parent\b|\.parents\[\d+\])+)"
)
STEP = re.compile(r"\.parents\[(\d+)\]|\.parent\b")


def climb(chain: str) -> int:
    """How many directories up from the file a `.parent`/`.parents[N]` chain goes (`.parent` = 1)."""
    return sum(int(m.group(1)) + 1 if m.group(1) is not None else 1 for m in STEP.finditer(chain))


def hits(rel_path: str, text: str) -> list[str]:
    """`path:line: why: text` for each reference outside the repository in `text` (the file `rel_path`)."""
    root_steps = rel_path.count("/") + 1  # steps from the file to the repository root
    out: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        reasons = [why for pattern, why in PATTERNS if pattern.search(line)]
        for m in FILE_CHAIN.finditer(line):
            if climb(m.group("chain")) > root_steps:
                reasons.append(
                    f"`__file__` climbed {climb(m.group('chain'))} levels, the root is {root_steps} up"
                )
        dirname_calls = line[: line.find("__file__")].count("dirname(") if "__file__" in line else 0
        if dirname_calls > root_steps:
            reasons.append(
                f"`dirname` of `__file__` taken {dirname_calls} times, the root is {root_steps} up"
            )
        out.extend(f"{rel_path}:{number}: {why}: {line.strip()}" for why in reasons)
    return out


def tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    done = subprocess.run(
        ["git", "ls-files", "-z", "--", *CHECKED], cwd=ROOT, capture_output=True, check=True
    )
    return [p for p in done.stdout.decode().split("\0") if p]


def test_no_tracked_file_refers_outside_the_repository() -> None:
    files = tracked_files()
    assert "tests/datasets.py" in files or "src/hanzo_engine/__init__.py" in files, "git listed no sources"
    found: list[str] = []
    for rel in files:
        if rel == THIS or rel.startswith(SKIPPED_PREFIXES) or not (ROOT / rel).is_file():
            continue
        try:
            text = (ROOT / rel).read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue  # binary (compressed datasets)
        found.extend(hits(rel, text))
    assert not found, "references outside the repository:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        'DATASETS = Path(__file__).resolve().parents[3] / "{S}" / "datasets"',
        'MAKE = Path(__file__).resolve().parents[2].parent / "tools" / "make_corpus.py"',
        "see `../{S}/datasets/meilisearch/`",
        'sys.path.insert(0, "{W}{S}/tools")',
        "read by {S}/tools/irdata.py",
        'DATA = os.path.join(os.path.dirname(__file__), "..", "..", "datasets")',
        'DATA = os.path.join(ROOT, "{S}", "datasets")',
        "UP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))",
        'root = Path(__file__).parent.parent.parent.parent / "x"',
    ],
)
def test_detects_outside_references(line: str) -> None:
    assert hits("tests/http/test_x.py", line.replace("{S}", S).replace("{W}", W))


@pytest.mark.parametrize(
    ("path", "line"),
    [
        (
            "src/hanzo_engine/engine/tokenizer/gentables.py",
            'C = Path(__file__).resolve().parents[4] / "csrc"',
        ),
        ("tests/http/test_x.py", 'ROOT = Path(__file__).resolve().parents[2] / "tests" / "assets"'),
        ("tests/http/test_x.py", "ROOT = Path(__file__).parent.parent.parent"),
        ("tests/http/test_x.py", "ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))"),
        ("benchmarks/corpus.py", "ROOT = Path(__file__).resolve().parents[0].parent"),
        ("benchmarks/test_x.py", "on a shared 2-core machine the others mostly measure the neighbours"),
        ("tests/http/test_x.py", '{"q": "shared", "filter": "color = red"}'),
        ("tests/http/test_x.py", 'url = "https://example.com/work/items"'),
    ],
)
def test_allows_paths_inside_the_repository(path: str, line: str) -> None:
    assert hits(path, line) == []
