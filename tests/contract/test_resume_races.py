"""A resume that races a worker's commit never puts the old checkpoint back (every store).

The resume reads the job while a worker is mid-phase; the worker commits; then
the resume writes. The write is conditioned on the sequence the resume read,
which the commit advanced: it is refused, the resume reads again and continues
from the committed checkpoint, so the committed phase never runs twice.
"""

from __future__ import annotations

import threading
from typing import Any

from cairn import Done, JobStatus, Next, PhaseContext, Pipeline, run_pipeline
from cairn.core.models import Job
from cairn.core.storage_port import Storage
from cairn.storage.delegating import DelegatingStorage
from tests.contract.conftest import StorageFactory
from tests.support import FakeClock, RecordingScheduler, job_of, make_scheduler


class CommitAfterRead(DelegatingStorage):
    """Lets the worker finish its phase (and commit) right after the resume has read the job."""

    def __init__(self, inner: Storage, release: threading.Event, worker: threading.Thread) -> None:
        super().__init__(inner)
        self.release = release
        self.worker = worker
        self.reads: list[Job | None] = []

    def get_current_job(self, job_id: str, *, payloads: bool = True) -> Job | None:
        job = self.inner.get_current_job(job_id, payloads=payloads)  # what a resume reads
        self.reads.append(job)
        if not self.release.is_set():
            self.release.set()
            self.worker.join(timeout=30)
        return job


def racing_pipeline(runs: list[str], release: threading.Event) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("racing")

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        runs.append("first")
        assert release.wait(timeout=30)
        return Next("second", {"first": "done"})

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        runs.append("second")
        return Done(ctx.state)

    return pipeline


def test_a_resume_racing_a_commit_does_not_put_the_old_checkpoint_back(
    storage_factory: StorageFactory, clock: FakeClock
) -> None:
    store = storage_factory(clock)
    runs: list[str] = []
    release = threading.Event()
    pipeline = racing_pipeline(runs, release)
    worker_scheduler = make_scheduler(pipeline, store, clock)
    run_pipeline("race-1", pipeline, storage=store, scheduler=worker_scheduler, initial_state={})
    worker = threading.Thread(target=lambda: worker_scheduler.drain(max_steps=1))
    worker.start()  # the worker claims "first" and waits inside it
    while not runs:
        threading.Event().wait(0.01)

    racing = CommitAfterRead(store, release, worker)
    resume_scheduler = RecordingScheduler(clock)
    run_pipeline("race-1", pipeline, storage=racing, scheduler=resume_scheduler, retry_mode="resume")

    stale, fresh = racing.reads
    assert stale is not None
    assert stale.checkpoint is not None
    assert stale.checkpoint.next_phase == "first", "the resume read before the commit"
    assert fresh is not None
    assert fresh.checkpoint is not None
    assert fresh.checkpoint.next_phase == "second", "the refused resume read again"
    assert [scheduled.phase for scheduled in resume_scheduler.scheduled] == ["second"]
    finisher = make_scheduler(pipeline, store, clock)
    for scheduled in resume_scheduler.scheduled:
        finisher.schedule_advance(scheduled.job_id, phase=scheduled.phase, sequence=scheduled.sequence)
    finisher.drain()
    worker_scheduler.drain()  # the worker's own advance of "second" is stale now: the resume took over

    job = job_of(store, "race-1")
    assert job.status == JobStatus.COMPLETE
    assert runs == ["first", "second"], "the committed phase ran twice"
    assert [(record.phase, record.outcome) for record in job.phases] == [("first", "next"), ("second", "done")]
