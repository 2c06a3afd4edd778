"""Least privilege, checked on the CloudFormation the SAM transform produces (for every driver and auth).

Every role grants each action on the narrowest resource there is: the table and its indexes, the
bucket, the delay queue, the functions of this stack, its state machine. ``"*"`` is allowed only
for actions that have no resource-level permissions at all, and only the managed policies listed
below (with the reason) may be attached.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore import xform_name

from cairn.core import naming
from pipelines import PIPELINES
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
from tests.template.stacks import DEPLOYMENTS, PhaseKey, phase_functions, registered_phases, stack

WITH_DOCUMENTS = {"Driver": "direct", "ApiAuth": "IAM", "DocumentsBucket": "cairn-documents"}

# Actions that AWS only grants on "*" (they have no resource types), with what needs them.
STAR_ACTIONS = {
    "xray:PutTraceSegments": "Tracing: Active (X-Ray has no resource-level permissions)",
    "xray:PutTelemetryRecords": "Tracing: Active (X-Ray has no resource-level permissions)",
    "xray:GetSamplingRules": "X-Ray SDK sampling (no resource-level permissions)",
    "xray:GetSamplingTargets": "X-Ray SDK sampling (no resource-level permissions)",
    **{
        f"logs:{action}": "the state machine's logging (Step Functions' log delivery has no resource-level permissions)"
        for action in (
            "CreateLogDelivery",
            "GetLogDelivery",
            "UpdateLogDelivery",
            "DeleteLogDelivery",
            "ListLogDeliveries",
            "PutResourcePolicy",
            "DescribeResourcePolicies",
            "DescribeLogGroups",
        )
    },
}
# AWS managed policies that SAM attaches to the roles it generates, with the reason they are accepted.
MANAGED_POLICIES = {
    "service-role/AWSLambdaBasicExecutionRole": "logs:CreateLogGroup/CreateLogStream/PutLogEvents: writing the "
    "function's own logs; SAM attaches it to every role it generates",
    "AWSXrayWriteOnlyAccess": "the X-Ray actions listed in STAR_ACTIONS, for Tracing: Active",
}

# The code that calls AWS: the layer's adapters and the bundle's functions. Module-level calls of
# cairn/aws/dynamodb/schema.py (create_table, the TTL setting) are for tests and local runs only: the
# deployed table is the template's.
CODE = [ROOT / "layers" / "cairn" / "cairn" / "aws", ROOT / "functions"]
NOT_DEPLOYED = {Path("layers/cairn/cairn/aws/dynamodb/schema.py")}
# The clients the code builds, and their IAM prefixes.
SERVICES = {"dynamodb": "dynamodb", "s3": "s3", "sqs": "sqs", "lambda": "lambda", "stepfunctions": "states"}
# Operations whose IAM actions are not "<prefix>:<Operation>".
IAM_ACTIONS_OF_OPERATION = {
    "s3:HeadObject": ["s3:GetObject"],
    "s3:CopyObject": ["s3:GetObject", "s3:PutObject"],
    "lambda:Invoke": ["lambda:InvokeFunction"],
    "dynamodb:TransactGetItems": ["dynamodb:GetItem"],
    # IAM authorises each action a transaction holds; cairn's one transaction (a map item's finish,
    # MapItems._put_counted) is a Put and an Update, never a Delete or a ConditionCheck.
    "dynamodb:TransactWriteItems": ["dynamodb:PutItem", "dynamodb:UpdateItem"],
}


@dataclass(frozen=True)
class Call:
    """One AWS operation the code calls, and where."""

    operation: str  # "<iam prefix>:<Operation>"
    path: Path
    function: str  # the qualified name of the enclosing function ("" at module level)

    @property
    def iam_actions(self) -> list[str]:
        return IAM_ACTIONS_OF_OPERATION.get(self.operation, [self.operation])


@functools.cache
def boto3_methods() -> dict[str, list[str]]:
    """Each client method name of the services, with the operations ("<prefix>:<Operation>") it may be."""
    session = botocore.session.get_session()
    methods: dict[str, list[str]] = {}
    for service, prefix in SERVICES.items():
        for operation in session.get_service_model(service).operation_names:
            methods.setdefault(xform_name(operation), []).append(f"{prefix}:{operation}")
    return methods


class _CallFinder(ast.NodeVisitor):
    """Every attribute named like a client method (``client.get_item(...)``, ``self._call(client.query, ...)``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.scope: list[str] = []
        self.calls: list[tuple[str, str]] = []

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in boto3_methods():
            self.calls.append((node.attr, ".".join(self.scope)))
        self.generic_visit(node)


@functools.cache
def code_calls() -> tuple[Call, ...]:
    """The AWS operations the deployed code calls, found in its syntax tree."""
    found: list[Call] = []
    for folder in CODE:
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(ROOT)
            finder = _CallFinder(relative)
            finder.visit(ast.parse(path.read_text(encoding="utf-8")))
            for method, function in finder.calls:
                if relative in NOT_DEPLOYED:
                    continue
                operations = boto3_methods()[method]
                assert len(operations) == 1, f"{relative}: {method} could be any of {operations}"
                found.append(Call(operations[0], relative, function))
    assert {call.operation for call in found} >= {"dynamodb:UpdateItem", "s3:PutObject", "lambda:Invoke"}
    return tuple(found)


# What each part of the code that calls AWS is, by module and enclosing function.
UNITS: dict[str, Callable[[Call], bool]] = {
    "store": lambda call: call.path.parent.name == "dynamodb" or call.path.parts[-2:] == ("aws", "payloads.py"),
    "invoke": lambda call: call.path.stem == "lambda_scheduler" and call.function == "invoke_phase",
    "queue": lambda call: call.path.stem == "lambda_scheduler" and call.function == "LambdaScheduler.queue",
    "start": lambda call: call.path.stem == "stepfunctions_scheduler",
    "bulk": lambda call: call.path.stem == "bulk_worker" and call.function == "send_bulk",
}


def pipeline_packages() -> dict[str, str]:
    """The registered pipelines by the package under functions/ their phases' code is in."""
    return {
        pipeline.get_phase(pipeline.initial_phase).run.__module__.split(".")[0]: pipeline.name for pipeline in PIPELINES
    }


def unit_of(call: Call) -> str:
    """A unit of the library (UNITS), or ``pipeline:<name>`` for the code of a registered pipeline's package."""
    found = [name for name, test in UNITS.items() if test(call)]
    parts = call.path.parts
    if not found and len(parts) > 2 and parts[0] == "functions" and parts[1] in pipeline_packages():
        found = [f"pipeline:{pipeline_packages()[parts[1]]}"]
    (unit,) = found or [f"unknown: {call}"]
    return unit


def actions_of(unit: str) -> set[str]:
    """The IAM actions the calls of one unit of code need."""
    return {action for call in code_calls() if unit_of(call) == unit for action in call.iam_actions}


def units_run_by(function_id: str, driver: str) -> set[str]:
    """What each function's library code runs: the store always; starts, advances and delays as its role needs.

    The API starts and retries (direct: an invoke; stepfunctions: an execution) and never queues a delay; it and
    the scheduler queue a bulk's chunks (``bulk``).
    A phase function invokes the next phase and queues retries under direct; under stepfunctions its
    response carries the advance, and it starts an execution only for a job its owner's fair share wakes
    (a job of another execution). The scheduler invokes and queues under both
    drivers (crash reports and delayed advances still in flight when a stack changes driver) and
    starts executions under stepfunctions (the sweep). What a phase's own code calls, its phase
    declares (``declared``).
    """
    if function_id == "ApiFunction":
        return {"store", "bulk", "invoke" if driver == "direct" else "start"}
    if function_id == "SchedulerFunction":
        return {"store", "invoke", "queue", "bulk"} | ({"start"} if driver == "stepfunctions" else set())
    return {"store"} | ({"invoke", "queue"} if driver == "direct" else {"start"})


def declared(resolver: Resolver, key: PhaseKey) -> set[tuple[str, str]]:
    """Every (action, resource) the phase's own IAM statements allow in this deployment."""
    _, phase = registered_phases()[key]
    return {
        (action, resource)
        for statement in resolver.resolve([dict(statement) for statement in phase.function.statements])
        if statement["Effect"] == "Allow"
        for action in actions(statement)
        for resource in resources(statement)
    }


def roles(resolver: Resolver) -> Iterator[str]:
    yield from resolver.of_type("AWS::IAM::Role")


def service(action: str) -> str:
    return action.split(":", 1)[0].lower()


class Arns:
    """The ARNs of one deployment that the roles may name."""

    def __init__(self, resolver: Resolver) -> None:
        self.table = resolver.arn("CheckpointTable")
        self.indexes = f"{self.table}/index/*"
        self.stream = resolver.get_att("CheckpointTable", "StreamArn")
        self.bucket = resolver.arn("StateBucket")
        self.objects = f"{self.bucket}/*"
        self.delay_queue = resolver.arn("DelayQueue")
        self.dead_letter_queue = resolver.arn("DeadLetterQueue")
        self.scheduler_dead_letter_queue = resolver.arn("SchedulerDeadLetterQueue")
        self.scheduler = resolver.arn("SchedulerFunction") + ":live"  # everything invokes its live alias
        # phase functions are invoked through their live alias (CAIRN_FUNCTION_ALIAS), never unqualified
        self.functions = [f"{resolver.arn(logical_id)}:live" for logical_id in phase_functions(resolver).values()]
        self.state_machine = resolver.arn("PipelineStateMachine")
        bucket = resolver.params.get("DocumentsBucket", "")  # what document-intake's fetch reads
        self.documents = [f"arn:{PARTITION}:s3:::{bucket}/*"] if bucket else []


def allowed_resources(arns: Arns, action: str) -> list[str]:
    """Where a function of this stack may use ``action`` at most."""
    kind = service(action)
    if kind == "dynamodb":
        return [arns.table, arns.indexes, arns.stream]
    if kind == "s3":
        return [arns.bucket, arns.objects, *arns.documents]
    if kind == "sqs":
        return [arns.delay_queue, arns.scheduler_dead_letter_queue]
    if kind == "lambda":
        return [*arns.functions, arns.scheduler]
    if kind == "states":
        return [arns.state_machine]
    if kind == "logs":
        return [f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/{STACK}-*"]
    if action in STAR_ACTIONS:
        return ["*"]
    return []


def grants(resolver: Resolver, function_id: str) -> set[tuple[str, str]]:
    """Every (action, resource) the function's role allows, but for its logs and X-Ray."""
    return {
        (action, resource)
        for statement in statements(resolver, role_of(resolver, function_id))
        if statement["Effect"] == "Allow"
        for action in actions(statement)
        if service(action) not in ("logs", "xray")
        for resource in resources(statement)
    }


def needs(arns: Arns, units: set[str]) -> set[tuple[str, str]]:
    """Every (action, resource) the code of ``units`` calls, on the resource it calls it on."""
    where = {
        "store": lambda action: [arns.table, arns.indexes] if service(action) == "dynamodb" else [arns.objects],
        "invoke": lambda action: [*arns.functions, arns.scheduler],
        "queue": lambda action: [arns.delay_queue],
        "bulk": lambda action: [arns.delay_queue],
        "start": lambda action: [arns.state_machine],
    }
    return {(action, resource) for unit in units for action in actions_of(unit) for resource in where[unit](action)}


# Grants no call of the code makes, each with what needs it.
NOT_CALLS = {
    "StateBucketListing": "s3:ListBucket, so a missing state object is NoSuchKey (which the store expects), not "
    "AccessDenied",
    "DelayQueuePolling": "the scheduler's SQS event source polls the delay queue with its role",
    "OnFailureDestination": "Lambda sends a phase function's failure records to the scheduler with the phase "
    "function's role (SAM adds the grant for EventInvokeConfig)",
    "OwnFailures": "Lambda sends the scheduler's own failure records to its dead-letter queue with its role",
    "TableStream": "the scheduler's DynamoDB event source reads the table's stream with its role",
}
STREAM_READS = ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams")


def not_calls(arns: Arns, function_id: str) -> set[tuple[str, str]]:
    """The grants of ``NOT_CALLS`` the function has."""
    needed = {("s3:ListBucket", arns.bucket)}
    if function_id == "SchedulerFunction":
        polling = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes")
        needed |= {(action, arns.delay_queue) for action in polling}
        needed.add(("sqs:SendMessage", arns.scheduler_dead_letter_queue))
        needed |= {(action, arns.stream) for action in STREAM_READS}
    elif function_id != "ApiFunction":
        needed.add(("lambda:InvokeFunction", arns.scheduler))
    return needed


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


@pytest.mark.parametrize("overrides", [*DEPLOYMENTS, pytest.param(WITH_DOCUMENTS, id="documents")])
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
    object_actions = {"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket"}
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        used = {
            action
            for statement in statements(resolver, role_of(resolver, function_id))
            for action in actions(statement)
            if service(action) == "s3"
        }
        assert used <= object_actions, function_id


@pytest.mark.parametrize("overrides", [*DEPLOYMENTS, pytest.param(WITH_DOCUMENTS, id="documents")])
def test_no_role_can_reach_another_stack(overrides: dict[str, str]) -> None:
    """Not even one whose name starts like this stack's (``<stack>-prod``): every grant names its resource."""
    resolver = stack(**overrides)
    arns = Arns(resolver)
    sibling = f"{STACK}-prod"
    role_ids = [role_of(resolver, function_id) for function_id in resolver.of_type("AWS::Lambda::Function")]
    if resolver.exists("PipelineStateMachine"):
        role_ids.append(resolver.resources["PipelineStateMachine"]["Properties"]["RoleArn"]["Fn::GetAtt"][0])
    suffixes = [naming.function_suffix(*key) for key in registered_phases()]
    for role_id in role_ids:
        granted = statements(resolver, role_id)
        for name in [*suffixes, "scheduler", f"prod-{suffixes[0]}"]:
            assert not allows(granted, "lambda:InvokeFunction", f"{FUNCTION_ARN_PREFIX}{sibling}-{name}"), role_id
        assert not allows(granted, "lambda:InvokeFunction", f"{FUNCTION_ARN_PREFIX}{STACK}-api"), role_id
        assert not allows(granted, "dynamodb:UpdateItem", f"{arns.table.rsplit('/', 1)[0]}/{sibling}"), role_id
        assert not allows(granted, "s3:GetObject", "arn:aws:s3:::other-bucket/key"), role_id
        assert not allows(granted, "sqs:SendMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:{sibling}-queue"), role_id
        assert not allows(granted, "states:StartExecution", f"{arns.state_machine}-other"), role_id


# -- each function is granted exactly the calls its code makes


def test_every_aws_call_of_the_code_is_a_known_unit_with_known_iam_actions() -> None:
    unknown = [call for call in code_calls() if unit_of(call).startswith("unknown")]
    assert unknown == []
    for call in code_calls():
        for action in call.iam_actions:
            assert service(action) in SERVICES.values(), call


def test_the_store_calls_no_scan_and_deletes_no_item() -> None:
    """What the table grants follow (and what the lead is told): today's calls of the store."""
    store = actions_of("store")
    assert "dynamodb:Scan" not in store
    assert {"dynamodb:UpdateItem", "dynamodb:Query", "s3:PutObject", "s3:GetObject"} <= store


@pytest.mark.parametrize("overrides", [*DEPLOYMENTS, pytest.param(WITH_DOCUMENTS, id="documents")])
def test_every_function_is_granted_exactly_what_its_code_calls(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    arns = Arns(resolver)
    driver = resolver.params["Driver"]
    phase_of = {function_id: key for key, function_id in phase_functions(resolver).items()}
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        expected = needs(arns, units_run_by(function_id, driver)) | not_calls(arns, function_id)
        if function_id in phase_of:
            expected |= declared(resolver, phase_of[function_id])
        granted = grants(resolver, function_id)
        assert sorted(granted - expected) == [], f"{function_id} is granted what its code never calls"
        assert sorted(expected - granted) == [], f"{function_id} is not granted what its code calls"


def test_each_phase_declares_only_what_its_pipeline_code_calls_and_together_they_declare_all_of_it() -> None:
    """A phase's statements grant calls of its own pipeline's code; every such call is granted to one of its phases."""
    resolver = stack(**WITH_DOCUMENTS)
    for pipeline in PIPELINES:
        calls = actions_of(f"pipeline:{pipeline.name}")
        granted = {action for phase in pipeline.phase_names for action, _ in declared(resolver, (pipeline.name, phase))}
        assert granted <= calls, f"{pipeline.name}: phases declare actions its code never calls"
        assert calls <= granted, f"{pipeline.name}: its code calls actions none of its phases declares"


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_the_scheduler_polls_the_delay_queue_only(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    arns = Arns(resolver)
    granted = statements(resolver, role_of(resolver, "SchedulerFunction"))
    for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"):
        assert allows(granted, action, arns.delay_queue), action
        assert not allows(granted, action, arns.dead_letter_queue), action
    assert allows(granted, "logs:PutLogEvents", f"{resolver.arn('SchedulerLogGroup')[:-1]}log-stream:x")
    for key in registered_phases():
        group = resolver.arn(naming.resource_id(*key, "LogGroup"))
        assert not allows(granted, "logs:PutLogEvents", f"{group[:-1]}log-stream:x"), key


def test_the_state_machine_invokes_the_stack_functions_and_nothing_else() -> None:
    resolver = stack(Driver="stepfunctions")
    arns = Arns(resolver)
    role_id = resolver.resources["PipelineStateMachine"]["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    granted: list[dict[str, Any]] = statements(resolver, role_id)
    invoked = {
        resource
        for statement in granted
        if "lambda:InvokeFunction" in actions(statement)
        for resource in resources(statement)
    }
    assert invoked == {*arns.functions, arns.scheduler}
    used = {service(action) for statement in granted for action in actions(statement)}
    assert used <= {"lambda", "xray", "logs", "states"}
    # its own executions only: the hand-off starts one of this machine, a distributed map runs children of it
    machine = resolver.arn("PipelineStateMachine")
    executions = machine.replace(":stateMachine:", ":execution:")
    assert allows(granted, "states:StartExecution", machine)
    assert not allows(granted, "states:StartExecution", machine + "-other")
    assert allows(granted, "states:DescribeExecution", f"{executions}/map-run:child")
    assert not allows(granted, "states:DescribeExecution", f"{executions}-other/map-run:child")
    states = {action for statement in granted for action in actions(statement) if service(action) == "states"}
    assert states == {"states:StartExecution", "states:DescribeExecution", "states:StopExecution"}
    logging = {action for statement in granted for action in actions(statement) if service(action) == "logs"}
    assert logging <= set(STAR_ACTIONS), "the state machine's role writes no logs itself: it sets up delivery"


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_every_function_writes_its_own_log_group_and_no_other(overrides: dict[str, str]) -> None:
    """No role writes logs on "*" (as the roles SAM makes would): each function its own group's streams only."""
    resolver = stack(**overrides)
    groups = {
        "ApiFunction": "ApiLogGroup",
        "SchedulerFunction": "SchedulerLogGroup",
        **{naming.resource_id(*key, "Function"): naming.resource_id(*key, "LogGroup") for key in registered_phases()},
    }
    for function_id, own in groups.items():
        granted = statements(resolver, role_of(resolver, function_id))
        for group in groups.values():
            stream = f"{resolver.arn(group)[:-1]}log-stream:x"
            assert allows(granted, "logs:PutLogEvents", stream) == (group == own), (function_id, group)
        writes = [statement for statement in granted if "logs:PutLogEvents" in actions(statement)]
        assert all("*" not in resources(statement) for statement in writes), function_id
        assert not allows(granted, "logs:CreateLogGroup", "*"), function_id
        attached = resolver.properties(role_of(resolver, function_id)).get("ManagedPolicyArns", [])
        assert not [arn for arn in attached if ":aws:policy/" in str(arn)], f"{function_id}: an AWS managed policy"
