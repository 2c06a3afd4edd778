"""Pausing and cancelling jobs: who may, what is kept, and what a worker mid-phase can still do."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import (
    CairnError,
    ClaimLostError,
    Done,
    Fail,
    InlineScheduler,
    JobNotFoundError,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    RetryPolicy,
    advance_phase,
    cancel_job,
    pause_job,
    run_pipeline,
)
from cairn.storage.base import Storage
from tests.contract.helpers import recording_scheduler
from tests.support import FakeClock, job_of, make_scheduler

JOB = "job-1"


def _pipeline(ran: list[str], *, fail: bool = False) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ran.append("fetch")
        return Next("extract", {"fetched": True})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done | Fail:
        ran.append("extract")
        return Fail("unreadable") if fail else Done("extracted")

    return pipeline


def _started(storage: Storage, clock: FakeClock, ran: list[str], *, fail: bool = False) -> InlineScheduler:
    """Start JOB; the returned scheduler holds its first advance."""
    pipeline = _pipeline(ran, fail=fail)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    return scheduler


# --- pause --------------------------------------------------------------------------------------


def test_pause_sets_paused_and_keeps_the_checkpoint(storage: Storage, clock: FakeClock) -> None:
    _started(storage, clock, [])
    before = job_of(storage, JOB)

    paused = pause_job(JOB, storage=storage)

    assert paused.status == JobStatus.PAUSED
    assert job_of(storage, JOB).status == JobStatus.PAUSED
    assert job_of(storage, JOB).checkpoint == before.checkpoint


def test_pause_is_idempotent(storage: Storage, clock: FakeClock) -> None:
    _started(storage, clock, [])
    first = pause_job(JOB, storage=storage)
    clock.advance(1)

    second = pause_job(JOB, storage=storage)

    assert second.status == JobStatus.PAUSED
    assert second.checkpoint == first.checkpoint
    assert job_of(storage, JOB).status == JobStatus.PAUSED


@pytest.mark.parametrize("status", ["complete", "error", "cancelled"])
def test_pause_of_a_job_that_is_not_running_is_refused(storage: Storage, clock: FakeClock, status: str) -> None:
    ran: list[str] = []
    scheduler = _started(storage, clock, ran, fail=status == "error")
    if status == "cancelled":
        cancel_job(JOB, storage=storage)
    else:
        scheduler.drain()
    before = job_of(storage, JOB)
    assert before.status.value == status

    with pytest.raises(CairnError):
        pause_job(JOB, storage=storage)

    assert job_of(storage, JOB) == before


def test_pause_during_a_retry_backoff_stops_the_retry_until_resumed(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    attempts: list[int] = []

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=30.0, jitter=False))
    def call(ctx: PhaseContext[Any]) -> Done:
        attempts.append(ctx.attempt)
        if len(attempts) == 1:
            raise TimeoutError("slow")
        return Done("answered")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    assert scheduler.pending() == 1
    pause_job(JOB, storage=storage)

    scheduler.drain()

    assert attempts == [1]
    assert job_of(storage, JOB).status == JobStatus.PAUSED
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler)
    scheduler.drain()
    assert attempts == [1, 1], "a resume starts counting attempts again"
    assert job_of(storage, JOB).result == "answered"


def test_pause_of_an_unknown_job_is_refused(storage: Storage) -> None:
    with pytest.raises(JobNotFoundError):
        pause_job("no-such-job", storage=storage)
    assert storage.get_job("no-such-job") is None


# --- cancel -------------------------------------------------------------------------------------


def test_cancel_sets_cancelled_and_keeps_the_checkpoint(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = _pipeline(ran)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    before = job_of(storage, JOB)

    cancelled = cancel_job(JOB, storage=storage)
    scheduler.drain()

    job = job_of(storage, JOB)
    assert cancelled.status == JobStatus.CANCELLED
    assert job.status == JobStatus.CANCELLED
    assert job.checkpoint == before.checkpoint
    assert ran == ["fetch"], "a cancelled job is not advanced"


@pytest.mark.parametrize("status", ["running", "paused", "error"])
def test_cancel_works_from_any_unfinished_status(storage: Storage, clock: FakeClock, status: str) -> None:
    ran: list[str] = []
    scheduler = _started(storage, clock, ran, fail=status == "error")
    if status == "paused":
        pause_job(JOB, storage=storage)
    elif status == "error":
        scheduler.drain()
    assert job_of(storage, JOB).status.value == status

    assert cancel_job(JOB, storage=storage).status == JobStatus.CANCELLED
    assert job_of(storage, JOB).status == JobStatus.CANCELLED


def test_cancel_is_idempotent(storage: Storage, clock: FakeClock) -> None:
    _started(storage, clock, [])
    first = cancel_job(JOB, storage=storage)

    second = cancel_job(JOB, storage=storage)

    assert second.status == JobStatus.CANCELLED
    assert second.checkpoint == first.checkpoint


def test_cancel_of_a_complete_job_is_refused(storage: Storage, clock: FakeClock) -> None:
    _started(storage, clock, []).drain()
    before = job_of(storage, JOB)
    assert before.status == JobStatus.COMPLETE

    with pytest.raises(CairnError):
        cancel_job(JOB, storage=storage)

    assert job_of(storage, JOB) == before


def test_cancel_of_an_unknown_job_is_refused(storage: Storage) -> None:
    with pytest.raises(JobNotFoundError):
        cancel_job("no-such-job", storage=storage)
    assert storage.get_job("no-such-job") is None


def test_cancel_fences_a_worker_mid_phase(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    ran: list[str] = []

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ran.append("fetch")
        cancel_job(ctx.job_id, storage=storage)
        ctx.log("after cancel")
        return Next("extract", {"fetched": True})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        ran.append("extract")
        return Done()

    scheduler = recording_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"fetched": False})
    before = job_of(storage, JOB)

    assert advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler, phase="fetch") is None

    job = job_of(storage, JOB)
    assert job.status == JobStatus.CANCELLED
    assert job.checkpoint == before.checkpoint
    assert job.phases == []
    assert "after cancel" not in [entry.message for entry in job.log]
    assert [item.phase for item in scheduler.scheduled] == ["fetch"]
    assert ran == ["fetch"]


def test_save_state_after_cancel_raises_claim_lost(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    raised: list[BaseException] = []

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Done:
        cancel_job(ctx.job_id, storage=storage)
        with pytest.raises(ClaimLostError) as info:
            ctx.save_state({"progress": 1})
        raised.append(info.value)
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"progress": 0})
    scheduler.drain()

    assert len(raised) == 1
    job = job_of(storage, JOB)
    assert job.status == JobStatus.CANCELLED
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"progress": 0}


def test_resume_after_cancel_continues_from_the_checkpoint(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = _pipeline(ran)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    cancel_job(JOB, storage=storage)
    scheduler.drain()

    resumed = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler)

    assert resumed.status == JobStatus.RUNNING
    assert resumed.checkpoint is not None
    assert (resumed.checkpoint.next_phase, resumed.checkpoint.state) == ("extract", {"fetched": True})
    scheduler.drain()
    assert ran == ["fetch", "extract"]
    job = job_of(storage, JOB)
    assert job.status == JobStatus.COMPLETE
    assert job.result == "extracted"


def test_full_retry_after_cancel_starts_over(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = _pipeline(ran)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    cancel_job(JOB, storage=storage)

    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={}, retry_mode="full")
    scheduler.drain()

    assert ran == ["fetch", "fetch", "extract"]
    assert job_of(storage, JOB).status == JobStatus.COMPLETE
