"""Time to live as each store reads it: an expired job is gone, whether or not the store deleted it, and every
write pushes the expiry back."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from cairn import (
    Checkpoint,
    Done,
    JobNotFoundError,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    advance_phase,
    cancel_job,
    pause_job,
    run_pipeline,
)
from cairn.storage.base import Storage
from tests.support import FakeClock, fetch_extract_pipeline, job_of, make_scheduler

JOB = "job-1"
HOUR = 3600


def test_the_default_ttl_is_a_day(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Done:
        return Done()

    run_pipeline(JOB, pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage, clock))

    assert pipeline.ttl == timedelta(hours=24)
    assert job_of(storage, JOB).expires_at == clock() // 1000 + 24 * HOUR
    clock.advance(24 * HOUR - 1)
    assert storage.get_job(JOB) is not None
    clock.advance(1)
    assert storage.get_job(JOB) is None


def test_a_job_past_its_expiry_is_gone(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = fetch_extract_pipeline(ran, fail_extract=[False])
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    run_pipeline("job-2", pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage, clock))
    job = job_of(storage, JOB)
    assert job.expires_at == clock() // 1000 + HOUR

    clock.advance(HOUR + 1)

    assert storage.get_job(JOB) is None
    assert storage.list_jobs() == []
    assert storage.list_jobs(status=JobStatus.RUNNING) == []


def test_an_expired_job_is_not_advanced(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = fetch_extract_pipeline(ran, fail_extract=[False])
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    clock.advance(HOUR + 1)

    scheduler.drain()
    direct = advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler)

    assert direct is None
    assert ran == []
    assert storage.get_job(JOB) is None
    assert scheduler.pending() == 0


def test_an_expired_job_cannot_be_paused_or_cancelled(storage: Storage, clock: FakeClock) -> None:
    pipeline = fetch_extract_pipeline([], fail_extract=[False])
    run_pipeline(JOB, pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage, clock))
    clock.advance(HOUR + 1)

    with pytest.raises(JobNotFoundError):
        pause_job(JOB, storage=storage)
    with pytest.raises(JobNotFoundError):
        cancel_job(JOB, storage=storage)
    assert storage.get_job(JOB) is None


def test_run_pipeline_on_an_expired_job_starts_a_new_one(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = fetch_extract_pipeline(ran, fail_extract=[True])
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 1})
    scheduler.drain()
    clock.advance(HOUR + 1)

    job = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 2})

    assert job.checkpoint == Checkpoint(next_phase="fetch", state={"v": 2}, created_at=clock())
    assert job.created_at == clock()
    assert job.phases == []
    assert job.error is None
    assert "extractor down" not in " ".join(entry.message for entry in job.log)
    assert job_of(storage, JOB).status == JobStatus.RUNNING


def test_an_expired_job_of_another_pipeline_does_not_block_the_id(storage: Storage, clock: FakeClock) -> None:
    old = fetch_extract_pipeline([], fail_extract=[False])
    run_pipeline(JOB, old, storage=storage, scheduler=make_scheduler(old, storage, clock))
    clock.advance(HOUR + 1)
    other: Pipeline[Any] = Pipeline("billing")

    @other.phase
    def charge(ctx: PhaseContext[Any]) -> Done:
        return Done("charged")

    scheduler = make_scheduler(other, storage, clock)
    run_pipeline(JOB, other, storage=storage, scheduler=scheduler)
    scheduler.drain()

    job = job_of(storage, JOB)
    assert job.pipeline == "billing"
    assert job.result == "charged"


def test_every_write_refreshes_the_expiry(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake", ttl=timedelta(hours=1))

    @pipeline.phase
    def slow(ctx: PhaseContext[Any]) -> Next:
        clock.advance(40 * 60)
        return Next("slower", {})

    @pipeline.phase
    def slower(ctx: PhaseContext[Any]) -> Done:
        clock.advance(40 * 60)
        ctx.save_state({"half": True})
        clock.advance(40 * 60)
        return Done("finished")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    job = job_of(storage, JOB)
    assert job.status == JobStatus.COMPLETE
    assert job.result == "finished"
    assert job.expires_at == clock() // 1000 + HOUR
    clock.advance(HOUR - 1)
    assert storage.get_job(JOB) is not None


@pytest.mark.parametrize("change", ["pause", "cancel"])
def test_pause_and_cancel_refresh_the_expiry(storage: Storage, clock: FakeClock, change: str) -> None:
    pipeline = fetch_extract_pipeline([], fail_extract=[False])
    run_pipeline(JOB, pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage, clock))
    clock.advance(30 * 60)

    job = pause_job(JOB, storage=storage) if change == "pause" else cancel_job(JOB, storage=storage)

    assert job.expires_at == clock() // 1000 + HOUR
    clock.advance(50 * 60)
    assert storage.get_job(JOB) is not None


def test_list_jobs_returns_live_jobs_newest_first_and_filters_by_status(storage: Storage, clock: FakeClock) -> None:
    pipeline = fetch_extract_pipeline([], fail_extract=[True])
    scheduler = make_scheduler(pipeline, storage, clock)
    for job_id in ("job-a", "job-b", "job-c"):
        run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state={})
        clock.advance(60)
    pause_job("job-b", storage=storage)

    assert [job.job_id for job in storage.list_jobs()] == ["job-c", "job-b", "job-a"]
    assert [job.job_id for job in storage.list_jobs(status=JobStatus.PAUSED)] == ["job-b"]
    assert [job.job_id for job in storage.list_jobs(status=JobStatus.RUNNING)] == ["job-c", "job-a"]
    assert storage.list_jobs(status=JobStatus.COMPLETE) == []

    clock.advance(HOUR - 120)
    assert [job.job_id for job in storage.list_jobs()] == ["job-c", "job-b"]
