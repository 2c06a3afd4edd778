"""Time as cairn reads it: Unix milliseconds from an injectable clock."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def system_clock_ms() -> int:
    """The current Unix time in milliseconds."""
    return time.time_ns() // 1_000_000
