"""A job's route (pipeline, status, next phase, sequence), the small read a front door or scheduler routes by.

Each store may read less than the whole job for it; whatever it reads must agree with ``get_job``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from cairn import Done, JobStatus, Next, PhaseContext, Pipeline, run_pipeline
from cairn.core.engine import cancel_job, pause_job
from cairn.core.storage_port import Route, Storage
from tests.support import FakeClock, job_of, make_scheduler

HOUR = 3600


def _pipeline() -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("intake", ttl=timedelta(hours=1))

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        return Next("extract", {"fetched": True})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        return Done("extracted")

    return pipeline


def _route_of_the_stored_job(storage: Storage, job_id: str) -> Route:
    job = job_of(storage, job_id)
    return Route(job.pipeline, job.status, job.checkpoint.next_phase if job.checkpoint else None, job.sequence)


def test_a_route_follows_the_job_through_its_phases_and_states(storage: Storage, clock: FakeClock) -> None:
    pipeline = _pipeline()
    scheduler = make_scheduler(pipeline, storage, clock)
    started = run_pipeline("job-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    run_pipeline("job-2", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    run_pipeline("job-3", pipeline, storage=storage, scheduler=scheduler, initial_state={})

    assert storage.get_route("job-1") == Route("intake", JobStatus.RUNNING, "fetch", started.sequence)
    scheduler.drain(max_steps=1)
    after_fetch = job_of(storage, "job-1")
    assert storage.get_route("job-1") == Route("intake", JobStatus.RUNNING, "extract", after_fetch.sequence)
    pause_job("job-2", storage=storage)
    cancel_job("job-3", storage=storage)
    scheduler.drain()

    routes = {job_id: storage.get_route(job_id) for job_id in ("job-1", "job-2", "job-3")}
    assert routes == {job_id: _route_of_the_stored_job(storage, job_id) for job_id in routes}
    assert [(route.status, route.next_phase) for route in routes.values() if route is not None] == [
        (JobStatus.COMPLETE, None),
        (JobStatus.PAUSED, "fetch"),
        (JobStatus.CANCELLED, "fetch"),
    ]


def test_an_unknown_or_expired_job_has_no_route(storage: Storage, clock: FakeClock) -> None:
    pipeline = _pipeline()
    run_pipeline("job-1", pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage, clock))

    assert storage.get_route("no-such-job") is None
    clock.advance(HOUR - 1)
    assert storage.get_route("job-1") is not None
    clock.advance(1)
    assert storage.get_route("job-1") is None
