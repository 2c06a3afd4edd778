"""The rules of every state change, as pure functions from the old job to the new one.

Each function is one conditional write: it checks its condition against the
stored job and either returns the job to write, or says why not. Memory and
file stores apply these under a lock; the DynamoDB store expresses the same
conditions as condition expressions. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import ClaimLostError, InvalidInputError, JobNotFoundError, TransitionRefusedError
from .models import Checkpoint, Job, JobStatus, LogEntry, PhaseRecord


@dataclass(frozen=True)
class Fence:
    """What a worker holds after a claim: the job's version and its own name."""

    version: int
    worker: str


@dataclass(frozen=True)
class Journal:
    """What a phase recorded since its last write: log entries and usage counters."""

    log: tuple[LogEntry, ...] = ()
    usage: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StartJob:
    """Create a job, or take over an existing one with a new checkpoint.

    ``seen`` is the job as the caller read it (None: there was none). If the
    stored job's version differs from it, someone wrote in between and the
    caller should read again.
    """

    job_id: str
    pipeline: str
    checkpoint: Checkpoint
    now_ms: int
    expires_at: int
    seen: Job | None
    ttl_seconds: int
    input: Any = None
    reset_history: bool = False
    journal: Journal = Journal()

    @property
    def expected_version(self) -> int | None:
        """The version the stored job must still have (None: no live job)."""
        current = live(self.seen, self.now_ms)
        return current.version if current else None


@dataclass(frozen=True)
class Claim:
    """Take the job for one run of ``phase`` until ``lease_expires_at`` (ms).

    Only a job of ``pipeline`` can be claimed: one pipeline's code never runs on another's job.
    A live claim blocks the claim, unless it is held by ``take_over`` (a worker known to be
    dead) or ``take_over`` is ``"*"`` (any holder).
    """

    job_id: str
    pipeline: str
    phase: str | None
    worker: str
    now_ms: int
    lease_expires_at: int
    expires_at: int
    take_over: str | None = None

    def blocked_by(self, job: Job) -> bool:
        """Whether ``job``'s live claim keeps this claim out."""
        if not job.has_live_claim(self.now_ms):
            return False
        return self.take_over != "*" and job.lease_owner != self.take_over


ANY_WORKER = "*"


@dataclass(frozen=True)
class Save:
    """A mid-phase checkpoint by the claim holder; renews its lease.

    ``seen`` is the job as the worker last wrote it (stores that cannot return
    the written job, such as DynamoDB in a transaction, build it from this).
    """

    seen: Job
    checkpoint: Checkpoint
    now_ms: int
    lease_expires_at: int
    expires_at: int
    journal: Journal = Journal()


CommitKind = Literal["next", "done", "retry", "error"]


@dataclass(frozen=True)
class Commit:
    """The end of a phase run by the claim holder; releases the claim.

    ``next`` writes ``checkpoint``; ``done`` clears it and keeps ``result``;
    ``retry`` keeps it and bumps the attempt; ``error`` keeps it and records
    ``error``. ``seen`` is the job as the worker last wrote it.
    """

    seen: Job
    kind: CommitKind
    now_ms: int
    expires_at: int
    record: PhaseRecord
    journal: Journal = Journal()
    checkpoint: Checkpoint | None = None
    result: Any = None
    error: str | None = None


class VersionConflict(Exception):
    """The job changed between the caller's read and its write (internal; callers re-read)."""


def _merge_usage(usage: Mapping[str, float], delta: Mapping[str, float]) -> dict[str, float]:
    merged = dict(usage)
    for key, value in delta.items():
        merged[key] = merged.get(key, 0) + value
    return merged


def _journaled(job: Job, journal: Journal, **changes: Any) -> Job:
    return job.model_copy(
        update={
            "log": [*job.log, *journal.log],
            "usage": _merge_usage(job.usage, journal.usage),
            **changes,
        }
    )


def live(job: Job | None, now_ms: int) -> Job | None:
    """The job, or None when it is absent or past its TTL."""
    if job is None or job.is_expired(now_ms):
        return None
    return job


