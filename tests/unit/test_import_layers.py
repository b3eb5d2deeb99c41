"""The package's layers import downward only, function-level and TYPE_CHECKING imports included.

Bottom to top (docs/architecture.md §2): `_native`, `filter_parser`, `rustcompat` → `apitypes` → `engine` →
`auth`, `dump` → `scheduler` → `server` → `cli`. Packages of one layer may import each other. There is no
exceptions list: a module that needs something from above is in the wrong layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "src" / "hanzo_engine"
LAYERS = (
    ("_native", "filter_parser", "rustcompat"),
    ("apitypes",),
    ("engine",),
    ("auth", "dump"),
    ("scheduler",),
    ("server",),
    ("cli",),
)
RANK = {package: rank for rank, packages in enumerate(LAYERS) for package in packages}


def imported_modules(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in `path` (or in `source`, as if it were the
    text of `path`), relative imports resolved."""
    here = path.relative_to(ROOT.parent).with_suffix("").parts  # ("hanzo_engine", "server", "app")
    found: list[tuple[int, str]] = []
    text = path.read_text() if source is None else source
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level]  # `pkg/__init__` and `pkg/mod` alike: level 1 is `pkg`
                found.append((node.lineno, ".".join([*base, *([node.module] if node.module else [])])))
            elif node.module:
                found.append((node.lineno, node.module))
    return found


def upward_imports_of(path: Path, source: str | None = None) -> list[str]:
    parts = path.relative_to(ROOT).parts
    if len(parts) < 2 or parts[0] not in RANK:
        return []
    bad = []
    for line, module in imported_modules(path, source):
        names = module.split(".")
        if names[0] != "hanzo_engine" or len(names) < 2 or names[1] not in RANK:
            continue
        if RANK[names[1]] > RANK[parts[0]]:
            bad.append(f"{path.relative_to(ROOT.parent)}:{line} imports {module}")
    return bad


def upward_imports() -> list[str]:
    return [b for path in sorted(ROOT.rglob("*.py")) for b in upward_imports_of(path)]


def test_every_package_is_in_a_layer() -> None:
    packages = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(RANK)


def test_no_import_runs_upward() -> None:
    assert upward_imports() == []


def test_the_check_sees_relative_function_level_and_type_checking_imports() -> None:
    probe = ROOT / "engine" / "search" / "probe.py"  # never written: its text is given
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hanzo_engine.scheduler import store\n"
        "def f():\n    from ...server import app\n    from .. import index\n"
    )
    assert upward_imports_of(probe, source) == [
        "hanzo_engine/engine/search/probe.py:3 imports hanzo_engine.scheduler",
        "hanzo_engine/engine/search/probe.py:5 imports hanzo_engine.server",
    ]
    assert upward_imports_of(ROOT / "server" / "probe.py", "from ..engine import index\n") == []
