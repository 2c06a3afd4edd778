"""A stalled job as the API shows it (the job view's ``stalled``, a listed job's ``stalled`` flag), by the rule of
:mod:`cairn.scheduling.recovery`: since when, why, what the sweep (or a nudge) schedules, and when the sweep acts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..core.models import Job, JobStatus, WireModel
from ..core.settings import Settings
from ..core.storage_port import Storage
from ..scheduling import recovery


class StalledView(WireModel):
    """Why a running job is not moving and what will move it."""

    since: int = Field(
        description="When it became stalled (Unix ms): its claim's expiry or its last write + idle. A map's items do "
        "not write the job, so for map_done it may come before the last item finished"
    )
    reason: Literal["unheld", "map_done"] = Field(
        description="unheld: no worker holds it; map_done: its map's items are done and the next phase never started"
    )
    why: str = Field(description="The reason in words")
    phase: str | None = Field(description="The phase the sweep or a nudge schedules again (null: none)")
    sequence: int = Field(description="The sequence the advance is scheduled at: a duplicate does nothing")
    sweep: str = Field(description='What the sweep will do ("revive: schedule publish again at sequence 7")')
    sweep_by: int | None = Field(
        description="When the sweep acts at the latest (Unix ms), from its schedule; null when its rate is unknown"
    )
    sweep_every_seconds: int | None = Field(description="How often the sweep runs (null: not a rate schedule)")

    @classmethod
    def of(cls, stall: recovery.Stall, now_ms: int, settings: Settings) -> StalledView:
        """The view of ``stall`` at ``now_ms`` under the deployment's sweep settings."""
        every = settings.sweep_every_seconds
        return cls(
            since=stall.since,
            reason=stall.reason,
            why=stall.why,
            phase=stall.phase,
            sequence=stall.sequence,
            sweep=stall.remedy,
            sweep_by=recovery.next_sweep_by(stall, now_ms, every),
            sweep_every_seconds=every,
        )


def stall_of(storage: Storage, job: Job, settings: Settings) -> recovery.Stall | None:
    """The stall of a stored ``job`` (read with its claim and map fields); a job in a map costs one more small
    read (the map's record, which counts its items done)."""
    if job.status != JobStatus.RUNNING:
        return None
    map_record = storage.get_map(job.job_id, job.fan_out.id) if job.fan_out is not None else None
    return recovery.stall_of(job, storage.clock(), idle_seconds=settings.sweep_idle_seconds, map_record=map_record)


def stalled_view(storage: Storage, job: Job, settings: Settings) -> StalledView | None:
    """The ``stalled`` of a job's view; None when it is not stalled."""
    stall = stall_of(storage, job, settings)
    return StalledView.of(stall, storage.clock(), settings) if stall is not None else None


def is_stalled_now(storage: Storage, job_id: str, settings: Settings) -> bool:
    """Whether the job is stalled now: one small read of its item (two for a job in a map)."""
    job = storage.get_current_job(job_id, payloads=False)
    return job is not None and stall_of(storage, job, settings) is not None
