"""Crash reports (a worker that timed out or ran out of memory) on every store: only the claim a report names
is taken over, and only while it is current; and the job's input across retries."""

from __future__ import annotations

from cairn import (
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


def test_a_crash_report_for_the_dead_worker_retries_the_phase_per_its_policy(
    storage: Storage, clock: FakeClock
) -> None:
    crash = [True]
    pipeline = crashing_pipeline(attempts=2, crash=crash)
    start_and_crash(pipeline, storage, clock)
    scheduler = RecordingScheduler(clock)

    job = record_crash(
        JOB,
        pipeline,
        storage=storage,
        scheduler=scheduler,
        phase="work",
        error="Task timed out",
        dead_worker="request-1",
    )

    assert job is not None
    stored = job_of(storage, JOB)
    assert stored.status == JobStatus.RUNNING
    assert stored.attempt == 2
    assert stored.lease_owner is None
    assert stored.checkpoint is not None
    assert stored.checkpoint.next_phase == "work"
    assert stored.checkpoint.state == {"n": 1}
    assert any(
        entry.startswith('Worker died during phase "work" (attempt 1) after ') and entry.endswith(": Task timed out")
        for entry in [entry.message for entry in stored.log]
    )
    assert [(item.phase, item.delay) for item in scheduler.scheduled] == [("work", 10.0)]

    crash[0] = False
    resumed = make_scheduler(pipeline, storage, clock)
    resumed.schedule_advance(JOB, phase="work")
    resumed.drain()
    assert job_of(storage, JOB).result == {"n": 1, "attempt": 2}


def test_a_crash_report_naming_another_worker_leaves_a_live_claim_alone(storage: Storage, clock: FakeClock) -> None:
    pipeline = crashing_pipeline(attempts=2, crash=[True])
    start_and_crash(pipeline, storage, clock)
    before = job_of(storage, JOB)

    outcome = record_crash(
        JOB,
        pipeline,
        storage=storage,
        scheduler=RecordingScheduler(clock),
        phase="work",
        error="late",
        dead_worker="other",
    )

    assert outcome is None
    after = job_of(storage, JOB)
    assert after.sequence == before.sequence
    assert after.lease_owner == "request-1"
    assert after.attempt == 1


def test_a_stale_crash_report_for_a_phase_the_job_has_left_does_nothing(storage: Storage, clock: FakeClock) -> None:
    pipeline = crashing_pipeline(attempts=2, crash=[False])
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    outcome = record_crash(
        JOB,
        pipeline,
        storage=storage,
        scheduler=RecordingScheduler(clock),
        phase="work",
        error="late",
        dead_worker="request-9",
        sequence=1,
    )

    assert outcome is None
    assert job_of(storage, JOB).status == JobStatus.COMPLETE


def test_the_job_keeps_its_input_across_resumes_and_a_full_retry_replaces_it(
    storage: Storage, clock: FakeClock
) -> None:
    pipeline = crashing_pipeline(attempts=1, crash=[False])
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"doc": "a"})
    scheduler.drain(max_steps=1)
    assert job_of(storage, JOB).input == {"doc": "a"}

    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"doc": "ignored"})
    assert job_of(storage, JOB).input == {"doc": "a"}

    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"doc": "b"}, retry_mode="full")
    assert job_of(storage, JOB).input == {"doc": "b"}
