"""Time as cairn reads it: Unix milliseconds from an injectable clock.

One hook for a local stack that skips time (``cairn dev --skip-waits``): when the environment
variable ``CAIRN_CLOCK_OFFSET_FILE`` names a file when this module is imported, :func:`system_clock_ms`
adds the offset it holds (whole milliseconds, as text). The file is read again only when it changes
(its inode, size or modification time), so the clock costs one ``stat`` more; a missing or unreadable
file counts as the last offset read (0 at first). Unset (as on Lambda), nothing changes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from .settings import CLOCK_OFFSET_FILE, clock_offset_file

Clock = Callable[[], int]
"""A clock: the current time in milliseconds since the epoch (the system clock, or a test's that skips time)."""


class OffsetFile:
    """A clock offset (milliseconds) kept in a file by another process; re-read only when the file changes."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._seen: tuple[int, int, int] | None = None
        self._offset_ms = 0

    def offset_ms(self) -> int:
        """The offset the file holds now (the last one read while it is missing or unreadable)."""
        try:
            status = os.stat(self.path)
        except OSError:
            return self._offset_ms
        seen = (status.st_ino, status.st_size, status.st_mtime_ns)
        if seen != self._seen:
            try:
                with open(self.path, encoding="ascii") as file:
                    self._offset_ms = int(file.read().strip() or 0)
                self._seen = seen
            except (OSError, ValueError):  # half written by a writer that does not replace it atomically
                pass
        return self._offset_ms


OFFSET_FILE_VARIABLE = CLOCK_OFFSET_FILE
"""The environment variable naming the clock offset file (its home: :mod:`.settings`)."""

_named = clock_offset_file()
_offset_file = OffsetFile(_named) if _named else None


def system_clock_ms() -> int:
    """The current Unix time in milliseconds (plus the offset of ``CAIRN_CLOCK_OFFSET_FILE``, when set)."""
    now = time.time_ns() // 1_000_000
    if _offset_file is None:
        return now
    return now + _offset_file.offset_ms()
