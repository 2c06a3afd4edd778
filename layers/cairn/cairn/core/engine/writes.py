"""What every write of the engine shares: sending it again while its outcome is unknown, and its TTL."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from .. import ttl
from ..errors import StorageError
from ..pipeline import Pipeline

logger = logging.getLogger("cairn")

#: How often a start or a rerun reads the job again after another write came in between.
START_ATTEMPTS = 5
#: How often a write whose outcome is unknown (a lost response) is sent again before the error stands.
WRITE_RESOLVE_ATTEMPTS = 5
_T = TypeVar("_T")


def resolve_write(write: Callable[[], _T], *, pause: Callable[[int], None] | None = None) -> _T:
    """Make one storage write, sending it again while its outcome is unknown.

    A retryable StorageError (a timeout, a reset connection, throttling) may
    hide a write that landed. The request carries its write token, so sending
    the same request again either applies it once or finds it landed; it is
    never assumed to have failed. ``pause`` waits before each resend (given the attempt that failed).
    """
    for attempt in range(1, WRITE_RESOLVE_ATTEMPTS + 1):
        try:
            return write()
        except StorageError as exc:
            if not exc.retryable or attempt == WRITE_RESOLVE_ATTEMPTS:
                raise
            logger.warning("Write outcome unknown (%s); sending it again (attempt %d)", exc, attempt + 1)
            if pause is not None:
                pause(attempt)
    raise AssertionError("unreachable")


def job_ttl_seconds(pipeline: Pipeline[Any]) -> int:
    """How long a job of ``pipeline`` lives after its last write, in seconds."""
    return ttl.seconds_of(pipeline.ttl)


def job_expires_at(pipeline: Pipeline[Any], now_ms: int) -> int:
    """When a job of ``pipeline`` written at ``now_ms`` expires (epoch seconds)."""
    return ttl.expires_at(now_ms, job_ttl_seconds(pipeline))
