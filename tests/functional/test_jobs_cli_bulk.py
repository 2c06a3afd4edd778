"""``cairn jobs retry|restart|cancel`` on every job a selection matches, run on the server: bounded, previewed,
each job acted on once, followed to the end (or not: ``--no-wait``, then ``cairn jobs bulk ID``).

Through the path a user takes: the CLI against a real HTTP server on 127.0.0.1 in front of the API
function on the local stack.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from cairn.client import bulk
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


@pytest.fixture
def running(jobs: JobsServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[JobsServer]:
    """The stack's functions run in the background (as deployed: the bulk goes on whatever the command does)."""
    monkeypatch.setattr(bulk, "POLL_SECONDS", 0.02)
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            jobs.run()
            stop.wait(0.02)

    worker = threading.Thread(target=work, name="stack", daemon=True)
    worker.start()
    yield jobs
    stop.set()
    worker.join(timeout=30)


def bulk_id_of(err: str) -> str:
    [line] = [line for line in err.splitlines() if line.startswith("Bulk b-")]
    return line.split()[1].rstrip(":")


def test_retry_of_every_failed_job_runs_on_the_server_and_each_is_retried_once(
    running: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    status, out, err = run_cli(capsys, "retry", "--status", "error", "--pipeline", "flaky", "--since", "1h")

    assert status == 0, err
    lines = out.splitlines()
    assert sorted(line.split(":", 1)[0] for line in lines) == sorted(failed_jobs)
    assert all(": done, now " in line for line in lines), out
    assert "Retried 6 of 6 jobs." in err
    running.run()
    assert statuses(capsys, [*failed_jobs, "flaky-fine", "other"]) == {
        **dict.fromkeys(failed_jobs, "complete"),
        "flaky-fine": "complete",
        "other": "complete",
    }
    assert {job_id: retries_logged(capsys, job_id) for job_id in failed_jobs} == dict.fromkeys(failed_jobs, 1)
    status, out, err = run_cli(capsys, "bulk", bulk_id_of(err))  # the outcomes follow the jobs
    assert status == 0, err
    assert sorted(out.splitlines()) == sorted(f"{job_id}: done, now complete" for job_id in failed_jobs)
    assert "6 done, 0 refused, 0 errored, 0 pending (finished)" in err


def test_no_wait_returns_the_bulk_at_once_and_it_runs_on_without_the_command(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    status, out, err = run_cli(capsys, "retry", "--status", "error", "--no-wait")

    assert status == 0, err
    bulk_id = out.strip()
    assert f"cairn jobs bulk {bulk_id}" in err
    assert set(statuses(capsys, failed_jobs).values()) == {"error"}
    status, out, err = run_cli(capsys, "bulk", bulk_id, "--json")
    assert json.loads(out)["bulk"]["pending"] == 6
    BROKEN.add(failed_jobs[0])  # it fails again
    jobs.run()

    status, out, err = run_cli(capsys, "bulk", bulk_id, "--json")
    shown = json.loads(out)
    assert (shown["bulk"]["done"], shown["bulk"]["finished"]) == (6, True)
    now = {job["jobId"]: (job["outcome"], job["status"]) for job in shown["jobs"]}
    assert now == {failed_jobs[0]: ("done", "error"), **dict.fromkeys(failed_jobs[1:], ("done", "complete"))}


def test_a_dry_run_lists_the_jobs_it_would_retry_and_changes_none(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    status, out, err = run_cli(capsys, "retry", "--status", "error", "--pipeline", "flaky", "--dry-run")

    assert status == 0, err
    assert sorted(out.splitlines()) == sorted(failed_jobs)
    assert "Would retry 6 jobs; nothing was done (--dry-run)." in err
    jobs.run()
    assert set(statuses(capsys, failed_jobs).values()) == {"error"}

    status, out, err = run_cli(capsys, "retry", "--status", "error", "--dry-run", "--json")
    assert status == 0, err
    preview = json.loads(out)
    assert preview["dryRun"] is True
    assert sorted(preview["jobIds"]) == sorted(failed_jobs)


def test_more_jobs_than_the_limit_is_refused_before_any_is_touched(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    status, out, err = run_cli(capsys, "retry", "--status", "error", "--max", "5", "--no-wait")

    assert status == 2
    assert out == ""
    assert "more than 5 jobs match: narrow the selection, or raise --max" in err
    assert "nothing was done" in err
    jobs.run()
    assert set(statuses(capsys, failed_jobs).values()) == {"error"}

    status, _, err = run_cli(capsys, "retry", "--status", "error", "--max", "6", "--no-wait")
    assert status == 0, err


def test_a_job_the_server_refuses_is_reported_and_the_others_go_on(
    running: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    status, out, err = run_cli(capsys, "retry", "--pipeline", "flaky", "--json")

    assert status == 1
    shown = json.loads(out)
    results = {job["jobId"]: job for job in shown["jobs"]}
    assert set(results) == {*failed_jobs, "flaky-fine"}
    assert results["flaky-fine"]["outcome"] == "refused"
    assert "complete" in results["flaky-fine"]["detail"]
    assert all(results[job_id]["outcome"] == "done" for job_id in failed_jobs)
    assert "Retried 6 of 7 jobs; 1 refused." in err


def test_a_second_bulk_retry_finds_nothing_left_to_retry(
    running: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    assert run_cli(capsys, "retry", "--status", "error", "--pipeline", "flaky")[0] == 0
    running.run()

    status, out, err = run_cli(capsys, "retry", "--status", "error", "--pipeline", "flaky")

    assert status == 0, err
    assert out == ""
    assert "Retried 0 of 0 jobs." in err
    assert {job_id: retries_logged(capsys, job_id) for job_id in failed_jobs} == dict.fromkeys(failed_jobs, 1)


def test_cancel_and_restart_take_a_selection_too(
    running: JobsServer, capsys: pytest.CaptureFixture[str], failed_jobs: list[str]
) -> None:
    BROKEN.update(failed_jobs)  # restarted, they fail again
    status, _, err = run_cli(capsys, "restart", "--prefix", "flaky-0", "--status", "error")
    assert status == 0, err
    assert "Restarted 6 of 6 jobs." in err
    running.run()
    assert set(statuses(capsys, failed_jobs).values()) == {"error"}

    status, out, err = run_cli(capsys, "cancel", "--prefix", "flaky")

    assert status == 1, err  # flaky-fine is complete: refused
    assert "Cancelled 6 of 7 jobs; 1 refused." in err
    assert "flaky-fine: refused: " in out
    assert set(statuses(capsys, failed_jobs).values()) == {"cancelled"}
    assert statuses(capsys, ["flaky-fine"]) == {"flaky-fine": "complete"}


def test_an_unknown_bulk_is_an_error(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "bulk", "b-nothing")

    assert status != 0
    assert out == ""
    assert "b-nothing" in err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("retry",), "give a job ID, or select jobs with --status"),
        (("retry", "job-1", "--status", "error"), "give a job ID or a selection"),
        (("cancel", "job-1", "--dry-run"), "--dry-run goes with a selection"),
        (("retry", "--status", "error", "--state", "{}"), "--state goes with one job ID"),
        (("retry", "job-1", "--no-wait"), "--no-wait goes with a selection"),
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
