"""The rules for the job's own life: start, claim, save, commit, pause and cancel.

Each function is one conditional write: it checks its condition against the stored job and either
returns what to write, or says why not (an error, or None for nothing to do).
"""

from __future__ import annotations

from ..errors import ClaimLostError, InvalidInputError, JobNotFoundError, TransitionRefusedError, VersionConflict
from ..models import Job, JobStatus
from .changes import JobChange, changed
from .history import action_entry, history_item, merge_usage
from .requests import Claim, Commit, Fence, Save, StartJob, Written, landed, live


def start(existing: Job | None, request: StartJob) -> Written:
    """Create the job or take it over: a new sequence and no claim fence any worker mid-phase."""
    repeated = landed(existing, request.token)
    if repeated is not None:
        return repeated
    current = live(existing, request.now_ms)
    if (current.sequence if current else None) != request.expected_sequence:
        raise VersionConflict(request.job_id)
    if current is not None and current.pipeline != request.pipeline:
        raise InvalidInputError(
            f'Job "{request.job_id}" belongs to pipeline "{current.pipeline}", not "{request.pipeline}"'
        )
    fresh = current is None or request.reset_history
    prev = None if fresh or current is None else current.history_head
    history = history_item(request.token, prev, request.journal, entry=request.checkpoint)
    if current is not None and current.pending_log:  # the operator actions since the last history write
        history = history.model_copy(update={"log": [*current.pending_log, *history.log]})
    input_changed = current is None or request.input != current.input
    common: JobChange = {
        "status": JobStatus.WAITING if request.waiting_for is not None else JobStatus.RUNNING,
        "waiting_for": request.waiting_for,
        "wait_deadline": request.wait_deadline,
        "timeout_phase": request.timeout_phase,
        "checkpoint": request.checkpoint,
        "input": request.input,
        "input_token": request.token if input_changed else current.input_token if current else None,
        "updated_at": request.now_ms,
        "expires_at": request.expires_at,
        "ttl_seconds": request.ttl_seconds,
        "write_token": request.token,
        "history_head": request.token,
        "pending_log": [],
        "share_wait": None,
    }
    if current is None:
        created: JobChange = {
            **common,
            "job_id": request.job_id,
            "pipeline": request.pipeline,
            "created_at": request.now_ms,
            "sequence": (existing.sequence + 1) if existing else 1,
            "run": (existing.run + 1) if existing else 1,
            "usage": dict(request.journal.usage),
        }
        return Written(Job(**created), history)
    update: JobChange = {
        **common,
        "error": None,
        "error_type": None,
        "error_phase": None,
        "result": None,
        "attempt": 1,
        "signal": current.signal if request.resumed else None,
        "fan_out": request.fan_out or (current.fan_out if request.resumed else None),
        "run": current.run + 1 if request.reset_history else current.run,
        "sequence": current.sequence + 1,
        "lease_owner": None,
        "lease_expires_at": None,
        "claim_sequence": None,
        "claimed_at": None,
        "not_before": request.not_before,
        "usage": merge_usage(current.usage, request.journal.usage),
        "log": [],
        "phases": [],
    }
    job = changed(current, **update)
    return Written(job, history)


def claim(existing: Job | None, request: Claim) -> Written | None:
    """The claimed job, or None when it is not claimable (absent, not running, stale, held)."""
    repeated = landed(existing, request.token)
    if repeated is not None:
        return repeated
    job = live(existing, request.now_ms)
    if job is None or job.pipeline != request.pipeline:
        return None
    if job.status != JobStatus.RUNNING or job.checkpoint is None or not request.admits(job):
        return None
    # a crash report takes over the dead claim: the run it ends started when that claim was made
    taken_over = request.crash is not None and job.lease_owner is not None
    claimed = changed(
        job,
        sequence=job.sequence + 1,
        claim_sequence=job.sequence,
        claimed_at=(job.claimed_at or request.now_ms) if taken_over else request.now_ms,
        lease_owner=request.worker,
        lease_expires_at=request.lease_expires_at,
        updated_at=request.now_ms,
        expires_at=request.expires_at,
        write_token=request.token,
        share_wait=None,
    )
    return Written(claimed)


def check_fence(existing: Job | None, job_id: str, fence: Fence, now_ms: int) -> Job:
    """The stored job, provided ``fence`` is still its current claim; else ClaimLostError."""
    job = live(existing, now_ms)
    if job is None:
        raise ClaimLostError(job_id, "the job is gone or expired")
    if job.lease_owner != fence.worker or job.claim_sequence != fence.claim_sequence:
        raise ClaimLostError(job_id, "another worker or a retry took the job over")
    return job


def save(existing: Job | None, job_id: str, fence: Fence, request: Save) -> Written:
    """Write a mid-phase checkpoint, provided the worker still holds its claim."""
    repeated = landed(existing, request.token)
    if repeated is not None:
        return repeated
    job = check_fence(existing, job_id, fence, request.now_ms)
    history = history_item(request.token, job.history_head, request.journal) if request.journal.log else None
    saved = changed(
        job,
        checkpoint=request.checkpoint,
        sequence=job.sequence + 1,
        usage=merge_usage(job.usage, request.journal.usage),
        lease_expires_at=request.lease_expires_at,
        updated_at=request.now_ms,
        expires_at=request.expires_at,
        write_token=request.token,
        history_head=request.token if history else job.history_head,
    )
    return Written(saved, history)


