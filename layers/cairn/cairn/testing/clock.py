"""A clock for tests that moves only when told to: a wait on it (a retry backoff, a delay) takes no real time."""

from __future__ import annotations

import time


class SkippingClock:
    """Unix milliseconds that move only when told to: ``sleep`` and ``advance`` skip time instantly."""

    def __init__(self, start_ms: int | None = None) -> None:
        self.now_ms = int(time.time() * 1000) if start_ms is None else start_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``."""
        self.now_ms += int(seconds * 1000)

    def advance_to(self, when_ms: int) -> None:
        """Move time forward to ``when_ms`` (Unix milliseconds); a moment already past changes nothing."""
        self.now_ms = max(self.now_ms, when_ms)

    def monotonic(self) -> float:
        """The time in seconds (what the inline scheduler reads)."""
        return self.now_ms / 1000

    def sleep(self, seconds: float) -> None:
        """Skip ``seconds`` at once."""
        self.advance(seconds)
