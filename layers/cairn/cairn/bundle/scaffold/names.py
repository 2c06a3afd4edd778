"""The names ``cairn new`` accepts for a pipeline, and the one error it raises."""

from __future__ import annotations

import keyword
import re
import sys

from ...core.naming import module_name as module_name  # the rule lives in cairn.core.naming

NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
"""A pipeline name ``cairn new`` accepts: lowercase words of letters and digits joined by ``-``."""
MAX_NAME = 40
"""The longest such name: its function names stay readable (``naming.SUFFIX_CHARS``)."""
PHASES = ("start", "finish")
"""The phases of a new pipeline, in order."""
RESERVED = ("cairn", "tests", "pipelines", "phases", "api", "scheduler")
"""Modules of the bundle and the library that a pipeline package may not be named after."""


class ScaffoldError(Exception):
    """A reason ``cairn new`` refuses or stops, in one line; nothing is left half-written."""


def check_name(name: str) -> str:
    """``name``'s module, or ScaffoldError saying why the name cannot be a new pipeline's."""
    if not NAME.fullmatch(name) or len(name) > MAX_NAME:
        raise ScaffoldError(
            f"invalid pipeline name {name!r}: use lowercase letters, digits and single '-' between them, "
            f"starting with a letter, at most {MAX_NAME} characters (e.g. demo-two)"
        )
    module = module_name(name)
    if keyword.iskeyword(module) or keyword.issoftkeyword(module):
        raise ScaffoldError(f"invalid pipeline name {name!r}: its module {module!r} is a Python keyword")
    if module in sys.stdlib_module_names or module in RESERVED:
        raise hides(name, module)
    return module


def hides(name: str, module: str) -> ScaffoldError:
    """The error for a name whose package would hide a module of the same name."""
    return ScaffoldError(
        f"invalid pipeline name {name!r}: a package functions/{module}/ would hide the module {module!r}"
    )
