"""One TTL on the deployed paths: the API and the sweep see a job, and its checkpoint, exactly while it is live
(its last write less than the TTL ago), however long ago the checkpoint was saved."""

from __future__ import annotations

import pytest

from cairn import JobStatus, advance_phase
from cairn.testing.faults import CrashingStorage, CrashPoint, SimulatedCrash
from cairn.testing.invoker import LocalContext
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES
from tests.events import load_event
from tests.functional.api_client import ALICE, JOB, Api, phase_names
from tests.support import FakeClock

HOUR = 3600
PIPELINE = PIPELINES.get("document-intake")


def _listed(api: Api) -> list[str]:
    return [summary["jobId"] for summary in api.call("list-jobs").body["jobs"]]


def test_the_api_shows_lists_and_resumes_a_live_job_whose_checkpoint_is_older_than_the_ttl(
    api: Api, stack_clock: FakeClock
) -> None:
    assert PIPELINE.ttl.total_seconds() == 24 * HOUR
    api.create()
    api.run_phases(1)  # fetch committed; the invoke of split is left queued
    api.stack.invoker.queue.clear()
    stack_clock.advance(20 * HOUR)
    assert api.call("pause-job").status == 200
    stack_clock.advance(20 * HOUR)  # the checkpoint was saved 40 hours ago, the job written 20 hours ago

    shown = api.call("get-job")
    assert shown.status == 200
    assert (shown.body["status"], shown.body["nextPhase"]) == ("paused", "split")
    assert _listed(api) == [JOB]
    resumed = api.call("retry-job-resume")
    assert resumed.status == 202
    assert resumed.body["nextPhase"] == "split"
    api.run()
    assert phase_names(api.stored()) == ["fetch", "split", "extract", "publish"]

    stack_clock.advance(24 * HOUR)
    assert api.call("get-job").status == 404
    assert _listed(api) == []
    assert api.call("retry-job-resume").status == 404


def _sweep(stack: LocalStack) -> object:
    return stack.scheduler(load_event("scheduler/scheduled-sweep"), LocalContext("cairn-scheduler"))


def test_the_sweep_revives_a_live_job_whose_checkpoint_is_older_than_the_ttl_and_forgets_an_expired_one(
    stack: LocalStack, stack_clock: FakeClock
) -> None:
    api = Api(stack)
    api.create()
    api.run_phases(1)  # fetch committed at t0; the invoke of split is lost
    stack.invoker.queue.clear()
    stack_clock.advance(20 * HOUR)
    dying = CrashingStorage(stack.runtime.storage(ALICE), CrashPoint(operation=0, moment="after"))
    with pytest.raises(SimulatedCrash):  # a late delivery claims split and its worker dies: the job's last write
        advance_phase(JOB, PIPELINE, storage=dying, scheduler=stack.runtime.lambda_scheduler(ALICE, PIPELINE))
    stack_clock.advance(20 * HOUR)  # the checkpoint was saved 40 hours ago, the job written 20 hours ago

    assert _sweep(stack) == {"revived": [JOB]}
    stack.run_until_idle()
    job = api.stored()
    assert job.status == JobStatus.COMPLETE
    assert phase_names(job) == ["fetch", "split", "extract", "publish"]

    api.create("stalled-2")
    api.run_phases(1)
    stack.invoker.queue.clear()
    stack_clock.advance(24 * HOUR)
    assert _sweep(stack) == {"revived": []}
    assert api.job("stalled-2") is None
