"""Which code ran a phase: recorded on each phase record, so that a rerun after a fix shows in the history.

``CAIRN_CODE_VERSION`` when set (a build id, a git commit); else the Lambda function's published
version when it runs one (not ``$LATEST``); else a hash of the source of the module that defines the
phase (what runs locally, and on ``$LATEST``): ``sha256:<12 hex>``.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable
from typing import Any

from .settings import CODE_VERSION, deployed_code_version

VERSION_VARIABLE = CODE_VERSION
"""The environment variable naming the code version (its home: :mod:`.settings`)."""


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
    return deployed_code_version() or _module_hash(getattr(function, "__module__", "") or "")
