"""Reload on change: watch the functions' code and start new environments when a Python file changes.

Polls modification times (no extra dependency, works on every filesystem). A change retires
every function's warm environments: the next invocation of each imports the new code, and an
invocation already running finishes on the code it started with, as after a Lambda deploy.

A change that a saved state may not survive is refused first (:func:`state_misfits`: what ``cairn template
check --states`` says, in a process of its own): the environments keep the code they loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

SCHEMAS_FILE = "state-schemas.json"
CHECK_TIMEOUT = 120.0
"""Seconds the state check of a change may take (it imports the bundle's registry) before the change is let through."""
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]

POLL_SECONDS = 0.5
_SKIPPED_FOLDERS = frozenset({"__pycache__", ".git", ".venv", "node_modules", ".aws-sam"})


def python_files(roots: Iterable[Path]) -> dict[Path, float]:
    """Every ``*.py`` under ``roots`` (caches and virtualenvs left out) with its modification time."""
    found: dict[Path, float] = {}
    for root in roots:
        if not root.is_dir():
            continue
        for path in root.rglob("*.py"):
            if _SKIPPED_FOLDERS.intersection(path.relative_to(root).parts):
                continue
            try:
                found[path] = path.stat().st_mtime
            except OSError:
                continue
    return found


def changed(before: dict[Path, float], after: dict[Path, float]) -> list[Path]:
    """Files added, removed or modified between two snapshots."""
    return sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


class CodeWatcher:
    """Calls ``on_change(paths)`` after Python files under ``roots`` change, on a thread, until stopped."""

    def __init__(self, roots: Iterable[Path], on_change: Callable[[list[Path]], None], stop: threading.Event) -> None:
        self.roots = sorted(set(roots))
        self.on_change = on_change
        self.stop = stop
        self.thread = threading.Thread(target=self._loop, name="reload", daemon=True)

    def _loop(self) -> None:
        snapshot = python_files(self.roots)
        while not self.stop.wait(POLL_SECONDS):
            current = python_files(self.roots)
            paths = changed(snapshot, current)
            if paths:
                snapshot = current
                self.on_change(paths)


def state_misfits(template: Path) -> list[str]:
    """What ``cairn template check --states`` finds wrong with the bundle's state models now, its lines as printed.

    Nothing when the template has no ``state-schemas.json`` beside it, or when the check cannot run (the code
    does not import, say: the new workers will show why).
    """
    if not (template.parent / SCHEMAS_FILE).is_file():
        return []
    inherited = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys([str(_PACKAGE_ROOT), *inherited]))}
    command = [sys.executable, "-m", "cairn", "template", "check", "--states", "--root", str(template.parent)]
    try:
        done = subprocess.run(
            [*command, "--template", template.name],
            env=environment,
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line for line in done.stderr.splitlines() if line.strip()] if done.returncode == 1 else []
