"""BedrockModel on a real bedrock-runtime client with botocore's Stubber: the exact Converse requests, the replies
mapped back, and failures translated to ModelError (retryable or not)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from cairn.agents import (
    ContentBlock,
    Message,
    ModelError,
    ModelTurn,
    TextBlock,
    ToolResult,
    Toolset,
    ToolUse,
    Usage,
    tool,
)
from cairn.aws import clients
from cairn.aws.bedrock import BedrockModel
from tests.aws import REGION

MODEL_ID = "anthropic.claude-3-5-haiku-20241022-v1:0"


@tool
def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    """Current weather in a city."""
    return {"city": city, "temperature": 21, "unit": unit}


TOOLS = Toolset([get_weather])
WEATHER_SCHEMA = {
    "additionalProperties": False,
    "properties": {
        "city": {"title": "City", "type": "string"},
        "unit": {"default": "celsius", "title": "Unit", "type": "string"},
    },
    "required": ["city"],
    "title": "get_weather",
    "type": "object",
}
TOOL_CONFIG = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "Current weather in a city.",
                "inputSchema": {"json": WEATHER_SCHEMA},
            }
        }
    ]
}


def reply(content: list[dict[str, Any]], stop_reason: str, tokens: tuple[int, int]) -> dict[str, Any]:
    """A Converse response as the service sends it."""
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason,
        "usage": {"inputTokens": tokens[0], "outputTokens": tokens[1], "totalTokens": sum(tokens)},
        "metrics": {"latencyMs": 412},
    }


@pytest.fixture
def runtime() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("bedrock-runtime", region_name=REGION)
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def test_a_tool_use_round_trip_sends_exact_requests_and_maps_the_replies(runtime: tuple[Any, Stubber]) -> None:
    client, stub = runtime
    model = BedrockModel(MODEL_ID, client=client, max_tokens=512, temperature=0.2)
    asked = {"role": "user", "content": [{"text": "Weather in Lyon?"}]}
    tool_use_block = {"toolUse": {"toolUseId": "tooluse_abc123", "name": "get_weather", "input": {"city": "Lyon"}}}
    said_content: list[dict[str, Any]] = [{"text": "Checking."}, tool_use_block]
    said = {"role": "assistant", "content": said_content}
    result = {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "tooluse_abc123",
                    "content": [{"json": {"city": "Lyon", "temperature": 21, "unit": "celsius"}}],
                    "status": "success",
                }
            }
        ],
    }
    common = {
        "modelId": MODEL_ID,
        "system": [{"text": "You are a weather bot."}],
        "toolConfig": TOOL_CONFIG,
        "inferenceConfig": {"maxTokens": 512, "temperature": 0.2},
    }
    stub.add_response(
        "converse",
        reply(said_content, "tool_use", (120, 31)),
        expected_params={**common, "messages": [asked]},
    )
    stub.add_response(
        "converse",
        reply([{"text": "It is 21°C in Lyon."}], "end_turn", (180, 12)),
        expected_params={**common, "messages": [asked, said, result]},
    )

    messages = [Message.user("Weather in Lyon?")]
    first = model.converse(messages, system="You are a weather bot.", tools=TOOLS.specs)
    messages += [first.message, Message(role="user", content=[TOOLS.call(use) for use in first.tool_uses])]
    final = model.converse(messages, system="You are a weather bot.", tools=TOOLS.specs)

    assert first == ModelTurn(
        message=Message.assistant(
            "Checking.", ToolUse(id="tooluse_abc123", name="get_weather", input={"city": "Lyon"})
        ),
        stop_reason="tool_use",
        usage=Usage(input_tokens=120, output_tokens=31),
    )
    assert final.text == "It is 21°C in Lyon."
    assert final.stop_reason == "end_turn"
    assert first.usage + final.usage == Usage(input_tokens=300, output_tokens=43)


def test_without_tools_or_system_the_request_leaves_them_out(runtime: tuple[Any, Stubber]) -> None:
    client, stub = runtime
    stub.add_response(
        "converse",
        reply([{"text": "Hello!"}], "end_turn", (5, 2)),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
            "inferenceConfig": {"maxTokens": 4096},
        },
    )

    turn = BedrockModel(MODEL_ID, client=client).converse([Message.user("Hi")])

    assert (turn.text, turn.stop_reason, turn.usage.total_tokens) == ("Hello!", "end_turn", 7)


def test_tool_results_that_are_not_objects_and_errors_are_sent_as_text(runtime: tuple[Any, Stubber]) -> None:
    client, stub = runtime
    uses: list[ContentBlock] = [ToolUse(id=f"t{n}", name="get_weather", input={"city": "X"}) for n in range(3)]
    results: list[ContentBlock] = [
        ToolResult(tool_use_id="t0", content=[1, 2]),
        ToolResult(tool_use_id="t1", content="plain words"),
        ToolResult(tool_use_id="t2", content="KeyError: 'X'", is_error=True),
    ]
    stub.add_response(
        "converse",
        reply([{"text": "ok"}], "end_turn", (1, 1)),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [
                {"role": "user", "content": [{"text": "go"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"toolUse": {"toolUseId": f"t{n}", "name": "get_weather", "input": {"city": "X"}}}
                        for n in range(3)
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"toolResult": {"toolUseId": "t0", "content": [{"text": "[1, 2]"}], "status": "success"}},
                        {"toolResult": {"toolUseId": "t1", "content": [{"text": "plain words"}], "status": "success"}},
                        {"toolResult": {"toolUseId": "t2", "content": [{"text": "KeyError: 'X'"}], "status": "error"}},
                    ],
                },
            ],
            "toolConfig": TOOL_CONFIG,
            "inferenceConfig": {"maxTokens": 4096},
        },
    )

    messages = [
        Message.user("go"),
        Message(role="assistant", content=uses),
        Message(role="user", content=results),
    ]
    assert BedrockModel(MODEL_ID, client=client).converse(messages, tools=TOOLS.specs).text == "ok"


def test_blocks_with_no_counterpart_are_left_out_of_the_turn(runtime: tuple[Any, Stubber]) -> None:
    client, stub = runtime
    thinking = {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "sig"}}}
    stub.add_response("converse", reply([thinking, {"text": "Answer."}], "max_tokens", (9, 9)))

    turn = BedrockModel(MODEL_ID, client=client).converse([Message.user("Think.")])

    assert turn.message.content == [TextBlock(text="Answer.")]
    assert turn.stop_reason == "max_tokens"


@pytest.mark.parametrize(
    ("code", "status", "retryable"),
    [
        ("ThrottlingException", 429, True),
        ("ServiceUnavailableException", 503, True),
        ("ModelTimeoutException", 408, True),
        ("InternalServerException", 500, True),
        ("ModelNotReadyException", 429, True),
        ("ValidationException", 400, False),
        ("AccessDeniedException", 403, False),
        ("ResourceNotFoundException", 404, False),
        ("ModelErrorException", 424, False),
    ],
)
def test_service_errors_become_model_errors_saying_whether_to_retry(
    runtime: tuple[Any, Stubber], code: str, status: int, retryable: bool
) -> None:
    client, stub = runtime
    stub.add_client_error("converse", service_error_code=code, service_message="it went wrong", http_status_code=status)

    with pytest.raises(ModelError) as raised:
        BedrockModel(MODEL_ID, client=client).converse([Message.user("Hi")])

    error = raised.value
    assert (error.retryable, error.code) == (retryable, code)
    assert str(error) == f'Bedrock converse with "{MODEL_ID}" failed: {code}: it went wrong'
    assert error.__cause__ is not None


def test_connection_errors_are_retryable_and_bad_requests_are_not() -> None:
    class Unreachable:
        def converse(self, **request: Any) -> dict[str, Any]:
            raise EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")

    with pytest.raises(ModelError) as unreachable:
        BedrockModel(MODEL_ID, client=Unreachable()).converse([Message.user("Hi")])
    assert unreachable.value.retryable is True
    assert unreachable.value.code == "EndpointConnectionError"

    client = boto3.client("bedrock-runtime", region_name=REGION)
    with Stubber(client) as stub:
        stub.add_response("converse", reply([{"text": "never sent"}], "end_turn", (1, 1)))
        with pytest.raises(ModelError) as invalid:
            BedrockModel(MODEL_ID, client=client, max_tokens=0).converse([Message.user("Hi")])
    assert invalid.value.retryable is False
    assert invalid.value.code == "ParamValidationError"


def test_an_unknown_stop_reason_is_a_model_error() -> None:
    with pytest.raises(ModelError, match='unknown reason "dozed_off"') as raised:
        BedrockModel(MODEL_ID).turn(reply([{"text": "zzz"}], "dozed_off", (1, 1)))
    assert raised.value.retryable is False


@pytest.mark.parametrize(
    "response",
    [
        {"stopReason": "end_turn", "usage": {}},
        reply([{"toolUse": {"toolUseId": "t", "name": "n", "input": ["not", "an", "object"]}}], "tool_use", (1, 1)),
        {**reply([{"text": "hi"}], "end_turn", (1, 1)), "usage": {"inputTokens": -3}},
    ],
)
def test_a_reply_of_another_shape_is_a_model_error_that_is_not_retried(response: dict[str, Any]) -> None:
    with pytest.raises(ModelError, match="returned a reply cairn cannot read") as raised:
        BedrockModel(MODEL_ID).turn(response)
    assert (raised.value.retryable, raised.value.code) == (False, "MalformedResponse")


@pytest.fixture
def fresh_default_client() -> Iterator[None]:
    clients.default_bedrock_runtime_client.cache_clear()
    yield
    clients.default_bedrock_runtime_client.cache_clear()


@pytest.mark.usefixtures("fresh_default_client")
def test_the_default_client_is_made_on_first_use_with_a_long_read_timeout() -> None:
    model = BedrockModel(MODEL_ID)

    client: Any = model.client

    assert client.meta.service_model.service_name == "bedrock-runtime"
    assert client.meta.config.read_timeout == clients.MODEL_READ_TIMEOUT
    assert model.client is client
    assert BedrockModel("another-model").client is client, "one client per process"
