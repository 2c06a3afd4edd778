"""What a bundle's layer installs as cairn: the released distribution by version, or a wheel of this cairn.

``cairn init`` runs from an installed cairn. Its layer's ``requirements.txt`` always pins that distribution by
version (:func:`pin`, ``cairn-lambda==X.Y.Z``), so ``sam build`` installs the release from the package index.
A cairn that is not a release (installed from a folder, a checkout, a local wheel or a VCS URL, or with a
development or local version) could not be found there: :func:`unreleased` says so, and ``cairn init`` then
also writes this cairn's wheel into ``layers/wheels/`` (:func:`build_wheel`), which the layer's build installs
in place of the release. The wheel holds the package's files as they are, with its metadata, so the layer
carries exactly the cairn the bundle was made with.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from importlib import metadata
from pathlib import Path

from ..distribution import NAME as DISTRIBUTION
from ..distribution import installed_version as distribution_version
from ..distribution import wheel_stem

WHEEL_GLOBS = (f"{wheel_stem()}-*.whl", "cairn-*.whl")
"""The wheels of cairn a bundle's ``layers/wheels`` may hold: this name's, and those made before it (``cairn-``)."""
_NOT_A_RELEASE = re.compile(r"(\.dev\d*|\+)", re.IGNORECASE)
"""A development release (``.devN``) or a local version (``+label``): never published."""
PACKAGE = Path(__file__).resolve().parents[1]
"""The installed ``cairn`` package folder (site-packages/cairn, or the checkout's for an editable install)."""
_LEFT_OUT = ("__pycache__",)
_TIMESTAMP = (1980, 1, 1, 0, 0, 0)
"""Every entry's date: the same files give the same wheel, byte for byte."""


class WheelError(Exception):
    """The installed distribution cannot be packed (cairn is on the path but not installed)."""


def wheel_name(version: str) -> str:
    """The file name of cairn ``version``'s pure-Python wheel."""
    return f"{wheel_stem()}-{version}-py3-none-any.whl"


def installed_version() -> str:
    """The installed distribution's version; WheelError when cairn is not installed."""
    version = distribution_version()
    if version is None:
        raise WheelError(
            f"cairn is importable but {DISTRIBUTION} is not installed, so there is no distribution to pin: "
            f'pip install "{DISTRIBUTION}[dev]" (from a checkout: pip install "./layers/cairn[dev]") first'
        )
    return version


def pin() -> str:
    """The requirement line that pins the installed cairn: ``cairn-lambda==X.Y.Z``."""
    return f"{DISTRIBUTION}=={installed_version()}"


def unreleased() -> bool:
    """Whether the installed cairn may not be on the package index: installed from a folder, a file or a VCS
    URL (its ``direct_url.json``, PEP 610), or with a development or local version."""
    found = metadata.distribution(DISTRIBUTION)
    if _NOT_A_RELEASE.search(found.version):
        return True
    return bool(found.read_text("direct_url.json"))


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _package_files() -> list[Path]:
    return sorted(
        path
        for path in PACKAGE.rglob("*")
        if path.is_file() and not set(path.relative_to(PACKAGE).parts) & set(_LEFT_OUT) and path.suffix != ".pyc"
    )


def build_wheel(folder: Path) -> Path:
    """Write the installed cairn's wheel into ``folder``; its path."""
    version = installed_version()
    installed = metadata.distribution(DISTRIBUTION)
    info = f"{wheel_stem()}-{version}.dist-info"
    entries: list[tuple[str, bytes]] = [
        (f"cairn/{path.relative_to(PACKAGE).as_posix()}", path.read_bytes()) for path in _package_files()
    ]
    entries.append((f"{info}/METADATA", (installed.read_text("METADATA") or "").encode()))
    entry_points = installed.read_text("entry_points.txt")
    if entry_points:
        entries.append((f"{info}/entry_points.txt", entry_points.encode()))
    wheel = "Wheel-Version: 1.0\nGenerator: cairn init\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries.append((f"{info}/WHEEL", wheel.encode()))
    record = "".join(f"{name},{_digest(data)},{len(data)}\n" for name, data in entries) + f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode()))
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / wheel_name(version)
    partial = target.with_name(f".{target.name}.partial")  # a wheel is there whole, or not at all
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            entry = zipfile.ZipInfo(name, date_time=_TIMESTAMP)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    partial.replace(target)
    return target
