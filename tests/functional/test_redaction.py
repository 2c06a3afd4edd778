"""Secrets kept out of what is stored, logged and served: a fake token in a state field, an exception's message and a
log line, with redaction set (a pipeline's field, the stack's pattern), appears in no reply of any route, in no
function log line, in no stored text and nowhere in a pulled file; `cairn jobs pull --redact` reaches every copy."""

from __future__ import annotations

import io
import json
import logging
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn import Next, Pipeline, RetryPolicy
from cairn.cli import main
from cairn.core.errors import ConfigurationError
from cairn.core.settings import REDACT, stack_redaction
from cairn.testing.stack import LocalStack
from tests.aws import dynamodb_client
from tests.functional.jobs_server import JobsServer
from tests.functional.stacks import moto_stack
from tests.support import FakeClock

FIELD_SECRET = "hunter2-field-value"
"""The state's api_token: no pattern matches it, only the field path reaches it."""
PATTERN_SECRET = "tok-live-4242abcd"
"""A token only the stack's pattern recognises."""
SECRETS = (FIELD_SECRET, PATTERN_SECRET)

vault: Pipeline[Any] = Pipeline("vault", redact_fields=["state.api_token"])
plain: Pipeline[Any] = Pipeline("plainvault")


def _fetch(ctx: Any) -> Next:
    ctx.log(f"calling the API with {ctx.state['api_token']} and {PATTERN_SECRET}")
    ctx.decide(f"use {PATTERN_SECRET}", reason=f"the token {ctx.state['api_token']} is fresh")
    return Next("use", {**ctx.state, "step": 1})


def _use(ctx: Any) -> Next:
    raise RuntimeError(f"401 for token {ctx.state['api_token']} (also tried {PATTERN_SECRET})")


for pipeline in (vault, plain):
    pipeline.phase(name="fetch")(_fetch)
    pipeline.phase(name="use", retry=RetryPolicy(max_attempts=2, backoff=0, jitter=False))(_use)


@pytest.fixture
def stack(
    stack_clock: FakeClock, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[LocalStack]:
    """`vault` on moto, the stack redacting tokens that look like tok-live-...; `plainvault` with no redaction set
    when the test asks for it (``indirect``)."""
    if getattr(request, "param", None) == "plain":
        monkeypatch.delenv(REDACT, raising=False)
        pipelines = (plain,)
    else:
        monkeypatch.setenv(REDACT, json.dumps({"patterns": ["tok-live-[0-9a-f]+"]}))
        pipelines = (vault,)
    with moto_stack(stack_clock, *pipelines) as stack:
        yield stack


@pytest.fixture
def function_logs() -> Iterator[io.StringIO]:
    """What the functions' logger (Powertools', on the "cairn" logger) writes while the test runs."""
    written = io.StringIO()
    handlers = [
        handler for handler in logging.getLogger("cairn").handlers if isinstance(handler, logging.StreamHandler)
    ]
    assert handlers
    streams = [handler.setStream(written) for handler in handlers]
    yield written
    for handler, stream in zip(handlers, streams, strict=True):
        handler.setStream(stream)


def _ran(jobs: JobsServer, pipeline: str, job_id: str) -> None:
    state = json.dumps({"api_token": FIELD_SECRET, "customer": "Ada"})
    assert main(["jobs", "start", pipeline, "--id", job_id, "--state", state]) == 0
    jobs.run()


def _get(jobs: JobsServer, path: str) -> str:
    with urllib.request.urlopen(jobs.url + path, timeout=10) as reply:
        assert reply.status == 200, path
        return str(reply.read().decode("utf-8"))


def _stored() -> str:
    """Every item of every table, as text."""
    client = dynamodb_client()
    items = [client.scan(TableName=name)["Items"] for name in client.list_tables()["TableNames"]]
    return json.dumps(items)


def test_a_secret_in_a_state_a_message_and_a_log_line_is_in_no_reply_no_log_line_and_no_pulled_file(
    jobs: JobsServer, function_logs: io.StringIO, tmp_path: Path
) -> None:
    _ran(jobs, "vault", "v-1")

    replies = {
        path: _get(jobs, path)
        for path in (
            "/jobs/v-1?includeState=true&includeInput=true",
            "/jobs/v-1/log",
            "/jobs/v-1/history",
            "/jobs?pipeline=vault",
            "/jobs/v-1/states/fetch",
            "/jobs/v-1/states/use",
            "/jobs/v-1/diff?from=fetch&to=use",
        )
    }
    view = json.loads(replies["/jobs/v-1?includeState=true&includeInput=true"])
    assert view["status"] == "error"
    assert view["input"] == {"api_token": "[redacted]", "customer": "Ada"}
    assert view["error"] == "401 for token [redacted] (also tried [redacted])"
    for path, body in replies.items():
        for secret in SECRETS:
            assert secret not in body, f"{secret} in the reply of {path}"
    assert "[redacted]" in replies["/jobs/v-1/log"]

    stored = _stored()
    assert PATTERN_SECRET not in stored  # the texts are stored redacted
    assert f"401 for token {FIELD_SECRET}" not in stored  # the field's value too, once it is in a text
    assert FIELD_SECRET in stored  # the state itself is the job's data: checkpointed as it is, to resume

    target = tmp_path / "v-1.json"
    assert main(["jobs", "pull", "v-1", "-o", str(target)]) == 0
    pulled = target.read_text(encoding="utf-8")
    for secret in SECRETS:
        assert secret not in pulled

    logged = function_logs.getvalue()
    assert "401 for token [redacted]" in logged  # the failure was logged, with its traceback...
    assert "calling the API with [redacted] and [redacted]" in logged  # ...and so was the log line
    for secret in SECRETS:
        assert secret not in logged  # ...redacted


@pytest.mark.parametrize("stack", ["plain"], indirect=True)
def test_pull_redact_replaces_the_value_of_a_field_in_every_copy_in_the_file(jobs: JobsServer, tmp_path: Path) -> None:
    _ran(jobs, "plainvault", "p-1")  # no redaction is set: the API serves the token
    assert FIELD_SECRET in _get(jobs, "/jobs/p-1/history")
    target = tmp_path / "p-1.json"

    assert main(["jobs", "pull", "p-1", "-o", str(target), "--redact", "state.api_token"]) == 0

    pulled = target.read_text(encoding="utf-8")
    assert FIELD_SECRET not in pulled
    saved = json.loads(pulled)
    assert saved["redacted"] == ["state.api_token"]
    assert saved["job"]["error"] == f"401 for token [redacted] (also tried {PATTERN_SECRET})"
    assert saved["job"]["input"] == {"api_token": "[redacted]", "customer": "Ada"}


@pytest.mark.parametrize(
    "setting",
    ['{"patterns": ["tok-("]}', '{"fields": ["state..x"]}', "tok-live", '{"patterns": [".*"]}', '{"other": []}'],
)
def test_a_bad_stack_redaction_is_a_clear_configuration_error(setting: str) -> None:
    with pytest.raises(ConfigurationError, match=REDACT):
        stack_redaction({REDACT: setting})


def test_a_bad_pipeline_redaction_is_a_clear_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="Pipeline 'broken'"):
        Pipeline("broken", redact_patterns=["("])
