"""The rules for waits: a signal delivered to the job waiting for it, and a wait that timed out."""

from __future__ import annotations

from ..errors import JobNotFoundError, TransitionRefusedError
from ..models import Checkpoint, Job, JobStatus, LogEntry, Signal
from .changes import JobChange, changed
from .history import action_entry
from .requests import SignalDelivery, WaitExpiry, Written, landed, live

NOT_WAITING: JobChange = {"waiting_for": None, "wait_deadline": None, "timeout_phase": None}
"""The wait fields of a job that waits for nothing."""


def waits_for(job: Job, name: str) -> bool:
    """Whether ``job`` is waiting for the signal ``name``."""
    return job.status == JobStatus.WAITING and job.waiting_for == name


def deliver_signal(existing: Job | None, job_id: str, request: SignalDelivery) -> Written:
    """Hand a waiting job the signal it waits for: it runs again. Any other signal is refused, stored nowhere."""
    repeated = landed(existing, request.token)
    if repeated is not None:
        return repeated
    job = live(existing, request.now_ms)
    if job is None:
        raise JobNotFoundError(job_id)
    if not waits_for(job, request.name):
        waiting = f'waits for "{job.waiting_for}"' if job.status == JobStatus.WAITING else f"is {job.status.value}"
        raise TransitionRefusedError(f'Job "{job_id}" {waiting}; no one waits for signal "{request.name}"')
    update: JobChange = {
        **NOT_WAITING,
        "status": JobStatus.RUNNING,
        "signal": Signal(name=request.name, payload=request.payload, delivered_at=request.now_ms),
        "sequence": job.sequence + 1,
        "updated_at": request.now_ms,
        "expires_at": job.expires_at_after(request.now_ms),
        "write_token": request.token,
        "pending_log": [*job.pending_log, signal_entry(request)],
    }
    delivered = changed(job, **update)
    return Written(delivered)


def signal_entry(request: SignalDelivery) -> LogEntry:
    """The log entry of a signal's delivery: which signal, from whom when known."""
    return action_entry(f'Signal "{request.name}" delivered', request.actor, request.now_ms)


def wait_expired(job: Job, sequence: int, now_ms: int) -> bool:
    """Whether the wait ``job`` entered at ``sequence`` is still on and past its deadline."""
    return (
        job.status == JobStatus.WAITING
        and job.sequence == sequence
        and job.wait_deadline is not None
        and now_ms >= job.wait_deadline
    )


def timeout_message(job: Job) -> str:
    """What a job whose wait timed out says."""
    return f'Timed out waiting for signal "{job.waiting_for}"; a resume waits for it again'


def expire_wait(existing: Job | None, request: WaitExpiry) -> Written | None:
    """Time out a wait past its deadline: continue at its timeout phase, or go to error. None: nothing to end."""
    repeated = landed(existing, request.token)
    if repeated is not None:
        return repeated
    job = live(existing, request.now_ms)
    if job is None or not wait_expired(job, request.sequence, request.now_ms):
        return None
    common: JobChange = {
        "signal": None,
        "sequence": job.sequence + 1,
        "updated_at": request.now_ms,
        "expires_at": job.expires_at_after(request.now_ms),
        "write_token": request.token,
    }
    if job.timeout_phase is not None and job.checkpoint is not None:
        checkpoint = Checkpoint(
            next_phase=job.timeout_phase,
            state=job.checkpoint.state,
            created_at=request.now_ms,
            state_version=job.checkpoint.state_version,
        )
        running: JobChange = {**common, **NOT_WAITING, "status": JobStatus.RUNNING, "checkpoint": checkpoint}
        return Written(changed(job, **running))
    # The wait stays recorded: a resume waits for the signal again rather than running the phase without it.
    failed: JobChange = {**common, "status": JobStatus.ERROR, "error": timeout_message(job)}
    return Written(changed(job, **failed))
