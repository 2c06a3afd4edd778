"""The model port on Amazon Bedrock: one ``converse`` call of the Bedrock Runtime per turn.

Messages are mapped to the Converse API's shape and its reply back to a :class:`ModelTurn`. A
failed call is a :class:`ModelError`: throttling, timeouts and the service's own failures are
retryable; a refused request (invalid, not allowed, an unknown model) is not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
)
from pydantic import ValidationError

from ..agents.messages import STOP_REASONS, ContentBlock, Message, ModelTurn, TextBlock, ToolResult, ToolUse, Usage
from ..agents.model import ToolSpec
from ..core.errors import ModelError

DEFAULT_MAX_TOKENS = 4096

#: Error codes of the Converse API worth trying again: the request was fine, the service was not.
RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelTimeoutException",
        "InternalServerException",
        "ModelNotReadyException",
    }
)
#: Errors raised before a request leaves the process that another try cannot fix.
_SETUP_ERRORS = (ParamValidationError, NoCredentialsError, PartialCredentialsError, NoRegionError)


class ConverseClient(Protocol):
    """What the adapter needs of a ``bedrock-runtime`` client."""

    def converse(self, **request: Any) -> Mapping[str, Any]:
        """Send one Converse request."""
        ...


class BedrockModel:
    """A :class:`~cairn.agents.Model` served by Amazon Bedrock's Converse API.

    ``client`` defaults to the process-wide ``bedrock-runtime`` client, made on first use.
    """

    def __init__(
        self,
        model_id: str,
        *,
        client: ConverseClient | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float | None = None,
    ) -> None:
        self.model_id = model_id
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._client = client

    def __repr__(self) -> str:
        return f"BedrockModel({self.model_id!r})"

    @property
    def client(self) -> ConverseClient:
        """The Bedrock Runtime client (the process-wide default unless one was injected)."""
        if self._client is None:
            from .clients import default_bedrock_runtime_client

            self._client = cast("ConverseClient", default_bedrock_runtime_client())
        return self._client

    def converse(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
    ) -> ModelTurn:
        """The model's next turn; a failed call raises :class:`ModelError`."""
        request = self.request(messages, system=system, tools=tools)
        try:
            response = self.client.converse(**request)
        except ClientError as exc:
            raise _client_error(self.model_id, exc) from exc
        except BotoCoreError as exc:
            raise ModelError(
                f'Bedrock converse with "{self.model_id}" failed: {exc}',
                retryable=not isinstance(exc, _SETUP_ERRORS),
                code=type(exc).__name__,
            ) from exc
        return self.turn(response)

    def request(
        self, messages: Sequence[Message], *, system: str | None = None, tools: Sequence[ToolSpec] = ()
    ) -> dict[str, Any]:
        """The Converse request (keyword arguments of ``client.converse``) for this conversation."""
        inference: dict[str, Any] = {"maxTokens": self.max_tokens}
        if self.temperature is not None:
            inference["temperature"] = self.temperature
        request: dict[str, Any] = {
            "modelId": self.model_id,
            "messages": [to_converse_message(message) for message in messages],
            "inferenceConfig": inference,
        }
        if system:
            request["system"] = [{"text": system}]
        if tools:
            request["toolConfig"] = {"tools": [to_converse_tool(spec) for spec in tools]}
        return request

    def turn(self, response: Mapping[str, Any]) -> ModelTurn:
        """The :class:`ModelTurn` of a Converse response; a response of another shape is a ModelError."""
        stop_reason = response.get("stopReason")
        if stop_reason not in STOP_REASONS:
            raise ModelError(
                f'Bedrock converse with "{self.model_id}" stopped for an unknown reason "{stop_reason}"',
                retryable=False,
                code="UnknownStopReason",
            )
        try:
            usage = response.get("usage") or {}
            return ModelTurn(
                message=from_converse_message(response["output"]["message"]),
                stop_reason=stop_reason,
                usage=Usage(input_tokens=usage.get("inputTokens", 0), output_tokens=usage.get("outputTokens", 0)),
            )
        except (KeyError, TypeError, AttributeError, ValidationError) as exc:
            raise ModelError(
                f'Bedrock converse with "{self.model_id}" returned a reply cairn cannot read: {exc}',
                retryable=False,
                code="MalformedResponse",
            ) from exc


def to_converse_message(message: Message) -> dict[str, Any]:
    """A message in the Converse API's shape."""
    return {"role": message.role, "content": [_to_converse_block(block) for block in message.content]}


def to_converse_tool(spec: ToolSpec) -> dict[str, Any]:
    """A tool spec in the Converse API's shape (``toolConfig.tools[]``)."""
    tool_spec: dict[str, Any] = {"name": spec.name, "inputSchema": {"json": spec.input_schema}}
    if spec.description:
        tool_spec["description"] = spec.description
    return {"toolSpec": tool_spec}


def from_converse_message(message: Mapping[str, Any]) -> Message:
    """A Converse message as a :class:`Message`; blocks with no counterpart here (reasoning, images) are left out."""
    blocks = [block for raw in message.get("content", []) if (block := _from_converse_block(raw)) is not None]
    return Message(role=message["role"], content=blocks)


def _to_converse_block(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"text": block.text}
    if isinstance(block, ToolUse):
        return {"toolUse": {"toolUseId": block.id, "name": block.name, "input": block.input}}
    return {
        "toolResult": {
            "toolUseId": block.tool_use_id,
            "content": [_result_content(block.content)],
            "status": "error" if block.is_error else "success",
        }
    }


def _result_content(content: Any) -> dict[str, Any]:
    """A tool result's content block: an object as ``json``, anything else as ``text`` (Converse wants an object)."""
    if isinstance(content, dict):
        return {"json": content}
    if isinstance(content, str):
        return {"text": content}
    return {"text": json.dumps(content)}


def _from_converse_block(raw: Mapping[str, Any]) -> ContentBlock | None:
    if "text" in raw:
        return TextBlock(text=raw["text"])
    if "toolUse" in raw:
        use = raw["toolUse"]
        return ToolUse(id=use["toolUseId"], name=use["name"], input=use.get("input") or {})
    if "toolResult" in raw:
        result = raw["toolResult"]
        parts = [part.get("json", part.get("text")) for part in result.get("content", [])]
        return ToolResult(
            tool_use_id=result["toolUseId"],
            content=parts[0] if len(parts) == 1 else parts,
            is_error=result.get("status") == "error",
        )
    return None


def _client_error(model_id: str, exc: ClientError) -> ModelError:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    retryable = code in RETRYABLE_CODES or status == 429 or status >= 500
    message = error.get("Message") or str(exc)
    return ModelError(f'Bedrock converse with "{model_id}" failed: {code}: {message}', retryable=retryable, code=code)
