"""A signal's payload through the API's handler: one nested deeper than the limit is a 400, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cairn import Done, JobStatus, PhaseContext, Pipeline, WaitFor
from cairn.core.admission import MAX_JSON_DEPTH
from cairn.testing.api import ApiClient
from cairn.testing.clock import SkippingClock
from cairn.testing.moto_aws import fake_aws

ALICE = "arn:aws:iam::123456789012:user/alice"


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def awaiting() -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("awaiting")

    @pipeline.phase
    def ask(ctx: PhaseContext[Any]) -> WaitFor:
        return WaitFor("go", "use", ctx.state)

    @pipeline.phase
    def use(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.signal)

    return pipeline


@pytest.fixture
def api() -> Iterator[ApiClient]:
    """The API on moto with one job waiting for signal "go"."""
    with fake_aws():
        client = ApiClient.on_moto(awaiting(), clock=SkippingClock(), owner=ALICE)
        reply = client.post("/jobs", {"pipeline": "awaiting", "jobId": "doc-1", "state": {"n": 1}})
        assert reply.status == 202, reply.body
        client.run_until_idle()
        yield client


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 200, 255])
def test_a_signal_payload_nested_too_deep_is_a_400_and_the_job_still_waits(api: ApiClient, depth: int) -> None:
    reply = api.post("/jobs/doc-1/signals/go", nested(depth))

    assert reply.status == 400, reply.body
    assert reply.body["error"]["message"].startswith("The request body nests arrays and objects"), reply.body
    view = api.get("/jobs/doc-1")
    assert view.status == 200, view.body
    assert (view.body["status"], view.body["waitingFor"]) == ("waiting", "go")


def test_a_signal_payload_as_deep_as_the_limit_is_delivered_and_the_job_reads_back(api: ApiClient) -> None:
    reply = api.post("/jobs/doc-1/signals/go", nested(MAX_JSON_DEPTH))
    assert reply.status == 202, reply.body
    api.run_until_idle()

    view = api.get("/jobs/doc-1")
    assert view.status == 200, view.body
    assert view.body["status"] == JobStatus.COMPLETE.value
    assert view.body["result"] == nested(MAX_JSON_DEPTH)
    listed = api.get("/jobs")
    assert listed.status == 200, listed.body
