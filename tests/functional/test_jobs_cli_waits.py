"""`cairn jobs signal` and `cairn jobs rerun` end to end: the real command line against a real HTTP server on
127.0.0.1 in front of the API function on the local stack (moto in-process), with a pipeline that waits."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.client.render import clock_time, job_details
from cairn.testing.stack import LocalStack
from tests.functional.jobs_server import JobsServer
from tests.functional.pipelines import approval_pipeline
from tests.functional.stacks import moto_stack
from tests.functional.test_jobs_cli import INVOICE, cli, error_line, run_cli, show_json
from tests.support import FakeClock

REQUEST = '{"amount": 120}'


@pytest.fixture
def stack(stack_clock: FakeClock) -> Iterator[LocalStack]:
    """The bundle's pipelines and ``approval`` (``ask`` waits for the signal ``approval``), in-process on moto."""
    with moto_stack(stack_clock, approval_pipeline()) as stack:
        yield stack


def waiting(jobs: JobsServer, capsys: pytest.CaptureFixture[str], job_id: str) -> None:
    """Start an ``approval`` job and run it until it waits for its signal."""
    status, _, err = run_cli(capsys, "start", "approval", "--id", job_id, "--state", REQUEST)
    assert status == 0, err
    jobs.run()
    assert show_json(capsys, job_id)["status"] == "waiting"


# --- signal ----------------------------------------------------------------------------------------------------


