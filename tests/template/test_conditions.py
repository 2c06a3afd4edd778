"""The template's conditions as cairn works them out (``cairn template check``, ``cairn dev``): the same values the SAM
CLI's own ``AWS::LanguageExtensions`` gives, for this bundle's template and for one that uses every function a
condition may, and a clear error for what CloudFormation would refuse."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cairn.bundle.templating.conditions import ConditionError, Pseudo, condition_values
from tests.template.cfn import ACCOUNT, REGION, STACK, sam_template
from tests.template.test_checkov import DEPLOYMENTS
from tests.template.test_handwritten_template import cairn_check, with_mistake

STACK_PSEUDO = Pseudo(stack_name=STACK, region=REGION, account=ACCOUNT)

EVERY_FUNCTION: dict[str, Any] = {
    "Parameters": {
        "Stage": {"Type": "String", "Default": "dev"},
        "Zones": {"Type": "CommaDelimitedList", "Default": "a,b,c"},
        "Size": {"Type": "Number", "Default": 3},
        "Name": {"Type": "String", "Default": "cairn-dev"},
    },
    "Mappings": {"Sizes": {"dev": {"Small": "3"}, "prod": {"Small": "5"}}},
    "Conditions": {
        "IsProd": {"Fn::Equals": [{"Ref": "Stage"}, "prod"]},
        "SmallFromMap": {"Fn::Equals": [{"Fn::FindInMap": ["Sizes", {"Ref": "Stage"}, "Small"]}, {"Ref": "Size"}]},
        "SecondZoneIsB": {"Fn::Equals": [{"Fn::Select": [1, {"Ref": "Zones"}]}, "b"]},
        "JoinedZones": {"Fn::Equals": [{"Fn::Join": ["-", {"Ref": "Zones"}]}, "a-b-c"]},
        "SplitName": {"Fn::Equals": [{"Fn::Select": ["0", {"Fn::Split": ["-", {"Ref": "Name"}]}]}, "cairn"]},
        "SubName": {"Fn::Equals": [{"Fn::Sub": "cairn-${Stage}"}, {"Ref": "Name"}]},
        "SubVariables": {
            "Fn::Equals": [{"Fn::Sub": ["${X}-${AWS::Region}", {"X": {"Ref": "Stage"}}]}, "dev-us-east-1"]
        },
        "InRegion": {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]},
        "Everything": {
            "Fn::And": [
                {"Condition": "SmallFromMap"},
                {"Fn::Or": [{"Condition": "IsProd"}, {"Fn::Not": [{"Condition": "IsProd"}]}]},
                {"Condition": "SubName"},
            ]
        },
    },
    "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
}


# The SAM CLI's implementation of AWS::LanguageExtensions (what `sam build --language-extensions` runs), given each
# condition as an output's Fn::If: what it resolves each to.
LANGUAGE_EXTENSIONS = """
import json, sys
from samcli.lib.cfn_language_extensions.api import process_template
from samcli.lib.cfn_language_extensions.models import PseudoParameterValues
template = json.loads(sys.argv[1])
template["Transform"] = "AWS::LanguageExtensions"
template["Outputs"] = {name: {"Value": {"Fn::If": [name, "yes", "no"]}} for name in template["Conditions"]}
pseudo = PseudoParameterValues(region=sys.argv[3], account_id=sys.argv[4], stack_name=sys.argv[5])
for params in json.loads(sys.argv[2]):
    processed = process_template(template, parameter_values=params, pseudo_parameters=pseudo)
    print(json.dumps({name: output["Value"] == "yes" for name, output in processed["Outputs"].items()}))
