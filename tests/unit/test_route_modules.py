"""The route modules never import each other: what several routes share lives at server level
(`server/search.py`, `server/federation/`, `server/features.py`, `server/app_state.py`...)."""

from __future__ import annotations

import ast
from pathlib import Path

import hanzo_engine.server.routes as routes_package

ROUTES_DIR = Path(routes_package.__file__).parent
ROUTES_PACKAGE = "hanzo_engine.server.routes"


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement of `path` names (function-level ones included), absolute."""
    package = ROUTES_PACKAGE.split(".")
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            out.append((node.lineno, module))
            # `from . import x` / `from .. import routes` name modules in their aliases
            out += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return out


def test_no_route_module_imports_another() -> None:
    modules = sorted(p for p in ROUTES_DIR.glob("*.py") if p.name != "__init__.py")
    assert len(modules) > 10
    names = {p.stem for p in modules}
    found = [
        f"{path.name}:{line} imports {module}"
        for path in modules
        for line, module in _imported_modules(path)
        if module == ROUTES_PACKAGE
        or (module.startswith(ROUTES_PACKAGE + ".") and module.split(".")[3] in names)
    ]
    assert found == []


def test_the_check_sees_relative_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from .search import x\nfrom .. import search\nfrom ..routes import keys\n"
        "def f():\n    from .indexes import y\n"
    )
    imported = {module for _line, module in _imported_modules(sample)}
    assert {
        "hanzo_engine.server.routes.search",
        "hanzo_engine.server.search",
        "hanzo_engine.server.routes.keys",
        "hanzo_engine.server.routes.indexes",
    } <= imported


def test_the_route_table_lists_each_route_once() -> None:
    from hanzo_engine.server import app_state
    from hanzo_engine.server.route_table import ROUTES

    keys = [(spec.method, spec.path) for spec in ROUTES]
    assert len(keys) == len(set(keys))
    assert not hasattr(app_state, "route")  # no registration by import side effect
    for spec in ROUTES:
        module = spec.endpoint.__module__
        assert module.startswith(ROUTES_PACKAGE + "."), (spec.method, spec.path, module)


def test_the_search_workers_answer_the_search_family() -> None:
    from hanzo_engine.server.route_table import ROUTES

    assert {(spec.method, spec.path) for spec in ROUTES if spec.worker} == {
        ("POST", "/indexes/{index_uid}/search"),
        ("GET", "/indexes/{index_uid}/search"),
        ("POST", "/multi-search"),
        ("POST", "/indexes/{index_uid}/facet-search"),
        ("POST", "/indexes/{index_uid}/similar"),
        ("GET", "/indexes/{index_uid}/similar"),
    }
