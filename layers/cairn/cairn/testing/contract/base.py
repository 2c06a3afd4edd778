"""What every part of the storage contract shares: the adapter under test, its clock, and request builders."""

from __future__ import annotations

from typing import Any

import pytest

from ...core.clock import Clock
from ...core.models import Checkpoint, Job, PhaseOutcome, PhaseRecord
from ...core.storage_port import Storage
from ...core.transitions import Claim, Commit, Fence, Save, StartJob
from ..clock import SkippingClock

PIPELINE = "contract"
"""The pipeline every job of the suite belongs to."""
JOB = "job-1"
START_MS = 1_800_000_000_000
"""When the suite's clock starts (Unix ms): a fixed time, so figures repeat."""
TTL_SECONDS = 3600
LEASE_SECONDS = 60


class ContractBase:
    """The adapter under test: a subclass says how to build it on the clock the suite drives."""

    def make_storage(self, clock: Clock) -> Storage:
        """A new, empty store of the adapter under test that reads time from ``clock``."""
        raise NotImplementedError("a storage contract class implements make_storage(self, clock)")

    @pytest.fixture
    def clock(self) -> SkippingClock:
        """The suite's clock: it moves only when a test advances it."""
        return SkippingClock(START_MS)

    @pytest.fixture
    def storage(self, clock: SkippingClock) -> Storage:
        """The adapter under test, empty."""
        return self.make_storage(clock)


def expiry(clock: Clock, seconds: int = TTL_SECONDS) -> int:
    """Unix seconds ``seconds`` from now on ``clock``."""
    return clock() // 1000 + seconds


def start_request(
    clock: Clock,
    *,
    job_id: str = JOB,
    phase: str = "first",
    seen: Job | None = None,
    state: Any = None,
    ttl_seconds: int = TTL_SECONDS,
    waiting_for: str | None = None,
    wait_deadline: int | None = None,
    timeout_phase: str | None = None,
) -> StartJob:
    """A start of ``job_id`` at ``phase`` (over ``seen``, the job as read; None: there was none)."""
    now = clock()
    return StartJob(
        job_id=job_id,
        pipeline=PIPELINE,
        checkpoint=Checkpoint(next_phase=phase, state=state if state is not None else {}, created_at=now),
        now_ms=now,
        expires_at=expiry(clock, ttl_seconds),
        seen=seen,
        ttl_seconds=ttl_seconds,
        input=state,
        waiting_for=waiting_for,
        wait_deadline=wait_deadline,
        timeout_phase=timeout_phase,
    )


def claim_request(clock: Clock, job: Job, *, worker: str = "worker-1", phase: str | None = None) -> Claim:
    """A claim of ``job`` at its sequence for its next phase (or ``phase``), for ``LEASE_SECONDS``."""
    now = clock()
    assert job.checkpoint is not None
    return Claim(
        job_id=job.job_id,
        pipeline=PIPELINE,
        phase=phase or job.checkpoint.next_phase,
        worker=worker,
        now_ms=now,
        lease_expires_at=now + LEASE_SECONDS * 1000,
        expires_at=job.expires_at,
        sequence=job.sequence,
    )


def fence_of(job: Job) -> Fence:
    """The fence of the claim ``job`` holds."""
    assert job.lease_owner is not None, "the job holds no claim"
    assert job.claim_sequence is not None, "the job holds no claim"
    return Fence(job.lease_owner, job.claim_sequence)


def started(storage: Storage, clock: Clock, **start: Any) -> Job:
    """A job started on ``storage`` (see :func:`start_request`)."""
    return storage.start_job(start_request(clock, **start))


def claimed(storage: Storage, clock: Clock, *, worker: str = "worker-1") -> tuple[Job, Fence]:
    """A job started and claimed by ``worker``, and the fence of that claim."""
    job = storage.claim(claim_request(clock, started(storage, clock), worker=worker))
    assert job is not None, "a claim of a job just started was refused"
    return job, fence_of(job)


def save_request(clock: Clock, job: Job, state: Any) -> Save:
    """A mid-phase checkpoint of ``job`` holding ``state``, the lease renewed."""
    now = clock()
    assert job.checkpoint is not None
    checkpoint = Checkpoint(next_phase=job.checkpoint.next_phase, state=state, created_at=now)
    return Save(
        seen=job,
        checkpoint=checkpoint,
        now_ms=now,
        lease_expires_at=now + LEASE_SECONDS * 1000,
        expires_at=job.expires_at,
    )


def commit_request(
    clock: Clock, job: Job, kind: PhaseOutcome, *, next_phase: str | None = None, state: Any = None, **more: Any
) -> Commit:
    """The end of the run of ``job``'s next phase: ``kind`` (to ``next_phase`` with ``state``)."""
    now = clock()
    assert job.checkpoint is not None
    phase = job.checkpoint.next_phase
    record = PhaseRecord(
        phase=phase, attempt=job.attempt, started_at=now, ended_at=now, outcome=kind, next_phase=next_phase
    )
    checkpoint = Checkpoint(next_phase=next_phase, state=state, created_at=now) if next_phase else None
    return Commit(
        seen=job, kind=kind, now_ms=now, expires_at=job.expires_at, record=record, checkpoint=checkpoint, **more
    )


def stored(storage: Storage, job_id: str = JOB) -> Job:
    """The stored job; fails the test when the store says there is none."""
    job = storage.get_job(job_id)
    assert job is not None, f"the store lost job {job_id!r}"
    return job
