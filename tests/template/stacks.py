"""The deployments the template tests check, and how to find every registered phase's function in one."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.core.pipeline import Phase, Pipeline
from cairn.core.settings import Settings
from pipelines import PIPELINES
from tests.template.cfn import STACK, Resolver, sam_transform

JWT = {"ApiAuth": "JWT", "JwtIssuer": "https://issuer.example.com/pool", "JwtAudience": "client-a,client-b"}
DEPLOYMENTS = [
    pytest.param({"Driver": "direct", "ApiAuth": "IAM"}, id="direct-iam"),
    pytest.param({"Driver": "stepfunctions", "ApiAuth": "IAM"}, id="stepfunctions-iam"),
    pytest.param({"Driver": "direct", **JWT}, id="direct-jwt"),
    pytest.param({"Driver": "stepfunctions", **JWT}, id="stepfunctions-jwt"),
]

PhaseKey = tuple[str, str]
"""(pipeline, phase)."""


def stack(**overrides: str) -> Resolver:
    """The transformed template of one deployment, ready to evaluate."""
    return Resolver(sam_transform(**overrides), **overrides)


def registered_phases() -> dict[PhaseKey, tuple[Pipeline[Any], Phase]]:
    """Every phase of every pipeline of the bundle's registry (functions/pipelines.py)."""
    return {
        (pipeline.name, name): (pipeline, pipeline.get_phase(name))
        for pipeline in PIPELINES
        for name in pipeline.phase_names
    }


def phase_functions(resolver: Resolver) -> dict[PhaseKey, str]:
    """Logical id of the function of each registered phase, found by its deployed name (KeyError if missing)."""
    names = {resolver.name(logical_id): logical_id for logical_id in resolver.of_type("AWS::Lambda::Function")}
    settings = Settings(function_prefix=f"{STACK}-")
    return {key: names[settings.phase_function(*key)] for key in registered_phases()}
