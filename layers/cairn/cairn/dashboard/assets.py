"""The dashboard's files, read from the package (``cairn/dashboard/static/``), and the URLs they are served at.

The page is at ``/dashboard`` (and, from ``cairn dev``, at ``/`` and ``/index.html``); every other file at
``/assets/<name>``. The page links its files and calls the API by relative URLs, so the same files work at
the root of ``cairn dev``, of ``cairn dashboard`` and of a deployed API (``GET /dashboard``, any stage).

The script's source is native ES modules, no build step: ``index.html`` loads ``app.js`` with
``<script type="module">`` and the modules import each other by relative URL (``./api.js``). They sit beside
the page, not in subfolders: the deployed API's route ``/assets/{file}`` is one path segment.

As served, the page loads its code in one request and its style in one: its module script is the modules
combined (:mod:`cairn.dashboard.bundle`) at ``assets/app.<hash>.js`` and its stylesheet is at
``assets/app.<hash>.css``, each hash from the bytes served. A hashed file never changes at its URL, so it is
cached for a year (``immutable``: a reload sends no request for it); the page itself is revalidated on each
load (``no-cache``), so a deploy is seen at once: its new page names the new hashes. A hash that is not the
current one is no asset (404). Each module stays servable by its own name (``assets/api.js``, revalidated),
for a developer who loads one.

A name that could leave the folder (``..``, an absolute path, a hidden file) or that has no known content
type is no asset.

Every server of the files answers through :func:`reply`: each file has a validator (``ETag``, from its
bytes), so a revalidation is a ``304 Not Modified`` with no body; text files are sent gzipped to a client that
accepts it (``Vary: Accept-Encoding``).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath
from typing import NamedTuple

from .bundle import combined

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

IMMUTABLE = "public, max-age=31536000, immutable"
"""The ``Cache-Control`` of a file whose URL carries its content's hash: the same URL never has other bytes."""

HASH_LENGTH = 16
"""Hex digits of the content's SHA-256 in a hashed file's name (64 bits: no two versions meet)."""

_HASHED_NAME = re.compile(rf"^(?P<stem>[\w-]+)\.(?P<hash>[0-9a-f]{{{HASH_LENGTH}}})\.(?P<suffix>js|css)$")
_PAGE_SCRIPT = re.compile(rb'(<script type="module" src="assets/)(?P<stem>[\w-]+)(\.js")')
_PAGE_STYLE = re.compile(rb'(<link rel="stylesheet" href="assets/)(?P<stem>[\w-]+)(\.css")')


class Asset(NamedTuple):
    """A file as served: its bytes, its content type, and whether its URL names its content (cached for good)."""

    content: bytes
    content_type: str
    immutable: bool = False


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


def asset(path: str) -> Asset | None:
    """The bytes and content type of the file ``path`` names in the static folder (``""``, ``"/"``: the page).

    ``app.<hash>.js`` is the module ``app.js`` combined with its imports and ``app.<hash>.css`` the file
    ``app.css``, when the hash is that of those bytes. None for a path that is absolute or climbs out
    (``..``), a hidden file, an unknown kind of file, a file that is not there, or a hash that is not current.
    """
    if path in ("", "/"):
        path = INDEX
    hashed = _HASHED_NAME.match(path)
    if hashed is not None:
        return _hashed(hashed["stem"], hashed["suffix"], hashed["hash"])
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
    return Asset(_with_hashed_urls(content) if parts == [INDEX] else content, content_type)


def _with_hashed_urls(page: bytes) -> bytes:
    """The page loading its module script combined and its stylesheet by their hashed names."""

    def script(found: re.Match[bytes]) -> bytes:
        return _renamed(found, _combined_script(found["stem"].decode()), b".js")

    def style(found: re.Match[bytes]) -> bytes:
        return _renamed(found, _file_bytes(found["stem"].decode() + ".css"), b".css")

    return _PAGE_STYLE.sub(style, _PAGE_SCRIPT.sub(script, page))


def _renamed(found: re.Match[bytes], content: bytes | None, suffix: bytes) -> bytes:
    """A script or stylesheet tag naming its file by content hash (as it was when the file is missing)."""
    if content is None:
        return found.group()
    return found.group(1) + found["stem"] + b"." + content_hash(content).encode() + suffix + b'"'


def content_hash(content: bytes) -> str:
    """The hash a hashed file's name carries: the first hex digits of its SHA-256."""
    return hashlib.sha256(content).hexdigest()[:HASH_LENGTH]


def _hashed(stem: str, suffix: str, wanted: str) -> Asset | None:
    """The file ``<stem>.<hash>.<suffix>`` when ``wanted`` is its current hash (a script: combined)."""
    content = _combined_script(stem) if suffix == "js" else _file_bytes(f"{stem}.css")
    if content is None or content_hash(content) != wanted:
        return None
    return Asset(content, CONTENT_TYPES[f".{suffix}"], immutable=True)


def _file_bytes(name: str) -> bytes | None:
    """The bytes of the file ``name`` at the top of the static folder; None when it is not there."""
    found = static_folder() / name
    try:
        return found.read_bytes() if found.is_file() else None
    except OSError:
        return None


def _combined_script(stem: str) -> bytes | None:
    """The module ``<stem>.js`` with every module it imports, as one script; None when it is not there."""
    if _file_bytes(f"{stem}.js") is None:
        return None
    sources = tuple(
        sorted(
            (item.name, item.read_text(encoding="utf-8"))
            for item in static_folder().iterdir()
            if item.name.endswith(".js")
        )
    )
    return combined(f"{stem}.js", sources)


def is_dashboard_path(url_path: str) -> bool:
    """Whether a URL path (no query) is one the dashboard is served at: the page or ``/assets/...``."""
    return url_path in PAGE_PATHS or url_path.startswith(ASSETS_PREFIX)


def asset_at(url_path: str) -> Asset | None:
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


def reply(found: Asset | tuple[bytes, str], request_headers: Mapping[str, str]) -> AssetReply:
    """The answer to a GET of an asset (:func:`asset`, :func:`asset_at`), given the request's headers.

    ``If-None-Match`` naming the file's ETag (or ``*``) is a 304; ``Accept-Encoding`` allowing gzip gets a
    text file of 1 KB or more gzipped. Header names are matched without regard to case. A hashed file
    (:attr:`Asset.immutable`) is cached for a year; any other is revalidated on each load.
    """
    content, content_type = found[0], found[1]
    immutable = isinstance(found, Asset) and found.immutable
    wanted = {name.lower(): value for name, value in request_headers.items()}
    tag = etag(content)
    headers = {"Content-Type": content_type, **HEADERS, "ETag": tag, "Vary": "Accept-Encoding"}
    if immutable:
        headers["Cache-Control"] = IMMUTABLE
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
