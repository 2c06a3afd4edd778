"""Putting a set of files into a folder all at once: made aside, checked, moved in, put back on any failure.

The files are made in a staging folder inside the target folder (the same filesystem, so each move is a
rename). Every target path is checked before the first file moves: a folder where a file goes, a file where
a folder goes and a folder that cannot be written are refused, naming the path. Then the files move in one
by one; each file replaced is kept (a hard link, or a copy) in the staging folder until the last one is in
place. An error, Ctrl-C or SIGTERM on the way puts every replaced file back and removes every file and
folder added, so the folder is as it was.

SIGINT and SIGTERM are held while files move and acted on between two files; putting back runs with them
held too. What remains: SIGKILL (or a power cut) while files move leaves some moved in, with the files
they replaced still in the staging folder (``.cairn-init-*``).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import CairnError

STAGING_PREFIX = ".cairn-init-"
"""The staging folder's name starts so (a dotfolder, left out of the bundle)."""
KEPT = ".replaced"
"""The folder inside the staging folder that keeps the files replaced until every file is in place."""
PAUSE = "CAIRN_INIT_PAUSE"
"""A test hook: seconds to wait before each file moves in (to stop a run deterministically part way)."""
_HELD = {signal.SIGINT, signal.SIGTERM}
_LEFT_OUT = ("__pycache__",)


class PlacementError(CairnError):
    """A target path cannot take its file; nothing was written."""


class Terminated(BaseException):
    """SIGTERM arrived (raised by the handler :func:`sigterm_raises` installs, as Ctrl-C raises)."""


@dataclass
class Placed:
    """What moved in: new files, files replaced, files removed (relative paths)."""

    written: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


@contextmanager
def staging_folder(folder: Path) -> Iterator[Path]:
    """A new, empty staging folder inside ``folder``; removed afterwards, whatever happened."""
    staging: Path | None = None
    try:
        with signals_held():  # a SIGTERM right after the folder is made is acted on once it is named below
            staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=folder))
        yield staging
    finally:
        if staging is not None:
            with signals_held():
                shutil.rmtree(staging, ignore_errors=True)


def staged_files(staging: Path) -> list[str]:
    """The files made in ``staging`` (relative paths, sorted), compiled caches left out."""
    return sorted(
        path.relative_to(staging).as_posix()
        for path in staging.rglob("*")
        if path.is_file() and path.suffix != ".pyc" and not set(path.relative_to(staging).parts) & {*_LEFT_OUT, KEPT}
    )


def check_targets(folder: Path, relatives: Iterable[str]) -> None:
    """Refuse, naming the path, when a file of ``relatives`` cannot be put in ``folder``."""
    for relative in relatives:
        target = folder / relative
        parts = Path(relative).parts
        parents = [folder.joinpath(*parts[:index]) for index in range(1, len(parts))]
        for parent in parents:
            if os.path.lexists(parent) and not parent.is_dir():
                raise PlacementError(f"{parent} is a file where cairn init needs a folder: move it away first")
        if target.is_dir():
            raise PlacementError(f"{target} is a folder where cairn init writes a file: move it away first")
        existing = next((parent for parent in reversed([folder, *parents]) if parent.is_dir()), folder)
        if not os.access(existing, os.W_OK | os.X_OK):
            raise PlacementError(f"{existing} cannot be written: cairn init needs to write {relative} there")
        if target.exists() and not os.access(target, os.R_OK):
            raise PlacementError(f"{target} cannot be read: cairn init needs to compare it before replacing it")


def place(folder: Path, staging: Path, relatives: Iterable[str], *, remove: Iterable[str] = ()) -> Placed:
    """Move the ``relatives`` files of ``staging`` into ``folder`` and take the ``remove`` files out.

    A file already there with the same bytes is left alone. On any error or held signal, everything is put
    back as it was and the exception (or the signal) goes on.
    """
    placed = Placed()
    undo: list[tuple[Path, Path | None]] = []  # a target, and where its old file is kept (None: it was new)
    made: list[Path] = []
    kept_root = staging / KEPT
    with signals_held():
        try:
            for relative in relatives:
                _pause_and_check()
                source, target = staging / relative, folder / relative
                if target.is_file() and not target.is_symlink() and target.read_bytes() == source.read_bytes():
                    continue
                _make_folders(target.parent, made)
                kept = _keep(target, kept_root / relative) if os.path.lexists(target) else None
                if kept is not None and not target.is_symlink():
                    shutil.copymode(target, source)
                os.replace(source, target)
                undo.append((target, kept))
                (placed.written if kept is None else placed.replaced).append(relative)
            for relative in remove:
                _pause_and_check()
                target, kept = folder / relative, kept_root / relative
                kept.parent.mkdir(parents=True, exist_ok=True)
                os.replace(target, kept)
                undo.append((target, kept))
                placed.removed.append(relative)
        except BaseException:
            _put_back(undo, made)
            raise
    return placed


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held (pending) inside; acted on when released. Where signals cannot be held, nothing."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """Inside, SIGTERM raises :class:`Terminated` (as Ctrl-C raises KeyboardInterrupt), so clean-up runs."""

    def raise_terminated(signum: int, frame: object) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:  # not the main thread: SIGTERM keeps its handler
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _pause_and_check() -> None:
    pause = os.environ.get(PAUSE)
    if pause:
        time.sleep(float(pause))
    pending = signal.sigpending() if hasattr(signal, "sigpending") else set()
    if signal.SIGTERM in pending:
        raise Terminated
    if signal.SIGINT in pending:
        raise KeyboardInterrupt


def _make_folders(folder: Path, made: list[Path]) -> None:
    missing = [parent for parent in [folder, *folder.parents] if not parent.exists()]
    for parent in reversed(missing):
        parent.mkdir()
        made.append(parent)


def _keep(target: Path, kept: Path) -> Path:
    """A second name (or a copy) of ``target`` at ``kept``, so it can be put back."""
    kept.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(target, kept, follow_symlinks=False)
    except OSError:
        shutil.copy2(target, kept, follow_symlinks=False)
    return kept


def _put_back(undo: list[tuple[Path, Path | None]], made: list[Path]) -> None:
    for target, kept in reversed(undo):
        if kept is None:
            target.unlink(missing_ok=True)
        else:
            os.replace(kept, target)
    for folder in reversed(made):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
