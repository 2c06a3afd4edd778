"""`cairn jobs list --stalled`, `cairn jobs show` of a stalled job, `cairn jobs count` and `cairn jobs nudge` end to
end: the real command line against a real HTTP server on 127.0.0.1 in front of the API function on the local stack."""

from __future__ import annotations

import json
import re

import pytest

from tests.functional.jobs_server import JobsServer
from tests.functional.test_jobs_cli import INVOICE, error_line, run_cli, show_json
from tests.support import FakeClock

IDLE_SECONDS = 120


def stalled(jobs: JobsServer, capsys: pytest.CaptureFixture[str], clock: FakeClock, job_id: str) -> int:
    """Start ``job_id``, run its first phase, lose the invoke of the next and wait out the idle time; its sequence."""
    status, _, err = run_cli(capsys, "start", "document-intake", "--id", job_id, "--state", INVOICE)
    assert status == 0, err
    jobs.step()
    jobs.stack.invoker.queue.clear()
    clock.advance(IDLE_SECONDS + 1)
    sequence: int = show_json(capsys, job_id)["sequence"]
    return sequence


def test_list_stalled_show_and_count_name_the_stalled_job_and_nudge_moves_it_once(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], stack_clock: FakeClock
) -> None:
    status, _, err = run_cli(capsys, "start", "document-intake", "--id", "done", "--state", INVOICE)
    assert status == 0, err
    jobs.run()
    sequence = stalled(jobs, capsys, stack_clock, "stuck")

    status, out, _ = run_cli(capsys, "list", "--stalled")
    assert status == 0
    assert [row.split()[:4] for row in out.splitlines()[1:]] == [["stuck", "document-intake", "running", "(stalled)"]]
    [request] = jobs.requests_to("/jobs")[-1:]
    assert request.target == "/jobs?costs=true&stalled=true"
    status, out, _ = run_cli(capsys, "list")
    rows = {row.split()[0]: row for row in out.splitlines()[1:]}
    assert "(stalled)" in rows["stuck"]
    assert "(stalled)" not in rows["done"]

    status, out, _ = run_cli(capsys, "show", "stuck")
    assert status == 0
    assert re.search(r"^Stalled:\s+since .*: no worker holds it$", out, flags=re.MULTILINE), out
    assert re.search(
        rf"^Next:\s+the sweep will revive: schedule split again at sequence {sequence} by .*; cairn jobs nudge does it "
        "now$",
        out,
        flags=re.MULTILINE,
    ), out
    status, out, _ = run_cli(capsys, "count")
    assert re.search(r"^  of which stalled\s+1$", out, flags=re.MULTILINE), out

    status, out, err = run_cli(capsys, "nudge", "stuck")
    assert (status, err) == (0, "")
    assert out == f"stuck: split scheduled again at sequence {sequence}\n"
    status, out, _ = run_cli(capsys, "nudge", "stuck", "--json")  # sent again before the advance ran
    assert status == 0
    assert json.loads(out) == {"jobId": "stuck", "phase": "split", "sequence": sequence, "first": False}

    jobs.run()
    done = show_json(capsys, "stuck")
    assert done["status"] == "complete"
    assert [phase["phase"] for phase in done["phases"]] == ["fetch", "split", "extract", "publish"]
    status, _, err = run_cli(capsys, "nudge", "stuck")
    assert status == 1
    assert (
        error_line(err) == 'cairn: error: Job "stuck" is not stalled: it is complete, not running (HTTP 409 conflict)'
    )
