"""State migrations on DynamoDB (moto): through the API function's handler on the local stack, a job checkpointed
by the version-1 code and retried through the API once version 3 is deployed is migrated, and the job view and the
state routes carry ``stateVersion``; a state offloaded to S3 keeps its version."""

from __future__ import annotations

import base64
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from cairn import Cairn, Done, InlineScheduler, PhaseContext, Pipeline, WaitFor
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.client.render import job_details
from cairn.core.registry import PipelineRegistry
from cairn.testing.api import ApiClient
from cairn.testing.clock import SkippingClock
from cairn.testing.moto_aws import fake_aws
from cairn.testing.stack import LocalStack
from tests.functional.conftest import Moto
from tests.state_versions import JOB, MIGRATED, V3, v1_pipeline
from tests.support import FakeClock

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
    assert api.post(f"/jobs/{JOB}/signals/go", {}).status == 202
    api.run_until_idle()
    done = api.get(f"/jobs/{JOB}").body
    assert (done["status"], done["result"]) == ("complete", {**MIGRATED, "reviewed": True})


def test_a_state_offloaded_to_s3_keeps_its_version_and_is_migrated(moto: Moto, clock: FakeClock) -> None:
    """A v2 state too large for its item (S3) records its version in the item; v3 code migrates it once."""
    blob = base64.b64encode(os.urandom(600_000)).decode()
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    v2: Pipeline[Any] = Pipeline("big", state_version=2, migrations={1: lambda state: state})

    @v2.phase
    def hold(ctx: PhaseContext[Any]) -> WaitFor:
        return WaitFor("go", "finish", {"blob": blob})

    @v2.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done("v2")

    jobs = Cairn(v2, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    jobs.start("big", "big-1", state={})
    jobs.run_until_idle()
    saved = jobs.get("big-1").checkpoint
    assert saved is not None
    assert (saved.state_version, saved.state) == (2, {"blob": blob})
    assert moto.s3.list_objects_v2(Bucket=moto.bucket).get("KeyCount", 0) >= 1  # the state lives in S3
    calls: list[int] = []

    def v2_to_v3(state: dict[str, Any]) -> dict[str, Any]:
        calls.append(2)
        return {"size": len(state["blob"])}

    v3: Pipeline[Any] = Pipeline("big", state_version=3, migrations={1: lambda state: state, 2: v2_to_v3})
    v3.phase(name="hold")(hold)  # the same phase code

    @v3.phase(name="finish")
    def finish_v3(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    jobs = Cairn(v3, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    jobs.signal("big-1", "go")
    jobs.run_until_idle()

    assert jobs.get("big-1").result == {"size": len(blob)}
    assert calls == [2]


def test_cairn_jobs_show_names_the_state_version_when_it_is_not_1(v1_api: ApiClient) -> None:
    assert "State " not in job_details(v1_api.get(f"/jobs/{JOB}").body, 0)
    api = deploy(v1_api, V3(), "api-v3-show")
    api.post(f"/jobs/{JOB}/retry", {"mode": "resume"})
    api.run_until_idle()

    assert "saved as state_version 3" in job_details(api.get(f"/jobs/{JOB}").body, 0)
