"""Time to live as the engine applies it: a retry resumes a checkpoint younger than the pipeline's TTL and
starts over from an older one (even while the job itself is still live)."""

from __future__ import annotations

from cairn import (
    Checkpoint,
    JobStatus,
    run_pipeline,
)
from cairn.storage.base import Storage
from tests.support import FakeClock, fetch_extract_pipeline, job_of, make_scheduler

JOB = "job-1"
HOUR = 3600


def test_a_checkpoint_older_than_the_ttl_is_treated_as_absent(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    failing = [True]
    pipeline = fetch_extract_pipeline(ran, fail_extract=failing)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 1})
    scheduler.drain(max_steps=1)
    clock.advance(50 * 60)
    scheduler.drain()
    job = job_of(storage, JOB)
    assert job.status == JobStatus.ERROR
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "extract"

    clock.advance(20 * 60)
    assert storage.get_job(JOB) is not None, "the job itself was written 20 minutes ago"
    failing[0] = False
    ran.clear()
    restarted = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 2})

    assert restarted.checkpoint == Checkpoint(next_phase="fetch", state={"v": 2}, created_at=clock())
    scheduler.drain()
    assert ran == ["fetch {'v': 2}", "extract {'v': 2, 'fetched': True}"]


def test_a_checkpoint_younger_than_the_ttl_is_resumed(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    pipeline = fetch_extract_pipeline(ran, fail_extract=[True])
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 1})
    scheduler.drain()
    clock.advance(HOUR - 1)

    resumed = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 2})

    assert resumed.checkpoint is not None
    assert (resumed.checkpoint.next_phase, resumed.checkpoint.state) == ("extract", {"v": 1, "fetched": True})
