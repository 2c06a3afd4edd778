"""Time to live as the engine applies it: one clock, the job's inactivity. A checkpoint lives as long as its job,
however long ago it was saved; get, list, a scheduled retry and a resume all agree."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from cairn import (
    Cairn,
    Done,
    InvalidInputError,
    JobNotFoundError,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    RetryPolicy,
    run_pipeline,
)
from cairn.core.engine import usable_checkpoint
from cairn.core.storage_port import Storage
from tests.support import FakeClock, fetch_extract_pipeline, job_of, make_scheduler

JOB = "job-1"
HOUR = 3600


def _failed_at_extract(storage: Storage, clock: FakeClock, ran: list[str], failing: list[bool]) -> Pipeline[Any]:
    """fetch at t0 (the checkpoint names extract), extract fails 50 minutes later: the job's last write."""
    pipeline = fetch_extract_pipeline(ran, fail_extract=failing)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 1})
    scheduler.drain(max_steps=1)
    clock.advance(50 * 60)
    scheduler.drain()
    return pipeline


def test_a_checkpoint_older_than_the_ttl_is_resumed_while_its_job_is_live(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    failing = [True]
    pipeline = _failed_at_extract(storage, clock, ran, failing)
    clock.advance(20 * 60)  # the checkpoint was saved 70 minutes ago; the job was written 20 minutes ago
    job = job_of(storage, JOB)
    assert job.status == JobStatus.ERROR
    assert job.checkpoint is not None
    assert clock() - job.checkpoint.created_at > HOUR * 1000
    assert [listed.job_id for listed in storage.list_jobs()] == [JOB]
    assert usable_checkpoint(job, pipeline, clock()) == job.checkpoint

    failing[0] = False
    ran.clear()
    scheduler = make_scheduler(pipeline, storage, clock)
    resumed = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 2})
    scheduler.drain()

    assert resumed.checkpoint is not None
    assert (resumed.checkpoint.next_phase, resumed.checkpoint.state) == ("extract", {"v": 1, "fetched": True})
    assert ran == ["extract {'v': 1, 'fetched': True}"]
    assert job_of(storage, JOB).status == JobStatus.COMPLETE


def test_once_the_job_has_been_idle_for_the_ttl_it_is_gone_on_every_path(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = _failed_at_extract(storage, clock, ran, [True])
    job = job_of(storage, JOB)
    clock.advance(HOUR)

    assert storage.get_job(JOB) is None
    assert storage.list_jobs() == []
    assert usable_checkpoint(job, pipeline, clock()) is None, "the job read before it expired is no help"
    with pytest.raises(JobNotFoundError):
        Cairn(pipeline, storage=storage).retry(JOB)

    restarted = run_pipeline(JOB, pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage, clock))
    assert restarted.checkpoint is not None
    assert (restarted.checkpoint.next_phase, restarted.checkpoint.created_at) == ("fetch", clock())
    assert restarted.phases == []


def test_a_scheduled_retry_keeps_the_job_and_its_checkpoint_alive(storage: Storage, clock: FakeClock) -> None:
    attempts: list[dict[str, Any]] = []
    resumable: list[bool] = []  # at each attempt: would a resume continue from the checkpoint this run got?
    pipeline: Pipeline[Any] = Pipeline("retrying", ttl=timedelta(hours=1))

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        return Next("work", {"loaded": True})

    @pipeline.phase(retry=RetryPolicy(max_attempts=4, backoff=40 * 60, max_delay=40 * 60, jitter=False))
    def work(ctx: PhaseContext[Any]) -> Done:
        attempts.append(ctx.state)
        resumable.append(usable_checkpoint(storage.get_job(JOB), pipeline, clock()) == ctx.checkpoint)
        if len(attempts) < 4:
            raise RuntimeError("not yet")
        return Done(ctx.state)

    scheduler = make_scheduler(pipeline, storage, clock)  # waiting out a backoff moves the clock
    started = clock()
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler)
    scheduler.drain()

    job = job_of(storage, JOB)
    assert clock() - started >= 2 * HOUR * 1000, "three backoffs of 40 minutes, each longer ago than the last save"
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"loaded": True}
    assert attempts == [{"loaded": True}] * 4
    assert resumable == [True] * 4
    assert [record.outcome for record in job.phases] == ["next", "retry", "retry", "retry", "done"]


def test_the_front_door_refuses_a_state_that_a_live_jobs_old_checkpoint_would_override(
    storage: Storage, clock: FakeClock
) -> None:
    pipeline = _failed_at_extract(storage, clock, [], [True])
    clock.advance(20 * 60)

    with pytest.raises(InvalidInputError, match='resumes from its checkpoint at "extract"'):
        Cairn(pipeline, storage=storage).retry(JOB, state={"v": 2})
