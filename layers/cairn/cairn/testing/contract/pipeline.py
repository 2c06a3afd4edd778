"""The contract end to end: the engine runs a pipeline to its end on the adapter alone."""

from __future__ import annotations

from typing import Any

from ...core.context import PhaseContext
from ...core.engine import advance_phase, run_pipeline
from ...core.models import JobStatus
from ...core.outcomes import Done, Next
from ...core.pipeline import Pipeline
from ...core.storage_port import Storage
from ...scheduling.inline import InlineScheduler
from ..clock import SkippingClock
from .base import JOB, PIPELINE, ContractBase, stored


class PipelineContract(ContractBase):
    """A job of two phases, a checkpoint saved mid-phase, run by the inline scheduler on the adapter."""

    def test_a_pipeline_runs_to_its_end(self, storage: Storage, clock: SkippingClock) -> None:
        pipeline: Pipeline[Any] = Pipeline(PIPELINE)

        @pipeline.phase
        def first(ctx: PhaseContext[Any]) -> Next:
            ctx.log("first ran")
            ctx.save_state({**ctx.state, "saved": True})
            return Next("second", {**ctx.state, "first": True})

        @pipeline.phase
        def second(ctx: PhaseContext[Any]) -> Done:
            return Done(ctx.state)

        scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
        scheduler.bind(
            lambda job_id, **more: advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **more)
        )
        run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"n": 1})
        scheduler.drain()

        job = stored(storage)
        assert job.status == JobStatus.COMPLETE
        assert job.result == {"n": 1, "saved": True, "first": True}
        assert [record.phase for record in job.phases] == ["first", "second"]
        assert "first ran" in [entry.message for entry in job.log]
