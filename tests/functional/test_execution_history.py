"""The Step Functions driver keeps every execution's history far below Step Functions' 25,000 events.

On moto's Step Functions engine, a long job hands itself on to fresh executions (continue-as-new) and a large map
runs its slots as child executions in rounds, so the parent's history grows with neither. ``make test-long`` runs
them with the hand-off and the slot limit made small (many hand-offs and rounds in seconds); ``make history-proof``
runs them with the shipped limits on a job of 2,000 transitions and a map of 5,000 items.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from cairn import Done, JobStatus, Map, Next, PhaseContext, Pipeline
from cairn.aws import execution_history
from cairn.core.registry import PipelineRegistry
from cairn.dev.moto_speedups import proportional_moto
from cairn.testing.stepfunctions import DEFINITION
from tests.functional.test_stepfunctions import Deploy, Machine, deployments

FULL = os.environ.get("CAIRN_HISTORY_PROOF") == "1"
"""``make history-proof``: the shipped limits at the issue's sizes (several minutes); else small limits, quick."""
TRANSITIONS = 2_000 if FULL else 150
ITEMS = 5_000 if FULL else 300
WIDTH = 2
EVENTS_PER_PHASE = 7
"""A phase of the loop: RunPhase (entered, scheduled, started, succeeded, exited) and AfterPhase (entered, exited)."""


@pytest.fixture
def deploy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Deploy]:
    """Deploys on moto's Step Functions engine with the shipped limits in the proof, limits 10 times smaller
    otherwise; moto's time per request kept flat (it would grow with the job's history)."""
    if not FULL:
        monkeypatch.setattr(execution_history, "SEQUENCES_PER_EXECUTION", 40)
        monkeypatch.setattr(execution_history, "ITEMS_PER_SLOT", 50)
    with proportional_moto(), deployments() as make:
        yield make


def counting(transitions: int, runs: Counter[int]) -> Pipeline[Any]:
    """One phase that runs ``transitions`` times, counting each run by its step."""
    pipeline: Pipeline[Any] = Pipeline("counting", max_transitions=100_000)

    @pipeline.phase
    def step(ctx: PhaseContext[Any]) -> Next | Done:
        done = ctx.state["n"] + 1
        runs[done] += 1
        return Next("step", {"n": done}) if done < transitions else Done({"n": done})

    return pipeline


def mapping(items: int, runs: Counter[int]) -> Pipeline[Any]:
    """``split`` maps ``items`` numbers over ``item`` (``WIDTH`` at a time); ``total`` adds the results."""
    pipeline: Pipeline[Any] = Pipeline("mapping")

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map(list(range(items)), phase="item", then="total", max_concurrency=WIDTH)

    @pipeline.phase
    def item(ctx: PhaseContext[Any]) -> Done:
        assert ctx.item is not None
        runs[ctx.item] += 1
        return Done(ctx.state)

    @pipeline.phase
    def total(ctx: PhaseContext[Any]) -> Done:
        return Done({"count": len(ctx.results or []), "sum": sum(ctx.results or [])})

    return pipeline


def settled(machine: Machine, job_id: str, *, timeout: float) -> list[dict[str, Any]]:
    """Every execution of the machine, oldest first, once the job has ended and none runs."""
    deadline = time.monotonic() + timeout
    while machine.job(job_id).status == JobStatus.RUNNING:
        assert time.monotonic() < deadline, f"job {job_id} still running after {timeout}s"
        time.sleep(0.1)
    return machine.finished(1, timeout=timeout)


def events(machine: Machine, execution: dict[str, Any]) -> list[dict[str, Any]]:
    """The execution's whole history."""
    pages = machine.sfn.get_paginator("get_execution_history").paginate(executionArn=execution["executionArn"])
    return [dict(event) for page in pages for event in page["events"]]


