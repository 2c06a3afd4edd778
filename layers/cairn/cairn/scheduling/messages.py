"""What drivers send to phase functions and to the scheduler: one advance of one job."""

from __future__ import annotations

from pydantic import Field

from ..models import WireModel


class AdvanceMessage(WireModel):
    """Advance ``phase`` of ``job_id`` (of ``owner``, in ``pipeline``), not before ``not_before`` (ms)."""

    job_id: str
    owner: str
    pipeline: str
    phase: str
    not_before: int | None = Field(default=None, description="Unix ms; only on delayed advances")


class ScheduledAdvance(WireModel):
    """An advance a phase asked for, reported back to a state machine that performs it."""

    phase: str
    delay: float = 0.0
