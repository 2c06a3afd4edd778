"""`cairn jobs` end to end: the real command line against a real HTTP server on 127.0.0.1 in front of the
API function on the local stack (moto in-process); and the client's auth modes on prepared requests."""

from __future__ import annotations

import io
import json
import re
import socket
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from botocore.credentials import Credentials

from cairn.cli import main
from cairn.client import ApiClient, ApiUnreachable, BearerAuth, NoAuth, PreparedRequest, SigV4Auth
from cairn.client import commands as jobs_commands
from cairn.client.auth import region_of
from cairn.client.http import api_error
from cairn.client.options import default_auth_mode
from cairn.client.render import log_line, table
from cairn.testing.api_events import http_api_event, iam_caller
from pipelines import PIPELINES
from tests.functional.jobs_server import FUNCTION, JobsServer, Seen, sigv4_signature_is_valid
from tests.support import FakeClock

PHASES = ["fetch", "split", "extract", "publish"]
BOB = "arn:aws:iam::123456789012:user/bob"
INVOICE = '{"document": "invoice.txt"}'
MISSING = '{"document": "missing.txt"}'
EXECUTE_API = "https://abc123.execute-api.us-east-1.amazonaws.com"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cli(*args: str) -> int:
    return main(["jobs", *args])


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run `cairn jobs ARGS`; its exit status, stdout and stderr (what earlier commands printed is dropped)."""
    capsys.readouterr()
    status = cli(*args)
    out, err = capsys.readouterr()
    return status, out, err


def show_json(capsys: pytest.CaptureFixture[str], job_id: str, *extra: str) -> dict[str, Any]:
    status, out, err = run_cli(capsys, "show", job_id, "--json", *extra)
    assert status == 0, err
    view: dict[str, Any] = json.loads(out)
    return view


def start(capsys: pytest.CaptureFixture[str], job_id: str, state: str = INVOICE) -> None:
    status, _, err = run_cli(capsys, "start", "document-intake", "--id", job_id, "--state", state)
    assert status == 0, err


def error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err  # one line, no traceback
    return lines[0]


# --- start ---------------------------------------------------------------------------------------------------


def test_start_with_inline_json_state_prints_the_new_jobs_status_and_the_stack_runs_it(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run_cli(capsys, "start", "document-intake", "--id", "inline-1", "--state", INVOICE)

    assert (status, err) == (0, "")
    assert out == "inline-1 (document-intake): running, next phase fetch, attempt 1\n"
    [request] = jobs.requests_to("/jobs")
    assert request.method == "POST"
    assert json.loads(request.body) == {
        "pipeline": "document-intake",
        "jobId": "inline-1",
        "state": {"document": "invoice.txt"},
    }
    jobs.run()
    assert show_json(capsys, "inline-1")["status"] == "complete"


def test_start_reads_the_state_from_a_file_or_stdin(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state_file = tmp_path / "state.json"
    state_file.write_text('{"document": "report.txt"}', encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"document": "contract.txt"}'))

    assert run_cli(capsys, "start", "document-intake", "--id", "from-file", "--state", f"@{state_file}")[0] == 0
    assert run_cli(capsys, "start", "document-intake", "--id", "from-stdin", "--state", "@-")[0] == 0

    # Before any phase ran, the checkpoint holds the initial state.
    assert show_json(capsys, "from-file", "--state")["state"]["document"] == "report.txt"
    assert show_json(capsys, "from-stdin", "--state")["state"]["document"] == "contract.txt"
    jobs.run()
    assert show_json(capsys, "from-file")["result"]["document"]["source"] == "report.txt"
    assert show_json(capsys, "from-stdin")["result"]["document"]["kind"] == "contract"


def test_start_without_an_id_gets_one_from_the_api_and_json_prints_the_api_body(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run_cli(capsys, "--json", "start", "document-intake", "--state", INVOICE)

    assert status == 0
    body = json.loads(out)
    assert re.fullmatch(r"[0-9a-f-]{36}", body["jobId"])
    assert (body["status"], body["nextPhase"], body["phases"]) == ("running", "fetch", [])


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ('{"document": ', r"--state: the value is not valid JSON: Expecting value at line 1 column 14"),
        ("state.json", r"--state: the value is not valid JSON: .* \(to read a file, write --state @state.json\)"),
        ("@/no/such/state.json", r"--state: cannot read /no/such/state.json: No such file or directory"),
        ("@", r"--state @ needs a file name \(or @- for standard input\)"),
    ],
)
def test_a_bad_state_is_a_usage_error_and_sends_nothing(
    no_api: str, capsys: pytest.CaptureFixture[str], state: str, expected: str
) -> None:
    status, out, err = run_cli(capsys, "start", "document-intake", "--state", state)

    assert (status, out) == (2, "")
    assert re.fullmatch(f"cairn: error: {expected}", error_line(err))


# --- errors from the API, or no API ----------------------------------------------------------------------------


def test_an_unknown_job_is_the_apis_404_message_on_one_line_and_exit_1(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for action in ("show", "log", "pause", "cancel", "retry"):
        status, out, err = run_cli(capsys, action, "no-such-job")
        assert (status, out) == (1, ""), action
        assert error_line(err) == (
            'cairn: error: Job "no-such-job" was not found (it never existed or has expired) (HTTP 404 not_found)'
        )


def test_an_unknown_pipeline_is_the_apis_400_and_exit_1(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "start", "no-such-pipeline")

    assert (status, out) == (1, "")
    known = ", ".join(sorted(PIPELINES.names))
    assert error_line(err) == (
        f'cairn: error: Unknown pipeline "no-such-pipeline" (known pipelines: {known}) (HTTP 400 invalid_request)'
    )


def test_starting_an_existing_job_is_the_apis_409(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    start(capsys, "twice")

    status, _, err = run_cli(capsys, "start", "document-intake", "--id", "twice")

    assert status == 1
    assert error_line(err).endswith("(HTTP 409 job_exists)")
    assert "twice" in err


def test_an_unreachable_api_is_exit_1_with_a_hint_to_start_cairn_dev(
    no_api: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (["list"], ["--api", no_api, "show", "some-job"]):
        status, out, err = run_cli(capsys, *args)

        assert (status, out) == (1, "")
        assert error_line(err) == f"cairn: error: cannot reach the cairn API at {no_api} (is `cairn dev` running?)"


def test_a_server_that_never_answers_is_unreachable_after_the_timeout() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # connections are accepted by the kernel, and nothing ever answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        client = ApiClient(url, timeout=0.2)

        with pytest.raises(ApiUnreachable) as caught:
            client.health()

    assert str(caught.value) == f"the cairn API at {url} did not answer within 0.2 s"


def test_error_bodies_that_are_not_the_apis_keep_their_message() -> None:
    gateway = api_error(403, b'{"message":"Forbidden"}')
    html = api_error(502, b"<html><body>Bad   gateway</body></html>")

    assert (gateway.status, gateway.code, gateway.message) == (403, "forbidden", "Forbidden")
    assert str(gateway) == "Forbidden (HTTP 403 forbidden)"
    assert (html.code, html.message) == ("bad_gateway", "<html><body>Bad gateway</body></html>")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--api", "ftp://example.com", "list"],
            "the API URL must be http:// or https://, without a query: 'ftp://example.com'",
        ),
        (["--auth", "jwt", "list"], "--auth jwt needs a token: --token TOKEN or $CAIRN_TOKEN"),
        (["--auth", "iam", "--token", "t", "list"], "--token is for --auth jwt, not --auth iam"),
        (
            ["--api", EXECUTE_API, "--as", BOB, "list"],
            "--as names the caller of a local server (--auth none); a deployed API takes it from the credentials",
        ),
    ],
)
def test_contradictory_connection_options_are_usage_errors(
    no_api: str, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    status, out, err = run_cli(capsys, *args)

    assert (status, out) == (2, "")
    assert error_line(err) == f"cairn: error: {expected}"


def test_an_unknown_status_is_argparses_usage_error(no_api: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli("list", "--status", "finished")
    assert exited.value.code == 2
    assert "invalid choice: 'finished'" in capsys.readouterr().err


# --- list, show, log -------------------------------------------------------------------------------------------


def test_list_prints_a_table_newest_first_and_json_prints_the_apis_page(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], stack_clock: FakeClock
) -> None:
    for job_id in ("first", "second", "third"):
        start(capsys, job_id)
        stack_clock.advance(1)
    jobs.run()
    start(capsys, "fourth")

    status, out, err = run_cli(capsys, "list")

    assert (status, err) == (0, "")
    header, *rows = out.splitlines()
    # a listing shows what changes with the status only: when it last changed, not the phase or the attempt; and
    # each job's cost so far
    assert header.split() == ["JOB", "PIPELINE", "STATUS", "CHANGED", "CREATED", "COST"]
    assert [row.split()[:3] for row in rows] == [
        ["fourth", "document-intake", "running"],
        ["third", "document-intake", "complete"],
        ["second", "document-intake", "complete"],
        ["first", "document-intake", "complete"],
    ]
    for column in ("PIPELINE", "STATUS", "CHANGED", "CREATED", "COST"):  # columns line up under their headings
        start_at = header.index(column)
        assert all(row[start_at - 2 : start_at] == "  " and row[start_at] != " " for row in rows), column
    assert all(re.search(r"\d+[smhd] ago\s+\d+[smhd] ago\s+\$\d+\.\d{6}$", row) for row in rows)

    status, out, _ = run_cli(capsys, "list", "--json")
    page = json.loads(out)
    assert status == 0
    assert [job["jobId"] for job in page["jobs"]] == ["fourth", "third", "second", "first"]
    assert page["cursor"] is None
    assert {"jobId", "pipeline", "status", "createdAt", "updatedAt", "expiresAt"} <= set(page["jobs"][0])


def test_list_filters_by_status_and_pipeline_and_pages_with_all(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], stack_clock: FakeClock
) -> None:
    for job_id in ("a", "b", "c"):
        start(capsys, job_id)
        stack_clock.advance(1)
    jobs.run()
    start(capsys, "d")

    def ids(*args: str) -> list[str]:
        status, out, _ = run_cli(capsys, "list", "--json", *args)
        assert status == 0
        return [job["jobId"] for job in json.loads(out)["jobs"]]

    assert ids("--status", "complete") == ["c", "b", "a"]
    assert ids("--status", "running") == ["d"]
    assert ids("--pipeline", "document-intake") == ["d", "c", "b", "a"]
    status, _, err = run_cli(capsys, "list", "--pipeline", "other")  # filtered on the server: it knows no "other"
    assert status == 1
    assert "other" in error_line(err)
    assert ids("--limit", "1") == ["d"]
    assert ids("--limit", "1", "--all") == ["d", "c", "b", "a"]
    assert len(jobs.requests_to("/jobs")) >= 6 + 4  # --all followed the cursor page by page

    status, out, err = run_cli(capsys, "list", "--limit", "2")
    assert status == 0
    assert [row.split()[0] for row in out.splitlines()[1:]] == ["d", "c"]
    more = re.fullmatch(r"More jobs: add --all, or --cursor (\S+)\n", err)
    assert more is not None
    status, out, _ = run_cli(capsys, "list", "--limit", "2", "--cursor", more[1])
    assert status == 0
    assert [row.split()[0] for row in out.splitlines()[1:]] == ["b", "a"]
    assert run_cli(capsys, "list", "--prefix", "zz")[1] == "No jobs.\n"


def test_list_filters_by_id_prefix_and_created_time_on_the_server(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], stack_clock: FakeClock
) -> None:
    for job_id in ("red-1", "red-2", "blue-1"):
        start(capsys, job_id)
        stack_clock.advance(60)
    created = {job["jobId"]: job["createdAt"] for job in json.loads(run_cli(capsys, "list", "--json")[1])["jobs"]}
    between = datetime.fromtimestamp((created["red-1"] + 30_000) / 1000, tz=UTC).isoformat()

    def ids(*args: str) -> list[str]:
        status, out, err = run_cli(capsys, "list", "--json", *args)
        assert status == 0, err
        return [job["jobId"] for job in json.loads(out)["jobs"]]

    assert ids("--prefix", "red-") == ["red-2", "red-1"]
    assert ids("--prefix", "red-", "--limit", "1", "--all") == ["red-2", "red-1"]
    assert ids("--since", between) == ["blue-1", "red-2"]
    assert ids("--until", between, "--prefix", "red") == ["red-1"]
    assert "idPrefix=red" in jobs.requests_to("/jobs")[-1].target, "the filter went to the server"

    status, _, err = run_cli(capsys, "list", "--since", "2026-12-02T00:00:00Z", "--until", "2026-12-01T00:00:00Z")
    assert status == 1
    assert "reversed" in error_line(err)
    with pytest.raises(SystemExit) as bad_time:
        cli("list", "--since", "last tuesday")
    assert bad_time.value.code == 2


def test_show_prints_the_status_the_timeline_of_every_phase_and_the_usage(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "shown")
    jobs.run()

    status, out, err = run_cli(capsys, "show", "shown")

    assert (status, err) == (0, "")
    fields = dict(re.findall(r"^(\w[\w ]*):\s+(.*)$", out, flags=re.MULTILINE))
    assert fields["Job"] == "shown"
    assert fields["Pipeline"] == "document-intake"
    assert fields["Status"] == "complete"
    assert fields["Next phase"] == "-"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(\d+s ago\)", fields["Created"])
    view = show_json(capsys, "shown")
    usage = ", ".join(f"{name}={value}" for name, value in sorted(view["usage"].items()))
    assert fields["Usage"] == usage
    assert "characters=" in usage
    assert "pages=" in usage
    assert fields["Result"].startswith('{"')
    lines = out.splitlines()
    timeline = lines[lines.index("Phases:") + 1 :]
    # no errors: no column; each run's cost (the API's view carries it)
    assert timeline[0].split() == ["PHASE", "ATTEMPT", "OUTCOME", "STARTED", "DURATION", "COST", "CODE"]
    rows = [row.split() for row in timeline[1:]]
    assert [row[0] for row in rows] == PHASES
    assert [" ".join(row[2:5]) if row[2] == "next" else row[2] for row in rows] == [
        "next -> split",
        "next -> extract",
        "next -> publish",
        "done",
    ]
    assert all(row[1] == "1" for row in rows)


def test_show_of_an_errored_job_prints_its_error_and_json_is_the_apis_view(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "broken", MISSING)
    jobs.run()

    _, out, _ = run_cli(capsys, "show", "broken")
    view = show_json(capsys, "broken")

    assert re.search(r'^Error:\s+Document "missing.txt" not found', out, flags=re.MULTILINE)
    assert re.search(
        r"^  PHASE\s+ATTEMPT\s+OUTCOME\s+STARTED\s+DURATION\s+COST\s+CODE\s+ERROR$", out, flags=re.MULTILINE
    )
    assert re.search(r'^  fetch\s+1\s+error\s+.*Document "missing.txt" not found', out, flags=re.MULTILINE)
    assert view["status"] == "error"
    assert view["error"].startswith('Document "missing.txt" not found')
    assert [record["outcome"] for record in view["phases"]] == ["error"]
    _, after_action, _ = run_cli(capsys, "show", "broken", "--json")
    _, before_action, _ = run_cli(capsys, "--json", "show", "broken")
    assert json.loads(after_action) == json.loads(before_action) == view


def test_log_prints_every_entry_with_time_phase_and_kind(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    start(capsys, "logged")
    jobs.run()

    status, out, _ = run_cli(capsys, "log", "logged")
    _, raw, _ = run_cli(capsys, "log", "logged", "--json")

    entries = json.loads(raw)["entries"]
    lines = out.splitlines()
    assert status == 0
    assert len(lines) == len(entries) > 4
    assert re.fullmatch(
        r'\d\d:\d\d:\d\d  fetch\s+action\s+Job started at phase "fetch" by arn:aws:iam::\d+:user/local', lines[0]
    )
    decision = next(line for line in lines if " decision " in line)
    assert re.search(r"\(reason: .+\)$", decision)
    assert {"observation", "decision"} <= {line.split()[2] for line in lines}


def test_log_follow_prints_each_entry_once_as_the_job_runs_and_stops_when_it_completes(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "followed")
    capsys.readouterr()
    result: list[int] = []
    follower = threading.Thread(target=lambda: result.append(cli("log", "followed", "--follow", "--interval", "0.01")))

    follower.start()
    assert jobs.log_served.wait(timeout=10)  # it has printed the log so far, with the job still running
    while jobs.step():
        pass
    jobs.run()
    follower.join(timeout=15)

    assert not follower.is_alive()
    assert result == [0]
    out = capsys.readouterr().out
    _, raw, _ = run_cli(capsys, "log", "followed", "--json")
    *printed, last = out.splitlines()
    assert printed == [log_line(entry) for entry in json.loads(raw)["entries"]]  # each once, in order
    ended = json.dumps(show_json(capsys, "followed")["result"], separators=(",", ":"), ensure_ascii=False)
    assert last.startswith(f"Job complete: {ended[:60]}")  # how it ended, with its result
    assert len(last) <= len("Job complete: ") + 100  # cut to one short line
    assert len(jobs.requests_to("/followed/log")) >= 2


def test_log_follow_of_a_failed_job_ends_with_its_error(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    start(capsys, "failed-follow", MISSING)
    jobs.run()

    status, out, _ = run_cli(capsys, "log", "failed-follow", "--follow")

    assert status == 0
    assert out.splitlines()[-1] == f"Job error: {show_json(capsys, 'failed-follow')['error']}"


def test_log_follow_of_a_finished_job_prints_the_log_once_and_exits(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "done-already", MISSING)
    jobs.run()

    status, out, _ = run_cli(capsys, "log", "done-already", "-f", "--json")

    assert status == 0
    entries = [json.loads(line) for line in out.splitlines()]  # one JSON object per line
    assert entries[-1]["kind"] == "error"
    assert len(jobs.requests_to("/done-already/log")) == 1


def test_log_follow_tries_again_after_a_server_error_or_no_answer_and_ends_as_the_job_does(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    start(capsys, "flaky-follow", MISSING)
    get = ApiClient.get
    failures: list[Exception] = [
        api_error(500, b'{"error": {"code": "internal", "message": "Internal error"}}'),
        ApiUnreachable("cannot reach the cairn API"),
        api_error(503, b'{"message": "Service Unavailable"}'),
    ]

    def flaky(client: ApiClient, job_id: str, **options: bool) -> dict[str, Any]:
        if failures:
            raise failures.pop(0)
        return get(client, job_id, **options)

    monkeypatch.setattr(ApiClient, "get", flaky)
    monkeypatch.setattr(jobs_commands, "sleep", lambda seconds: jobs.run())
    status, out, err = run_cli(capsys, "log", "flaky-follow", "--follow")

    assert status == 0, err
    assert out.splitlines()[-1].startswith("Job error: ")
    assert len(err.splitlines()) == 3
    assert "Internal error (HTTP 500 internal); trying again (1 of" in err


def test_log_follow_gives_up_after_failing_several_times_in_a_row_and_at_once_on_a_client_error(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    start(capsys, "down-follow")

    def down(client: ApiClient, job_id: str, **options: bool) -> dict[str, Any]:
        raise api_error(502, b'{"message": "Bad Gateway"}')

    naps: list[float] = []
    monkeypatch.setattr(ApiClient, "get", down)
    monkeypatch.setattr(jobs_commands, "sleep", naps.append)
    status, _, err = run_cli(capsys, "log", "down-follow", "--follow")

    assert status == 1
    assert err.splitlines()[-1] == "cairn: error: Bad Gateway (HTTP 502 bad_gateway)"
    assert len(naps) == jobs_commands.FOLLOW_TRIES - 1

    def forbidden(client: ApiClient, job_id: str, **options: bool) -> dict[str, Any]:
        raise api_error(403, b'{"message": "Forbidden"}')

    monkeypatch.setattr(ApiClient, "get", forbidden)
    naps.clear()
    status, _, err = run_cli(capsys, "log", "down-follow", "--follow")
    assert (status, naps) == (1, [])
    assert error_line(err) == "cairn: error: Forbidden (HTTP 403 forbidden)"


def test_ctrl_c_while_following_exits_130_quietly(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    start(capsys, "interrupted")

    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(jobs_commands, "sleep", interrupt)
    status, out, err = run_cli(capsys, "log", "interrupted", "--follow")

    assert (status, err) == (130, "")
    assert 'Job started at phase "fetch"' in out


# --- retry, restart, pause, cancel -----------------------------------------------------------------------------


def test_retry_resumes_an_errored_job_and_restart_starts_it_again_from_a_new_state(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "retried", MISSING)
    jobs.run()
    assert show_json(capsys, "retried")["status"] == "error"

    status, _, err = run_cli(capsys, "retry", "retried", "--state", INVOICE)  # resume would ignore it
    assert status == 1
    assert error_line(err).endswith("(HTTP 409 conflict)")

    status, out, _ = run_cli(capsys, "retry", "retried")
    assert status == 0
    assert out.startswith("retried (document-intake): running, next phase fetch, attempt ")
    jobs.run()
    resumed = show_json(capsys, "retried")
    assert resumed["status"] == "error"  # the same missing document
    assert [record["outcome"] for record in resumed["phases"]] == ["error", "error"]

    status, out, _ = run_cli(capsys, "restart", "retried", "--state", INVOICE)
    assert status == 0
    assert out.startswith("retried (document-intake): running, next phase fetch, attempt ")
    assert json.loads(jobs.requests_to("/retried/retry")[-1].body) == {
        "mode": "full",
        "state": {"document": "invoice.txt"},
    }
    jobs.run()
    restarted = show_json(capsys, "retried")
    assert restarted["status"] == "complete"
    assert [record["phase"] for record in restarted["phases"]] == PHASES


def test_retry_of_a_complete_job_is_refused_and_changes_nothing(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "finished")
    jobs.run()
    before = show_json(capsys, "finished")
    assert before["status"] == "complete"

    status, out, err = run_cli(capsys, "retry", "finished")

    assert (status, out) == (1, "")
    assert error_line(err) == (
        'cairn: error: Job "finished" is already complete; Start over (mode full) runs it again (HTTP 409 conflict)'
    )
    assert show_json(capsys, "finished") == before
    assert run_cli(capsys, "restart", "finished")[0] == 0  # starting over runs it again


def test_pause_stops_a_job_at_its_next_phase_and_retry_resumes_it(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "paused")
    assert jobs.step() == 1  # fetch ran

    status, out, _ = run_cli(capsys, "pause", "paused")
    assert (status, out) == (0, "paused (document-intake): paused, next phase split, attempt 1\n")
    jobs.run()
    assert show_json(capsys, "paused")["status"] == "paused"

    assert run_cli(capsys, "retry", "paused")[0] == 0
    jobs.run()
    assert show_json(capsys, "paused")["status"] == "complete"


def test_cancel_a_running_job_then_pausing_it_is_the_apis_409(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "cancelled")

    status, out, _ = run_cli(capsys, "cancel", "cancelled", "--json")
    assert status == 0
    assert json.loads(out)["status"] == "cancelled"
    jobs.run()
    assert show_json(capsys, "cancelled")["status"] == "cancelled"

    status, out, err = run_cli(capsys, "pause", "cancelled")
    assert (status, out) == (1, "")
    assert error_line(err).endswith("(HTTP 409 conflict)")


def test_cancelling_a_cancelled_job_is_the_apis_409_and_the_cli_takes_it_as_done(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    def send(method: str, path: str) -> dict[str, Any]:
        response: dict[str, Any] = jobs.stack.call(
            FUNCTION, http_api_event(method, path, caller=iam_caller(jobs.identity))
        )
        return response

    def log_size() -> int:
        return len(json.loads(send("GET", "/jobs/twice/log")["body"])["entries"])

    start(capsys, "twice")
    assert run_cli(capsys, "cancel", "twice")[0] == 0
    log_before = log_size()

    response = send("POST", "/jobs/twice/cancel")
    assert response["statusCode"] == 409
    body = json.loads(response["body"])
    assert body["error"]["code"] == "already_cancelled"
    assert body["error"]["message"] == 'Job "twice" is already cancelled'
    assert body["job"]["status"] == "cancelled"

    # sent again (its answer lost, say): the job is as asked, so the command does not fail
    status, out, err = run_cli(capsys, "cancel", "twice")
    assert status == 0, err
    assert "cancelled" in out
    assert "already cancelled" in err
    assert log_size() == log_before  # the second cancel changed nothing


def test_health_answers_without_a_caller(jobs: JobsServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "health") == (0, "ok (driver: direct)\n", "")


# --- who calls: local identity, JWT, IAM -----------------------------------------------------------------------


def test_the_local_identity_header_chooses_whose_jobs_are_seen(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_cli(capsys, "--as", BOB, "start", "document-intake", "--id", "bobs", "--state", INVOICE)[0] == 0
    start(capsys, "default-callers")

    def listed(*args: str) -> list[str]:
        return [job["jobId"] for job in json.loads(run_cli(capsys, *args, "list", "--json")[1])["jobs"]]

    assert listed() == ["default-callers"]
    assert listed("--as", BOB) == ["bobs"]
    monkeypatch.setenv("CAIRN_IDENTITY", BOB)
    assert listed() == ["bobs"]
    assert {seen.headers.get("x-cairn-identity") for seen in jobs.seen} == {None, BOB}
    assert run_cli(capsys, "show", "default-callers")[0] == 1  # another caller's job is absent


def test_a_token_is_sent_as_a_bearer_and_the_jwt_caller_owns_its_jobs(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, _, _ = run_cli(capsys, "--token", "carol", "start", "document-intake", "--id", "carols", "--state", INVOICE)
    assert status == 0
    assert jobs.seen[-1].headers["authorization"] == "Bearer carol"

    assert json.loads(run_cli(capsys, "list", "--json")[1])["jobs"] == []  # the default caller sees none of them
    monkeypatch.setenv("CAIRN_TOKEN", "carol")
    assert [job["jobId"] for job in json.loads(run_cli(capsys, "list", "--json")[1])["jobs"]] == ["carols"]


def fixed_credentials(monkeypatch: pytest.MonkeyPatch, *, token: str | None = None) -> Credentials:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    if token:
        monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    else:
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    return Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)


def test_iam_auth_signs_every_request_with_the_default_credentials(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = fixed_credentials(monkeypatch, token="session-token")
    auth = ["--auth", "iam", "--region", "us-east-1"]

    assert run_cli(capsys, *auth, "start", "document-intake", "--id", "signed", "--state", INVOICE)[0] == 0
    assert run_cli(capsys, *auth, "list", "--status", "running", "--limit", "5")[0] == 0

    posted, listed = jobs.seen
    assert listed.target.startswith("/jobs?")
    for seen in (posted, listed):
        assert seen.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
        assert seen.headers["x-amz-security-token"] == "session-token"
        assert sigv4_signature_is_valid(seen, credentials)
    assert not sigv4_signature_is_valid(posted, Credentials("AKIDEXAMPLE", "another-secret", "session-token"))


def test_iam_auth_without_credentials_is_a_clear_error_before_any_request(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    status, out, err = run_cli(capsys, "--api", EXECUTE_API, "list")  # an https URL: iam by default

    assert (status, out) == (1, "")
    assert error_line(err).startswith("cairn: error: no AWS credentials found to sign the request (IAM auth)")


def test_sigv4_adds_the_authorization_and_date_headers_for_execute_api_in_the_urls_region(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    credentials = fixed_credentials(monkeypatch)
    request = PreparedRequest("GET", f"{EXECUTE_API}/jobs?limit=5", {"Accept": "application/json"})

    SigV4Auth().apply(request)

    signed_at = datetime.strptime(request.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - signed_at).total_seconds()) < 60
    authorization = request.headers["Authorization"]
    assert re.fullmatch(
        rf"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{request.headers['X-Amz-Date'][:8]}/us-east-1/execute-api/"
        r"aws4_request, SignedHeaders=accept;host;x-amz-date, Signature=[0-9a-f]{64}",
        authorization,
    )
    assert "X-Amz-Security-Token" not in request.headers
    assert request.headers["Accept"] == "application/json"
    seen_headers = {name.lower(): value for name, value in request.headers.items()}
    seen_headers["host"] = "abc123.execute-api.us-east-1.amazonaws.com"
    seen = Seen("GET", "/jobs?limit=5", seen_headers, b"")
    # The verifier rebuilds an http:// URL; the signature covers the host, path, query and headers, not the scheme.
    assert sigv4_signature_is_valid(seen, credentials)


def test_sigv4_region_comes_from_the_option_else_the_url_else_the_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fixed_credentials(monkeypatch)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "sa-east-1")

    assert region_of("https://a1b2c3.execute-api.eu-west-2.amazonaws.com/prod") == "eu-west-2"
    assert region_of("https://jobs.example.com") is None
    assert SigV4Auth("ap-south-1").region_for(f"{EXECUTE_API}/jobs") == "ap-south-1"
    assert SigV4Auth().region_for(f"{EXECUTE_API}/jobs") == "us-east-1"
    assert SigV4Auth().region_for("https://jobs.example.com/jobs") == "sa-east-1"
    request = PreparedRequest("GET", "https://jobs.example.com/jobs")
    SigV4Auth().apply(request)
    assert "/sa-east-1/execute-api/aws4_request" in request.headers["Authorization"]


def test_bearer_and_local_identity_add_their_headers() -> None:
    bearer = PreparedRequest("GET", "http://127.0.0.1:3000/jobs")
    local = PreparedRequest("GET", "http://127.0.0.1:3000/jobs")
    nobody = PreparedRequest("GET", "http://127.0.0.1:3000/jobs")

    BearerAuth("eyJhbGciOi.payload.sig").apply(bearer)
    NoAuth(BOB).apply(local)
    NoAuth().apply(nobody)

    assert bearer.headers == {"Authorization": "Bearer eyJhbGciOi.payload.sig"}
    assert local.headers == {"X-Cairn-Identity": BOB}
    assert nobody.headers == {}


def test_the_default_auth_follows_the_url_and_the_token() -> None:
    assert default_auth_mode("http://127.0.0.1:3000", None) == "none"
    assert default_auth_mode("http://localhost:3000", None) == "none"
    assert default_auth_mode(EXECUTE_API, None) == "iam"
    assert default_auth_mode(EXECUTE_API, "token") == "jwt"


def test_table_columns_fit_their_widest_cell_without_trailing_spaces() -> None:
    assert table(["A", "LONGER"], [["wide cell", "x"], ["y", ""]]) == "A          LONGER\nwide cell  x\ny"
