"""The agent phase's rules, on memory storage through the front door: tool errors, turn limits, model errors,
the state field it keeps its conversation in, and the lessons it starts from."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from cairn import Cairn, Done, InlineScheduler, JobStatus, MemoryStorage, PhaseContext, Pipeline
from cairn.agents import AgentRun, Message, ModelTurn, ScriptedModel, ToolResult, ToolUse
from cairn.core.errors import ModelError, PipelineError
from tests.support import FakeClock


def _jobs(pipeline: Pipeline[Any], clock: FakeClock) -> Cairn:
    return Cairn(
        pipeline, storage=MemoryStorage(clock=clock), scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
    )


def _agent(model: Any, tools: list[Any], **options: Any) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("agent")
    pipeline.agent_phase(
        "think",
        model=model,
        tools=tools,
        prompt="Go.",
        finish=lambda state, answer: {**state, "answer": answer},
        **options,
    )
    return pipeline


def _last_results(model: ScriptedModel) -> list[ToolResult]:
    return model.requests[-1].messages[-1].tool_results


def test_a_tools_exception_is_an_error_result_the_model_sees_not_a_crash(clock: FakeClock) -> None:
    def divide(a: int, b: int) -> float:
        """a / b."""
        return a / b

    model = ScriptedModel([ScriptedModel.use_tool("divide", {"a": 1, "b": 0}), ScriptedModel.reply("Cannot divide.")])
    jobs = _jobs(_agent(model, [divide]), clock)
    jobs.start("agent", "job-1", state={})
    jobs.run_until_idle()

    job = jobs.get("job-1")
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"answer": "Cannot divide.", "agent": None}
    (result,) = _last_results(model)
    assert result.is_error
    assert "ZeroDivisionError" in str(result.content)
    assert any(entry.kind == "error" and "divide" in entry.message for entry in job.log)


def test_arguments_the_tools_types_refuse_are_an_error_result(clock: FakeClock) -> None:
    calls: list[int] = []

    def square(n: int) -> int:
        """n squared."""
        calls.append(n)
        return n * n

    model = ScriptedModel([ScriptedModel.use_tool("square", {"n": "many"}), ScriptedModel.reply("ok")])
    jobs = _jobs(_agent(model, [square]), clock)
    jobs.start("agent", "job-1", state={})
    jobs.run_until_idle()

    (result,) = _last_results(model)
    assert result.is_error
    assert "n" in str(result.content)
    assert calls == []


def test_max_turns_without_an_answer_fails_clearly(clock: FakeClock) -> None:
    turns = [ScriptedModel.use_tool("noop", {}, id=f"use-{n}") for n in range(5)]

    def noop() -> str:
        """Nothing."""
        return "done"

    model = ScriptedModel(turns)
    jobs = _jobs(_agent(model, [noop], max_turns=3), clock)
    jobs.start("agent", "job-1", state={})
    jobs.run_until_idle()

    job = jobs.get("job-1")
    assert job.status == JobStatus.ERROR
    assert job.error == 'Agent phase "think" reached max_turns (3) without a final answer'
    assert model.calls == 3


def test_max_turns_can_name_the_phase_to_go_to(clock: FakeClock) -> None:
    def noop() -> str:
        """Nothing."""
        return "done"

    model = ScriptedModel([ScriptedModel.use_tool("noop", {}, id=f"use-{n}") for n in range(3)])
    pipeline = _agent(model, [noop], max_turns=2, on_max_turns="summarise")

    @pipeline.phase
    def summarise(ctx: PhaseContext[Any]) -> Done:
        return Done({"turns": ctx.state["agent"]["turns"]})

    jobs = _jobs(pipeline, clock)
    jobs.start("agent", "job-1", state={})
    jobs.run_until_idle()

    assert jobs.get("job-1").result == {"turns": 2}


class Flaky:
    """A model that is throttled once, then answers from a script."""

    def __init__(self, script: ScriptedModel) -> None:
        self.script = script
        self.failures = 0
        self.model_id = "flaky"

    def converse(self, messages: Any, *, system: Any = None, tools: Any = ()) -> ModelTurn:
        if self.script.position(messages) == 1 and self.failures == 0:
            self.failures += 1
            raise ModelError("ThrottlingException: slow down", retryable=True, code="ThrottlingException")
        return self.script.converse(messages, system=system, tools=tools)


def test_a_retryable_model_error_retries_from_the_last_saved_turn(clock: FakeClock) -> None:
    def look() -> str:
        """Look."""
        return "seen"

    script = ScriptedModel([ScriptedModel.use_tool("look"), ScriptedModel.reply("Seen.")])
    model = Flaky(script)
    jobs = _jobs(_agent(model, [look]), clock)
    jobs.start("agent", "job-1", state={})
    jobs.run_until_idle()

    job = jobs.get("job-1")
    assert job.status == JobStatus.COMPLETE
    assert model.failures == 1
    assert script.calls == 2  # the first turn was saved: it is not asked for again
    assert [record.outcome for record in job.phases] == ["retry", "done"]


def test_a_model_error_that_is_not_retryable_fails_the_phase_with_its_message(clock: FakeClock) -> None:
    class Refusing:
        model_id = "refusing"

        def converse(self, messages: Any, *, system: Any = None, tools: Any = ()) -> ModelTurn:
            raise ModelError("ValidationException: bad model id", retryable=False, code="ValidationException")

    jobs = _jobs(_agent(Refusing(), []), clock)
    jobs.start("agent", "job-1", state={})
    jobs.run_until_idle()

    job = jobs.get("job-1")
    assert job.status == JobStatus.ERROR
    assert job.error == 'Agent phase "think": the model refused the request: ValidationException: bad model id'


def test_a_state_model_without_the_progress_field_is_refused_when_the_phase_is_registered() -> None:
    class Plain(BaseModel):
        topic: str

    pipeline = Pipeline("agent", state=Plain)
    with pytest.raises(PipelineError, match=r"add `agent: AgentRun \| None = None` to Plain"):
        pipeline.agent_phase("think", model=ScriptedModel([]), prompt="Go.")


def test_the_conversation_starts_from_the_lessons_earlier_jobs_recorded(clock: FakeClock) -> None:
    model = ScriptedModel([ScriptedModel.reply("first")], check_history=False)
    pipeline = _agent(model, [], system="Be brief.", recall=3)

    @pipeline.phase
    def learn(ctx: PhaseContext[Any]) -> Done:
        ctx.insight("Sources disagree on dates: quote both")
        return Done(None)

    jobs = _jobs(pipeline, clock)
    jobs.start("agent", "learner", state={})
    jobs.run_until_idle()
    assert model.requests[-1].system == "Be brief."  # nothing learned yet
    jobs.retry("learner", mode="from", phase="learn", state={"again": True})
    jobs.run_until_idle()
    clock.advance(1)
    jobs.start("agent", "job-2", state={})
    jobs.run_until_idle()

    assert (
        model.requests[-1].system == "Be brief.\n\nLessons from earlier runs:\n- Sources disagree on dates: quote both"
    )


def test_the_conversation_is_kept_in_the_state_while_the_phase_runs(clock: FakeClock) -> None:
    seen: list[AgentRun] = []

    def peek() -> str:
        """Peek."""
        return "peeked"

    model = ScriptedModel([ScriptedModel.use_tool("peek", id="p1"), ScriptedModel.reply("done")])
    storage = MemoryStorage(clock=clock)
    pipeline = _agent(model, [peek])
    jobs = Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    original = storage.save

    def watching_save(job_id: str, fence: Any, request: Any) -> Any:
        seen.append(AgentRun.model_validate(request.checkpoint.state["agent"]))
        return original(job_id, fence, request)

    storage.save = watching_save  # type: ignore[method-assign]
    jobs.start("agent", "job-1", state={})
    jobs.run_until_idle()

    assert [(run.turns, run.tool_calls) for run in seen] == [(1, 0), (1, 1), (2, 1)]
    assert seen[1].messages[-1] == Message(role="user", content=[ToolResult(tool_use_id="p1", content="peeked")])
    assert seen[0].messages[-1].tool_uses == [ToolUse(id="p1", name="peek", input={})]
