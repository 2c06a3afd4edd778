"""The template resources that follow from the registry: each phase's function and log group, each
pipeline's alarms (errors, throttles, undelivered crash reports), the policy that lets the stack invoke
its functions, and the stack's CloudWatch dashboard (:mod:`.dashboard`).

Everything here is plain data in CloudFormation's long form (``{"Ref": "X"}``); :mod:`.cfnyaml`
writes it with the short tags. The resources refer to hand-written parts of the template by the
logical ids below.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...core import naming
from ...core.pipeline import Phase, Pipeline
from ...core.registry import PipelineRegistry
from ...core.settings import PHASE, PIPELINE
from . import dashboard
from .checkov_skips import FUNCTION_CHECKS, LOG_GROUP_CHECKS, skipped
from .errors import TemplateError

# Hand-written resources and conditions of template.yaml the generated ones refer to.
SCHEDULER_ALIAS = "SchedulerFunctionAliaslive"
"""The scheduler's ``live`` alias as SAM names it: what a phase function's crash report goes to."""
JOB_STORE_POLICY = "JobStorePolicy"
"""The table and the state bucket, as every function of the stack uses them."""
DELAYED_RETRIES_POLICY = "DelayedRetriesPolicy"
"""Sending a retry's delay to the queue (phase functions under the direct driver)."""
START_EXECUTIONS_POLICY = "StartExecutionsPolicy"
"""Starting an execution for a job woken by its owner's fair share (phase functions under stepfunctions)."""
USE_STEP_FUNCTIONS = "UseStepFunctions"
NOTIFY_ALARMS = "NotifyAlarms"
HAS_ALARM_EMAIL = "HasAlarmEmail"
HAS_ALARM_TOPIC_ARN = "HasAlarmTopicArn"
ALARM_TOPIC = "AlarmTopic"
ALARM_TOPIC_ARN = "AlarmTopicArn"
HAS_PHASE_RESERVED_CONCURRENCY = "HasPhaseReservedConcurrency"
PHASE_RESERVED_CONCURRENCY = "PhaseReservedConcurrency"
"""The stack-wide reserved concurrency of a phase function that declares none (empty: unreserved)."""
DEPLOY_GRADUALLY = "DeployGradually"
GRADUAL_DEPLOYMENT = "GradualDeployment"
"""The CodeDeploy preference a deploy shifts each phase function's alias with (``none``: at once)."""
FAILURE_RATE_ALARM = "JobFailureRateAlarm"
"""The stack's alarm on the share of ended jobs that failed: every gradual deploy rolls back on it too."""
FUNCTION_ALIAS = "live"
"""The alias each phase function is published under and invoked through (``CAIRN_FUNCTION_ALIAS``)."""

# Generated resources that are not a phase's.
INVOKE_POLICY = "InvokeFunctionsPolicy"
"""lambda:InvokeFunction on every phase function and the scheduler, by exact ARN."""
SCHEDULER_NAME = "scheduler"
"""The scheduler function's name after ``<stack>-``."""

CODE_URI = "functions/"
HANDLER = "phases.handler"
LOG_RETENTION_DAYS = "LogRetentionDays"
"""The stack's parameter: how long every log group keeps its events."""
HAS_LOGS_KEY = "HasLogsKey"
LOGS_KMS_KEY = "LogsKmsKeyArn"
"""The stack's optional customer managed key for its log groups (condition, parameter)."""
MAX_ALARM_METRICS = 10
"""CloudWatch's limit on the metrics one alarm's math expression may read."""
ALARM_PERIOD = 300

NO_VALUE = {"Ref": "AWS::NoValue"}


def stack_name(suffix: str) -> dict[str, str]:
    """``${AWS::StackName}-<suffix>`` (a deployed name of the stack)."""
    return {"Fn::Sub": f"${{AWS::StackName}}-{suffix}"}


def function_arn(suffix: str, alias: str | None = None) -> dict[str, str]:
    """The ARN of the stack's function ``<stack>-<suffix>`` (of its ``alias``), built from its name, not a reference."""
    qualifier = f":{alias}" if alias else ""
    return {
        "Fn::Sub": f"arn:${{AWS::Partition}}:lambda:${{AWS::Region}}:${{AWS::AccountId}}:function:"
        f"${{AWS::StackName}}-{suffix}{qualifier}"
    }


def unless_step_functions(value: Any) -> dict[str, Any]:
    """``value`` under the direct driver, nothing under stepfunctions."""
    return {"Fn::If": [USE_STEP_FUNCTIONS, NO_VALUE, value]}