def test_a_long_job_hands_itself_on_before_any_history_nears_the_limit(deploy: Deploy) -> None:
    runs: Counter[int] = Counter()
    pipeline = counting(TRANSITIONS, runs)
    machine = deploy(PipelineRegistry([pipeline]))

    machine.start("long-1", pipeline, initial_state={"n": 0})

    executions = settled(machine, "long-1", timeout=1_800)
    job = machine.job("long-1")
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"n": TRANSITIONS}
    assert set(runs) == set(range(1, TRANSITIONS + 1)), "a step never ran"
    assert set(runs.values()) == {1}, "a step ran twice"
    assert all(execution["status"] == "SUCCEEDED" for execution in executions)
    limit = execution_history.SEQUENCES_PER_EXECUTION
    # each phase moves the sequence by 2: an execution runs limit / 2 phases, then starts the next
    assert len(executions) == -(-TRANSITIONS * 2 // limit)
    sizes = [len(events(machine, execution)) for execution in executions]
    ceiling = limit // 2 * EVENTS_PER_PHASE + 30
    assert max(sizes) <= ceiling, f"events per execution: {sizes}"
    assert max(sizes) * 10 < execution_history.HISTORY_EVENT_LIMIT or not FULL
    # every execution after the first was started by the one before, named by the job and the sequence it took on
    for parent, child in itertools.pairwise(executions):
        started = json.loads(child["input"])
        assert started["AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"] == parent["executionArn"]
        assert child["name"].startswith(execution_history.execution_name("long-1", started["sequence"]) + "-")
        assert len(child["name"]) <= 80
        handed = [event for event in events(machine, parent) if event["type"] == "TaskSucceeded"][-1]
        assert child["executionArn"] in handed["taskSucceededEventDetails"]["output"]
    print(f"{TRANSITIONS} transitions: {len(executions)} executions, events each {sizes}")


def test_a_large_map_runs_its_slots_in_rounds_and_the_parent_history_stays_small(deploy: Deploy) -> None:
    runs: Counter[int] = Counter()
    pipeline = mapping(ITEMS, runs)
    machine = deploy(PipelineRegistry([pipeline]))

    machine.start("map-1", pipeline, initial_state={})

    [execution] = settled(machine, "map-1", timeout=1_800)
    job = machine.job("map-1")
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result == {"count": ITEMS, "sum": ITEMS * (ITEMS - 1) // 2}
    assert set(runs) == set(range(ITEMS)), "an item never ran"
    assert set(runs.values()) == {1}, "an item ran twice"
    per_slot = execution_history.ITEMS_PER_SLOT
    rounds = machine.sfn.list_map_runs(executionArn=execution["executionArn"])["mapRuns"]
    assert len(rounds) == -(-ITEMS // (WIDTH * per_slot))
    for each in rounds:  # a round is one child execution per slot
        counts = machine.sfn.describe_map_run(mapRunArn=each["mapRunArn"])["executionCounts"]
        assert counts["total"] == counts["succeeded"] == WIDTH
    history = events(machine, execution)
    assert execution["status"] == "SUCCEEDED"
    # the parent: about 25 events a round, whatever the number of items
    assert len(history) <= 25 * len(rounds) + 20, len(history)
    entered = {event["stateEnteredEventDetails"]["name"] for event in history if "stateEnteredEventDetails" in event}
    assert "RunItems" in entered
    assert "RunItem" not in entered, "an item's events are in the parent's history"
    # a child runs at most ITEMS_PER_SLOT items of its slot, each through the item processor's 4 states
    processor = json.loads(DEFINITION.read_text())["States"]["RunItems"]["ItemProcessor"]
    assert processor["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    child_events = per_slot * (2 * len(processor["States"]) + 3) + 10
    assert child_events * 2 < execution_history.HISTORY_EVENT_LIMIT
    print(f"{ITEMS} items, {WIDTH} wide: {len(rounds)} rounds, parent {len(history)} events, child <= {child_events}")