"""
EVERY_FUNCTION_PARAMETERS: list[dict[str, str]] = [
    {},
    {"Stage": "prod"},
    {"Stage": "prod", "Size": "5", "Name": "cairn-prod"},
    {"Zones": "x,y", "Name": "other-x"},
]


def sams(sam_cli: Path, template: dict[str, Any], parameter_sets: list[dict[str, str]]) -> list[dict[str, bool]]:
    """Every condition of ``template`` for each parameter set, as the SAM CLI's language extensions resolve it."""
    conditions_only: dict[str, Any] = {
        key: template[key] for key in ("Parameters", "Mappings", "Conditions") if key in template
    }
    conditions_only["Resources"] = {"Topic": {"Type": "AWS::SNS::Topic"}}
    arguments = [json.dumps(conditions_only), json.dumps(parameter_sets), REGION, ACCOUNT, STACK]
    done = subprocess.run(
        [str(sam_cli.parent / "python"), "-c", LANGUAGE_EXTENSIONS, *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_the_templates_conditions_are_what_the_sam_clis_language_extensions_make_of_them(sam_cli: Path) -> None:
    template = sam_template()
    deployments = [DEPLOYMENTS[name] for name in sorted(DEPLOYMENTS)]
    expected = sams(sam_cli, template, deployments)
    assert [condition_values(template, given, STACK_PSEUDO) for given in deployments] == expected
    assert set(expected[0]) == set(template["Conditions"])


def test_every_function_a_condition_may_use_is_what_the_sam_cli_makes_of_it(sam_cli: Path) -> None:
    expected = sams(sam_cli, EVERY_FUNCTION, EVERY_FUNCTION_PARAMETERS)
    assert [condition_values(EVERY_FUNCTION, given, STACK_PSEUDO) for given in EVERY_FUNCTION_PARAMETERS] == expected


def test_each_condition_of_the_example_is_true_for_some_parameters_and_false_for_others() -> None:
    """The example decides something: every condition but the region's takes both values over its parameter sets."""
    seen = [condition_values(EVERY_FUNCTION, given, STACK_PSEUDO) for given in EVERY_FUNCTION_PARAMETERS]
    for name in EVERY_FUNCTION["Conditions"]:
        assert {found[name] for found in seen} == ({True} if name == "InRegion" else {True, False}), name


def test_a_number_parameter_is_compared_as_the_string_its_ref_gives() -> None:
    """CloudFormation checks a Number parameter as a number; its Ref gives a string."""
    template = {
        "Parameters": {"Size": {"Type": "Number", "Default": 3}},
        "Mappings": {"Sizes": {"dev": {"Small": "3"}}},
        "Conditions": {"Small": {"Fn::Equals": [{"Fn::FindInMap": ["Sizes", "dev", "Small"]}, {"Ref": "Size"}]}},
    }
    assert condition_values(template, {}, STACK_PSEUDO) == {"Small": True}
    assert condition_values(template, {"Size": "5"}, STACK_PSEUDO) == {"Small": False}


@pytest.mark.parametrize(
    ("conditions", "message"),
    [
        (
            {"A": {"Condition": "B"}, "B": {"Fn::Not": [{"Condition": "A"}]}},
            "Conditions.A: refers to itself (A -> B -> A)",
        ),
        ({"A": {"Fn::Equals": [{"Fn::GetAtt": ["Topic", "Arn"]}, "x"]}}, "Fn::GetAtt cannot be used in a condition"),
        ({"A": {"Fn::Equals": [{"Ref": "Missing"}, "x"]}}, "Conditions.A: Ref Missing is not a parameter"),
        ({"A": {"Fn::Equals": [{"Ref": "Required"}, "x"]}}, "Ref Required has no value (no default, none given)"),
        ({"A": {"Condition": "Nowhere"}}, "names the undefined condition Nowhere"),
        ({"A": {"Fn::And": [{"Condition": "B"}]}, "B": {"Fn::Equals": ["x", "x"]}}, "Fn::And takes 2 to 10 conditions"),
        ({"A": {"Fn::Equals": ["x"]}}, "Conditions.A: Fn::Equals takes a list of 2"),
    ],
)
def test_a_condition_cloudformation_would_refuse_is_named_with_why(conditions: dict[str, Any], message: str) -> None:
    template = {"Parameters": {"Required": {"Type": "String"}}, "Conditions": conditions, "Resources": {}}
    with pytest.raises(ConditionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        condition_values(template, {}, STACK_PSEUDO)


def test_template_check_names_a_condition_that_refers_to_itself(tmp_path: Path) -> None:
    template = with_mistake(tmp_path, r"^  UseJwt: .*$", "  UseJwt: !Not [!Condition UseJwt]")
    status, lines = cairn_check(template)
    assert status == 1
    assert any("Conditions.UseJwt: refers to itself (UseJwt -> UseJwt)" in line for line in lines), lines
