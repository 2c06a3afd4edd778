"""The stepfunctions driver on a laptop: the state machine runs on moto, its Lambda tasks on a local stack.

moto runs a state machine's executions when it is started with
``mock_aws(config={"stepfunctions": {"execute_state_machine": True}})``. Its
``arn:aws:states:::lambda:invoke`` tasks would then call moto's Lambda, which
runs functions in Docker; :func:`route_lambda_tasks` sends them to a
:class:`LocalStack`'s functions instead. :func:`create_state_machine` deploys
``cairn/aws/pipeline.asl.json`` with its substitutions filled.

Executions run on threads, so two of them can advance one job at once; the
local stack serialises its DynamoDB calls (:mod:`cairn.testing.serialised`) so
that moto's conditional writes are atomic as DynamoDB's are.
"""

from __future__ import annotations

import json
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

from botocore.exceptions import ClientError

from ..core.failures import describe
from .faults import SimulatedCrash
from .moto_service_tasks import service_task_parameters
from .stack import SCHEDULER, LocalStack

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

DEFINITION = Path(__file__).resolve().parents[1] / "aws" / "pipeline.asl.json"
"""The state machine's definition, shipped with the package (a template: ``${...}`` substitutions)."""

ACCOUNT = "123456789012"
"""moto's default account."""


def function_arn(name: str, *, region: str = "us-east-1", account: str = ACCOUNT) -> str:
    """The ARN of Lambda function ``name``."""
    return f"arn:aws:lambda:{region}:{account}:function:{name}"


def function_name(reference: str) -> str:
    """The function a Lambda ``FunctionName`` names: a name, a full or partial ARN, with or without a qualifier."""
    parts = reference.split(":")
    if reference.startswith("arn:"):
        return parts[6] if len(parts) > 6 else reference
    if len(parts) >= 3 and parts[1] == "function":
        return parts[2]
    return parts[0]


def load_definition(substitutions: dict[str, str], path: Path = DEFINITION) -> str:
    """The definition at ``path`` with every ``${Name}`` replaced; a substitution left unfilled is an error."""
    definition = path.read_text(encoding="utf-8")
    for name, value in substitutions.items():
        definition = definition.replace(f"${{{name}}}", value)
    if "${" in definition:
        start = definition.index("${")
        raise ValueError(f"{path} needs a substitution for {definition[start : definition.index('}', start) + 1]}")
    json.loads(definition)
    return definition


def create_state_machine(
    sfn: SFNClient, *, scheduler: str = SCHEDULER, name: str | None = None, path: Path = DEFINITION
) -> str:
    """Create the pipeline state machine, its scheduler function being ``scheduler``; returns its ARN."""
    definition = load_definition({"SchedulerFunctionArn": function_arn(scheduler, region=sfn.meta.region_name)}, path)
    created = sfn.create_state_machine(
        name=name or f"cairn-pipeline-{uuid.uuid4().hex[:10]}",
        definition=definition,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/cairn-pipeline",
    )
    return created["stateMachineArn"]


def invoke_task(stack: LocalStack, parameters: dict[str, Any]) -> dict[str, Any]:
    """Run a ``lambda:invoke`` task's call on ``stack`` and answer as Lambda does.

    A function that raises (or dies: :class:`SimulatedCrash`) answers with
    ``FunctionError`` and Lambda's error payload, so the task fails with the
    error's type as its Error and the payload as its Cause. An unknown function
    is Lambda's ``ResourceNotFoundException``.
    """
    reference = str(parameters["FunctionName"])
    name = function_name(reference)
    if name not in stack.invoker.functions:
        raise ClientError(
            {
                "Error": {"Code": "ResourceNotFoundException", "Message": f"Function not found: {reference}"},
                "ResponseMetadata": {
                    "HTTPStatusCode": 404,
                    "RequestId": str(uuid.uuid4()),
                    "HTTPHeaders": {},
                    "HostId": "",
                    "RetryAttempts": 0,
                },
            },
            "Invoke",
        )
    raw = parameters.get("Payload") or b"{}"
    event = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    try:
        result = json.loads(json.dumps(stack.call(name, event)))  # what Lambda can return is JSON
    except (Exception, SimulatedCrash) as exc:
        error = {
            "errorMessage": describe(exc),
            "errorType": type(exc).__name__,
            "stackTrace": traceback.format_exception(exc)[-3:],
        }
        return {"StatusCode": 200, "FunctionError": "Unhandled", "ExecutedVersion": "$LATEST", "Payload": error}
    return {"StatusCode": 200, "ExecutedVersion": "$LATEST", "Payload": result}


@contextmanager
def route_lambda_tasks(stack: LocalStack) -> Iterator[None]:
    """While open, moto's Step Functions executions run their ``lambda:invoke`` tasks on ``stack``'s functions.

    The hook is the one function of moto's engine that makes the call of an
    optimised Lambda task (``arn:aws:states:::lambda:invoke``); nothing else
    in moto changes. Executions run on moto's threads, so keep this open until
    they have finished. A task that starts an execution (the machine's hand-off) works as on AWS
    (:func:`~cairn.testing.moto_service_tasks.service_task_parameters`).
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    def invoke(parameters: dict[str, Any], region: str, state_credentials: Any) -> dict[str, Any]:
        return invoke_task(stack, parameters)

    with mock.patch.object(lambda_eval_utils, "_invoke_lambda_function", invoke), service_task_parameters():
        yield
