"""Jobs a dead worker left behind: which ones have stalled, and how one is picked up again.

One rule for every driver: the sweep on AWS (``cairn.aws.scheduler_handler``, through the DynamoDB
store's ``stalled_jobs``) and the local front door (:meth:`cairn.Cairn.recover`) both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.models import Job, JobStatus, MapRecord
from ..core.scheduler_port import Scheduler
from ..core.settings import Settings

DEFAULT_IDLE_SECONDS: float = Settings.sweep_idle_seconds
"""How long a running job with no live claim goes without a write before it counts as stalled (the
sweep's default, ``CAIRN_SWEEP_IDLE_SECONDS``): an advance still on its way has arrived by then."""


def idle_cutoff(now_ms: int, idle_seconds: float) -> int:
    """The moment (Unix ms) before which a job's last write must lie for the job to count as idle."""
    if idle_seconds < 0:
        raise ValueError(f"idle_seconds must not be negative, got {idle_seconds}")
    return now_ms - int(idle_seconds * 1000)


def is_stalled(
    status: str,
    *,
    updated_at: int,
    lease_expires_at: int | None,
    not_before: int | None,
    now_ms: int,
    cutoff_ms: int,
) -> bool:
    """Whether a job has stalled: running, its claim (if any) expired, no backoff or sleep left to wait
    out, and no write since ``cutoff_ms``. A claim that has not expired may belong to a live worker."""
    return (
        status == JobStatus.RUNNING.value
        and (lease_expires_at or 0) <= now_ms
        and (not_before or 0) <= now_ms
        and updated_at < cutoff_ms
    )


def job_is_stalled(job: Job, now_ms: int, *, idle_seconds: float = DEFAULT_IDLE_SECONDS) -> bool:
    """:func:`is_stalled` for a job read from a store; a job past its TTL never is."""
    return not job.is_expired(now_ms) and is_stalled(
        job.status.value,
        updated_at=job.updated_at,
        lease_expires_at=job.lease_expires_at,
        not_before=job.not_before,
        now_ms=now_ms,
        cutoff_ms=idle_cutoff(now_ms, idle_seconds),
    )


def revive(scheduler: Scheduler, job_id: str, next_phase: str | None, sequence: int) -> bool:
    """Send a stalled job the advance its dead worker never sent (at its sequence, so a duplicate does
    nothing); False when the job has no next phase to advance."""
    if next_phase is None:
        return False
    scheduler.schedule_advance(job_id, phase=next_phase, sequence=sequence)
    return True


StallReason = Literal["unheld", "map_done"]
"""Why a job is stalled: no worker holds it, or its map's items are all done and the next phase never started."""


@dataclass(frozen=True)
class Stall:
    """A stalled job as the console shows it: since when, why, and what the sweep (or a nudge) schedules."""

    since: int
    """When it became stalled (Unix ms): the latest of its claim's expiry, its wake-up time and last write + idle."""
    reason: StallReason
    phase: str | None
    """The phase a revive schedules (the checkpoint's next phase); None: nothing to schedule."""
    sequence: int

    @property
    def why(self) -> str:
        """The reason in words."""
        if self.reason == "map_done":
            return f"its map's items are done and {self.phase} has not started"
        return "no worker holds it"

    @property
    def remedy(self) -> str:
        """What the sweep, or a nudge, does about it."""
        if self.phase is None:
            return "nothing: it names no phase to run next"
        return f"revive: schedule {self.phase} again at sequence {self.sequence}"


def stall_of(
    job: Job, now_ms: int, *, idle_seconds: float = DEFAULT_IDLE_SECONDS, map_record: MapRecord | None = None
) -> Stall | None:
    """The stall of ``job`` (:func:`job_is_stalled`), or None when it is not stalled.

    A job in a map (``job.fan_out``) is stalled only once the map's record (``map_record``) counts every
    item done: while items run, their workers move it (the sweep's pass schedules again any item whose
    worker is gone), so it is not shown stalled. The sweep revives both kinds alike: the next phase at the
    job's sequence, which for a map is its ``then`` (it takes up the items' results).
    """
    if not job_is_stalled(job, now_ms, idle_seconds=idle_seconds):
        return None
    fan_out = job.fan_out
    reason: StallReason = "unheld"
    if fan_out is not None:
        if map_record is None or map_record.fan_out.id != fan_out.id or map_record.done < fan_out.count:
            return None
        reason = "map_done"
    since = max(job.lease_expires_at or 0, job.not_before or 0, job.updated_at + int(idle_seconds * 1000))
    phase = job.checkpoint.next_phase if job.checkpoint else None
    return Stall(since=since, reason=reason, phase=phase, sequence=job.sequence)


def next_sweep_by(stall: Stall, now_ms: int, every_seconds: int | None) -> int | None:
    """When the sweep acts on a stall at the latest (Unix ms): one period after it began, or after now once
    that has passed (a sweep in between found it and it stalled again); None when the period is unknown."""
    if every_seconds is None:
        return None
    period = every_seconds * 1000
    return stall.since + period if stall.since + period > now_ms else now_ms + period


def why_not_stalled(
    job: Job, now_ms: int, *, idle_seconds: float = DEFAULT_IDLE_SECONDS, map_record: MapRecord | None = None
) -> str:
    """Why :func:`stall_of` finds ``job`` not stalled, in words (for a refused nudge)."""
    if job.status != JobStatus.RUNNING or job.is_expired(now_ms):
        return f"it is {job.status.value}, not running"
    if (job.lease_expires_at or 0) > now_ms:
        return f"a worker holds it (its claim runs {_later(job.lease_expires_at or 0, now_ms)})"
    if (job.not_before or 0) > now_ms:
        return f"it waits out a backoff or a sleep ({_later(job.not_before or 0, now_ms)})"
    if job.updated_at >= idle_cutoff(now_ms, idle_seconds):
        return (
            f"it was written {max(0, now_ms - job.updated_at) // 1000} s ago; it counts as stalled once it has not "
            f"moved for {idle_seconds:g} s (SweepIdleSeconds)"
        )
    if job.fan_out is not None:
        done = map_record.done if map_record is not None and map_record.fan_out.id == job.fan_out.id else 0
        return f"its map's items are still running ({done} of {job.fan_out.count} done)"
    return "it is moving"


def _later(at_ms: int, now_ms: int) -> str:
    """``at_ms`` in words relative to ``now_ms`` ("for 12 s more")."""
    return f"for {max(0, at_ms - now_ms) // 1000 + 1} s more"
