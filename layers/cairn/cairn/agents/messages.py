"""A conversation with a model, as plain JSON data: messages, their blocks, a model's turn and its usage.

Shaped after the Bedrock Converse API but tied to no provider. Every model here dumps to JSON and
loads back equal (``model_dump(mode="json")`` / ``model_validate``), so a conversation can be stored
in a checkpoint between turns.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

Role = Literal["user", "assistant"]
StopReason = Literal[
    "end_turn",
    "tool_use",
    "max_tokens",
    "stop_sequence",
    "guardrail_intervened",
    "content_filtered",
    "malformed_model_output",
    "malformed_tool_use",
    "model_context_window_exceeded",
]
"""Why the model stopped: it finished, it asks for tools, or it was cut short or refused."""
STOP_REASONS: frozenset[str] = frozenset(get_args(StopReason))


class _Data(BaseModel):
    """Base of the conversation models: immutable, and strict about unknown fields."""

    # defer_build: the validator is built on first use, not at import (a cold start uses few of these models).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TextBlock(_Data):
    """Text said by the user or the model."""

    type: Literal["text"] = "text"
    text: str


class ToolUse(_Data):
    """The model asks for a tool to be called with ``input``; ``id`` pairs it with its result."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, JsonValue] = Field(default_factory=dict)


class ToolResult(_Data):
    """What a tool returned (``content``, any JSON value), or why it failed (``is_error``)."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: JsonValue = None
    is_error: bool = False


ContentBlock = Annotated[TextBlock | ToolUse | ToolResult, Field(discriminator="type")]
"""One block of a message: text, a tool call the model asks for, or a tool's result (told apart by ``type``)."""


class Message(_Data):
    """One message of a conversation: who said it and its blocks, in order."""

    role: Role
    content: list[ContentBlock] = Field(default_factory=list)

    @classmethod
    def user(cls, *content: str | ContentBlock) -> Message:
        """A user message; a string becomes a text block."""
        return cls(role="user", content=[_block(item) for item in content])

    @classmethod
    def assistant(cls, *content: str | ContentBlock) -> Message:
        """An assistant message; a string becomes a text block."""
        return cls(role="assistant", content=[_block(item) for item in content])

    @property
    def text(self) -> str:
        """The text blocks joined by newlines ("" when there are none)."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextBlock))

    @property
    def tool_uses(self) -> list[ToolUse]:
        """The tool calls asked for, in order."""
        return [block for block in self.content if isinstance(block, ToolUse)]

    @property
    def tool_results(self) -> list[ToolResult]:
        """The tool results given, in order."""
        return [block for block in self.content if isinstance(block, ToolResult)]


class Usage(_Data):
    """Tokens a model call read and wrote; usages add up."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        """Input and output tokens together."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class ModelTurn(_Data):
    """What one model call gave back: the assistant's message, why it stopped, and what it cost."""

    message: Message
    stop_reason: StopReason
    usage: Usage = Field(default_factory=Usage)

    @model_validator(mode="after")
    def _spoken_by_the_assistant(self) -> ModelTurn:
        if self.message.role != "assistant":
            raise ValueError(f'a model turn is an assistant message, not a "{self.message.role}" one')
        return self

    @property
    def text(self) -> str:
        """The text blocks of the message joined by newlines."""
        return self.message.text

    @property
    def tool_uses(self) -> list[ToolUse]:
        """The tool calls the model asks for, in order (empty when it asks for none)."""
        return self.message.tool_uses


def _block(item: str | ContentBlock) -> ContentBlock:
    return TextBlock(text=item) if isinstance(item, str) else item