def only_step_functions(value: Any) -> dict[str, Any]:
    """``value`` under the stepfunctions driver, nothing under direct."""
    return {"Fn::If": [USE_STEP_FUNCTIONS, value, NO_VALUE]}


def phases(registry: PipelineRegistry) -> Iterator[tuple[Pipeline[Any], Phase]]:
    """Every phase of every pipeline, pipelines in registry order and phases in their order."""
    for pipeline in registry:
        for name in pipeline.phase_names:
            yield pipeline, pipeline.get_phase(name)


def environment(pipeline: Pipeline[Any], phase: Phase) -> dict[str, Any]:
    """A phase function's own variables: the phase it runs, then what the phase declares."""
    return {PIPELINE: pipeline.name, PHASE: phase.name, **phase.function.environment}


LAMBDA_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
"""Who may take a function's role: Lambda."""
TRACING = {
    "Sid": "Tracing",
    "Effect": "Allow",
    "Action": ["xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"],
    "Resource": "*",  # X-Ray takes no resource-level permissions for these actions
}


def managed_policies() -> list[Any]:
    """A phase function's stack policies: the job store, invokes and delays under direct, executions for the jobs
    a phase wakes under stepfunctions."""
    return [
        {"Ref": JOB_STORE_POLICY},
        unless_step_functions({"Ref": DELAYED_RETRIES_POLICY}),
        unless_step_functions({"Ref": INVOKE_POLICY}),
        only_step_functions({"Ref": START_EXECUTIONS_POLICY}),
    ]


def own_statements(pipeline: Pipeline[Any], phase: Phase) -> list[Any]:
    """A phase function's own statements: its log group only, tracing, its crash reports to the scheduler's alias
    (Lambda delivers an on-failure record with the function's role), then what the phase declares (a statement
    that is an ``Fn::If`` stays one: no condition can leave the policy without statements)."""
    log_group_id = naming.resource_id(pipeline.name, phase.name, "LogGroup")
    return [
        {
            "Sid": "OwnLogs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": {"Fn::GetAtt": [log_group_id, "Arn"]},
        },
        TRACING,
        {
            "Sid": "CrashReports",
            "Effect": "Allow",
            "Action": "lambda:InvokeFunction",
            "Resource": {"Ref": SCHEDULER_ALIAS},
        },
        *(dict(statement) for statement in phase.function.statements),
    ]


def role(pipeline: Pipeline[Any], phase: Phase) -> dict[str, Any]:
    """The phase function's own role: it writes its own log group only (not every group, as SAM's would)."""
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": LAMBDA_TRUST,
            "ManagedPolicyArns": managed_policies(),
            "Policies": [
                {
                    "PolicyName": "phase",
                    "PolicyDocument": {"Version": "2012-10-17", "Statement": own_statements(pipeline, phase)},
                }
            ],
        },
    }


def reserved_concurrency(phase: Phase) -> Any:
    """The phase's own reserved concurrency, else the stack's ``PhaseReservedConcurrency`` (empty: none)."""
    if phase.function.reserved_concurrency is not None:
        return phase.function.reserved_concurrency
    return {"Fn::If": [HAS_PHASE_RESERVED_CONCURRENCY, {"Ref": PHASE_RESERVED_CONCURRENCY}, NO_VALUE]}


def deployment_preference(pipeline: Pipeline[Any]) -> dict[str, Any]:
    """With ``GradualDeployment``, CodeDeploy shifts the alias and rolls back on the pipeline's errors alarms
    and on the stack's job failure rate (a phase that fails every job it runs raises no Lambda error)."""
    preference = {
        "Type": {"Ref": GRADUAL_DEPLOYMENT},
        "Alarms": [{"Ref": alarm_id} for alarm_id in [*alarm_ids(pipeline, ERRORS), FAILURE_RATE_ALARM]],
    }
    return {"Fn::If": [DEPLOY_GRADUALLY, preference, NO_VALUE]}


