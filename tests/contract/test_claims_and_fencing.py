"""Beyond the seed, on every store: one worker at a time, duplicate and stale advances, advances of a job that is
not running, fencing, and the job ids every store accepts."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import CairnError, Done, Fail, JobStatus, Next, PhaseContext, Pipeline, advance_phase, run_pipeline
from cairn.adapters import ClaimLostError
from cairn.core.engine import cancel_job, pause_job
from cairn.core.storage_port import Storage
from cairn.testing.faults import SimulatedCrash
from tests.contract.conftest import StorageFactory
from tests.support import FakeClock, job_of, make_scheduler, recording_scheduler

JOB = "job-1"


def _two_phases(ran: list[str], *, lease_seconds: float = 900.0) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase(lease_seconds=lease_seconds)
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ran.append("fetch")
        return Next("extract", {"fetched": True})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        ran.append("extract")
        return Done("ok")

    return pipeline


def test_a_duplicate_delivery_runs_the_phase_once(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = _two_phases(ran)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.schedule_advance(JOB, phase="fetch")

    scheduler.drain()

    job = job_of(storage, JOB)
    assert ran == ["fetch", "extract"]
    assert [record.phase for record in job.phases] == ["fetch", "extract"]
    assert job.status == JobStatus.COMPLETE


def test_a_second_worker_cannot_claim_while_the_first_is_mid_phase(
    storage_factory: StorageFactory, clock: FakeClock
) -> None:
    storage = storage_factory(clock)
    other_worker_storage = storage_factory(clock)
    pipeline: Pipeline[Any] = Pipeline("intake")
    ran: list[str] = []
    concurrent: list[object] = []

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Done:
        ran.append("fetch")
        other = make_scheduler(pipeline, other_worker_storage, clock)
        concurrent.append(advance_phase(JOB, pipeline, storage=other_worker_storage, scheduler=other, phase="fetch"))
        concurrent.append(advance_phase(JOB, pipeline, storage=other_worker_storage, scheduler=other))
        return Done("once")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    assert concurrent == [None, None]
    assert ran == ["fetch"]
    job = job_of(storage, JOB)
    assert job.status == JobStatus.COMPLETE
    assert len(job.phases) == 1


@pytest.mark.parametrize("phase", ["fetch", "nowhere"])
def test_a_stale_advance_does_nothing(storage: Storage, clock: FakeClock, phase: str) -> None:
    ran: list[str] = []
    pipeline = _two_phases(ran)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    before = job_of(storage, JOB)
    assert before.checkpoint is not None
    assert before.checkpoint.next_phase == "extract"
    clock.advance(1)

    assert advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler, phase=phase) is None

    assert job_of(storage, JOB) == before
    assert ran == ["fetch"]
    assert scheduler.pending() == 1


def test_an_advance_for_a_later_phase_does_not_skip_ahead(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = _two_phases(ran)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    before = job_of(storage, JOB)

    assert advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler, phase="extract") is None

    assert job_of(storage, JOB) == before
    assert ran == []


def test_a_worker_that_was_taken_over_cannot_commit(storage_factory: StorageFactory, clock: FakeClock) -> None:
    storage = storage_factory(clock)
    retry_storage = storage_factory(clock)
    pipeline: Pipeline[Any] = Pipeline("intake")
    taken_over: list[Any] = []
    retry_scheduler = make_scheduler(pipeline, retry_storage, clock)

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        if not taken_over:
            clock.advance(2)
            taken_over.append(run_pipeline(JOB, pipeline, storage=retry_storage, scheduler=retry_scheduler))
            ctx.log("written by the stale worker")
            ctx.add_usage(tokens=1000)
            return Next("extract", {"from": "stale worker"})
        return Next("extract", {"from": "retry"})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    scheduler = recording_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"from": "start"})

    assert advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler, phase="fetch") is None

    job = job_of(storage, JOB)
    assert job.checkpoint == taken_over[0].checkpoint
    assert job.checkpoint is not None
    assert (job.checkpoint.next_phase, job.checkpoint.state) == ("fetch", {"from": "start"})
    assert job.status == JobStatus.RUNNING
    assert job.phases == []
    assert "written by the stale worker" not in [entry.message for entry in job.log]
    assert job.usage.get("tokens", 0) == 0
    assert [item.phase for item in scheduler.scheduled] == ["fetch"], "a refused commit schedules nothing"

    retry_scheduler.drain()
    done = job_of(storage, JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"from": "retry"}


def test_save_state_after_losing_the_claim_raises_claim_lost(storage_factory: StorageFactory, clock: FakeClock) -> None:
    storage = storage_factory(clock)
    retry_storage = storage_factory(clock)
    pipeline: Pipeline[Any] = Pipeline("intake")
    errors: list[BaseException] = []
    retry_scheduler = make_scheduler(pipeline, retry_storage, clock)

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Done:
        if not errors:
            run_pipeline(JOB, pipeline, storage=retry_storage, scheduler=retry_scheduler)
            with pytest.raises(ClaimLostError) as info:
                ctx.save_state({"progress": "stale"})
            errors.append(info.value)
        return Done(ctx.state)

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"progress": "start"})

    assert advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler, phase="fetch") is None

    assert len(errors) == 1
    job = job_of(storage, JOB)
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"progress": "start"}
    assert job.status == JobStatus.RUNNING


def test_an_uncaught_claim_lost_in_a_phase_commits_nothing(storage_factory: StorageFactory, clock: FakeClock) -> None:
    storage = storage_factory(clock)
    retry_storage = storage_factory(clock)
    pipeline: Pipeline[Any] = Pipeline("intake")
    retry_scheduler = make_scheduler(pipeline, retry_storage, clock)
    calls: list[int] = []

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Done:
        calls.append(1)
        if len(calls) == 1:
            run_pipeline(JOB, pipeline, storage=retry_storage, scheduler=retry_scheduler)
            ctx.save_state({"progress": "stale"})
        return Done("retry finished")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"progress": "start"})

    assert advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler, phase="fetch") is None

    job = job_of(storage, JOB)
    assert job.status == JobStatus.RUNNING, "the lost claim is not a phase failure"
    assert job.error is None
    retry_scheduler.drain()
    assert job_of(storage, JOB).result == "retry finished"


def test_a_dead_workers_claim_blocks_others_until_its_lease_expires(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    ran: list[str] = []

    @pipeline.phase(timeout=60, lease_seconds=60)
    def fetch(ctx: PhaseContext[Any]) -> Done:
        ran.append("fetch")
        if len(ran) == 1:
            raise SimulatedCrash("worker killed")
        return Done("recovered")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    with pytest.raises(SimulatedCrash):
        scheduler.drain()

    sweeper = make_scheduler(pipeline, storage, clock)
    clock.advance(59)
    assert advance_phase(JOB, pipeline, storage=storage, scheduler=sweeper, phase="fetch") is None
    assert ran == ["fetch"]

    clock.advance(2)
    job = advance_phase(JOB, pipeline, storage=storage, scheduler=sweeper, phase="fetch")

    assert job is not None
    assert job.status == JobStatus.COMPLETE
    assert ran == ["fetch", "fetch"]
    assert job_of(storage, JOB).result == "recovered"


def test_a_worker_whose_lease_expired_loses_to_the_one_that_claimed_after_it(
    storage_factory: StorageFactory, clock: FakeClock
) -> None:
    storage = storage_factory(clock)
    sweeper_storage = storage_factory(clock)
    pipeline: Pipeline[Any] = Pipeline("intake")
    ran: list[str] = []
    sweeper_result: list[Any] = []
    sweeper = make_scheduler(pipeline, sweeper_storage, clock)

    @pipeline.phase(timeout=30, lease_seconds=30)
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ran.append("fetch")
        if len(ran) == 1:
            clock.advance(31)
            sweeper_result.append(
                advance_phase(JOB, pipeline, storage=sweeper_storage, scheduler=sweeper, phase="fetch")
            )
            return Next("extract", {"by": "slow worker"})
        return Next("extract", {"by": "sweeper"})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    scheduler = recording_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})

    assert advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler, phase="fetch") is None

    assert sweeper_result[0] is not None
    job = job_of(storage, JOB)
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"by": "sweeper"}
    assert [record.phase for record in job.phases] == ["fetch"]
    assert [item.phase for item in scheduler.scheduled] == ["fetch"], "a refused commit schedules nothing"
    sweeper.drain()
    assert job_of(storage, JOB).result == {"by": "sweeper"}


def test_a_job_belonging_to_another_pipeline_is_refused(storage: Storage, clock: FakeClock) -> None:
    billing: Pipeline[Any] = Pipeline("billing")
    intake_ran: list[str] = []

    @billing.phase
    def charge(ctx: PhaseContext[Any]) -> Done:
        return Done()

    intake = _two_phases(intake_ran)
    billing_scheduler = make_scheduler(billing, storage, clock)
    run_pipeline(JOB, billing, storage=storage, scheduler=billing_scheduler, initial_state={"amount": 5})
    before = job_of(storage, JOB)
    intake_scheduler = make_scheduler(intake, storage, clock)

    with pytest.raises(CairnError):
        run_pipeline(JOB, intake, storage=storage, scheduler=intake_scheduler, initial_state={})
    with pytest.raises(CairnError):
        run_pipeline(JOB, intake, storage=storage, scheduler=intake_scheduler, initial_state={}, retry_mode="full")

    assert job_of(storage, JOB) == before
    assert intake_scheduler.pending() == 0
    assert intake_ran == []


def test_an_advance_by_another_pipeline_does_not_touch_the_job(storage: Storage, clock: FakeClock) -> None:
    billing: Pipeline[Any] = Pipeline("billing")
    ran: list[str] = []

    @billing.phase(name="fetch")
    def billing_fetch(ctx: PhaseContext[Any]) -> Done:
        ran.append("billing fetch")
        return Done()

    intake = _two_phases(ran)
    billing_scheduler = make_scheduler(billing, storage, clock)
    run_pipeline(JOB, billing, storage=storage, scheduler=billing_scheduler, initial_state={"amount": 5})
    before = job_of(storage, JOB)
    intake_scheduler = make_scheduler(intake, storage, clock)

    try:
        outcome = advance_phase(JOB, intake, storage=storage, scheduler=intake_scheduler, phase="fetch")
    except CairnError:
        outcome = None

    assert ran == [], "the intake pipeline's code must never run on a billing job"
    assert job_of(storage, JOB) == before
    assert outcome is None


# --- advance only while running -----------------------------------------------------------------


def _reach(status: str, storage: Storage, clock: FakeClock, calls: list[str]) -> Pipeline[Any]:
    """A one-phase pipeline with job JOB left in ``status`` ("missing" leaves no job at all)."""
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Done | Fail:
        calls.append("work")
        return Fail("broken") if ctx.state.get("fail") else Done("ok")

    if status == "missing":
        return pipeline
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"fail": status == "error"})
    if status in ("complete", "error"):
        scheduler.drain()
    elif status == "paused":
        pause_job(JOB, storage=storage)
    elif status == "cancelled":
        cancel_job(JOB, storage=storage)
    return pipeline


@pytest.mark.parametrize("status", ["complete", "error", "paused", "cancelled", "missing"])
@pytest.mark.parametrize("phase", [None, "work"])
def test_advance_does_nothing_unless_the_job_is_running(
    storage: Storage, clock: FakeClock, status: str, phase: str | None
) -> None:
    calls: list[str] = []
    pipeline = _reach(status, storage, clock, calls)
    before = storage.get_job(JOB)
    ran_before = list(calls)
    clock.advance(1)
    scheduler = make_scheduler(pipeline, storage, clock)

    assert advance_phase(JOB, pipeline, storage=storage, scheduler=scheduler, phase=phase) is None

    assert storage.get_job(JOB) == before
    assert calls == ran_before
    assert scheduler.pending() == 0


# --- job ids ------------------------------------------------------------------------------------


def _plain() -> Pipeline[Any]:
    plain: Pipeline[Any] = Pipeline("plain")

    @plain.phase(name="work")
    def plain_work(ctx: PhaseContext[Any]) -> Done:
        return Done()

    return plain


@pytest.mark.parametrize("job_id", ["a", "A.b_c-9", "0" * 128])
def test_valid_job_ids_are_accepted(storage: Storage, clock: FakeClock, job_id: str) -> None:
    plain = _plain()
    scheduler = make_scheduler(plain, storage, clock)

    run_pipeline(job_id, plain, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    assert job_of(storage, job_id).status == JobStatus.COMPLETE
