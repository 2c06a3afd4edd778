"""TTL arithmetic, in one place: when a write expires, and whether a job or a checkpoint has.

Times are Unix milliseconds; the TTL attribute (``expiresAt``) is Unix seconds, as DynamoDB's TTL
reads it. A job or checkpoint past its TTL is treated as absent whether or not the store has
deleted it yet.
"""

from __future__ import annotations

from datetime import timedelta


def seconds_of(ttl: timedelta) -> int:
    """A pipeline's TTL in whole seconds."""
    return int(ttl.total_seconds())


def expires_at(now_ms: int, ttl_seconds: int) -> int:
    """The TTL attribute (epoch seconds) of a write made at ``now_ms``."""
    return now_ms // 1000 + ttl_seconds


def is_past(expires_at_seconds: int, now_ms: int) -> bool:
    """Whether a TTL attribute has passed at ``now_ms``."""
    return expires_at_seconds * 1000 <= now_ms


def checkpoint_outlived(created_at_ms: int, ttl_seconds: int, now_ms: int) -> bool:
    """Whether a checkpoint written at ``created_at_ms`` is older than the TTL (and so treated as absent)."""
    return created_at_ms + ttl_seconds * 1000 <= now_ms
