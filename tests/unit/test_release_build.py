"""The release's distributions, built as the release workflow builds them (``python -m build layers/cairn``): an
sdist and a wheel of cairn-lambda at the version of ``layers/cairn/pyproject.toml``, whose metadata twine passes
and names no package registry's host, and which leave the source tree as it was.

The long tier (a build of both distributions takes a few seconds): tests/conftest.py's LONG_FILES.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "layers" / "cairn"
PROJECT = tomllib.loads((LIBRARY / "pyproject.toml").read_text(encoding="utf-8"))["project"]
REGISTRY_HOSTS = re.compile(r"pypi\.(python\.)?org|pythonhosted\.org", re.IGNORECASE)
"""The package index's hosts (the escaped dots keep this file from naming them)."""


def source_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--", str(LIBRARY)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_the_sdist_and_the_wheel_are_cairn_lambda_at_the_project_s_version(tmp_path: Path) -> None:
    before = source_status()
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(LIBRARY)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    version = PROJECT["version"]
    sdist, wheel = tmp_path / f"cairn_lambda-{version}.tar.gz", tmp_path / f"cairn_lambda-{version}-py3-none-any.whl"
    assert {path.name for path in tmp_path.iterdir()} == {sdist.name, wheel.name}

    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr

    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = f"cairn_lambda-{version}.dist-info"
        metadata_text = archive.read(f"{info}/METADATA").decode()
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    metadata = HeaderParser().parsestr(metadata_text)
    assert (metadata["Name"], metadata["Version"]) == ("cairn-lambda", version)
    assert metadata["Description-Content-Type"] == "text/markdown"
    requirements = metadata.get_all("Requires-Dist", [])
    assert "boto3<2,>=1.43; extra == 'dev'" in requirements, "the dev extra holds the aws extra's requirements"
    assert not [line for line in requirements if line.startswith("cairn")], "never the other project's cairn"
    assert "Typing :: Typed" in metadata.get_all("Classifier", [])
    assert 'pip install "cairn-lambda[dev]"' in metadata.get_payload(), "the long description is the README"
    assert not REGISTRY_HOSTS.search(metadata_text)
    assert "cairn = cairn.cli:main" in entry_points
    assert "cairn/py.typed" in names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]

    with tarfile.open(sdist) as archive:
        members = {member.name.split("/", 1)[1] for member in archive.getmembers() if "/" in member.name}
    assert {"pyproject.toml", "README.md", "cairn/__init__.py", "cairn/py.typed"} <= members
    assert source_status() == before, "building wrote into layers/cairn"
