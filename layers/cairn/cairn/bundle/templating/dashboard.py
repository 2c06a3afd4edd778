"""The stack's CloudWatch dashboard: jobs started, completed and failed, each phase's duration, the
functions' errors and throttles, the queues, and every alarm of the stack.

It is generated with the phase functions because it names each of them and each pipeline's alarms.
The body is one ``Fn::Sub`` of the dashboard's JSON: ``${Logical}`` is a function's name or a queue's,
``${Logical.Arn}`` an alarm's ARN; the state machine's alarm joins under the stepfunctions driver only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

DASHBOARD = "StackDashboard"
"""The dashboard's logical id; it is named ``<stack>-cairn``."""
METRICS_NAMESPACE = "cairn/${AWS::StackName}"
"""Where the functions' own metrics go (POWERTOOLS_METRICS_NAMESPACE), with the dimension service=cairn."""
SERVICE = "cairn"

STACK_ALARMS = (
    "FailedJobsAlarm",
    "JobFailureRateAlarm",
    "SchedulerErrorsAlarm",
    "SchedulerDeliveryFailuresAlarm",
    "SchedulerDeadLetterAlarm",
    "DeadLetterAlarm",
    "DelayQueueAgeAlarm",
    "StalledJobsAlarm",
    "ApiServerErrorsAlarm",
    "FunctionThrottlesAlarm",
)
"""The hand-written alarms of the template, shown beside the pipelines' own."""
STEP_FUNCTIONS_ALARM = "ExecutionsFailedAlarm"
USE_STEP_FUNCTIONS = "UseStepFunctions"
_STEP_FUNCTIONS_SLOT = "StepFunctionsAlarms"
_PERIOD = 300
_WIDTH = 12
_HEIGHT = 6


def _widget(title: str, metrics: list[list[Any]], *, stat: str = "Sum", index: int) -> dict[str, Any]:
    return {
        "type": "metric",
        "x": (index % 2) * _WIDTH,
        "y": (index // 2) * _HEIGHT,
        "width": _WIDTH,
        "height": _HEIGHT,
        "properties": {
            "title": title,
            "region": "${AWS::Region}",
            "view": "timeSeries",
            "stat": stat,
            "period": _PERIOD,
            "metrics": metrics,
        },
    }


def _own(metric: str, label: str) -> list[Any]:
    return [METRICS_NAMESPACE, metric, "service", SERVICE, {"label": label}]


def _lambda(metric: str, function_id: str, label: str, **options: str) -> list[Any]:
    return ["AWS/Lambda", metric, "FunctionName", f"${{{function_id}}}", {"label": label, **options}]


def body(phase_functions: Sequence[tuple[str, str]], pipeline_alarms: Sequence[str]) -> str:
    """The dashboard's JSON, with ``${...}`` for ``Fn::Sub``: ``phase_functions`` are (label, logical id) pairs."""
    fronts = [("scheduler", "SchedulerFunction"), ("api", "ApiFunction")]
    every = [*phase_functions, *fronts]
    widgets = [
        _widget(
            "Jobs",
            [_own("JobsStarted", "started"), _own("JobsCompleted", "completed"), _own("JobsFailed", "failed")],
            index=0,
        ),
        _widget(
            "Phase duration (p95, ms)",
            [_lambda("Duration", function_id, label) for label, function_id in phase_functions]
            or [_lambda("Duration", "SchedulerFunction", "scheduler")],  # a bundle with no pipeline yet
            stat="p95",
            index=1,
        ),
        _widget(
            "Errors and throttles",
            [_lambda("Errors", function_id, f"{label} errors") for label, function_id in every]
            + [_lambda("Throttles", function_id, f"{label} throttles") for label, function_id in every],
            index=2,
        ),
        _widget(
            "Queues and stalled jobs",
            [
                [
                    "AWS/SQS",
                    "ApproximateAgeOfOldestMessage",
                    "QueueName",
                    "${DelayQueue.QueueName}",
                    {"label": "delay queue: oldest (s)", "stat": "Maximum"},
                ],
                [
                    "AWS/SQS",
                    "ApproximateNumberOfMessagesVisible",
                    "QueueName",
                    "${DeadLetterQueue.QueueName}",
                    {"label": "delayed advances dead-lettered", "stat": "Maximum"},
                ],
                [
                    "AWS/SQS",
                    "ApproximateNumberOfMessagesVisible",
                    "QueueName",
                    "${SchedulerDeadLetterQueue.QueueName}",
                    {"label": "scheduler failures to redrive", "stat": "Maximum"},
                ],
                _own("StalledJobs", "stalled jobs the sweep found"),
            ],
            index=3,
        ),
    ]
    alarms = [f"${{{alarm_id}.Arn}}" for alarm_id in (*pipeline_alarms, *STACK_ALARMS)]
    widgets.append(
        {
            "type": "alarm",
            "x": 0,
            "y": 2 * _HEIGHT,
            "width": 2 * _WIDTH,
            "height": _HEIGHT,
            "properties": {"title": "Alarms", "alarms": alarms},
        }
    )
    text = json.dumps({"widgets": widgets}, separators=(",", ":"))
    # the state machine's alarm exists under the stepfunctions driver only: a slot filled or left empty
    return text.replace(f'"{alarms[-1]}"]', f'"{alarms[-1]}"${{{_STEP_FUNCTIONS_SLOT}}}]', 1)


def resource(phase_functions: Sequence[tuple[str, str]], pipeline_alarms: Sequence[str]) -> dict[str, Any]:
    """The ``AWS::CloudWatch::Dashboard`` of the stack."""
    step_functions_alarm = {"Fn::If": [USE_STEP_FUNCTIONS, {"Fn::Sub": f',"${{{STEP_FUNCTIONS_ALARM}.Arn}}"'}, ""]}
    return {
        "Type": "AWS::CloudWatch::Dashboard",
        "Properties": {
            "DashboardName": {"Fn::Sub": "${AWS::StackName}-cairn"},
            "DashboardBody": {
                "Fn::Sub": [body(phase_functions, pipeline_alarms), {_STEP_FUNCTIONS_SLOT: step_functions_alarm}]
            },
        },
    }
