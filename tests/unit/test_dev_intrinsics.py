"""cairn.dev.intrinsics: CloudFormation intrinsics resolved offline, and parameter values checked."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.bundle.templating.cfnyaml import load
from cairn.bundle.templating.intrinsic_names import references
from cairn.dev.intrinsics import (
    NO_VALUE,
    ParameterError,
    PhysicalResource,
    Pseudo,
    ResolutionError,
    Resolver,
    resolve_parameters,
)

PSEUDO = Pseudo("dev", "eu-west-1", "111122223333")
QUEUE_URL = "http://localhost/111122223333/dev-Queue"


def resolver(**overrides: Any) -> Resolver:
    """A resolver with a few parameters, conditions, a mapping and two resources."""
    settings: dict[str, Any] = {
        "parameters": {"Env": "prod", "Size": "24", "Names": "a,b,c", "Empty": ""},
        "pseudo": PSEUDO,
        "list_parameters": ["Names"],
        "conditions": {
            "IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
            "IsDev": {"Fn::Not": [{"Condition": "IsProd"}]},
            "HasEmpty": {"Fn::Equals": [{"Ref": "Empty"}, ""]},
            "Both": {"Fn::And": [{"Condition": "IsProd"}, {"Condition": "HasEmpty"}]},
            "Either": {"Fn::Or": [{"Condition": "IsDev"}, {"Condition": "HasEmpty"}]},
            "SizeIs24": {"Fn::Equals": [{"Ref": "Size"}, 24]},
        },
        "mappings": {"Retention": {"24": {"Days": 3}, "48": {"Days": 5}}},
        "resources": {
            "Queue": PhysicalResource(QUEUE_URL, {"Arn": "arn:aws:sqs:eu-west-1:111122223333:dev-Queue"}),
            "Role": PhysicalResource("dev-Role", {}, lambda attribute: f"dev-Role.{attribute}"),
        },
    }
    settings.update(overrides)
    return Resolver(**settings)


def resolve(node: Any) -> Any:
    return resolver().resolve(node, "Resources.Thing.Properties")


def test_ref_gives_parameters_pseudo_parameters_and_resources() -> None:
    assert resolve({"Ref": "Env"}) == "prod"
    assert resolve({"Ref": "Names"}) == ["a", "b", "c"]
    assert resolve({"Ref": "AWS::StackName"}) == "dev"
    assert resolve({"Ref": "AWS::Region"}) == "eu-west-1"
    assert resolve({"Ref": "AWS::AccountId"}) == "111122223333"
    assert resolve({"Ref": "AWS::Partition"}) == "aws"
    assert resolve({"Ref": "AWS::URLSuffix"}) == "amazonaws.com"
    assert resolve({"Ref": "Queue"}) == QUEUE_URL


def test_get_att_in_list_and_dotted_forms() -> None:
    assert resolve({"Fn::GetAtt": ["Queue", "Arn"]}) == "arn:aws:sqs:eu-west-1:111122223333:dev-Queue"
    assert resolve({"Fn::GetAtt": "Queue.Arn"}) == "arn:aws:sqs:eu-west-1:111122223333:dev-Queue"
    assert resolve({"Fn::GetAtt": ["Role", "RoleId"]}) == "dev-Role.RoleId"


def test_sub_fills_parameters_pseudo_parameters_resources_attributes_and_escapes() -> None:
    assert resolve({"Fn::Sub": "${AWS::StackName}-${Env}"}) == "dev-prod"
    assert resolve({"Fn::Sub": "${Queue}|${Queue.Arn}"}) == f"{QUEUE_URL}|arn:aws:sqs:eu-west-1:111122223333:dev-Queue"
    assert resolve({"Fn::Sub": "literal ${!Env} and ${!AWS::Region}"}) == "literal ${Env} and ${AWS::Region}"
    assert resolve({"Fn::Sub": "no variables"}) == "no variables"


def test_sub_with_variables_prefers_them_and_resolves_them() -> None:
    node = {"Fn::Sub": ["${Env}/${Where}/${AWS::Region}", {"Env": "mine", "Where": {"Ref": "Queue"}}]}
    assert resolve(node) == f"mine/{QUEUE_URL}/eu-west-1"


def test_conditions() -> None:
    r = resolver()
    assert r.condition("IsProd", "here") is True
    assert r.condition("IsDev", "here") is False
    assert r.condition("Both", "here") is True
    assert r.condition("Either", "here") is True
    assert r.condition("SizeIs24", "here") is True


def test_if_picks_the_branch_and_leaves_the_other_unresolved() -> None:
    assert resolve({"Fn::If": ["IsProd", "yes", {"Ref": "Unknown"}]}) == "yes"
    assert resolve({"Fn::If": ["IsDev", {"Ref": "Unknown"}, {"Fn::Sub": "${Env}!"}]}) == "prod!"


def test_no_value_removes_the_key_or_the_list_item() -> None:
    node = {
        "Keep": "k",
        "Drop": {"Ref": "AWS::NoValue"},
        "Maybe": {"Fn::If": ["IsDev", "x", {"Ref": "AWS::NoValue"}]},
        "List": ["a", {"Fn::If": ["IsProd", {"Ref": "AWS::NoValue"}, "b"]}, "c"],
    }
    assert resolve(node) == {"Keep": "k", "List": ["a", "c"]}
    assert resolve({"Ref": "AWS::NoValue"}) is NO_VALUE


def test_find_in_map_join_split_select() -> None:
    assert resolve({"Fn::FindInMap": ["Retention", {"Ref": "Size"}, "Days"]}) == 3
    assert resolve({"Fn::Join": ["-", ["a", {"Ref": "Env"}, 7]]}) == "a-prod-7"
    assert resolve({"Fn::Join": [",", {"Ref": "Names"}]}) == "a,b,c"
    assert resolve({"Fn::Split": [",", "x,y"]}) == ["x", "y"]
    assert resolve({"Fn::Select": [1, {"Fn::Split": [",", "x,y,z"]}]}) == "y"
    assert resolve({"Fn::Select": ["2", {"Ref": "Names"}]}) == "c"


def test_the_yaml_loaders_short_forms_resolve() -> None:
    document = load(
        """
