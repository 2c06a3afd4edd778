"""Every reply of the API stays within what Lambda may return, whatever the job's states hold: a state too large
to return inline is handed over as a short-lived link to its stored object (which ``cairn jobs state`` follows),
a diff cuts its large values, and any other reply past the bound is a clear error, never a bare 500 from Lambda.

The states are a few MB: random ASCII (what gzip cannot shrink) and random non-ASCII text (six bytes a character
once escaped), on the local stack (moto, with its state bucket) behind the API function.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from cairn import Done, Next, PhaseContext, Pipeline
from cairn.aws import payloads
from cairn.aws.api_limits import MAX_REPLY_BYTES, reply_bytes
from cairn.aws.dynamodb.storage import DynamoDBStorage
from cairn.client import http as client_http
from cairn.core.storage_port import Storage
from cairn.testing.api_events import http_api_event, iam_caller
from cairn.testing.stack import LocalStack
from tests.functional.jobs_server import FUNCTION, JobsServer
from tests.functional.stacks import moto_stack
from tests.functional.test_jobs_cli import error_line, run_cli, show_json
from tests.support import FakeClock

MB = 1024 * 1024
ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
NON_ASCII = "".join(chr(code) for code in range(0x3B1, 0x3C9)) + "éèàüöçñ€漢字かな"


def text_of(alphabet: str, characters: int, seed: int) -> str:
    """Random text of ``alphabet`` (gzip cannot make it small)."""
    return "".join(random.Random(seed).choices(alphabet, k=characters))


def bulky() -> Pipeline[Any]:
    """Each phase enters the next with a state the input asks for: ``{"alphabet", "characters"}`` per phase."""
    pipeline: Pipeline[Any] = Pipeline("bulky")

    def grown(ctx: PhaseContext[Any], seed: int) -> dict[str, Any]:
        alphabet = {"non-ascii": NON_ASCII, "repeat": "é"}.get(ctx.state["alphabet"], ASCII)
        return {**ctx.state, "blob": text_of(alphabet, int(ctx.state["characters"]), seed), "seed": seed}

    @pipeline.phase
    def start(ctx: PhaseContext[Any]) -> Next:
        return Next("middle", grown(ctx, 1))

    @pipeline.phase
    def middle(ctx: PhaseContext[Any]) -> Next:
        return Next("end", grown(ctx, 2))

    @pipeline.phase
    def end(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state if ctx.state.get("resultIsState") else {"seed": ctx.state["seed"]})

    return pipeline


@pytest.fixture
def stack(stack_clock: FakeClock) -> Iterator[LocalStack]:
    """The bundle's pipelines and ``bulky`` on moto."""
    with moto_stack(stack_clock, bulky()) as made:
        yield made


def run_bulky(jobs: JobsServer, job_id: str, alphabet: str, characters: int, *, result_is_state: bool = False) -> None:
    state = {"alphabet": alphabet, "characters": characters, **({"resultIsState": True} if result_is_state else {})}
    reply = call(jobs, "POST", "/jobs", body={"pipeline": "bulky", "jobId": job_id, "state": state})
    assert reply["statusCode"] == 202, reply["body"][:500]
    jobs.run()


def call(
    jobs: JobsServer, method: str, path: str, *, query: dict[str, str] | None = None, body: Any = None
) -> dict[str, Any]:
    """The API function's response to one request, as Lambda would return it."""
    event = http_api_event(
        method, path, query=query, body=None if body is None else json.dumps(body), caller=iam_caller(jobs.identity)
    )
    response: dict[str, Any] = jobs.stack.call(FUNCTION, event)
    return response


def within_limit(response: dict[str, Any]) -> dict[str, Any]:
    """The response's JSON body, once its whole size is checked against the bound (Lambda's limit is 6 MB)."""
    assert reply_bytes(response) <= MAX_REPLY_BYTES < 6 * MB
    assert len(json.dumps(response).encode()) < 6 * MB
    found: dict[str, Any] = json.loads(response["body"])
    return found


