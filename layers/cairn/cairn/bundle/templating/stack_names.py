"""Whether a stack name leaves every name the template fixes within its service's limit.

The template names some resources after the stack (``!Sub "${AWS::StackName}-api"``): a stack name
long enough pushes one of them past its limit, and CloudFormation fails the deploy half way. Each
such name is checked here with the stack name put in, for a name the user passes
(``cairn template check --stack-name``) and for each one samconfig.toml saves.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

STACK_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,127}")
"""What CloudFormation accepts as a stack name."""
_PLACEHOLDER = "${AWS::StackName}"
_OTHER_PLACEHOLDER = re.compile(r"\$\{[^}]*\}")

#: (resource type, property) -> the longest name the service accepts.
NAME_LIMITS: Mapping[tuple[str, str], int] = {
    ("AWS::Serverless::Function", "FunctionName"): 64,
    ("AWS::Lambda::Function", "FunctionName"): 64,
    ("AWS::Serverless::LayerVersion", "LayerName"): 140,
    ("AWS::Lambda::LayerVersion", "LayerName"): 140,
    ("AWS::Serverless::StateMachine", "Name"): 80,
    ("AWS::StepFunctions::StateMachine", "StateMachineName"): 80,
    ("AWS::Logs::LogGroup", "LogGroupName"): 512,
    ("AWS::CloudWatch::Dashboard", "DashboardName"): 255,
    ("AWS::CloudWatch::Alarm", "AlarmName"): 255,
    ("AWS::SQS::Queue", "QueueName"): 80,
    ("AWS::SNS::Topic", "TopicName"): 256,
    ("AWS::IAM::Role", "RoleName"): 64,
    ("AWS::DynamoDB::Table", "TableName"): 255,
}


def _fixed_name(value: Any) -> str | None:
    """The ``Fn::Sub`` text of a name that contains the stack's name, else None."""
    text = value.get("Fn::Sub") if isinstance(value, Mapping) else None
    if isinstance(text, list) and text:
        text = text[0]
    return text if isinstance(text, str) and _PLACEHOLDER in text else None


def _length(text: str, stack_name: str) -> int:
    """The name's length once deployed as ``stack_name``; another ``${...}`` counts as nothing (a lower bound)."""
    return len(_OTHER_PLACEHOLDER.sub("", text.replace(_PLACEHOLDER, stack_name)))


def fixed_names(template: Mapping[str, Any]) -> Iterator[tuple[str, str, str, int]]:
    """(logical id, property, ``Fn::Sub`` text, limit) of every resource name made from the stack's name."""
    resources = template.get("Resources")
    for logical_id, resource in (resources or {}).items() if isinstance(resources, Mapping) else ():
        if not isinstance(resource, Mapping) or not isinstance(resource.get("Properties"), Mapping):
            continue
        for (kind, prop), limit in NAME_LIMITS.items():
            text = _fixed_name(resource["Properties"].get(prop)) if resource.get("Type") == kind else None
            if text is not None:
                yield logical_id, prop, text, limit


def problems(template: Mapping[str, Any], stack_name: str, source: str) -> list[str]:
    """Why ``stack_name`` (from ``source``) cannot deploy ``template``: one line per name over its limit."""
    if not STACK_NAME.fullmatch(stack_name):
        return [
            f'stack name "{stack_name}" ({source}) is not one CloudFormation accepts: a letter, then up to 127 '
            "letters, digits and hyphens"
        ]
    found = []
    for logical_id, prop, text, limit in fixed_names(template):
        length = _length(text, stack_name)
        if length > limit:
            room = limit - _length(text, "")
            found.append(
                f'stack name "{stack_name}" ({source}) makes the {prop} of {logical_id} {length} characters long, '
                f"over its limit of {limit}: use a stack name of at most {room} characters"
            )
    return found


def saved_stack_names(samconfig: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """Each (stack name, where it is saved) of samconfig.toml, and why it could not be read (if so)."""
    if not samconfig.is_file():
        return [], []
    try:
        config = tomllib.loads(samconfig.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return [], [f"{samconfig.name} does not parse: {exc}"]
    names = []
    for environment, commands in config.items():
        for command, table in commands.items() if isinstance(commands, dict) else ():
            name = table.get("parameters", {}).get("stack_name") if isinstance(table, dict) else None
            if isinstance(name, str):
                names.append((name, f"{samconfig.name}, [{environment}.{command}.parameters]"))
    return names, []
