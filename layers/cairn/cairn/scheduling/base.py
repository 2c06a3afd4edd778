"""The scheduler port: ask for a job's next phase to be advanced, now or later."""

from __future__ import annotations

from typing import Protocol


class Scheduler(Protocol):
    """Something that will call ``advance_phase`` for a job, once, after ``delay`` seconds."""

    def schedule_advance(self, job_id: str, *, phase: str, delay: float = 0.0) -> None:
        """Arrange for ``phase`` of ``job_id`` to be advanced after ``delay`` seconds."""
        ...
