"""Helpers shared by the test suites: a fake clock and a driver that runs jobs to the end."""

from __future__ import annotations

from typing import Any

from cairn import InlineScheduler, Job, Pipeline, advance_phase
from cairn.storage.base import Storage


class FakeClock:
    """A clock in Unix milliseconds that moves only when told to."""

    def __init__(self, start_ms: int = 1_800_000_000_000) -> None:
        self.now_ms = start_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now_ms += int(seconds * 1000)

    def monotonic(self) -> float:
        """The same time in seconds, for InlineScheduler(now=...)."""
        return self.now_ms / 1000

    def sleep(self, seconds: float) -> None:
        """For InlineScheduler(sleep=...): sleeping moves the clock."""
        self.advance(seconds)


def make_scheduler(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock | None = None) -> InlineScheduler:
    """An InlineScheduler bound to advance ``pipeline`` jobs in ``storage`` (on ``clock`` when given)."""
    scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep) if clock else InlineScheduler()
    scheduler.bind(
        lambda job_id, **advance: advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **advance)
    )
    return scheduler


def job_of(storage: Storage, job_id: str) -> Job:
    """The stored job; fails the test when it is missing."""
    job = storage.get_job(job_id)
    assert job is not None, f"job {job_id} not found"
    return job
