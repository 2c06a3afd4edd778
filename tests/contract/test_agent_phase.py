"""Agent phases on every store: model turns and tool calls checkpointed one by one.

The promise: a crash after any turn or any tool call resumes at the next one, so the resumed job makes
exactly the model calls and tool calls of a crash-free run (counted by the scripted model and the
tools) and reports the same usage.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from cairn import JobStatus, Pipeline, run_pipeline
from cairn.agents import AgentRun, Message, ModelTurn, ScriptedModel, ToolUse, Usage
from cairn.core.storage_port import Storage
from cairn.testing.faults import CrashingStorage, CrashPoint, SimulatedCrash
from tests.support import FakeClock, counters, make_scheduler

DOCUMENTS = {"a.txt": "Cairns mark trails.", "b.txt": "Checkpoints mark progress."}


class Brief(BaseModel):
    """The state: a topic in, an answer out, and the agent's conversation while it runs."""

    topic: str
    answer: str | None = None
    agent: AgentRun | None = None


@dataclass
class Bench:
    """A pipeline with one agent phase, its scripted model and its counted tools."""

    pipeline: Pipeline[Brief]
    model: ScriptedModel
    tool_calls: Counter[str] = field(default_factory=Counter)


def _script() -> list[ModelTurn]:
    both = Message.assistant(
        "Reading both.",
        ToolUse(id="read-a", name="read", input={"name": "a.txt"}),
        ToolUse(id="read-b", name="read", input={"name": "b.txt"}),
    )
    return [
        ScriptedModel.use_tool("search", {"query": "markers"}, usage=Usage(input_tokens=100, output_tokens=10)),
        ModelTurn(message=both, stop_reason="tool_use", usage=Usage(input_tokens=150, output_tokens=20)),
        ScriptedModel.reply(
            "Cairns and checkpoints both mark the way.", usage=Usage(input_tokens=300, output_tokens=40)
        ),
    ]


def _bench(script: list[ModelTurn] | None = None, *, max_turns: int = 10, on_max_turns: str | None = None) -> Bench:
    model = ScriptedModel(script if script is not None else _script())
    bench = Bench(Pipeline("brief", state=Brief), model)

    def search(query: str) -> list[str]:
        """Names of the documents about ``query``."""
        bench.tool_calls["search"] += 1
        return sorted(DOCUMENTS)

    def read(name: str) -> str:
        """The text of one document."""
        bench.tool_calls["read"] += 1
        return DOCUMENTS[name]

    bench.pipeline.agent_phase(
        "research",
        model=model,
        tools=[search, read],
        prompt=lambda state: f"Write one sentence about {state.topic}.",
        system="You are careful.",
        max_turns=max_turns,
        next="publish" if on_max_turns is None else None,
        on_max_turns=on_max_turns,
        finish=lambda state, answer: state.model_copy(update={"answer": answer}),
    )

    @bench.pipeline.phase
    def publish(ctx: Any) -> Any:
        from cairn import Done

        return Done({"answer": ctx.state.answer})

    if on_max_turns is not None:

        @bench.pipeline.phase(name=on_max_turns)
        def give_up(ctx: Any) -> Any:
            from cairn import Done

            return Done({"turns": ctx.state.agent.turns})

    return bench


def _drive(
    bench: Bench, store: Storage, clock: FakeClock, job_id: str, crash: CrashPoint | None
) -> tuple[Any, list[str]]:
    """Run the job once (dying at ``crash``), then resume it in a new "process" until it is done."""
    operations: list[str] = []
    for point in (crash, None):
        process = CrashingStorage(store, point)
        scheduler = make_scheduler(bench.pipeline, process, clock)
        try:
            run_pipeline(
                job_id, bench.pipeline, storage=process, scheduler=scheduler, initial_state={"topic": "markers"}
            )
            scheduler.drain()
        except SimulatedCrash:
            pass
        finally:
            operations.extend(process.operations)
        job = store.get_job(job_id)
        if job is not None and job.status == JobStatus.COMPLETE:
            break
    return store.get_job(job_id), operations


def test_the_agent_loops_turns_and_tools_to_an_answer(storage: Storage, clock: FakeClock) -> None:
    bench = _bench()
    job, _ = _drive(bench, storage, clock, "brief-1", None)

    assert job.status == JobStatus.COMPLETE
    assert job.result == {"answer": "Cairns and checkpoints both mark the way."}
    assert bench.model.calls == 3
    assert bench.tool_calls == Counter({"search": 1, "read": 2})
    # the agent's turns and tool calls are one phase run: its next and publish's done are the transitions
    assert counters(job.usage) == {
        "model_calls": 3,
        "input_tokens": 550,
        "output_tokens": 70,
        "tool_calls": 3,
        "transitions": 2,
    }
    last = bench.model.requests[-1]
    assert last.system == "You are careful."
    assert [block.content for block in last.messages[-1].tool_results] == DOCUMENTS_IN_ORDER
    assert [spec.name for spec in last.tools] == ["search", "read"]
    assert not any(entry.message.startswith("Resume") for entry in job.log)


DOCUMENTS_IN_ORDER = [DOCUMENTS["a.txt"], DOCUMENTS["b.txt"]]


def test_a_crash_after_any_turn_or_tool_call_repeats_no_model_or_tool_call(
    storage_factory: Any, clock: FakeClock
) -> None:
    baseline = _bench()
    _, operations = _drive(baseline, storage_factory(clock), clock, "baseline", None)
    saves = [index for index, name in enumerate(operations) if name == "save"]
    assert len(saves) == 6  # three turns and three tool calls, each saved before the next

    for number, index in enumerate(saves):
        bench = _bench()
        job, _ = _drive(bench, storage_factory(clock), clock, f"crash-{number}", CrashPoint(index, "after"))
        assert job.status == JobStatus.COMPLETE, f"crash after save #{number}: {job.error}"
        assert bench.model.calls == baseline.model.calls, f"crash after save #{number}"
        assert bench.tool_calls == baseline.tool_calls, f"crash after save #{number}"
        assert counters(job.usage) == {
            "model_calls": 3,
            "input_tokens": 550,
            "output_tokens": 70,
            "tool_calls": 3,
            "transitions": 2,
        }
        assert job.result == {"answer": "Cairns and checkpoints both mark the way."}
        resumed = [entry.message for entry in job.log if entry.message.startswith("Resume the conversation")]
        assert len(resumed) == 1, f"crash after save #{number}: the job did not crash and resume once"
