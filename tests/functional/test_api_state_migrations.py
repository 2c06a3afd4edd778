"""State migrations through the API function's handler on the local stack (moto): a job checkpointed by the
version-1 code, retried through the API once version 3 is deployed, is migrated; the job view and the
state routes carry ``stateVersion``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from cairn.core.registry import PipelineRegistry
from cairn.testing.api import ApiClient
from cairn.testing.clock import SkippingClock
from cairn.testing.moto_aws import fake_aws
from cairn.testing.stack import LocalStack
from tests.state_versions import JOB, MIGRATED, V3, v1_pipeline

ALICE = "arn:aws:iam::123456789012:user/alice"


@pytest.fixture
def v1_api() -> Iterator[ApiClient]:
    """The version-1 code on moto, with one job stopped in error at "check" (its checkpoint saved by v1)."""
    with fake_aws():
        client = ApiClient.on_moto(v1_pipeline(fail_at_check=True), clock=SkippingClock(), owner=ALICE)
        reply = client.post(
            "/jobs", {"pipeline": "intake", "jobId": JOB, "state": {"document": "lease.pdf", "pages": 12}}
        )
        assert reply.status == 202, reply.body
        client.run_until_idle()
        yield client


def deploy(old: ApiClient, pipeline: V3, name: str) -> ApiClient:
    """The same table, bucket and queues with ``pipeline``'s code deployed as the phases and the API (``name``)."""
    stack = LocalStack(
        PipelineRegistry([pipeline.pipeline]),
        old.stack.runtime,
        old.stack.invoker,
        scheduler_dlq_url=old.stack.scheduler_dlq_url,
    )
    return ApiClient(stack, owner=ALICE, function=name)


def test_a_retry_through_the_api_migrates_a_v1_checkpoint_and_the_views_carry_the_version(v1_api: ApiClient) -> None:
    before = v1_api.get(f"/jobs/{JOB}")
    assert before.body["status"] == "error", before.body
    assert "stateVersion" not in before.body  # version 1: absent, as stored

    v3 = V3()
    api = deploy(v1_api, v3, "api-v3")
    reply = api.post(f"/jobs/{JOB}/retry", {"mode": "resume"})
    assert reply.status == 202, reply.body
    api.run_until_idle()

    view = api.get(f"/jobs/{JOB}", query={"includeState": "true"})
    assert view.status == 200, view.body
    assert view.body["status"] == "waiting", view.body
    assert view.body["stateVersion"] == 3
    assert view.body["state"] == {**MIGRATED, "reviewed": True}
    assert v3.calls == Counter({1: 1, 2: 1})
    entered = api.get(f"/jobs/{JOB}/states/ask")
    assert (entered.status, entered.body["stateVersion"]) == (200, 3)
    old = api.get(f"/jobs/{JOB}/states/check")
    assert old.status == 200, old.body
    assert "stateVersion" not in old.body
    diff = api.get(f"/jobs/{JOB}/diff", query={"from": "check", "to": "ask"})
    assert diff.status == 200, diff.body
    assert (diff.body["from"].get("stateVersion"), diff.body["to"]["stateVersion"]) == (None, 3)


def test_a_retry_without_the_migration_is_an_error_naming_it_and_the_next_deploy_resumes(v1_api: ApiClient) -> None:
    incomplete = deploy(v1_api, V3(missing=2), "api-v3-incomplete")
    stored = v1_api.get(f"/jobs/{JOB}/states/check").body["state"]

    assert incomplete.post(f"/jobs/{JOB}/retry", {"mode": "resume"}).status == 202
    incomplete.run_until_idle()

    view = incomplete.get(f"/jobs/{JOB}")
    assert view.body["status"] == "error"
    assert "no migration from version 2 (Pipeline(migrations={2: ...}))" in view.body["error"]
    assert view.body["nextPhase"] == "check"  # the checkpoint is kept, version and all
    assert "stateVersion" not in view.body
    assert incomplete.get(f"/jobs/{JOB}", query={"includeState": "true"}).body["state"] == stored
    fixed = V3()
    api = deploy(v1_api, fixed, "api-v3-fixed")
    assert api.post(f"/jobs/{JOB}/retry", {"mode": "resume"}).status == 202
    api.run_until_idle()
    assert api.get(f"/jobs/{JOB}").body["status"] == "waiting"
    assert fixed.calls == Counter({1: 1, 2: 1})
