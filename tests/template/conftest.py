"""Fixtures of the template checks: the external tools, found where the Makefile installs them.

A missing tool skips its test with the reason, unless ``TEMPLATE_TOOLS_REQUIRED=1`` (what
``make test`` sets after installing them), where it fails instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.template.cfn import ROOT

SAM_CLI = ROOT / ".venv-sam" / "bin" / "sam"
STATELINT = ROOT / "node_modules" / ".bin" / "statelint"


def tool(path: Path, install: str) -> Path:
    """The tool at ``path``; skip (or fail, when tools are required) if it is not installed."""
    if path.exists():
        return path
    message = f"{path.relative_to(ROOT)} is missing: run `{install}` first"
    if os.environ.get("TEMPLATE_TOOLS_REQUIRED") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def sam_cli() -> Path:
    """The SAM CLI of ``.venv-sam`` (``make validate`` installs it from requirements-sam.txt)."""
    return tool(SAM_CLI, "make validate")


@pytest.fixture(scope="session")
def statelint() -> Path:
    """statelint from ``node_modules`` (``make validate`` installs it with ``npm ci``)."""
    return tool(STATELINT, "make validate")
