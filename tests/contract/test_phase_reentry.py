"""A plan or agent phase entered a second time is a new run, on every store, through the front door.

A pipeline that loops back into a plan phase (``pick -> gather -> pick -> gather``) runs the plan's
steps again on the second entry; only a resume of an unfinished run (a crash, a retry) continues it,
and it continues exactly where it stopped. The same holds for an agent phase entered again after its
``on_max_turns`` phase sent the job back to it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cairn import Cairn, Done, InlineScheduler, JobStatus, Next, PhaseContext, Pipeline
from cairn.agents import AgentRun, PlanProgress, ScriptedModel
from cairn.core.storage_port import Storage
from cairn.testing.faults import CrashingStorage, CrashPoint, SimulatedCrash
from tests.support import FakeClock

ROUNDS = 2
PLAN = {
    "id": "loop-v1",
    "steps": [
        {"id": "find", "tool": "search", "input": {"query": "cairns"}, "save_as": "found"},
        {"id": "read_all", "tool": "read", "each": [{"name": "a"}, {"name": "b"}]},
        {"id": "count", "tool": "count", "input": {"names": {"$saved": "found"}}},
    ],
}
STEPS = len(PLAN["steps"])


@dataclass
class Bench:
    """A looping pipeline (``pick`` -> plan phase ``gather`` -> ``pick``) and the calls its tools got."""

    pipeline: Pipeline[Any]
    calls: Counter[str] = field(default_factory=Counter)


def _loop(ctx: PhaseContext[Any]) -> Next | Done:
    """Go to the plan phase until it ran ROUNDS times, keeping each run's id and results."""
    state = dict(ctx.state)
    progress = state.get("plan_progress")
    if progress is not None:
        state["runs"] = [*state.get("runs", []), progress["run_id"]]
        state["results"] = [*state.get("results", []), progress["results"]]
    if len(state.get("runs", [])) == ROUNDS:
        return Done({"runs": state["runs"], "results": state["results"]})
    return Next("gather", state)


def _bench(pick: Callable[[PhaseContext[Any]], Next | Done] = _loop) -> Bench:
    bench = Bench(Pipeline("looping-plan"))

    def search(query: str) -> list[str]:
        """Sources about ``query``."""
        bench.calls["search"] += 1
        return ["a", "b"]

    def read(name: str) -> str:
        """One source's text."""
        bench.calls["read"] += 1
        return f"text of {name}"

    def count(names: list[str]) -> int:
        """How many sources."""
        bench.calls["count"] += 1
        return len(names)

    bench.pipeline.phase(name="pick")(pick)
    bench.pipeline.plan_phase("gather", plan=lambda state: state["plan"], tools=[search, read, count], next="pick")
    return bench


def _jobs(bench: Bench, storage: Storage, clock: FakeClock) -> Cairn:
    return Cairn(bench.pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))


RESULTS = {"find": ["a", "b"], "read_all": ["text of a", "text of b"], "count": 2}
ONE_RUN = Counter({"search": 1, "read": 2, "count": 1})


def test_a_plan_phase_entered_again_runs_its_steps_again(storage: Storage, clock: FakeClock) -> None:
    bench = _bench()
    jobs = _jobs(bench, storage, clock)
    jobs.start("looping-plan", "loop-1", state={"plan": PLAN})
    jobs.run_until_idle()

    job = jobs.get("loop-1")
    assert job.status == JobStatus.COMPLETE, job.error
    assert bench.calls == ONE_RUN + ONE_RUN  # every step, once per entry
    assert job.result["results"] == [RESULTS, RESULTS]
    first, second = job.result["runs"]
    assert first != second  # each entry is its own run
    assert [entry.message for entry in job.log if entry.message.startswith("Resume plan")] == []
    assert [record.phase for record in job.phases] == ["pick", "gather", "pick", "gather", "pick"]


def test_a_plan_phase_entered_again_with_another_plan_runs_that_plan(storage: Storage, clock: FakeClock) -> None:
    other = {**PLAN, "id": "loop-v2", "steps": PLAN["steps"][:1]}

    def pick(ctx: PhaseContext[Any]) -> Next | Done:
        if ctx.state.get("plan_progress") is None:
            return Next("gather", ctx.state)
        if ctx.state["plan"]["id"] == PLAN["id"]:
            return Next("gather", {**ctx.state, "plan": other})  # a finished run of another plan is no resume
        return Done(ctx.state["plan_progress"])

    bench = _bench(pick)
    jobs = _jobs(bench, storage, clock)
    jobs.start("looping-plan", "loop-2", state={"plan": PLAN})
    jobs.run_until_idle()

    job = jobs.get("loop-2")
    assert job.status == JobStatus.COMPLETE, job.error
    progress = PlanProgress.model_validate(job.result)
    assert (progress.plan_id, progress.completed, progress.results) == ("loop-v2", 1, {"find": ["a", "b"]})
    assert bench.calls == ONE_RUN + Counter({"search": 1})


