"""Whether a Lambda ``Handler`` resolves in its code folder: a module file there whose attribute is callable.

The handlers of one folder are imported together in one fresh Python process, as Lambda imports
them: that folder first on ``sys.path`` (then the cairn library, which the layer provides), run from
that folder, nothing else of this process's path or environment's ``PYTHONPATH``. So a handler that
only imports here because of this checkout's path is not taken for one that works.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

IMPORT_TIMEOUT = 60.0
"""Seconds one folder's handlers may take to import."""

#: Run as ``python -I -c PROBE FOLDER LIBRARY HANDLER...``: prints {handler: problem or null} as JSON on
#: the original stdout (whatever the imported code prints goes to stderr).
PROBE = """\
import importlib, json, os, sys
folder, library, *handlers = sys.argv[1:]
sys.path[:0] = [folder, library]
os.chdir(folder)
answer = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
found = {}
for handler in handlers:
    module_name, _, name = handler.replace("/", ".").rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:
        found[handler] = f"cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        continue
    target = getattr(module, name, None)
    if target is None:
        found[handler] = f"module {module_name!r} has no attribute {name!r}"
    elif not callable(target):
        found[handler] = f"{module_name}.{name} is a {type(target).__name__}, not a function"
    else:
        found[handler] = None
answer.write(json.dumps(found))
answer.flush()
"""


def module_path(handler: str) -> str | None:
    """The module file ``MODULE.FUNCTION`` names, relative to its folder (``api/app.py``); None if malformed."""
    module_name, dot, name = handler.rpartition(".")
    if not dot or not module_name or not name:
        return None
    return module_name.replace(".", "/") + ".py"


def _file_problem(folder: Path, handler: str) -> str | None:
    """Why ``handler`` cannot name a module file of ``folder``; None when the file is there."""
    path = module_path(handler)
    if path is None:
        return f"{handler!r} is not MODULE.FUNCTION"
    if (folder / path).is_file() or (folder / path.removesuffix(".py") / "__init__.py").is_file():
        return None
    return f"no module {path}"


def _imported(folder: Path, handlers: list[str]) -> dict[str, str | None]:
    """Import ``handlers`` from ``folder`` in a fresh process: each one's problem, or None."""
    library = str(Path(__file__).resolve().parents[3])  # the folder holding the cairn package
    command = [sys.executable, "-I", "-c", PROBE, str(folder), library, *handlers]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=IMPORT_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return dict.fromkeys(handlers, f"importing it took more than {IMPORT_TIMEOUT:g}s")
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return dict.fromkeys(handlers, f"importing it ended the process: {last}")
    return {handler: answer.get(handler) for handler in handlers}


def resolve(wanted: Iterable[tuple[Path, str]]) -> dict[tuple[Path, str], str | None]:
    """For each ``(folder, handler)``: why the handler does not resolve in the folder, or None when it does.

    The module file is looked for first; the handlers whose file is there are imported, one process per folder.
    """
    found: dict[tuple[Path, str], str | None] = {}
    to_import: defaultdict[Path, list[str]] = defaultdict(list)
    for folder, handler in wanted:
        if (folder, handler) in found or handler in to_import[folder]:
            continue
        problem = _file_problem(folder, handler)
        if problem is None:
            to_import[folder].append(handler)
        else:
            found[folder, handler] = problem
    for folder, handlers in to_import.items():
        if handlers:
            found.update(((folder, handler), problem) for handler, problem in _imported(folder, handlers).items())
    return found