Value: !Sub "${AWS::StackName}-${Queue.Arn}"
Other: !If [IsProd, !GetAtt Queue.Arn, !Ref AWS::NoValue]
Days: !FindInMap [Retention, !Ref Size, Days]
Parts: !Split [",", !Join ["," , [a, !Select [0, [b]]]]]
"""
    )
    assert resolve(document) == {
        "Value": "dev-arn:aws:sqs:eu-west-1:111122223333:dev-Queue",
        "Other": "arn:aws:sqs:eu-west-1:111122223333:dev-Queue",
        "Days": 3,
        "Parts": ["a", "b"],
    }


@pytest.mark.parametrize(
    ("node", "path", "message"),
    [
        ({"Ref": "Nope"}, "Resources.Thing.Properties.Environment.Variables.X.Ref", "Nope is neither"),
        (
            {"Fn::GetAtt": ["Queue", "Colour"]},
            "Resources.Thing.Properties.Environment.Variables.X.Fn::GetAtt",
            "Colour",
        ),
        ({"Fn::ImportValue": "Shared"}, "Resources.Thing.Properties.Environment.Variables.X", "Fn::ImportValue"),
        ({"Fn::Sub": "${Missing.Arn}"}, "Resources.Thing.Properties.Environment.Variables.X.Fn::Sub", "Missing"),
        (
            {"Fn::If": ["NoSuchCondition", 1, 2]},
            "Resources.Thing.Properties.Environment.Variables.X.Fn::If",
            "condition",
        ),
        ({"Fn::FindInMap": ["Retention", "99", "Days"]}, "Resources.Thing.Properties.Environment.Variables.X", "'99'"),
        ({"Fn::Select": [5, ["a"]]}, "Resources.Thing.Properties.Environment.Variables.X.Fn::Select", "out of range"),
        ({"Fn::GetAtt": ["Env", "Arn"]}, "Resources.Thing.Properties.Environment.Variables.X.Fn::GetAtt", "parameter"),
    ],
)
def test_errors_name_the_path(node: Any, path: str, message: str) -> None:
    wrapped = {"Environment": {"Variables": {"X": node}}}
    with pytest.raises(ResolutionError) as caught:
        resolve(wrapped)
    assert caught.value.path.startswith(path)
    assert str(caught.value).startswith(f"{caught.value.path}: ")
    assert message in str(caught.value)


def test_a_list_item_path_has_its_index() -> None:
    with pytest.raises(ResolutionError, match=r"^Resources\.Thing\.Properties\.Policies\[1\]\.Ref: "):
        resolve({"Policies": ["ok", {"Ref": "Nope"}]})


def test_a_reference_to_an_absent_resource_says_so() -> None:
    with pytest.raises(ResolutionError, match="Machine is absent"):
        resolver(absent={"Machine"}).resolve({"Ref": "Machine"}, "Outputs.X.Value")


def test_string_rejects_a_list() -> None:
    with pytest.raises(ResolutionError, match=r"^Resources\.F\.Env: expected a string, got a list"):
        resolver().string({"Ref": "Names"}, "Resources.F.Env")


def test_circular_conditions_are_an_error() -> None:
    r = resolver(conditions={"A": {"Condition": "B"}, "B": {"Fn::Not": [{"Condition": "A"}]}})
    with pytest.raises(ResolutionError, match="circular conditions: A -> B -> A"):
        r.condition("A", "Resources.X.Condition")


def test_a_condition_must_be_a_condition_function() -> None:
    r = resolver(conditions={"Bad": {"Ref": "Env"}})
    with pytest.raises(ResolutionError, match=r"^Conditions\.Bad: expected a condition function"):
        r.condition("Bad", "Resources.X.Condition")


def test_references_finds_every_name_in_every_branch() -> None:
    node = {
        "A": {"Ref": "Table"},
        "B": {"Fn::If": ["Cond", {"Fn::GetAtt": ["Queue", "Arn"]}, {"Fn::GetAtt": "Dlq.Arn"}]},
        "C": {"Fn::Sub": "${Bucket.Arn}/${AWS::Region}/${!Escaped}"},
        "D": {"Fn::Sub": ["${Local}-${Fn}", {"Local": {"Ref": "Other"}}]},
    }
    assert references(node) == {"Table", "Queue", "Dlq", "Bucket", "AWS::Region", "Fn", "Other"}


# ---------------------------------------------------------------- parameters

DECLARATIONS: dict[str, Any] = {
    "Driver": {"Type": "String", "Default": "direct", "AllowedValues": ["direct", "stepfunctions"]},
    "Hours": {"Type": "Number", "Default": "24", "AllowedValues": ["1", "24", 48]},
    "Idle": {"Type": "Number", "Default": 600, "MinValue": 60},
    "Bucket": {"Type": "String", "Default": "", "AllowedPattern": "^$|^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"},
    "Flag": {"Type": "String", "Default": True},
}


def test_parameters_take_defaults_and_overrides_as_strings() -> None:
    values = resolve_parameters(DECLARATIONS, {"Driver": "stepfunctions", "Hours": "48"})
    assert values == {"Driver": "stepfunctions", "Hours": "48", "Idle": "600", "Bucket": "", "Flag": "true"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"Driver": "fast"}, "Parameter Driver: 'fast' is not one of the allowed values direct, stepfunctions"),
        ({"Hours": "2"}, "Parameter Hours: '2' is not one of the allowed values 1, 24, 48"),
        ({"Bucket": "Bad_Bucket"}, "Parameter Bucket: 'Bad_Bucket' does not match the allowed pattern"),
        ({"Idle": "10"}, "Parameter Idle: 10 is below the minimum 60"),
        ({"Idle": "soon"}, "Parameter Idle: 'soon' is not a number"),
        ({"Nope": "x"}, "The template declares no parameter Nope"),
    ],
)
def test_bad_parameter_values_are_clear_errors(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ParameterError) as caught:
        resolve_parameters(DECLARATIONS, overrides)
    assert message in str(caught.value)


def test_a_parameter_without_default_needs_a_value() -> None:
    with pytest.raises(ParameterError, match="Parameter Name has no Default"):
        resolve_parameters({"Name": {"Type": "String"}}, {})
    assert resolve_parameters({"Name": {"Type": "String"}}, {"Name": "x"}) == {"Name": "x"}


def test_rules_assert_on_parameter_values() -> None:
    rules = {
        "JwtNeedsIssuer": {
            "RuleCondition": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
            "Assertions": [
                {"Assert": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Empty"}, ""]}]}, "AssertDescription": "needs Empty"}
            ],
        }
    }
    with pytest.raises(ParameterError, match="Rule JwtNeedsIssuer: needs Empty"):
        resolver().check_rules(rules)
    resolver(parameters={"Env": "dev", "Size": "24", "Names": "", "Empty": ""}).check_rules(rules)
