"""A crashed attempt is recorded as it happened, on every store: its real start and length, an attempt of the
phase's retry policy, and a log line saying the worker died, when, and after how long."""

from __future__ import annotations

from typing import Any

from cairn import Done, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.core.engine import advance_phase, record_crash
from cairn.core.storage_port import Storage
from cairn.testing.faults import SimulatedCrash
from tests.support import FakeClock, RecordingScheduler, job_of, make_scheduler

JOB = "crash-record-1"
PHASE_SECONDS = 6.0


def slow_dying_pipeline(clock: FakeClock, *, attempts: int, dying: list[bool]) -> Pipeline[Any]:
    """``load`` then ``work``, which runs for six seconds and then dies (its worker is killed) while ``dying[0]``."""
    pipeline: Pipeline[Any] = Pipeline("slow-dying")

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        return Next("work", {"n": 1})

    @pipeline.phase(retry=RetryPolicy(max_attempts=attempts, backoff=10, jitter=False), lease_seconds=900)
    def work(ctx: PhaseContext[Any]) -> Done:
        clock.advance(PHASE_SECONDS)
        if dying[0]:
            raise SimulatedCrash("kill -9")
        return Done({"attempt": ctx.attempt})

    return pipeline


def start_and_kill(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> int:
    """Run ``load``, then let ``work``'s worker (request-1) die six seconds in; when ``work`` was claimed."""
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    claimed_at = clock()
    try:
        advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler, phase="work", worker="request-1")
    except SimulatedCrash:
        return claimed_at
    raise AssertionError("the worker of work did not die")


def report(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock, error: str = "signal: killed") -> None:
    record_crash(
        JOB,
        pipeline,
        storage=storage,
        scheduler=RecordingScheduler(clock),
        phase="work",
        error=error,
        dead_worker="request-1",
    )


def test_the_claim_records_when_the_phase_run_began(storage: Storage, clock: FakeClock) -> None:
    pipeline = slow_dying_pipeline(clock, attempts=2, dying=[True])
    claimed_at = start_and_kill(pipeline, storage, clock)

    held = job_of(storage, JOB)
    assert held.lease_owner == "request-1"
    assert held.claimed_at == claimed_at


def test_a_crash_shows_its_real_start_and_length_and_is_retried_as_an_attempt(
    storage: Storage, clock: FakeClock
) -> None:
    dying = [True]
    pipeline = slow_dying_pipeline(clock, attempts=2, dying=dying)
    claimed_at = start_and_kill(pipeline, storage, clock)
    died_at = clock()

    report(pipeline, storage, clock)

    job = job_of(storage, JOB)
    assert job.status == JobStatus.RUNNING
    assert job.attempt == 2
    assert job.claimed_at is None  # the takeover released the claim
    crash = job.phases[-1]
    assert (crash.phase, crash.attempt, crash.outcome) == ("work", 1, "retry")
    assert (crash.started_at, crash.ended_at) == (claimed_at, died_at)
    assert crash.ended_at - crash.started_at == PHASE_SECONDS * 1000
    died = [entry.message for entry in job.log if entry.message.startswith("Worker died")]
    assert died == [
        'Worker died during phase "work" (attempt 1) after 6.0 s, reported at 2027-01-15T08:00:06.000Z: signal: killed'
    ]

    dying[0] = False
    again = make_scheduler(pipeline, storage, clock)
    again.schedule_advance(JOB, phase="work")
    again.drain()
    assert job_of(storage, JOB).result == {"attempt": 2}


def test_a_crash_on_the_last_allowed_attempt_ends_the_job_in_error(storage: Storage, clock: FakeClock) -> None:
    pipeline = slow_dying_pipeline(clock, attempts=1, dying=[True])
    claimed_at = start_and_kill(pipeline, storage, clock)

    report(pipeline, storage, clock, error="Task timed out after 6.00 seconds")

    job = job_of(storage, JOB)
    assert job.status == JobStatus.ERROR
    assert job.error == "Task timed out after 6.00 seconds"
    assert [(record.outcome, record.started_at) for record in job.phases if record.phase == "work"] == [
        ("error", claimed_at)
    ]
    assert any(entry.message.startswith('Worker died during phase "work" (attempt 1) after 6.0 s') for entry in job.log)
