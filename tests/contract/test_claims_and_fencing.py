"""Beyond the seed: one worker at a time, duplicate and stale advances, fencing, and bad input."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import pytest
from pydantic import BaseModel

from cairn import (
    CairnError,
    ClaimLostError,
    Done,
    InvalidInputError,
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
from cairn.testing.faults import SimulatedCrash
from tests.contract.conftest import StorageFactory
from tests.contract.helpers import recording_scheduler
from tests.support import FakeClock, job_of, make_scheduler

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

    assert isinstance(errors[0], CairnError)
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

    @pipeline.phase(lease_seconds=60)
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

    @pipeline.phase(lease_seconds=30)
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


# --- bad input ----------------------------------------------------------------------------------


class Counter(BaseModel):
    count: int = 0


def _pipelines() -> tuple[Pipeline[Any], Pipeline[Counter]]:
    plain: Pipeline[Any] = Pipeline("plain")
    typed: Pipeline[Counter] = Pipeline("typed", state=Counter)

    @plain.phase(name="work")
    def plain_work(ctx: PhaseContext[Any]) -> Done:
        return Done()

    @typed.phase(name="work")
    def typed_work(ctx: PhaseContext[Counter]) -> Done:
        return Done()

    return plain, typed


BAD_JOB_IDS = ["", "has space", "../escape", "a/b", ".hidden", "x" * 129, "tab\tid", "ü-non-ascii"]


@pytest.mark.parametrize("job_id", BAD_JOB_IDS)
def test_an_invalid_job_id_is_refused_everywhere(storage: Storage, clock: FakeClock, job_id: str) -> None:
    plain, _ = _pipelines()
    scheduler = make_scheduler(plain, storage, clock)

    with pytest.raises(InvalidInputError):
        run_pipeline(job_id, plain, storage=storage, scheduler=scheduler, initial_state={})
    with pytest.raises(InvalidInputError):
        advance_phase(job_id, plain, storage=storage, scheduler=scheduler)
    with pytest.raises(InvalidInputError):
        pause_job(job_id, storage=storage)
    with pytest.raises(InvalidInputError):
        cancel_job(job_id, storage=storage)

    assert storage.list_jobs() == []
    assert scheduler.pending() == 0


@pytest.mark.parametrize("job_id", ["a", "A.b_c-9", "0" * 128])
def test_valid_job_ids_are_accepted(storage: Storage, clock: FakeClock, job_id: str) -> None:
    plain, _ = _pipelines()
    scheduler = make_scheduler(plain, storage, clock)

    run_pipeline(job_id, plain, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    assert job_of(storage, job_id).status == JobStatus.COMPLETE


BAD_STARTS: list[tuple[str, dict[str, Any]]] = [
    ("plain", {"retry_mode": "restart"}),
    ("plain", {"retry_mode": ""}),
    ("plain", {"initial_phase": "nowhere"}),
    ("plain", {"initial_state": {"when": datetime(2024, 1, 1)}}),
    ("plain", {"initial_state": {"ratio": math.nan}}),
    ("plain", {"initial_state": {1, 2}}),
    ("plain", {"initial_state": object()}),
    ("typed", {"initial_state": {"count": "many"}}),
    ("typed", {"initial_state": ["not", "a", "counter"]}),
    ("typed", {"initial_state": {"count": 1}, "retry_mode": "sometimes"}),
]


@pytest.mark.parametrize(("which", "kwargs"), BAD_STARTS)
def test_bad_input_to_run_pipeline_raises_and_changes_nothing(
    storage: Storage, clock: FakeClock, which: str, kwargs: dict[str, Any]
) -> None:
    plain, typed = _pipelines()
    pipeline: Pipeline[Any] = plain if which == "plain" else typed
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"count": 3})
    pause_job(JOB, storage=storage)
    before = job_of(storage, JOB)
    queued = scheduler.pending()
    clock.advance(1)

    with pytest.raises(CairnError):
        run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, **{"initial_state": {}, **kwargs})
    with pytest.raises(CairnError):
        run_pipeline("job-2", pipeline, storage=storage, scheduler=scheduler, **{"initial_state": {}, **kwargs})

    assert job_of(storage, JOB) == before
    assert storage.get_job("job-2") is None
    assert scheduler.pending() == queued


def test_a_valid_model_instance_or_dict_is_accepted_as_state(storage: Storage, clock: FakeClock) -> None:
    _, typed = _pipelines()
    scheduler = make_scheduler(typed, storage, clock)

    first = run_pipeline("job-a", typed, storage=storage, scheduler=scheduler, initial_state=Counter(count=2))
    second = run_pipeline("job-b", typed, storage=storage, scheduler=scheduler, initial_state={"count": 5})

    assert first.checkpoint is not None
    assert second.checkpoint is not None
    assert first.checkpoint.state == {"count": 2}
    assert second.checkpoint.state == {"count": 5}
