"""Which code ran a phase: recorded on each phase record, so that a rerun after a fix shows in the history.

``CAIRN_CODE_VERSION`` when set (a build id, a git commit); else the Lambda function's published
version when it runs one (not ``$LATEST``); else a hash of the source of the module that defines the
phase (what runs locally, and on ``$LATEST``): ``sha256:<12 hex>``.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
from collections.abc import Callable
from typing import Any

VERSION_VARIABLE = "CAIRN_CODE_VERSION"


@functools.cache
def _module_hash(module_name: str) -> str | None:
    import sys

    module = sys.modules.get(module_name)
    if module is None:
        return None
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return None
    return "sha256:" + hashlib.sha256(source.encode()).hexdigest()[:12]


def code_version(function: Callable[..., Any]) -> str | None:
    """The version of the code ``function`` (a phase) belongs to; None when nothing can tell."""
    given = os.environ.get(VERSION_VARIABLE)
    if given:
        return given[:128]
    published = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION")
    if published and published != "$LATEST":
        return f"lambda:{published}"
    return _module_hash(getattr(function, "__module__", "") or "")
