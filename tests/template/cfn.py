"""The SAM template, offline: load it, resolve its conditions, transform it, and evaluate intrinsics.

Nothing here calls AWS. ``sam_transform`` runs the same translator CloudFormation runs for
``AWS::Serverless-2016-10-31``, after resolving ``Fn::If`` the way ``AWS::LanguageExtensions``
does (every condition of this template depends on parameters only). ``Resolver`` evaluates the
intrinsics of the result with made-up physical names, so IAM statements and environment
variables can be compared as plain strings.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import re
from collections.abc import Iterator, Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from cfnlint.decode.decode import decode_str  # type: ignore[import-untyped]
from samtranslator.translator.transform import transform  # type: ignore[import-untyped]

from cairn.bundle.templating.conditions import Pseudo, condition_values

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
STATE_MACHINE = ROOT / "statemachine" / "pipeline.asl.json"

STACK = "cairn-test"
REGION = "us-east-1"
ACCOUNT = "123456789012"
PARTITION = "aws"
PSEUDO = {
    "AWS::StackName": STACK,
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": PARTITION,
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackId": f"arn:{PARTITION}:cloudformation:{REGION}:{ACCOUNT}:stack/{STACK}/0",
}
FUNCTION_ARN_PREFIX = f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:"
STREAM_LABEL = "2026-01-01T00:00:00.000"
"""The label of a table's stream (the time it was turned on), in the ARNs the resolver makes up."""

NO_VALUE = {"Ref": "AWS::NoValue"}
_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


class _Removed:
    """What ``Fn::If`` yields when the chosen branch is ``AWS::NoValue``."""


REMOVED = _Removed()


def load_yaml_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """The template as plain dicts and lists, short-form tags (``!Ref``) turned into their long form."""
    decoded, matches = decode_str(path.read_text(encoding="utf-8"))
    if matches:
        raise ValueError(f"{path} does not parse: {[str(match) for match in matches]}")
    plain: dict[str, Any] = json.loads(json.dumps(decoded))
    return plain


@functools.cache
def _cached_template() -> str:
    return json.dumps(load_yaml_template())


def sam_template() -> dict[str, Any]:
    """A fresh copy of ``template.yaml``."""
    template: dict[str, Any] = json.loads(_cached_template())
    return template


