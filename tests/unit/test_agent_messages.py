"""Conversation models: JSON round trips (they live in checkpoints), the block union, usage sums, turn helpers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from cairn.agents import Message, ModelTurn, TextBlock, ToolResult, ToolUse, Usage


def conversation() -> list[Message]:
    return [
        Message.user("What is 6 x 7?"),
        Message.assistant(
            "Let me compute that.", ToolUse(id="t-1", name="multiply", input={"a": 6, "b": 7, "why": [1.5, None]})
        ),
        Message.user(
            ToolResult(tool_use_id="t-1", content={"product": 42}),
            ToolResult(tool_use_id="t-2", content="ZeroDivisionError: division by zero", is_error=True),
        ),
        Message.assistant("42"),
    ]


def test_a_conversation_round_trips_through_json_text() -> None:
    adapter = TypeAdapter(list[Message])
    stored = json.dumps(adapter.dump_python(conversation(), mode="json"))

    assert adapter.validate_python(json.loads(stored)) == conversation()


def test_blocks_are_told_apart_by_their_type_field() -> None:
    dumped = Message.model_validate(conversation()[1].model_dump(mode="json")).model_dump(mode="json")

    assert dumped == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me compute that."},
            {"type": "tool_use", "id": "t-1", "name": "multiply", "input": {"a": 6, "b": 7, "why": [1.5, None]}},
        ],
    }
    loaded = Message.model_validate(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t-1", "content": [1, "two"]}]}
    )
    assert loaded.content == [ToolResult(tool_use_id="t-1", content=[1, "two"], is_error=False)]


@pytest.mark.parametrize(
    "raw",
    [
        {"role": "system", "content": []},
        {"role": "user", "content": [{"type": "image", "bytes": "..."}]},
        {"role": "user", "content": [{"text": "no type field"}]},
        {"role": "user", "content": [{"type": "text", "text": "hi", "extra": 1}]},
        {"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {"x": object()}}]},
    ],
)
def test_a_message_of_another_shape_is_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Message.model_validate(raw)


def test_messages_are_immutable() -> None:
    message = Message.user("hi")
    with pytest.raises(ValidationError):
        message.role = "assistant"


def test_usage_adds_up() -> None:
    total = sum([Usage(input_tokens=10, output_tokens=3), Usage(input_tokens=5, output_tokens=2)], Usage())

    assert total == Usage(input_tokens=15, output_tokens=5)
    assert total.total_tokens == 20
    with pytest.raises(ValidationError):
        Usage(input_tokens=-1)


def test_a_model_turn_gives_its_text_and_tool_uses() -> None:
    turn = ModelTurn(
        message=Message.assistant("First,", "second.", ToolUse(id="a", name="look", input={"q": "x"})),
        stop_reason="tool_use",
        usage=Usage(input_tokens=7, output_tokens=4),
    )

    assert turn.text == "First,\nsecond."
    assert turn.tool_uses == [ToolUse(id="a", name="look", input={"q": "x"})]
    assert ModelTurn(message=Message.assistant(), stop_reason="max_tokens").text == ""
    assert ModelTurn.model_validate_json(turn.model_dump_json()) == turn


def test_a_message_lists_its_tool_results() -> None:
    assert conversation()[2].tool_results[1].is_error is True
    assert conversation()[2].text == ""


def test_a_model_turn_is_the_assistant_speaking_with_a_known_stop_reason() -> None:
    with pytest.raises(ValidationError, match="assistant"):
        ModelTurn(message=Message.user("hi"), stop_reason="end_turn")
    with pytest.raises(ValidationError):
        ModelTurn.model_validate({"message": {"role": "assistant", "content": []}, "stop_reason": "bored"})


def test_a_turn_lives_inside_a_pipeline_state_model() -> None:
    class AgentState(BaseModel):
        messages: list[Message] = []
        usage: Usage = Usage()

    state = AgentState(messages=conversation(), usage=Usage(input_tokens=1))
    raw = json.loads(json.dumps(state.model_dump(mode="json")))

    assert AgentState.model_validate(raw) == state
    assert isinstance(AgentState.model_validate(raw).messages[0].content[0], TextBlock)
