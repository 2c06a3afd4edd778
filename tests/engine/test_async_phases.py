"""``async def`` phases and tools, through the test kit as a user writes them: each primitive behaves as for a plain
phase (save_state, a signal wait, a sleep on the skipping clock, a map's items, a retry, a crash and its resume)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cairn import Done, JobStatus, Map, Next, PhaseContext, Pipeline, RetryPolicy, Sleep, WaitFor
from cairn.agents import ScriptedModel
from cairn.core.errors import InvalidInputError
from cairn.testing.plugin import LocalCairns, SimulatedCrash, SkippingClock, crash_on


async def _io() -> None:
    """What an async client does between its calls: hand the loop over."""
    await asyncio.sleep(0)


def test_an_async_phase_saves_its_state_and_a_crash_resumes_from_the_save(cairn_local: LocalCairns) -> None:
    runs: list[Any] = []
    pipeline: Pipeline[Any] = Pipeline("pages")

    @pipeline.phase
    async def read(ctx: PhaseContext[Any]) -> Next:
        done = list(ctx.state["done"])
        runs.append(list(done))
        for page in range(len(done), 3):
            await _io()
            done.append(page)
            ctx.save_state({"done": done})
        return Next("report", {"done": done})

    @pipeline.phase
    async def report(ctx: PhaseContext[Any]) -> Done:
        await _io()
        return Done({"pages": len(ctx.state["done"])})

    app = cairn_local(pipeline, storage=crash_on("save", nth=3))
    app.start(pipeline, "p-1", state={"done": []})
    with pytest.raises(SimulatedCrash):
        app.run_until_idle()  # the worker dies saving the third page
    checkpoint = app.get("p-1").checkpoint
    assert checkpoint is not None
    assert checkpoint.state == {"done": [0, 1]}
    app.retry("p-1")
    app.run_until_idle()

    assert app.get("p-1").result == {"pages": 3}
    assert runs == [[], [0, 1]]  # the resume starts from the second save, not from the beginning


def test_an_async_phase_waits_for_a_signal_and_the_next_async_phase_reads_it(cairn_local: LocalCairns) -> None:
    pipeline: Pipeline[Any] = Pipeline("approve")

    @pipeline.phase
    async def ask(ctx: PhaseContext[Any]) -> WaitFor:
        await _io()
        return WaitFor("approved", "apply", ctx.state, timeout=3600)

    @pipeline.phase
    async def apply(ctx: PhaseContext[Any]) -> Done:
        await _io()
        return Done({"by": ctx.signal["by"]})

    app = cairn_local(pipeline)
    app.start(pipeline, "a-1", state={})
    app.run_until_idle()
    assert app.get("a-1").status == JobStatus.WAITING
    app.signal("a-1", "approved", {"by": "ada"})
    app.run_until_idle()

    assert app.get("a-1").result == {"by": "ada"}


def test_an_async_phase_sleeps_on_the_skipping_clock(cairn_local: LocalCairns, cairn_clock: SkippingClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("later")
    woke: list[float] = []

    @pipeline.phase
    async def wait(ctx: PhaseContext[Any]) -> Sleep:
        await asyncio.sleep(0)
        return Sleep(6 * 3600, "wake", ctx.state)

    @pipeline.phase
    async def wake(ctx: PhaseContext[Any]) -> Done:
        woke.append(cairn_clock.monotonic())
        return Done("awake")

    app = cairn_local(pipeline)
    started = cairn_clock.monotonic()
    app.start(pipeline, "s-1", state={})
    app.run_until_idle()

    assert app.get("s-1").result == "awake"
    assert woke[0] - started >= 6 * 3600  # six hours skipped, none waited


def test_a_map_runs_async_item_phases(cairn_local: LocalCairns) -> None:
    pipeline: Pipeline[Any] = Pipeline("squares")

    @pipeline.phase
    async def split(ctx: PhaseContext[Any]) -> Map:
        return Map([{"n": n} for n in range(5)], phase="square", then="total", max_concurrency=2)

    @pipeline.phase
    async def square(ctx: PhaseContext[Any]) -> Done:
        await _io()
        return Done(ctx.state["n"] ** 2)

    @pipeline.phase
    async def total(ctx: PhaseContext[Any]) -> Done:
        return Done(sum(ctx.results or []))

    app = cairn_local(pipeline)
    app.start(pipeline, "m-1", state={})
    app.run_until_idle()

    assert app.get("m-1").result == 0 + 1 + 4 + 9 + 16
    with pytest.raises(InvalidInputError, match='runs only as an item of the map started by phase "split"'):
        app.retry("m-1", mode="from", phase="square")


def test_an_async_phase_that_raises_is_retried_by_its_policy(cairn_local: LocalCairns) -> None:
    pipeline: Pipeline[Any] = Pipeline("flaky")
    attempts: list[int] = []

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=30))
    async def fetch(ctx: PhaseContext[Any]) -> Done:
        attempts.append(ctx.attempt)
        await _io()
        if ctx.attempt < 3:
            raise ConnectionError("the service is down")
        return Done("fetched")

    app = cairn_local(pipeline)
    app.start(pipeline, "f-1", state={})
    app.run_until_idle()

    job = app.get("f-1")
    assert (job.status, job.result, attempts) == (JobStatus.COMPLETE, "fetched", [1, 2, 3])
    assert sum("Retrying phase" in entry.message for entry in job.log) == 2


def test_a_crash_at_an_async_phases_commit_runs_it_again_from_its_checkpoint(cairn_local: LocalCairns) -> None:
    pipeline: Pipeline[Any] = Pipeline("invoice")
    runs: list[str] = []

    @pipeline.phase
    async def load(ctx: PhaseContext[Any]) -> Next:
        runs.append("load")
        return Next("total", {"lines": [5, 7]})

    @pipeline.phase
    async def total(ctx: PhaseContext[Any]) -> Done:
        runs.append("total")
        await _io()
        return Done({"total": sum(ctx.state["lines"])})

    app = cairn_local(pipeline, storage=crash_on("commit", nth=2))
    app.start(pipeline, "i-1")
    with pytest.raises(SimulatedCrash):
        app.run_until_idle()  # the worker dies committing "total"
    app.retry("i-1")
    app.run_until_idle()

    assert app.get("i-1").result == {"total": 12}
    assert runs == ["load", "total", "total"]


def test_an_agent_calls_an_async_tool(cairn_local: LocalCairns) -> None:
    async def lookup(city: str) -> str:
        """The weather in a city."""
        await _io()
        return f"sunny in {city}"

    model = ScriptedModel([ScriptedModel.use_tool("lookup", {"city": "Oslo"}), ScriptedModel.reply("It is sunny.")])
    pipeline: Pipeline[Any] = Pipeline("weather")
    pipeline.agent_phase("ask", model=model, tools=[lookup], prompt="Weather?", finish=lambda state, answer: answer)

    app = cairn_local(pipeline)
    app.start(pipeline, "w-1", state={})
    app.run_until_idle()

    assert app.get("w-1").result == "It is sunny."
    (result,) = model.requests[-1].messages[-1].tool_results
    assert (result.content, result.is_error) == ("sunny in Oslo", False)


def test_an_async_phase_runs_when_the_caller_is_itself_inside_an_event_loop(cairn_local: LocalCairns) -> None:
    pipeline: Pipeline[Any] = Pipeline("nested")

    @pipeline.phase
    async def only(ctx: PhaseContext[Any]) -> Done:
        await _io()
        return Done("ran")

    app = cairn_local(pipeline)

    async def an_async_test() -> None:  # as under pytest-asyncio: a loop already runs in this thread
        app.start(pipeline, "n-1", state={})
        app.run_until_idle()

    asyncio.run(an_async_test())
    assert app.get("n-1").result == "ran"


def test_registering_an_async_phase_returns_the_function_as_written() -> None:
    pipeline: Pipeline[Any] = Pipeline("kept")

    async def only(ctx: PhaseContext[Any]) -> Done:
        return Done(None)

    assert pipeline.phase(only) is only
    assert pipeline.get_phase("only").run.__name__ == "only"
