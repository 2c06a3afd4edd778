"""Time to live as each store reads it: an expired job is gone, whether or not the store deleted it, every
write pushes the expiry back, and a live job keeps its checkpoint and history however old they are."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from cairn import (
    Done,
    FileStorage,
    JobNotFoundError,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    advance_phase,
    run_pipeline,
)
from cairn.adapters import Checkpoint
from cairn.core.engine import cancel_job, pause_job
from cairn.core.storage_port import Storage
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


def test_a_live_jobs_checkpoint_is_kept_however_long_ago_it_was_saved(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    failing = [True]
    pipeline = fetch_extract_pipeline(ran, fail_extract=failing)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 1})
    scheduler.drain(max_steps=1)  # fetch: the checkpoint names extract
    clock.advance(50 * 60)
    pause_job(JOB, storage=storage)
    clock.advance(40 * 60)  # the checkpoint was saved 90 minutes ago, the job written 40 minutes ago

    job = job_of(storage, JOB)
    assert job.checkpoint is not None
    assert (job.checkpoint.next_phase, clock() - job.checkpoint.created_at) == ("extract", 90 * 60 * 1000)
    assert [listed.job_id for listed in storage.list_jobs(status=JobStatus.PAUSED)] == [JOB]
    route = storage.get_route(JOB)
    assert route is not None
    assert (route.status, route.next_phase) == (JobStatus.PAUSED, "extract")

    failing[0] = False
    ran.clear()
    resumed = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 2})
    scheduler.drain()

    assert resumed.checkpoint is not None
    assert resumed.checkpoint.next_phase == "extract"
    assert ran == ["extract {'v': 1, 'fetched': True}"]
    assert [record.phase for record in job_of(storage, JOB).phases] == ["fetch", "extract"]


def test_file_cleanup_removes_a_jobs_history_only_with_the_job(tmp_path: Path, clock: FakeClock) -> None:
    storage = FileStorage(tmp_path / "jobs", clock=clock)
    pipeline = fetch_extract_pipeline([], fail_extract=[True])
    scheduler = make_scheduler(pipeline, storage, clock)
    for job_id in ("idle", "busy"):
        run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()
    clock.advance(50 * 60)
    cancel_job("busy", storage=storage)
    clock.advance(20 * 60)  # idle expired 10 minutes ago; busy's history was written 70 minutes ago

    assert storage.cleanup() == ["idle"]

    assert not storage.history_path_for("idle").exists()
    busy = job_of(storage, "busy")
    assert [record.phase for record in busy.phases] == ["fetch", "extract"]
    assert any("extractor down" in entry.message for entry in busy.log)
