"""What moto's CloudFormation does not model, and how the local runner covers each: the one place for it.

moto creates most of the stack; these it does not, and ``cairn dev`` stands in (the banner lists them):

- ``AWS::ApiGatewayV2::Api``: registered here as a moto model that creates the API (its id, its
  routes) in moto's API Gateway v2, so ``Ref`` and the outputs name it; its requests are served by
  :class:`cairn.dev.gateway.ApiGateway`, the routes read from its OpenAPI body.
- ``AWS::Lambda::EventInvokeConfig``: the retries and the on-failure destination of an async
  invocation, read from the resource and run by :class:`cairn.dev.lambda_service.LambdaService`.
- ``AWS::CloudWatch::Alarm`` and ``AWS::Lambda::Alias``: registered as moto models (:mod:`.moto_models`);
  alarms are not evaluated locally; nor are bucket and queue policies enforced.
- ``AWS::Lambda::LayerVersion``'s ``Ref``, which moto leaves unresolved: its version's ARN.
- ``AWS::StepFunctions::StateMachine``'s ``DefinitionSubstitutions``, which moto ignores, and the
  backend that runs executions, which moto's CloudFormation does not create it in: made through the
  Step Functions API after the stack is created (:func:`substitute_definitions`).
- ``AWS::DynamoDB::Table``'s ``TimeToLiveSpecification``, which moto's CloudFormation leaves disabled:
  enabled through the DynamoDB API after the stack is created (:func:`enable_time_to_live`).
- ``AWS::S3::Bucket``'s ``VersioningConfiguration``, which moto's CloudFormation leaves off: enabled
  through the S3 API after the stack is created (:func:`enable_versioning`).

The names CloudFormation generates (``cairn-dev-CheckpointTable-<suffix>``) get a suffix made from the
stack's name and the logical id instead of a random one (:func:`register_models`): each start of the same
stack has the same names, so ``events/env.json`` can name them.

moto's own SQS and DynamoDB stream event source mappings would invoke the functions through its Lambda (in
Docker): :func:`detach_event_sources` leaves the queues and the streams to the local pollers. Every property
read here is resolved by moto's CloudFormation against the created stack (:func:`resolved`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from collections.abc import Mapping
from typing import Any, Final

from . import moto_models

API: Final = "AWS::ApiGatewayV2::Api"
EVENT_INVOKE_CONFIG: Final = "AWS::Lambda::EventInvokeConfig"
STATE_MACHINE: Final = "AWS::StepFunctions::StateMachine"
COVERED: Final = {
    API: "served by the local API",
    EVENT_INVOKE_CONFIG: "async retries and on-failure destinations run by the local Lambda",
    "AWS::ApiGatewayV2::Stage": "the local API is its $default stage",
    "AWS::S3::BucketPolicy": "not enforced locally",
    "AWS::SQS::QueuePolicy": "not enforced locally",
}
"""Each resource type moto's CloudFormation lacks, and what ``cairn dev`` does for it."""


def moto_stack(stack_name: str, region: str, account: str) -> Any:
    """moto's model of the created stack (moto runs in this process)."""
    from moto.cloudformation.models import cloudformation_backends

    return cloudformation_backends[account][region].get_stack(stack_name)


def resolved(stack: Any, value: Any) -> Any:
    """``value`` (a part of the stack's template) with every intrinsic resolved by moto's CloudFormation."""
    from moto.cloudformation.parsing import clean_json

    return clean_json(value, stack.resource_map)


def uncovered(template: Mapping[str, Any]) -> dict[str, list[str]]:
    """The resources of a (transformed) template moto's CloudFormation does not create: type to logical ids."""
    from moto.cloudformation.parsing import get_model_map

    register_models()
    found: dict[str, list[str]] = {}
    for logical_id, resource in (template.get("Resources") or {}).items():
        kind = str(resource.get("Type", ""))
        if kind == API or (kind not in get_model_map() and not kind.startswith("Custom::")):
            found.setdefault(kind, []).append(logical_id)
    return found


def register_models() -> None:
    """Make moto's CloudFormation create ``AWS::ApiGatewayV2::Api``, and ``Ref`` a layer version (once per process).

    moto's CloudFormation warns of each type it does not create: the banner lists them instead.
    """
    from moto.awslambda.models import LayerVersion
    from moto.cloudformation.parsing import get_model_list, get_model_map, get_name_type_map

    if API in get_model_map():
        return
    logging.getLogger("moto").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", "Tried to parse .* not supported by moto", UserWarning)
    if not hasattr(LayerVersion, "physical_resource_id"):  # a layer's Ref is its version's ARN
        LayerVersion.physical_resource_id = property(lambda layer: layer.arn)  # type: ignore[attr-defined]
    _define_api_model()
    moto_models.define()
    _stable_names()
    for cached in (get_model_list, get_model_map, get_name_type_map):
        cached.cache_clear()