def test_a_waiting_job_shows_its_signal_and_a_signal_without_payload_lets_it_complete(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    waiting(jobs, capsys, "asks")
    status, out, _ = run_cli(capsys, "show", "asks")
    assert status == 0
    assert re.search(r"^Waiting for:\s+approval$", out, flags=re.MULTILINE)
    status, out, _ = run_cli(capsys, "list", "--status", "waiting")
    assert status == 0
    assert [row.split()[:3] for row in out.splitlines()[1:]] == [["asks", "approval", "waiting"]]

    status, out, err = run_cli(capsys, "signal", "asks", "approval")

    assert (status, err) == (0, "")
    assert out == "asks (approval): running, next phase decide, attempt 1\n"
    [request] = jobs.requests_to("/signals/approval")
    assert (request.method, request.path, request.body) == ("POST", "/jobs/asks/signals/approval", b"")
    jobs.run()
    done = show_json(capsys, "asks")
    assert done["status"] == "complete"
    assert done["result"] == {"request": {"amount": 120}, "approval": None}
    assert "Waiting for" not in run_cli(capsys, "show", "asks")[1]


def test_a_signals_payload_comes_from_a_file_or_stdin_and_the_next_phase_reads_it(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = tmp_path / "approval.json"
    payload.write_text('{"approved": true, "by": "dana"}', encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO('"ship it"'))
    waiting(jobs, capsys, "from-file")
    waiting(jobs, capsys, "from-stdin")

    assert run_cli(capsys, "signal", "from-file", "approval", "--payload", f"@{payload}")[0] == 0
    assert run_cli(capsys, "signal", "from-stdin", "approval", "--payload", "@-")[0] == 0

    assert json.loads(jobs.requests_to("/from-file/signals/approval")[0].body) == {"approved": True, "by": "dana"}
    jobs.run()
    assert show_json(capsys, "from-file")["result"]["approval"] == {"approved": True, "by": "dana"}
    assert show_json(capsys, "from-stdin")["result"]["approval"] == "ship it"


def test_signal_with_json_prints_the_apis_job_view(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    waiting(jobs, capsys, "scripted")

    status, out, _ = run_cli(capsys, "signal", "scripted", "approval", "--payload", "42", "--json")

    assert status == 0
    view = json.loads(out)
    assert (view["jobId"], view["status"], view["nextPhase"]) == ("scripted", "running", "decide")
    assert view["waitingFor"] is None
    assert json.loads(jobs.requests_to("/signals/approval")[0].body) == 42


def test_a_signal_no_one_waits_for_is_the_apis_409_message_and_exit_1(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    waiting(jobs, capsys, "picky")

    status, out, err = run_cli(capsys, "signal", "picky", "rejection")

    assert (status, out) == (1, "")
    assert error_line(err) == (
        'cairn: error: Job "picky" waits for "approval"; no one waits for signal "rejection" (HTTP 409 conflict)'
    )
    assert run_cli(capsys, "signal", "picky", "approval")[0] == 0
    status, out, err = run_cli(capsys, "signal", "picky", "approval")  # a second delivery: nobody waits now
    assert (status, out) == (1, "")
    assert error_line(err).endswith("(HTTP 409 conflict)")
    assert show_json(capsys, "picky")["status"] == "running"


def test_a_bad_signal_name_is_sent_quoted_and_is_the_apis_400(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    waiting(jobs, capsys, "named")

    status, out, err = run_cli(capsys, "signal", "named", "no/such name")

    assert (status, out) == (1, "")
    refused = r"cairn: error: path parameter name: Invalid signal name .*\(HTTP 400 invalid_request\)"
    assert re.fullmatch(refused, error_line(err))
    assert jobs.seen[-1].path == "/jobs/named/signals/no%2Fsuch%20name"  # one path segment
    assert show_json(capsys, "named")["status"] == "waiting"


def test_a_signal_to_an_unknown_job_is_the_apis_404(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "signal", "no-such-job", "approval")

    assert (status, out) == (1, "")
    assert error_line(err).endswith("(HTTP 404 not_found)")


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ('{"approved": ', r"--payload: the value is not valid JSON: Expecting value at line 1 column 14"),
        ("yes.json", r"--payload: the value is not valid JSON: .* \(to read a file, write --payload @yes.json\)"),
        ("@/no/such/payload.json", r"--payload: cannot read /no/such/payload.json: No such file or directory"),
        ("@", r"--payload @ needs a file name \(or @- for standard input\)"),
    ],
)
def test_a_bad_payload_is_a_usage_error_and_sends_nothing(
    no_api: str, capsys: pytest.CaptureFixture[str], payload: str, expected: str
) -> None:
    status, out, err = run_cli(capsys, "signal", "some-job", "approval", "--payload", payload)

    assert (status, out) == (2, "")
    assert re.fullmatch(f"cairn: error: {expected}", error_line(err))


def test_details_show_the_wait_deadline_and_the_wake_time_when_set() -> None:
    now = 1_700_000_000_000
    waits = job_details({"jobId": "j", "status": "waiting", "waitingFor": "approval", "waitDeadline": now}, now)
    sleeps = job_details({"jobId": "j", "status": "running", "waitingFor": None, "wakeAt": now + 60_000}, now)
    forever = job_details({"jobId": "j", "status": "waiting", "waitingFor": "approval", "waitDeadline": None}, now)

    assert re.search(rf"^Waiting for: approval \(until {clock_time(now)}\)$", waits, flags=re.MULTILINE)
    assert re.search(r"^Waiting for: approval$", forever, flags=re.MULTILINE)
    assert "Wakes at" not in waits
    assert re.search(rf"^Wakes at:\s+{clock_time(now + 60_000)}$", sleeps, flags=re.MULTILINE)
    assert "Waiting for" not in sleeps


# --- rerun -----------------------------------------------------------------------------------------------------


def test_rerun_sends_mode_from_with_the_phase_and_the_state(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_cli(capsys, "start", "document-intake", "--id", "rerun-shape", "--state", INVOICE)
    assert status == 0, err
    jobs.run()

    run_cli(capsys, "rerun", "rerun-shape", "--from", "extract")  # the answer is the API's: see the next test
    run_cli(capsys, "rerun", "rerun-shape", "--from", "split", "--state", INVOICE)

    bare, with_state = jobs.requests_to("/rerun-shape/retry")
    assert (bare.method, bare.path) == ("POST", "/jobs/rerun-shape/retry")
    assert json.loads(bare.body) == {"mode": "from", "phase": "extract"}
    assert json.loads(with_state.body) == {"mode": "from", "phase": "split", "state": {"document": "invoice.txt"}}


# needs mode "from" in the API
def test_rerun_from_a_phase_runs_the_job_again_from_there(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "start", "document-intake", "--id", "rerun-ran", "--state", INVOICE)
    assert status == 0, err
    jobs.run()

    status, out, err = run_cli(capsys, "rerun", "rerun-ran", "--from", "extract")

    assert (status, err) == (0, "")
    assert re.fullmatch(r"rerun-ran \(document-intake\): running, next phase extract, attempt \d+\n", out)
    jobs.run()
    rerun = show_json(capsys, "rerun-ran")
    assert rerun["status"] == "complete"
    assert [record["phase"] for record in rerun["phases"]][-2:] == ["extract", "publish"]


def test_rerun_without_from_is_argparses_usage_error(no_api: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli("rerun", "some-job")

    assert exited.value.code == 2
    assert "the following arguments are required: --from" in capsys.readouterr().err


@pytest.mark.parametrize("payload", [["a", "b"], [], {"nested": [1, 2]}, None, "text", 0])
def test_any_json_payload_reaches_the_phase_as_sent(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], payload: object
) -> None:
    waiting(jobs, capsys, "any-json")

    assert run_cli(capsys, "signal", "any-json", "approval", "--payload", json.dumps(payload))[0] == 0
    jobs.run()

    assert show_json(capsys, "any-json")["result"]["approval"] == payload
