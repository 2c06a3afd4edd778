"""Per-phase retry policy: how often a failing phase is tried, and how long to wait."""

from __future__ import annotations

import random
from dataclasses import dataclass

from .errors import InvalidInputError


@dataclass(frozen=True)
class RetryPolicy:
    """How a phase is retried when it raises.

    ``backoff`` is the base delay in seconds, doubled per attempt and capped by
    ``max_delay``; with ``jitter`` the delay is drawn between half and all of
    that. Only exceptions matching ``retry_on`` are retried; a returned
    ``Fail`` never is. The default is one attempt: no retries.
    """

    max_attempts: int = 1
    backoff: float = 1.0
    max_delay: float = 300.0
    jitter: bool = True
    retry_on: tuple[type[BaseException], ...] = (Exception,)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise InvalidInputError(f"RetryPolicy.max_attempts must be at least 1, got {self.max_attempts}")
        if self.backoff < 0 or self.max_delay < 0:
            raise InvalidInputError("RetryPolicy.backoff and max_delay must not be negative")

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether a failure of ``attempt`` (1-based) earns another attempt."""
        return attempt < self.max_attempts and isinstance(error, self.retry_on)

    def delay_for(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed ``attempt`` (1-based) before the next one."""
        capped = min(self.backoff * 2.0 ** (attempt - 1), self.max_delay)
        if not self.jitter or capped == 0:
            return capped
        draw: float = (rng or random).random()
        return capped / 2 + draw * capped / 2