def function(pipeline: Pipeline[Any], phase: Phase) -> dict[str, Any]:
    """The ``AWS::Serverless::Function`` that runs ``phase`` of ``pipeline``, published as its ``live`` alias."""
    return {
        "Type": "AWS::Serverless::Function",
        "Metadata": skipped(*FUNCTION_CHECKS),
        "Properties": {
            "FunctionName": stack_name(naming.function_suffix(pipeline.name, phase.name)),
            "Description": f"Phase {phase.name} of pipeline {pipeline.name}.",
            "CodeUri": CODE_URI,
            "Handler": HANDLER,
            "RecursiveLoop": "Allow",
            "Timeout": phase.function.timeout,
            "MemorySize": phase.function.memory,
            "ReservedConcurrentExecutions": reserved_concurrency(phase),
            "AutoPublishAlias": FUNCTION_ALIAS,
            "DeploymentPreference": deployment_preference(pipeline),
            "LoggingConfig": {"LogGroup": {"Ref": naming.resource_id(pipeline.name, phase.name, "LogGroup")}},
            "EventInvokeConfig": {
                "MaximumRetryAttempts": 0,
                "DestinationConfig": {"OnFailure": {"Type": "Lambda", "Destination": {"Ref": SCHEDULER_ALIAS}}},
            },
            "Environment": {"Variables": environment(pipeline, phase)},
            "Role": {"Fn::GetAtt": [naming.resource_id(pipeline.name, phase.name, "Role"), "Arn"]},
        },
    }


def log_group(pipeline: Pipeline[Any], phase: Phase) -> dict[str, Any]:
    """The phase function's log group, kept ``LogRetentionDays`` (with the stack's logs key, if it has one)."""
    suffix = naming.function_suffix(pipeline.name, phase.name)
    return {
        "Type": "AWS::Logs::LogGroup",
        "DeletionPolicy": "Delete",
        "UpdateReplacePolicy": "Delete",
        "Metadata": skipped(*LOG_GROUP_CHECKS),
        "Properties": {
            "LogGroupName": {"Fn::Sub": f"/aws/lambda/${{AWS::StackName}}-{suffix}"},
            "RetentionInDays": {"Ref": LOG_RETENTION_DAYS},
            "KmsKeyId": {"Fn::If": [HAS_LOGS_KEY, {"Ref": LOGS_KMS_KEY}, NO_VALUE]},
        },
    }


def alarm_actions() -> dict[str, Any]:
    """The alarm topic and/or topic ARN the deployer named, or no actions."""
    return {
        "Fn::If": [
            NOTIFY_ALARMS,
            [
                {"Fn::If": [HAS_ALARM_EMAIL, {"Ref": ALARM_TOPIC}, NO_VALUE]},
                {"Fn::If": [HAS_ALARM_TOPIC_ARN, {"Ref": ALARM_TOPIC_ARN}, NO_VALUE]},
            ],
            NO_VALUE,
        ]
    }


@dataclass(frozen=True)
class PhaseAlarm:
    """One kind of alarm on a pipeline's phase functions: a Lambda metric summed over its phases."""

    kind: str
    """The logical id's part after the pipeline's name: ``<Pipeline><kind>Alarm``."""
    metric: str
    """The AWS/Lambda metric summed."""
    what: str
    """What the alarm going off means, after "A phase function of <pipeline> ..." ."""


ERRORS = PhaseAlarm("Errors", "Errors", "failed")
THROTTLES = PhaseAlarm("Throttles", "Throttles", "was throttled (its reserved concurrency or the account's is used up)")
DELIVERY_FAILURES = PhaseAlarm(
    "DeliveryFailures",
    "DestinationDeliveryFailures",
    "crashed and Lambda could not deliver its crash report to the scheduler (the sweep will find the job)",
)
PHASE_ALARMS = (ERRORS, THROTTLES, DELIVERY_FAILURES)


