"""The research-brief agents and the Bedrock model: only their functions may invoke it, and only that model."""

from __future__ import annotations

import json

import pytest

from tests.template.cfn import ACCOUNT, PARTITION, REGION, actions, resources, role_of, statements
from tests.template.stacks import phase_functions, stack

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
PROFILE = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
AGENTS = {("research-brief", "plan"), ("research-brief", "write")}


def bedrock_grants(overrides: dict[str, str]) -> dict[str, set[tuple[str, str, str]]]:
    """Every function's Bedrock grants: (action, resource, condition) triples, by logical id."""
    resolver = stack(**overrides)
    return {
        function_id: {
            (action, resource, json.dumps(statement.get("Condition"), sort_keys=True))
            for statement in statements(resolver, role_of(resolver, function_id))
            for action in actions(statement)
            if action.startswith("bedrock:")
            for resource in resources(statement)
        }
        for function_id in resolver.of_type("AWS::Lambda::Function")
    }


@pytest.mark.parametrize("model", [MODEL, PROFILE])
def test_with_a_model_id_the_agent_phases_may_invoke_that_model_and_nothing_else_may(model: str) -> None:
    """A foundation model directly; an inference profile, and the foundation models only through that profile."""
    grants = bedrock_grants({"AgentModelId": model})
    functions = phase_functions(stack(AgentModelId=model))
    agents = {functions[key] for key in AGENTS}

    profile_arn = f"arn:{PARTITION}:bedrock:{REGION}:{ACCOUNT}:inference-profile/{model}"
    through_profile = json.dumps({"StringEquals": {"bedrock:InferenceProfileArn": profile_arn}}, sort_keys=True)
    expected_grants = {
        ("bedrock:InvokeModel", f"arn:{PARTITION}:bedrock:{REGION}::foundation-model/{model}", "null"),
        ("bedrock:InvokeModel", profile_arn, "null"),
        ("bedrock:InvokeModel", f"arn:{PARTITION}:bedrock:*::foundation-model/*", through_profile),
    }
    for function_id, granted in grants.items():
        expected = expected_grants if function_id in agents else set()
        assert granted == expected, function_id


@pytest.mark.parametrize("overrides", [{}, {"AgentModelId": ""}])
def test_without_a_model_id_no_function_may_invoke_a_model(overrides: dict[str, str]) -> None:
    assert all(granted == set() for granted in bedrock_grants(overrides).values())


def test_the_agent_phases_are_told_the_model_id() -> None:
    resolver = stack(AgentModelId=MODEL)
    for key, function_id in phase_functions(resolver).items():
        variables = resolver.properties(function_id).get("Environment", {}).get("Variables", {})
        if key in AGENTS:
            assert variables["AGENT_MODEL_ID"] == MODEL
        else:
            assert "AGENT_MODEL_ID" not in variables
