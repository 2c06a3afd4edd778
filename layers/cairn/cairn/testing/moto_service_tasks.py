"""moto's Step Functions engine calling Step Functions from a task as AWS does.

A task of ``arn:aws:states:::states:startExecution`` names its parameters as the Step Functions integration does
(``StateMachineArn``, ``Name``, ``Input``); moto's engine hands them to boto3 as written, and boto3's request
shape names them ``stateMachineArn``, ``name``, ``input``, so the call fails with ``States.Runtime`` before it is
sent. :func:`service_task_parameters` renames them to the request shape's members, by the rule moto's engine has
for it and leaves unused (its ``_to_boto_request``); nothing else of the call changes. The state machine's
``HandOff`` (continue-as-new) is such a task.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import botocore.session
from botocore.model import StructureShape


@functools.cache
def _request_shape(action: str) -> StructureShape | None:
    """The input shape of Step Functions' operation ``action`` (snake case: ``start_execution``)."""
    model = botocore.session.get_session().get_service_model("stepfunctions")
    for name in model.operation_names:
        if botocore.xform_name(name) == action:
            shape = model.operation_model(name).input_shape
            return shape if isinstance(shape, StructureShape) else None
    return None


@contextmanager
def service_task_parameters() -> Iterator[None]:
    """While open, moto's engine sends a Step Functions task's parameters under boto3's member names."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    original = StateTaskServiceSfn._normalise_parameters

    def normalise(
        self: Any,
        parameters: dict[str, Any],
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        original(self, parameters, boto_service_name, service_action_name)
        shape = _request_shape(self._get_boto_service_action(service_action_name))
        if shape is not None:
            self._to_boto_request(parameters, shape)

    with mock.patch.object(StateTaskServiceSfn, "_normalise_parameters", normalise):
        yield
