"""Who did what, through the path a user takes: every operator action sent with `cairn jobs` (start, pause,
resume, cancel, retry, signal, rerun, start over) is an entry of kind "action" in the job's log naming the caller,
against a real HTTP server in front of the API function on the local stack (moto in-process)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.functional.jobs_server import JobsServer
from tests.functional.test_jobs_cli import BOB, run_cli, start
from tests.functional.test_jobs_cli_waits import stack, waiting

__all__ = ["stack"]  # the fixture with a pipeline that waits for a signal

CALLER = "arn:aws:iam::123456789012:user/operator"


def log(capsys: pytest.CaptureFixture[str], job_id: str) -> list[dict[str, Any]]:
    status, out, err = run_cli(capsys, "log", job_id, "--json")
    assert status == 0, err
    entries: list[dict[str, Any]] = json.loads(out)["entries"]
    return entries


def actions(capsys: pytest.CaptureFixture[str], job_id: str) -> list[tuple[str, str | None]]:
    return [(entry["message"], entry.get("actor")) for entry in log(capsys, job_id) if entry["kind"] == "action"]


def test_pause_resume_and_cancel_each_name_the_caller_in_the_log(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_IDENTITY", CALLER)  # the IAM principal the local server reports as the caller
    start(capsys, "audited")
    assert run_cli(capsys, "pause", "audited")[0] == 0
    assert run_cli(capsys, "pause", "audited")[0] == 0  # already paused: logged once
    assert run_cli(capsys, "retry", "audited")[0] == 0
    assert run_cli(capsys, "cancel", "audited")[0] == 0

    assert actions(capsys, "audited") == [
        ('Job started at phase "fetch" by ' + CALLER, CALLER),
        ("Job paused by " + CALLER, CALLER),
        ('Job retried (resume) at phase "fetch" by ' + CALLER, CALLER),
        ("Job cancelled by " + CALLER, CALLER),
    ]
    timestamps = [entry["timestamp"] for entry in log(capsys, "audited") if entry["kind"] == "action"]
    assert timestamps == sorted(timestamps)
    status, out, err = run_cli(capsys, "log", "audited")
    assert status == 0, err
    assert "Job cancelled by " + CALLER in out


def test_another_callers_action_is_refused_and_never_logged(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    start(capsys, "owned")  # the server's own identity starts it
    monkeypatch.setenv("CAIRN_IDENTITY", BOB)
    status, _, err = run_cli(capsys, "pause", "owned")
    assert status == 1
    assert "was not found" in err  # bob sees only bob's jobs
    monkeypatch.delenv("CAIRN_IDENTITY")
    assert [message for message, _ in actions(capsys, "owned")] == ['Job started at phase "fetch" by ' + jobs.identity]


def test_a_signal_is_logged_with_its_sender_and_stays_in_the_log_after_the_job_runs_on(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_IDENTITY", CALLER)
    waiting(jobs, capsys, "signalled")
    assert run_cli(capsys, "signal", "signalled", "approval", "--payload", '{"approved": true}')[0] == 0
    assert ('Signal "approval" delivered by ' + CALLER, CALLER) in actions(capsys, "signalled")
    jobs.run()  # the phase after the wait runs and commits: the entry moves into its history, once

    entries = log(capsys, "signalled")
    messages = [entry["message"] for entry in entries]
    assert messages.count('Signal "approval" delivered by ' + CALLER) == 1
    assert messages.index('Signal "approval" delivered by ' + CALLER) < len(messages) - 1  # not last any more