def _saves(storage_factory: Any, clock: FakeClock) -> list[int]:
    """The storage operations (by number) of the plan's checkpoints in a crash-free run of the loop."""
    probe = CrashingStorage(storage_factory(clock), None)
    jobs = _jobs(_bench(), probe, clock)
    jobs.start("looping-plan", "probe", state={"plan": PLAN})
    jobs.run_until_idle()
    return [index for index, name in enumerate(probe.operations) if name == "save"]


def test_a_crash_in_the_second_run_resumes_that_run_where_it_stopped(storage_factory: Any, clock: FakeClock) -> None:
    saves = _saves(storage_factory, clock)
    assert len(saves) == ROUNDS * STEPS  # one checkpoint per top-level step, per entry

    for number in range(STEPS):  # a crash after each checkpoint of the second run
        store = storage_factory(clock)
        bench = _bench()
        job_id = f"crash-{number}"
        dying = _jobs(bench, CrashingStorage(store, CrashPoint(saves[STEPS + number], "after")), clock)
        dying.start("looping-plan", job_id, state={"plan": PLAN})
        try:
            dying.run_until_idle()
        except SimulatedCrash:
            pass
        else:
            raise AssertionError("the crash point was never reached")
        jobs = _jobs(bench, store, clock)  # a new process resumes the job
        jobs.retry(job_id)
        jobs.run_until_idle()

        job = jobs.get(job_id)
        assert job.status == JobStatus.COMPLETE, job.error
        assert bench.calls == ONE_RUN + ONE_RUN, f"crash after step {number + 1} of the second run"
        assert job.result["results"] == [RESULTS, RESULTS]
        resumed = [entry.message for entry in job.log if entry.message.startswith("Resume plan")]
        where = f"at step {number + 2} of {STEPS}" if number + 1 < STEPS else "after its last step"
        assert resumed == [f"Resume plan loop-v1 {where}"]
        first, second = job.result["runs"]
        assert first != second


def test_a_rerun_from_the_plan_phase_of_its_second_entry_runs_the_steps_again(
    storage: Storage, clock: FakeClock
) -> None:
    bench = _bench()
    jobs = _jobs(bench, storage, clock)
    jobs.start("looping-plan", "rerun", state={"plan": PLAN})
    jobs.run_until_idle()
    assert bench.calls == ONE_RUN + ONE_RUN

    jobs.retry("rerun", mode="from", phase="gather")  # the state it entered "gather" with, the second time
    jobs.run_until_idle()

    job = jobs.get("rerun")
    assert job.status == JobStatus.COMPLETE, job.error
    assert bench.calls == ONE_RUN + ONE_RUN + ONE_RUN
    assert [entry.message for entry in job.log if entry.message.startswith("Resume plan")] == []


def test_an_agent_phase_entered_again_after_its_turn_limit_talks_to_the_model_again(
    storage: Storage, clock: FakeClock
) -> None:
    model = ScriptedModel([ScriptedModel.use_tool("look", {}, id="use-1"), ScriptedModel.reply("Found it.")])
    looks: list[int] = []

    def look() -> str:
        """Look around."""
        looks.append(1)
        return "a cairn"

    pipeline: Pipeline[Any] = Pipeline("looping-agent")
    pipeline.agent_phase(
        "think",
        model=model,
        tools=[look],
        prompt="Find the trail.",
        max_turns=1,
        on_max_turns="widen",
        finish=lambda state, answer: {**state, "answer": answer},
    )

    @pipeline.phase
    def widen(ctx: PhaseContext[Any]) -> Next | Done:
        run = AgentRun.model_validate(ctx.state["agent"])
        tries = ctx.state.get("tries", 0) + 1
        if tries == ROUNDS:
            return Done({"tries": tries, "turns": run.turns, "answer": ctx.state.get("answer")})
        return Next("think", {**ctx.state, "tries": tries})

    jobs = Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    jobs.start("looping-agent", "agent-loop", state={})
    jobs.run_until_idle()

    job = jobs.get("agent-loop")
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result == {"tries": ROUNDS, "turns": 1, "answer": None}
    assert model.calls == ROUNDS  # one model turn per entry, none skipped
    assert looks == [1] * ROUNDS
    assert [entry.message for entry in job.log if entry.message.startswith("Resume the conversation")] == []
