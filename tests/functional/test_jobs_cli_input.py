"""The job's input, through the path a user takes: ``GET /jobs/{id}?includeInput=true`` and
``cairn jobs show ID --input``, against a real HTTP server in front of the API function on the local stack."""

from __future__ import annotations

import json

import pytest

from document_intake.state import IntakeState
from tests.functional.jobs_server import JobsServer
from tests.functional.test_jobs_cli import run_cli, show_json


def test_show_prints_the_input_a_start_over_uses_only_when_asked(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    state = {"document": "invoice.txt"}
    assert run_cli(capsys, "start", "document-intake", "--id", "with-input", "--state", json.dumps(state))[0] == 0
    jobs.run()

    stored = IntakeState.model_validate(state).model_dump(mode="json")  # as the state model admitted it
    assert "input" not in show_json(capsys, "with-input")  # not read unless asked
    assert show_json(capsys, "with-input", "--input")["input"] == stored
    status, out, err = run_cli(capsys, "show", "with-input", "--input")
    assert status == 0, err
    assert out.split("Input (what Start over uses):\n", 1)[1].startswith(json.dumps(stored, indent=2))

    fixed = {"document": "contract.txt"}
    assert run_cli(capsys, "restart", "with-input", "--state", json.dumps(fixed))[0] == 0
    jobs.run()
    assert show_json(capsys, "with-input", "--input")["input"]["document"] == "contract.txt"  # the new input
