"""The name cairn is published under, and its version: what ``pip install`` takes and ``cairn --version`` prints.

The distribution is ``cairn-lambda``; the package it installs is imported as ``cairn``. The version is written
in one place, ``layers/cairn/pyproject.toml``: an installed cairn reads it from its metadata
(:mod:`importlib.metadata`), and a cairn used from the source tree (on a PYTHONPATH, not installed) from that
file beside the package.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

NAME = "cairn-lambda"
"""The distribution's name: ``pip install "cairn-lambda[dev]"``."""
PROJECT_FILE = Path(__file__).resolve().parents[1] / "pyproject.toml"
"""The library's project file, where the version is written (present in a source tree, not in a wheel)."""
UNKNOWN = "0+unknown"
"""The version of a cairn neither installed nor in its source tree."""


def wheel_stem() -> str:
    """The name as wheel files and ``.dist-info`` folders spell it (``cairn_lambda``)."""
    return re.sub(r"[-_.]+", "_", NAME).lower()


def installed_version() -> str | None:
    """The installed distribution's version; None when no ``cairn-lambda`` is installed."""
    try:
        return metadata.version(NAME)
    except metadata.PackageNotFoundError:
        return None


def source_version() -> str | None:
    """The version written in the source tree's ``pyproject.toml``; None outside a source tree."""
    try:
        project = tomllib.loads(PROJECT_FILE.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    version = project.get("version") if project.get("name") == NAME else None
    return version if isinstance(version, str) else None


def version() -> str:
    """cairn's version: the installed distribution's metadata, else the source tree's project file."""
    return installed_version() or source_version() or UNKNOWN


def spelled() -> str:
    """``cairn-lambda X.Y.Z``: what ``cairn --version`` prints."""
    return f"{NAME} {version()}"
