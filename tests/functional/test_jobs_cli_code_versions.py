"""Which code each phase run ran, through the path a user takes: a deploy between a job's run and its rerun,
then ``cairn jobs show`` (and ``--json``) against a real HTTP server in front of the API function on the local
stack. The workers run in this process: ``CAIRN_CODE_VERSION`` names the code they run (cairn.core.versions)."""

from __future__ import annotations

import re

import pytest

from cairn.core.versions import VERSION_VARIABLE
from tests.functional.jobs_server import JobsServer
from tests.functional.test_jobs_cli import run_cli, show_json, start


def test_show_gives_each_runs_code_and_marks_the_rerun_after_a_deploy(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VERSION_VARIABLE, "build-41")
    start(capsys, "redeployed")
    jobs.run()
    monkeypatch.setenv(VERSION_VARIABLE, "build-42")  # a deploy: the next runs run the new code
    status, _, err = run_cli(capsys, "rerun", "redeployed", "--from", "extract")
    assert status == 0, err
    jobs.run()

    status, out, err = run_cli(capsys, "show", "redeployed")
    view = show_json(capsys, "redeployed")

    assert (status, err) == (0, "")
    ran = [(record["phase"], record["codeVersion"]) for record in view["phases"]]  # the view's newest runs
    assert ran[-4:] == [
        ("extract", "build-41"),
        ("publish", "build-41"),
        ("extract", "build-42"),
        ("publish", "build-42"),
    ]
    assert re.search(r"^  PHASE\s+ATTEMPT\s+OUTCOME\s+STARTED\s+DURATION\s+COST\s+CODE$", out, flags=re.MULTILINE)
    rows = re.findall(r"^  (fetch|split|extract|publish)\s.*?\s{2}(build-4\d(?: \(changed\))?)$", out, re.MULTILINE)
    assert len(rows) == len(ran)
    assert rows[-4:] == [
        ("extract", "build-41"),
        ("publish", "build-41"),
        ("extract", "build-42 (changed)"),  # the deploy came between the run and the rerun
        ("publish", "build-42 (changed)"),
    ]
