"""The dashboard's files, without a browser: the vendored libraries are the ones VERSIONS names, and
the page, its assets and nothing else are served under `/` and `/dashboard/` without a key."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hanzo_engine.server import dashboard
from tests.conftest import MASTER_KEY, ServerProcess

VENDOR = dashboard.STATIC / "vendor"


def versions() -> list[list[str]]:
    lines = (VENDOR / "VERSIONS").read_text().splitlines()
    return [[c.strip() for c in line.split("|")] for line in lines if line and not line.startswith("#")]


def test_vendored_files_are_the_pinned_npm_releases() -> None:
    rows = versions()
    assert {r[1] for r in rows} == {
        "meilisearch",
        "@meilisearch/instant-meilisearch",
        "instantsearch.js",
        "instantsearch.css",
    }
    script = (dashboard.STATIC.parent / "refresh_vendor.sh").read_text()
    for name, package, version, license_, sha256, integrity in rows:
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == sha256, f"{name} was edited"
        assert license_ == "MIT"
        assert integrity.startswith("sha512-")
        assert re.fullmatch(r"\d+\.\d+\.\d+", version)
        assert f"={version}\n" in script, f"{package} {version} is not the version refresh_vendor.sh pins"
        license_file = VENDOR / ("LICENSE." + package.replace("/", "-").replace("@", "_").lstrip("_"))
        assert (
            "MIT License" in license_file.read_text()
            or "Permission is hereby granted" in license_file.read_text()
        )
    vendored = {p.name for p in VENDOR.iterdir() if not p.name.startswith(("LICENSE.", "VERSIONS"))}
    assert vendored == {r[0] for r in rows}


def test_the_page_loads_only_packaged_files() -> None:
    html = dashboard.INDEX_HTML.read_text()
    refs = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert refs and all(r.startswith("dashboard/") for r in refs), refs
    for ref in refs:
        assert dashboard.asset(ref.removeprefix("dashboard/")) is not None, ref


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        Path(tmp_path_factory.mktemp("dash-files")) / "data.ms", extra_args=["--master-key", MASTER_KEY]
    ).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize(
    ("path", "media_type"),
    [
        ("/", "text/html"),
        ("/dashboard/dashboard.js", "text/javascript"),
        ("/dashboard/dashboard.css", "text/css"),
        ("/dashboard/favicon.svg", "image/svg+xml"),
        ("/dashboard/vendor/instantsearch.production.min.js", "text/javascript"),
        ("/dashboard/vendor/satellite-min.css", "text/css"),
    ],
)
def test_assets_are_served_without_a_key(secured: ServerProcess, path: str, media_type: str) -> None:
    r = httpx.get(secured.url + path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith(media_type)
    name = "index.html" if path == "/" else path.removeprefix("/dashboard/")
    assert r.content == (dashboard.STATIC / name).read_bytes()


@pytest.mark.parametrize(
    "path",
    [
        "/dashboard/nope.js",
        "/dashboard/vendor",
        "/dashboard/../__init__.py",
        "/dashboard/..%2F__init__.py",
        "/dashboard/%2E%2E/%2E%2E/app.py",
        "/dashboard/vendor/..%2F..%2Frefresh_vendor.sh",
        "/dashboard/%2Fetc%2Fpasswd",
    ],
)
def test_nothing_else_is_served(secured: ServerProcess, path: str) -> None:
    r = httpx.get(secured.url + path)
    assert r.status_code == 404
    assert r.content == b""
