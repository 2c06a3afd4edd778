"""Reload on change: watch the functions' code and start new environments when a Python file changes.

Polls modification times (no extra dependency, works on every filesystem). A change retires
every function's warm environments: the next invocation of each imports the new code, and an
invocation already running finishes on the code it started with, as after a Lambda deploy.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path

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
