"""A job survives process deaths at any storage operation and ends exactly as a crash-free run does.

A simulated crash (:class:`SimulatedCrash`) kills the "process" just before or
just after a chosen storage operation. Recovery is either a user's retry
(``run_pipeline(..., retry_mode="resume")``, which fences any claim the dead
worker left) or a sweeper that waits for the dead worker's lease to run out and
re-delivers the checkpoint's ``nextPhase``. Either way the job must finish with
the crash-free result, commit every phase transition exactly once, and lose no
effect, while repeating only the work done since the last checkpoint.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn import (
    Done,
    InlineScheduler,
    Job,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    RetryPolicy,
    advance_phase,
    run_pipeline,
)
from cairn.core.storage_port import Storage
from cairn.testing.faults import CrashingStorage, CrashPoint, SimulatedCrash
from tests.contract.conftest import StorageFactory
from tests.support import FakeClock, job_of, make_scheduler

Recovery = Literal["resume", "lease"]
Effect = tuple[str, str]
Transition = tuple[str, str, str | None]

ITEMS = ["alpha", "beta", "gamma"]
WEIGHTS = {"alpha": 3, "beta": 5, "gamma": 7}
LEASE_SECONDS = 60.0
MAX_CRASHES = 6
#: Examples per storage: the exhaustive single-crash sweep covers every point on each; these add
#: random sequences of crashes at a cost the suite can afford.
EXAMPLES = {"memory": 100, "file": 30, "dynamodb": 12, "dynamodb-http": 6}

_job_numbers = itertools.count()


class UpstreamNotReady(Exception):
    """The one transient failure of the ``validate`` phase."""


def build_pipeline(effects: list[Effect]) -> Pipeline[Any]:
    """Four phases: a per-item loop with checkpoints, a phase that fails once, and one with side effects.

    ``effects`` collects what the phases did outside the pipeline, as
    ``(phase, item)``; it is how the test sees work being repeated.
    """
    pipeline: Pipeline[Any] = Pipeline("crash-recovery")

    @pipeline.phase(timeout=int(LEASE_SECONDS), lease_seconds=LEASE_SECONDS)
    def prepare(ctx: PhaseContext[Any]) -> Next:
        return Next("process", {"items": list(ctx.state["items"]), "processed": [], "total": 0, "tripped": False})

    @pipeline.phase(timeout=int(LEASE_SECONDS), lease_seconds=LEASE_SECONDS)
    def process(ctx: PhaseContext[Any]) -> Next:
        state = dict(ctx.state)
        for item in state["items"]:
            if item in state["processed"]:
                continue
            effects.append(("process", item))
            state = {**state, "processed": [*state["processed"], item], "total": state["total"] + WEIGHTS[item]}
            ctx.save_state(state)
        return Next("validate", state)

    @pipeline.phase(
        retry=RetryPolicy(max_attempts=2, backoff=0, jitter=False),
        timeout=int(LEASE_SECONDS),
        lease_seconds=LEASE_SECONDS,
    )
    def validate(ctx: PhaseContext[Any]) -> Next:
        state = dict(ctx.state)
        if not state["tripped"]:
            ctx.save_state({**state, "tripped": True})
            raise UpstreamNotReady("upstream not ready yet")
        return Next("publish", {**state, "checksum": f"{len(state['processed'])}:{state['total']}"})

    @pipeline.phase(timeout=int(LEASE_SECONDS), lease_seconds=LEASE_SECONDS)
    def publish(ctx: PhaseContext[Any]) -> Done:
        state = ctx.state
        for item in state["processed"]:
            effects.append(("publish", item))
        return Done({"items": state["processed"], "total": state["total"], "checksum": state["checksum"]})

    return pipeline


@dataclass
class Drive:
    """What happened while a job was driven to completion through crashes."""

    job: Job
    effects: list[Effect]
    crashes: int = 0
    operations: list[list[str]] = field(default_factory=list)


def drive(store: Storage, clock: FakeClock, crash_points: list[CrashPoint], recovery: Recovery) -> Drive:
    """Run a fresh job, dying at each crash point in turn (one per process), until it completes.

    After a death the next "process" starts with an empty queue: with
    ``resume`` it retries the job through ``run_pipeline``; with ``lease`` it
    waits until the dead worker's lease has run out and re-delivers the
    checkpoint's ``nextPhase``, as a sweeper would.
    """
    job_id = f"crash-{next(_job_numbers)}"
    effects: list[Effect] = []
    pipeline = build_pipeline(effects)
    pending = list(crash_points)
    crashes = 0
    operations: list[list[str]] = []
    for _ in range(len(crash_points) + 2):
        job = store.get_job(job_id)
        if job is not None and job.status == JobStatus.COMPLETE:
            return Drive(job=job, effects=effects, crashes=crashes, operations=operations)
        point = pending.pop(0) if pending else None
        process = CrashingStorage(store, point)
        scheduler = make_scheduler(pipeline, process, clock)
        try:
            if recovery == "resume" or job is None:
                run_pipeline(
                    job_id,
                    pipeline,
                    storage=process,
                    scheduler=scheduler,
                    initial_state={"items": ITEMS},
                    retry_mode="resume",
                )
            else:
                assert job.status == JobStatus.RUNNING, f"job stopped with {job.status}: {job.error}"
                assert job.checkpoint is not None
                if job.has_live_claim(clock()):
                    # The dead worker's claim still holds: nobody else may run the phase yet.
                    blocked = advance_phase(
                        job_id, pipeline, storage=store, scheduler=InlineScheduler(), phase=job.checkpoint.next_phase
                    )
                    assert blocked is None, "a second worker ran a phase while a live claim was held"
                    clock.advance(LEASE_SECONDS + 1)
                scheduler.schedule_advance(job_id, phase=job.checkpoint.next_phase)
            scheduler.drain()
        except SimulatedCrash:
            crashes += 1
            continue  # the dead process's queue dies with it
        finally:
            operations.append(process.operations)
        assert scheduler.pending() == 0
    job = job_of(store, job_id)
    raise AssertionError(f"job did not complete after {crashes} crash(es): status {job.status}, error {job.error}")


def transitions_of(job: Job) -> list[Transition]:
    """The committed phase transitions (outcomes other than a retry), in order."""
    return [(record.phase, record.outcome, record.next_phase) for record in job.phases if record.outcome != "retry"]


@dataclass(frozen=True)
class Baseline:
    result: Any
    transitions: list[Transition]
    effects: list[Effect]
    operation_count: int


def crash_free(store: Storage, clock: FakeClock) -> Baseline:
    run = drive(store, clock, [], "resume")
    assert run.job.status == JobStatus.COMPLETE
    assert [record.outcome for record in run.job.phases].count("retry") == 1
    return Baseline(
        result=run.job.result,
        transitions=transitions_of(run.job),
        effects=run.effects,
        operation_count=sum(len(ops) for ops in run.operations),
    )


def assert_recovered(run: Drive, baseline: Baseline) -> None:
    job = run.job
    assert job.status == JobStatus.COMPLETE
    assert job.result == baseline.result
    assert job.checkpoint is None
    assert job.error is None
    assert job.lease_owner is None
    # Every next/done transition is committed exactly once, in the crash-free order.
    assert transitions_of(job) == baseline.transitions
    # The failing-once phase is retried at most once: a crash may hide its retry record, never add one.
    retries = [record for record in job.phases if record.outcome == "retry"]
    assert len(retries) <= 1
    assert all(record.phase == "validate" for record in retries)
    # No effect is lost, and only work after the last checkpoint is repeated.
    assert set(run.effects) == set(baseline.effects)
    counts = Counter(run.effects)
    repeated_items = sum(count - 1 for (phase, _), count in counts.items() if phase == "process")
    assert repeated_items <= run.crashes, "per-item checkpoints must bound repeated items to one per crash"
    assert all(count <= 1 + run.crashes for count in counts.values())


def test_crash_free_run_commits_each_phase_once(storage_factory: StorageFactory, clock: FakeClock) -> None:
    baseline = crash_free(storage_factory(clock), clock)
    assert baseline.result == {"items": ITEMS, "total": 15, "checksum": "3:15"}
    assert baseline.transitions == [
        ("prepare", "next", "process"),
        ("process", "next", "validate"),
        ("validate", "next", "publish"),
        ("publish", "done", None),
    ]
    assert baseline.effects == [("process", item) for item in ITEMS] + [("publish", item) for item in ITEMS]


@pytest.mark.parametrize("recovery", ["resume", "lease"])
@pytest.mark.parametrize("moment", ["before", "after"])
def test_a_crash_at_any_single_operation_is_recovered(
    storage_factory: StorageFactory, clock: FakeClock, moment: Literal["before", "after"], recovery: Recovery
) -> None:
    store = storage_factory(clock)
    baseline = crash_free(store, clock)
    for operation in range(baseline.operation_count):
        run = drive(store, clock, [CrashPoint(operation=operation, moment=moment)], recovery)
        assert run.crashes == 1, f"no crash at operation {operation}"
        assert_recovered(run, baseline)


@pytest.mark.parametrize("recovery", ["resume", "lease"])
def test_any_sequence_of_crashes_is_recovered(
    storage_factory: StorageFactory, clock: FakeClock, recovery: Recovery, storage_kind: str
) -> None:
    store = storage_factory(clock)
    baseline = crash_free(store, clock)
    points = st.builds(
        CrashPoint,
        operation=st.integers(min_value=0, max_value=baseline.operation_count),
        moment=st.sampled_from(["before", "after"]),
    )
    examples = EXAMPLES[storage_kind]

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(crash_points=st.lists(points, max_size=MAX_CRASHES))
    def check(crash_points: list[CrashPoint]) -> None:
        run = drive(store, clock, crash_points, recovery)
        assert run.crashes <= len(crash_points)
        assert_recovered(run, baseline)

    check()
