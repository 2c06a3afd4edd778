"""Pausing and cancelling jobs on every store: who may, what is kept, what a queued advance or a worker mid-phase
can still do."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import (
    CairnError,
    Done,
    Fail,
    InlineScheduler,
    JobNotFoundError,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    advance_phase,
    run_pipeline,
)
from cairn.adapters import ClaimLostError
from cairn.core.engine import cancel_job, pause_job
from cairn.core.storage_port import Storage
from tests.support import FakeClock, job_of, make_scheduler, recording_scheduler

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


def test_pause_of_an_unknown_job_is_refused(storage: Storage) -> None:
    with pytest.raises(JobNotFoundError):
        pause_job("no-such-job", storage=storage)
    assert storage.get_job("no-such-job") is None


def test_pause_inside_a_phase_stops_at_the_next_boundary_and_resume_continues(
    storage: Storage, clock: FakeClock
) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    ran: list[str] = []

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ran.append("fetch")
        pause_job(ctx.job_id, storage=storage)
        return Next("extract", {"fetched": True})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        ran.append(f"extract {ctx.state}")
        return Done("extracted")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    paused = job_of(storage, JOB)
    assert paused.status == JobStatus.PAUSED
    assert paused.checkpoint is not None
    assert (paused.checkpoint.next_phase, paused.checkpoint.state) == ("extract", {"fetched": True})
    assert ran == ["fetch"]
    assert scheduler.pending() == 0

    resumed = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler)
    assert resumed.status == JobStatus.RUNNING
    scheduler.drain()

    assert ran == ["fetch", "extract {'fetched': True}"]
    job = job_of(storage, JOB)
    assert job.status == JobStatus.COMPLETE
    assert job.result == "extracted"


def test_pause_between_phases_keeps_the_queued_advance_from_running(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    scheduler = _started(storage, clock, ran)
    pause_job(JOB, storage=storage)

    scheduler.drain()

    assert ran == []
    job = job_of(storage, JOB)
    assert job.status == JobStatus.PAUSED
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "fetch"


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
