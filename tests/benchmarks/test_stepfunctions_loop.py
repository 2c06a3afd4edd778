"""The Step Functions driver's cost per phase is read from the shipped state machine, not written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.cost import PRICES, stepfunctions_driver_extra
from benchmarks.stepfunctions_loop import ASL, lambda_tasks, loop_states
from cairn.features.metering import SFN_TRANSITIONS_PER_RUN


def test_a_phase_run_on_the_step_functions_driver_enters_two_states_and_one_lambda_task() -> None:
    assert loop_states() == ["RunPhase", "AfterPhase"]
    assert lambda_tasks() == 1  # the phase's own invoke: the phase reported what runs next, nothing resolves it
    assert len(loop_states()) == SFN_TRANSITIONS_PER_RUN  # what a job's usage meters on this driver
    extra = 2 * PRICES["stepfunctions_standard_transition"]
    assert stepfunctions_driver_extra() == pytest.approx(extra) == 50.0  # dollars per million phase runs


def test_a_loop_that_never_comes_back_is_refused(tmp_path: Path) -> None:
    machine = json.loads(ASL.read_text())
    machine["States"]["AfterPhase"]["Choices"] = [
        choice for choice in machine["States"]["AfterPhase"]["Choices"] if "Payload.next" not in json.dumps(choice)
    ]
    machine["States"]["AfterPhase"]["Default"] = "NothingToRun"  # the execution ends
    broken = tmp_path / "pipeline.asl.json"
    broken.write_text(json.dumps(machine))
    with pytest.raises(ValueError, match="does not come back"):
        loop_states(broken)
