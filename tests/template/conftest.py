"""Fixtures of the template checks: the external tools, found where the Makefile installs them.

A missing tool skips its test with the reason, unless ``TEMPLATE_TOOLS_REQUIRED=1`` (what
``make test`` sets after installing them), where it fails instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bundle import python_runtime
from cairn.dev.runtimes import RuntimeNotFound, interpreter_for
from tests.template.cfn import ROOT, load_yaml_template
from tests.tools import missing

SAM_CLI = ROOT / ".venv-sam" / "bin" / "sam"
STATELINT = ROOT / "node_modules" / ".bin" / "statelint"


def tool(path: Path, install: str) -> Path:
    """The tool at ``path``; skip (or fail, when tools are required) if it is not installed."""
    if path.exists():
        return path
    missing(f"{path.relative_to(ROOT)} is missing: run `{install}` first")


@pytest.fixture(scope="session")
def sam_cli() -> Path:
    """The SAM CLI of ``.venv-sam`` (``make validate`` installs it from requirements-sam.txt)."""
    return tool(SAM_CLI, "make validate")


@pytest.fixture(scope="session")
def runtime_python() -> str:
    """The Python of the template's runtime, for ``sam build`` (on PATH, else pyenv's); skip (or fail, when tools
    are required) without."""
    try:
        return interpreter_for(str(python_runtime.chosen(load_yaml_template())))
    except RuntimeNotFound as exc:
        missing(str(exc))


@pytest.fixture(scope="session")
def statelint() -> Path:
    """statelint from ``node_modules`` (``make validate`` installs it with ``npm ci``)."""
    return tool(STATELINT, "make validate")
