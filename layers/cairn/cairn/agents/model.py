"""The model port: what an agent phase asks of a model, and the description of a tool it may call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ..core.errors import ModelError
from .messages import Message, ModelTurn

__all__ = ["Model", "ModelError", "ToolSpec"]

#: What tool names may be: Bedrock's rule, shared by the other providers.
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"


def empty_schema() -> dict[str, JsonValue]:
    """The input schema of a tool that takes nothing."""
    return {"type": "object", "properties": {}}


class ToolSpec(BaseModel):
    """A tool as the model sees it: its name, what it does, and the JSON schema of its input."""

    # defer_build: the validator is built on first use, not at import (a cold start uses few of these models).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str = ""
    input_schema: dict[str, JsonValue] = Field(default_factory=empty_schema)


@runtime_checkable
class Model(Protocol):
    """A chat model that can call tools.

    ``converse`` sends the whole conversation (it ends with a user message) and returns the
    model's next turn. It raises :class:`ModelError` when the call fails, ``retryable`` saying
    whether trying again may help.
    """

    @property
    def model_id(self) -> str:
        """Which model answers (a Bedrock model id, say)."""
        ...

    def converse(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
    ) -> ModelTurn:
        """The model's next turn in the conversation ``messages``."""
        ...
