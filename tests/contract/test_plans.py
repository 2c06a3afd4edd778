"""Typed plans on every store: a checkpoint after each top-level step, a resume at the next step, and a
plan with another id refused.

Loops (``each``), branches (``when``) and nested steps run inside their top-level step and share its
checkpoint; a phase named by a step runs in-process and returns ``Done(result)``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from cairn import Done, Fail, JobStatus, PhaseContext, Pipeline, run_pipeline
from cairn.agents import Plan, PlanProgress
from cairn.core.storage_port import Storage
from cairn.testing.faults import CrashingStorage, CrashPoint, SimulatedCrash
from tests.support import FakeClock, counters, job_of, make_scheduler

PLAN = {
    "id": "brief-v1",
    "goal": "Summarise the sources",
    "steps": [
        {"id": "find", "tool": "search", "input": {"query": "cairns"}, "save_as": "found"},
        {"id": "read_all", "tool": "read", "each": [{"name": "a"}, {"name": "b"}], "save_as": "texts"},
        {
            "id": "check",
            "steps": [
                {"id": "count", "tool": "count", "input": {"texts": {"$saved": "texts"}}, "save_as": "long"},
                {"id": "trim", "tool": "trim", "input": {"texts": {"$saved": "texts"}}, "when": "long"},
                {"id": "never", "tool": "trim", "input": {"texts": []}, "when": "missing"},
            ],
        },
        {"id": "shout", "phase": "upper", "input": {"text": "done"}},
    ],
}


@dataclass
class Bench:
    pipeline: Pipeline[Any]
    calls: Counter[str] = field(default_factory=Counter)


def _bench() -> Bench:
    bench = Bench(Pipeline("planner"))

    def search(query: str) -> list[str]:
        """Sources about ``query``."""
        bench.calls["search"] += 1
        return ["a", "b"]

    def read(name: str) -> str:
        """One source's text."""
        bench.calls["read"] += 1
        return f"text of {name} " * 3

    def count(texts: list[str]) -> bool:
        """Whether the texts are long."""
        bench.calls["count"] += 1
        return sum(map(len, texts)) > 20

    def trim(texts: list[str]) -> list[str]:
        """The texts cut short."""
        bench.calls["trim"] += 1
        return [text[:10] for text in texts]

    bench.pipeline.plan_phase(
        "gather", plan=lambda state: state["plan"], tools=[search, read, count, trim], next="write"
    )

    @bench.pipeline.phase
    def write(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state["plan_progress"]["results"])

    @bench.pipeline.phase
    def upper(ctx: PhaseContext[Any]) -> Done | Fail:
        bench.calls["upper"] += 1
        ctx.add_usage(shouts=1)
        return Done(ctx.state["text"].upper())

    return bench


def _drive(
    bench: Bench, store: Storage, clock: FakeClock, job_id: str, crash: CrashPoint | None, plan: Any = PLAN
) -> Any:
    for point in (crash, None):
        process = CrashingStorage(store, point)
        scheduler = make_scheduler(bench.pipeline, process, clock)
        try:
            run_pipeline(job_id, bench.pipeline, storage=process, scheduler=scheduler, initial_state={"plan": plan})
            scheduler.drain()
        except SimulatedCrash:
            continue
        job = store.get_job(job_id)
        if job is not None and job.status == JobStatus.COMPLETE:
            break
    return store.get_job(job_id)


EXPECTED = {
    "find": ["a", "b"],
    "read_all": ["text of a " * 3, "text of b " * 3],
    "check": {"count": True, "trim": ["text of a ", "text of b "], "never": None},
    "shout": "DONE",
}


def test_the_plan_runs_its_steps_loops_branches_and_phases_in_order(storage: Storage, clock: FakeClock) -> None:
    bench = _bench()
    job = _drive(bench, storage, clock, "plan-1", None)

    assert job.status == JobStatus.COMPLETE
    assert job.result == EXPECTED
    assert bench.calls == Counter({"search": 1, "read": 2, "count": 1, "trim": 1, "upper": 1})
    # the plan's steps (its phase step too) are one run of gather: its next and write's done are the transitions
    assert counters(job.usage) == {"tool_calls": 5, "shouts": 1, "transitions": 2}
    saves = [record for record in job.phases if record.phase == "gather"]
    assert len(saves) == 1


