"""The search preview dashboard: static files shipped inside the package, served at `/` and `/dashboard/`.

`static/index.html` is the page, `static/dashboard.{js,css}` its code, and `static/vendor/` holds the
pinned front-end libraries (instant-meilisearch, InstantSearch.js and its CSS theme) that
`refresh_vendor.sh` copies from npm; `static/vendor/VERSIONS` names them. Nothing is built at install time.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
INDEX_HTML = STATIC / "index.html"

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}


def asset(name: str) -> Path | None:
    """The file `name` (a relative path such as `vendor/satellite-min.css`) below `static/`.

    None when there is no such file, or when the name would reach outside `static/`.
    """
    if not name or name.startswith("/") or "\\" in name or "\x00" in name:
        return None
    path = (STATIC / name).resolve()
    if not path.is_relative_to(STATIC) or not path.is_file():
        return None
    return path


def media_type(path: Path) -> str:
    return MEDIA_TYPES.get(path.suffix, "text/plain; charset=utf-8")