@pytest.mark.parametrize("alphabet", ["ascii", "non-ascii"])
def test_a_state_too_large_to_return_inline_is_handed_over_as_a_link(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, alphabet: str
) -> None:
    characters = 6 * MB if alphabet == "ascii" else 2 * MB  # 6 MB of ASCII; 2 M characters escape to 12 MB
    run_bulky(jobs, f"big-{alphabet}", alphabet, characters)
    expected = text_of(NON_ASCII if alphabet == "non-ascii" else ASCII, characters, 1)

    response = call(jobs, "GET", f"/jobs/big-{alphabet}/states/middle")
    assert response["statusCode"] == 200, response["body"][:500]
    reply = within_limit(response)
    assert "state" not in reply
    assert reply["phase"] == "middle"
    assert reply["stateBytes"] > 0
    assert reply["stateUrlExpiresAt"] > reply["enteredAt"]
    body = requests.get(reply["stateUrl"], timeout=30).content  # moto serves the presigned URL
    raw = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
    assert json.loads(raw)["blob"] == expected

    small = within_limit(call(jobs, "GET", f"/jobs/big-{alphabet}/states/start"))
    assert small["state"] == {"alphabet": alphabet, "characters": characters}  # a small state stays inline

    monkeypatch.setattr(client_http, "fetch_link", lambda url: requests.get(url, timeout=30).content)
    status, out, err = run_cli(capsys, "state", f"big-{alphabet}", "middle")
    assert status == 0, err
    assert json.loads(out)["blob"] == expected


def test_a_large_state_that_gzip_makes_small_is_handed_over_as_a_link_too(jobs: JobsServer) -> None:
    run_bulky(jobs, "repetitive", "repeat", MB)  # 2 MB of UTF-8, a few KB gzipped, 6 MB escaped

    reply = within_limit(call(jobs, "GET", "/jobs/repetitive/states/middle"))
    assert "state" not in reply
    body = requests.get(reply["stateUrl"], timeout=30).content
    raw = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
    assert json.loads(raw)["blob"] == "é" * MB


@pytest.mark.parametrize("alphabet", ["ascii", "non-ascii"])
def test_a_diff_of_multi_megabyte_states_cuts_its_values_and_says_so(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], alphabet: str
) -> None:
    characters = 3 * MB if alphabet == "ascii" else MB
    run_bulky(jobs, f"diff-{alphabet}", alphabet, characters)

    response = call(jobs, "GET", f"/jobs/diff-{alphabet}/diff", query={"from": "middle", "to": "end"})
    assert response["statusCode"] == 200, response["body"][:500]
    diff = within_limit(response)
    changes = {change["path"]: change for change in diff["changes"]}
    blob = changes["/blob"]
    assert blob["change"] == "changed"
    assert blob["beforeCut"] > 64 * 1024  # the whole value's size
    assert blob["afterCut"] > 64 * 1024
    assert isinstance(blob["before"], str)  # the start of its JSON text
    assert len(blob["before"]) < 16 * 1024
    assert changes["/seed"] == {"path": "/seed", "change": "changed", "before": 1, "after": 2}  # small: whole

    status, out, err = run_cli(capsys, "state", f"diff-{alphabet}", "end", "--diff", "middle")
    assert status == 0, err
    assert any(line.startswith("~ /blob: ") and "cut" in line for line in out.splitlines())