def start(existing: Job | None, request: StartJob) -> Job:
    """Create the job or take it over: a new version fences any worker mid-phase."""
    current = live(existing, request.now_ms)
    current_version = current.version if current else None
    if current_version != request.expected_version:
        raise VersionConflict(request.job_id)
    if current is not None and current.pipeline != request.pipeline:
        raise InvalidInputError(
            f'Job "{request.job_id}" belongs to pipeline "{current.pipeline}", not "{request.pipeline}"'
        )
    if current is None:
        return Job(
            job_id=request.job_id,
            pipeline=request.pipeline,
            status=JobStatus.RUNNING,
            checkpoint=request.checkpoint,
            created_at=request.now_ms,
            updated_at=request.now_ms,
            expires_at=request.expires_at,
            ttl_seconds=request.ttl_seconds,
            input=request.input,
            version=(existing.version + 1) if existing else 1,
            run=(existing.run + 1) if existing else 1,
            log=list(request.journal.log),
            usage=dict(request.journal.usage),
        )
    base = (
        current.model_copy(update={"log": [], "phases": [], "run": current.run + 1})
        if request.reset_history
        else current
    )
    return _journaled(
        base,
        request.journal,
        status=JobStatus.RUNNING,
        checkpoint=request.checkpoint,
        error=None,
        result=None,
        input=request.input,
        attempt=1,
        version=current.version + 1,
        lease_owner=None,
        lease_expires_at=None,
        updated_at=request.now_ms,
        expires_at=request.expires_at,
        ttl_seconds=request.ttl_seconds,
    )


def claim(existing: Job | None, request: Claim) -> Job | None:
    """The claimed job, or None when it is not claimable (absent, not running, other phase, held)."""
    job = live(existing, request.now_ms)
    if job is None or job.pipeline != request.pipeline:
        return None
    if job.status != JobStatus.RUNNING or job.checkpoint is None:
        return None
    if request.phase is not None and job.checkpoint.next_phase != request.phase:
        return None
    if request.blocked_by(job):
        return None
    return job.model_copy(
        update={
            "version": job.version + 1,
            "lease_owner": request.worker,
            "lease_expires_at": request.lease_expires_at,
            "updated_at": request.now_ms,
            "expires_at": request.expires_at,
        }
    )


def _check_fence(existing: Job | None, job_id: str, fence: Fence, now_ms: int) -> Job:
    job = live(existing, now_ms)
    if job is None:
        raise ClaimLostError(job_id, "the job is gone or expired")
    if job.version != fence.version or job.lease_owner != fence.worker:
        raise ClaimLostError(job_id, "another worker or a retry took the job over")
    return job


def save(existing: Job | None, job_id: str, fence: Fence, request: Save) -> Job:
    """Write a mid-phase checkpoint, provided the worker still holds its claim."""
    job = _check_fence(existing, job_id, fence, request.now_ms)
    return _journaled(
        job,
        request.journal,
        checkpoint=request.checkpoint,
        lease_expires_at=request.lease_expires_at,
        updated_at=request.now_ms,
        expires_at=request.expires_at,
    )


def commit(existing: Job | None, job_id: str, fence: Fence, request: Commit) -> Job:
    """End a phase run, provided the worker still holds its claim; releases the claim."""
    job = _check_fence(existing, job_id, fence, request.now_ms)
    changes: dict[str, Any] = {
        "phases": [*job.phases, request.record],
        "lease_owner": None,
        "lease_expires_at": None,
        "updated_at": request.now_ms,
        "expires_at": request.expires_at,
    }
    if request.kind == "next":
        changes.update(checkpoint=request.checkpoint, attempt=1)
    elif request.kind == "done":
        changes.update(checkpoint=None, status=JobStatus.COMPLETE, result=request.result, attempt=1)
    elif request.kind == "retry":
        changes.update(attempt=job.attempt + 1)
    else:
        changes.update(status=JobStatus.ERROR, error=request.error)
    return _journaled(job, request.journal, **changes)


def pause(existing: Job | None, job_id: str, now_ms: int) -> Job:
    """Pause a running job: the phase in flight finishes, nothing after it starts."""
    job = live(existing, now_ms)
    if job is None:
        raise JobNotFoundError(job_id)
    if job.status == JobStatus.PAUSED:
        return job
    if job.status != JobStatus.RUNNING:
        raise TransitionRefusedError(f'Job "{job_id}" is {job.status.value}; only a running job can be paused')
    return job.model_copy(
        update={"status": JobStatus.PAUSED, "updated_at": now_ms, "expires_at": job.expires_at_after(now_ms)}
    )


def cancel(existing: Job | None, job_id: str, now_ms: int) -> Job:
    """Cancel a job: fence any worker, keep the checkpoint so a resume is still possible."""
    job = live(existing, now_ms)
    if job is None:
        raise JobNotFoundError(job_id)
    if job.status == JobStatus.CANCELLED:
        return job
    if job.status == JobStatus.COMPLETE:
        raise TransitionRefusedError(f'Job "{job_id}" is already complete; it cannot be cancelled')
    return job.model_copy(
        update={
            "status": JobStatus.CANCELLED,
            "version": job.version + 1,
            "lease_owner": None,
            "lease_expires_at": None,
            "updated_at": now_ms,
            "expires_at": job.expires_at_after(now_ms),
        }
    )
