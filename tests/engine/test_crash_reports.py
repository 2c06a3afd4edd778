"""A crash report on the last attempt ends the job in error; a create-only start never touches an existing job."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import (
    Done,
    JobExistsError,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    RetryPolicy,
    advance_phase,
    record_crash,
    run_pipeline,
)
from cairn.storage.base import Storage
from cairn.testing.faults import SimulatedCrash
from tests.support import FakeClock, RecordingScheduler, job_of, make_scheduler

JOB = "job-1"


def crashing_pipeline(*, attempts: int, crash: list[bool]) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("crashy")

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        return Next("work", {"n": 1})

    @pipeline.phase(retry=RetryPolicy(max_attempts=attempts, backoff=10, jitter=False), lease_seconds=900)
    def work(ctx: PhaseContext[Any]) -> Done:
        if crash[0]:
            raise SimulatedCrash("the process died")
        return Done({"n": ctx.state["n"], "attempt": ctx.attempt})

    return pipeline


def start_and_crash(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> None:
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    with pytest.raises(SimulatedCrash):
        advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler, phase="work", worker="request-1")


def test_a_crash_report_on_the_last_attempt_sets_error_and_keeps_the_checkpoint(
    storage: Storage, clock: FakeClock
) -> None:
    pipeline = crashing_pipeline(attempts=1, crash=[True])
    start_and_crash(pipeline, storage, clock)

    record_crash(
        JOB,
        pipeline,
        storage=storage,
        scheduler=RecordingScheduler(clock),
        phase="work",
        error="Runtime exited: out of memory",
        dead_worker="request-1",
    )

    job = job_of(storage, JOB)
    assert job.status == JobStatus.ERROR
    assert job.error == "Runtime exited: out of memory"
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "work"
    assert job.phases[-1].outcome == "error"


def test_create_only_never_touches_an_existing_job(storage: Storage, clock: FakeClock) -> None:
    pipeline = crashing_pipeline(attempts=1, crash=[False])
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"a": 1}, create_only=True)
    before = job_of(storage, JOB)

    with pytest.raises(JobExistsError) as raised:
        run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"b": 2}, create_only=True)

    assert raised.value.job == before
    assert job_of(storage, JOB) == before
    assert scheduler.pending() == 1
