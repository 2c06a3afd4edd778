"""Each check `make validate` runs on the template and the state machine bites on a planted mistake.

That the shipped template.yaml and statemachine/pipeline.asl.json pass sam validate --lint, cfn-lint (the state
machine as deployed too) and statelint is `make validate`'s own work, which `make test` runs before pytest."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]

from tests.template.asl import VARIABLE, variables, wrapped
from tests.template.cfn import ROOT, STATE_MACHINE, TEMPLATE, sam_template

# Informational checks too. A finding accepted on purpose is listed here by rule id with its
# reason; there are none: every stateful resource states its DeletionPolicy, and so on.
CFN_LINT_CONFIG = ManualArgs(regions=["us-east-1"], include_checks=["I"])
ACCEPTED_FINDINGS: dict[str, str] = {}


def cfn_lint(text: str) -> list[str]:
    """cfn-lint's findings on a template, as ``RULE message (line N)``, less the accepted ones."""
    return [
        f"{match.rule.id} {match.message} (line {match.linenumber})"
        for match in lint(text, config=CFN_LINT_CONFIG)
        if match.rule.id not in ACCEPTED_FINDINGS
    ]


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, "SAM_CLI_TELEMETRY": "0"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def definition() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(STATE_MACHINE.read_text(encoding="utf-8"))
    return loaded


# -- sam validate --lint


def test_sam_validate_lint_rejects_a_misspelt_property(sam_cli: Path, tmp_path: Path) -> None:
    broken = tmp_path / "template.yaml"
    broken.write_text(TEMPLATE.read_text(encoding="utf-8").replace("ExpirationInDays:", "ExpirationInDay:"))
    result = run([str(sam_cli), "validate", "--lint", "--template", str(broken)])
    assert result.returncode != 0
    assert "ExpirationInDay" in result.stdout + result.stderr


# -- cfn-lint


def test_cfn_lint_reports_a_broken_state_machine() -> None:
    template = wrapped()
    states = template["Resources"]["PipelineStateMachine"]["Properties"]["Definition"]["States"]
    first = next(iter(states.values()))
    first["Type"] = "Decide"
    assert any(finding.startswith("E3601") and "Decide" in finding for finding in cfn_lint(json.dumps(template)))


def test_the_wrapper_fills_every_substitution_of_the_definition() -> None:
    text = json.dumps(wrapped())
    assert VARIABLE.search(text) is None
    assert variables(STATE_MACHINE.read_text(encoding="utf-8")), "the definition names the scheduler by substitution"


def test_definition_substitutions_are_exactly_the_variables_of_the_definition() -> None:
    machine = sam_template()["Resources"]["PipelineStateMachine"]["Properties"]
    assert (ROOT / machine["DefinitionUri"]).resolve() == STATE_MACHINE
    assert set(machine["DefinitionSubstitutions"]) == variables(STATE_MACHINE.read_text(encoding="utf-8"))


# -- statelint


def test_statelint_rejects_a_transition_to_no_state(statelint: Path, tmp_path: Path) -> None:
    broken = definition()
    task = next(name for name, state in broken["States"].items() if "Next" in state)
    broken["States"][task]["Next"] = "Nowhere"
    path = tmp_path / "broken.asl.json"
    path.write_text(json.dumps(broken))
    result = run([str(statelint), str(path)])
    assert result.returncode != 0
    assert "Nowhere" in result.stdout + result.stderr


def test_the_package_ships_the_state_machine_of_the_template() -> None:
    """cairn.testing and cairn init read the package's copy; the template deploys statemachine/: one definition."""
    packaged = ROOT / "layers" / "cairn" / "cairn" / "aws" / "pipeline.asl.json"
    assert packaged.read_bytes() == STATE_MACHINE.read_bytes(), (
        "statemachine/pipeline.asl.json and the package's copy differ: copy statemachine/pipeline.asl.json over "
        "layers/cairn/cairn/aws/pipeline.asl.json"
    )
