"""The scripted model: replays its turns in order, picks the turn from the conversation, and says when it runs out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from cairn import Done, MemoryStorage, PhaseContext, Pipeline, run_pipeline
from cairn.agents import Message, Model, ModelError, ModelTurn, ScriptedModel, Toolset, ToolUse, Usage, tool
from cairn.core.errors import InvalidInputError
from cairn.testing.faults import SimulatedCrash
from tests.support import FakeClock, job_of, make_scheduler

SCRIPT = [
    ScriptedModel.use_tool("add", {"a": 2, "b": 3}, id="t-1", text="Adding."),
    ScriptedModel.use_tool("add", {"a": 5, "b": 10}, id="t-2"),
    ScriptedModel.reply("The sum is 15.", usage=Usage(input_tokens=30, output_tokens=5)),
]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def run_turn(model: Model, messages: list[Message], tools: Toolset) -> ModelTurn:
    """One turn of a minimal agent loop: ask the model, run the tools it asks for, extend the conversation."""
    turn = model.converse(messages, system="Be brief.", tools=tools.specs)
    messages.append(turn.message)
    if turn.tool_uses:
        messages.append(Message(role="user", content=[tools.call(use) for use in turn.tool_uses]))
    return turn


def test_the_script_is_replayed_in_order_and_every_request_is_recorded() -> None:
    model = ScriptedModel(SCRIPT)
    tools = Toolset([add])
    messages = [Message.user("Add 2, 3 and 10.")]

    stops = [run_turn(model, messages, tools).stop_reason for _ in range(3)]

    assert isinstance(model, Model)
    assert stops == ["tool_use", "tool_use", "end_turn"]
    assert model.calls == 3
    assert messages[2].tool_results[0].content == 5
    assert messages[4].tool_results[0].content == 15
    assert messages[-1].text == "The sum is 15."
    first = model.requests[0]
    assert (len(first.messages), first.system, first.tools) == (1, "Be brief.", (add.spec,))
    assert [len(request.messages) for request in model.requests] == [1, 3, 5]


def test_running_past_the_script_is_a_clear_error_that_is_not_retried() -> None:
    model = ScriptedModel([ScriptedModel.reply("only this")], model_id="tiny")
    messages = [Message.user("hi")]
    run_turn(model, messages, Toolset())
    messages.append(Message.user("and then?"))

    with pytest.raises(ModelError) as raised:
        model.converse(messages)

    assert raised.value.retryable is False
    assert str(raised.value) == (
        'ScriptedModel "tiny" has 1 turns and the conversation already holds 1 assistant messages: '
        "the script has no turn 2"
    )
    assert model.calls == 2


def test_the_next_turn_comes_from_the_conversation_not_from_the_call_count() -> None:
    first = ScriptedModel(SCRIPT)
    messages = [Message.user("Add 2, 3 and 10.")]
    run_turn(first, messages, Toolset([add]))
    stored = json.dumps(TypeAdapter(list[Message]).dump_python(messages, mode="json"))

    # Another process, after a crash: a fresh model and the conversation from the checkpoint.
    resumed = ScriptedModel(SCRIPT)
    restored = TypeAdapter(list[Message]).validate_json(stored)
    turn = resumed.converse(restored)

    assert resumed.calls == 1
    assert ScriptedModel.position(restored) == 1
    assert turn == SCRIPT[1]
    assert resumed.converse(restored) == SCRIPT[1], "asking again at the same point gets the same turn"


def test_a_conversation_that_lost_or_changed_a_turn_is_caught() -> None:
    model = ScriptedModel(SCRIPT)
    changed = [Message.user("hi"), Message.assistant("something the script never said"), Message.user("well?")]

    with pytest.raises(ModelError, match="assistant message 1 of the conversation is not turn 1"):
        model.converse(changed)
    assert ScriptedModel(SCRIPT, check_history=False).converse(changed) == SCRIPT[1]


def test_turns_may_be_given_as_plain_json() -> None:
    model = ScriptedModel(
        [
            {
                "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 1},
            }
        ],
        model_id="json-script",
    )

    turn = model.converse([Message.user("hi")])

    assert (model.model_id, turn.text, turn.usage.total_tokens) == ("json-script", "hello", 4)


def test_the_turn_helpers_read_well_and_derive_stable_ids() -> None:
    use = ScriptedModel.use_tool("lookup", {"q": "cairn"})

    assert use.stop_reason == "tool_use"
    assert use.tool_uses == [ToolUse(id=use.tool_uses[0].id, name="lookup", input={"q": "cairn"})]
    assert use.tool_uses[0].id == ScriptedModel.use_tool("lookup", {"q": "cairn"}).tool_uses[0].id
    assert use.tool_uses[0].id != ScriptedModel.use_tool("lookup", {"q": "other"}).tool_uses[0].id
    assert ScriptedModel.reply("done") == ModelTurn(message=Message.assistant("done"), stop_reason="end_turn")


def test_the_same_tool_use_id_twice_in_a_script_is_refused() -> None:
    twice = ScriptedModel.use_tool("lookup", {"q": "cairn"})

    with pytest.raises(InvalidInputError, match="is in turns 1 and 2"):
        ScriptedModel([twice, twice])


class AgentState(BaseModel):
    messages: list[Message]


def test_a_job_resumed_after_a_crash_in_a_tool_asks_the_script_for_the_right_turn(clock: FakeClock) -> None:
    """The loop checkpoints each turn; the worker dies in the second tool call; a fresh model finishes the job."""
    crash = SimulatedCrash("the worker died")
    dies = [True]

    @tool
    def fragile_add(a: int, b: int) -> int:
        """Add two numbers, unless the worker dies first."""
        if b == 10 and dies[0]:
            raise crash
        return a + b

    script = [
        ScriptedModel.use_tool("fragile_add", {"a": 2, "b": 3}, id="t-1"),
        ScriptedModel.use_tool("fragile_add", {"a": 5, "b": 10}, id="t-2"),
        ScriptedModel.reply("The sum is 15."),
    ]
    models: list[ScriptedModel] = []

    def agent_pipeline() -> Pipeline[AgentState]:
        pipeline: Pipeline[AgentState] = Pipeline("agent", state=AgentState)

        @pipeline.phase
        def agent(ctx: PhaseContext[AgentState]) -> Done:
            model = ScriptedModel(script)  # a new process builds its model afresh
            models.append(model)
            messages = list(ctx.state.messages)
            tools = Toolset([fragile_add])
            while True:
                turn = run_turn(model, messages, tools)
                ctx.save_state(AgentState(messages=messages))
                if not turn.tool_uses:
                    return Done({"answer": turn.text, "turns": ScriptedModel.position(messages)})

        return pipeline

    storage = MemoryStorage(clock=clock)
    pipeline = agent_pipeline()
    scheduler = make_scheduler(pipeline, storage, clock)
    start: dict[str, Any] = AgentState(messages=[Message.user("Add 2, 3 and 10.")]).model_dump(mode="json")
    run_pipeline("job-1", pipeline, storage=storage, scheduler=scheduler, initial_state=start)
    with pytest.raises(SimulatedCrash) as raised:
        scheduler.drain()
    assert raised.value is crash

    checkpoint = job_of(storage, "job-1").checkpoint
    assert checkpoint is not None
    assert ScriptedModel.position(AgentState.model_validate(checkpoint.state).messages) == 1

    dies[0] = False
    retry = make_scheduler(pipeline, storage, clock)
    run_pipeline("job-1", pipeline, storage=storage, scheduler=retry)
    retry.drain()

    job = job_of(storage, "job-1")
    assert job.result == {"answer": "The sum is 15.", "turns": 3}
    assert [model.calls for model in models] == [2, 2], "the resumed job asked only for turns 2 (again) and 3"
    assert [len(request.messages) for request in models[1].requests] == [3, 5]
