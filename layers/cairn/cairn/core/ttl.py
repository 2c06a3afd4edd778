"""TTL arithmetic, in one place: when a write expires, whether a job has, and when what it keeps must be renewed.

Times are Unix milliseconds; the TTL attribute (``expiresAt``) is Unix seconds, as DynamoDB's TTL
reads it. One clock: a job lives until its TTL after its last write (every write pushes
``expiresAt``), and a job past it is absent on every read path, with its checkpoint, whether or
not the store has deleted it yet. What a job keeps beside its own record (history and input
items, offloaded objects) is written to live ``SIDE_TTLS`` TTLs and renewed at most once per TTL,
so it never expires before the job.
"""

from __future__ import annotations

import math
from datetime import timedelta

#: History and input items and offloaded objects live this many TTLs from their last (re)write.
SIDE_TTLS = 2


def seconds_of(ttl: timedelta) -> int:
    """A pipeline's TTL in whole seconds."""
    return int(ttl.total_seconds())


def expires_at(now_ms: int, ttl_seconds: int) -> int:
    """The TTL attribute (epoch seconds) of a write made at ``now_ms``."""
    return now_ms // 1000 + ttl_seconds


def is_past(expires_at_seconds: int, now_ms: int) -> bool:
    """Whether a TTL attribute has passed at ``now_ms``."""
    return expires_at_seconds * 1000 <= now_ms


def epoch_seconds(now_ms: int) -> int:
    """``now_ms`` in the unit of the TTL attribute."""
    return now_ms // 1000


def side_expires_at(now_ms: int, ttl_seconds: int) -> int:
    """The TTL attribute of a history or input item (or an object's age limit) written or renewed at ``now_ms``."""
    return expires_at(now_ms, SIDE_TTLS * ttl_seconds)


def renew_by(side_expires_at_seconds: int, ttl_seconds: int) -> int:
    """The last second a write may push the job's expiry without first renewing what expires at the given time."""
    return side_expires_at_seconds - ttl_seconds


def renewal_due(renew_by_seconds: int | None, now_ms: int) -> bool:
    """Whether a write at ``now_ms`` must first renew the job's side items (None: unknown, so yes)."""
    return renew_by_seconds is None or renew_by_seconds < epoch_seconds(now_ms)


def retention_days(ttl_hours: int) -> int:
    """Days a bucket lifecycle rule must keep an object: ``SIDE_TTLS`` TTLs after its last write, plus a day."""
    return math.ceil(SIDE_TTLS * ttl_hours / 24) + 1
