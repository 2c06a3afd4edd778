"""A crash report on the last attempt ends the job in error; a create-only start never touches an existing job."""

from __future__ import annotations

import pytest

from cairn import (
    JobExistsError,
    JobStatus,
    run_pipeline,
)
from cairn.core.engine import record_crash
from cairn.core.storage_port import Storage
from tests.support import (
    CRASH_JOB,
    FakeClock,
    RecordingScheduler,
    crashing_pipeline,
    job_of,
    make_scheduler,
    start_and_crash,
)

JOB = CRASH_JOB


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