def test_a_job_view_whose_state_is_too_large_hands_it_over_as_a_link(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    state = {"alphabet": "non-ascii", "characters": 2 * MB}
    reply = call(jobs, "POST", "/jobs", body={"pipeline": "bulky", "jobId": "view", "state": state})
    assert reply["statusCode"] == 202
    assert jobs.step() == 1  # start ran: the checkpoint enters middle with a 12 MB (escaped) state
    assert call(jobs, "POST", "/jobs/view/pause")["statusCode"] == 200
    expected = text_of(NON_ASCII, 2 * MB, 1)

    response = call(jobs, "GET", "/jobs/view", query={"includeState": "true"})
    assert response["statusCode"] == 200, response["body"][:500]
    view = within_limit(response)
    assert "state" not in view
    assert (view["nextPhase"], view["status"]) == ("middle", "paused")
    assert view["stateBytes"] > 0
    assert view["stateUrlExpiresAt"] > view["checkpointCreatedAt"]
    body = requests.get(view["stateUrl"], timeout=30).content  # moto serves the presigned URL
    assert json.loads(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)["blob"] == expected
    assert "stateUrl" not in within_limit(call(jobs, "GET", "/jobs/view"))  # without the state: as ever

    monkeypatch.setattr(client_http, "fetch_link", lambda url: requests.get(url, timeout=30).content)
    shown = show_json(capsys, "view", "--state")
    assert shown["state"]["blob"] == expected
    target = tmp_path / "view.cairn-job.json"
    status, _, err = run_cli(capsys, "pull", "view", "-o", str(target))
    assert status == 0, err
    assert json.loads(target.read_text(encoding="utf-8"))["job"]["checkpoint"]["state"]["blob"] == expected


def test_a_result_too_large_for_the_view_is_handed_over_as_a_link(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run_bulky(jobs, "result", "non-ascii", 2 * MB, result_is_state=True)  # a 12 MB (escaped) result
    expected = text_of(NON_ASCII, 2 * MB, 2)

    response = call(jobs, "GET", "/jobs/result")
    assert response["statusCode"] == 200, response["body"][:500]
    view = within_limit(response)
    assert view["status"] == "complete"
    assert "result" not in view
    assert view["resultBytes"] > 0
    assert view["resultUrlExpiresAt"] > view["updatedAt"]
    body = requests.get(view["resultUrl"], timeout=30).content  # moto serves the presigned URL
    assert json.loads(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)["blob"] == expected

    with_state = within_limit(call(jobs, "GET", "/jobs/result", query={"includeState": "true"}))
    assert "resultUrl" in with_state  # a complete job keeps no checkpoint: its result only

    monkeypatch.setattr(client_http, "fetch_link", lambda url: requests.get(url, timeout=30).content)
    shown = show_json(capsys, "result")
    assert shown["result"]["blob"] == expected
    target = tmp_path / "result.cairn-job.json"
    status, _, err = run_cli(capsys, "pull", "result", "-o", str(target))
    assert status == 0, err
    assert json.loads(target.read_text(encoding="utf-8"))["job"]["result"]["blob"] == expected


def test_a_result_past_the_bound_from_a_store_that_links_none_is_a_clear_error(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DynamoDBStorage, "result_link", Storage.result_link)  # as a store of an earlier release
    run_bulky(jobs, "kept-result", "repeat", MB, result_is_state=True)  # 6 MB escaped

    response = call(jobs, "GET", "/jobs/kept-result")
    assert reply_bytes(response) <= MAX_REPLY_BYTES
    assert response["statusCode"] == 500, response["body"][:600]
    error = json.loads(response["body"])["error"]
    assert error["code"] == "reply_too_large"
    assert "bytes" in error["message"]
    status, _, err = run_cli(capsys, "show", "kept-result")
    assert status == 1
    assert "too large" in error_line(err)


def test_a_large_state_kept_in_the_table_is_a_clear_error(jobs: JobsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(payloads, "OFFLOAD_RAW_FROM", 64 * MB)  # as written before such states went to the bucket
    monkeypatch.setattr(payloads, "GZIP_LEVEL", 9)  # a few KB: below the offload size
    run_bulky(jobs, "kept-inline", "repeat", MB)  # 6 MB escaped

    response = call(jobs, "GET", "/jobs/kept-inline/states/middle")
    assert reply_bytes(response) <= MAX_REPLY_BYTES
    assert response["statusCode"] == 500, response["body"][:600]
    error = json.loads(response["body"])["error"]
    assert error["code"] == "reply_too_large"
    assert "too large" in error["message"]


def test_with_redaction_set_no_value_is_handed_over_unredacted_as_a_link(
    jobs: JobsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_bulky(jobs, "redacted", "ascii", 6 * MB, result_is_state=True)  # a 6 MB state entering middle, and result
    monkeypatch.setenv("CAIRN_REDACT", json.dumps({"fields": ["blob"]}))  # the stored objects hold it unredacted

    for path, query in [("/jobs/redacted", None), ("/jobs/redacted/states/middle", None)]:
        response = call(jobs, "GET", path, query=query)
        assert reply_bytes(response) <= MAX_REPLY_BYTES
        assert response["statusCode"] == 500, response["body"][:500]
        assert "Url" not in response["body"]
        error = json.loads(response["body"])["error"]
        assert error["code"] == "reply_too_large"
        assert "redacts its replies" in error["message"]
