"""The dashboard's files, read from the package (``cairn/dashboard/static/``), and the URLs they are served at.

The page is at ``/dashboard`` (and, from ``cairn dev``, at ``/`` and ``/index.html``); every other file at
``/assets/<name>``. The page links its files and calls the API by relative URLs, so the same files work at
the root of ``cairn dev``, of ``cairn dashboard`` and of a deployed API (``GET /dashboard``, any stage).

The script is native ES modules, no build step: the page loads ``app.js`` with ``<script type="module">``
and the modules import each other by relative URL (``./api.js``), each served here as ``text/javascript``.
They sit beside the page, not in subfolders: the deployed API's route ``/assets/{file}`` is one path segment.

The page is served with a ``<link rel="modulepreload">`` for every module of the folder, so that the
browser fetches them all at once instead of one level of imports after another.

A name that could leave the folder (``..``, an absolute path, a hidden file) or that has no known content
type is no asset.

Every server of the files answers through :func:`reply`: each file has a validator (``ETag``, from its
bytes), so a reload is a ``304 Not Modified`` with no body; text files are sent gzipped to a client that
accepts it (``Vary: Accept-Encoding``). The files are revalidated on each load (``no-cache``): their names
carry no version, so a deploy must be seen at once.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
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
        content = found.read_bytes() if found.is_file() else None
    except OSError:
        return None
    if content is None:
        return None
    return (_with_preloads(content) if parts == [INDEX] else content), content_type


MODULE_SCRIPT = b'<script type="module"'


def _with_preloads(page: bytes) -> bytes:
    """The page with a modulepreload link for each module beside it, before its module script."""
    modules = sorted(item.name for item in static_folder().iterdir() if item.name.endswith(".js"))
    links = "".join(f'<link rel="modulepreload" href="assets/{name}">\n  ' for name in modules).encode()
    return page.replace(MODULE_SCRIPT, links + MODULE_SCRIPT, 1)


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


GZIP_MIN_BYTES = 1024
"""A smaller file is sent as it is: gzip's header and the client's work would outweigh the bytes saved."""
_COMPRESSIBLE = ("text/", "application/json", "image/svg+xml")


@dataclass(frozen=True)
class AssetReply:
    """What a server sends for a dashboard file: 200 with the (maybe gzipped) bytes, or 304 with none."""

    status: int
    headers: dict[str, str]
    body: bytes


def reply(found: tuple[bytes, str], request_headers: Mapping[str, str]) -> AssetReply:
    """The answer to a GET of an asset (:func:`asset`, :func:`asset_at`), given the request's headers.

    ``If-None-Match`` naming the file's ETag (or ``*``) is a 304; ``Accept-Encoding`` allowing gzip gets a
    text file of 1 KB or more gzipped. Header names are matched without regard to case.
    """
    content, content_type = found
    wanted = {name.lower(): value for name, value in request_headers.items()}
    tag = etag(content)
    headers = {"Content-Type": content_type, **HEADERS, "ETag": tag, "Vary": "Accept-Encoding"}
    if _matches(wanted.get("if-none-match", ""), tag):
        return AssetReply(304, headers, b"")
    if (
        len(content) >= GZIP_MIN_BYTES
        and content_type.startswith(_COMPRESSIBLE)
        and _accepts_gzip(wanted.get("accept-encoding", ""))
    ):
        return AssetReply(200, {**headers, "Content-Encoding": "gzip"}, _gzipped(content))
    return AssetReply(200, headers, content)


def etag(content: bytes) -> str:
    """The file's validator: weak, so that its gzipped and plain forms share it (they are the same file)."""
    return f'W/"{hashlib.sha256(content).hexdigest()[:20]}"'


def _matches(if_none_match: str, tag: str) -> bool:
    """Whether an ``If-None-Match`` list names ``tag`` (weak comparison) or is ``*``."""
    opaque = tag.removeprefix("W/")
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == opaque:
            return True
    return False


def _accepts_gzip(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` allows gzip (named, or ``*``, without ``q=0``)."""
    allowed: dict[str, bool] = {}
    for part in accept_encoding.lower().split(","):
        coding, _, parameters = part.strip().partition(";")
        quality = parameters.strip().removeprefix("q=").strip() if parameters.strip().startswith("q=") else "1"
        try:
            allowed[coding.strip()] = float(quality) > 0
        except ValueError:
            allowed[coding.strip()] = False
    return allowed.get("gzip", allowed.get("x-gzip", allowed.get("*", False)))


@functools.lru_cache(maxsize=64)
def _gzipped(content: bytes) -> bytes:
    """``content`` gzipped, the same bytes each time (no timestamp in the header), made once per content."""
    return gzip.compress(content, compresslevel=9, mtime=0)
