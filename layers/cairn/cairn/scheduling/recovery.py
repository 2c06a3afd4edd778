"""Jobs a dead worker left behind: which ones have stalled, and how one is picked up again.

One rule for every driver: the sweep on AWS (``cairn.aws.scheduler_handler``, through the DynamoDB
store's ``stalled_jobs``) and the local front door (:meth:`cairn.Cairn.recover`) both use it.
"""

from __future__ import annotations

from ..core.models import Job, JobStatus
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
