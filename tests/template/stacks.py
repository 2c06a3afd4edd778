"""The deployments the template tests check, and how to find the phase functions in one."""

from __future__ import annotations

import pytest

from cairn.settings import Settings
from document_intake.pipeline import pipeline as document_intake
from tests.template.cfn import STACK, Resolver, sam_transform

JWT = {"ApiAuth": "JWT", "JwtIssuer": "https://issuer.example.com/pool", "JwtAudience": "client-a,client-b"}
DEPLOYMENTS = [
    pytest.param({"Driver": "direct", "ApiAuth": "IAM"}, id="direct-iam"),
    pytest.param({"Driver": "stepfunctions", "ApiAuth": "IAM"}, id="stepfunctions-iam"),
    pytest.param({"Driver": "direct", **JWT}, id="direct-jwt"),
    pytest.param({"Driver": "stepfunctions", **JWT}, id="stepfunctions-jwt"),
]


def stack(**overrides: str) -> Resolver:
    """The transformed template of one deployment, ready to evaluate."""
    return Resolver(sam_transform(**overrides), **overrides)


def phase_functions(resolver: Resolver) -> dict[str, str]:
    """Logical id of the function of each phase of document-intake, by phase (found by its deployed name)."""
    names = {resolver.name(logical_id): logical_id for logical_id in resolver.of_type("AWS::Lambda::Function")}
    settings = Settings(function_prefix=f"{STACK}-")
    return {phase: names[settings.phase_function(phase)] for phase in document_intake.phase_names}
