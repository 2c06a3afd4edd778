"""The front door after a process death and beside a waiting job: ``run_until_idle()`` and ``recover()``.

A job a dead worker left ``running`` is picked up by the next ``Cairn`` over the same storage once
its claim has expired (never before: a live claim may be another worker's); a job waiting for its
signal holds back nothing but itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from cairn import (
    Cairn,
    Done,
    InlineScheduler,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    RetryPolicy,
    Sleep,
    WaitFor,
)
from cairn.core.storage_port import Storage
from cairn.testing.clock import SkippingClock
from cairn.testing.faults import SimulatedCrash
from cairn.testing.plugin import crash_on, local_cairn
from tests.support import FakeClock

JOB = "doc-1"
LEASE_SECONDS = 600.0


def _front_door(pipelines: Any, storage: Storage, clock: FakeClock) -> Cairn:
    return Cairn(pipelines, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))


def _dies_once(ran: list[str]) -> Pipeline[Any]:
    """``fetch``, then ``work``, whose first run is killed mid-phase (its claim held for ten minutes)."""
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ran.append("fetch")
        return Next("work", {"pages": 3})

    @pipeline.phase(lease_seconds=LEASE_SECONDS, retry=RetryPolicy(max_attempts=2, backoff=1.0, jitter=False))
    def work(ctx: PhaseContext[Any]) -> Done:
        ran.append("work")
        if ran.count("work") == 1:
            raise SimulatedCrash("the process was killed")
        return Done({"pages": ctx.state["pages"]})

    return pipeline


def test_a_new_front_door_finishes_a_job_whose_worker_died_once_its_claim_expires(
    storage: Storage, clock: FakeClock
) -> None:
    ran: list[str] = []
    pipeline = _dies_once(ran)
    dead = _front_door(pipeline, storage, clock)
    dead.start(pipeline, JOB)
    with pytest.raises(SimulatedCrash):
        dead.run_until_idle()
    assert dead.get(JOB).status == JobStatus.RUNNING

    restarted = _front_door(pipeline, storage, clock)
    clock.advance(LEASE_SECONDS / 2)  # past the sweep's idle time, not the claim: the worker may be alive
    assert restarted.recover() == []
    assert restarted.run_until_idle() == 0
    assert ran == ["fetch", "work"]
    assert restarted.get(JOB).status == JobStatus.RUNNING

    clock.advance(LEASE_SECONDS / 2 + 1)
    assert restarted.run_until_idle() >= 1

    job = restarted.get(JOB)
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"pages": 3}
    assert ran == ["fetch", "work", "work"], "the dead phase runs once more, the committed one never again"
    clock.advance(LEASE_SECONDS * 2)
    assert restarted.recover() == []
    assert _front_door(pipeline, storage, clock).run_until_idle() == 0
    assert ran == ["fetch", "work", "work"]


def test_recover_names_the_jobs_it_picked_up_and_leaves_a_live_claim_alone(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = _dies_once(ran)
    dead = _front_door(pipeline, storage, clock)
    dead.start(pipeline, JOB)
    with pytest.raises(SimulatedCrash):
        dead.run_until_idle()
    dead.start(pipeline, "doc-2")  # started, its first advance queued in the dead process only

    clock.advance(LEASE_SECONDS - 1)
    restarted = _front_door(pipeline, storage, clock)
    assert restarted.recover() == ["doc-2"], "a job with no claim and no write for a while is picked up"
    clock.advance(2)
    assert restarted.recover() == [JOB]
    restarted.run_until_idle()

    assert [restarted.get(job_id).status for job_id in (JOB, "doc-2")] == [JobStatus.COMPLETE] * 2
    assert ran.count("fetch") == 2


def test_the_test_kit_recovers_a_job_left_by_a_crash(cairn_clock: SkippingClock) -> None:
    ran: list[str] = []
    pipeline: Pipeline[Any] = Pipeline("two")

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1.0, jitter=False))
    def first(ctx: PhaseContext[Any]) -> Next:
        ran.append("first")
        return Next("second", {"n": 1})

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        ran.append("second")
        return Done(ctx.state)

    storage = crash_on("commit", nth=1)
    app = local_cairn(pipeline, clock=cairn_clock, storage=storage)
    app.start(pipeline, JOB)
    with pytest.raises(SimulatedCrash):
        app.run_until_idle()

    restarted = local_cairn(pipeline, clock=cairn_clock, storage=storage)
    cairn_clock.advance(pipeline.get_phase("first").lease_seconds + 1)
    restarted.run_until_idle()

    assert restarted.get(JOB).result == {"n": 1}
    assert ran == ["first", "first", "second"]


def test_a_recovered_crash_is_recorded_as_an_attempt_with_its_start_and_a_log_line(
    storage: Storage, clock: FakeClock
) -> None:
    ran: list[str] = []
    pipeline = _dies_once(ran)
    dead = _front_door(pipeline, storage, clock)
    dead.start(pipeline, JOB)
    with pytest.raises(SimulatedCrash):
        dead.run_until_idle()
    claimed_at = dead.get(JOB).claimed_at
    assert claimed_at is not None

    clock.advance(LEASE_SECONDS + 1)
    restarted = _front_door(pipeline, storage, clock)
    assert restarted.recover() == [JOB]
    crashed = restarted.get(JOB)
    assert crashed.attempt == 2, "the dead attempt counts against the phase's retry policy"
    [record] = [phase for phase in crashed.phases if phase.phase == "work"]
    assert (record.attempt, record.started_at) == (1, claimed_at)
    assert record.error is not None
    assert "claim expired" in record.error
    assert any('Worker died during phase "work" (attempt 1)' in entry.message for entry in crashed.log)

    restarted.run_until_idle()
    assert restarted.get(JOB).status == JobStatus.COMPLETE


def test_a_recovered_crash_on_the_last_attempt_ends_the_job_in_error(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("once")

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        raise SimulatedCrash("the process was killed")

    dead = _front_door(pipeline, storage, clock)
    dead.start(pipeline, JOB)
    with pytest.raises(SimulatedCrash):
        dead.run_until_idle()

    clock.advance(pipeline.get_phase("only").lease_seconds + 1)
    restarted = _front_door(pipeline, storage, clock)
    assert restarted.recover() == [JOB]
    job = restarted.get(JOB)
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert "claim expired" in job.error


def test_a_waiting_job_does_not_stall_a_sleeping_one(storage: Storage, clock: FakeClock) -> None:
    review: Pipeline[Any] = Pipeline("review")
    nap: Pipeline[Any] = Pipeline("nap")

    @review.phase
    def draft(ctx: PhaseContext[Any]) -> WaitFor:
        return WaitFor("approval", "publish", {"title": "Q3"}, timeout=600, timeout_phase="escalate")

    @review.phase
    def publish(ctx: PhaseContext[Any]) -> Done:
        return Done({"approved_by": ctx.signal["by"]})

    @review.phase
    def escalate(ctx: PhaseContext[Any]) -> Done:
        return Done({"escalated": ctx.state["title"]})

    @nap.phase
    def fetch(ctx: PhaseContext[Any]) -> Sleep:
        return Sleep(3600, "wake", {"pages": 3})

    @nap.phase
    def wake(ctx: PhaseContext[Any]) -> Done:
        return Done({"woke": ctx.state["pages"]})

    jobs = _front_door([review, nap], storage, clock)
    jobs.start(review, "waits")
    jobs.start(nap, "sleeps")
    jobs.run_until_idle()

    assert jobs.get("sleeps").status == JobStatus.COMPLETE, "the sleep ends though the wait's timeout comes first"
    assert jobs.get("sleeps").result == {"woke": 3}
    assert jobs.get("waits").status == JobStatus.WAITING, "the wait's timeout is kept for a later call"

    jobs.run_until_idle()  # the clock has passed the wait's timeout meanwhile
    assert jobs.get("waits").status == JobStatus.COMPLETE
    assert jobs.get("waits").result == {"escalated": "Q3"}
