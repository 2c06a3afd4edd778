"""``cairn template sync`` writes the registry's resources into template.yaml: stable, readable, linted."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cairn import Next, PhaseContext, Pipeline
from cairn.bundle.templating import (
    TemplateError,
    cfnyaml,
    check,
    load_registry,
    render,
    resources,
    section,
    sync,
    synced,
)
from cairn.cli import main
from cairn.core.registry import PipelineRegistry
from pipelines import PIPELINES
from tests.template.cfn import ROOT, TEMPLATE
from tests.template.test_linters import cfn_lint
from tests.template.test_template_check import bundle_with

FUNCTIONS = ROOT / "functions"
TWO_PIPELINES = "tests.template.registries:TWO_PIPELINES"


def copy_of_template(tmp_path: Path) -> Path:
    return bundle_with(tmp_path, TEMPLATE.read_text(encoding="utf-8"))


def sync_two_pipelines(template: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """``cairn template sync`` with document-intake and invoice-review; the lines it printed."""
    status = main(
        ["template", "sync", "--template", str(template), "--functions", str(FUNCTIONS), "--registry", TWO_PIPELINES]
    )
    assert status == 0
    return capsys.readouterr().out.splitlines()


def test_the_bundle_template_is_in_sync_and_a_sync_changes_nothing(tmp_path: Path) -> None:
    template = copy_of_template(tmp_path)
    assert sync(template, PIPELINES) == []
    assert template.read_text(encoding="utf-8") == TEMPLATE.read_text(encoding="utf-8")


def summary(registry: PipelineRegistry) -> str:
    phases = sum(len(pipeline.phase_names) for pipeline in registry)
    return f"in sync with the registry ({len(registry.names)} pipeline(s), {phases} phase(s))"


def test_a_second_pipeline_sharing_phase_names_is_added_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = copy_of_template(tmp_path)
    registry = load_registry(TWO_PIPELINES, FUNCTIONS)
    printed = sync_two_pipelines(template, capsys)
    assert printed == [
        f"{template}: added InvoiceReviewFetchFunction (AWS::Serverless::Function)",
        f"{template}: added InvoiceReviewFetchRole (AWS::IAM::Role)",
        f"{template}: added InvoiceReviewFetchLogGroup (AWS::Logs::LogGroup)",
        f"{template}: added InvoiceReviewPublishFunction (AWS::Serverless::Function)",
        f"{template}: added InvoiceReviewPublishRole (AWS::IAM::Role)",
        f"{template}: added InvoiceReviewPublishLogGroup (AWS::Logs::LogGroup)",
        f"{template}: added InvoiceReviewErrorsAlarm (AWS::CloudWatch::Alarm)",
        f"{template}: added InvoiceReviewThrottlesAlarm (AWS::CloudWatch::Alarm)",
        f"{template}: added InvoiceReviewDeliveryFailuresAlarm (AWS::CloudWatch::Alarm)",
        f"{template}: changed InvokeFunctionsPolicy",
        f"{template}: changed StackDashboard",
        f"{template}: {summary(registry)}",
    ]
    text = template.read_text(encoding="utf-8")
    assert sync_two_pipelines(template, capsys) == [f"{template}: already {summary(registry)}"]
    assert template.read_text(encoding="utf-8") == text
    assert check(template, registry, FUNCTIONS) == []
    assert cfn_lint(text) == []
    assert text.count("Handler: phases.handler") == sum(len(pipeline.phase_names) for pipeline in registry)
    for name in ("document-intake-fetch", "invoice-review-fetch", "document-intake-publish", "invoice-review-publish"):
        assert f'FunctionName: !Sub "${{AWS::StackName}}-{name}"' in text


def test_sam_validate_lint_accepts_the_template_with_two_pipelines(
    sam_cli: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = copy_of_template(tmp_path)
    sync_two_pipelines(template, capsys)
    result = subprocess.run(
        [str(sam_cli), "validate", "--lint", "--template", str(template)],
        cwd=ROOT,
        env={**os.environ, "SAM_CLI_TELEMETRY": "0"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr


def test_a_removed_phase_is_removed_with_its_role_and_log_group(tmp_path: Path) -> None:
    template = copy_of_template(tmp_path)
    registry = load_registry("tests.template.registries:WITHOUT_PUBLISH", FUNCTIONS)
    changed = sync(template, registry)
    assert [line for line in changed if "DocumentIntake" in line or "Invoke" in line] == [
        "changed DocumentIntakeErrorsAlarm",
        "changed DocumentIntakeThrottlesAlarm",
        "changed DocumentIntakeDeliveryFailuresAlarm",
        "changed InvokeFunctionsPolicy",
        "removed DocumentIntakePublishFunction (AWS::Serverless::Function)",
        "removed DocumentIntakePublishRole (AWS::IAM::Role)",
        "removed DocumentIntakePublishLogGroup (AWS::Logs::LogGroup)",
    ]
    assert check(template, registry, FUNCTIONS) == []


def test_the_section_reads_back_as_the_resources_it_was_written_from() -> None:
    registry = load_registry(TWO_PIPELINES, FUNCTIONS)
    assert section.resources_of(render(registry)) == resources.generated(registry)


@pytest.mark.parametrize(
    "value",
    ["yes", "No", "on", "null", "123", "1.5", "a: b", "# not a comment", "-x", "x:", "${AWS::Region}", "", "it's", "é"],
)
def test_strings_yaml_would_read_otherwise_are_quoted(value: str) -> None:
    data: dict[str, Any] = {"Key": value, "List": [value, {"Ref": "X"}], "If": {"Fn::If": ["C", value, {"Ref": "Y"}]}}
    assert cfnyaml.load(cfnyaml.dump(data)) == data


def test_intrinsics_are_written_with_their_short_tags() -> None:
    data = {
        "A": {"Ref": "Thing"},
        "B": {"Fn::GetAtt": ["Thing", "Arn"]},
        "C": {"Fn::Sub": "${AWS::StackName}-x"},
        "D": {"Fn::If": ["Cond", {"Ref": "AWS::NoValue"}, {"Ref": "Other"}]},
        "E": {"Fn::If": ["Cond", {"Statement": [{"Effect": "Allow"}]}, {"Ref": "AWS::NoValue"}]},
    }
    assert cfnyaml.dump(data) == (
        "A: !Ref Thing\n"
        "B: !GetAtt Thing.Arn\n"
        'C: !Sub "${AWS::StackName}-x"\n'
        "D: !If [Cond, !Ref AWS::NoValue, !Ref Other]\n"
        "E: !If\n"
        "  - Cond\n"
        "  - Statement:\n"
        "      - Effect: Allow\n"
        "  - !Ref AWS::NoValue\n"
    )
    assert cfnyaml.load(cfnyaml.dump(data)) == data


def test_a_pipeline_of_more_than_ten_phases_gets_an_alarm_per_ten() -> None:
    """An alarm's math expression reads at most 10 metrics (CloudWatch's limit)."""
    long: Pipeline[Any] = Pipeline("long")
    for index in range(23):
        long.phase(name=f"step{index}")(lambda ctx: Next("step0", ctx.state))
    alarms = resources.phase_alarms(long, resources.ERRORS)
    assert list(alarms) == ["LongErrorsAlarm", "LongErrorsAlarm2", "LongErrorsAlarm3"]
    assert resources.alarm_ids(long, resources.THROTTLES) == [
        "LongThrottlesAlarm",
        "LongThrottlesAlarm2",
        "LongThrottlesAlarm3",
    ]
    summed = [
        [metric["Label"] for metric in alarm["Properties"]["Metrics"] if "MetricStat" in metric]
        for alarm in alarms.values()
    ]
    assert [len(labels) for labels in summed] == [10, 10, 3]
    assert [label for labels in summed for label in labels] == long.phase_names


def test_a_template_without_a_section_gets_one_at_the_end_of_its_resources() -> None:
    text = "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n\n# outputs\nOutputs:\n  X:\n    Value: y\n"
    result = synced(text, PIPELINES)
    assert result.startswith("Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n\n  # >>> cairn template sync")
    assert result.endswith("  # <<< cairn template sync\n\n# outputs\nOutputs:\n  X:\n    Value: y\n")
    loaded = cfnyaml.load(result)
    assert set(loaded["Resources"]) == {"Topic", *resources.generated(PIPELINES)}
    assert synced(result, PIPELINES) == result


def test_a_generated_resource_written_by_hand_is_refused() -> None:
    text = "Resources:\n  DocumentIntakeFetchFunction:\n    Type: AWS::SNS::Topic\n"
    with pytest.raises(TemplateError, match="DocumentIntakeFetchFunction written by hand outside the generated"):
        synced(text, PIPELINES)


def test_two_pipelines_whose_resource_names_would_meet_are_refused() -> None:
    """Pipelines ``a`` and ``A`` would both have the errors alarm AErrorsAlarm: an error, never an overwrite."""

    def phase(ctx: PhaseContext[Any]) -> Next:
        return Next("x", ctx.state)

    first: Pipeline[Any] = Pipeline("a")
    first.phase(name="x")(phase)
    second: Pipeline[Any] = Pipeline("A")
    second.phase(name="y")(phase)
    with pytest.raises(TemplateError, match="AErrorsAlarm"):
        resources.generated(PipelineRegistry([first, second]))
