"""A model that replays a script of turns offline: for tests, demos and crash drills.

The turn it answers with is chosen by the conversation, not by how often it was called: a
conversation holding N assistant messages gets turn N + 1 of the script. So a job resumed after a
crash, in another process with a fresh ``ScriptedModel``, asks for and gets the right next turn.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import InvalidInputError, ModelError
from .messages import ContentBlock, Message, ModelTurn, StopReason, TextBlock, ToolUse, Usage
from .model import ToolSpec


@dataclass(frozen=True)
class ScriptedRequest:
    """One ``converse`` call a :class:`ScriptedModel` got."""

    messages: tuple[Message, ...]
    system: str | None
    tools: tuple[ToolSpec, ...]


class ScriptedModel:
    """A :class:`~cairn.agents.Model` that answers from ``turns``, in order, without a network.

    ``calls`` counts the calls this instance answered and ``requests`` records them. The turn
    answered is the one after the assistant messages already in the conversation; with
    ``check_history`` (the default) those messages must be the script's own earlier turns,
    so a conversation that lost or changed a turn is caught rather than answered.
    """

    def __init__(
        self,
        turns: Sequence[ModelTurn | Mapping[str, Any]],
        model_id: str = "scripted",
        *,
        check_history: bool = True,
    ) -> None:
        self.model_id = model_id
        self.turns: tuple[ModelTurn, ...] = tuple(
            turn if isinstance(turn, ModelTurn) else ModelTurn.model_validate(turn) for turn in turns
        )
        self.check_history = check_history
        self.calls = 0
        self.requests: list[ScriptedRequest] = []
        _check_unique_tool_use_ids(self.turns)

    def __repr__(self) -> str:
        return f"ScriptedModel({self.model_id!r}, {len(self.turns)} turns)"

    @staticmethod
    def position(messages: Sequence[Message]) -> int:
        """The script index of the next turn: how many assistant messages the conversation holds."""
        return sum(1 for message in messages if message.role == "assistant")

    def converse(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
    ) -> ModelTurn:
        """The script's turn for this point of the conversation."""
        self.calls += 1
        self.requests.append(ScriptedRequest(tuple(messages), system, tuple(tools)))
        index = self.position(messages)
        if index >= len(self.turns):
            raise ModelError(
                f'ScriptedModel "{self.model_id}" has {len(self.turns)} turns and the conversation already holds '
                f"{index} assistant messages: the script has no turn {index + 1}",
                retryable=False,
                code="ScriptExhausted",
            )
        if self.check_history:
            self._check_history(messages)
        return self.turns[index]

    def _check_history(self, messages: Sequence[Message]) -> None:
        said = [message for message in messages if message.role == "assistant"]
        for number, (message, turn) in enumerate(zip(said, self.turns, strict=False), start=1):
            if message != turn.message:
                raise ModelError(
                    f'ScriptedModel "{self.model_id}": assistant message {number} of the conversation is not '
                    f"turn {number} of the script (the conversation lost or changed a turn)",
                    retryable=False,
                    code="ScriptDiverged",
                )

    @staticmethod
    def reply(text: str, *, stop_reason: StopReason = "end_turn", usage: Usage | None = None) -> ModelTurn:
        """A turn that says ``text`` and ends the conversation."""
        return ModelTurn(message=Message.assistant(text), stop_reason=stop_reason, usage=usage or Usage())

    @staticmethod
    def use_tool(
        name: str,
        input: Mapping[str, Any] | None = None,
        id: str | None = None,
        *,
        text: str | None = None,
        usage: Usage | None = None,
    ) -> ModelTurn:
        """A turn that asks for one tool call (after ``text``, if given).

        Without ``id`` the id is derived from the name and the input, the same in every process.
        """
        arguments = dict(input or {})
        use = ToolUse(id=id or _derived_id(name, arguments), name=name, input=arguments)
        blocks: list[ContentBlock] = [TextBlock(text=text), use] if text else [use]
        return ModelTurn(
            message=Message(role="assistant", content=blocks), stop_reason="tool_use", usage=usage or Usage()
        )


def _derived_id(name: str, arguments: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps([name, arguments], sort_keys=True, default=str).encode()).hexdigest()
    return f"tooluse_{digest[:16]}"


def _check_unique_tool_use_ids(turns: Sequence[ModelTurn]) -> None:
    seen: dict[str, int] = {}
    for number, turn in enumerate(turns, start=1):
        for use in turn.tool_uses:
            if use.id in seen:
                raise InvalidInputError(
                    f'ScriptedModel: tool use id "{use.id}" is in turns {seen[use.id]} and {number}; '
                    "give each call its own id (ScriptedModel.use_tool(..., id=...))"
                )
            seen[use.id] = number
