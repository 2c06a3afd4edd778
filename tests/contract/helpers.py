"""Small helpers shared by the contract tests: a scheduler that remembers what it was asked to do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cairn import InlineScheduler, LogEntry, Pipeline, advance_phase
from cairn.storage.base import Storage
from tests.support import FakeClock


@dataclass(frozen=True)
class Scheduled:
    """One call to ``schedule_advance``."""

    job_id: str
    phase: str
    delay: float
    sequence: int | None = field(default=None, compare=False)


class RecordingScheduler(InlineScheduler):
    """An InlineScheduler on a fake clock that also records every advance it was asked to schedule."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(now=clock.monotonic, sleep=clock.sleep)
        self.scheduled: list[Scheduled] = []

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        super().schedule_advance(job_id, phase=phase, sequence=sequence, delay=delay)
        self.scheduled.append(Scheduled(job_id, phase, delay, sequence))


def recording_scheduler(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> RecordingScheduler:
    """A RecordingScheduler bound to advance ``pipeline`` jobs in ``storage``."""
    scheduler = RecordingScheduler(clock)
    scheduler.bind(
        lambda job_id, **advance: advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **advance)
    )
    return scheduler


def log_messages(entries: list[LogEntry], *, kind: str | None = None) -> list[str]:
    """The messages of a job's log entries, optionally only those of one kind."""
    return [entry.message for entry in entries if kind is None or entry.kind == kind]