def test_a_crash_after_a_step_resumes_at_the_next_step(storage_factory: Any, clock: FakeClock) -> None:
    baseline = _bench()
    store = storage_factory(clock)
    probe = CrashingStorage(store, None)
    scheduler = make_scheduler(baseline.pipeline, probe, clock)
    run_pipeline("baseline", baseline.pipeline, storage=probe, scheduler=scheduler, initial_state={"plan": PLAN})
    scheduler.drain()
    saves = [index for index, name in enumerate(probe.operations) if name == "save"]
    assert len(saves) == 4  # one checkpoint per top-level step

    for number, index in enumerate(saves):
        bench = _bench()
        job = _drive(bench, storage_factory(clock), clock, f"crash-{number}", CrashPoint(index, "after"))
        assert job.status == JobStatus.COMPLETE, job.error
        assert job.result == EXPECTED
        assert bench.calls == baseline.calls, f"crash after step {number + 1}"
        assert counters(job.usage) == {"tool_calls": 5, "shouts": 1, "transitions": 2}
        resumed = [entry.message for entry in job.log if entry.message.startswith("Resume plan")]
        expected = f"at step {number + 2} of 4" if number < 3 else "after its last step"
        assert resumed == [f"Resume plan brief-v1 {expected}"]


def test_a_step_cut_short_runs_again_whole_inside_its_checkpoint(storage: Storage, clock: FakeClock) -> None:
    bench = _bench()
    probe = CrashingStorage(storage, None)
    scheduler = make_scheduler(bench.pipeline, probe, clock)
    run_pipeline("probe", bench.pipeline, storage=probe, scheduler=scheduler, initial_state={"plan": PLAN})
    scheduler.drain()
    third_save = [index for index, name in enumerate(probe.operations) if name == "save"][2]

    again = _bench()
    job = _drive(again, storage, clock, "cut", CrashPoint(third_save, "before"))  # the "check" step's save never lands

    assert job.result == EXPECTED
    assert (again.calls["count"], again.calls["trim"]) == (2, 2)  # the whole step again
    assert (again.calls["search"], again.calls["read"]) == (1, 2)  # the steps before it: never


def test_a_plan_with_another_id_is_refused_and_start_over_runs_it(storage: Storage, clock: FakeClock) -> None:
    bench = _bench()
    failing = {**PLAN, "steps": [*PLAN["steps"][:1], {"id": "boom", "tool": "missing_tool"}]}
    job = _drive(bench, storage, clock, "changed", None, plan=failing)
    assert job.status == JobStatus.ERROR
    assert job.error.startswith("Step boom (missing_tool) failed")
    progress = PlanProgress.model_validate(job.checkpoint.state["plan_progress"])
    assert (progress.plan_id, progress.completed) == ("brief-v1", 1)

    other = {**PLAN, "id": "brief-v2"}
    scheduler = make_scheduler(bench.pipeline, storage, clock)
    state = {**job.checkpoint.state, "plan": other}
    run_pipeline(
        "changed",
        bench.pipeline,
        storage=storage,
        scheduler=scheduler,
        initial_state=state,
        retry_mode="from",
        initial_phase="gather",
    )
    scheduler.drain()
    refused = job_of(storage, "changed")
    assert refused.status == JobStatus.ERROR
    assert refused.error == (
        'The saved progress belongs to plan "brief-v1", not to plan "brief-v2": a resume continues only the same '
        'plan. Start over (retry mode "full") to run plan "brief-v2" from its first step.'
    )

    run_pipeline(
        "changed",
        bench.pipeline,
        storage=storage,
        scheduler=scheduler,
        initial_state={"plan": other},
        retry_mode="full",
    )
    scheduler.drain()
    assert job_of(storage, "changed").result == EXPECTED


def test_a_plan_is_read_from_a_models_answer() -> None:
    answer = 'Here is the plan:\n```json\n{"id": "p1", "steps": [{"id": "s1", "tool": "search"}]}\n```'
    plan = Plan.parse(answer)
    assert (plan.id, [step.tool for step in plan.steps]) == ("p1", ["search"])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no plan here", "no JSON object"),
        ('{"id": "p1", "steps": []}', "steps"),
        ('{"id": "p1", "steps": [{"id": "s", "tool": "a", "phase": "b"}]}', "exactly one of"),
        ('{"id": "p1", "steps": [{"id": "s", "tool": "a"}, {"id": "s", "tool": "b"}]}', "two steps"),
        ('{"id": "bad id!", "steps": [{"id": "s", "tool": "a"}]}', "id"),
    ],
)
def test_a_plan_that_is_not_valid_is_refused_clearly(text: str, problem: str) -> None:
    from cairn import InvalidInputError

    with pytest.raises(InvalidInputError, match=problem):
        Plan.parse(text)
