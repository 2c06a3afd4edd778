"""The dashboard's files, read from the package (``cairn/dashboard/static/``), and the URLs they are served at.

The page is at ``/dashboard`` (and, from ``cairn dev``, at ``/`` and ``/index.html``); every other file at
``/assets/<name>``. The page links its files and calls the API by relative URLs, so the same files work at
the root of ``cairn dev``, of ``cairn dashboard`` and of a deployed API (``GET /dashboard``, any stage).

The script is native ES modules, no build step: the page loads ``app.js`` with ``<script type="module">``
and the modules import each other by relative URL (``./api.js``), each served here as ``text/javascript``.
They sit beside the page, not in subfolders: the deployed API's route ``/assets/{file}`` is one path segment.

A name that could leave the folder (``..``, an absolute path, a hidden file) or that has no known content
type is no asset.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath

INDEX = "index.html"
ASSETS_PREFIX = "/assets/"
DASHBOARD_PATH = "/dashboard"
"""Where the deployed API serves the page (a public route: the page holds no secret)."""
PAGE_PATHS = frozenset({"/", "/index.html", DASHBOARD_PATH})

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
}
"""The kinds of file the dashboard is made of, by suffix; any other file is not served."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The page runs its own script and styles only and talks to its own origin only (the API beside it)."""

HEADERS = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
"""Headers every asset is served with: revalidated on each load, its type as said, never framed by another site."""


def static_folder() -> Traversable:
    """The folder of the dashboard's files inside the installed package."""
    return files(__package__ or "cairn.dashboard") / "static"


def _parts(path: str) -> list[str] | None:
    """The folder names and file name of a relative ``path``; None when it is not one that stays inside."""
    if "\\" in path or "\x00" in path:
        return None
    parts = path.split("/")
    if any(not part or part.startswith(".") for part in parts):  # "a//b", "..", ".hidden"
        return None
    return parts


def asset(path: str) -> tuple[bytes, str] | None:
    """The bytes and content type of the file ``path`` names in the static folder (``""``, ``"/"``: the page).

    None for a path that is absolute or climbs out (``..``), a hidden file, an unknown kind of file,
    or a file that is not there.
    """
    if path in ("", "/"):
        path = INDEX
    parts = _parts(path)
    if parts is None:
        return None
    content_type = CONTENT_TYPES.get(PurePosixPath(parts[-1]).suffix.lower())
    if content_type is None:
        return None
    found = static_folder().joinpath(*parts)
    try:
        return (found.read_bytes(), content_type) if found.is_file() else None
    except OSError:
        return None


def is_dashboard_path(url_path: str) -> bool:
    """Whether a URL path (no query) is one the dashboard is served at: the page or ``/assets/...``."""
    return url_path in PAGE_PATHS or url_path.startswith(ASSETS_PREFIX)


def asset_at(url_path: str) -> tuple[bytes, str] | None:
    """The asset served at a URL path (no query): the page at ``/`` and ``/index.html``, files at ``/assets/``."""
    if url_path in PAGE_PATHS:
        return asset(INDEX)
    name = url_path.removeprefix(ASSETS_PREFIX)
    if name == url_path or not name:
        return None
    return asset(name)
