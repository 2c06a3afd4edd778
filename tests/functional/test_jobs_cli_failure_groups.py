"""``cairn jobs failures``: the caller's failed jobs grouped by exception type, phase and pipeline, through the API on
a loopback server, and ``cairn jobs list`` showing a failed job's error."""

from __future__ import annotations

import json

import pytest

from cairn.testing.api_events import LOCAL_IDENTITY
from tests.failure_seeds import Failed, seed_failure
from tests.functional.jobs_server import JobsServer
from tests.functional.test_jobs_cli import run_cli

INTAKE = "document-intake"


def seed(jobs: JobsServer) -> None:
    storage = jobs.stack.runtime.storage(LOCAL_IDENTITY)
    now = jobs.stack.runtime.clock()
    for number in range(2):
        seed_failure(storage, Failed(f"slow-{number}", INTAKE, "fetch", "TimeoutError", "took too long", now - number))
    seed_failure(storage, Failed("bad-1", INTAKE, "extract", "KeyError", "'total'\nmore", now - 5 * 3_600_000))


def test_failures_prints_the_groups_biggest_first(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    seed(jobs)

    status, out, err = run_cli(capsys, "failures")

    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["EXCEPTION", "PHASE", "PIPELINE", "JOBS", "NEWEST", "SAMPLE"]
    assert lines[1].split()[:4] == ["TimeoutError", "fetch", INTAKE, "2"]
    assert lines[1].endswith("took too long")
    assert lines[2].split()[:4] == ["KeyError", "extract", INTAKE, "1"]
    assert lines[2].endswith("'total'")

    status, out, err = run_cli(capsys, "failures", "--since", "1h", "--json")
    assert status == 0, err
    report = json.loads(out)
    assert [(group["type"], group["count"]) for group in report["groups"]] == [("TimeoutError", 2)]

    status, out, _ = run_cli(capsys, "list", "--status", "error")
    assert status == 0
    assert "KeyError in extract: 'total'" in out

    status, out, _ = run_cli(capsys, "list", "--error-type", "TimeoutError", "--error-phase", "fetch", "--json")
    assert status == 0
    assert sorted(job["jobId"] for job in json.loads(out)["jobs"]) == ["slow-0", "slow-1"]


def test_failures_says_so_when_there_is_none_and_refuses_a_bad_time(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run_cli(capsys, "failures", "--pipeline", INTAKE)
    assert (status, out.strip()) == (0, "No failed jobs in this range.")

    with pytest.raises(SystemExit) as refused:
        run_cli(capsys, "failures", "--since", "yesterday")
    assert refused.value.code == 2
    assert "not a time" in capsys.readouterr().err
