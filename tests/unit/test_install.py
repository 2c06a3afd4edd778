"""``pip install ./layers/cairn`` in a fresh virtualenv gives a working library: the README runs, ``cairn`` runs.

This builds the distribution with hatchling and installs its dependencies (pip's cache and the
configured indexes make it quick after the first run). The source is copied first, to add a probe file
to it; that installing from the checkout itself leaves it clean is shown by tests/template/test_own_bundle.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "layers" / "cairn"
README = ROOT / "README.md"


def clean_environment() -> dict[str, str]:
    """The environment without anything that would put the repository's code on the path."""
    return {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONSAFEPATH"}
    }


def run(command: list[str | Path], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def readme_script() -> str:
    """The README's first two python blocks (a pipeline and how to run it), verbatim, as one script."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 2, "the README shows a pipeline and how to run it"
    return "\n".join(blocks[:2])


def test_pip_install_gives_a_library_that_runs_the_readme_without_the_aws_sdk(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(LIBRARY, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info", "*.pyc"))
    # The dashboard's files ship as package data, in subfolders too (a probe, in the copy only).
    probe_file = source / "cairn" / "dashboard" / "static" / "probe" / "probe.css"
    probe_file.parent.mkdir(parents=True)
    probe_file.write_text("body {}\n")
    static_files = sorted(
        path.relative_to(source / "cairn").as_posix()
        for path in (source / "cairn" / "dashboard" / "static").rglob("*")
        if path.is_file()
    )

    venv = tmp_path / "venv"
    created = run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    python, pip = venv / "bin" / "python", venv / "bin" / "pip"
    installed = run([pip, "install", "--quiet", "--disable-pip-version-check", "--no-compile", source], cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout[-4000:] + installed.stderr[-4000:]

    # The README's example, verbatim, in an empty directory: only the installed cairn can be imported.
    workdir = tmp_path / "work"
    workdir.mkdir()
    (tmp_path / "readme_example.py").write_text(readme_script())
    example = run([python, tmp_path / "readme_example.py"], cwd=workdir)
    assert example.returncode == 0, example.stderr
    assert example.stdout.strip() == "{'count': 3}"

    # Every package of the library and the typing marker are installed; the AWS SDK is not.
    probe = run(
        [
            python,
            "-c",
            "import importlib.util, pathlib, cairn\n"
            "root = pathlib.Path(cairn.__file__).parent\n"
            "print(root.parent.name)\n"
            "print((root / 'py.typed').is_file(), (root / 'aws' / 'pipeline.asl.json').is_file(),"
            " (root / 'features' / 'prices.json').is_file())\n"
            "print(sorted(p.parent.relative_to(root.parent).as_posix() for p in root.rglob('__init__.py')))\n"
            "print(importlib.util.find_spec('boto3'), importlib.util.find_spec('moto'))\n"
            "print(sorted(p.relative_to(root).as_posix() for p in (root / 'dashboard' / 'static').rglob('*')"
            " if p.is_file()))\n",
        ],
        cwd=workdir,
    )
    assert probe.returncode == 0, probe.stderr
    location, typed, packages, sdk, static = probe.stdout.splitlines()
    assert location == "site-packages"
    assert typed == "True True True", (
        "the typing marker, the Step Functions definition and the price table ship as package data"
    )
    expected = sorted(path.parent.relative_to(LIBRARY).as_posix() for path in (LIBRARY / "cairn").rglob("__init__.py"))
    assert packages == str(expected)
    assert sdk == "None None"
    assert static == str(static_files), "the dashboard's files ship as package data"
    no_boto3 = run([python, "-c", "import boto3"], cwd=workdir)
    assert no_boto3.returncode != 0
    assert "ModuleNotFoundError" in no_boto3.stderr

    version = run([venv / "bin" / "cairn", "--version"], cwd=workdir)
    assert version.returncode == 0, version.stderr
    project = tomllib.loads((LIBRARY / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert version.stdout.strip() == f"cairn-lambda {project['version']}"

    # Nothing was written into the repository's copy of the library.
    assert not list(LIBRARY.glob("*.egg-info"))
    assert not (LIBRARY / "build").exists()
