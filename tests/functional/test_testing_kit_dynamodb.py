"""The test kit on DynamoDB: cairn_dynamodb runs a user's pipeline on a moto table, on the clock that skips time."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from cairn import Cairn, Done, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.testing.moto_aws import REGION, fake_aws
from cairn.testing.plugin import SimulatedCrash, SkippingClock, crash_on


def three_phases(ran: list[str]) -> Pipeline[Any]:
    """load, total, report: each notes in ``ran`` that it ran."""
    pipeline: Pipeline[Any] = Pipeline("invoice")

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        ran.append("load")
        return Next("total", {"lines": [5, 7]})

    @pipeline.phase
    def total(ctx: PhaseContext[Any]) -> Next:
        ran.append("total")
        return Next("report", {"total": sum(ctx.state["lines"])})

    @pipeline.phase
    def report(ctx: PhaseContext[Any]) -> Done:
        ran.append("report")
        return Done(ctx.state)

    return pipeline


def test_an_hour_long_retry_backoff_on_dynamodb_takes_no_real_time(
    cairn_local: Callable[..., Cairn], cairn_dynamodb: DynamoDBStorage, cairn_clock: SkippingClock
) -> None:
    failures = [True, True]
    pipeline: Pipeline[Any] = Pipeline("flaky")

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=3600.0, max_delay=7200.0, jitter=False))
    def call(ctx: PhaseContext[Any]) -> Done:
        if failures and failures.pop(0):
            raise RuntimeError("the service is down")
        return Done({"attempt": ctx.attempt})

    app = cairn_local(pipeline, storage=cairn_dynamodb)
    started_ms = cairn_clock()
    app.start(pipeline, "job-1")
    app.run_until_idle()

    job = app.get("job-1")
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"attempt": 3}
    # Measured on the kit's clock: backoffs of one hour, then two, skipped, and nothing else waited.
    skipped_ms = cairn_clock() - started_ms
    assert 3 * 3600 * 1000 <= skipped_ms < (3 * 3600 + 60) * 1000, skipped_ms
    assert job.updated_at == cairn_clock()  # the table's writes are stamped with the fixture's clock


def test_a_worker_killed_at_a_commit_on_dynamodb_resumes_and_commits_each_phase_once(
    cairn_local: Callable[..., Cairn], cairn_dynamodb: DynamoDBStorage
) -> None:
    ran: list[str] = []
    pipeline = three_phases(ran)
    storage = crash_on("commit", nth=2, storage=cairn_dynamodb)
    app = cairn_local(pipeline, storage=storage)
    app.start(pipeline, "inv-1")
    with pytest.raises(SimulatedCrash, match="commit #2"):
        app.run_until_idle()

    crashed = cairn_dynamodb.get_job("inv-1")  # as the table holds it, past the dead worker
    assert crashed is not None
    assert crashed.checkpoint is not None
    assert crashed.checkpoint.next_phase == "total"
    assert [record.phase for record in crashed.phases] == ["load"]

    app.retry("inv-1")
    app.run_until_idle()

    done = app.get("inv-1")
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"total": 12}
    assert [record.phase for record in done.phases] == ["load", "total", "report"]  # each committed once
    assert ran == ["load", "total", "total", "report"]  # only the uncommitted phase ran again


def test_a_state_too_large_for_an_item_goes_to_the_fixtures_bucket(
    cairn_local: Callable[..., Cairn], cairn_dynamodb: DynamoDBStorage
) -> None:
    blob = base64.b64encode(os.urandom(600_000)).decode()  # 800 KB that gzip cannot shrink: over an item's 400 KB
    pipeline: Pipeline[Any] = Pipeline("big")
    pipeline.phase(name="produce")(lambda ctx: Next("check", {"blob": blob}))
    pipeline.phase(name="check")(lambda ctx: Done({"same": ctx.state["blob"] == blob}))
    app = cairn_local(pipeline, storage=cairn_dynamodb)
    app.start(pipeline, "big-1")
    app.run_until_idle(max_steps=1)

    bucket = cairn_dynamodb.payloads.bucket
    assert bucket is not None
    listing = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=bucket)
    assert [item["Key"].split("/")[:3] for item in listing["Contents"]] == [["states", "default", "big-1"]]
    app.run_until_idle()
    assert app.get("big-1").result == {"same": True}


def test_fake_aws_sets_fake_credentials_only_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAREALLOOKINGKEY00")
    monkeypatch.setenv("AWS_PROFILE", "production")
    with fake_aws():
        assert os.environ["AWS_ACCESS_KEY_ID"] != "AKIAREALLOOKINGKEY00"
        assert os.environ["AWS_DEFAULT_REGION"] == REGION
        assert "AWS_PROFILE" not in os.environ
        assert boto3.client("sts", region_name=REGION).get_caller_identity()["Account"] == "123456789012"
    assert os.environ["AWS_ACCESS_KEY_ID"] == "AKIAREALLOOKINGKEY00"
    assert os.environ["AWS_PROFILE"] == "production"
