"""A job is one traced chain: with the template's RecursiveLoop it outlives Lambda's 16-invocation stop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from cairn import Done, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy
from cairn.core.registry import PipelineRegistry
from cairn.core.settings import PHASE
from cairn.testing.invoker import MAX_CHAIN_INVOCATIONS, Chain, RecursiveLoop
from cairn.testing.stack import TEMPLATE_RECURSIVE_LOOP, LocalStack
from pipelines import PIPELINES
from tests.aws import dynamodb_client, s3_client, sqs_client
from tests.support import FakeClock
from tests.template.cfn import Resolver, sam_transform

ITERATIONS = 40
FAILURES = 3
PHASE_HANDLER = "phases.handler"
"""The handler of every phase function (functions/phases.py)."""

looping: Pipeline[Any] = Pipeline("self-loop")


@looping.phase
def step(ctx: PhaseContext[Any]) -> Next | Done:
    """Loops to itself until it has run ITERATIONS times."""
    count = ctx.state["count"] + 1
    return Done({"count": count}) if count >= ITERATIONS else Next("step", {"count": count})


flaky: Pipeline[Any] = Pipeline("flaky")


@flaky.phase(retry=RetryPolicy(max_attempts=FAILURES + 1, backoff=0.001, jitter=False))
def attempt(ctx: PhaseContext[Any]) -> Done:
    """Fails FAILURES times; each retry goes through the delay queue."""
    if ctx.attempt <= FAILURES:
        raise RuntimeError(f"attempt {ctx.attempt} fails")
    return Done({"attempts": ctx.attempt})


def phase_function_ids(resolver: Resolver) -> list[str]:
    """Logical ids of the template's phase functions, whatever their ids: those the generic phase handler runs.

    A phase function is found by its ``CAIRN_PHASE`` variable or its ``phases.handler`` handler, so
    the test holds however the template lays its phase functions out.
    """
    found = []
    for logical_id in resolver.of_type("AWS::Lambda::Function"):
        properties = resolver.properties(logical_id)
        variables = properties.get("Environment", {}).get("Variables", {})
        if PHASE in variables or properties.get("Handler") == PHASE_HANDLER:
            found.append(logical_id)
    return found


def template_setting() -> RecursiveLoop:
    """The RecursiveLoop template.yaml gives the phase functions and the scheduler (one value for all)."""
    resolver = Resolver(sam_transform())
    phase_ids = phase_function_ids(resolver)
    assert len(phase_ids) >= sum(len(pipeline.phase_names) for pipeline in PIPELINES), phase_ids
    function_ids = [*phase_ids, "SchedulerFunction"]
    settings = {resolver.properties(function_id).get("RecursiveLoop", "Terminate") for function_id in function_ids}
    assert len(settings) == 1, settings
    (setting,) = settings
    assert setting in ("Allow", "Terminate")
    return "Allow" if setting == "Allow" else "Terminate"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start_ms=1_750_000_000_000)


def local_stack(clock: FakeClock, recursive_loop: RecursiveLoop) -> Iterator[LocalStack]:
    with mock_aws():
        yield LocalStack.create(
            PipelineRegistry([looping, flaky]),
            dynamodb=dynamodb_client(),
            s3=s3_client(),
            sqs=sqs_client(),
            clock=clock,
            recursive_loop=recursive_loop,
        )


@pytest.fixture
def deployed(clock: FakeClock) -> Iterator[LocalStack]:
    """The local stack with the template's setting."""
    yield from local_stack(clock, template_setting())


@pytest.fixture
def terminating(clock: FakeClock) -> Iterator[LocalStack]:
    """The local stack with Lambda's default, Terminate."""
    yield from local_stack(clock, "Terminate")


def start(stack_: LocalStack, pipeline: Pipeline[Any], state: Any) -> None:
    stack_.runtime.cairn("owner-1", pipeline).start(pipeline, "job-1", state=state)


def function(stack_: LocalStack, pipeline: Pipeline[Any], phase: str) -> str:
    return stack_.runtime.settings.phase_function(pipeline.name, phase)


def job_of(stack_: LocalStack) -> Any:
    return stack_.runtime.storage("owner-1").get_job("job-1")


def test_the_template_allows_recursive_loops_and_the_local_stack_deploys_it_so() -> None:
    assert template_setting() == "Allow"
    assert template_setting() == TEMPLATE_RECURSIVE_LOOP


def test_forty_self_loop_iterations_in_one_chain_complete(deployed: LocalStack) -> None:
    start(deployed, looping, {"count": 0})

    deployed.run_until_idle(timeout=20)

    job = job_of(deployed)
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"count": ITERATIONS}
    step = function(deployed, looping, "step")
    assert deployed.invoker.deepest[step] == ITERATIONS  # one chain, counted as Lambda counts it
    assert deployed.invoker.stopped == []


def test_without_recursive_loop_allow_the_seventeenth_invocation_is_stopped(terminating: LocalStack) -> None:
    start(terminating, looping, {"count": 0})

    terminating.run_until_idle(timeout=20)

    job = job_of(terminating)
    assert job.status == JobStatus.RUNNING  # stranded: only the sweep could move it on
    assert job.checkpoint.state == {"count": MAX_CHAIN_INVOCATIONS}
    [stopped] = terminating.invoker.stopped
    step = function(terminating, looping, "step")
    assert stopped.function == step
    assert stopped.chain.count(step) == MAX_CHAIN_INVOCATIONS  # the 17th would have run


def test_retries_through_the_delay_queue_continue_the_chain(deployed: LocalStack, clock: FakeClock) -> None:
    start(deployed, flaky, None)

    deployed.run_until_idle(timeout=20, on_step=lambda: clock.advance(1.0))

    job = job_of(deployed)
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"attempts": FAILURES + 1}
    attempt_function = function(deployed, flaky, "attempt")
    assert deployed.invoker.deepest[attempt_function] == FAILURES + 1  # phase -> SQS -> scheduler -> phase
    assert deployed.invoker.deepest["cairn-scheduler"] == FAILURES


def test_a_chain_survives_its_trace_header() -> None:
    chain = Chain().entering("cairn-a").entering("cairn-b").entering("cairn-a")

    parsed = Chain.parse(chain.header)

    assert parsed == chain
    assert (parsed.count("cairn-a"), parsed.count("cairn-b"), parsed.count("cairn-c")) == (2, 1, 0)
    assert Chain.parse(None).lineage == {}