def parameter_values(template: Mapping[str, Any], overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every parameter's value as CloudFormation passes it (a string): the default, or the override."""
    values = {name: str(spec.get("Default", "")) for name, spec in template.get("Parameters", {}).items()}
    for name, value in (overrides or {}).items():
        if name not in values:
            raise KeyError(f"The template has no parameter {name}")
        values[name] = value
    return values


def evaluate_conditions(template: Mapping[str, Any], params: Mapping[str, str]) -> dict[str, bool]:
    """The value of every condition for these parameter values (the library's rules: ``cairn.bundle.templating``)."""
    return condition_values(template, params, Pseudo(stack_name=STACK, region=REGION, account=ACCOUNT))


def resolve_ifs(node: Any, conditions: Mapping[str, bool]) -> Any:
    """``node`` with every ``Fn::If`` replaced by its branch; ``AWS::NoValue`` removes the key or item."""
    if isinstance(node, dict):
        if set(node) == {"Fn::If"}:
            name, when_true, when_false = node["Fn::If"]
            chosen = when_true if conditions[name] else when_false
            return REMOVED if chosen == NO_VALUE else resolve_ifs(chosen, conditions)
        resolved = {key: resolve_ifs(item, conditions) for key, item in node.items()}
        return {key: item for key, item in resolved.items() if item is not REMOVED}
    if isinstance(node, list):
        items = [resolve_ifs(item, conditions) for item in node]
        return [item for item in items if item is not REMOVED]
    return node


def apply_language_extensions(template: Mapping[str, Any], params: Mapping[str, str]) -> dict[str, Any]:
    """What ``AWS::LanguageExtensions`` hands to the SAM transform: conditions resolved, the transform dropped."""
    conditions = evaluate_conditions(template, params)
    result = copy.deepcopy(dict(template))
    for section in ("Globals", "Resources", "Outputs"):
        if section in result:
            result[section] = resolve_ifs(result[section], conditions)
    transforms = result.get("Transform", [])
    transforms = [transforms] if isinstance(transforms, str) else list(transforms)
    remaining = [name for name in transforms if name != "AWS::LanguageExtensions"]
    result["Transform"] = remaining[0] if len(remaining) == 1 else remaining
    return result


def packaged(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template as ``sam package`` leaves it: code in S3, the state machine definition inline."""
    result = copy.deepcopy(dict(template))
    for logical_id, resource in result["Resources"].items():
        properties = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str):
                properties[key] = f"s3://{STACK}-artifacts/{logical_id}.zip"
        if isinstance(properties.get("DefinitionUri"), str):
            path = ROOT / properties.pop("DefinitionUri")
            properties["Definition"] = json.loads(path.read_text(encoding="utf-8"))
    return result


class _OfflinePolicies:
    """The translator's managed-policy loader, without IAM: the template names no managed policy."""

    def load(self) -> dict[str, str]:
        return {}


@contextlib.contextmanager
def _region() -> Iterator[None]:
    """The translator reads the region from a boto3 session: give it ours unless one is set."""
    if os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION"):
        yield
        return
    os.environ["AWS_DEFAULT_REGION"] = REGION
    try:
        yield
    finally:
        del os.environ["AWS_DEFAULT_REGION"]


@functools.cache
def _cached_transform(overrides: tuple[tuple[str, str], ...]) -> str:
    template = sam_template()
    params = parameter_values(template, dict(overrides))
    fragment = packaged(apply_language_extensions(template, params))
    with _region():
        transformed = transform(fragment, {**params, "AWS::Region": REGION}, _OfflinePolicies())
    return json.dumps(transformed)


def sam_transform(**overrides: str) -> dict[str, Any]:
    """The plain CloudFormation template CloudFormation deploys for these parameter values."""
    result: dict[str, Any] = json.loads(_cached_transform(tuple(sorted(overrides.items()))))
    return result


class Resolver:
    """Evaluates intrinsics of a (transformed) template with made-up but consistent physical names."""

    def __init__(self, template: Mapping[str, Any], **overrides: str) -> None:
        self.template = template
        self.params = parameter_values(template, overrides)
        self.conditions = evaluate_conditions(template, self.params)
        self.resources: dict[str, Any] = template["Resources"]

    # -- physical names
    def _property(self, logical_id: str, key: str) -> Any:
        value = self.resources[logical_id].get("Properties", {}).get(key)
        return None if value is None else self.resolve(value)

    def name(self, logical_id: str) -> str:
        """The physical name CloudFormation would give the resource."""
        kind = self.resources[logical_id]["Type"]
        explicit = {
            "AWS::Lambda::Function": "FunctionName",
            "AWS::StepFunctions::StateMachine": "StateMachineName",
            "AWS::Logs::LogGroup": "LogGroupName",
            "AWS::Lambda::LayerVersion": "LayerName",
            "AWS::DynamoDB::Table": "TableName",
            "AWS::SQS::Queue": "QueueName",
        }.get(kind)
        given = self._property(logical_id, explicit) if explicit else None
        if given:
            return str(given)
        generated = f"{STACK}-{logical_id}-0ABC123"
        return generated.lower() if kind == "AWS::S3::Bucket" else generated

    def arn(self, logical_id: str) -> str:
        """The ARN of the resource."""
        kind = self.resources[logical_id]["Type"]
        name = self.name(logical_id)
        region = f"arn:{PARTITION}:{{service}}:{REGION}:{ACCOUNT}"
        if kind == "AWS::Lambda::Function":
            return FUNCTION_ARN_PREFIX + name
        if kind == "AWS::DynamoDB::Table":
            return region.format(service="dynamodb") + f":table/{name}"
        if kind == "AWS::S3::Bucket":
            return f"arn:{PARTITION}:s3:::{name}"
        if kind == "AWS::SQS::Queue":
            return region.format(service="sqs") + f":{name}"
        if kind == "AWS::StepFunctions::StateMachine":
            return region.format(service="states") + f":stateMachine:{name}"
        if kind == "AWS::Logs::LogGroup":
            return region.format(service="logs") + f":log-group:{name}:*"
        if kind == "AWS::IAM::Role":
            return f"arn:{PARTITION}:iam::{ACCOUNT}:role/{name}"
        if kind == "AWS::IAM::ManagedPolicy":
            return f"arn:{PARTITION}:iam::{ACCOUNT}:policy/{name}"
        if kind == "AWS::Lambda::LayerVersion":
            return region.format(service="lambda") + f":layer:{name}:1"
        return f"arn:{PARTITION}:unknown:{REGION}:{ACCOUNT}:{logical_id}"

    def ref(self, name: str) -> Any:
        """What ``Ref`` returns for a parameter, a pseudo parameter or a resource."""
        if name in self.params:
            return self.params[name]
        if name in PSEUDO:
            return PSEUDO[name]
        if name == "AWS::NoValue":
            return REMOVED
        kind = self.resources[name]["Type"]
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{self.name(name)}"
        if kind in ("AWS::StepFunctions::StateMachine", "AWS::Lambda::LayerVersion", "AWS::IAM::ManagedPolicy"):
            return self.arn(name)
        if kind == "AWS::ApiGatewayV2::Api":
            return "a1b2c3d4e5"
        if kind == "AWS::Lambda::Alias":  # the alias's ARN: its function's, qualified by its name
            alias = self.resources[name]["Properties"]
            return f"{FUNCTION_ARN_PREFIX}{self.resolve(alias['FunctionName'])}:{self.resolve(alias['Name'])}"
        return self.name(name)

    def get_att(self, logical_id: str, attribute: str) -> Any:
        """What ``Fn::GetAtt`` returns."""
        if attribute == "Arn":
            return self.arn(logical_id)
        if attribute in ("QueueName", "Name"):
            return self.name(logical_id)
        if attribute == "StreamArn":  # a table's stream: its label is the time it was turned on
            return f"{self.arn(logical_id)}/stream/{STREAM_LABEL}"
        raise ValueError(f"Unsupported attribute {logical_id}.{attribute}")

    # -- intrinsics
    def _sub(self, text: str, variables: Mapping[str, Any]) -> str:
        def replace(match: re.Match[str]) -> str:
            key = match.group(1)
            if key in variables:
                return str(self.resolve(variables[key]))
            if "." in key and key.split(".", 1)[0] in self.resources:
                logical_id, attribute = key.split(".", 1)
                return str(self.get_att(logical_id, attribute))
            return str(self.ref(key))

        return _SUB_VARIABLE.sub(replace, text).replace("${!", "${")

    def resolve(self, node: Any) -> Any:
        """``node`` with every intrinsic evaluated."""
        if isinstance(node, list):
            items = [self.resolve(item) for item in node]
            return [item for item in items if item is not REMOVED]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, args), *_ = node.items()
            if key == "Ref":
                return self.ref(args)
            if key == "Fn::GetAtt":
                logical_id, attribute = args.split(".", 1) if isinstance(args, str) else args
                return self.get_att(logical_id, attribute)
            if key == "Fn::Sub":
                text, variables = (args, {}) if isinstance(args, str) else args
                return self._sub(text, variables)
            if key == "Fn::Join":
                separator, items = args
                return separator.join(str(item) for item in self.resolve(items))
            if key == "Fn::Split":
                separator, text = args
                return str(self.resolve(text)).split(separator)
            if key == "Fn::Select":
                index, items = args
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::If":
                name, when_true, when_false = args
                return self.resolve(when_true if self.conditions[name] else when_false)
            if key == "Fn::FindInMap":
                mapping, first, second = (self.resolve(arg) for arg in args)
                return self.template["Mappings"][mapping][str(first)][str(second)]
        resolved = {key: self.resolve(item) for key, item in node.items()}
        return {key: item for key, item in resolved.items() if item is not REMOVED}

    # -- what the stack would contain
    def exists(self, logical_id: str) -> bool:
        """Whether the resource is created for these parameter values."""
        condition = self.resources[logical_id].get("Condition")
        return condition is None or self.conditions[condition]

    def of_type(self, kind: str) -> Iterator[str]:
        """Logical ids of the created resources of one type."""
        for logical_id, resource in self.resources.items():
            if resource["Type"] == kind and self.exists(logical_id):
                yield logical_id

    def properties(self, logical_id: str) -> dict[str, Any]:
        """The resolved properties of a resource."""
        resolved: dict[str, Any] = self.resolve(self.resources[logical_id].get("Properties", {}))
        return resolved


def role_of(resolver: Resolver, function_id: str) -> str:
    """The logical id of a function's execution role."""
    role = resolver.resources[function_id]["Properties"]["Role"]
    logical_id, _ = role["Fn::GetAtt"] if isinstance(role["Fn::GetAtt"], list) else role["Fn::GetAtt"].split(".")
    return str(logical_id)


def stack_policies(resolver: Resolver) -> dict[str, str]:
    """The stack's own managed policies: logical id by ARN."""
    return {resolver.arn(policy_id): policy_id for policy_id in resolver.of_type("AWS::IAM::ManagedPolicy")}


def statements(resolver: Resolver, role_id: str) -> list[dict[str, Any]]:
    """Every statement of the role's inline policies and of the stack's policies attached to it, resolved."""
    found: list[dict[str, Any]] = []
    for policy in resolver.properties(role_id).get("Policies", []):
        found += _as_list(policy["PolicyDocument"]["Statement"])
    for policy_id in resolver.of_type("AWS::IAM::Policy"):
        policy = resolver.resources[policy_id]["Properties"]
        if {"Ref": role_id} in policy.get("Roles", []):
            found += _as_list(resolver.properties(policy_id)["PolicyDocument"]["Statement"])
    own = stack_policies(resolver)
    for arn in resolver.properties(role_id).get("ManagedPolicyArns", []):
        if arn in own:
            found += _as_list(resolver.properties(own[arn])["PolicyDocument"]["Statement"])
    return found


def managed_policies(resolver: Resolver, role_id: str) -> list[str]:
    """Names of the AWS managed policies attached to the role (the part of the ARN after ``policy/``).

    The stack's own managed policies are not among them: :func:`statements` reads their statements.
    """
    own = stack_policies(resolver)
    return [
        arn.split(":policy/", 1)[1]
        for arn in resolver.properties(role_id).get("ManagedPolicyArns", [])
        if arn not in own
    ]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def actions(statement: Mapping[str, Any]) -> list[str]:
    """The statement's actions, as a list."""
    return [str(action) for action in _as_list(statement["Action"])]


def resources(statement: Mapping[str, Any]) -> list[str]:
    """The statement's resources, as a list."""
    return [str(resource) for resource in _as_list(statement["Resource"])]


def allows(granted: list[dict[str, Any]], action: str, resource: str) -> bool:
    """Whether an Allow statement grants ``action`` on ``resource`` (IAM wildcards honoured)."""
    return any(
        statement["Effect"] == "Allow"
        and "Condition" not in statement
        and any(fnmatchcase(action.lower(), pattern.lower()) for pattern in actions(statement))
        and any(fnmatchcase(resource, pattern) for pattern in resources(statement))
        for statement in granted
    )