def commit_changes(job: Job, request: Commit) -> JobChange:
    """The fields a commit sets beyond sequence, claim, usage and history (one home for every store).

    A commit that leaves the phase (next, done, sleep, wait) consumes the signal the phase was given;
    a retry or an error keeps it, so that the phase run again reads it again.
    """
    left: JobChange = {"attempt": 1, "signal": None, "fan_out": None}
    if request.kind == "next":
        return {**left, "checkpoint": request.checkpoint}
    if request.kind == "map":
        return {**left, "checkpoint": request.checkpoint, "fan_out": request.fan_out}
    if request.kind == "release":
        return {"not_before": request.not_before if request.not_before is not None else job.not_before}
    if request.kind == "sleep":
        return {**left, "checkpoint": request.checkpoint, "not_before": request.not_before}
    if request.kind == "wait":
        return {
            **left,
            "checkpoint": request.checkpoint,
            "status": JobStatus.WAITING,
            "waiting_for": request.waiting_for,
            "wait_deadline": request.wait_deadline,
            "timeout_phase": request.timeout_phase,
        }
    if request.kind == "done":
        return {**left, "checkpoint": None, "status": JobStatus.COMPLETE, "result": request.result}
    if request.kind == "retry":
        return {"attempt": job.attempt + 1, "not_before": request.not_before}
    failure = request.record.failure
    return {  # error, unknown-phase
        "status": JobStatus.ERROR,
        "error": request.error,
        "error_type": failure.type if failure is not None else None,
        "error_phase": request.record.phase,
    }


def commit(existing: Job | None, job_id: str, fence: Fence, request: Commit) -> Written:
    """End a phase run, provided the worker still holds its claim; releases the claim."""
    repeated = landed(existing, request.token)
    if repeated is not None:
        return repeated
    job = check_fence(existing, job_id, fence, request.now_ms)
    history = None
    pending = job.pending_log
    if request.kind != "release":
        history = history_item(request.token, job.history_head, request.journal, request.record, entry=request.entry)
        moved = moved_actions(request)  # the actions the claim saw; any later one stays pending
        if moved:
            history = history.model_copy(update={"log": [*job.pending_log[:moved], *history.log]})
            pending = job.pending_log[moved:]
    change: JobChange = {"not_before": None}
    change.update(commit_changes(job, request))
    update: JobChange = {
        **change,
        "sequence": job.sequence + 1,
        "usage": merge_usage(job.usage, request.journal.usage),
        "lease_owner": None,
        "lease_expires_at": None,
        "claim_sequence": None,
        "claimed_at": None,
        "updated_at": request.now_ms,
        "expires_at": request.expires_at,
        "write_token": request.token,
        "history_head": request.token if history is not None else job.history_head,
        "pending_log": pending,
        "share_wait": request.share_wait,
    }
    committed = changed(job, **update)
    return Written(committed, history)


def moved_actions(request: Commit) -> int:
    """How many pending operator actions a commit moves into its history: those its claim saw (the oldest).

    Actions only ever join the end of the list, so a store can remove exactly these by position while a
    pause made during the phase stays pending.
    """
    return 0 if request.kind == "release" else len(request.seen.pending_log)


def pause(existing: Job | None, job_id: str, now_ms: int, token: str, actor: str | None = None) -> Written:
    """Pause a running job: the phase in flight finishes, nothing after it starts. Who asked is logged."""
    job = live(existing, now_ms)
    if job is None:
        raise JobNotFoundError(job_id)
    if job.status == JobStatus.PAUSED:
        return Written(job, landed=True)
    if job.status != JobStatus.RUNNING:
        raise TransitionRefusedError(f'Job "{job_id}" is {job.status.value}; only a running job can be paused')
    paused = changed(
        job,
        status=JobStatus.PAUSED,
        sequence=job.sequence + 1,
        updated_at=now_ms,
        expires_at=job.expires_at_after(now_ms),
        write_token=token,
        pending_log=[*job.pending_log, action_entry("Job paused", actor, now_ms)],
    )
    return Written(paused)


def cancel(existing: Job | None, job_id: str, now_ms: int, token: str, actor: str | None = None) -> Written:
    """Cancel a job: fence any worker, keep the checkpoint so a resume is still possible. Who asked is logged.

    The claim's start (``claimed_at``) stays, with no lease: the phase run the cancel cut short began then.
    """
    job = live(existing, now_ms)
    if job is None:
        raise JobNotFoundError(job_id)
    if job.status == JobStatus.CANCELLED:
        return Written(job, landed=True)
    if job.status == JobStatus.COMPLETE:
        raise TransitionRefusedError(f'Job "{job_id}" is already complete; it cannot be cancelled')
    cancelled = changed(
        job,
        status=JobStatus.CANCELLED,
        sequence=job.sequence + 1,
        lease_owner=None,
        lease_expires_at=None,
        claim_sequence=None,
        claimed_at=job.claimed_at if job.lease_owner is not None else None,
        updated_at=now_ms,
        expires_at=job.expires_at_after(now_ms),
        write_token=token,
        pending_log=[*job.pending_log, action_entry("Job cancelled", actor, now_ms)],
    )
    return Written(cancelled)
