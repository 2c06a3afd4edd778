"""A slot given back wakes the oldest job waiting for its owner's share: of any pipeline through a scheduler that
can reach them all (the inline one, the Lambda and Step Functions drivers), of the run's own through any other."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest

from cairn import Cairn, Done, InlineScheduler, JobStatus, MemoryStorage, PhaseContext, Pipeline
from cairn.aws.lambda_scheduler import LambdaScheduler
from cairn.aws.stepfunctions_scheduler import StepFunctionsScheduler, StepRecorder
from cairn.core.engine.claimed_run import claim_run
from cairn.core.settings import OWNER_CONCURRENCY, Settings
from cairn.features.owner_share import HeldSlot, take_share
from tests.support import FakeClock

HOLDER = "holder"


@pytest.fixture(autouse=True)
def _no_share_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OWNER_CONCURRENCY, raising=False)


def pipeline_named(name: str) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline(name)

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        return Done({"ran": ctx.job_id})

    return pipeline


def holding(app: Cairn, pipeline: Pipeline[Any], scheduler: Any) -> HeldSlot:
    """A job of ``pipeline`` claimed, holding its owner's one slot (its phase not yet run)."""
    app.start(pipeline, HOLDER)
    run = claim_run(HOLDER, pipeline, app.storage, phase="only", worker="w1")
    assert run is not None
    held = take_share(run, scheduler)
    assert isinstance(held, HeldSlot)
    return held


def look(app: Cairn, job_id: str) -> None:
    app.advance(job_id, phase="only", sequence=app.get(job_id).sequence)
    assert app.get(job_id).share_wait is not None  # it waits, noted in its owner's share


def test_a_slot_given_back_wakes_a_job_of_another_pipeline_at_once(clock: FakeClock) -> None:
    first, second = pipeline_named("first"), pipeline_named("second")
    store = MemoryStorage(clock=clock)
    store.owner_concurrency = 1
    app = Cairn([first, second], storage=store, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    held = holding(app, first, app.scheduler)
    app.start(second, "other")
    look(app, "other")
    looked = clock()
    held.give_back()
    app.run_until_idle()
    job = app.get("other")
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"ran": "other"}
    assert clock() == looked  # woken at once: no wait for its own next look


class PlainScheduler:
    """A scheduler with ``schedule_advance`` only (one a user wrote for one pipeline, say)."""

    def __init__(self) -> None:
        self.advances: list[tuple[str, str, int | None, float]] = []

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        self.advances.append((job_id, phase, sequence, delay))


def test_through_a_plain_scheduler_a_slot_wakes_the_oldest_job_of_the_runs_own_pipeline(clock: FakeClock) -> None:
    first, second = pipeline_named("first"), pipeline_named("second")
    store = MemoryStorage(clock=clock)
    store.owner_concurrency = 1
    scheduler = PlainScheduler()
    app = Cairn([first, second], storage=store, scheduler=scheduler)
    held = holding(app, first, scheduler)
    app.start(second, "older")  # waiting longer, but of a pipeline the scheduler may not reach
    clock.advance(1.0)
    app.start(first, "newer")
    look(app, "older")
    look(app, "newer")
    scheduler.advances.clear()
    held.give_back()
    assert scheduler.advances == [("newer", "only", app.get("newer").sequence, 0.0)]


class Invoker:
    """A Lambda client that keeps what it was asked to invoke."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def invoke(
        self, *, FunctionName: str, InvocationType: Literal["Event", "RequestResponse", "DryRun"], Payload: bytes
    ) -> Any:
        assert InvocationType == "Event"
        sent = {key: value for key, value in json.loads(Payload).items() if value is not None}
        self.calls.append((FunctionName, sent))
        return {"StatusCode": 202}


def test_the_direct_driver_wakes_a_job_of_another_pipeline_in_that_pipelines_function() -> None:
    invoker = Invoker()
    settings = Settings(function_prefix="stack-")
    scheduler = LambdaScheduler(
        owner="alice", pipeline=pipeline_named("first"), settings=settings, lambda_client=invoker
    )
    scheduler.schedule_wake("job-9", pipeline="second", phase="only", sequence=7)
    scheduler.schedule_wake("job-8", pipeline="first", phase="only", sequence=3)
    assert invoker.calls == [
        (
            "stack-second-only",
            {"jobId": "job-9", "owner": "alice", "pipeline": "second", "phase": "only", "sequence": 7},
        ),
        ("stack-first-only", {"jobId": "job-8", "owner": "alice", "pipeline": "first", "phase": "only", "sequence": 3}),
    ]


class Executions:
    """A Step Functions client that keeps the executions it was asked to start."""

    def __init__(self) -> None:
        self.inputs: list[dict[str, Any]] = []

    def start_execution(self, *, stateMachineArn: str, name: str, input: str) -> dict[str, str]:
        self.inputs.append(json.loads(input))
        return {"executionArn": f"{stateMachineArn}:{name}"}


def test_inside_an_execution_a_woken_job_gets_an_execution_of_its_own() -> None:
    executions = Executions()
    starter = StepFunctionsScheduler(
        owner="alice",
        pipeline="first",
        state_machine_arn="arn:aws:states:us-east-1:123456789012:stateMachine:m",
        client=executions,  # type: ignore[arg-type]
    )
    recorder = StepRecorder(owner="alice", pipeline="first", waker=lambda: starter)
    recorder.schedule_advance("mine", phase="only", sequence=4)
    recorder.schedule_wake("job-9", pipeline="second", phase="only", sequence=7)
    assert recorder.scheduled is not None
    assert recorder.scheduled.sequence == 4  # the execution's own job's next advance is left as it was
    assert executions.inputs == [
        {"jobId": "job-9", "owner": "alice", "pipeline": "second", "sequence": 7, "delay": 0},
    ]
    StepRecorder().schedule_wake("job-9", pipeline="second", phase="only", sequence=7)  # no waker: it looks on its own
