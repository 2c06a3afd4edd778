"""The file store's durable file operations: whole-file replaces, line appends, and reads that tell a missing file
from a bad one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from ..core.errors import CorruptJobError, StorageError

TEMP_PREFIX = ".tmp-"
"""How the name of a file being written starts, before it is renamed over its target."""

_Parsed = TypeVar("_Parsed")


def read_bytes(path: Path) -> bytes | None:
    """The bytes of ``path``; None when there is no such file (a retryable StorageError when it cannot be read)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"Cannot read {path}: {exc}", retryable=True) from exc


def read_parsed(path: Path, parse: Callable[[bytes], _Parsed]) -> _Parsed | None:
    """What ``parse`` makes of the file (None when there is none); CorruptJobError names one it cannot parse."""
    raw = read_bytes(path)
    if raw is None:
        return None
    try:
        return parse(raw)
    except (ValueError, ValidationError, RecursionError) as exc:
        raise CorruptJobError(str(path), first_line(exc)) from exc


def read_lines(path: Path) -> list[bytes]:
    """The lines of an append-only file (none when it does not exist)."""
    raw = read_bytes(path)
    return raw.splitlines() if raw is not None else []


def read_records(path: Path, parse: Callable[[bytes], _Parsed]) -> list[_Parsed]:
    """What ``parse`` makes of each line of an append-only file; a line torn by a crash mid-append is skipped."""
    records = []
    for line in read_lines(path):
        try:
            records.append(parse(line))
        except (ValueError, ValidationError):
            continue  # a line torn by a crash mid-append: the write it was part of never happened
    return records


def folder_entries(folder: Path) -> list[Path]:
    """What a folder holds (nothing when there is no such folder)."""
    try:
        return list(folder.iterdir())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"Cannot read {folder}: {exc}", retryable=True) from exc


def replace_file(path: Path, data: bytes, *, lasting: bool, temp_prefix: str = TEMP_PREFIX) -> None:
    """Write ``path`` whole or not at all: a flushed temporary file renamed over it (and, if ``lasting``, the folder
    flushed, so that the rename survives a power cut)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(prefix=temp_prefix, dir=path.parent)
    except OSError as exc:
        raise StorageError(f"Cannot write in {path.parent}: {exc}", retryable=True) from exc
    try:
        with os.fdopen(fd, "wb") as temp:
            temp.write(data)
            temp.flush()
            flush_data(temp.fileno())  # the new file is whole before it takes the target's name
        os.replace(temp_name, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        if isinstance(exc, OSError):
            raise StorageError(f"Cannot write {path}: {exc}", retryable=True) from exc
        raise
    if lasting:
        fsync_directory(path.parent)


def append_line(path: Path, data: bytes) -> None:
    """Append one line durably; a line torn by an earlier crash is left on a line of its own."""
    line = data + b"\n"
    try:
        with open(path, "a+b") as appended:
            size = os.fstat(appended.fileno()).st_size
            if size > 0 and os.pread(appended.fileno(), 1, size - 1) != b"\n":
                line = b"\n" + line  # the last append was torn by a crash: start a line of our own
            appended.write(line)
            appended.flush()
            flush_data(appended.fileno())
    except OSError as exc:
        raise StorageError(f"Cannot write {path}: {exc}", retryable=True) from exc


def first_line(exc: Exception) -> str:
    """The first line of an error's message (its type's name when it has none)."""
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def flush_data(fd: int) -> None:
    """Force a file's bytes (and its size) to disk: fdatasync where there is one (not macOS), else fsync."""
    flush = getattr(os, "fdatasync", None) or os.fsync
    flush(fd)


def fsync_directory(directory: Path) -> None:
    """Flush a folder, so that the names made or renamed in it survive a power cut (best effort)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
