"""The state machine definition as a plain CloudFormation template, for cfn-lint's ASL checks.

``python -m tests.template.asl OUT.json`` writes the wrapper: one ``AWS::StepFunctions::StateMachine``
whose ``Definition`` is ``cairn/aws/pipeline.asl.json`` with every ``${Variable}`` filled from the
SAM template's ``DefinitionSubstitutions`` (evaluated with the stepfunctions driver).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.template.cfn import STATE_MACHINE, Resolver, sam_transform

VARIABLE = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
STATE_MACHINE_ID = "PipelineStateMachine"


def variables(text: str) -> set[str]:
    """The ``${Name}`` substitution variables used in a definition."""
    return set(VARIABLE.findall(text))


def fill(text: str, values: Mapping[str, str]) -> str:
    """The definition with every variable replaced; an unknown variable is an error naming it."""
    missing = variables(text) - set(values)
    if missing:
        raise KeyError(f"DefinitionSubstitutions lacks {sorted(missing)}")
    return VARIABLE.sub(lambda match: values[match.group(1)], text)


def deployed_substitutions() -> tuple[dict[str, str], str, str]:
    """The state machine's substitutions, name and role ARN, as the stepfunctions driver deploys them."""
    stack = Resolver(sam_transform(Driver="stepfunctions"), Driver="stepfunctions")
    properties = stack.properties(STATE_MACHINE_ID)
    role = stack.arn(str(stack.resources[STATE_MACHINE_ID]["Properties"]["RoleArn"]["Fn::GetAtt"][0]))
    return dict(properties.get("DefinitionSubstitutions", {})), str(properties["StateMachineName"]), role


def wrapped(asl_path: Path = STATE_MACHINE) -> dict[str, Any]:
    """A CloudFormation template holding the definition, its substitutions filled."""
    substitutions, name, role = deployed_substitutions()
    definition = json.loads(fill(asl_path.read_text(encoding="utf-8"), substitutions))
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"{asl_path.name} as deployed, for cfn-lint",
        "Resources": {
            STATE_MACHINE_ID: {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "StateMachineName": name,
                    "StateMachineType": "STANDARD",
                    "RoleArn": role,
                    "Definition": definition,
                },
            }
        },
    }


def main(argv: list[str]) -> int:
    """Write the wrapper to the path given."""
    if len(argv) != 1:
        print("usage: python -m tests.template.asl OUT.json", file=sys.stderr)
        return 2
    Path(argv[0]).write_text(json.dumps(wrapped(), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
