"""Lessons that carry over: the insights a job records (``ctx.insight``), kept per owner and pipeline.

A phase's ``ctx.insight(text)`` is written to the job's log with the phase's next write, as every
annotation is, and also to the pipeline's memory, just before that write: the job's storage keeps it
apart from the job, with a TTL of its own (``Pipeline(memory_ttl=...)``, 30 days by default), so a
full retry, or the job's own expiry, leaves it. A later job of the same pipeline (and, deployed, the
same owner) reads the newest ones with ``ctx.recall(limit=...)``.

A lesson is keyed by its job, phase and text: the same insight recorded again by a retried or
resumed phase replaces the one it recorded before (keeping the newer time), never adds a copy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import ttl
from .errors import InvalidInputError
from .models import Lesson

MAX_RECALL = 100
"""The most lessons one ``recall`` returns."""


@dataclass(frozen=True)
class StoredLesson:
    """A lesson as a store keeps it: the lesson and when (Unix seconds) it may be deleted."""

    lesson: Lesson
    expires_at: int

    @property
    def key(self) -> str:
        """What makes a lesson the same lesson: its job, its phase and its text."""
        return lesson_key(self.lesson)


def lesson_key(lesson: Lesson) -> str:
    """The identity of a lesson (a hex digest of its job, phase and text)."""
    identity = "\x1f".join((lesson.job_id, lesson.phase or "", lesson.text))
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32]


def checked_limit(limit: int) -> int:
    """``limit`` when it is a whole number from 1 to ``MAX_RECALL``; InvalidInputError otherwise."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL:
        raise InvalidInputError(f"recall(limit=...) takes a whole number from 1 to {MAX_RECALL}, got {limit!r}")
    return limit


def newest(stored: Iterable[StoredLesson], now_ms: int, limit: int) -> list[Lesson]:
    """The ``limit`` newest live lessons, newest first, one per key (its newest record); expired ones left out."""
    latest: dict[str, StoredLesson] = {}
    for record in stored:
        if ttl.is_past(record.expires_at, now_ms):
            continue
        kept = latest.get(record.key)
        if kept is None or record.lesson.recorded_at >= kept.lesson.recorded_at:
            latest[record.key] = record
    ordered = sorted(latest.values(), key=lambda record: (record.lesson.recorded_at, record.key), reverse=True)
    return [record.lesson for record in ordered[:limit]]


def stored(lessons: Sequence[Lesson], expires_at: int) -> list[StoredLesson]:
    """The records of ``lessons`` that expire at ``expires_at``."""
    return [StoredLesson(lesson, expires_at) for lesson in lessons]
