"""Lessons as a run-level feature (:mod:`cairn.core.run_features`): the insights a run records, kept for later jobs.

The rules of the pipeline's memory are :mod:`cairn.core.lessons`; this feature hands a run's insights to
the store (:meth:`cairn.core.storage_port.Storage.remember`) just before each of its writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core import ttl
from ..core.models import Lesson, LogEntry
from ..core.pipeline import Pipeline
from ..core.run_features import Run, RunHooks


def lessons_in(entries: Iterable[LogEntry], job_id: str) -> list[Lesson]:
    """The insights among a journal's log entries, as lessons of ``job_id``."""
    return [
        Lesson(text=entry.message, job_id=job_id, phase=entry.phase, recorded_at=entry.timestamp)
        for entry in entries
        if entry.kind == "insight"
    ]


class Lessons:
    """Keeps the insights a run records in its pipeline's memory."""

    name = "lessons"

    def open(self, pipeline: Pipeline[Any]) -> RunHooks:
        """The keeper of one run's insights."""
        return LessonHooks()


class LessonHooks(RunHooks):
    """Before each write: the insights recorded since the last one go to the pipeline's memory."""

    def before_write(self, run: Run) -> None:
        found = lessons_in(run.journal.peek().log, run.job.job_id)
        if found:
            expires = ttl.expires_at(run.storage.clock(), ttl.seconds_of(run.pipeline.memory_ttl))
            run.storage.remember(run.pipeline.name, found, expires_at=expires)
