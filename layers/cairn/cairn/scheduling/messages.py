"""What drivers send to phase functions and to the scheduler: one advance of one job."""

from __future__ import annotations

from pydantic import Field

from ..core.models import WireModel


class AdvanceMessage(WireModel):
    """Advance ``phase`` of ``job_id`` (of ``owner``, in ``pipeline``) at ``sequence``, not before ``not_before``.

    ``sequence`` is the job's sequence when the advance was asked for: the
    advance does nothing once the job has moved past it (a duplicate, late or
    reordered delivery).
    """

    job_id: str
    owner: str
    pipeline: str
    phase: str
    sequence: int | None = Field(default=None, ge=0, description="The job's sequence this advance is for")
    not_before: int | None = Field(default=None, description="Unix ms; only on delayed advances")
    fan_out: str | None = Field(default=None, max_length=64, description="A map item's advance: the map's id")
    item: int | None = Field(default=None, ge=0, description="A map item's advance: the item's index")


class ScheduledAdvance(WireModel):
    """An advance a phase asked for, reported back to a state machine that performs it."""

    phase: str
    sequence: int | None = None
    delay: float = 0.0


class ScheduledItem(WireModel):
    """A map item a phase asked to run, reported back to a state machine that runs it (in its ``Map`` state)."""

    job_id: str
    owner: str
    pipeline: str
    phase: str
    fan_out: str
    item: int
    delay: int = 0
    function_name: str = ""
