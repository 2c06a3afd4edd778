"""The sweep on the in-process stack (DynamoDB on moto): CAIRN_SWEEP_BATCH jobs a run, the rest on the next run."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from cairn import Done, JobStatus, PhaseContext, Pipeline, run_pipeline
from cairn.testing.stack import SCHEDULER, LocalStack
from tests.functional.stacks import moto_stack
from tests.support import FakeClock, job_of

OWNER = "alice"
JOBS = [f"job-{index}" for index in range(3)]
SWEEP = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


def one_phase() -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("one-phase")

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        return Done({"ran": True})

    return pipeline


def stalled_metric(out: str) -> list[float]:
    """The StalledJobs values of the EMF blobs printed to ``out``."""
    blobs = [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]
    return [value for blob in blobs for value in blob.get("StalledJobs", [])]


def test_each_sweep_revives_at_most_its_batch_and_the_next_one_the_rest(
    stack_clock: FakeClock, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    pipeline = one_phase()
    with moto_stack(stack_clock, pipeline) as stack:
        stack.runtime.settings = dataclasses.replace(stack.runtime.settings, sweep_batch=2)
        storage = stack.runtime.storage(OWNER)
        for job_id in JOBS:
            run_pipeline(job_id, pipeline, storage=storage, scheduler=stack.runtime.start_scheduler(OWNER, pipeline))
        stack.invoker.queue.clear()  # every first invoke lost: three stalled jobs
        stack_clock.advance(stack.runtime.settings.sweep_idle_seconds + 1)

        def sweep(stack: LocalStack) -> list[str]:
            revived: list[str] = stack.call(SCHEDULER, SWEEP)["revived"]
            stack.run_until_idle()
            return revived

        capsys.readouterr()
        first = sweep(stack)
        second = sweep(stack)
        third = sweep(stack)

        assert len(first) == 2
        assert sorted([*first, *second]) == JOBS
        assert third == []
        assert stalled_metric(capsys.readouterr().out) == [2.0, 1.0, 0.0]
        assert {job_of(storage, job_id).status for job_id in JOBS} == {JobStatus.COMPLETE}
