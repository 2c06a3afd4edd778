"""``cairn jobs retry|restart|cancel`` on every job a selection matches: bounded, previewed, each job acted on once.

Through the path a user takes: the CLI against a real HTTP server on 127.0.0.1 in front of the API
function on the local stack.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from cairn.core.registry import PipelineRegistry
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES
from tests.aws import dynamodb_client, s3_client, sqs_client
from tests.functional.jobs_server import JobsServer
from tests.functional.pipelines import flaky_pipeline
from tests.functional.test_jobs_cli import INVOICE, run_cli, show_json
from tests.support import FakeClock

BROKEN: set[str] = set()
FAILED = [f"flaky-{number:02d}" for number in range(6)]


@pytest.fixture
def stack(stack_clock: FakeClock) -> Iterator[LocalStack]:
    """The bundle's pipelines and ``flaky`` (which fails while a job's id is in BROKEN) in-process on moto."""
    BROKEN.clear()
    with mock_aws():
        yield LocalStack.create(
            PipelineRegistry([*PIPELINES, flaky_pipeline(BROKEN)]),
            dynamodb=dynamodb_client(),
            s3=s3_client(),
            sqs=sqs_client(),
            clock=stack_clock,
        )


@pytest.fixture
def failed_jobs(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Six ``flaky`` jobs in error, one complete ``flaky`` job and one complete job of another pipeline."""
    BROKEN.update(FAILED)
    for job_id in [*FAILED, "flaky-fine"]:
        status, _, err = run_cli(capsys, "start", "flaky", "--id", job_id, "--state", json.dumps({"id": job_id}))
        assert status == 0, err
    status, _, err = run_cli(capsys, "start", "document-intake", "--id", "other", "--state", INVOICE)
    assert status == 0, err
    jobs.run()
    assert {show_json(capsys, job_id)["status"] for job_id in FAILED} == {"error"}
    BROKEN.clear()  # the upstream service is back
    return FAILED


def statuses(capsys: pytest.CaptureFixture[str], job_ids: list[str]) -> dict[str, str]:
    return {job_id: show_json(capsys, job_id)["status"] for job_id in job_ids}


def retries_logged(capsys: pytest.CaptureFixture[str], job_id: str) -> int:
    status, out, err = run_cli(capsys, "log", job_id, "--json")
    assert status == 0, err
    entries: list[dict[str, Any]] = json.loads(out)["entries"]
    return sum(1 for entry in entries if str(entry.get("message", "")).startswith("Job retried"))


def test_retry_of_every_failed_job_of_a_pipeline_retries_each_once_and_they_complete(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    status, out, err = run_cli(capsys, "retry", "--status", "error", "--pipeline", "flaky", "--since", "1h")

    assert status == 0, err
    lines = out.splitlines()
    assert sorted(line.split(" ", 1)[0] for line in lines) == sorted(failed_jobs)
    assert all(": running" in line or ": idle" in line for line in lines), out
    assert "Retried 6 of 6 jobs." in err
    jobs.run()
    assert statuses(capsys, [*failed_jobs, "flaky-fine", "other"]) == {
        **dict.fromkeys(failed_jobs, "complete"),
        "flaky-fine": "complete",
        "other": "complete",
    }
    assert {job_id: retries_logged(capsys, job_id) for job_id in failed_jobs} == dict.fromkeys(failed_jobs, 1)


def test_a_dry_run_lists_the_jobs_it_would_retry_and_changes_none(
    capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    status, out, err = run_cli(capsys, "retry", "--status", "error", "--pipeline", "flaky", "--dry-run")

    assert status == 0, err
    assert sorted(line.split()[0] for line in out.splitlines()) == sorted(failed_jobs)
    assert all(line.split()[1:] == ["flaky", "error"] for line in out.splitlines())
    assert "Would retry 6 jobs; nothing was done (--dry-run)." in err
    assert set(statuses(capsys, failed_jobs).values()) == {"error"}

    status, out, err = run_cli(capsys, "retry", "--status", "error", "--dry-run", "--json")
    assert status == 0, err
    preview = json.loads(out)
    assert preview["dryRun"] is True
    assert sorted(job["jobId"] for job in preview["jobs"]) == sorted(failed_jobs)


def test_more_jobs_than_the_limit_is_refused_before_any_is_touched(
    capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    status, out, err = run_cli(capsys, "retry", "--status", "error", "--max", "5")

    assert status == 2
    assert out == ""
    assert "more than 5 jobs match: narrow the selection, or raise --max" in err
    assert "nothing was done" in err
    assert set(statuses(capsys, failed_jobs).values()) == {"error"}

    status, _, err = run_cli(capsys, "retry", "--status", "error", "--max", "6")
    assert status == 0, err


def test_a_job_the_api_refuses_is_reported_and_the_others_go_on(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    status, out, err = run_cli(capsys, "retry", "--pipeline", "flaky", "--json")

    assert status == 1
    results = {result["jobId"]: result for result in json.loads(out)["results"]}
    assert set(results) == {*failed_jobs, "flaky-fine"}
    assert results["flaky-fine"]["ok"] is False
    assert "HTTP 409" in results["flaky-fine"]["error"]
    assert all(results[job_id]["ok"] and results[job_id]["job"]["jobId"] == job_id for job_id in failed_jobs)
    assert "Retried 6 of 7 jobs; 1 refused." in err


def test_a_second_bulk_retry_finds_nothing_left_to_retry(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    assert run_cli(capsys, "retry", "--status", "error", "--pipeline", "flaky")[0] == 0
    jobs.run()

    status, out, err = run_cli(capsys, "retry", "--status", "error", "--pipeline", "flaky")

    assert status == 0, err
    assert out == ""
    assert "Retried 0 of 0 jobs." in err
    assert {job_id: retries_logged(capsys, job_id) for job_id in failed_jobs} == dict.fromkeys(failed_jobs, 1)


def test_cancel_and_restart_take_a_selection_too(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    status, _, err = run_cli(capsys, "restart", "--prefix", "flaky-0", "--status", "error")
    assert status == 0, err
    assert "Restarted 6 of 6 jobs." in err
    assert run_cli(capsys, "cancel", "--prefix", "flaky-0")[0] == 0
    assert set(statuses(capsys, failed_jobs).values()) == {"cancelled"}
    assert statuses(capsys, ["flaky-fine"]) == {"flaky-fine": "complete"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("retry",), "give a job ID, or select jobs with --status"),
        (("retry", "job-1", "--status", "error"), "give a job ID or a selection"),
        (("cancel", "job-1", "--dry-run"), "--dry-run goes with a selection"),
        (("retry", "--status", "error", "--state", "{}"), "--state goes with one job ID"),
    ],
)
def test_a_selection_given_wrongly_is_a_usage_error(
    no_api: str, capsys: pytest.CaptureFixture[str], arguments: tuple[str, ...], message: str
) -> None:
    status, out, err = run_cli(capsys, *arguments)

    assert (status, out) == (2, "")
    assert message in err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("retry", "--status", "error", "--max", "0"), "must be from 1 to 10000"),
        (("retry", "--status", "error", "--max", "10001"), "must be from 1 to 10000"),
        (("cancel", "--since", "yesterday"), "not a time"),
    ],
)
def test_a_bad_option_value_is_argparses_usage_error(
    no_api: str, capsys: pytest.CaptureFixture[str], arguments: tuple[str, ...], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        run_cli(capsys, *arguments)

    assert exited.value.code == 2
    assert message in capsys.readouterr().err