def _define_api_model() -> None:
    from moto.apigatewayv2.models import apigatewayv2_backends
    from moto.core.common_models import CloudFormationModel

    class HttpApi(CloudFormationModel):
        """An HTTP API created in moto's API Gateway v2 from its OpenAPI ``Body``."""

        def __init__(self, api: Any) -> None:
            self.api = api

        @property
        def physical_resource_id(self) -> str:
            return str(self.api.api_id)

        @staticmethod
        def cloudformation_name_type() -> str:
            return "Name"

        @staticmethod
        def cloudformation_type() -> str:
            return API

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr in ("ApiId", "ApiEndpoint")

        def get_cfn_attribute(self, attribute_name: str) -> str:
            if attribute_name == "ApiEndpoint":
                return str(self.api.api_endpoint)
            return self.physical_resource_id

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
        ) -> CloudFormationModel:
            properties = cloudformation_json.get("Properties") or {}
            body = properties.get("Body") or {}
            name = str((body.get("info") or {}).get("title") or properties.get("Name") or resource_name)
            backend = apigatewayv2_backends[account_id][region_name]
            api = backend.create_api(
                api_key_selection_expression="",
                cors_configuration="",
                description=str(properties.get("Description", "")),
                disable_schema_validation="",
                disable_execute_api_endpoint=str(properties.get("DisableExecuteApiEndpoint", "")),
                name=name,
                protocol_type="HTTP",
                route_selection_expression="$request.method $request.path",
                tags={},
                version="",
            )
            if body.get("paths"):
                backend.reimport_api(api.api_id, json.dumps(body), fail_on_warnings=False)
            return cls(api)

    del HttpApi  # registered by being a subclass of CloudFormationModel


def _stable_names() -> None:
    """Make moto's generated names end in a suffix from the stack name and logical id, not a random one."""
    from moto.cloudformation import parsing

    generate = parsing.generate_resource_name

    def stable(resource_type: str, stack_name: str, logical_id: str) -> str:
        suffix = hashlib.sha256(f"{stack_name}/{logical_id}".encode()).hexdigest()[:12].upper()
        if resource_type == "AWS::S3::Bucket":
            suffix = suffix.lower()
        return generate(resource_type, stack_name, logical_id)[: -len(suffix)] + suffix

    parsing.generate_resource_name = stable


def substitute_definitions(stack: Any, template: Mapping[str, Any], client: Any) -> None:
    """Give Step Functions each state machine of the stack, its ``${Name}`` placeholders filled in.

    moto's CloudFormation leaves ``DefinitionSubstitutions`` out, and (when moto runs executions) creates
    the state machine beside the backend that runs them: it is made, or updated, through the API.
    """
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != STATE_MACHINE or _physical_id(stack, logical_id) is None:
            continue
        properties = resolved(stack, dict(resource.get("Properties") or {}))
        definition = str(properties.get("DefinitionString", ""))
        for key, value in (properties.get("DefinitionSubstitutions") or {}).items():
            definition = definition.replace(f"${{{key}}}", str(value))
        arn = str(_physical_id(stack, logical_id))
        try:
            client.update_state_machine(stateMachineArn=arn, definition=definition)
        except client.exceptions.StateMachineDoesNotExist:
            client.create_state_machine(
                name=arn.rsplit(":", 1)[1],
                definition=definition,
                roleArn=str(properties.get("RoleArn", "")),
                type=str(properties.get("StateMachineType", "STANDARD")),
            )


def enable_time_to_live(stack: Any, template: Mapping[str, Any], client: Any) -> None:
    """Turn on each created table's ``TimeToLiveSpecification``, as CloudFormation does when it creates the table."""
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != "AWS::DynamoDB::Table" or _physical_id(stack, logical_id) is None:
            continue
        specification = resolved(stack, (resource.get("Properties") or {}).get("TimeToLiveSpecification"))
        if specification and str(specification.get("Enabled")).lower() == "true":
            client.update_time_to_live(
                TableName=_physical_id(stack, logical_id),
                TimeToLiveSpecification={"Enabled": True, "AttributeName": str(specification["AttributeName"])},
            )


def enable_versioning(stack: Any, template: Mapping[str, Any], client: Any) -> None:
    """Turn on each created bucket's ``VersioningConfiguration``, which moto's CloudFormation leaves off."""
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != "AWS::S3::Bucket" or _physical_id(stack, logical_id) is None:
            continue
        versioning = resolved(stack, (resource.get("Properties") or {}).get("VersioningConfiguration"))
        if versioning and versioning.get("Status") == "Enabled":
            client.put_bucket_versioning(
                Bucket=_physical_id(stack, logical_id), VersioningConfiguration={"Status": "Enabled"}
            )


def detach_event_sources(region: str, account: str) -> None:
    """Stop moto invoking functions itself when a message arrives or a table's item changes: the local pollers do.

    moto's DynamoDB, with a mapping on a table's stream, would also empty the stream after each write it
    delivered, so the stream poller would read nothing.
    """
    from moto.dynamodb.models import dynamodb_backends
    from moto.sqs.models import sqs_backends

    for queue in sqs_backends[account][region].queues.values():
        queue.lambda_event_source_mappings.clear()
    for table in dynamodb_backends[account][region].tables.values():
        table.lambda_event_source_mappings.clear()


def _physical_id(stack: Any, logical_id: str) -> str | None:
    """The physical id of a created resource, None when moto did not create it."""
    resource = stack.resource_map[logical_id]
    return None if resource is None else str(resource.physical_resource_id)
