"""The template deployed as ``sam deploy`` deploys it, onto the local endpoint: what ``cairn dev`` serves.

:func:`deploy` checks the parameter values as CloudFormation does (:mod:`cairn.bundle.templating.parameters`),
packages the template (each code folder zipped into the local S3, :mod:`cairn.dev.packaging`), runs
the SAM transform (:mod:`cairn.bundle.templating.transform`), and creates the result as a stack with
moto's CloudFormation. The Lambda functions it creates are run by the local runner:
:class:`cairn.dev.functions.StackReader` reads their configuration back from the stack. What moto does
not create is covered in :mod:`cairn.dev.coverage`. A bad parameter value, a template the transform
rejects, or a stack CloudFormation fails to create, raises :class:`DeploymentError` with the service's
own message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..bundle.templating import cfnyaml
from ..bundle.templating import parameters as checks
from ..bundle.templating.transform import packaged, transform
from . import coverage
from .functions import DeploymentError, StackReader
from .models import Deployment, StateMachineInfo
from .packaging import ArtifactBucket

__all__ = ["DeploymentError", "deploy"]


def deploy(
    template: Path,
    *,
    client: Callable[[str], Any],
    stack_name: str = "cairn-dev",
    parameters: Mapping[str, str] | None = None,
    region: str = "us-east-1",
    account: str = "123456789012",
) -> Deployment:
    """Create ``template``'s stack on the endpoint of ``client(service_name)``; DeploymentError when it cannot."""
    path = template.resolve()
    try:
        body = cfnyaml.load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DeploymentError(f"Cannot read {template}: {exc}") from None
    if not isinstance(body, Mapping) or not isinstance(body.get("Resources"), Mapping):
        raise DeploymentError(f"{template} is not a CloudFormation template (no Resources)")
    given = dict(parameters or {})
    try:
        checks.check(body, given)
    except checks.ParameterError as exc:
        raise DeploymentError(f"CloudFormation cannot create stack {stack_name}: {exc}") from None
    artifacts = ArtifactBucket(client("s3"), stack_name, region)
    transformed = transform(
        packaged(body, path.parent, artifacts), given, stack_name=stack_name, region=region, account=account
    )
    covered = coverage.uncovered(transformed)
    cloudformation = client("cloudformation")
    try:
        cloudformation.create_stack(
            StackName=stack_name,
            TemplateBody=json.dumps(transformed),
            Parameters=[{"ParameterKey": key, "ParameterValue": value} for key, value in given.items()],
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
        )
        described = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    except Exception as exc:  # botocore's ClientError: CloudFormation's own message
        raise DeploymentError(f"CloudFormation cannot create stack {stack_name}: {_message(exc)}") from None
    if described["StackStatus"] != "CREATE_COMPLETE":
        raise DeploymentError(f"Stack {stack_name} is {described['StackStatus']}: {described.get('StackStatusReason')}")
    stack = coverage.moto_stack(stack_name, region, account)
    coverage.substitute_definitions(stack, transformed, client("stepfunctions"))
    coverage.enable_time_to_live(stack, transformed, client("dynamodb"))
    coverage.enable_versioning(stack, transformed, client("s3"))
    coverage.detach_event_sources(region, account)
    reader = StackReader(transformed, stack, client, artifacts.folder)
    functions = reader.functions()
    resources = {
        str(item["LogicalResourceId"]): str(item["PhysicalResourceId"])
        for item in cloudformation.describe_stack_resources(StackName=stack_name)["StackResources"]
        if item.get("PhysicalResourceId")
    }
    return Deployment(
        stack_name=stack_name,
        region=region,
        account=account,
        parameters={str(item["ParameterKey"]): str(item["ParameterValue"]) for item in described.get("Parameters", [])},
        outputs={str(item["OutputKey"]): str(item["OutputValue"]) for item in described.get("Outputs", [])},
        resources=resources,
        table_name=_only(reader, "AWS::DynamoDB::Table"),
        state_machine=_state_machine(reader, client("stepfunctions")),
        functions=functions,
        api=reader.api(functions),
        covered=covered,
        template=transformed,
    )


def _only(reader: StackReader, kind: str) -> str | None:
    """The physical id of the stack's one resource of ``kind`` (None when it has none or several)."""
    found = [reader.names[logical_id] for logical_id, _ in reader.of_type(kind)]
    return found[0] if len(found) == 1 else None


def _state_machine(reader: StackReader, stepfunctions: Any) -> StateMachineInfo | None:
    """The stack's one state machine as created (None when it has none)."""
    arn = _only(reader, coverage.STATE_MACHINE)
    if arn is None:
        return None
    described = stepfunctions.describe_state_machine(stateMachineArn=arn)
    return StateMachineInfo(str(described["name"]), arn, str(described["definition"]))


def _message(error: Exception) -> str:
    """A service error's own message (botocore's ClientError), else the exception's text, on one line."""
    response = getattr(error, "response", None)
    message = (response or {}).get("Error", {}).get("Message") if isinstance(response, dict) else None
    return " ".join(str(message or error).split())
