"""What a job saw, through the path a user takes: ``GET /jobs/{id}/states/{phase}``, ``GET /jobs/{id}/diff`` and
``cairn jobs state ID PHASE [--diff OTHER]``, against a real HTTP server in front of the API function on the local
stack. document-intake's ``fetch`` fills ``content``, ``split`` turns it into ``pages``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cairn.testing.api_events import http_api_event, iam_caller
from tests.functional.jobs_server import FUNCTION, JobsServer
from tests.functional.test_jobs_cli import error_line, run_cli, start


def state_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    status, out, err = run_cli(capsys, "state", *args, "--json")
    assert status == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


def test_each_phase_shows_the_state_it_was_entered_with(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    start(capsys, "seen-1")
    jobs.run()

    fetch = state_json(capsys, "seen-1", "fetch")
    assert fetch["jobId"] == "seen-1"
    assert fetch["phase"] == "fetch"
    assert fetch["state"]["document"] == "invoice.txt"
    assert fetch["state"]["content"] is None
    split = state_json(capsys, "seen-1", "split")
    assert split["state"]["content"]
    assert split["state"]["pages"] == []
    assert split["enteredAt"] >= fetch["enteredAt"]
    extract = state_json(capsys, "seen-1", "extract")
    assert extract["state"]["pages"]  # split's output

    status, out, err = run_cli(capsys, "state", "seen-1", "split")
    assert status == 0, err
    assert json.loads(out) == split["state"]  # the state itself, printed as JSON


def test_a_diff_lists_what_a_phase_changed_by_json_pointer(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "seen-2")
    jobs.run()

    diff = state_json(capsys, "seen-2", "split", "--diff", "fetch")
    assert diff["from"]["phase"] == "fetch"
    assert diff["to"]["phase"] == "split"
    changes = {change["path"]: change for change in diff["changes"]}
    assert changes["/content"]["change"] == "changed"
    assert changes["/content"]["before"] is None
    assert changes["/content"]["after"] == state_json(capsys, "seen-2", "split")["state"]["content"]
    assert "state" not in diff["from"]  # the states themselves are one GET each
    assert "/document" not in changes  # the same on both sides
    assert diff["truncated"] is False

    status, out, err = run_cli(capsys, "state", "seen-2", "split", "--diff", "fetch")
    assert status == 0, err
    assert out.splitlines()[0] == "From fetch to split:"
    assert any(line.startswith("~ /content: null -> ") for line in out.splitlines())

    same = state_json(capsys, "seen-2", "fetch", "--diff", "fetch")
    assert same["changes"] == []


def test_a_phase_not_entered_or_unknown_and_an_unknown_job_are_clear_errors(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "seen-3")  # queued, not run: only fetch has been entered

    status, _, err = run_cli(capsys, "state", "seen-3", "publish")
    assert status == 1
    assert "keeps no state for phase" in error_line(err)
    assert "publish" in err
    status, _, err = run_cli(capsys, "state", "seen-3", "no-such-phase")
    assert status == 1
    assert 'Unknown phase "no-such-phase"' in error_line(err)
    status, _, err = run_cli(capsys, "state", "nobody", "fetch")
    assert status == 1
    assert "was not found" in error_line(err)
    status, out, err = run_cli(capsys, "state", "seen-3", "split", "--diff", "x" * 300)
    assert (status, out) == (1, "")
    assert error_line(err) == (  # the API's refusal of the phase name (at most 64 characters), word for word
        "cairn: error: query parameter from: String should have at most 64 characters (HTTP 400 invalid_request)"
    )


def test_a_phase_the_job_only_waits_to_enter_is_a_404_saying_so(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "seen-5")  # queued: its checkpoint names fetch, which has not run
    response = jobs.stack.call(
        FUNCTION, http_api_event("GET", "/jobs/seen-5/states/fetch", caller=iam_caller(jobs.identity))
    )
    assert response["statusCode"] == 404
    error = json.loads(response["body"])["error"]
    assert error["code"] == "not_found"
    assert (
        error["message"]
        == 'Job "seen-5" keeps no state for phase "fetch": it has not run that phase yet (it waits to enter it)'
    )
    status, _, err = run_cli(capsys, "state", "seen-5", "fetch")
    assert status == 1
    assert "has not run that phase yet" in error_line(err)

    assert jobs.step() == 1  # fetch ran: split is next, not run
    assert state_json(capsys, "seen-5", "fetch")["state"]["document"] == "invoice.txt"
    status, _, err = run_cli(capsys, "state", "seen-5", "split")
    assert status == 1
    assert "has not run that phase yet" in error_line(err)
    assert run_cli(capsys, "state", "seen-5", "split", "--diff", "fetch")[0] == 1  # a diff to it: the same 404

    jobs.run()
    assert state_json(capsys, "seen-5", "split")["phase"] == "split"


def test_the_routes_refuse_hostile_values_with_a_400_and_stay_within_the_owner(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "seen-4")
    jobs.run()

    def get(path: str, query: dict[str, str] | None = None, caller: str = jobs.identity) -> tuple[int, Any]:
        response = jobs.stack.call(FUNCTION, http_api_event("GET", path, query=query, caller=iam_caller(caller)))
        return response["statusCode"], json.loads(response["body"])

    assert get("/jobs/seen-4/states/fetch")[0] == 200
    assert get("/jobs/seen-4/states/fetch", caller="arn:aws:iam::123456789012:user/mallory")[0] == 404
    assert get("/jobs/seen-4/diff", {"from": "fetch", "to": "fetch"})[0] == 200
    for path, query in (
        ("/jobs/seen-4/states/" + "p" * 100, None),
        ("/jobs/seen-4/states/%00", None),
        ("/jobs/seen-4/diff", {"from": "fetch"}),
        ("/jobs/seen-4/diff", {"from": "fetch", "to": "../x"}),
        ("/jobs/" + "j" * 300 + "/states/fetch", None),
    ):
        status, body = get(path, query)
        assert status == 400, (path, query, body)
        assert body["error"]["code"] == "invalid_request"
