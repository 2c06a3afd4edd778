"""``cairn template check --config-env NAME``: what ``sam deploy --config-env NAME`` would be refused for, said first.

The shipped samconfig.toml's ``prod`` environment sets ``Stage=prod`` and leaves the region and the alarm target
for the deployer: the check names both, and passes once they are filled in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bundle.templating.saved_settings import parameter_overrides, problems
from cairn.cli import main
from tests.template.cfn import ROOT, TEMPLATE, load_yaml_template
from tests.template.test_template_check import FUNCTIONS, bundle_with

SHIPPED = (ROOT / "samconfig.toml").read_text(encoding="utf-8")
PROD_OVERRIDES = 'parameter_overrides = "Architecture=arm64 Stage=prod"'
REGION = 'region = "REPLACE-WITH-YOUR-REGION"'


def check_env(
    tmp_path: Path, samconfig: str, *environments: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[str]]:
    """``cairn template check --config-env ...`` on a copy of the bundle with ``samconfig`` as its samconfig.toml."""
    template = bundle_with(tmp_path, TEMPLATE.read_text(encoding="utf-8"))
    (tmp_path / "samconfig.toml").write_text(samconfig, encoding="utf-8")
    options = [option for environment in environments for option in ("--config-env", environment)]
    status = main(["template", "check", "--template", str(template), "--functions", str(FUNCTIONS), *options])
    captured = capsys.readouterr()
    return status, [line.split(": ", 1)[1] for line in captured.err.splitlines()]


def saved_problems(tmp_path: Path, samconfig: str, *environments: str) -> list[str]:
    """What the check says of ``environments`` of ``samconfig`` against this template, without the rest of it."""
    path = tmp_path / "samconfig.toml"
    path.write_text(samconfig, encoding="utf-8")
    return problems(load_yaml_template(), path, environments)


def test_the_shipped_prod_environment_names_what_to_fill_in(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert PROD_OVERRIDES in SHIPPED
    assert REGION in SHIPPED
    status, lines = check_env(tmp_path, SHIPPED, "prod", capsys=capsys)
    assert status == 1
    assert lines == [
        "samconfig.toml [prod]: region is still the placeholder REPLACE-WITH-YOUR-REGION: name the region to deploy to",
        "samconfig.toml [prod]: sam deploy --config-env prod would be refused: Stage=prod needs AlarmEmail or "
        "AlarmTopicArn, or no alarm pages anyone: set one in samconfig.toml's prod parameter_overrides "
        "(docs/OPERATIONS.md, the day-one checklist).",
    ]


@pytest.mark.parametrize(
    "target", ["AlarmEmail=oncall@example.com", "AlarmTopicArn=arn:aws:sns:eu-west-1:123456789012:pager"]
)
def test_a_filled_in_prod_environment_passes(tmp_path: Path, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    filled = SHIPPED.replace(REGION, 'region = "eu-west-1"').replace(
        PROD_OVERRIDES, f'parameter_overrides = "Architecture=arm64 Stage=prod {target}"'
    )
    status, lines = check_env(tmp_path, filled, "prod", "default", capsys=capsys)
    assert (status, lines) == (0, [])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ('"Stage=staging"', "Parameter 'Stage' must be one of AllowedValues"),
        ('"Nonsense=1"', "Parameters: [Nonsense] do not exist in the template"),
        (
            '"Stage=prod AlarmEmail=REPLACE-WITH-YOUR-ADDRESS"',
            "AlarmEmail is still the placeholder REPLACE-WITH-YOUR-ADDRESS",
        ),
        ('"Stage=prod AlarmEmail=\'unclosed"', "parameter_overrides does not parse"),
        ('"Stage"', "parameter_overrides does not parse: 'Stage' is not Key=Value"),
        ("7", "parameter_overrides does not parse: 7 is neither a string nor a list"),
    ],
)
def test_a_saved_value_the_deploy_would_refuse_is_named(tmp_path: Path, overrides: str, message: str) -> None:
    saved = f"version = 0.1\n[staging.deploy.parameters]\nparameter_overrides = {overrides}\n"
    lines = saved_problems(tmp_path, saved, "staging")
    assert any(message in line for line in lines), lines


def test_an_unknown_environment_or_an_unreadable_file_is_named(tmp_path: Path) -> None:
    lines = saved_problems(tmp_path, SHIPPED, "staging")
    assert lines == ["samconfig.toml [staging]: no such environment (it has default, prod)"]
    (line,) = saved_problems(tmp_path, "not = [toml", "prod")
    assert line.startswith("samconfig.toml does not parse:")


def test_the_deploy_table_s_overrides_replace_the_global_ones_as_sam_reads_them(tmp_path: Path) -> None:
    saved = (
        'version = 0.1\n[live.global.parameters]\nparameter_overrides = "Stage=prod"\n'
        '[live.deploy.parameters]\nparameter_overrides = ["Stage=prod", "AlarmEmail=a@example.com"]\n'
    )
    assert saved_problems(tmp_path, saved, "live") == []
    assert "AlarmEmail or AlarmTopicArn" in saved_problems(tmp_path, saved.split("[live.deploy")[0], "live")[0]


def test_overrides_parse_as_sam_writes_them() -> None:
    assert parameter_overrides('A=1 B="two words" C=') == {"A": "1", "B": "two words", "C": ""}
    assert parameter_overrides(["A=1", "B=x=y"]) == {"A": "1", "B": "x=y"}
    assert parameter_overrides(None) == {}
