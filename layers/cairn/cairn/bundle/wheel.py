"""A wheel of the installed cairn distribution, for a bundle's layer to pin (``layers/wheels/``).

``cairn init`` runs from an installed cairn (``pip install cairn[dev]``, or editable from a checkout):
the wheel holds that package's files as they are, with its metadata, so the layer ``sam build`` makes
carries exactly the cairn the bundle was made with, on any machine, with no index to reach.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "cairn"
PACKAGE = Path(__file__).resolve().parents[1]
"""The installed ``cairn`` package folder (site-packages/cairn, or the checkout's for an editable install)."""
_LEFT_OUT = ("__pycache__",)
_TIMESTAMP = (1980, 1, 1, 0, 0, 0)
"""Every entry's date: the same files give the same wheel, byte for byte."""


class WheelError(Exception):
    """The installed distribution cannot be packed (cairn is on the path but not installed)."""


def wheel_name(version: str) -> str:
    """The file name of cairn ``version``'s pure-Python wheel."""
    return f"{DISTRIBUTION}-{version}-py3-none-any.whl"


def installed_version() -> str:
    """The installed distribution's version; WheelError when cairn is not installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise WheelError(
            "cairn is importable but not installed, so there is no distribution to pin: "
            "pip install cairn (from its folder: pip install ./layers/cairn) first"
        ) from None


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
    distribution = metadata.distribution(DISTRIBUTION)
    info = f"{DISTRIBUTION}-{version}.dist-info"
    entries: list[tuple[str, bytes]] = [
        (f"cairn/{path.relative_to(PACKAGE).as_posix()}", path.read_bytes()) for path in _package_files()
    ]
    entries.append((f"{info}/METADATA", (distribution.read_text("METADATA") or "").encode()))
    entry_points = distribution.read_text("entry_points.txt")
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
