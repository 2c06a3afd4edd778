"""A budget counts a map's items before the phase after the map, on every store, whatever order they finish in."""

from __future__ import annotations

from collections import Counter
from typing import Any

from cairn import Cairn, Done, InlineScheduler, JobStatus, Map, PhaseContext, Pipeline, RetryPolicy
from cairn.core.storage_port import Storage
from tests.support import FakeClock

JOB = "doc-1"
ITEMS = 6
#: Each run (a phase's or an item's) costs exactly $0.05: its Lambda request; nothing else is priced.
NICKEL_A_RUN = {
    "prices": {
        "lambda_requests": 0.05,
        "lambda_gb_seconds:arm64": 0,
        "lambda_gb_seconds:x86_64": 0,
        "dynamodb_write_units": 0,
    }
}


def pages(runs: Counter[str], *, first_fails: bool) -> Pipeline[Any]:
    """``split`` maps six pages (the first failing once, so that it finishes last, when told), then ``merge``."""
    pipeline: Pipeline[Any] = Pipeline("pages", max_cost_usd=0.25)

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map(list(range(ITEMS)), phase="page", then="merge", max_concurrency=2)

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1.0))
    def page(ctx: PhaseContext[Any]) -> Done:
        runs["page"] += 1
        if first_fails and ctx.item == 0 and ctx.attempt == 1:
            raise ValueError("a blurred scan")
        return Done(ctx.state)

    @pipeline.phase
    def merge(ctx: PhaseContext[Any]) -> Done:
        runs["merge"] += 1
        return Done(len(ctx.results or []))

    return pipeline


def test_the_items_usage_is_counted_before_the_phase_after_the_map(storage: Storage, clock: FakeClock) -> None:
    for first_fails in (False, True):
        runs: Counter[str] = Counter()
        job_id = f"{JOB}-{int(first_fails)}"
        pipeline = pages(runs, first_fails=first_fails)
        scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
        jobs = Cairn(pipeline, storage=storage, scheduler=scheduler, prices=NICKEL_A_RUN)
        jobs.start(pipeline, job_id, state={})
        jobs.run_until_idle()

        job = jobs.get(job_id)
        item_runs = ITEMS + int(first_fails)
        assert runs == Counter({"page": item_runs})  # split's $0.05 and the items' passed $0.25: merge never ran
        assert job.status == JobStatus.ERROR, job.error
        assert job.error is not None
        assert f'stopped before phase "merge": it has cost ${0.05 * (1 + item_runs):.6f} so far' in job.error
        assert job.usage["lambda_requests"] == 1 + item_runs + 1  # split, the items, the stop
