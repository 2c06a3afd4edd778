"""The scheduler port: ask for a job's next phase to be advanced, now or later."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class Scheduler(Protocol):
    """Something that will call ``advance_phase`` for a job, once, after ``delay`` seconds.

    Every scheduler takes its delays in seconds (a float; 0 for now), whatever it waits with.

    ``sequence`` is the job's sequence after the write that asked for the
    advance; it travels with the message, so the advance does nothing unless
    the job is still there when it arrives (None: match by phase only).
    """

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        """Arrange for ``phase`` of ``job_id`` (at ``sequence``) to be advanced after ``delay`` seconds."""
        ...


@runtime_checkable
class ItemScheduler(Scheduler, Protocol):
    """A scheduler that can also run a map's items (:class:`cairn.Map`); a map needs one."""

    def schedule_item(self, job_id: str, *, phase: str, fan_out: str, item: int, delay: float = 0.0) -> None:
        """Arrange for item ``item`` of the job's map ``fan_out`` to be run by ``phase`` after ``delay`` seconds."""
        ...


@runtime_checkable
class WakeScheduler(Scheduler, Protocol):
    """A scheduler that can advance a job of any pipeline of its owner: one waiting for its owner's share.

    Optional: a slot given back wakes the oldest job waiting for it (:mod:`cairn.features.owner_share`). Through
    a plain scheduler, only a job of the run's own pipeline is woken (by ``schedule_advance``); the others
    look again on their own.
    """

    def schedule_wake(self, job_id: str, *, pipeline: str, phase: str, sequence: int | None) -> None:
        """Arrange for ``phase`` of ``job_id``, a job of ``pipeline``, to be advanced (at ``sequence``) now."""
        ...
