"""Least privilege, checked on the CloudFormation the SAM transform produces (for every driver and auth).

Every role grants each action on the narrowest resource there is: the table and its indexes, the
bucket, the delay queue, the functions of this stack, its state machine. ``"*"`` is allowed only
for actions that have no resource-level permissions at all, and only the managed policies listed
below (with the reason) may be attached.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

from tests.template.cfn import (
    ACCOUNT,
    FUNCTION_ARN_PREFIX,
    PARTITION,
    REGION,
    ROOT,
    STACK,
    Resolver,
    actions,
    allows,
    managed_policies,
    resources,
    role_of,
    statements,
)
from tests.template.stacks import DEPLOYMENTS, phase_functions, stack

# Actions that AWS only grants on "*" (they have no resource types), with what needs them.
STAR_ACTIONS = {
    "xray:PutTraceSegments": "Tracing: Active (X-Ray has no resource-level permissions)",
    "xray:PutTelemetryRecords": "Tracing: Active (X-Ray has no resource-level permissions)",
    "xray:GetSamplingRules": "X-Ray SDK sampling (no resource-level permissions)",
    "xray:GetSamplingTargets": "X-Ray SDK sampling (no resource-level permissions)",
}
# AWS managed policies that SAM attaches to the roles it generates, with the reason they are accepted.
MANAGED_POLICIES = {
    "service-role/AWSLambdaBasicExecutionRole": "logs:CreateLogGroup/CreateLogStream/PutLogEvents: writing the "
    "function's own logs; SAM attaches it to every role it generates",
    "AWSXrayWriteOnlyAccess": "the X-Ray actions listed in STAR_ACTIONS, for Tracing: Active",
}

# boto3 methods the storage calls, and the IAM actions each one needs on the table.
DYNAMODB_ACTIONS = {
    "get_item": ["dynamodb:GetItem"],
    "put_item": ["dynamodb:PutItem"],
    "update_item": ["dynamodb:UpdateItem"],
    "delete_item": ["dynamodb:DeleteItem"],
    "query": ["dynamodb:Query"],
    "scan": ["dynamodb:Scan"],
    "batch_write_item": ["dynamodb:BatchWriteItem"],
    "batch_get_item": ["dynamodb:BatchGetItem"],
    "transact_get_items": ["dynamodb:GetItem"],
    "transact_write_items": [
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:ConditionCheckItem",
    ],
}
S3_ACTIONS = {
    "get_object": "s3:GetObject",
    "head_object": "s3:GetObject",
    "put_object": "s3:PutObject",
    "delete_object": "s3:DeleteObject",
}
STORAGE = ROOT / "layers" / "cairn" / "cairn" / "aws"


def calls(pattern: str, files: list[Path]) -> set[str]:
    return {name for path in files for name in re.findall(pattern, path.read_text(encoding="utf-8"))}


def dynamodb_calls() -> set[str]:
    """The DynamoDB client methods the storage adapter calls (create_table is for tests and local runs)."""
    files = [path for path in STORAGE.glob("dynamodb*.py") if path.name != "dynamodb_schema.py"]
    found = calls(r"\bclient\.([a-z_]+)\b", files)
    assert {"update_item", "query"} <= found, "the storage adapter's calls were not found"
    return found


def s3_calls() -> set[str]:
    """The S3 client methods the large-state store calls."""
    found = calls(r"_client\(\)\.([a-z_]+)\(", [STORAGE / "payloads.py"])
    assert {"put_object", "get_object"} <= found, "the large-state store's calls were not found"
    return found


def roles(resolver: Resolver) -> Iterator[str]:
    yield from resolver.of_type("AWS::IAM::Role")


def service(action: str) -> str:
    return action.split(":", 1)[0].lower()


class Arns:
    """The ARNs of one deployment that the roles may name."""

    def __init__(self, resolver: Resolver) -> None:
        self.table = resolver.arn("CheckpointTable")
        self.indexes = f"{self.table}/index/*"
        self.bucket = resolver.arn("StateBucket")
        self.objects = f"{self.bucket}/*"
        self.delay_queue = resolver.arn("DelayQueue")
        self.dead_letter_queue = resolver.arn("DeadLetterQueue")
        self.scheduler = resolver.arn("SchedulerFunction")
        self.functions = [resolver.arn(logical_id) for logical_id in phase_functions(resolver).values()]
        self.prefix = f"{FUNCTION_ARN_PREFIX}{STACK}-"
        self.state_machine = resolver.arn("PipelineStateMachine")


def allowed_resources(arns: Arns, action: str) -> list[str]:
    """Where a function of this stack may use ``action`` at most."""
    kind = service(action)
    if kind == "dynamodb":
        return [arns.table, arns.indexes]
    if kind == "s3":
        return [arns.bucket, arns.objects]
    if kind == "sqs":
        return [arns.delay_queue]
    if kind == "lambda":
        return [f"{arns.prefix}*"]
    if kind == "states":
        return [arns.state_machine]
    if kind == "logs":
        return [f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/{STACK}-*"]
    if action in STAR_ACTIONS:
        return ["*"]
    return []


# -- everywhere


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_no_role_grants_star_but_for_actions_without_resources(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    offending = [
        (role_id, action)
        for role_id in roles(resolver)
        for statement in statements(resolver, role_id)
        if statement["Effect"] == "Allow" and "*" in resources(statement)
        for action in actions(statement)
        if action not in STAR_ACTIONS
    ]
    assert offending == []


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_only_the_listed_managed_policies_are_attached(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    attached = {name for role_id in roles(resolver) for name in managed_policies(resolver, role_id)}
    assert attached <= set(MANAGED_POLICIES)


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_every_function_role_stays_inside_the_stack(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    arns = Arns(resolver)
    function_roles = {role_of(resolver, function_id) for function_id in resolver.of_type("AWS::Lambda::Function")}
    outside = [
        (role_id, action, resource)
        for role_id in function_roles
        for statement in statements(resolver, role_id)
        for action in actions(statement)
        for resource in resources(statement)
        if not any(fnmatchcase(resource, allowed) for allowed in allowed_resources(arns, action))
    ]
    assert outside == []


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_no_function_may_change_the_bucket_itself(overrides: dict[str, str]) -> None:
    """Object reads and writes, and listing (so a missing object is a 404): no ACL, policy or lifecycle changes."""
    resolver = stack(**overrides)
    object_actions = {*S3_ACTIONS.values(), "s3:ListBucket"}
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        used = {
            action
            for statement in statements(resolver, role_of(resolver, function_id))
            for action in actions(statement)
            if service(action) == "s3"
        }
        assert used <= object_actions, function_id


# -- phase functions


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_phase_roles_touch_only_the_table_the_bucket_the_queue_and_the_stack_functions(
    overrides: dict[str, str],
) -> None:
    resolver = stack(**overrides)
    arns = Arns(resolver)
    exact = {
        "dynamodb": {arns.table, arns.indexes},
        "s3": {arns.bucket, arns.objects},
        "lambda": {f"{arns.prefix}*", arns.scheduler},
        "sqs": {arns.delay_queue},
    }
    for function_id in phase_functions(resolver).values():
        for statement in statements(resolver, role_of(resolver, function_id)):
            assert statement["Effect"] == "Allow"
            for action in actions(statement):
                assert service(action) in exact, (function_id, action)
                assert set(resources(statement)) <= exact[service(action)], (function_id, action)


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_phase_roles_cannot_reach_another_stack(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    other_table = "arn:aws:dynamodb:us-east-1:123456789012:table/other-jobs"
    for function_id in phase_functions(resolver).values():
        granted = statements(resolver, role_of(resolver, function_id))
        assert not allows(granted, "dynamodb:UpdateItem", other_table)
        assert not allows(granted, "s3:GetObject", "arn:aws:s3:::other-bucket/key")
        assert not allows(granted, "lambda:InvokeFunction", f"{FUNCTION_ARN_PREFIX}other-fetch")
        assert not allows(granted, "sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:other-queue")
        assert not allows(granted, "states:StartExecution", "arn:aws:states:us-east-1:123456789012:stateMachine:x")


# -- what the code needs is granted


def needed_by_storage(arns: Arns) -> list[tuple[str, str]]:
    needed = [(action, arns.table) for method in sorted(dynamodb_calls()) for action in DYNAMODB_ACTIONS[method]]
    needed += [("dynamodb:Query", f"{arns.table}/index/{index}") for index in ("ByStatus", "ByOwner", "Stalled")]
    needed += [(S3_ACTIONS[method], f"{arns.objects[:-1]}state/job-1.json.gz") for method in sorted(s3_calls())]
    return needed


def test_every_storage_call_has_a_known_iam_action() -> None:
    assert dynamodb_calls() <= set(DYNAMODB_ACTIONS)
    assert s3_calls() <= set(S3_ACTIONS)


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_every_function_may_make_the_storage_calls(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    arns = Arns(resolver)
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        granted = statements(resolver, role_of(resolver, function_id))
        missing = [need for need in needed_by_storage(arns) if not allows(granted, *need)]
        assert missing == [], function_id


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_every_function_may_invoke_each_phase_and_the_scheduler_and_queue_delays(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    arns = Arns(resolver)
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        granted = statements(resolver, role_of(resolver, function_id))
        for target in [*arns.functions, arns.scheduler]:
            assert allows(granted, "lambda:InvokeFunction", target), (function_id, target)
        assert allows(granted, "sqs:SendMessage", arns.delay_queue), function_id
        assert not allows(granted, "sqs:SendMessage", arns.dead_letter_queue), function_id


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_only_the_stepfunctions_driver_may_start_executions(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    arns = Arns(resolver)
    for function_id in ("ApiFunction", "SchedulerFunction"):
        granted = statements(resolver, role_of(resolver, function_id))
        starts = allows(granted, "states:StartExecution", arns.state_machine)
        assert starts is (overrides["Driver"] == "stepfunctions"), function_id


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_the_scheduler_polls_the_delay_queue_only(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    arns = Arns(resolver)
    granted = statements(resolver, role_of(resolver, "SchedulerFunction"))
    for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"):
        assert allows(granted, action, arns.delay_queue), action
        assert not allows(granted, action, arns.dead_letter_queue), action
    assert allows(granted, "logs:PutLogEvents", f"{resolver.arn('SchedulerLogGroup')[:-1]}log-stream:x")
    assert not allows(granted, "logs:PutLogEvents", f"{resolver.arn('FetchLogGroup')[:-1]}log-stream:x")


def test_the_state_machine_invokes_the_stack_functions_and_nothing_else() -> None:
    resolver = stack(Driver="stepfunctions")
    arns = Arns(resolver)
    role_id = resolver.resources["PipelineStateMachine"]["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    granted: list[dict[str, Any]] = statements(resolver, role_id)
    for target in [*arns.functions, arns.scheduler]:
        assert allows(granted, "lambda:InvokeFunction", target), target
    used = {service(action) for statement in granted for action in actions(statement)}
    assert used <= {"lambda", "xray"}
