"""Retries of a paused or cancelled job: a resume goes on from the checkpoint, a full retry starts over."""

from __future__ import annotations

from typing import Any

from cairn import Done, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.core.engine import cancel_job, pause_job
from cairn.core.storage_port import Storage
from tests.support import FakeClock, job_of, make_scheduler

JOB = "job-1"


def _pipeline(ran: list[str]) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ran.append("fetch")
        return Next("extract", {"fetched": True})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        ran.append("extract")
        return Done("extracted")

    return pipeline


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