def alarm_ids(pipeline: Pipeline[Any], *kinds: PhaseAlarm) -> list[str]:
    """The logical ids of the pipeline's alarms of ``kinds`` (default: all), one per ``MAX_ALARM_METRICS`` phases."""
    count = -(-len(pipeline.phase_names) // MAX_ALARM_METRICS)
    ids = []
    for alarm in kinds or PHASE_ALARMS:
        base = f"{naming.pascal(pipeline.name)}{alarm.kind}Alarm"
        ids += [base if index == 0 else f"{base}{index + 1}" for index in range(count)]
    return ids


def phase_alarms(pipeline: Pipeline[Any], *kinds: PhaseAlarm) -> dict[str, dict[str, Any]]:
    """Alarms on the sum of a metric of the pipeline's phase functions, at most 10 phases each, per kind."""
    alarms: dict[str, dict[str, Any]] = {}
    for alarm in kinds or PHASE_ALARMS:
        alarms.update(_alarms_of_kind(pipeline, alarm))
    return alarms


def _alarms_of_kind(pipeline: Pipeline[Any], alarm: PhaseAlarm) -> dict[str, dict[str, Any]]:
    names = pipeline.phase_names
    label = alarm.metric.lower() if alarm is not DELIVERY_FAILURES else "undelivered crash reports"
    alarms: dict[str, dict[str, Any]] = {}
    ids_of_kind = alarm_ids(pipeline, alarm)
    for index, alarm_id in enumerate(ids_of_kind):
        chunk = names[index * MAX_ALARM_METRICS : (index + 1) * MAX_ALARM_METRICS]
        which = f"phases {', '.join(chunk)}"
        if len(ids_of_kind) > 1:
            which = f"phases {index * MAX_ALARM_METRICS + 1} to {index * MAX_ALARM_METRICS + len(chunk)}: {which}"
        ids = metric_ids(chunk)
        metrics: list[dict[str, Any]] = [
            {"Id": "total", "Label": f"{pipeline.name} {label}", "Expression": " + ".join(ids), "ReturnData": True}
        ]
        for phase, metric_id in zip(chunk, ids, strict=True):
            function_id = naming.resource_id(pipeline.name, phase, "Function")
            metrics.append(
                {
                    "Id": metric_id,
                    "Label": phase,
                    "ReturnData": False,
                    "MetricStat": {
                        "Period": ALARM_PERIOD,
                        "Stat": "Sum",
                        "Metric": {
                            "Namespace": "AWS/Lambda",
                            "MetricName": alarm.metric,
                            "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": function_id}}],
                        },
                    },
                }
            )
        alarms[alarm_id] = {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {
                "AlarmDescription": f"A phase function of {pipeline.name} {alarm.what} ({alarm.metric} summed "
                f"over {which}). Runbook: docs/OPERATIONS.md, {alarm.kind}.",
                "ComparisonOperator": "GreaterThanThreshold",
                "Threshold": 0,
                "EvaluationPeriods": 1,
                "TreatMissingData": "notBreaching",
                "AlarmActions": alarm_actions(),
                "Metrics": metrics,
            },
        }
    return alarms


def metric_ids(phases: list[str]) -> list[str]:
    """An id for each phase's metric: its name in lowercase with ``_`` for other characters, made unique."""
    ids: list[str] = []
    for phase in phases:
        base = "".join(char if char.isalnum() else "_" for char in phase.lower())
        candidate, count = base, 1
        while candidate in ids or candidate == "total":
            count += 1
            candidate = f"{base}_{count}"
        ids.append(candidate)
    return ids


def invoke_policy(registry: PipelineRegistry) -> dict[str, Any]:
    """The managed policy to invoke every phase function (its ``live`` alias) and the scheduler, by exact ARN.

    The ARNs are built from the names (no reference to the functions): the phase functions and the
    scheduler's role use this policy, so a reference would be circular.
    """
    arns = [
        function_arn(naming.function_suffix(pipeline.name, phase.name), FUNCTION_ALIAS)
        for pipeline, phase in phases(registry)
    ]
    return {
        "Type": "AWS::IAM::ManagedPolicy",
        "Properties": {
            "Description": {"Fn::Sub": "${AWS::StackName}: invoke the phase functions and the scheduler."},
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "InvokeStackFunctions",
                        "Effect": "Allow",
                        "Action": "lambda:InvokeFunction",
                        "Resource": [*arns, function_arn(SCHEDULER_NAME, FUNCTION_ALIAS)],
                    }
                ],
            },
        },
    }


def generated(registry: PipelineRegistry) -> dict[str, dict[str, Any]]:
    """Every generated resource by logical id, in the order the template lists them."""
    resources: dict[str, dict[str, Any]] = {}

    def add(logical_id: str, resource: dict[str, Any], owner: str) -> None:
        if logical_id in resources:
            raise TemplateError(f"{owner} would need the template resource {logical_id}, which another one has")
        resources[logical_id] = resource

    for pipeline in registry:
        for name in pipeline.phase_names:
            phase = pipeline.get_phase(name)
            owner = f'phase "{name}" of pipeline "{pipeline.name}"'
            add(naming.resource_id(pipeline.name, name, "Function"), function(pipeline, phase), owner)
            add(naming.resource_id(pipeline.name, name, "Role"), role(pipeline, phase), owner)
            add(naming.resource_id(pipeline.name, name, "LogGroup"), log_group(pipeline, phase), owner)
        for alarm_id, alarm in phase_alarms(pipeline).items():
            add(alarm_id, alarm, f'the alarms of pipeline "{pipeline.name}"')
    add(INVOKE_POLICY, invoke_policy(registry), "the invoke policy")
    shown = [
        (f"{pipeline.name} {phase.name}", naming.resource_id(pipeline.name, phase.name, "Function"))
        for pipeline, phase in phases(registry)
    ]
    alarms = [alarm_id for pipeline in registry for alarm_id in alarm_ids(pipeline)]
    add(dashboard.DASHBOARD, dashboard.resource(shown, alarms), "the dashboard")
    return resources
